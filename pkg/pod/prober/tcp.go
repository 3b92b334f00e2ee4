package prober

import (
	"context"
	"net"
	"time"
)

// probeTCP succeeds when a TCP connection to addr (host:port) opens within
// timeout; the connection is closed at once.
func probeTCP(ctx context.Context, addr string, timeout time.Duration) (Result, string, error) {
	d := net.Dialer{Timeout: timeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return Failure, err.Error(), nil
	}
	_ = conn.Close()
	return Success, "", nil
}
