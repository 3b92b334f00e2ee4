package cri

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gokubelet/kubelet/pkg/runtime/container"
	"github.com/gokubelet/kubelet/pkg/server"
)

// fakeStreaming is a runtime with one pod whose containers are given by
// name (current and previous instances).
type fakeStreaming struct {
	current, previous map[string]container.Status
	logPath           string
	sandbox           string
	execCmd           []string
	execOpts          container.StreamOptions
}

func (f *fakeStreaming) FindContainer(_ context.Context, _ types.UID, name, ns, c string, previous bool) (container.Status, error) {
	m := f.current
	if previous {
		m = f.previous
	}
	if st, ok := m[c]; ok {
		return st, nil
	}
	return container.Status{}, fmt.Errorf("%w: %q in pod %s/%s", container.ErrContainerNotFound, c, ns, name)
}
func (f *fakeStreaming) ContainerLogPath(context.Context, string, string, string, types.UID) (string, error) {
	return f.logPath, nil
}
func (f *fakeStreaming) ContainerRunning(context.Context, string) bool { return false }
func (f *fakeStreaming) GetExec(_ context.Context, id string, cmd []string, o container.StreamOptions) (*url.URL, error) {
	f.execCmd, f.execOpts = cmd, o
	return url.Parse("http://streaming/exec/" + id)
}
func (f *fakeStreaming) GetAttach(_ context.Context, id string, _ container.StreamOptions) (*url.URL, error) {
	return url.Parse("http://streaming/attach/" + id)
}
func (f *fakeStreaming) GetPortForward(_ context.Context, sb string, _ []int32) (*url.URL, error) {
	return url.Parse("http://streaming/portforward/" + sb)
}
func (f *fakeStreaming) ReadySandboxID(context.Context, types.UID, string, string) (string, error) {
	if f.sandbox == "" {
		return "", errors.New("pod has no ready sandbox")
	}
	return f.sandbox, nil
}
func (f *fakeStreaming) ExecSync(_ context.Context, id string, cmd []string, _ time.Duration) ([]byte, []byte, error) {
	return []byte("out:" + strings.Join(cmd, " ")), []byte("|err"), nil
}

func streamingPod() *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"}}
}

func TestContainerLogs(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "0.log")
	if err := os.WriteFile(log, []byte("2024-01-02T03:04:05.000000000Z stdout F hello\n2024-01-02T03:04:06.000000000Z stderr F oops\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rt := &fakeStreaming{
		current:  map[string]container.Status{"app": {ID: "c2", State: container.StateRunning}, "nolog": {ID: "c3", State: container.StateRunning}},
		previous: map[string]container.Status{"app": {ID: "c1", State: container.StateExited}},
		logPath:  log,
	}
	tests := []struct {
		name      string
		container string
		opts      v1.PodLogOptions
		wantErr   string
		want      string
	}{
		{name: "current", container: "app", want: "hello\noops\n"},
		{name: "previous", container: "app", opts: v1.PodLogOptions{Previous: true}, want: "hello\noops\n"},
		// upstream's words, which kubectl shows as they are
		{name: "no previous", container: "nolog", opts: v1.PodLogOptions{Previous: true}, wantErr: `previous terminated container "nolog" in pod "p" not found`},
		{name: "not started", container: "waiting", wantErr: `container "waiting" in pod "p" is waiting to start`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, err := NewContainers(rt).ContainerLogs(context.Background(), streamingPod(), tc.container, &tc.opts)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := w(context.Background(), &out, &out); err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.want {
				t.Errorf("log = %q, want %q", out.String(), tc.want)
			}
		})
	}

	rt.logPath = filepath.Join(dir, "gone.log")
	if _, err := NewContainers(rt).ContainerLogs(context.Background(), streamingPod(), "app", &v1.PodLogOptions{}); err == nil || !strings.Contains(err.Error(), "not available") {
		t.Errorf("missing log file: err = %v", err)
	}
}

func TestStreamingNeedsARunningContainer(t *testing.T) {
	rt := &fakeStreaming{current: map[string]container.Status{
		"up":   {ID: "c1", State: container.StateRunning},
		"down": {ID: "c2", State: container.StateExited},
	}}
	c := NewContainers(rt)
	ctx := context.Background()
	u, err := c.GetExec(ctx, streamingPod(), "up", []string{"ls", "-l"}, server.StreamOptions{Stdout: true, TTY: true})
	if err != nil || u.Path != "/exec/c1" {
		t.Fatalf("exec: %v, %v", u, err)
	}
	if want := (container.StreamOptions{Stdout: true, TTY: true}); rt.execOpts != want || strings.Join(rt.execCmd, " ") != "ls -l" {
		t.Errorf("exec asked with %v %+v", rt.execCmd, rt.execOpts)
	}
	for _, name := range []string{"down", "missing"} {
		if _, err := c.GetAttach(ctx, streamingPod(), name, server.StreamOptions{}); status.Code(err) != codes.NotFound {
			t.Errorf("attach to %s: %v, want NotFound", name, err)
		}
		if _, err := c.RunInContainer(ctx, streamingPod(), name, []string{"true"}); status.Code(err) != codes.NotFound {
			t.Errorf("run in %s: %v, want NotFound", name, err)
		}
	}
	out, err := c.RunInContainer(ctx, streamingPod(), "up", []string{"echo", "hi"})
	if err != nil || string(out) != "out:echo hi|err" {
		t.Errorf("run = %q, %v", out, err)
	}

	if _, err := c.GetPortForward(ctx, streamingPod(), []int32{80}); status.Code(err) != codes.NotFound {
		t.Errorf("port-forward without a sandbox: %v, want NotFound", err)
	}
	rt.sandbox = "sb1"
	if u, err := c.GetPortForward(ctx, streamingPod(), []int32{80}); err != nil || u.Path != "/portforward/sb1" {
		t.Errorf("port-forward: %v, %v", u, err)
	}

	if _, err := NewContainers(nil).GetExec(ctx, streamingPod(), "up", nil, server.StreamOptions{}); status.Code(err) != codes.Unimplemented {
		t.Errorf("without a streaming runtime: %v, want Unimplemented", err)
	}
}
