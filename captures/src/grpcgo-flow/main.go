// grpcgo-flow: a grpc-go server and client in one process (loopback, port 0) moving large
// messages, for h2ledger's flow-control and gRPC message tests (issue 11). No .proto: a raw
// bytes codec registered as "proto", so the content-type is plain application/grpc.
//
//	-static-window: 64 KiB stream windows on both sides (grpc-go then turns BDP off), 1 MiB
//	                connection windows: every large message waits for the stream window.
//	(default)       grpc-go's BDP estimator grows the windows.
//
// Calls, in order: Upload (client streams -messages messages of -size bytes, gzip when -gzip),
// Download (server streams the same), Fail (unary, returns InvalidArgument "bad size: 100%").
// Prints {"port": P} once listening and {"calls": N} at the end. With -serve D: no client, the
// server alone for D (the target of attack.py window-held --grpc), then {"served": D}.
package main

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/gzip"
	"google.golang.org/grpc/status"
)

type rawCodec struct{}

func (rawCodec) Marshal(v interface{}) ([]byte, error) { return *(v.(*[]byte)), nil }
func (rawCodec) Unmarshal(data []byte, v interface{}) error {
	*(v.(*[]byte)) = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

var size = flag.Int("size", 1<<20, "bytes per message")
var messages = flag.Int("messages", 8, "messages per streaming call")

func payload(i int) []byte {
	b := make([]byte, *size)
	for j := range b {
		b[j] = byte(i*131 + j*7) // not all zeros: gzip still has work
	}
	return b
}

func upload(_ interface{}, st grpc.ServerStream) error {
	n := 0
	for {
		var m []byte
		if err := st.RecvMsg(&m); err == io.EOF {
			break
		} else if err != nil {
			return err
		}
		n++
	}
	out := make([]byte, 4)
	binary.BigEndian.PutUint32(out, uint32(n))
	return st.SendMsg(&out)
}

func download(_ interface{}, st grpc.ServerStream) error {
	var req []byte
	if err := st.RecvMsg(&req); err != nil {
		return err
	}
	n := int(binary.BigEndian.Uint32(req))
	for i := 0; i < n; i++ {
		m := payload(i)
		if err := st.SendMsg(&m); err != nil {
			return err
		}
	}
	return nil
}

func fail(_ interface{}, st grpc.ServerStream) error {
	var req []byte
	if err := st.RecvMsg(&req); err != nil {
		return err
	}
	return status.Error(codes.InvalidArgument, "bad size: 100%")
}

var desc = grpc.ServiceDesc{
	ServiceName: "flow.Flow",
	HandlerType: (*interface{})(nil),
	Streams: []grpc.StreamDesc{
		{StreamName: "Upload", Handler: upload, ClientStreams: true},
		{StreamName: "Download", Handler: download, ServerStreams: true},
		{StreamName: "Fail", Handler: fail, ClientStreams: true, ServerStreams: true},
	},
}

func main() {
	static := flag.Bool("static-window", false, "64 KiB stream windows, BDP off")
	gz := flag.Bool("gzip", false, "gzip the uploaded messages")
	pause := flag.Duration("pause", 500*time.Millisecond, "wait before the first call (tcpdump starts)")
	serve := flag.Duration("serve", 0, "only serve (no client) for this long, then exit: another client's target")
	flag.Parse()
	encoding.RegisterCodec(rawCodec{})
	var sopts []grpc.ServerOption
	dopts := []grpc.DialOption{grpc.WithInsecure(), grpc.WithBlock()}
	if *static {
		sopts = append(sopts, grpc.InitialWindowSize(1<<16), grpc.InitialConnWindowSize(1<<20))
		dopts = append(dopts, grpc.WithInitialWindowSize(1<<16), grpc.WithInitialConnWindowSize(1<<20))
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	s := grpc.NewServer(sopts...)
	s.RegisterService(&desc, struct{}{})
	go s.Serve(lis)
	fmt.Printf("{\"port\": %d}\n", lis.Addr().(*net.TCPAddr).Port)
	os.Stdout.Sync()
	if *serve > 0 {
		time.Sleep(*serve)
		s.Stop()
		fmt.Printf("{\"served\": %q}\n", serve.String())
		return
	}
	time.Sleep(*pause)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cc, err := grpc.DialContext(ctx, lis.Addr().String(), dopts...)
	if err != nil {
		panic(err)
	}
	calls := 0
	// Upload.
	var copts []grpc.CallOption
	if *gz {
		copts = append(copts, grpc.UseCompressor(gzip.Name))
	}
	up, err := cc.NewStream(ctx, &desc.Streams[0], "/flow.Flow/Upload", copts...)
	if err != nil {
		panic(err)
	}
	for i := 0; i < *messages; i++ {
		m := payload(i)
		if err := up.SendMsg(&m); err != nil {
			panic(err)
		}
	}
	up.CloseSend()
	var got []byte
	if err := up.RecvMsg(&got); err != nil {
		panic(err)
	}
	calls++
	// Download.
	dn, err := cc.NewStream(ctx, &desc.Streams[1], "/flow.Flow/Download")
	if err != nil {
		panic(err)
	}
	req := make([]byte, 4)
	binary.BigEndian.PutUint32(req, uint32(*messages))
	dn.SendMsg(&req)
	dn.CloseSend()
	n := 0
	for {
		var m []byte
		if err := dn.RecvMsg(&m); err == io.EOF {
			break
		} else if err != nil {
			panic(err)
		}
		n++
	}
	if n != *messages {
		panic(fmt.Sprintf("download: %d messages", n))
	}
	calls++
	// Fail.
	fl, err := cc.NewStream(ctx, &desc.Streams[2], "/flow.Flow/Fail")
	if err != nil {
		panic(err)
	}
	fl.SendMsg(&req)
	fl.CloseSend()
	var x []byte
	if err := fl.RecvMsg(&x); status.Code(err) != codes.InvalidArgument {
		panic(fmt.Sprintf("fail: %v", err))
	}
	calls++
	time.Sleep(200 * time.Millisecond)
	cc.Close()
	time.Sleep(200 * time.Millisecond)
	s.Stop()
	fmt.Printf("{\"calls\": %d}\n", calls)
}
