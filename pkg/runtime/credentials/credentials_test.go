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
		"ns/json": {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "json"}, Type: v1.SecretTypeDockerConfigJson,
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
	if len(got) != 2 || got[0].Username != "pod" || got[1].Username != "node" {
		t.Errorf("registry.example: %v (pod secret first, then the node's)", got)
	}
	if got := f(context.Background(), pod, "other.example/app@sha256:"+strings.Repeat("a", 64)); len(got) != 1 || got[0].Password != "lp" {
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
