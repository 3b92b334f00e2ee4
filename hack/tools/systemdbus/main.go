// Command systemdbus is a stand-in for the part of systemd's D-Bus API
// that upstream's node e2e suite uses to stop and start the container
// runtime (test/e2e_node/util.go: GetUnitByPID, StartUnit, StopUnit, then
// JobRemoved), on machines where systemd is not PID 1. It serves one unit,
// on systemd's private socket, and can restart it when its process dies,
// as systemd does for containerd.service (Restart=always).
//
//	systemdbus -unit containerd.service -pidfile F -start CMD -stop CMD [-restart-sec 5s]
//
// It refuses every other request with UnknownMethod and a log line naming
// it. hack/node-e2e.sh runs it beside the sudo/systemctl stand-in
// (hack/node-e2e-systemd) for the sets that restart the runtime.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
)

func main() {
	socket := flag.String("socket", "/run/systemd/private", "the socket to serve")
	var u Unit
	flag.StringVar(&u.Name, "unit", "containerd.service", "the unit's name")
	flag.StringVar(&u.PIDFile, "pidfile", "", "the file holding the unit's main process ID")
	flag.StringVar(&u.Start, "start", "", "shell command that starts the service (and writes -pidfile)")
	flag.StringVar(&u.Stop, "stop", "", "shell command that stops the service")
	flag.DurationVar(&u.RestartSec, "restart-sec", 0, "restart the service this long after its process exits unasked (0: never)")
	flag.Parse()
	if u.PIDFile == "" || u.Start == "" || u.Stop == "" {
		fmt.Fprintln(os.Stderr, "systemdbus: -pidfile, -start and -stop are required")
		os.Exit(2)
	}
	logger := log.New(os.Stderr, "systemdbus: ", log.LstdFlags|log.Lmicroseconds)
	if err := run(*socket, u, logger.Printf); err != nil {
		logger.Fatal(err)
	}
}

func run(socket string, u Unit, logf func(string, ...any)) error {
	if err := os.MkdirAll(filepath.Dir(socket), 0o755); err != nil {
		return err
	}
	if err := os.Remove(socket); err != nil && !os.IsNotExist(err) {
		return err
	}
	l, err := net.Listen("unix", socket)
	if err != nil {
		return err
	}
	defer os.Remove(socket)
	// Only this user may connect, as with systemd's socket.
	if err := os.Chmod(socket, 0o600); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	s := newServer(u, logf)
	go s.m.supervise(ctx)
	go func() {
		<-ctx.Done()
		l.Close()
	}()
	logf("serving %s on %s", u.Name, socket)
	return s.serve(l)
}
