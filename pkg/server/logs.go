package server

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// ParseLogOptions reads PodLogOptions from the query of a /containerLogs
// request, as the API server sends them (the v1 parameter names, plus the
// legacy "tail", where "all" means no tail), and validates them as the API
// server does. Booleans are false only when absent, "false" or "0".
func ParseLogOptions(q url.Values) (*v1.PodLogOptions, error) {
	o := &v1.PodLogOptions{}
	boolean := func(name string) bool {
		v, ok := q[name]
		if !ok || len(v) == 0 {
			return false
		}
		return !(v[0] == "0" || v[0] == "false" || v[0] == "False" || v[0] == "FALSE")
	}
	integer := func(name string) (*int64, error) {
		v, ok := q[name]
		if !ok || len(v) == 0 || v[0] == "" {
			return nil, nil
		}
		n, err := strconv.ParseInt(v[0], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not an integer", name, v[0])
		}
		return &n, nil
	}
	o.Container = q.Get("container")
	o.Follow = boolean("follow")
	o.Previous = boolean("previous")
	o.Timestamps = boolean("timestamps")
	o.InsecureSkipTLSVerifyBackend = boolean("insecureSkipTLSVerifyBackend")
	var err error
	if o.SinceSeconds, err = integer("sinceSeconds"); err != nil {
		return nil, err
	}
	if o.LimitBytes, err = integer("limitBytes"); err != nil {
		return nil, err
	}
	tailParam := "tailLines"
	if t := q.Get("tail"); t != "" {
		tailParam = "tail"
	}
	if q.Get("tail") != "all" {
		if o.TailLines, err = integer(tailParam); err != nil {
			return nil, err
		}
	}
	if s := q.Get("sinceTime"); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return nil, fmt.Errorf("sinceTime: %q is not an RFC3339 time", s)
		}
		mt := metav1.NewTime(t)
		o.SinceTime = &mt
	}
	if s := q.Get("stream"); s != "" {
		o.Stream = &s
	}
	return o, validateLogOptions(o)
}

func validateLogOptions(o *v1.PodLogOptions) error {
	switch {
	case o.TailLines != nil && *o.TailLines < 0:
		return fmt.Errorf("tailLines: must be greater than or equal to 0")
	case o.LimitBytes != nil && *o.LimitBytes < 1:
		return fmt.Errorf("limitBytes: must be greater than 0")
	case o.SinceSeconds != nil && o.SinceTime != nil:
		return fmt.Errorf("at most one of sinceTime or sinceSeconds may be specified")
	case o.SinceSeconds != nil && *o.SinceSeconds < 1:
		return fmt.Errorf("sinceSeconds: must be greater than 0")
	}
	if o.Stream != nil {
		switch *o.Stream {
		case v1.LogStreamAll, v1.LogStreamStdout, v1.LogStreamStderr:
		default:
			return fmt.Errorf("stream: %q is not one of All, Stdout, Stderr", *o.Stream)
		}
		if *o.Stream != v1.LogStreamAll && o.TailLines != nil {
			return fmt.Errorf("tailLines may not be combined with a single stream")
		}
	}
	return nil
}

// flushWriter flushes after every write, so followed logs reach the client
// line by line.
type flushWriter struct {
	w io.Writer
	f http.Flusher
}

func (fw flushWriter) Write(p []byte) (int, error) {
	n, err := fw.w.Write(p)
	if fw.f != nil {
		fw.f.Flush()
	}
	return n, err
}

// containerLogs serves GET /containerLogs/{namespace}/{pod}/{container}.
func (a *api) containerLogs(w http.ResponseWriter, r *http.Request, t target) {
	opts, err := ParseLogOptions(r.URL.Query())
	if err != nil {
		http.Error(w, fmt.Sprintf(`{"message": "Invalid request: %s"}`, err), http.StatusUnprocessableEntity)
		return
	}
	p, ok := a.pod(w, t)
	if !ok {
		return
	}
	if !hasContainer(p, t.container) {
		http.Error(w, fmt.Sprintf("container %q not found in pod %q", t.container, t.pod), http.StatusNotFound)
		return
	}
	write, err := a.cfg.Containers.ContainerLogs(r.Context(), p, t.container, opts)
	if err != nil {
		http.Error(w, err.Error(), errorStatus(err, http.StatusBadRequest))
		return
	}
	fw := flushWriter{w: w}
	fw.f, _ = w.(http.Flusher)
	var stdout, stderr io.Writer = fw, fw
	if opts.Stream != nil {
		switch *opts.Stream {
		case v1.LogStreamStdout:
			stderr = nil
		case v1.LogStreamStderr:
			stdout = nil
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	if fw.f != nil {
		// A follower waiting for the first line still gets its answer.
		fw.f.Flush()
	}
	if err := write(r.Context(), stdout, stderr); err != nil {
		klog.V(2).InfoS("Container log stream ended with an error", "pod", klog.KObj(p), "container", t.container, "err", err)
	}
}
