package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// A review cut off by the kubelet's own connection rotation (client
// certificate renewed) is asked once more; other errors are not retried.
func TestReviewsRetriedOnceOnClosedConnection(t *testing.T) {
	closed := fmt.Errorf("unexpected error when reading response body. Please retry. Original error: %w",
		&net.OpError{Op: "read", Net: "tcp", Err: net.ErrClosed})
	other := errors.New("the API server said no")
	for _, tc := range []struct {
		name      string
		errs      []error
		wantCalls int
		wantErr   bool
	}{
		{"closed once, then answered", []error{closed, nil}, 2, false},
		{"closed twice", []error{closed, closed}, 2, true},
		{"another error", []error{other, nil}, 1, true},
		{"answered at once", []error{nil}, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			z := retryAuthzOnClosedConn(authorizer.AuthorizerFunc(func(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
				err := tc.errs[calls]
				calls++
				if err != nil {
					return authorizer.DecisionNoOpinion, "", err
				}
				return authorizer.DecisionAllow, "", nil
			}))
			d, _, err := z.Authorize(context.Background(), authorizer.AttributesRecord{})
			if calls != tc.wantCalls || (err != nil) != tc.wantErr || (err == nil && d != authorizer.DecisionAllow) {
				t.Errorf("authorize: %d calls, %v %v; want %d calls, error %v", calls, d, err, tc.wantCalls, tc.wantErr)
			}
			calls = 0
			authn := retryAuthnOnClosedConn(authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) {
				err := tc.errs[calls]
				calls++
				if err != nil {
					return nil, false, err
				}
				return &authenticator.Response{User: &user.DefaultInfo{Name: "u"}}, true, nil
			}))
			_, ok, err := authn.AuthenticateRequest(httptest.NewRequest(http.MethodGet, "/pods", nil))
			if calls != tc.wantCalls || (err != nil) != tc.wantErr || (err == nil && !ok) {
				t.Errorf("authenticate: %d calls, %v %v; want %d calls, error %v", calls, ok, err, tc.wantCalls, tc.wantErr)
			}
		})
	}
}
