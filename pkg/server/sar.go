package server

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/util/webhook"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/klog/v2"
)

// The kubelet API's Webhook authorization mode: each request's attributes
// go to the API server as a SubjectAccessReview, and the answer is kept
// for authorization.webhook.cacheAuthorizedTTL (allowed) or
// cacheUnauthorizedTTL (not allowed).
//
// This is what upstream's kubelet gets from k8s.io/apiserver's
// authorizerfactory. That package also builds the API server's CEL match
// conditions, which link cel-go and k8s.io/apiserver's CEL libraries
// (6.2 MB of the binary) for a feature the kubelet's delegated
// authorizer never uses. The review itself is small, so it is written here
// against the same facts: the spec holds the user and either the resource
// or the non-resource attributes; allowed and denied both stand, a review
// that says neither is no opinion (403 here); a failed review is no
// opinion with its error (500), after k8s.io/apiserver's retries of
// transient errors; answers whose requester-controlled attributes are
// large are not kept.

// sarCacheSize is how many answers are kept, as upstream's webhook
// authorizer keeps.
const sarCacheSize = 8192

// sarMaxCachedAttrs bounds the length of the attributes a requester
// controls (namespace, verb, group, version, resource, subresource, name,
// path) of an answer that is kept, so that no request can fill the cache
// with large keys.
const sarMaxCachedAttrs = 10000

type sarAuthorizer struct {
	client   authorizationv1client.SubjectAccessReviewInterface
	allowTTL time.Duration
	denyTTL  time.Duration
	backoff  wait.Backoff
	answers  *cache.LRUExpireCache
}

func newSARAuthorizer(c authorizationv1client.AuthorizationV1Interface, allowTTL, denyTTL time.Duration, backoff wait.Backoff) *sarAuthorizer {
	return &sarAuthorizer{
		client:   c.SubjectAccessReviews(),
		allowTTL: allowTTL,
		denyTTL:  denyTTL,
		backoff:  backoff,
		answers:  cache.NewLRUExpireCache(sarCacheSize),
	}
}

// Authorize asks (or remembers) whether the API server allows a.
func (s *sarAuthorizer) Authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	spec := reviewSpec(a)
	k, err := json.Marshal(spec)
	if err != nil {
		return authorizer.DecisionNoOpinion, "", err
	}
	key := string(k)
	if v, ok := s.answers.Get(key); ok {
		return decisionOf(v.(authorizationv1.SubjectAccessReviewStatus))
	}
	var got *authorizationv1.SubjectAccessReview
	err = webhook.WithExponentialBackoff(ctx, s.backoff, func() error {
		var err error
		got, err = s.client.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
		return err
	}, webhook.DefaultShouldRetry)
	if err != nil {
		klog.ErrorS(err, "SubjectAccessReview for a kubelet API request failed", "user", spec.User)
		return authorizer.DecisionNoOpinion, "", err
	}
	if cacheable(a) {
		ttl := s.denyTTL
		if got.Status.Allowed {
			ttl = s.allowTTL
		}
		s.answers.Add(key, got.Status, ttl)
	}
	return decisionOf(got.Status)
}

// reviewSpec is the SubjectAccessReview spec that asks about a.
func reviewSpec(a authorizer.Attributes) authorizationv1.SubjectAccessReviewSpec {
	var spec authorizationv1.SubjectAccessReviewSpec
	if u := a.GetUser(); u != nil {
		spec.User = u.GetName()
		spec.UID = u.GetUID()
		spec.Groups = u.GetGroups()
		if extra := u.GetExtra(); len(extra) > 0 {
			spec.Extra = make(map[string]authorizationv1.ExtraValue, len(extra))
			for k, v := range extra {
				spec.Extra[k] = authorizationv1.ExtraValue(v)
			}
		}
	}
	if a.IsResourceRequest() {
		spec.ResourceAttributes = &authorizationv1.ResourceAttributes{
			Namespace:   a.GetNamespace(),
			Verb:        a.GetVerb(),
			Group:       a.GetAPIGroup(),
			Version:     a.GetAPIVersion(),
			Resource:    a.GetResource(),
			Subresource: a.GetSubresource(),
			Name:        a.GetName(),
		}
	} else {
		spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Path: a.GetPath(), Verb: a.GetVerb()}
	}
	return spec
}

var errAllowedAndDenied = errors.New("the SubjectAccessReview answered both allowed and denied")

// decisionOf reads a review's answer.
func decisionOf(st authorizationv1.SubjectAccessReviewStatus) (authorizer.Decision, string, error) {
	switch {
	case st.Allowed && st.Denied:
		return authorizer.DecisionDeny, st.Reason, errAllowedAndDenied
	case st.Denied:
		return authorizer.DecisionDeny, st.Reason, nil
	case st.Allowed:
		return authorizer.DecisionAllow, st.Reason, nil
	default:
		return authorizer.DecisionNoOpinion, st.Reason, nil
	}
}

// cacheable says whether an answer about a may be kept.
func cacheable(a authorizer.Attributes) bool {
	n := len(a.GetNamespace()) + len(a.GetVerb()) + len(a.GetAPIGroup()) + len(a.GetAPIVersion()) +
		len(a.GetResource()) + len(a.GetSubresource()) + len(a.GetName()) + len(a.GetPath())
	return n < sarMaxCachedAttrs
}
