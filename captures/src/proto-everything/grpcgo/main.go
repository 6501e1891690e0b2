// The proto-grpcgo capture's program: a grpc-go server and client of
// h2ledger.test.v1.TestService (../everything.proto) on 127.0.0.1, one connection, calls one
// after another. Each side writes the protojson form (default MarshalOptions, compacted with
// encoding/json.Compact: protojson adds random spaces on purpose) of every message it sends,
// in order, to the ground-truth file, one JSON object per line:
// {"call":K,"direction":"request"|"response","index":I,"message":{...},"method":"/h2ledger.test.v1.TestService/Unary"}.
//
// Built by scripts/build-proto-grpcgo.sh in GOPATH mode against Debian's
// golang-google-grpc-dev (1.33.3) and golang-google-protobuf-dev (1.28.1); the message code
// comes from protoc-gen-go and protoc-gen-go-grpc (Debian's protoc-gen-go, protoc-gen-go-grpc).
// grpc-go 1.33's default codec marshals with github.com/golang/protobuf 1.3, which does not
// know APIv2 messages; the codec below (registered as "proto", replacing it) uses APIv2.
//
// usage: proto-grpcgo TRUTH_FILE GO_FILE: prints {"port": P}, waits until GO_FILE exists,
// makes the calls, prints a JSON result line.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"sort"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/gzip"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	pb "h2ledger/proto-everything/testpb"
)

type codec struct{}

func (codec) Marshal(v interface{}) ([]byte, error)   { return proto.Marshal(v.(proto.Message)) }
func (codec) Unmarshal(b []byte, v interface{}) error { return proto.Unmarshal(b, v.(proto.Message)) }
func (codec) Name() string                            { return "proto" }
func init()                                           { encoding.RegisterCodec(codec{}) }

const service = "/h2ledger.test.v1.TestService/"

type truth struct {
	Call      int             `json:"call"`
	Direction string          `json:"direction"`
	Index     int             `json:"index"`
	Message   json.RawMessage `json:"message"`
	Method    string          `json:"method"`
}

var (
	mu     sync.Mutex
	truths []truth
)

func record(call int, method, dir string, index int, m proto.Message) {
	b, err := protojson.Marshal(m)
	if err != nil {
		panic(err)
	}
	var c bytes.Buffer
	if err := json.Compact(&c, b); err != nil {
		panic(err)
	}
	mu.Lock()
	truths = append(truths, truth{call, dir, index, json.RawMessage(c.Bytes()), service + method})
	mu.Unlock()
}

func callOf(ctx context.Context) int {
	md, _ := metadata.FromIncomingContext(ctx)
	k, _ := strconv.Atoi(md.Get("x-call")[0])
	return k
}

func ts(s int64, n int32) *timestamppb.Timestamp { return &timestamppb.Timestamp{Seconds: s, Nanos: n} }
func du(s int64, n int32) *durationpb.Duration   { return &durationpb.Duration{Seconds: s, Nanos: n} }

func mustAny(m proto.Message) *anypb.Any {
	a, err := anypb.New(m)
	if err != nil {
		panic(err)
	}
	return a
}

func full(k int) *pb.Everything {
	pick := func(xs ...interface{}) interface{} { return xs[k%len(xs)] }
	m := &pb.Everything{
		Scalars: &pb.Scalars{
			FDouble:   pick(1e21, 1e-7, 123456.789, -2.5).(float64),
			FFloat:    pick(float32(0.1), float32(3.4028235e38), float32(1e-7), float32(-1.5)).(float32),
			FInt32:    pick(int32(math.MinInt32), int32(math.MaxInt32), int32(-1), int32(7)).(int32),
			FInt64:    pick(int64(math.MinInt64), int64(math.MaxInt64), int64(-1), int64(1<<53)).(int64),
			FUint32:   math.MaxUint32,
			FUint64:   math.MaxUint64,
			FSint32:   -123456,
			FSint64:   -1234567890123,
			FFixed32:  3000000000,
			FFixed64:  12345678901234567890,
			FSfixed32: -42,
			FSfixed64: -4242424242424242,
			FBool:     true,
			FString:   fmt.Sprintf("h\u00e9llo \"quoted\" \\ \n\t\u0001 \u2603 \U0001f389 %d", k),
			FBytes: func() []byte {
				b := make([]byte, 256)
				for i := range b {
					b[i] = byte(i)
				}
				return b
			}(),
		},
		Packed: &pb.Packed{
			RDouble:   []float64{0, -0.5, 1e300, math.Inf(1), math.Inf(-1), math.NaN(), math.Copysign(0, -1)},
			RFloat:    []float32{0.1, 0.2, 16777217.0, 1e-45},
			RInt32:    []int32{0, -1, 300, math.MinInt32},
			RInt64:    []int64{0, -1, 1 << 40},
			RUint32:   []uint32{0, 1, math.MaxUint32},
			RUint64:   []uint64{0, math.MaxUint64},
			RSint32:   []int32{0, -1, 1, math.MinInt32, math.MaxInt32},
			RSint64:   []int64{math.MinInt64, math.MaxInt64},
			RFixed32:  []uint32{1, math.MaxUint32},
			RFixed64:  []uint64{1, math.MaxUint64},
			RSfixed32: []int32{-1, 1},
			RSfixed64: []int64{-1, 1},
			RBool:     []bool{true, false, true},
			RColor:    []pb.Color{pb.Color_RED, pb.Color_COLOR_UNSPECIFIED, pb.Color_BLUE, 99},
			RString:   []string{"", "a", "\u00fc"},
			RBytes:    [][]byte{{}, {0, 0xff}, []byte("abc")},
			RUnpacked: []int32{1, 2, 3, -4},
		},
		Inner: &pb.Inner{Name: fmt.Sprintf("inner-%d", k), Id: int32(k), Children: []*pb.Inner{
			{Name: "child", Id: 1, Children: []*pb.Inner{{Name: "grandchild", Id: 2, Children: []*pb.Inner{{Name: "great", Id: 3}}}}},
		}},
		Inners:          []*pb.Inner{{Name: "a", Id: 1}, {}, {Name: "c"}},
		Counts:          map[string]int32{"one": 1, "zero": 0, "minus": -1, "": 5},
		ById:            map[int64]*pb.Inner{-5: {Name: "minus five"}, 1 << 40: {Id: 7}, 0: {}},
		Flags:           map[bool]string{true: "yes", false: "no"},
		Colors:          map[uint32]pb.Color{1: pb.Color_GREEN, math.MaxUint32: pb.Color_COLOR_UNSPECIFIED},
		BySint:          map[int64]string{-1: "minus one", 2: "two"},
		ByFixed:         map[uint32]float64{7: 0.25},
		Color:           pb.Color_BLUE,
		Palette:         []pb.Color{pb.Color_RED, pb.Color_GREEN},
		At:              ts(1700000000+int64(k), []int32{0, 5000000, 123456000, 123456789}[k%4]),
		Took:            du([]int64{1, -1, 0, 3600}[k%4], []int32{500000000, -1000, -1, 0}[k%4]),
		Any:             mustAny(&pb.Inner{Name: "in any", Id: 9}),
		WDouble:         wrapperspb.Double(0),
		WFloat:          wrapperspb.Float(0.1),
		WInt64:          wrapperspb.Int64(-1),
		WUint64:         wrapperspb.UInt64(math.MaxUint64),
		WInt32:          wrapperspb.Int32(-7),
		WUint32:         wrapperspb.UInt32(7),
		WBool:           wrapperspb.Bool(false),
		WString:         wrapperspb.String("wrapped"),
		WBytes:          wrapperspb.Bytes([]byte{1, 2, 3}),
		Mask:            &fieldmaskpb.FieldMask{Paths: []string{"foo_bar", "baz.qux_quux", "x"}},
		Nothing:         &emptypb.Empty{},
		Maybe:           proto.Int32(0),
		MaybeText:       proto.String(""),
		Times:           []*timestamppb.Timestamp{ts(0, 0), ts(-1, 999999999), ts(253402300799, 999999999), ts(-62135596800, 0), ts(951782400, 1000)},
		Durations:       []*durationpb.Duration{du(0, 0), du(0, -500000000), du(-3, -100000000), du(315576000000, 0), du(1, 10000), du(0, 1)},
		SnakeCaseName_2: "snake",
		Custom:          37,
		Anys: []*anypb.Any{mustAny(ts(1, 500000000)), mustAny(du(-2, -250000000)), mustAny(structpb.NewStringValue("v")),
			mustAny(&emptypb.Empty{}), mustAny(wrapperspb.Int64(5)), {}},
	}
	switch k % 4 {
	case 0:
		m.Choice = &pb.Everything_ChoiceText{ChoiceText: fmt.Sprintf("text %d", k)}
	case 1:
		m.Choice = &pb.Everything_ChoiceNumber{ChoiceNumber: -(1 << 62)}
	case 2:
		m.Choice = &pb.Everything_ChoiceInner{ChoiceInner: &pb.Inner{Name: "chosen"}}
	default:
		m.Choice = &pb.Everything_ChoiceColor{ChoiceColor: pb.Color_COLOR_UNSPECIFIED}
	}
	meta, err := structpb.NewStruct(map[string]interface{}{
		"s": "str", "n": 1.5, "i": 2, "b": true, "z": nil,
		"l": []interface{}{1, "two", false, nil, map[string]interface{}{"x": []interface{}{}}},
		"o": map[string]interface{}{"p": map[string]interface{}{"q": "r"}},
	})
	if err != nil {
		panic(err)
	}
	m.Meta = meta
	lv, _ := structpb.NewList([]interface{}{1, "x", nil})
	m.Value = structpb.NewListValue(lv)
	m.List, _ = structpb.NewList([]interface{}{map[string]interface{}{"a": 1}, []interface{}{}, "s", 0})
	return m
}

func small(k int) *pb.Everything {
	m := &pb.Everything{
		Inner:   &pb.Inner{Name: fmt.Sprintf("s%d", k), Id: int32(k)},
		Palette: []pb.Color{pb.Color(k % 4), pb.Color((k + 1) % 4)},
		Counts:  map[string]int32{"k": int32(k)},
		At:      ts(int64(k)*1000, int32(k%1000)*1000000), // protojson refuses nanos >= 1e9
	}
	switch k % 3 {
	case 0:
		m.Choice = &pb.Everything_ChoiceNumber{ChoiceNumber: int64(k)}
	case 1:
		m.Choice = &pb.Everything_ChoiceInner{ChoiceInner: &pb.Inner{Id: int32(k)}}
	default:
		m.Choice = &pb.Everything_ChoiceText{ChoiceText: ""}
	}
	if k%2 == 1 {
		m.Scalars = &pb.Scalars{FFloat: float32(k) / 10, FDouble: -float64(k) / 3}
	}
	return m
}

func big(k int) *pb.Everything {
	n := 200 * 1024
	b := make([]byte, n)
	x := uint32(0x9E3779B9 + k)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return &pb.Everything{Blob: b, Inner: &pb.Inner{Name: fmt.Sprintf("big-%d", k)}, SnakeCaseName_2: "big"}
}

type server struct {
	pb.UnimplementedTestServiceServer
}

func (server) Unary(ctx context.Context, req *pb.Everything) (*pb.Everything, error) {
	k := callOf(ctx)
	var resp *pb.Everything
	if len(req.Blob) > 100000 {
		resp = big(k + 1000)
	} else {
		resp = full(k + 1)
	}
	record(k, "Unary", "response", 0, resp)
	return resp, nil
}

func (server) Empty(ctx context.Context, req *pb.Nothing) (*pb.Nothing, error) {
	resp := &pb.Nothing{}
	record(callOf(ctx), "Empty", "response", 0, resp)
	return resp, nil
}

func (server) ServerStream(req *pb.Everything, s pb.TestService_ServerStreamServer) error {
	k := callOf(s.Context())
	for i := 0; i < 5; i++ {
		resp := small(100*k + i)
		if i == 2 {
			resp = &pb.Everything{}
		}
		record(k, "ServerStream", "response", i, resp)
		if err := s.Send(resp); err != nil {
			return err
		}
	}
	return nil
}

func (server) ClientStream(s pb.TestService_ClientStreamServer) error {
	k := callOf(s.Context())
	n := 0
	for {
		_, err := s.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		n++
	}
	resp := small(1000 + n)
	record(k, "ClientStream", "response", 0, resp)
	return s.SendAndClose(resp)
}

func (server) Bidi(s pb.TestService_BidiServer) error {
	k := callOf(s.Context())
	for i := 0; ; i++ {
		req, err := s.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		resp := small(2000 + 10*k + i)
		resp.Inner.Name = "echo " + req.Inner.GetName()
		record(k, "Bidi", "response", i, resp)
		if err := s.Send(resp); err != nil {
			return err
		}
	}
}

func main() {
	out, goFile := os.Args[1], os.Args[2]
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	srv := grpc.NewServer()
	pb.RegisterTestServiceServer(srv, server{})
	go srv.Serve(lis)
	port := lis.Addr().(*net.TCPAddr).Port
	fmt.Printf("{\"port\": %d}\n", port)
	for i := 0; i < 600; i++ {
		if _, err := os.Stat(goFile); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	conn, err := grpc.Dial(fmt.Sprintf("127.0.0.1:%d", port), grpc.WithInsecure(), grpc.WithBlock())
	if err != nil {
		panic(err)
	}
	c := pb.NewTestServiceClient(conn)
	ctx := func(k int) context.Context {
		return metadata.AppendToOutgoingContext(context.Background(), "x-call", strconv.Itoa(k))
	}
	send := func(k int, method string, i int, m proto.Message) {
		record(k, method, "request", i, m)
	}
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	k := 0
	send(k, "Empty", 0, &pb.Nothing{})
	_, err = c.Empty(ctx(k), &pb.Nothing{})
	must(err)
	k++
	for _, m := range []*pb.Everything{full(0), full(2), big(3)} {
		send(k, "Unary", 0, m)
		_, err = c.Unary(ctx(k), m)
		must(err)
		k++
	}
	// The same message once more, compressed with gzip.
	m := full(3)
	send(k, "Unary", 0, m)
	_, err = c.Unary(ctx(k), m, grpc.UseCompressor("gzip"))
	must(err)
	k++
	req := small(7)
	send(k, "ServerStream", 0, req)
	ss, err := c.ServerStream(ctx(k), req)
	must(err)
	for {
		if _, err := ss.Recv(); err == io.EOF {
			break
		} else {
			must(err)
		}
	}
	k++
	cs, err := c.ClientStream(ctx(k))
	must(err)
	for i := 0; i < 4; i++ {
		m := small(10 + i)
		send(k, "ClientStream", i, m)
		must(cs.Send(m))
	}
	_, err = cs.CloseAndRecv()
	must(err)
	k++
	bs, err := c.Bidi(ctx(k))
	must(err)
	for i := 0; i < 4; i++ {
		m := small(20 + i)
		send(k, "Bidi", i, m)
		must(bs.Send(m))
		_, err := bs.Recv()
		must(err)
	}
	must(bs.CloseSend())
	if _, err := bs.Recv(); err != io.EOF {
		panic(err)
	}
	k++
	conn.Close()
	time.Sleep(200 * time.Millisecond)
	srv.Stop()
	sort.SliceStable(truths, func(i, j int) bool {
		a, b := truths[i], truths[j]
		if a.Call != b.Call {
			return a.Call < b.Call
		}
		if a.Direction != b.Direction {
			return a.Direction == "request"
		}
		return a.Index < b.Index
	})
	f, err := os.Create(out)
	must(err)
	for _, t := range truths {
		b, err := json.Marshal(t)
		must(err)
		f.Write(append(b, '\n'))
	}
	must(f.Close())
	fmt.Printf("{\"program\": \"grpc-go 1.33.3 (Debian) everything\", \"port\": %d, \"calls_made\": %d, \"messages\": %d}\n", port, k, len(truths))
}
