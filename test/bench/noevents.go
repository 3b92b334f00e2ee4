package main

// A runtime without an event stream, for the exit workload's relist-only
// run of our kubelet: a gRPC proxy in front of the bench containerd that
// passes every CRI call through unchanged, except GetContainerEvents, which
// it answers Unimplemented as containerd 1.6 does. Our kubelet then relists
// alone (pkg/runtime/pleg: WatchEvents), which is what its PLEG does on a
// runtime that streams nothing; the same binary, configuration and runtime
// otherwise, so the exit latencies of the two runs differ by the event
// stream only.

import (
	"context"
	"errors"
	"io"
	"net"
	"os"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// containerEventsMethod is the CRI call the proxy refuses.
const containerEventsMethod = "/runtime.v1.RuntimeService/GetContainerEvents"

// proxyMaxMsg is the largest message passed through each way (the kubelets'
// own CRI clients allow 16 MiB).
const proxyMaxMsg = 16 << 20

// rawFrame is one gRPC message, passed through as its bytes.
type rawFrame struct{ b []byte }

// rawCodec moves rawFrames without decoding them. Named "proto" so that the
// content type on both sides stays the one CRI clients and servers speak.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	f, ok := v.(*rawFrame)
	if !ok {
		return nil, status.Errorf(codes.Internal, "proxy codec: unexpected %T", v)
	}
	return f.b, nil
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	f, ok := v.(*rawFrame)
	if !ok {
		return status.Errorf(codes.Internal, "proxy codec: unexpected %T", v)
	}
	f.b = append(f.b[:0], data...)
	return nil
}

func (rawCodec) Name() string { return "proto" }

// noEventsProxy serves a unix socket that forwards to a CRI endpoint.
type noEventsProxy struct {
	srv     *grpc.Server
	backend *grpc.ClientConn
	// Endpoint is the proxy's CRI endpoint (unix://...).
	Endpoint string
}

// startNoEventsProxy listens on socket and forwards to backend (a CRI
// endpoint, unix://...).
func startNoEventsProxy(socket, backend string) (*noEventsProxy, error) {
	conn, err := grpc.NewClient(backend, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(proxyMaxMsg), grpc.MaxCallSendMsgSize(proxyMaxMsg)))
	if err != nil {
		return nil, err
	}
	_ = os.Remove(socket)
	l, err := net.Listen("unix", socket)
	if err != nil {
		conn.Close()
		return nil, err
	}
	p := &noEventsProxy{backend: conn, Endpoint: "unix://" + socket}
	p.srv = grpc.NewServer(grpc.ForceServerCodec(rawCodec{}), grpc.UnknownServiceHandler(p.forward),
		grpc.MaxRecvMsgSize(proxyMaxMsg), grpc.MaxSendMsgSize(proxyMaxMsg))
	go func() { _ = p.srv.Serve(l) }()
	return p, nil
}

// Stop closes the proxy's listener, its streams and its backend connection.
func (p *noEventsProxy) Stop() {
	p.srv.Stop()
	p.backend.Close()
}

// forward relays one call, unary or streaming, both ways.
func (p *noEventsProxy) forward(_ any, in grpc.ServerStream) error {
	method, ok := grpc.MethodFromServerStream(in)
	if !ok {
		return status.Error(codes.Internal, "proxy: no method")
	}
	if method == containerEventsMethod {
		return status.Error(codes.Unimplemented, "this runtime streams no container events (bench proxy)")
	}
	ctx, cancel := context.WithCancel(in.Context())
	defer cancel()
	out, err := p.backend.NewStream(ctx, &grpc.StreamDesc{ClientStreams: true, ServerStreams: true}, method, grpc.ForceCodec(rawCodec{}))
	if err != nil {
		return err
	}
	// Client → runtime, until the client is done sending. A client that
	// goes away cancels ctx, which ends the call to the runtime too.
	go func() {
		for {
			f := &rawFrame{}
			if err := in.RecvMsg(f); err != nil {
				if errors.Is(err, io.EOF) {
					_ = out.CloseSend()
				}
				return
			}
			if out.SendMsg(f) != nil {
				return
			}
		}
	}()
	// Runtime → client, until the runtime ends the call; its status (an
	// error from RecvMsg) is the call's.
	for {
		f := &rawFrame{}
		if err := out.RecvMsg(f); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if err := in.SendMsg(f); err != nil {
			return err
		}
	}
}
