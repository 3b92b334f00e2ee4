package credentials

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
)

func auth(u, p string) string { return base64.StdEncoding.EncodeToString([]byte(u + ":" + p)) }

func users(es []Entry) string {
	var out []string
	for _, e := range es {
		out = append(out, e.Username)
	}
	return strings.Join(out, ",")
}

func TestKeyringMatching(t *testing.T) {
	k := &Keyring{}
	k.Add(Config{
		"registry.example:5000":           {Username: "port"},
		"https://registry.example/v2/":    {Username: "host"},
		"registry.example/team":           {Username: "team"},
		"*.mirror.example":                {Username: "glob"},
		"https://index.docker.io/v1/":     {Username: "hub"},
		"http://plain.example/v1/library": {Username: "plain"},
	})
	for _, tc := range []struct{ image, want string }{
		{"registry.example/team/app", "team,host"}, // most specific first
		{"registry.example/other/app", "host"},
		{"registry.example:5000/team/app", "port"}, // ports must match
		{"eu.mirror.example/app", "glob"},
		{"a.b.mirror.example/app", ""}, // a glob label matches one label
		{"docker.io/library/busybox", "hub"},
		{"busybox", "hub"},
		{"localhost:5000/x", ""},
		{"plain.example/library/x", "plain"},
		{"unknown.example/x", ""},
	} {
		if got := users(k.Lookup(tc.image)); got != tc.want {
			t.Errorf("Lookup(%s) = %q, want %q", tc.image, got, tc.want)
		}
	}
}

func TestParse(t *testing.T) {
	c, err := ParseConfigJSON([]byte(`{"auths":{"r.example":{"auth":"` + auth("u", "p:w") + `"},"s.example":{"username":"x","password":"y"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if c["r.example"].Username != "u" || c["r.example"].Password != "p:w" || c["s.example"].Password != "y" {
		t.Errorf("%+v", c)
	}
	raw := strings.TrimRight(auth("u", "p"), "=")
	if c, err := ParseDockercfg([]byte(`{"r.example":{"auth":"` + raw + `","email":"e"}}`)); err != nil || c["r.example"].Password != "p" {
		t.Errorf("unpadded auth: %+v %v", c, err)
	}
	if _, err := ParseConfigJSON([]byte(`{"auths":{"r":{"auth":"` + base64.StdEncoding.EncodeToString([]byte("nocolon")) + `"}}}`)); err == nil {
		t.Errorf("auth without ':' accepted")
	}
}

type secrets map[string]*v1.Secret

func (s secrets) GetSecret(_ context.Context, ns, name string) (*v1.Secret, error) {
	if o, ok := s[ns+"/"+name]; ok {
		return o, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}

func TestForPull(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"auths":{"registry.example":{"auth":"`+auth("node", "np")+`"}}}`), 0o600)
	node := NewNodeKeyring(dir)
	if _, src := node.Keyring(); src != filepath.Join(dir, "config.json") {
		t.Errorf("node keyring from %q", src)
	}
	sec := secrets{
		"ns/json": {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "json", UID: "uid-json"}, Type: v1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{v1.DockerConfigJsonKey: []byte(`{"auths":{"registry.example":{"username":"pod","password":"pp"}}}`)}},
		"ns/cfg": {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cfg"}, Type: v1.SecretTypeDockercfg,
			Data: map[string][]byte{v1.DockerConfigKey: []byte(`{"other.example":{"username":"legacy","password":"lp"}}`)}},
		"ns/opaque": {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "opaque"}, Type: v1.SecretTypeOpaque},
	}
	rec := record.NewFakeRecorder(10)
	f := ForPull(sec, node, rec)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: v1.PodSpec{
		ImagePullSecrets: []v1.LocalObjectReference{{Name: "json"}, {Name: "cfg"}, {Name: "opaque"}, {Name: "gone"}, {Name: ""}}}}
	got := f(context.Background(), pod, "registry.example/app:1.0")
	if len(got) != 2 || got[0].Auth.Username != "pod" || got[1].Auth.Username != "node" {
		t.Errorf("registry.example: %v (pod secret first, then the node's)", got)
	}
	if got := f(context.Background(), pod, "other.example/app@sha256:"+strings.Repeat("a", 64)); len(got) != 1 || got[0].Auth.Password != "lp" {
		t.Errorf("other.example: %v", got)
	}
	if got := f(context.Background(), pod, "busybox"); len(got) != 0 {
		t.Errorf("anonymous expected for an unmatched registry: %v", got)
	}
	select {
	case e := <-rec.Events:
		if !strings.Contains(e, EventFailedToRetrieveImagePullSecret) || !strings.Contains(e, "(gone)") {
			t.Errorf("event %q", e)
		}
	default:
		t.Errorf("no event for the missing pull secret")
	}
}

// The hash a pull record keeps of a login must be upstream's, or a node
// handed over between the kubelets would re-verify every image (or, worse,
// never match). The vectors are what upstream 1.37.2's keyring computes
// for the same secrets (its own test vectors, and a login whose "auth"
// field wins over username and password).
func TestHashIsUpstreams(t *testing.T) {
	for _, tc := range []struct {
		config, image, want string
	}{
		{`{"auths":{"test.registry.io":{"auth":"dXNlcjpwYXNzd29yZA=="}}}`, "test.registry.io/app", "a55436fc140d516560d072c5fe8700385ce9f41629abf65c1edcbcb39fac691d"},
		{`{"auths":{"r.example":{"username":"ada","password":"smash","email":"ada@example.com"}}}`, "r.example/app", "353258b53f5e9a57b059eab3f05312fc35bbeb874f08ce101e7bf0bf46977423"},
		{`{"auths":{"r.example/team":{"username":"grace","password":"squash"}}}`, "r.example/team/app", "49b8d35fab37ffe85750444e18c422109fb1f624f01189952b2e2d30a03a6a3b"},
		{`{"auths":{"r.example":{"username":"u","password":"p","auth":"` + auth("x", "y") + `"}}}`, "r.example/app", "d1bf6b82e6fb2627651339e5ed089009e3e0d0aee198eb4c8cf0de07a4572e85"},
	} {
		c, err := ParseConfigJSON([]byte(tc.config))
		if err != nil {
			t.Fatal(err)
		}
		k := &Keyring{}
		k.Add(c)
		got := k.Lookup(tc.image)
		if len(got) != 1 || Hash(got[0]) != tc.want {
			t.Errorf("%s: %v, hash want %s", tc.config, got, tc.want)
		}
	}
}

// Each login says where it came from: a pull secret's namespace, name,
// UID and the login's hash, or nothing for the node's own, which any pod
// may use.
func TestForPullTellsTheSource(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"auths":{"registry.example":{"auth":"`+auth("node", "np")+`"}}}`), 0o600)
	sec := secrets{
		"ns/a": {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "uid-a"}, Type: v1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{v1.DockerConfigJsonKey: []byte(`{"auths":{"registry.example":{"username":"pod","password":"pp"}}}`)}},
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: v1.PodSpec{ImagePullSecrets: []v1.LocalObjectReference{{Name: "a"}}}}
	got := ForPull(sec, NewNodeKeyring(dir), nil)(context.Background(), pod, "registry.example/app:1.0")
	if len(got) != 2 {
		t.Fatalf("%v", got)
	}
	s := got[0].Secret
	if s == nil || s.Namespace != "ns" || s.Name != "a" || s.UID != "uid-a" || s.CredentialHash != Hash(Entry{Username: "pod", Password: "pp"}) || s.CredentialHash == "" {
		t.Errorf("pod secret's login: %+v", s)
	}
	if got[1].Secret != nil || got[1].Auth.Username != "node" {
		t.Errorf("the node's login has a source: %+v", got[1])
	}
}
