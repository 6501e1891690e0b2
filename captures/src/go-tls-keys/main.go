// go-tls-keys: the test peer of crates/h2ledger-keys (issue 25). Go's net/http over TLS
// (HTTP/2 by ALPN), server and client in one process, with a self-signed certificate made at
// start and, by default, no key log: the program h2ledger must take the TLS secrets from
// without changing it. Standard library only; built by scripts/build-go-tls-keys.sh, once with
// symbols and once with -ldflags "-s -w".
//
//	go-tls-keys [-tls 1.2|1.3] [-n 20] [-conns 2] [-keylog FILE] [-wait] [-early]
//
// It prints one line, `listening 127.0.0.1:PORT pid PID`, then (with -wait) waits for a line
// on standard input before the first handshake, so that a prober can attach first. With
// -early the first connection makes its handshake and first request before that line (a
// connection whose secrets a prober attached afterwards cannot have). Each of
// the -conns clients (its own http.Transport, so its own TCP connection and TLS handshake)
// makes -n/-conns GETs of /hello (the remainder on the first), then the program prints
// `done requests=N ok=N conns=C` and exits. -keylog FILE writes the client's secrets in
// SSLKEYLOGFILE format (the ground truth the tests compare with); -tls caps both ends'
// MaxVersion.
package main

import (
	"bufio"
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
	"net/http"
	"os"
	"time"
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
	version := flag.String("tls", "1.3", "highest TLS version of both ends: 1.2 or 1.3")
	n := flag.Int("n", 20, "GET requests in all")
	conns := flag.Int("conns", 2, "client connections (one http.Transport each)")
	keylog := flag.String("keylog", "", "also write the client's secrets to FILE (SSLKEYLOGFILE format)")
	wait := flag.Bool("wait", false, "wait for a line on standard input before the first request")
	early := flag.Bool("early", false, "the first connection's handshake and first request come before -wait's line")
	flag.Parse()
	var maxVersion uint16
	switch *version {
	case "1.2":
		maxVersion = tls.VersionTLS12
	case "1.3":
		maxVersion = tls.VersionTLS13
	default:
		fmt.Fprintln(os.Stderr, "go-tls-keys: -tls must be 1.2 or 1.3")
		os.Exit(2)
	}
	if *conns < 1 || *n < *conns {
		fmt.Fprintln(os.Stderr, "go-tls-keys: need -conns >= 1 and -n >= -conns")
		os.Exit(2)
	}

	cert, pool := selfSigned()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello over %s\n", r.Proto)
	})
	srv := &http.Server{
		Handler:   mux,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MaxVersion: maxVersion},
	}
	// ServeTLS adds "h2" to NextProtos: HTTP/2 by ALPN.
	go srv.ServeTLS(ln, "", "")

	var w io.Writer
	if *keylog != "" {
		f, err := os.OpenFile(*keylog, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil {
			panic(err)
		}
		defer f.Close()
		w = f
	}
	url := "https://" + ln.Addr().String() + "/hello"
	ok := 0
	get := func(client *http.Client) {
		resp, err := client.Get(url)
		if err != nil {
			fmt.Fprintln(os.Stderr, "go-tls-keys:", err)
			os.Exit(1)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 200 && resp.ProtoMajor == 2 {
			ok++
		}
	}
	transport := func() *http.Transport {
		return &http.Transport{
			TLSClientConfig:   &tls.Config{RootCAs: pool, MaxVersion: maxVersion, KeyLogWriter: w},
			ForceAttemptHTTP2: true,
		}
	}
	var first *http.Transport
	if *early {
		first = transport()
		get(&http.Client{Transport: first, Timeout: 10 * time.Second})
	}

	fmt.Printf("listening %s pid %d\n", ln.Addr(), os.Getpid())
	if *wait {
		bufio.NewReader(os.Stdin).ReadString('\n')
	}

	for c := 0; c < *conns; c++ {
		tr := transport()
		count := *n / *conns
		if c == 0 {
			count += *n % *conns
			if first != nil {
				tr = first
				count--
			}
		}
		client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
		for i := 0; i < count; i++ {
			get(client)
		}
		tr.CloseIdleConnections()
	}
	fmt.Printf("done requests=%d ok=%d conns=%d\n", *n, ok, *conns)
}
