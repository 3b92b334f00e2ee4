package url

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/pkg/pod/podconfig"
	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/pod/staticpod"
)

// DefaultCheckFrequency is upstream's default httpCheckFrequency.
const DefaultCheckFrequency = 20 * time.Second

// maxBodySize bounds what is read from one response.
const maxBodySize = 10 << 20

// ErrorFunc receives a failure to get usable pods from the URL. It is called
// from the source's goroutine and must not block.
type ErrorFunc func(url string, err error)

// Config configures a Source.
type Config struct {
	// URL is staticPodURL.
	URL string
	// Header is staticPodURLHeader, sent with every request.
	Header http.Header
	// NodeName names this node; it enters the pods' names.
	NodeName string
	// CheckFrequency is httpCheckFrequency; DefaultCheckFrequency when 0.
	CheckFrequency time.Duration
	// Client makes the requests; a client with a 10s timeout when nil.
	Client *http.Client
	// OnError, if set, is told about every new failure.
	OnError ErrorFunc
}

// Source polls Config.URL and sends its pods.
type Source struct {
	cfg     Config
	updates chan<- podconfig.PodUpdate

	lastBody []byte // last body parsed successfully
	haveBody bool
	lastErr  string // last failure reported, to report each failure once
}

// New returns a source that sends on updates. Run starts it.
func New(cfg Config, updates chan<- podconfig.PodUpdate) *Source {
	if cfg.CheckFrequency <= 0 {
		cfg.CheckFrequency = DefaultCheckFrequency
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 10 * time.Second}
	}
	return &Source{cfg: cfg, updates: updates}
}

// Start fetches at once and then every CheckFrequency until ctx ends; it then
// returns nil. It returns an error only for a configuration that can never
// work (empty URL or node name).
func (s *Source) Start(ctx context.Context) error {
	if s.cfg.URL == "" {
		return errors.New("static pod URL is empty")
	}
	if s.cfg.NodeName == "" {
		return errors.New("node name is empty")
	}
	logger := klog.FromContext(ctx).WithName("http-source").WithValues("url", Redact(s.cfg.URL))
	ctx = klog.NewContext(ctx, logger)
	ticker := time.NewTicker(s.cfg.CheckFrequency)
	defer ticker.Stop()
	for {
		if !s.poll(ctx) {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// poll fetches and, if the body is new and valid, sends its pods. It
// returns false when ctx ended.
func (s *Source) poll(ctx context.Context) bool {
	logger := klog.FromContext(ctx)
	body, err := s.fetch(ctx)
	if ctx.Err() != nil {
		return false
	}
	if err != nil {
		s.report(logger, err)
		return true
	}
	if s.haveBody && bytes.Equal(body, s.lastBody) {
		return true
	}
	var pods []*v1.Pod
	if len(bytes.TrimSpace(body)) > 0 {
		pods, err = staticpod.Parse(body, podspec.SourceHTTP, s.cfg.URL, s.cfg.NodeName)
		if errors.Is(err, staticpod.ErrEmpty) {
			err = nil
		}
		if err != nil {
			s.report(logger, fmt.Errorf("invalid manifest: %w", err))
			return true
		}
	}
	if pods == nil {
		pods = []*v1.Pod{}
	}
	select {
	case s.updates <- podconfig.PodUpdate{Op: podconfig.SET, Source: podspec.SourceHTTP, Pods: pods}:
	case <-ctx.Done():
		return false
	}
	logger.V(2).Info("Sent static pods", "count", len(pods))
	s.lastBody, s.haveBody, s.lastErr = body, true, ""
	return true
}

func (s *Source) fetch(ctx context.Context) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.cfg.URL, nil)
	if err != nil {
		return nil, err
	}
	for k, values := range s.cfg.Header {
		for _, v := range values {
			req.Header.Add(k, v)
		}
	}
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fmt.Errorf("GET %s: %s", Redact(s.cfg.URL), resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBodySize+1))
	if err != nil {
		return nil, fmt.Errorf("reading the response: %w", err)
	}
	if len(body) > maxBodySize {
		return nil, fmt.Errorf("response is larger than the %d bytes allowed", maxBodySize)
	}
	return body, nil
}

// report tells of a failure once; the same failure again is only logged
// at a higher verbosity.
func (s *Source) report(logger klog.Logger, err error) {
	// Nothing of the URL's credentials or query reaches a log line or
	// the Node's events (net/http's errors quote the URL).
	err = redactErr(err, s.cfg.URL)
	if err.Error() == s.lastErr {
		logger.V(4).Info("Static pod URL still failing", "err", err)
		return
	}
	s.lastErr = err.Error()
	if s.haveBody {
		logger.Error(err, "Cannot use static pod URL; keeping the pods of its last valid answer")
	} else {
		logger.Error(err, "Cannot use static pod URL")
	}
	if s.cfg.OnError != nil {
		s.cfg.OnError(Redact(s.cfg.URL), err)
	}
}
