// grpcgo-article reproduces the "gRPC chattiness" article workload with stock
// grpc-go: one process, the standard health service
// (google.golang.org/grpc/health), ONE client connection, phase 1 = 1 caller
// x 24 Check calls/s, phase 2 = 8 callers x 3 calls/s (callers start together,
// so their calls arrive in waves). grpc-go's BDP estimator sends
// WINDOW_UPDATE + PING(02 04 10 10 09 0e 07 07) on DATA when no PING is
// outstanding, and the peer ACKs it.
//
// Usage:
//
//	grpcgo-article [-seconds 10] [-port 0]   server+client in one process
//	grpcgo-article -serve ADDR               server only (ADDR may use port 0)
//	grpcgo-article -connect ADDR [-seconds N] client only
//
// It prints {"port":P} as soon as the server listens (server modes) and, in
// client modes, one JSON line with the calls made per phase.
//
// Build (GOPATH mode, no network, Debian golang-google-grpc-dev):
//
//	GO111MODULE=off GOPATH=/usr/share/gocode:$TMP go build -o OUT/grpcgo-article .
//
// (see scripts/build-grpcgo.sh)
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

type phase struct {
	Name    string  `json:"name"`
	Callers int     `json:"callers"`
	Rate    float64 `json:"rate_per_caller"`
	Seconds float64 `json:"seconds"`
}

type phaseResult struct {
	Name      string  `json:"name"`
	Callers   int     `json:"callers"`
	Rate      float64 `json:"rate_per_caller"`
	CallsMade int64   `json:"calls_made"`
	CallsOK   int64   `json:"calls_ok"`
	Start     float64 `json:"start"`
	End       float64 `json:"end"`
}

type output struct {
	Program   string        `json:"program"`
	Port      int           `json:"port"`
	CallsMade int64         `json:"calls_made"`
	CallsOK   int64         `json:"calls_ok"`
	Phases    []phaseResult `json:"phases"`
}

func epoch(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

func serve(lis net.Listener) *grpc.Server {
	s := grpc.NewServer()
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(s, hs)
	go func() {
		if err := s.Serve(lis); err != nil {
			fmt.Fprintln(os.Stderr, "grpcgo-article: serve:", err)
		}
	}()
	return s
}

func runPhases(addr string, phases []phase) ([]phaseResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := grpc.DialContext(ctx, addr, grpc.WithInsecure(), grpc.WithBlock())
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	client := healthpb.NewHealthClient(conn)
	var results []phaseResult
	for _, ph := range phases {
		var made, ok int64
		start := time.Now()
		deadline := start.Add(time.Duration(ph.Seconds * float64(time.Second)))
		period := time.Duration(float64(time.Second) / ph.Rate)
		var wg sync.WaitGroup
		for c := 0; c < ph.Callers; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// time.Ticker drops ticks for slow receivers: paced, no burst catch-up.
				tk := time.NewTicker(period)
				defer tk.Stop()
				next := start // first call immediately, all callers together
				for {
					if !next.Before(deadline) || !time.Now().Before(deadline) {
						return
					}
					atomic.AddInt64(&made, 1)
					cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
					_, err := client.Check(cctx, &healthpb.HealthCheckRequest{})
					ccancel()
					if err == nil {
						atomic.AddInt64(&ok, 1)
					} else {
						fmt.Fprintln(os.Stderr, "grpcgo-article: Check:", err)
					}
					next = <-tk.C
				}
			}()
		}
		wg.Wait()
		results = append(results, phaseResult{
			Name: ph.Name, Callers: ph.Callers, Rate: ph.Rate,
			CallsMade: made, CallsOK: ok, Start: epoch(start), End: epoch(time.Now()),
		})
	}
	return results, nil
}

func printPort(lis net.Listener) {
	fmt.Printf("{\"port\":%d}\n", lis.Addr().(*net.TCPAddr).Port)
	os.Stdout.Sync()
}

func main() {
	seconds := flag.Float64("seconds", 10, "seconds per phase")
	port := flag.Int("port", 0, "port for server+client mode (0 = pick a free one)")
	serveAddr := flag.String("serve", "", "server only: listen on ADDR (port 0 allowed) until SIGINT/SIGTERM")
	connectAddr := flag.String("connect", "", "client only: connect to ADDR")
	rate1 := flag.Float64("rate1", 24, "phase 1 calls/s (1 caller)")
	callers2 := flag.Int("callers2", 8, "phase 2 callers")
	rate2 := flag.Float64("rate2", 3, "phase 2 calls/s per caller")
	flag.Parse()

	phases := []phase{
		{Name: "single", Callers: 1, Rate: *rate1, Seconds: *seconds},
		{Name: "fanout", Callers: *callers2, Rate: *rate2, Seconds: *seconds},
	}

	if *serveAddr != "" {
		lis, err := net.Listen("tcp", *serveAddr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "grpcgo-article: listen:", err)
			os.Exit(1)
		}
		s := serve(lis)
		printPort(lis)
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
		<-sig
		s.GracefulStop()
		return
	}

	var target string
	var srv *grpc.Server
	if *connectAddr != "" {
		target = *connectAddr
	} else {
		lis, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
		if err != nil {
			fmt.Fprintln(os.Stderr, "grpcgo-article: listen:", err)
			os.Exit(1)
		}
		srv = serve(lis)
		printPort(lis)
		target = lis.Addr().String()
	}
	results, err := runPhases(target, phases)
	if srv != nil {
		srv.GracefulStop()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "grpcgo-article: dial:", err)
		os.Exit(1)
	}
	out := output{Program: "grpcgo-article", Phases: results}
	if _, p, e := net.SplitHostPort(target); e == nil {
		fmt.Sscanf(p, "%d", &out.Port)
	}
	for _, r := range results {
		out.CallsMade += r.CallsMade
		out.CallsOK += r.CallsOK
	}
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
	if out.CallsOK != out.CallsMade {
		os.Exit(1)
	}
}
