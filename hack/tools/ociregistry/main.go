// Command ociregistry serves local OCI image layouts (directories, or tars
// of them as hack/e2e-images.sh writes) over the pull side of the OCI
// distribution API, read-only, so that containerd can use it as a mirror
// (hosts.toml) for a registry this machine cannot reach, e.g.
// registry.k8s.io. See README.md.
//
//	ociregistry -listen 127.0.0.1:5000 \
//	  -image registry.k8s.io/e2e-test-images/agnhost:2.66.1=$HOME/.cache/gokubelet/e2e-images/agnhost-2.66.1.tar \
//	  -images-file images.txt
//
// Only GET and HEAD of /v2/, /v2/<name>/manifests/<tag-or-digest> and
// /v2/<name>/blobs/<digest> are served. A blob is served only if it belongs
// to one of the images loaded for that repository; every servable file is
// located at start-up, and no request text is ever used to build a path.
//
// With -basic-auth-file it wants one login (HTTP Basic) on every request,
// as a private registry does, so that pulls with and without a pod's pull
// secret can be tested.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signalContext()
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stderr, nil))
}

// signalContext is cancelled by SIGINT or SIGTERM.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
}

// imageFlags collects repeated -image REF=PATH flags.
type imageFlags []ImageSpec

func (f *imageFlags) String() string {
	if f == nil {
		return ""
	}
	s := make([]string, len(*f))
	for i, spec := range *f {
		s[i] = spec.Ref + "=" + spec.Path
	}
	return strings.Join(s, ",")
}

func (f *imageFlags) Set(v string) error {
	spec, err := parseImageArg(v, "")
	if err != nil {
		return err
	}
	*f = append(*f, spec)
	return nil
}

// parseImageArg splits REF=PATH (a reference has no "="; a path may). A
// relative PATH is taken relative to baseDir when that is set.
func parseImageArg(s, baseDir string) (ImageSpec, error) {
	ref, p, ok := strings.Cut(s, "=")
	ref, p = strings.TrimSpace(ref), strings.TrimSpace(p)
	if !ok || ref == "" || p == "" {
		return ImageSpec{}, fmt.Errorf("%q: want REF=PATH", s)
	}
	if baseDir != "" && !filepath.IsAbs(p) {
		p = filepath.Join(baseDir, p)
	}
	return ImageSpec{Ref: ref, Path: p}, nil
}

// readImagesFile reads one REF=PATH a line; blank lines and lines starting
// with # are skipped. Relative paths are relative to the file's directory.
func readImagesFile(file string) ([]ImageSpec, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	base := filepath.Dir(file)
	var specs []ImageSpec
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		spec, err := parseImageArg(line, base)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", file, i+1, err)
		}
		specs = append(specs, spec)
	}
	return specs, nil
}

// run is the program; it returns the exit status. ready, if set, is called
// with the listening address once requests are accepted.
func run(ctx context.Context, args []string, stderr io.Writer, ready func(addr string)) int {
	fs := flag.NewFlagSet("ociregistry", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:5000", "address to listen on (plain HTTP)")
	var images imageFlags
	fs.Var(&images, "image", "`REF=PATH`: serve the image REF (e.g. registry.k8s.io/e2e-test-images/agnhost:2.66.1) from the OCI layout PATH, a directory or an uncompressed tar of one; repeatable")
	imagesFile := fs.String("images-file", "", "`FILE` of REF=PATH lines (blank lines and # comments allowed; relative paths are relative to FILE's directory)")
	verify := fs.Bool("verify", false, "hash every config and layer at start-up (manifests are always verified, and all sizes checked)")
	authFile := fs.String("basic-auth-file", "", "`FILE` holding USER:PASSWORD: serve only requests with that login (HTTP Basic), answer every other with 401 and a Basic challenge")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: ociregistry [-listen ADDR] [-verify] [-basic-auth-file FILE] [-image REF=PATH]... [-images-file FILE]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "ociregistry: unexpected arguments %q\n", fs.Args())
		fs.Usage()
		return 2
	}
	logger := log.New(stderr, "ociregistry: ", log.LstdFlags)

	specs := append([]ImageSpec(nil), images...)
	if *imagesFile != "" {
		more, err := readImagesFile(*imagesFile)
		if err != nil {
			logger.Printf("error: -images-file: %v", err)
			return 2
		}
		specs = append(specs, more...)
	}
	if len(specs) == 0 {
		logger.Printf("error: no images: give -image REF=PATH or -images-file FILE")
		return 2
	}
	var auth *BasicAuth
	if *authFile != "" {
		a, err := readBasicAuthFile(*authFile)
		if err != nil {
			logger.Printf("error: -basic-auth-file: %v", err)
			return 2
		}
		auth = &a
	}

	reg, err := Load(specs, LoadOptions{VerifyBlobs: *verify, Warnf: logger.Printf})
	if err != nil {
		logger.Printf("error: cannot load: %v", err)
		return 1
	}
	defer reg.Close()
	for _, s := range reg.Served() {
		logger.Printf("serving %s (%s, %s, %d blobs) from %s", s.Ref, s.Digest, s.MediaType, s.Blobs, s.Path)
	}

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		logger.Printf("error: %v", err)
		return 1
	}
	var handler http.Handler = reg
	if auth != nil {
		handler = requireBasicAuth(reg, *auth)
		logger.Printf("requests must log in as %q (HTTP Basic)", auth.User)
	}
	srv := &http.Server{
		Handler:           logRequests(handler, logger),
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          logger,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	logger.Printf("listening on http://%s", ln.Addr())
	if ready != nil {
		ready(ln.Addr().String())
	}

	select {
	case err := <-errc:
		logger.Printf("error: serve: %v", err)
		return 1
	case <-ctx.Done():
	}
	logger.Printf("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		logger.Printf("shutdown: %v; closing connections", err)
		srv.Close()
	}
	<-errc
	return 0
}

// ---- HTTP --------------------------------------------------------------------

// ociError is one entry of the OCI distribution error body
// ({"errors":[{"code":…,"message":…}]}).
type ociError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func writeError(w http.ResponseWriter, req *http.Request, status int, code, msg string) {
	body, _ := json.Marshal(struct {
		Errors []ociError `json:"errors"`
	}{[]ociError{{Code: code, Message: msg}}})
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	if req.Method != http.MethodHead {
		w.Write(body)
	}
}

// ServeHTTP serves the pull side of the OCI distribution API.
func (r *Registry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, req, http.StatusMethodNotAllowed, "UNSUPPORTED", "this registry is read-only: only GET and HEAD are served")
		return
	}
	p := req.URL.Path
	if p == "/v2/" || p == "/v2" {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "2")
		w.WriteHeader(http.StatusOK)
		if req.Method != http.MethodHead {
			io.WriteString(w, "{}")
		}
		return
	}
	// /v2/<name>/<kind>/<reference>; <name> has one or more segments.
	rest, ok := strings.CutPrefix(p, "/v2/")
	segs := strings.Split(rest, "/")
	n := len(segs)
	if !ok || n < 3 || (segs[n-2] != "manifests" && segs[n-2] != "blobs") {
		writeError(w, req, http.StatusNotFound, "NAME_UNKNOWN", "no such endpoint: this registry serves /v2/<name>/manifests/<reference> and /v2/<name>/blobs/<digest>")
		return
	}
	kind, ref, name := segs[n-2], segs[n-1], strings.Join(segs[:n-2], "/")
	if len(name) > 255 || !nameRE.MatchString(name) {
		writeError(w, req, http.StatusBadRequest, "NAME_INVALID", "invalid repository name")
		return
	}

	// Check the reference's form before anything else.
	isDigest := strings.Contains(ref, ":")
	switch {
	case isDigest && !validDigest(ref):
		writeError(w, req, http.StatusBadRequest, "DIGEST_INVALID", "invalid digest: only sha256:<64 lowercase hex> is supported")
		return
	case kind == "blobs" && !isDigest:
		writeError(w, req, http.StatusBadRequest, "DIGEST_INVALID", "invalid digest: blobs are fetched by digest")
		return
	case !isDigest && !tagRE.MatchString(ref):
		writeError(w, req, http.StatusNotFound, "MANIFEST_UNKNOWN", "invalid tag")
		return
	}

	repo, why := r.lookup(req.URL.Query().Get("ns"), name)
	if repo == nil {
		writeError(w, req, http.StatusNotFound, "NAME_UNKNOWN", why)
		return
	}
	if kind == "manifests" {
		dgst := ref
		if !isDigest {
			d, ok := repo.tags[ref]
			if !ok {
				writeError(w, req, http.StatusNotFound, "MANIFEST_UNKNOWN", fmt.Sprintf("tag %s of %s is not served", ref, name))
				return
			}
			dgst = d
		}
		m := repo.manifests[dgst]
		if m == nil {
			writeError(w, req, http.StatusNotFound, "MANIFEST_UNKNOWN", fmt.Sprintf("manifest %s of %s is not served", dgst, name))
			return
		}
		h := w.Header()
		h.Set("Content-Type", m.mediaType)
		h.Set("Docker-Content-Digest", dgst)
		h.Set("ETag", `"`+dgst+`"`)
		http.ServeContent(w, req, "", time.Time{}, bytes.NewReader(m.data))
		return
	}

	b := repo.blobs[ref]
	if b == nil {
		writeError(w, req, http.StatusNotFound, "BLOB_UNKNOWN", fmt.Sprintf("blob %s of %s is not served", ref, name))
		return
	}
	content, done, err := b.open()
	if err != nil {
		log.Printf("ociregistry: error: blob %s of %s: %v", ref, name, err)
		writeError(w, req, http.StatusInternalServerError, "UNKNOWN", "cannot read the blob")
		return
	}
	defer done()
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Docker-Content-Digest", ref)
	h.Set("ETag", `"`+ref+`"`)
	h.Set("Cache-Control", "max-age=31536000")
	http.ServeContent(w, req, "", time.Time{}, content)
}

// recorder notes the status and size of a response, for the request log.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (rw *recorder) WriteHeader(code int) {
	if rw.status == 0 {
		rw.status = code
	}
	rw.ResponseWriter.WriteHeader(code)
}

func (rw *recorder) Write(p []byte) (int, error) {
	if rw.status == 0 {
		rw.status = http.StatusOK
	}
	n, err := rw.ResponseWriter.Write(p)
	rw.bytes += int64(n)
	return n, err
}

// ReadFrom keeps the server's own ReadFrom (sendfile) usable through the
// recorder.
func (rw *recorder) ReadFrom(r io.Reader) (int64, error) {
	if rw.status == 0 {
		rw.status = http.StatusOK
	}
	n, err := io.Copy(rw.ResponseWriter, r)
	rw.bytes += n
	return n, err
}

func (rw *recorder) Unwrap() http.ResponseWriter { return rw.ResponseWriter }

// logRequests logs one line per request: method, path (with query), status,
// bytes sent, duration.
func logRequests(h http.Handler, logger *log.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		start := time.Now()
		rec := &recorder{ResponseWriter: w}
		h.ServeHTTP(rec, req)
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		logger.Printf("%s %s %d %dB %s", req.Method, printable(req.URL.RequestURI()), rec.status, rec.bytes,
			time.Since(start).Round(time.Microsecond))
	})
}

// printable keeps a logged request on one line.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, s)
}
