package podcerts

import (
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

const (
	// abandonAfter is how long a request this manager created may be
	// missing from the watch before it is taken as deleted and requested
	// again (upstream's 10 minutes, plus jitter). A delete seen on the
	// watch is acted on at once; this covers one that was not.
	abandonAfter = 10 * time.Minute
	// maxJitter spreads refreshes and re-requests, as upstream does, so
	// that pods started together do not all ask their signer at once.
	maxJitter = 5 * time.Minute
	// Failed attempts to create a request (service account not readable
	// yet, node not registered, API server unreachable) are retried after
	// retryBase, doubling up to retryMax.
	retryBase = time.Second
	retryMax  = 2 * time.Minute
)

// ErrNotIssued is wrapped by the error CredentialBundle returns while a
// source has no certificate yet (its request is pending, or could not be
// made so far): the volume should be retried, the pod keeps waiting.
var ErrNotIssued = errors.New("credential bundle is not issued yet")

// ErrStandalone is returned by CredentialBundle when the manager has no API
// client: no signer can be asked.
var ErrStandalone = errors.New("podCertificate projections need an API server; this kubelet runs standalone")

// entryKey names one podCertificate source of one pod.
type entryKey struct {
	pod    types.UID
	volume string
	source int
}

func (k entryKey) String() string {
	return fmt.Sprintf("pod %s volume %q source %d", k.pod, k.volume, k.source)
}

// entry is the state of one source. The credential in use (keyPEM,
// chainPEM) and the request in flight are separate so that a refresh
// serves the old credential until the new one is issued.
type entry struct {
	pod podRef
	src v1.PodCertificateProjection

	keyPEM, chainPEM []byte
	refreshAt        time.Time
	notAfter         time.Time

	inflight *inflight
	// final is set once a request is denied or failed; nothing more is
	// requested for the source.
	final error

	// lastErr is the last failure to create a request, retried from
	// retryAt on; failures counts them in a row.
	lastErr  error
	failures int
	retryAt  time.Time
	// creating is set while the worker is creating a request for the
	// entry, so that two passes never create two.
	creating bool
}

// inflight is a request created and not yet answered. uid is what the API
// server returned on create: it alone ties a watched object to the entry.
type inflight struct {
	name      string
	uid       types.UID
	keyPEM    []byte
	abandonAt time.Time
}

// action is what a worker pass does for an entry.
type action int

const (
	none action = iota
	// request: create a request (first issuance, refresh, retry).
	request
	// abandon: the request in flight is missing for too long; forget it.
	abandon
)

// next decides what to do for e at now. seen says whether e's request in
// flight is in the watch cache.
func next(e *entry, now time.Time, seen bool) action {
	switch {
	case e.final != nil || e.creating:
		return none
	case e.inflight != nil:
		if !seen && !now.Before(e.inflight.abandonAt) {
			return abandon
		}
		return none
	case now.Before(e.retryAt):
		return none
	case e.chainPEM == nil, !now.Before(e.refreshAt):
		return request
	}
	return none
}

// settle applies the outcome of e's request in flight and reports whether
// the credential changed. An issued certificate replaces the credential,
// to be refreshed jitter after its beginRefreshAt. A denial or failure is
// final and, as upstream, drops the credential even if it was a refresh:
// the signer has said no for this pod, and the volume reports it.
func (e *entry) settle(o outcome, jitter time.Duration) bool {
	req := e.inflight
	if req == nil || o.verdict == pending {
		return false
	}
	e.inflight = nil
	switch o.verdict {
	case issued:
		e.keyPEM, e.chainPEM = req.keyPEM, o.chain
		e.refreshAt = o.beginRefreshAt.Add(jitter)
		e.notAfter = o.notAfter
		return true
	case denied:
		e.final = fmt.Errorf("PodCertificateRequest %s/%s was denied by %s: reason=%q message=%q", e.pod.namespace, req.name, e.src.SignerName, o.reason, o.message)
	default:
		e.final = fmt.Errorf("PodCertificateRequest %s/%s failed at %s: reason=%q message=%q", e.pod.namespace, req.name, e.src.SignerName, o.reason, o.message)
	}
	e.keyPEM, e.chainPEM = nil, nil
	return false
}

// created records a request just created, or the failure to create one.
func (e *entry) created(req *inflight, err error, now time.Time) {
	e.creating = false
	if err != nil {
		e.failures++
		e.lastErr = err
		e.retryAt = now.Add(backoff(e.failures))
		return
	}
	e.failures, e.lastErr, e.retryAt = 0, nil, time.Time{}
	e.inflight = req
}

// backoff is the wait after n failures in a row (n >= 1).
func backoff(n int) time.Duration {
	d := retryBase
	for i := 1; i < n && d < retryMax; i++ {
		d *= 2
	}
	return min(d, retryMax)
}

// bundle is what CredentialBundle answers for e.
func (e *entry) bundle(k entryKey) (keyPEM, chainPEM []byte, err error) {
	switch {
	case e.final != nil:
		return nil, nil, e.final
	case e.chainPEM != nil:
		return append([]byte(nil), e.keyPEM...), append([]byte(nil), e.chainPEM...), nil
	case e.inflight != nil:
		return nil, nil, fmt.Errorf("%s: %w: PodCertificateRequest %s/%s is pending at %s", k, ErrNotIssued, e.pod.namespace, e.inflight.name, e.src.SignerName)
	case e.lastErr != nil:
		return nil, nil, fmt.Errorf("%s: %w: requesting it failed: %v", k, ErrNotIssued, e.lastErr)
	}
	return nil, nil, fmt.Errorf("%s: %w: not requested yet", k, ErrNotIssued)
}
