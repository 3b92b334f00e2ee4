package logrotate

import (
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critesting "k8s.io/cri-api/pkg/apis/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestRotation(t *testing.T) {
	ctx := context.Background()
	rt := critesting.NewFakeRuntimeService()
	dir := t.TempDir()
	sb, _ := rt.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Uid: "u", Namespace: "n"}, LogDirectory: dir}, "")
	id, err := rt.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "c"}, Image: &runtimeapi.ImageSpec{Image: "i"}, LogPath: "c/0.log"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rt.StartContainer(ctx, id)
	logPath := filepath.Join(dir, "c", "0.log")
	rt.Containers[id].LogPath = logPath
	os.MkdirAll(filepath.Dir(logPath), 0o755)

	clk := clocktesting.NewFakeClock(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	m := &Manager{Runtime: rt, Policy: Policy{MaxSize: 150, MaxFiles: 3}, Clock: clk}
	line := "2025-01-02T03:04:05.000000000Z stdout F " + strings.Repeat("x", 60) + "\n"

	// Below the limit: nothing happens.
	os.WriteFile(logPath, []byte(line), 0o640)
	if err := m.RotateAll(ctx); err != nil {
		t.Fatal(err)
	}
	if files(t, logPath) != "0.log" {
		t.Fatalf("rotated below the limit: %s", files(t, logPath))
	}
	// Over it, three times: the newest rotated file stays plain, older
	// ones are compressed, and MaxFiles counts the live one.
	var rotations []string
	for i := 0; i < 3; i++ {
		os.WriteFile(logPath, []byte(line+line), 0o640)
		rt.Called = nil
		if err := m.RotateAll(ctx); err != nil {
			t.Fatal(err)
		}
		if !called(rt, "ReopenContainerLog") {
			t.Errorf("rotation %d: the runtime was not asked to reopen the log", i)
		}
		rotations = append(rotations, clk.Now().Format(timestampFormat))
		clk.Step(time.Minute)
		// The fake runtime does not reopen: write the new live file as the
		// runtime would.
		os.WriteFile(logPath, nil, 0o640)
	}
	// maxFiles 3: the live file and two rotated ones.
	want := "0.log 0.log." + rotations[1] + ".gz 0.log." + rotations[2]
	if got := files(t, logPath); got != want {
		t.Errorf("after three rotations with maxFiles 3: %s, want %s", got, want)
	}
	// Four files allowed: two compressed, one plain, the live one.
	m.Policy.MaxFiles = 4
	os.WriteFile(logPath, []byte(line+line), 0o640)
	if err := m.RotateAll(ctx); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(logPath, nil, 0o640)
	want = "0.log 0.log." + rotations[1] + ".gz 0.log." + rotations[2] + ".gz 0.log." + clk.Now().Format(timestampFormat)
	if got := files(t, logPath); got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	f, _ := os.Open(filepath.Join(filepath.Dir(logPath), "0.log."+rotations[2]+".gz"))
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(zr)
	if string(b) != line+line {
		t.Errorf("compressed content %q", b)
	}
}

func TestCleanupUnused(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"0.log.1", "0.log.1.gz", "0.log.2.tmp", "0.log.3"} {
		os.WriteFile(filepath.Join(dir, f), nil, 0o644)
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "0.log.*"))
	left, err := cleanupUnused(logs)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range left {
		names = append(names, filepath.Base(l))
	}
	if strings.Join(names, " ") != "0.log.1.gz 0.log.3" {
		t.Errorf("left %v", names)
	}
}

func files(t *testing.T, logPath string) string {
	entries, err := os.ReadDir(filepath.Dir(logPath))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

func called(rt *critesting.FakeRuntimeService, name string) bool {
	for _, c := range rt.GetCalls() {
		if c == name {
			return true
		}
	}
	return false
}
