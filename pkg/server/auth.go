package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/pkg/errdefs"
)

// Authorization modes (authorization.mode).
const (
	AuthzModeAlwaysAllow = "AlwaysAllow"
	AuthzModeWebhook     = "Webhook"
)

// AuthOptions are the authentication and authorization settings of the
// kubelet API (the KubeletConfiguration's authentication and
// authorization blocks).
type AuthOptions struct {
	// Anonymous lets requests without credentials in as
	// system:anonymous (group system:unauthenticated).
	Anonymous bool
	// ClientCAFile, when set, authenticates x509 client certificates
	// signed by one of its CAs (CN = user, O = groups). The file is
	// re-read when it changes.
	ClientCAFile string
	// WebhookAuthn authenticates bearer tokens with TokenReviews, caching
	// answers for WebhookAuthnCacheTTL.
	WebhookAuthn         bool
	WebhookAuthnCacheTTL time.Duration
	// AuthzMode is AlwaysAllow or Webhook (SubjectAccessReviews, allowed
	// answers cached for AuthorizedTTL, denied ones for UnauthorizedTTL).
	AuthzMode       string
	AuthorizedTTL   time.Duration
	UnauthorizedTTL time.Duration
	// Client is the API client for the webhooks; nil when standalone.
	Client kubernetes.Interface
}

// Auth authenticates and authorizes kubelet API requests.
type Auth struct {
	Authenticator authenticator.Request
	Authorizer    authorizer.Authorizer
	// Warnings describe settings that cannot take effect (webhooks
	// without an API server); the caller logs them.
	Warnings []string
	// run starts background work (reloading the client CA file).
	run func(ctx context.Context)
}

// Run starts the authenticator's background work until ctx ends.
func (a *Auth) Run(ctx context.Context) {
	if a.run != nil {
		a.run(ctx)
	}
}

// webhookBackoff is how the webhooks retry a failed review, as
// k8s.io/apiserver's DefaultAuthWebhookRetryBackoff.
func webhookBackoff() *wait.Backoff {
	return &wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}
}

// BuildAuth builds the authenticator from k8s.io/apiserver's delegating
// implementation and the authorizer (sar.go). Without an API client
// (standalone), webhook authentication is left out and webhook
// authorization denies every request, each with a warning: the API stays
// closed rather than open.
func BuildAuth(o AuthOptions) (*Auth, error) {
	a := &Auth{}
	cfg := authenticatorfactory.DelegatingAuthenticatorConfig{
		Anonymous: &apiserver.AnonymousAuthConfig{Enabled: o.Anonymous},
		CacheTTL:  o.WebhookAuthnCacheTTL,
	}
	var ca *dynamiccertificates.DynamicFileCAContent
	if o.ClientCAFile != "" {
		var err error
		ca, err = dynamiccertificates.NewDynamicCAContentFromFile("client-ca-bundle", o.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("authentication.x509.clientCAFile: %w", err)
		}
		cfg.ClientCertificateCAContentProvider = ca
	}
	if o.WebhookAuthn {
		if o.Client == nil {
			a.Warnings = append(a.Warnings, "authentication.webhook.enabled is set but the kubelet has no API server (standalone): bearer tokens are not accepted")
		} else {
			cfg.TokenAccessReviewClient = o.Client.AuthenticationV1()
			cfg.WebhookRetryBackoff = webhookBackoff()
		}
	}
	if cfg.ClientCertificateCAContentProvider == nil && cfg.TokenAccessReviewClient == nil && !o.Anonymous {
		// The delegating config refuses to build an authenticator with no
		// method at all; such a kubelet API authenticates nobody.
		a.Authenticator = authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) { return nil, false, nil })
		a.Warnings = append(a.Warnings, "no authentication method is usable (no client CA file, no webhook, anonymous off): every request to the kubelet API is refused with 401")
	} else {
		authn, _, err := cfg.New()
		if err != nil {
			return nil, fmt.Errorf("building the authenticator: %w", err)
		}
		a.Authenticator = retryAuthnOnClosedConn(authn)
	}

	switch o.AuthzMode {
	case AuthzModeAlwaysAllow:
		a.Authorizer = authorizer.AuthorizerFunc(func(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
			return authorizer.DecisionAllow, "", nil
		})
	case AuthzModeWebhook, "":
		if o.Client == nil {
			a.Authorizer = authorizer.AuthorizerFunc(func(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
				return authorizer.DecisionDeny, "webhook authorization needs an API server", nil
			})
			a.Warnings = append(a.Warnings, "authorization.mode is Webhook but the kubelet has no API server (standalone): every authenticated request is refused with 403; use AlwaysAllow with x509 authentication instead")
			break
		}
		z := authorizer.AuthorizerFunc(newSARAuthorizer(o.Client.AuthorizationV1(), o.AuthorizedTTL, o.UnauthorizedTTL, *webhookBackoff()).Authorize)
		a.Authorizer = retryAuthzOnClosedConn(z)
	default:
		return nil, fmt.Errorf("unknown authorization mode %q", o.AuthzMode)
	}
	if ca != nil {
		a.run = func(ctx context.Context) { ca.Run(ctx, 1) }
	}
	return a, nil
}

// A review (TokenReview, SubjectAccessReview) in flight fails with "use of
// closed network connection" when the kubelet rotates its client
// certificate (errdefs.IsConnectionClosed). The webhooks' own retries do
// not take that error as transient, so the request would fail with 500
// (make test saw it). These wrappers ask once more, on a new connection.

func retryAuthzOnClosedConn(z authorizer.Authorizer) authorizer.Authorizer {
	return authorizer.AuthorizerFunc(func(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		d, reason, err := z.Authorize(ctx, a)
		if errdefs.IsConnectionClosed(ctx, err) {
			return z.Authorize(ctx, a)
		}
		return d, reason, err
	})
}

func retryAuthnOnClosedConn(authn authenticator.Request) authenticator.Request {
	return authenticator.RequestFunc(func(r *http.Request) (*authenticator.Response, bool, error) {
		resp, ok, err := authn.AuthenticateRequest(r)
		if errdefs.IsConnectionClosed(r.Context(), err) {
			return authn.AuthenticateRequest(r)
		}
		return resp, ok, err
	})
}

// RequestAttributes returns the authorization attributes of a request to
// the kubelet API, as upstream's kubelet builds them: resource "nodes",
// the node's name, the verb from the HTTP method, and one subresource per
// attempt. With fine-grained authorization (KubeletFineGrainedAuthz,
// beta and on by default since 1.33), /pods and /runningpods/ first try
// "pods", /healthz "healthz" and /configz "configz", and then fall back
// to "proxy"; a request is allowed when any attempt is. Otherwise /stats
// → stats, /metrics → metrics, /logs → log, /checkpoint → checkpoint,
// /statusz → statusz, /flagz → configz, an extra route → its own
// subresource, and everything else (exec, attach, portForward,
// containerLogs, run, pprof, ...) → proxy.
func RequestAttributes(nodeName string, u user.Info, r *http.Request, routes []Route, fineGrained bool) []authorizer.Attributes {
	var verb string
	switch r.Method {
	case http.MethodPost:
		verb = "create"
	case http.MethodGet:
		verb = "get"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		verb = "delete"
	}
	return attributesFor(nodeName, u, verb, r.URL.Path, routes, fineGrained)
}

// Subresources returns, in order of attempt, the nodes subresources that
// authorize a request path (see RequestAttributes).
func Subresources(p string, routes []Route, fineGrained bool) []string {
	var out []string
	if fineGrained {
		switch {
		case isSubpath(p, podsPath):
			out = append(out, "pods")
		case isSubpath(p, healthzPath):
			out = append(out, "healthz")
		case isSubpath(p, configzPath):
			out = append(out, "configz")
		case isSubpath(p, runningPodsPath):
			out = append(out, "pods")
		}
	}
	for _, rt := range routes {
		if isSubpath(p, rt.Path) {
			return append(out, rt.Subresource)
		}
	}
	switch {
	case isSubpath(p, statsPath):
		out = append(out, "stats")
	case isSubpath(p, metricsPath):
		out = append(out, "metrics")
	case isSubpath(p, logsPath):
		out = append(out, "log")
	case isSubpath(p, checkpointPath):
		out = append(out, "checkpoint")
	case isSubpath(p, statuszPath):
		out = append(out, "statusz")
	case isSubpath(p, flagzPath):
		out = append(out, "configz")
	default:
		out = append(out, "proxy")
	}
	return out
}

func attributesFor(nodeName string, u user.Info, verb, p string, routes []Route, fineGrained bool) []authorizer.Attributes {
	var attrs []authorizer.Attributes
	for _, sub := range Subresources(p, routes, fineGrained) {
		attrs = append(attrs, authorizer.AttributesRecord{
			User: u, Verb: verb, APIVersion: "v1", Resource: "nodes", Subresource: sub,
			Name: nodeName, ResourceRequest: true, Path: p,
		})
	}
	return attrs
}

// authFilter authenticates and authorizes every request before h: no or
// bad credentials → 401, not allowed → 403, a failing authorizer → 500.
// The answers say no more than upstream's: the caller's own identity and
// the attributes it lacks, nothing about the node's pods.
func authFilter(nodeName string, auth *Auth, routes []Route, fineGrained bool, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, ok, err := auth.Authenticator.AuthenticateRequest(r)
		if err != nil {
			klog.V(2).InfoS("Kubelet API request failed authentication", "err", err, "remote", r.RemoteAddr)
		}
		if err != nil || !ok {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		attrs := RequestAttributes(nodeName, resp.User, r, routes, fineGrained)
		var subs []string
		for _, a := range attrs {
			subs = append(subs, a.GetSubresource())
			decision, _, err := auth.Authorizer.Authorize(r.Context(), a)
			if err != nil {
				klog.ErrorS(err, "Kubelet API authorization error", "user", a.GetUser().GetName(), "verb", a.GetVerb(), "subresource", a.GetSubresource())
				http.Error(w, fmt.Sprintf("Authorization error (user=%s, verb=%s, resource=%s, subresource=%s)", a.GetUser().GetName(), a.GetVerb(), a.GetResource(), a.GetSubresource()), http.StatusInternalServerError)
				return
			}
			if decision == authorizer.DecisionAllow {
				// The credentials stop here: nothing behind the kubelet
				// (the runtime's streaming server) gets them.
				r.Header.Del("Authorization")
				h.ServeHTTP(w, r.WithContext(withUser(r.Context(), resp.User)))
				return
			}
		}
		if len(attrs) == 0 {
			http.Error(w, "Authorization error: could not determine attributes for request", http.StatusForbidden)
			return
		}
		klog.V(2).InfoS("Kubelet API request forbidden", "user", resp.User.GetName(), "verb", attrs[0].GetVerb(), "subresources", subs, "path", r.URL.Path)
		http.Error(w, fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=%s, subresource(s)=%v)", resp.User.GetName(), attrs[0].GetVerb(), attrs[0].GetResource(), subs), http.StatusForbidden)
	})
}

type userKey struct{}

func withUser(ctx context.Context, u user.Info) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// UserFrom returns the authenticated user of a kubelet API request (for
// handlers mounted as extra routes), if any.
func UserFrom(ctx context.Context) (user.Info, bool) {
	u, ok := ctx.Value(userKey{}).(user.Info)
	return u, ok
}

var errNoAuth = errors.New("the kubelet API needs an authenticator and an authorizer")
