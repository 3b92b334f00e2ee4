package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/websocket"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream/wsstream"

	"github.com/gokubelet/kubelet/pkg/runtime/logs"
)

// fileLogs serves container logs from a CRI log file through the real
// log reader.
type fileLogs struct {
	fakeContainers
	path string
}

func (f *fileLogs) ContainerLogs(_ context.Context, _ *v1.Pod, _ string, o *v1.PodLogOptions) (LogWriter, error) {
	opts := logs.NewOptions(o, time.Now())
	return func(ctx context.Context, stdout, stderr io.Writer) error {
		return logs.Read(ctx, f.path, opts, stdout, stderr, nil)
	}, nil
}

// flushPipe is a ResponseWriter whose every Flush sends what was written
// since the last one into a pipe as one write, so that one read of the
// pipe sees at most one flush: the worst case of the connection from the
// API server to the kubelet, made deterministic.
type flushPipe struct {
	pw     *io.PipeWriter
	header http.Header
	mu     sync.Mutex
	code   int
	buf    bytes.Buffer
}

func (f *flushPipe) Header() http.Header { return f.header }
func (f *flushPipe) WriteHeader(code int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.code == 0 {
		f.code = code
	}
}
func (f *flushPipe) Write(p []byte) (int, error) {
	f.WriteHeader(http.StatusOK)
	return f.buf.Write(p)
}
func (f *flushPipe) Flush() {
	if f.buf.Len() == 0 {
		return
	}
	b := bytes.Clone(f.buf.Bytes())
	f.buf.Reset()
	f.pw.Write(b)
}

// The conformance spec "Pods should support retrieving logs from the
// container over websockets": the client asks the API server for
// pods/<name>/log over a websocket; the API server reads the kubelet's
// plain /containerLogs answer and sends every read as one websocket
// message (wsstream.Reader, as the API server does); the client keeps
// the messages that are not blank and expects exactly the log.
func TestContainerLogsOverWebsocket(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0.log")
	line := time.Now().UTC().Format(time.RFC3339Nano) + " stdout F container is alive\n"
	if err := os.WriteFile(path, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	kubelet := allowAll(t, Config{Pods: lookupOf(&fakeSource{}, testPod()), Containers: &fileLogs{path: path}, DebuggingHandlers: true})

	codes := make(chan int, 4)
	apiserver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !wsstream.IsWebSocketRequest(r) {
			http.Error(w, "websocket only", http.StatusBadRequest)
			return
		}
		pr, pw := io.Pipe()
		fp := &flushPipe{pw: pw, header: http.Header{}}
		go func() {
			req := httptest.NewRequest(http.MethodGet, "/containerLogs/ns/web/main", nil).WithContext(r.Context())
			kubelet.ServeHTTP(fp, req)
			fp.Flush()
			codes <- fp.code
			pw.Close()
		}()
		if err := wsstream.NewReader(pr, true, wsstream.NewDefaultReaderProtocols()).Copy(w, r); err != nil {
			t.Errorf("websocket copy: %v", err)
		}
		pr.Close()
	}))
	defer apiserver.Close()

	for _, tc := range []struct {
		protocol string
		decode   func(*websocket.Conn) ([]byte, error)
	}{
		{protocol: "binary.k8s.io", decode: func(ws *websocket.Conn) ([]byte, error) {
			var msg []byte
			err := websocket.Message.Receive(ws, &msg)
			return msg, err
		}},
		{protocol: "base64.binary.k8s.io", decode: func(ws *websocket.Conn) ([]byte, error) {
			var msg string
			if err := websocket.Message.Receive(ws, &msg); err != nil {
				return nil, err
			}
			return base64.StdEncoding.DecodeString(msg)
		}},
	} {
		t.Run(tc.protocol, func(t *testing.T) {
			cfg, err := websocket.NewConfig("ws"+strings.TrimPrefix(apiserver.URL, "http")+"/api/v1/namespaces/ns/pods/web/log?container=main", "http://localhost")
			if err != nil {
				t.Fatal(err)
			}
			cfg.Protocol = []string{tc.protocol}
			ws, err := websocket.DialConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer ws.Close()
			// Only a guard against a hang; the stream ends on its own.
			ws.SetDeadline(time.Now().Add(time.Minute))
			var got bytes.Buffer
			for {
				msg, err := tc.decode(ws)
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("receive: %v", err)
				}
				if len(strings.TrimSpace(string(msg))) == 0 {
					continue // the spec's client drops blank messages
				}
				got.Write(msg)
			}
			if code := <-codes; code != http.StatusOK {
				t.Errorf("kubelet answered %d", code)
			}
			if got.String() != "container is alive\n" {
				t.Errorf("websocket log %q, want %q", got.String(), "container is alive\n")
			}
		})
	}
}
