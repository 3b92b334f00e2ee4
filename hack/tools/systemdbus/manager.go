package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/godbus/dbus/v5"
)

// The names systemd's D-Bus API uses (org.freedesktop.systemd1(5)).
const (
	managerPath  = dbus.ObjectPath("/org/freedesktop/systemd1")
	managerIface = "org.freedesktop.systemd1.Manager"
	dbusIface    = "org.freedesktop.DBus"

	errNoUnitForPID = "org.freedesktop.systemd1.NoUnitForPID"
	errNoSuchUnit   = "org.freedesktop.systemd1.NoSuchUnit"
	errUnknown      = "org.freedesktop.DBus.Error.UnknownMethod"
	errInvalidArgs  = "org.freedesktop.DBus.Error.InvalidArgs"
)

// Unit is the one service this stand-in manages, as systemd would with
// Type=simple, KillMode=process and, when RestartSec is set, Restart=always.
type Unit struct {
	// Name is the unit's name, e.g. containerd.service.
	Name string
	// PIDFile holds the main process's ID while the unit runs.
	PIDFile string
	// Start and Stop are the shell commands that start the service (and
	// write PIDFile) and stop it.
	Start, Stop string
	// RestartSec, when positive, restarts the service that many seconds
	// after its process exits without a stop request.
	RestartSec time.Duration
}

// jobResult is one finished job: JobRemoved's arguments.
type jobResult struct {
	id     uint32
	path   dbus.ObjectPath
	unit   string
	result string
}

// manager runs the unit's jobs one at a time, as systemd queues them.
type manager struct {
	unit Unit
	logf func(format string, args ...any)
	// emit sends JobRemoved to every connection.
	emit func(jobResult)

	mu      sync.Mutex // serializes jobs
	lastJob atomic.Uint32
	// stopped is true after a StopUnit and until the next StartUnit or
	// RestartUnit: the supervisor restarts only a service that was not
	// stopped on purpose.
	stopped bool
}

// unitPath is systemd's object path of a unit: its name with every byte
// that is not a letter or a digit escaped as _xx (sd_bus_path_encode).
func unitPath(name string) dbus.ObjectPath {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "_%02x", c)
		}
	}
	return dbus.ObjectPath("/org/freedesktop/systemd1/unit/" + b.String())
}

// mainPID is the unit's running main process, or 0.
func (m *manager) mainPID() int {
	b, err := os.ReadFile(m.unit.PIDFile)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 || !alive(pid) {
		return 0
	}
	return pid
}

// stopTimeout is systemd's DefaultTimeoutStopSec: how long a stop waits
// for the main process to exit before it kills it.
const stopTimeout = 90 * time.Second

// awaitExit waits until pid no longer runs, as a systemd stop job ends
// only when the unit's main process has exited (a signal is delivered
// after kill(2) returns, so the stop command's own end says nothing). It
// reports whether pid exited within timeout.
func awaitExit(pid int, timeout, poll time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for alive(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(poll)
	}
	return true
}

// alive reports whether pid runs and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z'
}

// call answers one method call: the reply's body, or a D-Bus error name
// and message. after, when not nil, runs once the reply is sent (a job,
// which ends with JobRemoved).
func (m *manager) call(iface, member string, body []any) (reply []any, errName, errMsg string, after func()) {
	switch iface + "." + member {
	case dbusIface + ".Hello":
		return []any{":1.1"}, "", "", nil
	case dbusIface + ".AddMatch", dbusIface + ".RemoveMatch":
		return nil, "", "", nil
	case managerIface + ".Subscribe", managerIface + ".Unsubscribe":
		return nil, "", "", nil
	case managerIface + ".GetUnitByPID":
		var pid uint32
		if err := dbus.Store(body, &pid); err != nil {
			return nil, errInvalidArgs, err.Error(), nil
		}
		if p := m.mainPID(); p == 0 || uint32(p) != pid {
			return nil, errNoUnitForPID, fmt.Sprintf("PID %d does not belong to any loaded unit.", pid), nil
		}
		return []any{unitPath(m.unit.Name)}, "", "", nil
	case managerIface + ".GetUnit":
		var name string
		if err := dbus.Store(body, &name); err != nil {
			return nil, errInvalidArgs, err.Error(), nil
		}
		if name != m.unit.Name {
			return nil, errNoSuchUnit, fmt.Sprintf("Unit %s not loaded.", name), nil
		}
		return []any{unitPath(m.unit.Name)}, "", "", nil
	case managerIface + ".StartUnit", managerIface + ".StopUnit", managerIface + ".RestartUnit":
		var name, mode string
		if err := dbus.Store(body, &name, &mode); err != nil {
			return nil, errInvalidArgs, err.Error(), nil
		}
		if name != m.unit.Name {
			return nil, errNoSuchUnit, fmt.Sprintf("Unit %s not found.", name), nil
		}
		id := m.lastJob.Add(1)
		path := dbus.ObjectPath(fmt.Sprintf("/org/freedesktop/systemd1/job/%d", id))
		return []any{path}, "", "", func() {
			go func() {
				result := m.job(member)
				m.emit(jobResult{id: id, path: path, unit: name, result: result})
			}()
		}
	}
	m.logf("refused %s.%s: this stand-in serves only GetUnitByPID, GetUnit, StartUnit, StopUnit and RestartUnit of %s", iface, member, m.unit.Name)
	return nil, errUnknown, fmt.Sprintf("the systemd stand-in (hack/tools/systemdbus) does not serve %s.%s", iface, member), nil
}

// job runs StartUnit, StopUnit or RestartUnit and returns systemd's job
// result: done or failed.
func (m *manager) job(member string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var cmds []string
	switch member {
	case "StartUnit":
		m.stopped = false
		if m.mainPID() != 0 {
			m.logf("StartUnit %s: already running", m.unit.Name)
			return "done"
		}
		cmds = []string{m.unit.Start}
	case "StopUnit":
		m.stopped = true
		cmds = []string{m.unit.Stop}
	case "RestartUnit":
		m.stopped = false
		cmds = []string{m.unit.Stop, m.unit.Start}
	}
	for _, c := range cmds {
		pid := m.mainPID()
		if err := m.run(c); err != nil {
			m.logf("%s %s: %v", member, m.unit.Name, err)
			return "failed"
		}
		if c == m.unit.Stop && pid != 0 && !awaitExit(pid, stopTimeout, 20*time.Millisecond) {
			m.logf("%s %s: pid %d outlived the stop command and %v; killed", member, m.unit.Name, pid, stopTimeout)
			_ = syscall.Kill(pid, syscall.SIGKILL)
			if !awaitExit(pid, 5*time.Second, 20*time.Millisecond) {
				return "failed"
			}
		}
	}
	m.logf("%s %s: done", member, m.unit.Name)
	return "done"
}

func (m *manager) run(command string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "sh", "-c", command).CombinedOutput()
	if len(out) > 0 {
		m.logf("%s: %s", command, strings.TrimSpace(string(out)))
	}
	if err != nil {
		return fmt.Errorf("%s: %w", command, err)
	}
	return nil
}

// supervise restarts the service RestartSec after its process exits, unless
// it was stopped through StopUnit (systemd's Restart=always). It returns
// when ctx ends.
func (m *manager) supervise(ctx context.Context) {
	if m.unit.RestartSec <= 0 {
		return
	}
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	var downSince time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		m.mu.Lock()
		wasDown := !downSince.IsZero()
		var restart bool
		downSince, restart = restartDue(m.stopped, m.mainPID() != 0, downSince, time.Now(), m.unit.RestartSec)
		switch {
		case restart:
			if err := m.run(m.unit.Start); err != nil {
				m.logf("restarting %s: %v", m.unit.Name, err)
			} else {
				m.logf("%s restarted", m.unit.Name)
			}
		case !wasDown && !downSince.IsZero():
			m.logf("%s: main process exited; restarting in %v", m.unit.Name, m.unit.RestartSec)
		}
		m.mu.Unlock()
	}
}

// restartDue decides, at now, whether a service is restarted: only one
// that is neither stopped on purpose nor running, once it has been down
// for restartSec. downSince is when it was first seen down (zero while it
// runs); restartDue returns its next value.
func restartDue(stopped, running bool, downSince, now time.Time, restartSec time.Duration) (time.Time, bool) {
	switch {
	case stopped || running:
		return time.Time{}, false
	case downSince.IsZero():
		return now, false
	case now.Sub(downSince) >= restartSec:
		return time.Time{}, true
	}
	return downSince, false
}
