// grpcgo-wellknown: the grpc-go (Debian's golang-google-grpc-dev, 1.33) program of the
// grpcgo-wellknown capture: the schemas h2ledger decodes without --proto, on the wire of one
// connection between a stock grpc-go server and client in one process.
//
//   - grpc.health.v1.Health: grpc-go's own health server (google.golang.org/grpc/health);
//     Check "" (SERVING), Check "h2ledger.Missing" (NOT_FOUND), and a Watch of
//     "h2ledger.Svc" that sees SERVING, then NOT_SERVING, then is cancelled.
//   - grpc.reflection.v1alpha.ServerReflection: grpc-go's reflection service
//     (google.golang.org/grpc/reflection.Register); one stream asking list_services and
//     file_containing_symbol "grpc.health.v1.Health".
//   - grpc.reflection.v1.ServerReflection: grpc-go 1.33 has no v1 service, and v1's messages
//     are v1alpha's field for field, so the v1 method relays each message to the v1alpha
//     service of the same server over an in-process connection (bufconn): what is on the
//     wire is what grpc-go's reflection answers, under v1's name.
//   - google.rpc.Status in grpc-status-details-bin: h2ledger.wellknown.Errors/* (an unknown
//     service handler) fails each call with status.WithDetails: Fail1 ErrorInfo + RetryInfo,
//     Fail2 QuotaFailure + DebugInfo, Fail3 BadRequest + PreconditionFailure + ResourceInfo
//     + RequestInfo + Help + LocalizedMessage.
//
// Prints {"port": P} once the server listens, waits until FILE exists (the capture runs),
// writes the ground truth to TRUTH (one JSON line per failed call: its method, and the
// google.rpc.Status that status.WithDetails sent, as jsonpb prints it), then one JSON line
// with what the client saw.
//
// Usage: grpcgo-wellknown TRUTH [FILE]
// Build (GOPATH mode, no network): scripts/build-grpcgo-wellknown.sh OUTDIR
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/golang/protobuf/jsonpb"
	"github.com/golang/protobuf/ptypes"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
	rpb "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
)

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func waitFor(file string) {
	for i := 0; i < 600 && file != ""; i++ {
		if _, err := os.Stat(file); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

var inner *grpc.ClientConn

// v1 relays a grpc.reflection.v1 stream to the server's own v1alpha service.
func v1(_ interface{}, stream grpc.ServerStream) error {
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	up, err := rpb.NewServerReflectionClient(inner).ServerReflectionInfo(ctx)
	if err != nil {
		return err
	}
	for {
		req := new(rpb.ServerReflectionRequest)
		if err := stream.RecvMsg(req); err == io.EOF {
			return up.CloseSend()
		} else if err != nil {
			return err
		}
		if err := up.Send(req); err != nil {
			return err
		}
		resp, err := up.Recv()
		if err != nil {
			return err
		}
		if err := stream.SendMsg(resp); err != nil {
			return err
		}
	}
}

func fail(method string) *status.Status {
	var st *status.Status
	var err error
	switch method {
	case "/h2ledger.wellknown.Errors/Fail1":
		st, err = status.New(codes.Unavailable, "backend overloaded").WithDetails(
			&errdetails.ErrorInfo{Reason: "OVERLOADED", Domain: "h2ledger.example",
				Metadata: map[string]string{"zone": "a", "backend": "b1"}},
			&errdetails.RetryInfo{RetryDelay: ptypes.DurationProto(1500 * time.Millisecond)})
	case "/h2ledger.wellknown.Errors/Fail2":
		st, err = status.New(codes.ResourceExhausted, "quota").WithDetails(
			&errdetails.QuotaFailure{Violations: []*errdetails.QuotaFailure_Violation{
				{Subject: "project:demo", Description: "100 calls a minute"}}},
			&errdetails.DebugInfo{StackEntries: []string{"main.fail", "main.main"}, Detail: "at the limit"})
	default:
		st, err = status.New(codes.InvalidArgument, "bad request").WithDetails(
			&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{
				{Field: "service", Description: "must not be empty"}}},
			&errdetails.PreconditionFailure{Violations: []*errdetails.PreconditionFailure_Violation{
				{Type: "TOS", Subject: "user:1", Description: "terms not accepted"}}},
			&errdetails.ResourceInfo{ResourceType: "book", ResourceName: "shelves/1/books/2",
				Owner: "user:1", Description: "not found"},
			&errdetails.RequestInfo{RequestId: "req-42", ServingData: "x"},
			&errdetails.Help{Links: []*errdetails.Help_Link{{Description: "docs", Url: "https://example.com/help"}}},
			&errdetails.LocalizedMessage{Locale: "fr-FR", Message: "requête invalide"})
	}
	must(err)
	return st
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: grpcgo-wellknown TRUTH [FILE]")
		os.Exit(2)
	}
	truth, err := os.Create(os.Args[1])
	must(err)
	goFile := ""
	if len(os.Args) > 2 {
		goFile = os.Args[2]
	}
	v1desc := grpc.ServiceDesc{
		ServiceName: "grpc.reflection.v1.ServerReflection",
		HandlerType: (*interface{})(nil),
		Streams: []grpc.StreamDesc{{StreamName: "ServerReflectionInfo", Handler: v1,
			ServerStreams: true, ClientStreams: true}},
		Metadata: "grpc/reflection/v1/reflection.proto",
	}
	srv := grpc.NewServer(grpc.UnknownServiceHandler(func(_ interface{}, stream grpc.ServerStream) error {
		m, _ := grpc.MethodFromServerStream(stream)
		req := new(healthpb.HealthCheckRequest)
		if err := stream.RecvMsg(req); err != nil {
			return err
		}
		return fail(m).Err()
	}))
	hs := health.NewServer()
	hs.SetServingStatus("h2ledger.Svc", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(srv, hs)
	reflection.Register(srv)
	srv.RegisterService(&v1desc, struct{}{})

	buf := bufconn.Listen(1 << 20)
	go srv.Serve(buf)
	inner, err = grpc.Dial("bufconn", grpc.WithInsecure(),
		grpc.WithContextDialer(func(context.Context, string) (net.Conn, error) { return buf.Dial() }))
	must(err)

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	must(err)
	go srv.Serve(lis)
	fmt.Printf("{\"port\": %d}\n", lis.Addr().(*net.TCPAddr).Port)
	waitFor(goFile)

	conn, err := grpc.Dial(lis.Addr().String(), grpc.WithInsecure(), grpc.WithBlock())
	must(err)
	ctx := context.Background()
	seen := map[string]interface{}{}

	hc := healthpb.NewHealthClient(conn)
	r, err := hc.Check(ctx, &healthpb.HealthCheckRequest{})
	must(err)
	seen["check"] = r.Status.String()
	_, err = hc.Check(ctx, &healthpb.HealthCheckRequest{Service: "h2ledger.Missing"})
	seen["check_missing"] = status.Code(err).String()

	wctx, wcancel := context.WithCancel(ctx)
	w, err := hc.Watch(wctx, &healthpb.HealthCheckRequest{Service: "h2ledger.Svc"})
	must(err)
	var watched []string
	r, err = w.Recv()
	must(err)
	watched = append(watched, r.Status.String())
	hs.SetServingStatus("h2ledger.Svc", healthpb.HealthCheckResponse_NOT_SERVING)
	r, err = w.Recv()
	must(err)
	watched = append(watched, r.Status.String())
	wcancel()
	seen["watch"] = watched

	for _, path := range []string{
		"/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
		"/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
	} {
		s, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, path)
		must(err)
		var got []int
		for _, req := range []*rpb.ServerReflectionRequest{
			{MessageRequest: &rpb.ServerReflectionRequest_ListServices{ListServices: "*"}},
			{MessageRequest: &rpb.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: "grpc.health.v1.Health"}},
		} {
			must(s.SendMsg(req))
			resp := new(rpb.ServerReflectionResponse)
			must(s.RecvMsg(resp))
			if l := resp.GetListServicesResponse(); l != nil {
				got = append(got, len(l.Service))
			} else {
				got = append(got, len(resp.GetFileDescriptorResponse().GetFileDescriptorProto()))
			}
		}
		must(s.CloseSend())
		if err := s.RecvMsg(new(rpb.ServerReflectionResponse)); err != io.EOF {
			must(fmt.Errorf("%s: %v", path, err))
		}
		seen[path] = got
	}

	m := jsonpb.Marshaler{}
	var codesSeen []string
	for _, path := range []string{
		"/h2ledger.wellknown.Errors/Fail1",
		"/h2ledger.wellknown.Errors/Fail2",
		"/h2ledger.wellknown.Errors/Fail3",
	} {
		err := conn.Invoke(ctx, path, &healthpb.HealthCheckRequest{Service: "x"}, new(healthpb.HealthCheckResponse))
		st := status.Convert(err)
		codesSeen = append(codesSeen, st.Code().String())
		text, err := m.MarshalToString(st.Proto())
		must(err)
		line, _ := json.Marshal(map[string]interface{}{"method": path, "status": json.RawMessage(text)})
		fmt.Fprintln(truth, string(line))
	}
	seen["errors"] = codesSeen
	must(truth.Close())
	conn.Close()
	time.Sleep(100 * time.Millisecond)
	out, _ := json.Marshal(seen)
	fmt.Println(string(out))
}
