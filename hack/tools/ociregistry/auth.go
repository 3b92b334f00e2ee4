package main

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"os"
	"strings"
)

// basicAuthRealm is the realm of the Basic challenge. containerd's
// resolver ignores it (core/remotes/docker/authorizer.go answers any
// Basic challenge with the pull's credentials for that host); RFC 7617
// makes it mandatory.
const basicAuthRealm = "ociregistry"

// BasicAuth is the one login the server accepts when it wants one.
type BasicAuth struct {
	User     string
	Password string
}

// readBasicAuthFile reads USER:PASSWORD from file (one line; a trailing
// newline is ignored). A file rather than a flag value, so that the
// password is not in the process's command line for every user to see.
func readBasicAuthFile(file string) (BasicAuth, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return BasicAuth{}, err
	}
	line := strings.TrimRight(string(b), "\r\n")
	if strings.ContainsAny(line, "\r\n") {
		return BasicAuth{}, fmt.Errorf("%s: want one line USER:PASSWORD", file)
	}
	user, pass, ok := strings.Cut(line, ":")
	switch {
	case !ok:
		return BasicAuth{}, fmt.Errorf("%s: want USER:PASSWORD", file)
	case user == "" || pass == "":
		// containerd sends no Basic credentials with an empty user or
		// password ("no basic auth credentials"), so such a login could
		// never be used.
		return BasicAuth{}, fmt.Errorf("%s: the user and the password must not be empty", file)
	}
	return BasicAuth{User: user, Password: pass}, nil
}

// requireBasicAuth serves h only to requests that carry auth's login
// (HTTP Basic, RFC 7617). Any other request, /v2/ included, gets 401 with
// a Basic challenge and the OCI error body, as a registry that wants a
// login answers (the distribution spec's UNAUTHORIZED); containerd then
// retries with the pull's credentials, or fails the pull without any.
func requireBasicAuth(h http.Handler, auth BasicAuth) http.Handler {
	// Compared as hashes, in constant time: the lengths leak nothing.
	wantUser, wantPass := sha256.Sum256([]byte(auth.User)), sha256.Sum256([]byte(auth.Password))
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		user, pass, ok := req.BasicAuth()
		gotUser, gotPass := sha256.Sum256([]byte(user)), sha256.Sum256([]byte(pass))
		userOK := subtle.ConstantTimeCompare(gotUser[:], wantUser[:])
		passOK := subtle.ConstantTimeCompare(gotPass[:], wantPass[:])
		if ok && userOK&passOK == 1 {
			h.ServeHTTP(w, req)
			return
		}
		msg := "authentication required"
		if ok {
			msg = "wrong user or password"
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="`+basicAuthRealm+`"`)
		w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
		writeError(w, req, http.StatusUnauthorized, "UNAUTHORIZED", msg)
	})
}
