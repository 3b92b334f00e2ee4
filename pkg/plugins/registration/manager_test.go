package registration

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/gokubelet/kubelet/internal/testing/eventually"
)

func TestPlan(t *testing.T) {
	t0, t1 := time.Unix(100, 0), time.Unix(200, 0)
	for _, tc := range []struct {
		name  string
		found map[string]socket
		done  map[string]registered
		want  steps
	}{
		{name: "nothing"},
		{name: "new sockets register, sorted",
			found: map[string]socket{"/r/b.sock": {t0}, "/r/a.sock": {t0}},
			want:  steps{Register: []string{"/r/a.sock", "/r/b.sock"}}},
		{name: "registered and unchanged: nothing",
			found: map[string]socket{"/r/a.sock": {t0}},
			done:  map[string]registered{"/r/a.sock": {ModTime: t0}}},
		{name: "gone: deregister",
			done: map[string]registered{"/r/a.sock": {ModTime: t0}},
			want: steps{Deregister: []string{"/r/a.sock"}}},
		{name: "created anew: deregister and register",
			found: map[string]socket{"/r/a.sock": {t1}},
			done:  map[string]registered{"/r/a.sock": {ModTime: t0}},
			want:  steps{Deregister: []string{"/r/a.sock"}, Register: []string{"/r/a.sock"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := plan(tc.found, tc.done); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("plan = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	for n, want := range map[int]time.Duration{1: retryBase, 2: 2 * retryBase, 3: 4 * retryBase, 50: retryMax} {
		if got := backoff(n); got != want {
			t.Errorf("backoff(%d) = %v, want %v", n, got, want)
		}
	}
}

// fakePlugin serves the registration API on a socket, as a driver's
// registrar does.
type fakePlugin struct {
	registerapi.UnimplementedRegistrationServer
	info     *registerapi.PluginInfo
	statuses chan *registerapi.RegistrationStatus
	srv      *grpc.Server
	// failNotify: NotifyRegistrationStatus answers with an error.
	failNotify atomic.Bool
}

func (p *fakePlugin) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return p.info, nil
}

func (p *fakePlugin) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	p.statuses <- s
	if p.failNotify.Load() {
		return nil, errors.New("simulated NotifyRegistrationStatus failure")
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}

func servePlugin(t *testing.T, path string, info *registerapi.PluginInfo) *fakePlugin {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	p := &fakePlugin{info: info, statuses: make(chan *registerapi.RegistrationStatus, 16), srv: grpc.NewServer()}
	registerapi.RegisterRegistrationServer(p.srv, p)
	go func() { _ = p.srv.Serve(l) }()
	t.Cleanup(p.srv.Stop)
	return p
}

func (p *fakePlugin) status(t *testing.T) *registerapi.RegistrationStatus {
	t.Helper()
	select {
	case s := <-p.statuses:
		return s
	case <-time.After(20 * time.Second):
		t.Fatal("the plugin was never told its registration status")
		return nil
	}
}

// recordingHandler records the calls a Handler gets.
type recordingHandler struct {
	mu          sync.Mutex
	calls       []string
	validateErr error
}

func (h *recordingHandler) record(s string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, s)
}

func (h *recordingHandler) got() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.calls...)
}

func (h *recordingHandler) ValidatePlugin(name, endpoint string, versions []string) error {
	h.record(fmt.Sprintf("validate %s %s %v", name, endpoint, versions))
	return h.validateErr
}

func (h *recordingHandler) RegisterPlugin(_ context.Context, name, endpoint string, versions []string) error {
	h.record(fmt.Sprintf("register %s %s %v", name, endpoint, versions))
	return nil
}

func (h *recordingHandler) DeRegisterPlugin(_ context.Context, name, endpoint string) {
	h.record(fmt.Sprintf("deregister %s %s", name, endpoint))
}

func startManager(t *testing.T, dir string, handlers map[string]Handler) (*Manager, context.CancelFunc) {
	t.Helper()
	m := &Manager{Dir: dir, Handlers: handlers}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Start(ctx) }()
	stop := func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	}
	t.Cleanup(func() {
		if ctx.Err() == nil {
			stop()
		}
	})
	return m, stop
}

func TestManagerRegistersDeregistersAndFindsPluginsAgain(t *testing.T) {
	dir := filepath.Join(t.TempDir(), DirName)
	h := &recordingHandler{}
	// A plugin whose socket is there before the kubelet starts, with its
	// own service endpoint.
	early := filepath.Join(dir, "early.sock")
	pe := servePlugin(t, early, &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: "early.example.com", Endpoint: "/run/early/csi.sock", SupportedVersions: []string{"1.0.0"}})
	// Files the manager must leave alone.
	if err := os.WriteFile(filepath.Join(dir, "not-a-socket"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	servePlugin(t, filepath.Join(dir, ".hidden.sock"), &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: "hidden"})

	m, stop := startManager(t, dir, map[string]Handler{registerapi.CSIPlugin: h})
	if s := pe.status(t); !s.PluginRegistered || s.Error != "" {
		t.Fatalf("early plugin told %+v", s)
	}
	// One that appears later, in a subdirectory made after the start,
	// without an endpoint of its own.
	late := filepath.Join(dir, "sub", "late.sock")
	pl := servePlugin(t, late, &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: "late.example.com", SupportedVersions: []string{"1.0.0"}})
	if s := pl.status(t); !s.PluginRegistered {
		t.Fatalf("late plugin told %+v", s)
	}
	want := []string{
		"validate early.example.com /run/early/csi.sock [1.0.0]",
		"register early.example.com /run/early/csi.sock [1.0.0]",
		"validate late.example.com " + late + " [1.0.0]",
		"register late.example.com " + late + " [1.0.0]",
	}
	if got := h.got(); !reflect.DeepEqual(got, want) {
		t.Errorf("handler calls:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	eventually.Seen(t, "both plugins listed", func() (bool, string) {
		return len(m.Plugins()) == 2, fmt.Sprint(m.Plugins())
	})

	// The late socket disappears: its plugin is deregistered.
	if err := os.Remove(late); err != nil {
		t.Fatal(err)
	}
	eventually.Seen(t, "the late plugin deregistered", func() (bool, string) {
		got := h.got()
		return got[len(got)-1] == "deregister late.example.com "+late && len(m.Plugins()) == 1, strings.Join(got, "\n")
	})

	// A restarted kubelet finds the early plugin again.
	stop()
	m2, _ := startManager(t, dir, map[string]Handler{registerapi.CSIPlugin: h})
	if s := pe.status(t); !s.PluginRegistered {
		t.Fatalf("after a restart the early plugin was told %+v", s)
	}
	eventually.Seen(t, "the early plugin registered again", func() (bool, string) {
		p := m2.Plugins()
		return len(p) == 1 && p[0].Name == "early.example.com" && p[0].Endpoint == "/run/early/csi.sock", fmt.Sprint(p)
	})
	for _, c := range h.got() {
		if strings.Contains(c, "hidden") {
			t.Errorf("a socket whose name starts with a dot was registered: %s", c)
		}
	}
}

func TestManagerTellsPluginsWhyNotAndRetries(t *testing.T) {
	dir := filepath.Join(t.TempDir(), DirName)
	h := &recordingHandler{validateErr: errors.New("no supported version")}
	unknown := servePlugin(t, filepath.Join(dir, "dp.sock"), &registerapi.PluginInfo{Type: "GPUPlugin", Name: "gpu"})
	invalid := servePlugin(t, filepath.Join(dir, "csi.sock"), &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: "old.example.com", SupportedVersions: []string{"0.3.0"}})
	m, _ := startManager(t, dir, map[string]Handler{registerapi.CSIPlugin: h})

	s := unknown.status(t)
	if s.PluginRegistered || !strings.Contains(s.Error, `no handler for plugin type "GPUPlugin"`) || !strings.Contains(s.Error, registerapi.CSIPlugin) {
		t.Errorf("a plugin of an unknown type was told %+v", s)
	}
	s = invalid.status(t)
	if s.PluginRegistered || !strings.Contains(s.Error, "no supported version") || !strings.Contains(s.Error, "old.example.com") {
		t.Errorf("an invalid plugin was told %+v", s)
	}
	// Retried with back-off: told again.
	if s := invalid.status(t); s.PluginRegistered {
		t.Errorf("retry told %+v", s)
	}
	if len(m.Plugins()) != 0 {
		t.Errorf("registered: %v", m.Plugins())
	}
	for _, c := range h.got() {
		if strings.HasPrefix(c, "register") {
			t.Errorf("an invalid plugin reached RegisterPlugin: %s", c)
		}
	}
}

// A plugin whose NotifyRegistrationStatus fails is not registered, as
// upstream's: the handler's registration is undone, and the registration
// is retried until the plugin takes the news.
func TestManagerRetriesWhenThePluginIsNotToldItIsRegistered(t *testing.T) {
	dir := filepath.Join(t.TempDir(), DirName)
	h := &recordingHandler{}
	sock := filepath.Join(dir, "dra.sock")
	p := servePlugin(t, sock, &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: "flaky.example.com", SupportedVersions: []string{"1.0.0"}})
	p.failNotify.Store(true)
	m, _ := startManager(t, dir, map[string]Handler{registerapi.CSIPlugin: h})

	if s := p.status(t); !s.PluginRegistered {
		t.Fatalf("told %+v", s)
	}
	eventually.Seen(t, "the failed registration undone", func() (bool, string) {
		got := h.got()
		return len(got) >= 3 && got[2] == "deregister flaky.example.com "+sock, strings.Join(got, "\n")
	})
	if len(m.Plugins()) != 0 {
		t.Errorf("listed although the plugin was never told: %v", m.Plugins())
	}
	p.failNotify.Store(false)
	// Retried: told again (the retry after the failure may already be
	// under way), until a notification goes through.
	eventually.Seen(t, "registered once the plugin takes the news", func() (bool, string) {
		for len(p.statuses) > 0 {
			<-p.statuses
		}
		return len(m.Plugins()) == 1, fmt.Sprint(m.Plugins(), h.got())
	})
	if got := h.got(); got[len(got)-1] != "register flaky.example.com "+sock+" [1.0.0]" {
		t.Errorf("the last handler call is not a registration:\n%s", strings.Join(got, "\n"))
	}
}
