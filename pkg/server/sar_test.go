package server

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestReviewSpec(t *testing.T) {
	u := &user.DefaultInfo{Name: "jane", UID: "u-1", Groups: []string{"g1", "g2"}, Extra: map[string][]string{"scopes": {"a", "b"}}}
	cases := []struct {
		name string
		attr authorizer.Attributes
		want authorizationv1.SubjectAccessReviewSpec
	}{{
		name: "a resource request names the node's subresource",
		attr: authorizer.AttributesRecord{User: u, Verb: "get", APIVersion: "v1", Resource: "nodes", Subresource: "stats", Name: "n1", ResourceRequest: true, Path: "/stats/summary"},
		want: authorizationv1.SubjectAccessReviewSpec{
			User: "jane", UID: "u-1", Groups: []string{"g1", "g2"},
			Extra:              map[string]authorizationv1.ExtraValue{"scopes": {"a", "b"}},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Version: "v1", Resource: "nodes", Subresource: "stats", Name: "n1"},
		},
	}, {
		name: "a non-resource request names its path",
		attr: authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "bob"}, Verb: "get", Path: "/healthz"},
		want: authorizationv1.SubjectAccessReviewSpec{
			User:                  "bob",
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/healthz", Verb: "get"},
		},
	}, {
		name: "no user asks for nobody",
		attr: authorizer.AttributesRecord{Verb: "create", Namespace: "ns", Resource: "pods", ResourceRequest: true},
		want: authorizationv1.SubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "ns", Verb: "create", Resource: "pods"},
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := reviewSpec(c.attr); !reflect.DeepEqual(got, c.want) {
				t.Errorf("reviewSpec = %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestDecisionOf(t *testing.T) {
	cases := []struct {
		name    string
		st      authorizationv1.SubjectAccessReviewStatus
		want    authorizer.Decision
		wantErr bool
	}{
		{"allowed", authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: "rbac"}, authorizer.DecisionAllow, false},
		{"denied", authorizationv1.SubjectAccessReviewStatus{Denied: true, Reason: "no"}, authorizer.DecisionDeny, false},
		{"neither is no opinion", authorizationv1.SubjectAccessReviewStatus{Reason: "unknown"}, authorizer.DecisionNoOpinion, false},
		{"both is a denial with an error", authorizationv1.SubjectAccessReviewStatus{Allowed: true, Denied: true}, authorizer.DecisionDeny, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, reason, err := decisionOf(c.st)
			if d != c.want || (err != nil) != c.wantErr || reason != c.st.Reason {
				t.Errorf("decisionOf = %v, %q, %v; want %v, %q, error %v", d, reason, err, c.want, c.st.Reason, c.wantErr)
			}
		})
	}
}

func TestCacheable(t *testing.T) {
	if !cacheable(authorizer.AttributesRecord{Verb: "get", Resource: "nodes", Name: "n1", Path: "/pods"}) {
		t.Error("an ordinary request is not cacheable")
	}
	if cacheable(authorizer.AttributesRecord{Verb: "get", Resource: "nodes", Path: "/logs/" + strings.Repeat("x", sarMaxCachedAttrs)}) {
		t.Error("a request with a path of 10,000 bytes is cacheable")
	}
}

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time       { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) step(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

// sarServer answers SubjectAccessReviews with answer, counting them.
func sarServer(answer func(spec authorizationv1.SubjectAccessReviewSpec) (authorizationv1.SubjectAccessReviewStatus, error)) (*fake.Clientset, *int) {
	c := fake.NewClientset()
	n := new(int)
	c.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		*n++
		r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
		st, err := answer(r.Spec)
		if err != nil {
			return true, nil, err
		}
		r.Status = st
		return true, r, nil
	})
	return c, n
}

func TestSARAuthorizerKeepsAnswersForTheirTTL(t *testing.T) {
	c, n := sarServer(func(spec authorizationv1.SubjectAccessReviewSpec) (authorizationv1.SubjectAccessReviewStatus, error) {
		return authorizationv1.SubjectAccessReviewStatus{Allowed: spec.User == "admin"}, nil
	})
	clk := &fakeClock{now: time.Unix(1000, 0)}
	z := newSARAuthorizer(c.AuthorizationV1(), 5*time.Minute, 30*time.Second, wait.Backoff{Steps: 1})
	z.answers = cache.NewLRUExpireCacheWithClock(sarCacheSize, clk)
	admin := authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "admin"}, Verb: "get", APIVersion: "v1", Resource: "nodes", Subresource: "proxy", Name: "n1", ResourceRequest: true}
	guest := admin
	guest.User = &user.DefaultInfo{Name: "guest"}
	ctx := context.Background()

	ask := func(a authorizer.Attributes, want authorizer.Decision, wantReviews int) {
		t.Helper()
		d, _, err := z.Authorize(ctx, a)
		if err != nil || d != want || *n != wantReviews {
			t.Fatalf("Authorize(%s) = %v, %v after %d reviews; want %v after %d", a.GetUser().GetName(), d, err, *n, want, wantReviews)
		}
	}
	ask(admin, authorizer.DecisionAllow, 1)
	ask(admin, authorizer.DecisionAllow, 1) // kept
	ask(guest, authorizer.DecisionNoOpinion, 2)
	ask(guest, authorizer.DecisionNoOpinion, 2) // kept
	clk.step(31 * time.Second)
	ask(guest, authorizer.DecisionNoOpinion, 3) // the denial's 30 s are over
	ask(admin, authorizer.DecisionAllow, 3)     // the allowance's 5 min are not
	clk.step(5 * time.Minute)
	ask(admin, authorizer.DecisionAllow, 4)
}

func TestSARAuthorizerErrors(t *testing.T) {
	gr := schema.GroupResource{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"}
	cases := []struct {
		name        string
		errs        []error // answers of the API server, one per review, then allowed
		want        authorizer.Decision
		wantErr     bool
		wantReviews int
	}{
		{"a transient error is retried", []error{apierrors.NewInternalError(errors.New("etcd"))}, authorizer.DecisionAllow, false, 2},
		{"too many requests is retried", []error{apierrors.NewTooManyRequests("slow down", 0), apierrors.NewTooManyRequests("slow down", 0)}, authorizer.DecisionAllow, false, 3},
		{"a refusal is not retried", []error{apierrors.NewForbidden(gr, "", errors.New("the kubelet may not review"))}, authorizer.DecisionNoOpinion, true, 1},
		{"retries end", []error{apierrors.NewInternalError(errors.New("1")), apierrors.NewInternalError(errors.New("2")), apierrors.NewInternalError(errors.New("3"))}, authorizer.DecisionNoOpinion, true, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			i := 0
			c, n := sarServer(func(authorizationv1.SubjectAccessReviewSpec) (authorizationv1.SubjectAccessReviewStatus, error) {
				i++
				if i <= len(tc.errs) {
					return authorizationv1.SubjectAccessReviewStatus{}, tc.errs[i-1]
				}
				return authorizationv1.SubjectAccessReviewStatus{Allowed: true}, nil
			})
			z := newSARAuthorizer(c.AuthorizationV1(), time.Minute, time.Minute, wait.Backoff{Duration: time.Millisecond, Steps: 3})
			a := authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "u"}, Verb: "get", Resource: "nodes", Subresource: "stats", ResourceRequest: true}
			d, _, err := z.Authorize(context.Background(), a)
			if d != tc.want || (err != nil) != tc.wantErr || *n != tc.wantReviews {
				t.Fatalf("Authorize = %v, %v after %d reviews; want %v (error %v) after %d", d, err, *n, tc.want, tc.wantErr, tc.wantReviews)
			}
			if tc.wantErr {
				// A failure is not kept: the next request asks again.
				before := *n
				if _, _, err := z.Authorize(context.Background(), a); err != nil && *n == before {
					t.Fatal("a failed review was kept")
				}
				if *n == before {
					t.Fatal("a failed review was kept")
				}
			}
		})
	}
}
