// grpcgo-findings: the grpc-go workloads of h2ledger's findings captures (issue 21), stock
// grpc-go (Debian's golang-google-grpc-dev, 1.33) server and client in one process, one
// connection, the standard health service.
//
// Usage:
//
//	grpcgo-findings -mode keepalive [-go FILE] [-seconds 70]
//	grpcgo-findings -mode slots [-go FILE] [-callers 16] [-calls 4] [-handler 20ms]
//	grpcgo-findings -mode errors [-go FILE] [-calls 10]
//	grpcgo-findings -mode deadline [-go FILE] [-calls 10] [-handler 50ms] [-timeout 10ms]
//	grpcgo-findings -mode cancel [-go FILE] [-calls 20] [-handler 50ms] [-timeout 5ms]
//	grpcgo-findings -mode rising [-go FILE] [-calls 40] [-handler 2ms]
//	grpcgo-findings -mode bigstatus [-go FILE] [-calls 10] [-message 20000]
//
// keepalive: the server has grpc-go's default keepalive enforcement (no
// KeepaliveEnforcementPolicy: MinTime 5 min, PermitWithoutStream false); the client dials
// with keepalive.ClientParameters{Time: 10s, PermitWithoutStream: true}, makes one Check and
// then stays idle: its PINGs every 10 s strike, and the server answers the third strike with
// GOAWAY ENHANCE_YOUR_CALM "too_many_pings". The program exits once the client's connection
// leaves READY after that GOAWAY (or after -seconds).
//
// slots: the server has grpc.MaxConcurrentStreams(2) and a Check handler that takes -handler;
// after one Check (the server's SETTINGS are in), -callers goroutines make -calls Checks each
// at once: at most 2 are in flight, the others wait for a stream slot.
//
// errors: grpc-go's own health server (google.golang.org/grpc/health NewServer, which answers
// NOT_FOUND "unknown service" for a service it does not know); after the first Check (service
// "", SERVING), -calls Checks of service "h2ledger.Missing", each NOT_FOUND.
//
// deadline: the Check handler takes -handler, the client's deadline is -timeout: after the
// first Check (without a deadline), -calls Checks end DEADLINE_EXCEEDED at the client, which
// resets each stream with RST_STREAM CANCEL.
//
// cancel: the Check handler takes -handler; after the first Check, -calls Checks whose
// context the client cancels itself after -timeout (context.WithCancel, no deadline: the
// requests carry no grpc-timeout): each ends CANCELED at the client, which resets each stream
// with RST_STREAM CANCEL (a client giving up on calls, as a user leaving a page does).
//
// rising: the Check handler takes -handler; after the first Check, -calls Checks one after
// another; the server answers the first half SERVING and then, as a backend that starts
// failing half way, three of every four UNAVAILABLE "backend pool exhausted"
// (method-errors-rise).
//
// bigstatus: after the first Check, -calls Checks that fail UNAVAILABLE with a grpc-message of
// -message bytes ('x'), too big for one 16,384-byte frame, so that grpc-go's loopy writer sends
// the block as HEADERS and CONTINUATION (RFC 9113 §6.10): the odd calls as a Trailers-Only
// response (one block: :status 200, content-type, grpc-status, grpc-message, END_STREAM on
// its HEADERS), the even ones after grpc.SendHeader (a response header block, then trailers
// split the same way).
//
// Prints {"port": P} once the server listens, waits until FILE exists (the capture runs), then
// one JSON line with what the client saw.
//
// Build (GOPATH mode, no network): scripts/build-grpcgo-findings.sh OUTDIR
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"strings"
)

// slowHealth answers Check after a delay, so that calls stay in flight.
type slowHealth struct {
	healthpb.UnimplementedHealthServer
	delay time.Duration
}

func (h *slowHealth) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	time.Sleep(h.delay)
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

// risingHealth answers Check after a delay; from call after+1 on, three of four fail.
type risingHealth struct {
	healthpb.UnimplementedHealthServer
	delay time.Duration
	after int64
	n     int64
}

func (h *risingHealth) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	time.Sleep(h.delay)
	if i := atomic.AddInt64(&h.n, 1); i > h.after && i%4 != 0 {
		return nil, status.Error(codes.Unavailable, "backend pool exhausted")
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

// bigStatus answers the first Check SERVING, then UNAVAILABLE with a message of size bytes,
// every other call after sending its response headers first.
type bigStatus struct {
	healthpb.UnimplementedHealthServer
	size int
	n    int64
}

func (h *bigStatus) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	i := atomic.AddInt64(&h.n, 1)
	if i == 1 {
		return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
	}
	if i%2 == 1 {
		if err := grpc.SendHeader(ctx, metadata.Pairs("x-h2ledger", "headers-first")); err != nil {
			return nil, err
		}
	}
	return nil, status.Error(codes.Unavailable, strings.Repeat("x", h.size))
}

func waitFor(file string) {
	for i := 0; i < 600 && file != ""; i++ {
		if _, err := os.Stat(file); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func main() {
	mode := flag.String("mode", "keepalive", "keepalive or slots")
	goFile := flag.String("go", "", "start the client once this file exists")
	seconds := flag.Float64("seconds", 70, "keepalive: give up after this long")
	callers := flag.Int("callers", 16, "slots: concurrent callers")
	calls := flag.Int("calls", 4, "slots: calls per caller")
	handler := flag.Duration("handler", 20*time.Millisecond, "slots, deadline: time the server takes per call")
	timeout := flag.Duration("timeout", 10*time.Millisecond, "deadline: the client's deadline per call")
	via := flag.String("via", "", "the client dials this address (a proxy in front of the server) instead")
	message := flag.Int("message", 20000, "bigstatus: bytes of each failed call's grpc-message")
	flag.Parse()

	var opts []grpc.ServerOption
	delay := time.Duration(0)
	if *mode == "slots" {
		opts = append(opts, grpc.MaxConcurrentStreams(2))
		delay = *handler
	}
	if *mode == "deadline" || *mode == "cancel" {
		delay = *handler
	}
	s := grpc.NewServer(opts...)
	if *mode == "errors" {
		healthpb.RegisterHealthServer(s, health.NewServer())
	} else if *mode == "bigstatus" {
		healthpb.RegisterHealthServer(s, &bigStatus{size: *message})
	} else if *mode == "rising" {
		// The first Check and the first half of the -calls answer SERVING.
		healthpb.RegisterHealthServer(s, &risingHealth{delay: *handler, after: int64(1 + *calls/2)})
	} else {
		healthpb.RegisterHealthServer(s, &slowHealth{delay: delay})
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go s.Serve(lis)
	port := lis.Addr().(*net.TCPAddr).Port
	json.NewEncoder(os.Stdout).Encode(map[string]int{"port": port})
	waitFor(*goFile)

	dial := []grpc.DialOption{grpc.WithInsecure(), grpc.WithBlock()}
	if *mode == "keepalive" {
		dial = append(dial, grpc.WithKeepaliveParams(keepalive.ClientParameters{
			Time:                10 * time.Second,
			PermitWithoutStream: true,
		}))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	target := fmt.Sprintf("127.0.0.1:%d", port)
	if *via != "" {
		target = *via
	}
	cc, err := grpc.DialContext(ctx, target, dial...)
	cancel()
	if err != nil {
		panic(err)
	}
	client := healthpb.NewHealthClient(cc)
	check := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := client.Check(ctx, &healthpb.HealthCheckRequest{})
		return err
	}
	if err := check(); err != nil {
		panic(err)
	}
	out := map[string]interface{}{"mode": *mode, "port": port}
	start := time.Now()
	switch *mode {
	case "keepalive":
		// Idle: the keepalive PINGs alone, until the server's GOAWAY breaks the connection.
		deadline := start.Add(time.Duration(*seconds * float64(time.Second)))
		state := cc.GetState()
		for time.Now().Before(deadline) {
			ctx, cancel := context.WithDeadline(context.Background(), deadline)
			changed := cc.WaitForStateChange(ctx, state)
			cancel()
			if !changed {
				break
			}
			state = cc.GetState()
			if state != connectivity.Ready {
				// The server's GOAWAY ended the connection (grpc-go reconnects on the next
				// call; this client makes none).
				out["connection_lost_after_s"] = time.Since(start).Seconds()
				break
			}
		}
		out["state"] = state.String()
	case "cancel":
		codeCount := map[string]int{}
		for i := 0; i < *calls; i++ {
			ctx, cancel := context.WithCancel(context.Background())
			t := time.AfterFunc(*timeout, cancel)
			_, err := client.Check(ctx, &healthpb.HealthCheckRequest{})
			t.Stop()
			cancel()
			codeCount[status.Code(err).String()]++
		}
		time.Sleep(2 * *handler)
		out["codes"] = codeCount
	case "bigstatus":
		codeCount := map[string]int{}
		for i := 0; i < *calls; i++ {
			err := check()
			codeCount[status.Code(err).String()]++
			if len(status.Convert(err).Message()) != *message && err != nil {
				panic(fmt.Sprintf("message of %d bytes", len(status.Convert(err).Message())))
			}
		}
		out["codes"] = codeCount
		out["message_bytes"] = *message
	case "rising":
		codeCount := map[string]int{}
		for i := 0; i < *calls; i++ {
			err := check()
			codeCount[status.Code(err).String()]++
		}
		out["codes"] = codeCount
	case "errors", "deadline":
		codeCount := map[string]int{}
		for i := 0; i < *calls; i++ {
			t := 10 * time.Second
			req := &healthpb.HealthCheckRequest{}
			if *mode == "deadline" {
				t = *timeout
			} else {
				req.Service = "h2ledger.Missing"
			}
			ctx, cancel := context.WithTimeout(context.Background(), t)
			_, err := client.Check(ctx, req)
			cancel()
			codeCount[status.Code(err).String()]++
			if *mode == "errors" && status.Code(err) == codes.NotFound {
				out["message"] = status.Convert(err).Message()
			}
		}
		// Let the server finish the handlers the client gave up on.
		time.Sleep(2 * *handler)
		out["codes"] = codeCount
	case "slots":
		var ok, failed int64
		var wg sync.WaitGroup
		for c := 0; c < *callers; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < *calls; i++ {
					if check() == nil {
						atomic.AddInt64(&ok, 1)
					} else {
						atomic.AddInt64(&failed, 1)
					}
				}
			}()
		}
		wg.Wait()
		out["calls_ok"] = ok + 1
		out["calls_failed"] = failed
		out["seconds"] = time.Since(start).Seconds()
	}
	cc.Close()
	s.Stop()
	time.Sleep(200 * time.Millisecond)
	json.NewEncoder(os.Stdout).Encode(out)
}
