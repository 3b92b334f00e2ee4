package url

import (
	"bytes"
	"flag"
	"net"
	"net/http"
	"strings"
	"testing"

	"k8s.io/klog/v2"
)

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"http://example.com/pods.yaml":                     "http://example.com/pods.yaml",
		"https://user:pass@example.com:8443/p?token=abc#f": "https://REDACTED@example.com:8443/p?REDACTED",
		"https://token@example.com/p":                      "https://REDACTED@example.com/p",
		"http://example.com/p?":                            "http://example.com/p?REDACTED",
		"http://[::1]:80/a%2Fb?x=1":                        "http://[::1]:80/a%2Fb?REDACTED",
		"mailto:someone@example.com":                       "mailto:REDACTED",
		"http://exa mple.com/\x7f":                         "<unparseable URL>",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// Regression (issue 23): the static pod URL, credentials and query
// included, went into log lines and the Node's events.
func TestStaticPodURLSecretsNeverReachLogsOrEvents(t *testing.T) {
	var logs bytes.Buffer
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("v", "4")
	klog.SetOutput(&logs)
	defer func() {
		klog.Flush()
		_ = fs.Set("logtostderr", "true")
		_ = fs.Set("v", "0")
	}()

	srv := newServer(t)
	srv.set(http.StatusInternalServerError, "boom")
	withSecrets := strings.Replace(srv.URL, "http://", "http://admin:s3cret-pw@", 1) + "/pods?token=t0ken-value"
	// A port nothing listens on: net/http's own error quotes the URL.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://admin:s3cret-pw@" + l.Addr().String() + "/pods?token=t0ken-value"
	l.Close()
	for _, u := range []string{withSecrets, closed} {
		h := start(t, u, nil)
		h.none()
		errs := h.errors()
		if len(errs) == 0 {
			t.Fatalf("%s: no error reported", Redact(u))
		}
		for i, e := range errs {
			for _, secret := range []string{"s3cret-pw", "t0ken-value", "admin"} {
				if strings.Contains(e, secret) || strings.Contains(h.origins[i], secret) {
					t.Errorf("%q leaks through the error %q (origin %q)", secret, e, h.origins[i])
				}
			}
		}
	}
	klog.Flush()
	if !strings.Contains(logs.String(), "Cannot use static pod URL") {
		t.Fatalf("no log line captured:\n%s", logs.String())
	}
	for _, secret := range []string{"s3cret-pw", "t0ken-value"} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("%q leaks into the log:\n%s", secret, logs.String())
		}
	}
}
