// h2ledger-grpcgo: the demo's grpc-go workload (the article's program). One process, the
// stock health service (google.golang.org/grpc/health), ONE client connection, the phases
// given with -phase (every 1/rate s the callers are released together, so with several
// callers the calls arrive in waves). grpc-go's BDP estimator sends WINDOW_UPDATE + PING(02 04 10 10 09 0e 07 07) on
// DATA when no PING is outstanding; -static-window sets the initial windows, which turns
// the estimator off.
//
// The demo protocol (shared with h2ledger-workload and h2ledger-grpcio.py, see
// crates/h2ledger-workload/README.md):
//
//	h2ledger-grpcgo -phase NAME:CALLERS:RATE:SECONDS ... [-static-window] [-tls]
//
// -tls serves and calls over TLS (grpc-go's credentials, a self-signed ECDSA certificate
// made at start, no key log: `h2ledger demo --tls` takes the secrets with --keys-from).
//
// listens on 127.0.0.1:0, prints {"impl","version","port"} on one line, waits for a line on
// stdin (EOF: exit 1 without calling), dials, runs the phases, prints one line
// {"phases":[{"name","callers","rate_per_caller","calls_made","calls_ok","start_ns","end_ns"}]}
// and exits (0 when every call succeeded).
//
// Build (GOPATH mode, no network, Debian's golang-go and golang-google-grpc-dev):
// scripts/build-grpcgo-demo.sh OUTDIR (`just demo` does it).
package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"flag"
	"fmt"
	"math/big"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// staticWindow is the initial stream and connection window with -static-window: at least
// 64 KiB turns grpc-go's BDP estimator off (internal/transport: dynamicWindow = false).
const staticWindow = 1 << 20

type phase struct {
	name    string
	callers int
	rate    float64
	seconds float64
}

type phaseResult struct {
	Name      string  `json:"name"`
	Callers   int     `json:"callers"`
	Rate      float64 `json:"rate_per_caller"`
	CallsMade int64   `json:"calls_made"`
	CallsOK   int64   `json:"calls_ok"`
	StartNs   int64   `json:"start_ns"`
	EndNs     int64   `json:"end_ns"`
}

type phases []phase

func (p *phases) String() string { return "" }

func (p *phases) Set(s string) error {
	f := strings.Split(s, ":")
	if len(f) != 4 {
		return fmt.Errorf("phase %q: expected name:callers:rate:seconds", s)
	}
	c, err1 := strconv.Atoi(f[1])
	r, err2 := strconv.ParseFloat(f[2], 64)
	d, err3 := strconv.ParseFloat(f[3], 64)
	if err1 != nil || err2 != nil || err3 != nil || c < 1 || !(r > 0) || d < 0 {
		return fmt.Errorf("phase %q: callers >= 1, rate > 0, seconds >= 0", s)
	}
	*p = append(*p, phase{f[0], c, r, d})
	return nil
}

// run makes a phase's calls: every 1/rate s the callers are released together (a wave); a
// caller whose previous call is still in flight skips the wave (paced, no burst catch-up).
func run(client healthpb.HealthClient, ph phase) phaseResult {
	var made, ok int64
	start := time.Now()
	deadline := start.Add(time.Duration(ph.seconds * float64(time.Second)))
	period := time.Duration(float64(time.Second) / ph.rate)
	var wg sync.WaitGroup
	release := make([]chan struct{}, ph.callers)
	for c := range release {
		release[c] = make(chan struct{}, 1)
		wg.Add(1)
		go func(rel <-chan struct{}) {
			defer wg.Done()
			for range rel {
				atomic.AddInt64(&made, 1)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, err := client.Check(ctx, &healthpb.HealthCheckRequest{})
				cancel()
				if err == nil {
					atomic.AddInt64(&ok, 1)
				} else {
					fmt.Fprintln(os.Stderr, "h2ledger-grpcgo: Check:", err)
				}
			}
		}(release[c])
	}
	tk := time.NewTicker(period)
	for now := start; now.Before(deadline); now = <-tk.C {
		for _, rel := range release {
			select {
			case rel <- struct{}{}:
			default: // still busy with the last wave's call
			}
		}
	}
	tk.Stop()
	for _, rel := range release {
		close(rel)
	}
	wg.Wait()
	return phaseResult{
		Name: ph.name, Callers: ph.callers, Rate: ph.rate, CallsMade: made, CallsOK: ok,
		StartNs: start.UnixNano(), EndNs: time.Now().UnixNano(),
	}
}

// selfSigned makes a certificate for 127.0.0.1 and a pool that trusts it.
func selfSigned() (tls.Certificate, *x509.CertPool, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "localhost"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool, nil
}

func main() {
	var ps phases
	flag.Var(&ps, "phase", "NAME:CALLERS:RATE:SECONDS (repeatable)")
	static := flag.Bool("static-window", false, "set the initial windows (1 MiB): no BDP estimator")
	overTLS := flag.Bool("tls", false, "serve and call over TLS (self-signed certificate made at start, no key log)")
	flag.Parse()
	if len(ps) == 0 {
		ps = phases{{"1 caller x 24/s", 1, 24, 10}, {"8 callers x 3/s", 8, 3, 10}}
	}
	var sopts []grpc.ServerOption
	dopts := []grpc.DialOption{grpc.WithBlock()}
	if *overTLS {
		cert, pool, err := selfSigned()
		if err != nil {
			fmt.Fprintln(os.Stderr, "h2ledger-grpcgo: certificate:", err)
			os.Exit(1)
		}
		sopts = append(sopts, grpc.Creds(credentials.NewServerTLSFromCert(&cert)))
		dopts = append(dopts, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: pool})))
	} else {
		dopts = append(dopts, grpc.WithInsecure())
	}
	if *static {
		sopts = append(sopts, grpc.InitialWindowSize(staticWindow), grpc.InitialConnWindowSize(staticWindow))
		dopts = append(dopts, grpc.WithInitialWindowSize(staticWindow), grpc.WithInitialConnWindowSize(staticWindow))
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "h2ledger-grpcgo: listen:", err)
		os.Exit(1)
	}
	s := grpc.NewServer(sopts...)
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(s, hs)
	go s.Serve(lis)
	hello, _ := json.Marshal(map[string]interface{}{
		"impl": "grpc-go", "version": grpc.Version, "port": lis.Addr().(*net.TCPAddr).Port, "tls": *overTLS,
	})
	fmt.Println(string(hello))
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		os.Exit(1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	conn, err := grpc.DialContext(ctx, lis.Addr().String(), dopts...)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "h2ledger-grpcgo: dial:", err)
		os.Exit(1)
	}
	client := healthpb.NewHealthClient(conn)
	var results []phaseResult
	failed := false
	for _, ph := range ps {
		r := run(client, ph)
		failed = failed || r.CallsOK != r.CallsMade
		results = append(results, r)
	}
	conn.Close()
	s.GracefulStop()
	out, _ := json.Marshal(map[string]interface{}{"phases": results})
	fmt.Println(string(out))
	if failed {
		os.Exit(1)
	}
}
