package prober

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
)

const (
	// maxRespBody is how much of a response body is read and reported.
	maxRespBody = 10 << 10
	// maxRedirects bounds the redirects an HTTP probe follows.
	maxRedirects = 10
)

// httpOutcome is an HTTP probe's result; warning is set when it succeeded
// on a redirect it did not follow (the output says why).
type httpOutcome struct {
	result  Result
	output  string
	warning bool
}

// httpRequest builds the request of an httpGet probe: scheme (HTTP default),
// host (the pod IP unless set), port, path with its query, headers. A Host
// header sets the request's host; User-Agent and Accept default to the
// probe's own (userAgent, "*/*").
func httpRequest(ctx context.Context, g *v1.HTTPGetAction, host string, port int, userAgent string) (*http.Request, error) {
	scheme := strings.ToLower(string(g.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	if g.Host != "" {
		host = g.Host
	}
	if host == "" {
		return nil, errors.New("no host to probe: the pod has no IP yet")
	}
	path := g.Path
	u, err := url.Parse(path)
	if err != nil {
		u = &url.URL{Path: path}
	}
	u.Scheme = scheme
	u.Host = net.JoinHostPort(host, strconv.Itoa(port))
	if u.Path != "" && !strings.HasPrefix(u.Path, "/") {
		u.Path = "/" + u.Path
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	for _, h := range g.HTTPHeaders {
		if strings.EqualFold(h.Name, "Host") {
			req.Host = h.Value
			continue
		}
		req.Header.Add(h.Name, h.Value)
	}
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header.Set("User-Agent", userAgent)
	}
	if _, ok := req.Header["Accept"]; !ok {
		req.Header.Set("Accept", "*/*")
	}
	return req, nil
}

// newHTTPClient returns the client of HTTP probes: no keep-alive (a probe
// must see a fresh connection), TLS without verification (the pod's
// certificate is not the kubelet's to judge), redirects followed only to the
// same host. With h2c it speaks HTTP/2 over cleartext with prior knowledge
// (a probe's protocol HTTP2).
func newHTTPClient(h2c bool) *http.Client {
	tr := &http.Transport{
		TLSClientConfig:    &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // probes do not verify, as upstream
		DisableKeepAlives:  true,
		DisableCompression: true,
		Proxy:              nil,
	}
	if h2c {
		tr.Protocols = new(http.Protocols)
		tr.Protocols.SetUnencryptedHTTP2(true)
	}
	return &http.Client{Transport: tr, CheckRedirect: sameHostRedirects}
}

// sameHostRedirects follows a redirect only to the host of the first
// request; otherwise the redirect response itself is the answer.
func sameHostRedirects(req *http.Request, via []*http.Request) error {
	if len(via) > 0 && req.URL.Hostname() != via[0].URL.Hostname() {
		return http.ErrUseLastResponse
	}
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	return nil
}

// probeHTTP does one GET: 2xx succeeds, 3xx (a redirect not followed)
// succeeds with a warning, anything else fails with the status code; a
// failed connection fails with its error. At most maxRespBody bytes of the
// body are read.
func probeHTTP(client *http.Client, req *http.Request, timeout time.Duration) httpOutcome {
	ctx, cancel := context.WithTimeout(req.Context(), timeout)
	defer cancel()
	resp, err := client.Do(req.WithContext(ctx))
	if err != nil {
		return httpOutcome{result: Failure, output: err.Error()}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxRespBody))
	if err != nil && !errors.Is(err, io.EOF) {
		return httpOutcome{result: Failure, output: err.Error()}
	}
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return httpOutcome{result: Success, output: string(body)}
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return httpOutcome{result: Success, warning: true,
			output: fmt.Sprintf("Probe terminated redirects, Response body: %s", body)}
	}
	return httpOutcome{result: Failure, output: fmt.Sprintf("HTTP probe failed with statuscode: %d", resp.StatusCode)}
}
