// go-tls: Go's net/http over TLS (HTTP/2 by ALPN) with tls.Config.KeyLogWriter, for the TLS
// captures (scripts/make-tls-captures.sh). Standard library only.
//
//	go-tls -serve 127.0.0.1:0                     prints {"port":P}, serves /hello and /echo
//	go-tls -connect 127.0.0.1:P -keylog FILE -tls12 -n 5
//
// The client makes n GETs of /hello and one POST of 20 000 bytes to /echo over one
// connection, writing its secrets to FILE; -tls12 limits it to TLS 1.2 with
// ECDHE-RSA-CHACHA20-POLY1305, otherwise TLS 1.3 is negotiated.
package main

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
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

func cert() tls.Certificate {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "localhost"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func main() {
	serve := flag.String("serve", "", "listen address")
	connect := flag.String("connect", "", "server address")
	keylog := flag.String("keylog", "", "key log file (client)")
	tls12 := flag.Bool("tls12", false, "TLS 1.2 with ECDHE-RSA-CHACHA20-POLY1305")
	n := flag.Int("n", 5, "GET requests")
	flag.Parse()
	if *serve != "" {
		ln, err := net.Listen("tcp", *serve)
		if err != nil {
			panic(err)
		}
		fmt.Printf("{\"port\": %d}\n", ln.Addr().(*net.TCPAddr).Port)
		mux := http.NewServeMux()
		mux.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "hello over %s\n", r.Proto)
		})
		mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
			io.Copy(w, r.Body)
		})
		srv := &http.Server{Handler: mux, TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{cert()},
			NextProtos:   []string{"h2", "http/1.1"},
		}}
		panic(srv.ServeTLS(ln, "", ""))
	}
	f, err := os.OpenFile(*keylog, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		panic(err)
	}
	cfg := &tls.Config{InsecureSkipVerify: true, KeyLogWriter: f, NextProtos: []string{"h2"}}
	if *tls12 {
		cfg.MaxVersion = tls.VersionTLS12
		cfg.CipherSuites = []uint16{tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305}
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true}}
	for i := 0; i < *n; i++ {
		resp, err := c.Get("https://" + *connect + "/hello")
		if err != nil {
			panic(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.ProtoMajor != 2 {
			panic("not HTTP/2: " + resp.Proto)
		}
	}
	resp, err := c.Post("https://"+*connect+"/echo", "application/octet-stream", bytes.NewReader(make([]byte, 20000)))
	if err != nil {
		panic(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Printf("{\"calls_made\": %d, \"echoed\": %d}\n", *n+1, len(got))
}
