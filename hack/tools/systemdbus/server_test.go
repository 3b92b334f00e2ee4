package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sd "github.com/coreos/go-systemd/v22/dbus"
	"github.com/godbus/dbus/v5"
)

// fixture serves a unit whose "service" is a sleep started in the
// background, on a socket in a temporary directory.
type fixture struct {
	t       *testing.T
	dir     string
	socket  string
	pidfile string
	log     *syncLog
}

// syncLog is the stand-in's log, written by its goroutines.
type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncLog) printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(&l.b, format+"\n", args...)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newFixture(t *testing.T, u Unit) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{t: t, dir: dir, socket: filepath.Join(dir, "private"), pidfile: filepath.Join(dir, "svc.pid"), log: &syncLog{}}
	u.Name = "containerd.service"
	u.PIDFile = f.pidfile
	u.Start = strings.NewReplacer("{dir}", dir, "{pidfile}", f.pidfile).Replace(u.Start)
	if u.Start == "" {
		// The call is recorded before the pid file, which tests wait for.
		u.Start = fmt.Sprintf("echo start >> %[2]s/calls; sleep 1000 >/dev/null 2>&1 & echo $! > %[1]s", f.pidfile, dir)
	}
	u.Stop = fmt.Sprintf("kill $(cat %[1]s) 2>/dev/null; rm -f %[1]s; echo stop >> %[2]s/calls", f.pidfile, dir)
	l, err := net.Listen("unix", f.socket)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := newServer(u, f.log.printf)
	go s.m.supervise(ctx)
	go func() { _ = s.serve(l) }()
	t.Cleanup(func() {
		cancel()
		l.Close()
		if pid := f.pid(); pid != 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if t.Failed() {
			t.Logf("stand-in log:\n%s", f.log.String())
		}
	})
	return f
}

// client connects as upstream's suite does (go-systemd's
// NewSystemdConnectionContext: EXTERNAL with the uid, no Hello).
func (f *fixture) client() *sd.Conn {
	f.t.Helper()
	c, err := sd.NewConnection(func() (*dbus.Conn, error) {
		conn, err := dbus.Dial("unix:path=" + f.socket)
		if err != nil {
			return nil, err
		}
		if err := conn.Auth([]dbus.Auth{dbus.AuthExternal(strconv.Itoa(os.Getuid()))}); err != nil {
			conn.Close()
			return nil, err
		}
		return conn, nil
	})
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(c.Close)
	return c
}

func (f *fixture) pid() int {
	b, err := os.ReadFile(f.pidfile)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid <= 0 || !alive(pid) {
		return 0
	}
	return pid
}

func (f *fixture) calls() string {
	b, _ := os.ReadFile(filepath.Join(f.dir, "calls"))
	return strings.Join(strings.Fields(string(b)), " ")
}

// job runs one job the way the suite does and returns its result.
func job(t *testing.T, op func(context.Context, string, string, chan<- string) (int, error), unit string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ch := make(chan string, 1)
	if _, err := op(ctx, unit, "replace", ch); err != nil {
		return "", err
	}
	select {
	case r := <-ch:
		return r, nil
	case <-ctx.Done():
		t.Fatal("no JobRemoved within 30s")
	}
	return "", nil
}

// What the node e2e suite does to its container runtime
// (performContainerRuntimeUnitOp): find the unit by the runtime's pid, stop
// it, start it, each job waited for through JobRemoved.
func TestStopAndStartAsTheSuiteDoes(t *testing.T) {
	f := newFixture(t, Unit{})
	c := f.client()
	ctx := context.Background()
	if _, err := job(t, c.StartUnitContext, "containerd.service"); err != nil {
		t.Fatal(err)
	}
	pid := f.pid()
	if pid == 0 {
		t.Fatalf("StartUnit did not start the service; calls: %q", f.calls())
	}
	name, err := c.GetUnitNameByPID(ctx, uint32(pid))
	if err != nil || name != "containerd.service" {
		t.Fatalf("GetUnitNameByPID(%d) = %q, %v; want containerd.service", pid, name, err)
	}
	if _, err := c.GetUnitNameByPID(ctx, uint32(os.Getpid())); err == nil || !strings.Contains(err.Error(), "does not belong to any loaded unit") {
		t.Errorf("GetUnitNameByPID of a pid outside the unit: %v, want NoUnitForPID", err)
	}
	if r, err := job(t, c.StopUnitContext, "containerd.service"); err != nil || r != "done" {
		t.Fatalf("StopUnit: %q, %v", r, err)
	}
	if alive(pid) {
		t.Fatalf("the service (pid %d) still runs after StopUnit", pid)
	}
	if r, err := job(t, c.StartUnitContext, "containerd.service"); err != nil || r != "done" {
		t.Fatalf("StartUnit: %q, %v", r, err)
	}
	if f.pid() == 0 || f.pid() == pid {
		t.Fatalf("StartUnit: pid %d, before %d", f.pid(), pid)
	}
	// Starting a running unit is done without a second start.
	if r, err := job(t, c.StartUnitContext, "containerd.service"); err != nil || r != "done" {
		t.Fatalf("StartUnit of a running unit: %q, %v", r, err)
	}
	if got, want := f.calls(), "start stop start"; got != want {
		t.Errorf("commands run: %q, want %q", got, want)
	}
}

func TestRefusals(t *testing.T) {
	f := newFixture(t, Unit{})
	c := f.client()
	if _, err := job(t, c.StopUnitContext, "kubelet.service"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("StopUnit of another unit: %v, want NoSuchUnit", err)
	}
	// Any method the stand-in does not serve is refused by name.
	_, err := c.ListUnitsContext(context.Background())
	if err == nil || !strings.Contains(err.Error(), "does not serve org.freedesktop.systemd1.Manager.ListUnits") {
		t.Errorf("ListUnits: %v, want a refusal naming it", err)
	}
	if !strings.Contains(f.log.String(), "refused org.freedesktop.systemd1.Manager.ListUnits") {
		t.Errorf("no log line names the refused request:\n%s", f.log.String())
	}
	if f.calls() != "" {
		t.Errorf("commands ran: %q", f.calls())
	}
}

func TestFailedStartIsAFailedJob(t *testing.T) {
	f := newFixture(t, Unit{Start: "echo cannot start >&2; exit 3"})
	c := f.client()
	if r, err := job(t, c.StartUnitContext, "containerd.service"); err != nil || r != "failed" {
		t.Fatalf("StartUnit: %q, %v; want failed", r, err)
	}
}

// A service killed behind the stand-in's back comes back (Restart=always),
// as the suite's "Restart Container Runtime" spec expects of systemd.
func TestKilledServiceIsRestarted(t *testing.T) {
	f := newFixture(t, Unit{RestartSec: 300 * time.Millisecond})
	c := f.client()
	if _, err := job(t, c.StartUnitContext, "containerd.service"); err != nil {
		t.Fatal(err)
	}
	pid := f.pid()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for now := f.pid(); now == 0 || now == pid; now = f.pid() {
		if time.Now().After(deadline) {
			t.Fatalf("not restarted within 20s; calls: %q", f.calls())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got, want := f.calls(), "start start"; got != want {
		t.Errorf("commands run: %q, want %q", got, want)
	}
}

func TestRestartDue(t *testing.T) {
	t0 := time.Unix(1000, 0)
	sec := 5 * time.Second
	for _, tc := range []struct {
		name             string
		stopped, running bool
		downSince, now   time.Time
		wantDown         time.Time
		wantRestart      bool
	}{
		{"running", false, true, time.Time{}, t0, time.Time{}, false},
		{"running again after a restart", false, true, t0, t0.Add(time.Second), time.Time{}, false},
		{"first seen down", false, false, time.Time{}, t0, t0, false},
		{"down, not long enough", false, false, t0, t0.Add(4 * time.Second), t0, false},
		{"down for RestartSec", false, false, t0, t0.Add(sec), time.Time{}, true},
		{"stopped on purpose", true, false, t0, t0.Add(time.Minute), time.Time{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			down, restart := restartDue(tc.stopped, tc.running, tc.downSince, tc.now, sec)
			if !down.Equal(tc.wantDown) || restart != tc.wantRestart {
				t.Errorf("restartDue = %v, %v; want %v, %v", down, restart, tc.wantDown, tc.wantRestart)
			}
		})
	}
}

func TestUnitPath(t *testing.T) {
	// go-systemd's GetUnitNameByPID decodes the name from this path.
	if got, want := unitPath("containerd.service"), dbus.ObjectPath("/org/freedesktop/systemd1/unit/containerd_2eservice"); got != want {
		t.Errorf("unitPath = %s, want %s", got, want)
	}
}

// A stop job ends when the main process has exited, not when the stop
// command has: here the service takes half a second to exit after its
// SIGTERM, and the job must not say done before.
func TestStopWaitsForTheMainProcess(t *testing.T) {
	f := newFixture(t, Unit{Start: `echo start >> {dir}/calls; sh -c 'trap "sleep 0.5; exit 0" TERM; while :; do sleep 0.05; done' >/dev/null 2>&1 & echo $! > {pidfile}`})
	c := f.client()
	if _, err := job(t, c.StartUnitContext, "containerd.service"); err != nil {
		t.Fatal(err)
	}
	pid := f.pid()
	if pid == 0 {
		t.Fatalf("StartUnit did not start the service; calls: %q", f.calls())
	}
	start := time.Now()
	if r, err := job(t, c.StopUnitContext, "containerd.service"); err != nil || r != "done" {
		t.Fatalf("StopUnit: %q, %v", r, err)
	}
	if alive(pid) {
		t.Fatalf("StopUnit was done after %v while the service (pid %d) still ran", time.Since(start), pid)
	}
}
