package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for the server's and the test's
// goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestReadImagesFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "images.txt")
	content := "# images for the node e2e suite\n" +
		"\n" +
		"registry.k8s.io/e2e-test-images/agnhost:2.66.1=agnhost-2.66.1.tar\n" +
		"   registry.k8s.io/pause:3.10 = /abs/pause=3.10.tar  \n" +
		"  # indented comment\n"
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readImagesFile(file)
	if err != nil {
		t.Fatal(err)
	}
	want := []ImageSpec{
		{"registry.k8s.io/e2e-test-images/agnhost:2.66.1", filepath.Join(dir, "agnhost-2.66.1.tar")},
		{"registry.k8s.io/pause:3.10", "/abs/pause=3.10.tar"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}

	bad := filepath.Join(dir, "bad.txt")
	os.WriteFile(bad, []byte("# ok\nregistry.k8s.io/pause:3.10=/p\nregistry.k8s.io/pause:3.9\n"), 0o644)
	if _, err := readImagesFile(bad); err == nil || !strings.Contains(err.Error(), "bad.txt:3:") {
		t.Errorf("bad line: err = %v, want one naming bad.txt:3", err)
	}
}

func TestImageFlag(t *testing.T) {
	var f imageFlags
	if err := f.Set("registry.k8s.io/pause:3.10=rel/p.tar"); err != nil {
		t.Fatal(err)
	}
	if err := f.Set("registry.k8s.io/pause:3.10"); err == nil {
		t.Error("Set without =PATH succeeded")
	}
	// -image paths stay relative to the working directory.
	if len(f) != 1 || f[0].Path != "rel/p.tar" {
		t.Errorf("flags = %q", f)
	}
}

// The program as the harness runs it: loads, logs what it serves, serves,
// logs each request, and stops cleanly on SIGTERM.
func TestRunServesAndStopsOnSIGTERM(t *testing.T) {
	img := makeLayout(t, "a", layoutOpts{refName: "2.66.1"})
	busybox := makeLayout(t, "b", layoutOpts{refName: "1.37.0-2"})
	tarPath := tarLayout(t, img.dir)
	list := filepath.Join(filepath.Dir(tarPath), "images.txt")
	os.WriteFile(list, []byte("# generated\n"+agnhostRef+"="+filepath.Base(tarPath)+"\n"), 0o644)

	ctx, stop := signalContext()
	defer stop()
	var stderr syncBuffer
	addrc := make(chan string, 1)
	exit := make(chan int, 1)
	go func() {
		exit <- run(ctx, []string{"-listen", "127.0.0.1:0", "-images-file", list,
			"-image", "registry.k8s.io/e2e-test-images/busybox:1.37.0-2=" + busybox.dir}, &stderr,
			func(addr string) { addrc <- addr })
	}()
	var addr string
	select {
	case addr = <-addrc:
	case code := <-exit:
		t.Fatalf("run exited %d: %s", code, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("not ready: %s", stderr.String())
	}

	r := do(t, "GET", "http://"+addr+agnhostMfs+"2.66.1?ns=registry.k8s.io")
	if r.status != 200 || !bytes.Equal(r.body, img.manifest) {
		t.Fatalf("manifest: %d", r.status)
	}
	expectError(t, do(t, "GET", "http://"+addr+agnhostMfs+"nope"), 404, "MANIFEST_UNKNOWN")

	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-exit:
		if code != 0 {
			t.Errorf("exit status %d after SIGTERM, want 0", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("still running after SIGTERM: %s", stderr.String())
	}
	log := stderr.String()
	for _, want := range []string{
		"serving " + agnhostRef + " (" + img.manifestDigest,
		"serving registry.k8s.io/e2e-test-images/busybox:1.37.0-2 (" + busybox.manifestDigest,
		"GET /v2/e2e-test-images/agnhost/manifests/2.66.1?ns=registry.k8s.io 200 ",
		"GET /v2/e2e-test-images/agnhost/manifests/nope 404 ",
		"shutting down",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	if n := strings.Count(log, " /v2/"); n != 2 {
		t.Errorf("%d request lines logged, want 2:\n%s", n, log)
	}
}

func TestRunFailures(t *testing.T) {
	good := makeLayout(t, "a", layoutOpts{refName: "2.66.1"})
	missing := filepath.Join(t.TempDir(), "agnhost-2.66.1.tar")
	badLogin := filepath.Join(t.TempDir(), "login")
	if err := os.WriteFile(badLogin, []byte("alice\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unloadable image", []string{"-image", agnhostRef + "=" + good.dir, "-image", "registry.k8s.io/pause:3.10=" + missing}, 1, missing},
		{"no images", nil, 2, "no images"},
		{"bad -image", []string{"-image", agnhostRef}, 2, "want REF=PATH"},
		{"missing -images-file", []string{"-images-file", missing}, 2, missing},
		{"extra argument", []string{"-image", agnhostRef + "=" + good.dir, "stray"}, 2, "unexpected arguments"},
		{"cannot listen", []string{"-listen", "256.0.0.1:1", "-image", agnhostRef + "=" + good.dir}, 1, "256.0.0.1"},
		{"missing -basic-auth-file", []string{"-image", agnhostRef + "=" + good.dir, "-basic-auth-file", missing}, 2, missing},
		{"bad -basic-auth-file", []string{"-image", agnhostRef + "=" + good.dir, "-basic-auth-file", badLogin}, 2, "want USER:PASSWORD"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stderr syncBuffer
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			exit := make(chan int, 1)
			go func() {
				exit <- run(ctx, append([]string{"-listen", "127.0.0.1:0"}, c.args...), &stderr, func(string) { cancel() })
			}()
			select {
			case code := <-exit:
				if code != c.code {
					t.Errorf("exit %d, want %d: %s", code, c.code, stderr.String())
				}
			case <-time.After(30 * time.Second):
				t.Fatal("run did not return")
			}
			if !strings.Contains(stderr.String(), c.want) {
				t.Errorf("stderr lacks %q:\n%s", c.want, stderr.String())
			}
			if strings.Contains(stderr.String(), "listening on") {
				t.Errorf("started serving despite the error:\n%s", stderr.String())
			}
		})
	}
}
