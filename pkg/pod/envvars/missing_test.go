package envvars

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/gokubelet/kubelet/pkg/errdefs"
)

func TestMissingRefs(t *testing.T) {
	src := Sources{
		ConfigMaps: map[string]*v1.ConfigMap{"cfg": {Data: map[string]string{"a": "1"}}, "gone": nil},
		Secrets:    map[string]*v1.Secret{"sec": {Data: map[string][]byte{"p": []byte("x")}}},
	}
	cmRef := func(name string, opt *bool) *v1.ConfigMapEnvSource {
		return &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: name}, Optional: opt}
	}
	secRef := func(name string, opt *bool) *v1.SecretEnvSource {
		return &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: name}, Optional: opt}
	}
	cmKey := func(env, name, key string, opt *bool) v1.EnvVar {
		return v1.EnvVar{Name: env, ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: name}, Key: key, Optional: opt}}}
	}
	secKey := func(env, name, key string, opt *bool) v1.EnvVar {
		return v1.EnvVar{Name: env, ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: name}, Key: key, Optional: opt}}}
	}
	tests := []struct {
		name string
		c    v1.Container
		want []Missing
	}{
		{name: "nothing referenced", c: v1.Container{Name: "c", Env: []v1.EnvVar{{Name: "A", Value: "x"}}}},
		{name: "present objects and keys", c: v1.Container{Name: "c",
			EnvFrom: []v1.EnvFromSource{{ConfigMapRef: cmRef("cfg", nil)}, {SecretRef: secRef("sec", nil)}},
			Env:     []v1.EnvVar{cmKey("A", "cfg", "a", nil), secKey("P", "sec", "p", nil)}}},
		{name: "missing envFrom sources, optional or not", c: v1.Container{Name: "c",
			EnvFrom: []v1.EnvFromSource{{ConfigMapRef: cmRef("gone", ptr.To(true))}, {SecretRef: secRef("nosec", ptr.To(false))}}},
			want: []Missing{
				{Kind: "ConfigMap", Name: "gone", Optional: true, Container: "c"},
				{Kind: "Secret", Name: "nosec", Container: "c"},
			}},
		{name: "missing objects and keys of env", c: v1.Container{Name: "c", Env: []v1.EnvVar{
			cmKey("A", "gone", "a", ptr.To(true)),
			cmKey("B", "cfg", "b", nil),
			secKey("C", "nosec", "p", nil),
			secKey("D", "sec", "q", ptr.To(true)),
		}},
			want: []Missing{
				{Kind: "ConfigMap", Name: "gone", Env: "A", Optional: true, Container: "c"},
				{Kind: "ConfigMap", Name: "cfg", Key: "b", Env: "B", Container: "c"},
				{Kind: "Secret", Name: "nosec", Env: "C", Container: "c"},
				{Kind: "Secret", Name: "sec", Key: "q", Env: "D", Optional: true, Container: "c"},
			}},
		{name: "a literal value wins over valueFrom, as in Resolve", c: v1.Container{Name: "c", Env: []v1.EnvVar{
			{Name: "A", Value: "x", ValueFrom: cmKey("A", "gone", "a", nil).ValueFrom},
		}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := MissingRefs(src, &tt.c)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("MissingRefs = %+v\nwant %+v", got, tt.want)
			}
			// One rule: Resolve fails on a missing reference exactly when
			// MissingRefs lists a mandatory one.
			_, err := Resolve(&v1.Pod{}, &tt.c, Inputs{Sources: src})
			mandatory := false
			for _, m := range got {
				mandatory = mandatory || !m.Optional
			}
			if mandatory != (err != nil && errdefs.IsNotFound(err)) {
				t.Errorf("a mandatory reference is missing: %v, but Resolve returned %v", mandatory, err)
			}
		})
	}
}
