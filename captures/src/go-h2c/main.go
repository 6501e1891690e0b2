// Go's net/http over h2c (golang.org/x/net/http2 and http2/h2c from Debian's
// golang-golang-x-net-dev), server and client in one process on loopback.
//
// usage: go-h2c [-go FILE] [-serve]
// -serve: the server alone, until killed (the findings captures' attack client talks to it).
// Prints {"port": P}, waits until FILE exists (the capture is running), then runs the client:
// prior-knowledge h2c (http2.Transport with AllowHTTP): 10 GETs, 4 concurrent GETs, a 100 KiB
// POST echoed back (flow control), a response with trailers; then prints a JSON summary.
// /big503 (for a client of -serve) answers 503 with a header block split over CONTINUATION.
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/h2c"
)

func main() {
	goFile := flag.String("go", "", "start the client once this file exists")
	serveOnly := flag.Bool("serve", false, "serve until killed, no client")
	flag.Parse()
	mux := http.NewServeMux()
	mux.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s\n", r.Proto)
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(w, r.Body)
	})
	mux.HandleFunc("/trailers", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Checksum")
		w.Write([]byte("body with trailers\n"))
		w.Header().Set("X-Checksum", "abc123")
	})
	// 1 MiB: more than the windows let through at once.
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Write(bytes.Repeat([]byte("0123456789abcdef"), 1<<16))
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(100 * time.Millisecond)
		fmt.Fprintf(w, "slow %s\n", r.Proto)
	})
	// A body of a known length, flushed, then trailers: a client that stops reading at the
	// length (curl resets the stream) may cross the trailers on the wire.
	mux.HandleFunc("/late-trailers", func(w http.ResponseWriter, r *http.Request) {
		body := []byte("body, then trailers later\n")
		w.Header().Set("Trailer", "X-Checksum")
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		w.Write(body)
		w.(http.Flusher).Flush()
		w.Header().Set("X-Checksum", "abc123")
	})
	// A 503 whose response header block (a 20,000-byte header) is more than one 16,384-byte
	// frame: Go's server sends it as HEADERS with END_STREAM (no body) and a CONTINUATION.
	mux.HandleFunc("/big503", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Error-Detail", strings.Repeat("x", 20000))
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	srv := &http.Server{Handler: h2c.NewHandler(mux, &http2.Server{})}
	go srv.Serve(ln)
	port := ln.Addr().(*net.TCPAddr).Port
	json.NewEncoder(os.Stdout).Encode(map[string]int{"port": port})
	if *serveOnly {
		select {}
	}
	for i := 0; i < 600; i++ {
		if *goFile == "" {
			time.Sleep(time.Second)
			break
		}
		if _, err := os.Stat(*goFile); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	tr := &http2.Transport{
		AllowHTTP: true,
		DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
	}
	client := &http.Client{Transport: tr}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	calls := 0
	get := func(path string) {
		resp, err := client.Get(base + path)
		if err != nil {
			panic(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	for i := 0; i < 10; i++ {
		get("/hello")
		calls++
	}
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); get("/hello") }()
		calls++
	}
	wg.Wait()
	body := bytes.Repeat([]byte("0123456789abcdef"), 100*1024/16)
	resp, err := client.Post(base+"/echo", "application/octet-stream", bytes.NewReader(body))
	if err != nil {
		panic(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	calls++
	resp, err = client.Get(base + "/trailers")
	if err != nil {
		panic(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	calls++
	tr.CloseIdleConnections()
	time.Sleep(200 * time.Millisecond)
	json.NewEncoder(os.Stdout).Encode(map[string]interface{}{
		"program": "go net/http h2c", "port": port, "calls_made": calls,
		"echoed": n, "trailer": resp.Trailer.Get("X-Checksum"),
	})
}
