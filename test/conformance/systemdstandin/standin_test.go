// Package systemdstandin tests hack/node-e2e-systemd, the stand-in for the
// systemd requests upstream's node e2e suite makes to stop, restart and
// find its kubelet (hack/node-e2e.sh puts it on the suite's PATH).
package systemdstandin

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// dir is hack/node-e2e-systemd, found from this file's place in the repository.
func dir(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	d := filepath.Join(filepath.Dir(file), "..", "..", "..", "hack", "node-e2e-systemd")
	if _, err := os.Stat(filepath.Join(d, "systemctl")); err != nil {
		t.Fatalf("the stand-in is not where this test expects it: %v", err)
	}
	return d
}

type standin struct {
	t     *testing.T
	dir   string
	state string
}

func newStandin(t *testing.T) *standin {
	return &standin{t: t, dir: dir(t), state: t.TempDir()}
}

// run runs one of the stand-in's programs and returns its output and exit code.
func (s *standin) run(prog string, args ...string) (string, int) {
	s.t.Helper()
	cmd := exec.Command(filepath.Join(s.dir, prog), args...)
	// As hack/node-e2e.sh runs the suite: the stand-in first on PATH, so
	// that "sudo systemctl" finds it too.
	cmd.Env = append(os.Environ(), "FAKE_SYSTEMD_STATE="+s.state, "PATH="+s.dir+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		s.t.Fatalf("%s %v: %v", prog, args, err)
	}
	return string(out), code
}

func (s *standin) must(prog string, args ...string) string {
	s.t.Helper()
	out, code := s.run(prog, args...)
	if code != 0 {
		s.t.Fatalf("%s %s: exit %d: %s", prog, strings.Join(args, " "), code, out)
	}
	return out
}

func (s *standin) pid(unit string) int {
	s.t.Helper()
	b, err := os.ReadFile(filepath.Join(s.state, unit, "pid"))
	if err != nil {
		s.t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		s.t.Fatal(err)
	}
	return pid
}

// alive reports whether pid runs and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	rest := s[strings.LastIndex(s, ")")+2:]
	return !strings.HasPrefix(rest, "Z")
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestUnitLifecycle drives a unit as the suite drives its kubelet: start it
// with systemd-run, find it among the running units, kill it (it stays
// down, still listed among all units), restart it (a new process with the
// same command, its output appended to the same log), stop it.
func TestUnitLifecycle(t *testing.T) {
	s := newStandin(t)
	log := filepath.Join(t.TempDir(), "kubelet.log")
	const unit = "kubelet-20261130T000000.service"

	if out := s.must("systemd-run", "--version"); !strings.HasPrefix(out, "systemd 252 ") {
		t.Errorf("--version: %q; the suite appends to one log only from systemd 240", out)
	}
	s.must("systemd-run", "-p", "Delegate=true", "-p", "StandardError=append:"+log, "--unit="+unit,
		"--slice=runtime.slice", "--remain-after-exit", "sh", "-c", `echo "start $$" >&2; exec sleep 300`)
	first := s.pid(unit)
	t.Cleanup(func() { _ = syscall.Kill(first, syscall.SIGKILL) })
	waitFor(t, "the unit's first output", func() bool {
		b, _ := os.ReadFile(log)
		return strings.Contains(string(b), "start "+strconv.Itoa(first))
	})

	if out := s.must("systemctl", "list-units", "*kubelet*", "--state=running"); !strings.HasPrefix(out, unit+" ") {
		t.Errorf("running units: %q, want %s", out, unit)
	}
	if out := s.must("systemctl", "list-units", "*containerd*"); out != "" {
		t.Errorf("units matching *containerd*: %q, want none", out)
	}
	if _, code := s.run("systemd-run", "--unit="+unit, "true"); code == 0 {
		t.Error("a second systemd-run of a running unit succeeded")
	}

	s.must("sudo", "systemctl", "reset-failed", unit)
	s.must("sudo", "systemctl", "kill", unit)
	waitFor(t, "the killed unit's process to exit", func() bool { return !alive(first) })
	if out := s.must("systemctl", "list-units", "*kubelet*", "--state=running"); out != "" {
		t.Errorf("running units after kill: %q, want none", out)
	}
	if out := s.must("systemctl", "list-units", "*kubelet*"); !strings.Contains(out, unit+" loaded active exited") {
		t.Errorf("all units after kill: %q, want %s listed as exited", out, unit)
	}
	if out, code := s.run("systemctl", "is-active", unit); code != 3 || strings.TrimSpace(out) != "inactive" {
		t.Errorf("is-active after kill: %q exit %d, want inactive exit 3", out, code)
	}

	s.must("sudo", "systemctl", "restart", unit)
	second := s.pid(unit)
	t.Cleanup(func() { _ = syscall.Kill(second, syscall.SIGKILL) })
	if second == first || !alive(second) {
		t.Fatalf("restart: process %d (alive %v), first was %d", second, alive(second), first)
	}
	waitFor(t, "the restarted unit's output, appended", func() bool {
		b, _ := os.ReadFile(log)
		return strings.Contains(string(b), "start "+strconv.Itoa(first)+"\nstart "+strconv.Itoa(second)+"\n")
	})

	// restart of a running unit replaces its process; stop waits for the exit.
	s.must("systemctl", "restart", unit)
	third := s.pid(unit)
	t.Cleanup(func() { _ = syscall.Kill(third, syscall.SIGKILL) })
	if alive(second) || third == second {
		t.Errorf("restart of a running unit: old %d alive %v, new %d", second, alive(second), third)
	}
	s.must("systemctl", "stop", unit)
	if alive(third) {
		t.Errorf("stop returned with the unit's process %d alive", third)
	}
}

// TestRefusesWhatItDoesNotDo: requests the stand-in does not implement fail
// with a message naming them, so a spec that needs more of systemd fails
// with that reason.
func TestRefusesWhatItDoesNotDo(t *testing.T) {
	s := newStandin(t)
	for _, c := range []struct {
		prog string
		args []string
		want string
	}{
		{"systemctl", []string{"daemon-reload"}, "'systemctl daemon-reload' is not supported"},
		{"systemctl", []string{"restart", "containerd.service"}, "unit containerd.service not loaded"},
		{"systemd-run", []string{"-p", "MemoryMax=1G", "--unit=x", "true"}, "property MemoryMax=1G is not supported"},
		{"systemd-run", []string{"true"}, "--unit is required"},
		{"sudo", []string{"-u", "nobody", "true"}, "option -u is not supported"},
	} {
		out, code := s.run(c.prog, c.args...)
		if code == 0 || !strings.Contains(out, c.want) {
			t.Errorf("%s %v: exit %d, %q; want a failure naming %q", c.prog, c.args, code, out, c.want)
		}
	}
	if out := s.must("sudo", "sh", "-c", "echo $0-$1", "a", "b"); out != "a-b\n" {
		t.Errorf("sudo passes its command through: %q", out)
	}
}
