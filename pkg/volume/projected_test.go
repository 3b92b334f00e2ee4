package volume

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// defaultTokenVolume is the volume the ServiceAccount admission plugin
// adds to every pod.
func defaultTokenVolume() v1.Volume {
	return vol("kube-api-access-x", v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{DefaultMode: ptr.To[int32](0o644), Sources: []v1.VolumeProjection{
		{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)}},
		{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []v1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
		{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
	}}})
}

func TestProjectedServiceAccountVolume(t *testing.T) {
	e := newEnv(t)
	e.objects.setCM("kube-root-ca.crt", map[string]string{"ca.crt": "PEM"})
	p := pod("u1", defaultTokenVolume())
	p.Spec.ServiceAccountName = "builder"
	e.setUp(p)
	dir := e.volDir(p, dirProjected, "kube-api-access-x")
	for f, want := range map[string]string{"token": "token-1", "ca.crt": "PEM", "namespace": "ns"} {
		if got := read(t, filepath.Join(dir, f)); got != want {
			t.Errorf("%s = %q, want %q", f, got, want)
		}
	}
	if got := e.tokens.reqs[0]; got != "ns/builder aud=[] exp=3607 bound=Pod/p-u1/u1" {
		t.Errorf("token request %q", got)
	}
	if m := mode(t, filepath.Join(dir, "token")); m.Perm() != 0o644 {
		t.Errorf("token mode %v", m)
	}
	if !isTmpfs(t, dir) {
		t.Error("projected volume not on tmpfs")
	}
	// A refresh takes whatever the token cache returns (here: a new one).
	e.m.refreshPod(context.Background(), p.UID)
	if got := read(t, filepath.Join(dir, "token")); got != "token-2" {
		t.Errorf("token after refresh %q", got)
	}
}

func TestProjectedTokenWithFSGroupAndUser(t *testing.T) {
	e := newEnv(t)
	e.objects.setCM("kube-root-ca.crt", map[string]string{"ca.crt": "PEM"})
	v := defaultTokenVolume()
	v.Projected.Sources[0].ServiceAccountToken.Audience = "vault"
	p := pod("u1", v)
	p.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: ptr.To[int64](2000), RunAsUser: ptr.To[int64](1000)}
	e.setUp(p)
	tok := filepath.Join(e.volDir(p, dirProjected, v.Name), "token")
	if st := statT(t, tok); st.Mode&0o777 != 0o640 || st.Uid != 1000 || st.Gid != 2000 {
		t.Errorf("token mode %o uid %d gid %d, want 0640 1000 2000", st.Mode&0o777, st.Uid, st.Gid)
	}
	if st := statT(t, filepath.Join(e.volDir(p, dirProjected, v.Name), "ca.crt")); st.Mode&0o777 != 0o644 || st.Gid != 2000 {
		t.Errorf("ca.crt mode %o gid %d", st.Mode&0o777, st.Gid)
	}
	if !strings.Contains(e.tokens.reqs[0], "aud=[vault]") {
		t.Errorf("audience: %s", e.tokens.reqs[0])
	}
}

func TestProjectedMergesAndReportsEverySourceFailure(t *testing.T) {
	e := newEnv(t)
	e.objects.setCM("cm", map[string]string{"k": "from-cm", "shared": "cm"})
	e.objects.setSecret("sec", map[string]string{"s": "from-secret", "shared": "secret"})
	v := vol("all", v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
		{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}}},
		{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "sec"}}},
	}}})
	p := pod("u1", v)
	e.setUp(p)
	dir := e.volDir(p, dirProjected, "all")
	if read(t, filepath.Join(dir, "k")) != "from-cm" || read(t, filepath.Join(dir, "s")) != "from-secret" || read(t, filepath.Join(dir, "shared")) != "secret" {
		t.Error("merge: later sources win")
	}
	bad := vol("bad", v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
		{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "nope"}}},
		{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{Path: "b"}},
	}}})
	err := e.m.SetUpPod(context.Background(), pod("u2", bad))
	if err == nil || !strings.Contains(err.Error(), `"nope" not found`) || !strings.Contains(err.Error(), "clusterTrustBundle") {
		t.Errorf("err %v, want both failures", err)
	}
}
