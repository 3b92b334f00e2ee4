// Package credentials finds registry credentials for an image pull, as the
// upstream kubelet's credential keyring does: from the pod's
// imagePullSecrets (kubernetes.io/dockerconfigjson and
// kubernetes.io/dockercfg) and from the node's own Docker config files
// (config.json in the kubelet's root directory, the working directory,
// ~/.docker and /.docker; then .dockercfg), matched by registry host (with
// glob patterns per DNS label), port and path prefix.
//
// Each login carries its source (Login.Secret): the pull secret's
// namespace, name and UID with the login's Hash (upstream's), or nothing
// for the node's own logins, so that the image puller can record what
// pulled an image and later tell whether another pod holds the same
// credentials (KubeletEnsureSecretPulledImages). There are no image
// credential provider plugins here, so no login comes from a service
// account.
package credentials

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Entry is one registry login.
type Entry struct {
	Username string
	Password string
	Email    string
}

// UnmarshalJSON reads a Docker config entry: username/password, or the
// base64 "auth" field (user:password), which wins.
func (e *Entry) UnmarshalJSON(b []byte) error {
	var raw struct {
		Username string `json:"username,omitempty"`
		Password string `json:"password,omitempty"`
		Email    string `json:"email,omitempty"`
		Auth     string `json:"auth,omitempty"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	e.Username, e.Password, e.Email = raw.Username, raw.Password, raw.Email
	if raw.Auth == "" {
		return nil
	}
	var dec []byte
	var err error
	if strings.HasSuffix(strings.TrimSpace(raw.Auth), "=") {
		dec, err = base64.StdEncoding.DecodeString(raw.Auth)
	} else {
		dec, err = base64.RawStdEncoding.DecodeString(raw.Auth)
	}
	if err != nil {
		return err
	}
	user, pass, ok := strings.Cut(string(dec), ":")
	if !ok {
		return errors.New("unable to parse auth field, must be formatted as base64(username:password)")
	}
	e.Username, e.Password = user, pass
	return nil
}

// Config maps a registry location (host[:port][/path], with or without a
// scheme) to its login: the content of a .dockercfg file, or the "auths"
// of a config.json.
type Config map[string]Entry

// ParseConfigJSON reads a config.json (a dockerconfigjson secret).
func ParseConfigJSON(b []byte) (Config, error) {
	var c struct {
		Auths Config `json:"auths"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, errors.New("error occurred while trying to unmarshal json")
	}
	return c.Auths, nil
}

// ParseDockercfg reads a legacy .dockercfg (a dockercfg secret).
func ParseDockercfg(b []byte) (Config, error) {
	var c Config
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, errors.New("error occurred while trying to unmarshal json")
	}
	return c, nil
}

// Keyring holds logins by location, looked up most specific first, each
// with the pull secret it came from (nil for the node's own).
type Keyring struct {
	index []string
	creds map[string][]Tracked
}

// SecretRef names the pull secret a login came from.
type SecretRef struct {
	Namespace string
	Name      string
	UID       string
}

// Tracked is a login with its source: Secret is nil for a login of the
// node's own config files, which every pod on the node may use.
type Tracked struct {
	Entry
	Secret *SecretRef
}

// Add adds a config's logins, the node's own (no secret). Locations are
// normalised: the scheme and a leading /v1/ or /v2/ path are dropped.
func (k *Keyring) Add(c Config) { k.AddFrom(nil, c) }

// AddFrom adds a config's logins read from the pull secret src (nil: the
// node's own).
func (k *Keyring) AddFrom(src *SecretRef, c Config) {
	if k.creds == nil {
		k.creds = map[string][]Tracked{}
	}
	for loc, e := range c {
		v := loc
		if !strings.HasPrefix(v, "https://") && !strings.HasPrefix(v, "http://") {
			v = "https://" + v
		}
		u, err := url.Parse(v)
		if err != nil {
			continue
		}
		p := u.Path
		if strings.HasPrefix(p, "/v2/") || strings.HasPrefix(p, "/v1/") {
			p = p[3:]
		}
		key := u.Host
		if p != "" && p != "/" {
			key += p
		}
		if _, ok := k.creds[key]; !ok {
			k.index = append(k.index, key)
		}
		k.creds[key] = append(k.creds[key], Tracked{Entry: e, Secret: src})
	}
	// Reverse lexical order: longer (more specific) keys of a host first.
	sort.Sort(sort.Reverse(sort.StringSlice(k.index)))
}

const defaultRegistryHost = "index.docker.io"

// Lookup returns the logins that match image (a reference without scheme,
// e.g. "registry.example:5000/team/app:1.0"), most specific first. Docker
// Hub images also match an index.docker.io login.
func (k *Keyring) Lookup(image string) []Entry {
	var out []Entry
	for _, t := range k.LookupTracked(image) {
		out = append(out, t.Entry)
	}
	return out
}

// LookupTracked is Lookup with each login's source.
func (k *Keyring) LookupTracked(image string) []Tracked {
	if k == nil {
		return nil
	}
	var out []Tracked
	for _, key := range k.index {
		if match(key, image) {
			out = append(out, k.creds[key]...)
		}
	}
	if len(out) == 0 && isDockerHub(image) {
		out = append(out, k.creds[defaultRegistryHost]...)
	}
	return out
}

// match reports whether image is under the location glob: same number of
// host labels each matching (filepath.Match), same port, and the image's
// path starting with the glob's.
func match(glob, image string) bool {
	g, err := url.Parse("https://" + glob)
	if err != nil {
		return false
	}
	t, err := url.Parse("https://" + image)
	if err != nil {
		return false
	}
	gh, gp := splitHost(g.Host)
	th, tp := splitHost(t.Host)
	if gp != tp || len(gh) != len(th) || !strings.HasPrefix(t.Path, g.Path) {
		return false
	}
	for i := range gh {
		if ok, err := filepath.Match(gh[i], th[i]); err != nil || !ok {
			return false
		}
	}
	return true
}

func splitHost(hostport string) ([]string, string) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, ""
	}
	return strings.Split(host, "."), port
}

// isDockerHub: an image without a registry host (no '.' or ':' in its first
// part, or a single part), or on docker.io.
func isDockerHub(image string) bool {
	first, _, hasSlash := strings.Cut(image, "/")
	if first == "" {
		return false
	}
	if !hasSlash || first == "docker.io" || first == "index.docker.io" {
		return true
	}
	return !strings.ContainsAny(first, ".:")
}

// FromSecrets builds a keyring from pull secrets of the types
// kubernetes.io/dockerconfigjson and kubernetes.io/dockercfg; others are
// ignored. Each login remembers its secret (namespace, name, UID). A
// secret that does not parse is an error naming it.
func FromSecrets(secrets []*v1.Secret) (*Keyring, error) {
	k := &Keyring{}
	for _, s := range secrets {
		var c Config
		var err error
		switch {
		case s.Type == v1.SecretTypeDockerConfigJson && len(s.Data[v1.DockerConfigJsonKey]) > 0:
			c, err = ParseConfigJSON(s.Data[v1.DockerConfigJsonKey])
		case s.Type == v1.SecretTypeDockercfg && len(s.Data[v1.DockerConfigKey]) > 0:
			c, err = ParseDockercfg(s.Data[v1.DockerConfigKey])
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("image pull secret %s/%s: %w", s.Namespace, s.Name, err)
		}
		k.AddFrom(&SecretRef{Namespace: s.Namespace, Name: s.Name, UID: string(s.UID)}, c)
	}
	return k, nil
}

// Hash is the hash of a login that pull records keep
// (<root-dir>/image_manager, KubeletEnsureSecretPulledImages): the hex
// SHA-256 of its JSON as upstream's kubelet writes it, so that records
// written by either kubelet match the other's logins. The fields and their
// order are the Docker client's auth config's; a login read from a Docker
// config has only a username, a password and an email.
func Hash(e Entry) string {
	b, err := json.Marshal(struct {
		Username      string `json:"username,omitempty"`
		Password      string `json:"password,omitempty"`
		Auth          string `json:"auth,omitempty"`
		Email         string `json:"email,omitempty"`
		ServerAddress string `json:"serveraddress,omitempty"`
		IdentityToken string `json:"identitytoken,omitempty"`
		RegistryToken string `json:"registrytoken,omitempty"`
	}{Username: e.Username, Password: e.Password, Email: e.Email})
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
