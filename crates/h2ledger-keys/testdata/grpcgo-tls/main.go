// grpcgo-tls: grpc-go over TLS, the stock health service (google.golang.org/grpc/health)
// served and called in one process with TLS credentials on a self-signed certificate made at
// start, and no key log by default: the demo's workload with TLS, as a test peer of
// crates/h2ledger-keys (issue 25).
//
//	grpcgo-tls [-n 20] [-conns 2] [-keylog FILE] [-wait]
//
// Prints `listening 127.0.0.1:PORT pid PID`, waits for a line on standard input with -wait,
// then each of -conns client connections (its own grpc.ClientConn, so its own TCP connection
// and TLS 1.3 handshake) makes -n/-conns health checks (the remainder on the first); prints
// `done requests=N ok=N conns=C` and exits. -keylog FILE writes the client's secrets in
// SSLKEYLOGFILE format (the ground truth).
//
// Build (GOPATH mode, no network, Debian's golang-go and golang-google-grpc-dev):
// scripts/build-grpcgo-tls.sh OUTDIR.
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
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

func selfSigned() (tls.Certificate, *x509.CertPool) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
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
		panic(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		panic(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

func main() {
	n := flag.Int("n", 20, "health checks in all")
	conns := flag.Int("conns", 2, "client connections")
	keylog := flag.String("keylog", "", "also write the client's secrets to FILE")
	wait := flag.Bool("wait", false, "wait for a line on standard input before the first call")
	flag.Parse()
	if *conns < 1 || *n < *conns {
		fmt.Fprintln(os.Stderr, "grpcgo-tls: need -conns >= 1 and -n >= -conns")
		os.Exit(2)
	}
	cert, pool := selfSigned()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	srv := grpc.NewServer(grpc.Creds(credentials.NewServerTLSFromCert(&cert)))
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go srv.Serve(ln)

	fmt.Printf("listening %s pid %d\n", ln.Addr(), os.Getpid())
	if *wait {
		bufio.NewReader(os.Stdin).ReadString('\n')
	}
	var w io.Writer
	if *keylog != "" {
		f, err := os.OpenFile(*keylog, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil {
			panic(err)
		}
		defer f.Close()
		w = f
	}
	ok := 0
	for c := 0; c < *conns; c++ {
		creds := credentials.NewTLS(&tls.Config{RootCAs: pool, KeyLogWriter: w})
		cc, err := grpc.Dial(ln.Addr().String(), grpc.WithTransportCredentials(creds), grpc.WithBlock())
		if err != nil {
			fmt.Fprintln(os.Stderr, "grpcgo-tls:", err)
			os.Exit(1)
		}
		client := healthpb.NewHealthClient(cc)
		count := *n / *conns
		if c == 0 {
			count += *n % *conns
		}
		for i := 0; i < count; i++ {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			resp, err := client.Check(ctx, &healthpb.HealthCheckRequest{})
			cancel()
			if err == nil && resp.Status == healthpb.HealthCheckResponse_SERVING {
				ok++
			}
		}
		cc.Close()
	}
	srv.Stop()
	fmt.Printf("done requests=%d ok=%d conns=%d\n", *n, ok, *conns)
}
