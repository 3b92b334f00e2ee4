package objects

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// TokenGetter issues service account tokens (TokenRequest API).
type TokenGetter interface {
	// GetServiceAccountToken returns a token for the service account
	// namespace/name as tr asks (audiences, expiration, bound object),
	// from the cache while it is fresh.
	GetServiceAccountToken(ctx context.Context, namespace, name string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error)
}

const (
	// tokenMaxAge: a token older than this is renewed whatever its
	// expiry (upstream's 24h).
	tokenMaxAge = 24 * time.Hour
	// tokenMaxJitter spreads renewals of tokens issued together.
	tokenMaxJitter = 10 * time.Second
	tokenGCPeriod  = time.Minute
)

// Tokens implements TokenGetter with a cache: a token is renewed once 80%
// of its lifetime has passed or it is 24 hours old, as upstream does. A
// failed renewal keeps serving the cached token until it expires.
type Tokens struct {
	client kubernetes.Interface
	clock  clock.WithTicker

	mu    sync.Mutex
	cache map[string]*authenticationv1.TokenRequest
}

var _ TokenGetter = (*Tokens)(nil)

// NewTokens returns a token cache over client (nil: standalone, every
// request fails).
func NewTokens(client kubernetes.Interface, clk clock.WithTicker) *Tokens {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Tokens{client: client, clock: clk, cache: map[string]*authenticationv1.TokenRequest{}}
}

// Start drops expired tokens every minute until ctx ends.
func (t *Tokens) Start(ctx context.Context) error {
	tick := t.clock.NewTicker(tokenGCPeriod)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C():
			t.mu.Lock()
			for k, tr := range t.cache {
				if t.clock.Now().After(tr.Status.ExpirationTimestamp.Time) {
					delete(t.cache, k)
				}
			}
			t.mu.Unlock()
		}
	}
}

// GetServiceAccountToken implements TokenGetter.
func (t *Tokens) GetServiceAccountToken(ctx context.Context, namespace, name string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	if t.client == nil {
		return nil, fmt.Errorf("cannot request a token for service account %s/%s: %w", namespace, name, ErrStandalone)
	}
	key := tokenKey(namespace, name, tr)
	t.mu.Lock()
	cached := t.cache[key]
	t.mu.Unlock()
	now := t.clock.Now()
	jitter := time.Duration(rand.Float64() * float64(tokenMaxJitter))
	if cached != nil && !NeedsRefresh(cached, now, jitter) {
		return cached, nil
	}
	fresh, err := t.client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, tr, metav1.CreateOptions{})
	if err != nil {
		if cached != nil && now.Before(cached.Status.ExpirationTimestamp.Time) {
			klog.FromContext(ctx).Error(err, "Renewing a service account token failed; the current one is still valid", "serviceAccount", namespace+"/"+name)
			return cached, nil
		}
		return nil, fmt.Errorf("requesting a token for service account %s/%s: %w", namespace, name, err)
	}
	if fresh.Spec.ExpirationSeconds == nil {
		// The server always says; keep what was asked if not.
		fresh.Spec.ExpirationSeconds = tr.Spec.ExpirationSeconds
	}
	t.mu.Lock()
	t.cache[key] = fresh
	t.mu.Unlock()
	return fresh, nil
}

// DeletePodTokens forgets the tokens bound to a pod.
func (t *Tokens) DeletePodTokens(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, tr := range t.cache {
		if tr.Spec.BoundObjectRef != nil && tr.Spec.BoundObjectRef.UID == uid {
			delete(t.cache, k)
		}
	}
}

// NeedsRefresh is the renewal rule: renew once the token is older than 24
// hours or past 80% of its lifetime (both less jitter). A token whose
// lifetime is unknown is renewed once expired.
func NeedsRefresh(tr *authenticationv1.TokenRequest, now time.Time, jitter time.Duration) bool {
	exp := tr.Status.ExpirationTimestamp.Time
	if tr.Spec.ExpirationSeconds == nil {
		return !now.Before(exp)
	}
	ttl := time.Duration(*tr.Spec.ExpirationSeconds) * time.Second
	issued := exp.Add(-ttl)
	if now.After(issued.Add(tokenMaxAge - jitter)) {
		return true
	}
	return now.After(exp.Add(-ttl/5 - jitter))
}

func tokenKey(namespace, name string, tr *authenticationv1.TokenRequest) string {
	var exp int64
	if tr.Spec.ExpirationSeconds != nil {
		exp = *tr.Spec.ExpirationSeconds
	}
	var ref authenticationv1.BoundObjectReference
	if tr.Spec.BoundObjectRef != nil {
		ref = *tr.Spec.BoundObjectRef
	}
	return fmt.Sprintf("%q/%q/%q/%d/%s/%s/%s/%s", namespace, name, tr.Spec.Audiences, exp, ref.Kind, ref.APIVersion, ref.Name, ref.UID)
}
