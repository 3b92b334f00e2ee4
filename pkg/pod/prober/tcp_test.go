package prober

import (
	"context"
	"net"
	"testing"
	"time"
)

func TestProbeTCP(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	addr := l.Addr().String()
	if r, out, err := probeTCP(context.Background(), addr, time.Second); r != Success || err != nil {
		t.Errorf("open port: %v %q %v", r, out, err)
	}
	l.Close()
	r, out, err := probeTCP(context.Background(), addr, time.Second)
	if r != Failure || err != nil || out == "" {
		t.Errorf("closed port: %v %q %v", r, out, err)
	}
}
