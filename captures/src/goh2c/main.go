// goh2c: Go net/http over h2c (golang.org/x/net/http2/h2c), server and client in one process
// on 127.0.0.1:0: one POST of -mb MiB, echoed back as its length. For h2ledger's flow-control
// tests (issue 11). Prints {"port": P} once listening and {"posted": N, "server_read": N}.
package main

import (
	"bytes"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/h2c"
)

func main() {
	mb := flag.Int("mb", 3, "MiB to POST")
	pause := flag.Duration("pause", 2*time.Second, "wait before the request (tcpdump starts)")
	flag.Parse()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, "%d\n", n)
	})
	srv := &http.Server{Handler: h2c.NewHandler(h, &http2.Server{})}
	go srv.Serve(lis)
	fmt.Printf("{\"port\": %d}\n", lis.Addr().(*net.TCPAddr).Port)
	os.Stdout.Sync()
	time.Sleep(*pause)
	tr := &http2.Transport{
		AllowHTTP: true,
		DialTLS: func(network, addr string, _ *tls.Config) (net.Conn, error) {
			return net.Dial(network, addr)
		},
	}
	body := make([]byte, *mb<<20)
	for i := range body {
		body[i] = byte(i * 7)
	}
	resp, err := (&http.Client{Transport: tr}).Post("http://"+lis.Addr().String()+"/upload", "application/octet-stream", bytes.NewReader(body))
	if err != nil {
		panic(err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	tr.CloseIdleConnections()
	time.Sleep(200 * time.Millisecond)
	fmt.Printf("{\"posted\": %d, \"server_read\": %s}\n", len(body), bytes.TrimSpace(out))
}
