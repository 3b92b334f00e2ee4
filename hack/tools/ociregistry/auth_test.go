package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// newAuthServer serves img as agnhostRef, wanting the login alice:s3cret.
func newAuthServer(t *testing.T, img testImage) *httptest.Server {
	t.Helper()
	reg, err := Load([]ImageSpec{{agnhostRef, img.dir}}, LoadOptions{})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	srv := httptest.NewServer(requireBasicAuth(reg, BasicAuth{User: "alice", Password: "s3cret"}))
	t.Cleanup(func() {
		srv.Close()
		reg.Close()
	})
	return srv
}

// basic is the Authorization header value of user:pass.
func basic(user, pass string) string {
	req, _ := http.NewRequest("GET", "http://x/", nil)
	req.SetBasicAuth(user, pass)
	return req.Header.Get("Authorization")
}

// expectChallenge checks a refusal as a registry that wants a login
// answers: 401, a Basic challenge with a realm (what containerd's resolver
// answers with the pull's credentials), the OCI error UNAUTHORIZED.
func expectChallenge(t *testing.T, r response) {
	t.Helper()
	if r.status != http.StatusUnauthorized {
		t.Fatalf("status = %d, want 401 (body %q)", r.status, r.body)
	}
	if got := r.header.Get("WWW-Authenticate"); got != `Basic realm="ociregistry"` {
		t.Errorf("WWW-Authenticate = %q, want a Basic challenge with a realm", got)
	}
	if got := r.header.Get("Docker-Distribution-API-Version"); got != "registry/2.0" {
		t.Errorf("Docker-Distribution-API-Version = %q", got)
	}
	if len(r.body) > 0 {
		if code := errCode(t, r); code != "UNAUTHORIZED" {
			t.Errorf("error code = %s, want UNAUTHORIZED", code)
		}
	}
}

func TestBasicAuth(t *testing.T) {
	img := makeLayout(t, "a", layoutOpts{refName: "2.66.1"})
	srv := newAuthServer(t, img)
	endpoints := []string{
		"/v2/",
		agnhostMfs + "2.66.1",
		agnhostMfs + img.manifestDigest,
		agnhostBlb + img.layerDigest,
		// Unknown names and bad digests are refused before they are
		// looked at: without the login nothing tells what is served.
		"/v2/no/such/manifests/1.0",
		agnhostBlb + "sha256:nothex",
	}
	for _, c := range []struct {
		name string
		auth []string // Authorization header, none when nil
	}{
		{"no credentials", nil},
		{"wrong password", []string{"Authorization", basic("alice", "wrong")}},
		{"wrong user", []string{"Authorization", basic("bob", "s3cret")}},
		{"password of another length", []string{"Authorization", basic("alice", "s3cret-and-more")}},
		{"empty password", []string{"Authorization", basic("alice", "")}},
		{"bearer token", []string{"Authorization", "Bearer s3cret"}},
		{"malformed basic", []string{"Authorization", "Basic !!!"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, p := range endpoints {
				for _, method := range []string{"GET", "HEAD"} {
					r := do(t, method, srv.URL+p, c.auth...)
					expectChallenge(t, r)
					if method == "HEAD" && len(r.body) != 0 {
						t.Errorf("HEAD %s: body %q", p, r.body)
					}
				}
			}
			// Other methods too: the login comes before anything else.
			expectChallenge(t, do(t, "PUT", srv.URL+agnhostMfs+"2.66.1", c.auth...))
		})
	}

	t.Run("right credentials", func(t *testing.T) {
		auth := []string{"Authorization", basic("alice", "s3cret")}
		if r := do(t, "GET", srv.URL+"/v2/", auth...); r.status != 200 || r.header.Get("WWW-Authenticate") != "" {
			t.Errorf("/v2/: %d, WWW-Authenticate %q", r.status, r.header.Get("WWW-Authenticate"))
		}
		r := do(t, "GET", srv.URL+agnhostMfs+"2.66.1", auth...)
		if r.status != 200 || !bytes.Equal(r.body, img.manifest) || r.header.Get("Docker-Content-Digest") != img.manifestDigest {
			t.Errorf("manifest: %d %q", r.status, r.header.Get("Docker-Content-Digest"))
		}
		if r := do(t, "GET", srv.URL+agnhostBlb+img.layerDigest, auth...); r.status != 200 || !bytes.Equal(r.body, img.layer) {
			t.Errorf("layer: %d", r.status)
		}
		// Behind the login the registry answers as without one.
		expectError(t, do(t, "GET", srv.URL+agnhostMfs+"nope", auth...), 404, "MANIFEST_UNKNOWN")
		expectError(t, do(t, "PUT", srv.URL+agnhostMfs+"2.66.1", auth...), 405, "UNSUPPORTED")
	})
}

func TestReadBasicAuthFile(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, content string
		want          BasicAuth
		err           string
	}{
		{"line", "alice:s3cret\n", BasicAuth{"alice", "s3cret"}, ""},
		{"no newline", "alice:s3cret", BasicAuth{"alice", "s3cret"}, ""},
		{"CRLF", "alice:s3cret\r\n", BasicAuth{"alice", "s3cret"}, ""},
		{"colon in password", "alice:a:b c", BasicAuth{"alice", "a:b c"}, ""},
		{"no colon", "alice\n", BasicAuth{}, "want USER:PASSWORD"},
		{"empty user", ":s3cret\n", BasicAuth{}, "must not be empty"},
		{"empty password", "alice:\n", BasicAuth{}, "must not be empty"},
		{"two lines", "alice:s3cret\nbob:x\n", BasicAuth{}, "one line"},
		{"empty", "", BasicAuth{}, "want USER:PASSWORD"},
	} {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-"))
			if err := os.WriteFile(file, []byte(c.content), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := readBasicAuthFile(file)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want one with %q", err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, c.want)
			}
		})
	}
}

// The program with -basic-auth-file: it logs the user it wants (never the
// password), refuses requests without the login, serves those with it,
// and logs both.
func TestRunWithBasicAuth(t *testing.T) {
	img := makeLayout(t, "a", layoutOpts{refName: "2.66.1"})
	authFile := filepath.Join(t.TempDir(), "login")
	if err := os.WriteFile(authFile, []byte("alice:s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr syncBuffer
	addrc := make(chan string, 1)
	exit := make(chan int, 1)
	go func() {
		exit <- run(ctx, []string{"-listen", "127.0.0.1:0", "-basic-auth-file", authFile,
			"-image", agnhostRef + "=" + img.dir}, &stderr, func(addr string) { addrc <- addr })
	}()
	var addr string
	select {
	case addr = <-addrc:
	case code := <-exit:
		t.Fatalf("run exited %d: %s", code, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("not ready: %s", stderr.String())
	}
	expectChallenge(t, do(t, "GET", "http://"+addr+agnhostMfs+"2.66.1"))
	if r := do(t, "GET", "http://"+addr+agnhostMfs+"2.66.1", "Authorization", basic("alice", "s3cret")); r.status != 200 {
		t.Errorf("with the login: %d", r.status)
	}
	cancel()
	select {
	case code := <-exit:
		if code != 0 {
			t.Errorf("exit %d, want 0", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return")
	}
	log := stderr.String()
	for _, want := range []string{
		`requests must log in as "alice" (HTTP Basic)`,
		"GET /v2/e2e-test-images/agnhost/manifests/2.66.1 401 ",
		"GET /v2/e2e-test-images/agnhost/manifests/2.66.1 200 ",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	if strings.Contains(log, "s3cret") {
		t.Errorf("the password is in the log:\n%s", log)
	}
}
