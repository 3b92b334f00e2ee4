package volume

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/gokubelet/kubelet/internal/testing/eventually"
	"github.com/gokubelet/kubelet/internal/testing/testca"
	"github.com/gokubelet/kubelet/pkg/node/objects"
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

func TestProjectedClusterTrustBundles(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = e.m.Start(ctx) }()
	caA, caB := testca.PEM(t, "a"), testca.PEM(t, "b")
	client := fake.NewClientset(
		&certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: "plain"}, Spec: certificatesv1.ClusterTrustBundleSpec{TrustBundle: caA}},
		&certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: "example.com:s:1", Labels: map[string]string{"alive": "true"}},
			Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: "example.com/s", TrustBundle: caB}},
	)
	tb := objects.NewTrustBundles(client, func(name string) {
		e.m.ObjectChanged(objects.Ref{Kind: objects.ClusterTrustBundle, Name: name})
	})
	go func() { _ = tb.Start(ctx) }()
	e.m.opts.TrustBundles = tb

	v := vol("ctb", v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{DefaultMode: ptr.To[int32](0o644), Sources: []v1.VolumeProjection{
		{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{Name: ptr.To("plain"), Path: "by-name.pem"}},
		{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{SignerName: ptr.To("example.com/s"), LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"alive": "true"}}, Path: "by-signer.pem"}},
		{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{Name: ptr.To("absent"), Optional: ptr.To(true), Path: "optional.pem"}},
	}}})
	p := pod("u1", v)
	p.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: ptr.To[int64](2000)}
	e.setUp(p)
	dir := e.volDir(p, dirProjected, "ctb")
	for f, want := range map[string]string{"by-name.pem": caA, "by-signer.pem": caB, "optional.pem": ""} {
		if got := read(t, filepath.Join(dir, f)); got != want {
			t.Errorf("%s = %q, want %q", f, got, want)
		}
	}
	// With an fsGroup the file is the owner's only, its group reading it
	// through the volume's group ownership (0640), as a token.
	if st := statT(t, filepath.Join(dir, "by-name.pem")); st.Mode&0o777 != 0o640 || st.Gid != 2000 {
		t.Errorf("mode %o gid %d, want 0640 and 2000", st.Mode&0o777, st.Gid)
	}

	// A missing bundle that is not optional keeps the pod waiting; its
	// creation resyncs the pod.
	waiting := pod("u2", vol("ctb", v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
		{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{Name: ptr.To("later"), Path: "ca.pem"}},
	}}}))
	if err := e.m.SetUpPod(ctx, waiting); err == nil || !strings.Contains(err.Error(), `"later" not found`) {
		t.Fatalf("err %v, want the missing bundle named", err)
	}
	if _, err := client.CertificatesV1().ClusterTrustBundles().Create(ctx, &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: "later"}, Spec: certificatesv1.ClusterTrustBundleSpec{TrustBundle: caB}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case uid := <-e.resync:
		if uid != waiting.UID {
			t.Errorf("resync of %s", uid)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting pod was not resynced when its bundle appeared")
	}

	// A changed bundle rewrites the volumes of the ready pod. (The fake
	// client keeps resource versions as given; an API server bumps them.)
	caC := testca.PEM(t, "c")
	if _, err := client.CertificatesV1().ClusterTrustBundles().Update(ctx, &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: "plain", ResourceVersion: "2"}, Spec: certificatesv1.ClusterTrustBundleSpec{TrustBundle: caC}}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, "the volume rewritten", func() bool { return readPolled(filepath.Join(dir, "by-name.pem")) == caC })

	// With the gate off, the reason names it.
	e.m.opts.TrustBundles = nil
	if err := e.m.SetUpPod(ctx, pod("u3", v)); err == nil || !strings.Contains(err.Error(), "ClusterTrustBundleProjection") {
		t.Errorf("err %v, want the gate named", err)
	}
}

// fakePodCerts serves a credential per pod once issued[uid] is set.
type fakePodCerts struct {
	mu        sync.Mutex
	issued    map[types.UID]string
	asked     []string
	forgotten []types.UID
}

func (f *fakePodCerts) CredentialBundle(_ context.Context, pod *v1.Pod, volumeName string, sourceIndex int, src *v1.PodCertificateProjection) ([]byte, []byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, fmt.Sprintf("%s/%s/%d/%s", pod.UID, volumeName, sourceIndex, src.SignerName))
	v, ok := f.issued[pod.UID]
	if !ok {
		return nil, nil, errors.New("credential bundle is not issued yet")
	}
	return []byte("KEY-" + v + "\n"), []byte("CHAIN-" + v + "\n"), nil
}

func (f *fakePodCerts) ForgetPod(uid types.UID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.forgotten = append(f.forgotten, uid)
}

func (f *fakePodCerts) issue(uid types.UID, v string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.issued[uid] = v
}

func TestProjectedPodCertificate(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = e.m.Start(ctx) }()
	certs := &fakePodCerts{issued: map[types.UID]string{}}
	e.m.opts.PodCertificates = certs

	v := vol("pc", v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{DefaultMode: ptr.To[int32](0o644), Sources: []v1.VolumeProjection{
		{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}},
		{PodCertificate: &v1.PodCertificateProjection{SignerName: "example.com/s", KeyType: "ED25519", CredentialBundlePath: "bundle.pem", KeyPath: "key.pem", CertificateChainPath: "chain.pem"}},
	}}})
	p := pod("u1", v)
	// Not issued yet: the pod waits with the manager's reason.
	if err := e.m.SetUpPod(ctx, p); err == nil || !strings.Contains(err.Error(), "not issued yet") || !strings.Contains(err.Error(), `"example.com/s"`) {
		t.Fatalf("err %v, want the signer and the wait named", err)
	}
	if len(certs.asked) == 0 || certs.asked[0] != "u1/pc/1/example.com/s" {
		t.Errorf("asked %v, want pod u1, volume pc, source 1", certs.asked)
	}
	// Issued: the manager's notice resyncs the waiting pod.
	certs.issue(p.UID, "1")
	e.m.PodCredentialChanged(p.UID)
	select {
	case uid := <-e.resync:
		if uid != p.UID {
			t.Errorf("resync of %s", uid)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting pod was not resynced when its credential was issued")
	}
	e.setUp(p)
	dir := e.volDir(p, dirProjected, "pc")
	for f, want := range map[string]string{"bundle.pem": "KEY-1\nCHAIN-1\n", "key.pem": "KEY-1\n", "chain.pem": "CHAIN-1\n", "name": "p-u1"} {
		if got := read(t, filepath.Join(dir, f)); got != want {
			t.Errorf("%s = %q, want %q", f, got, want)
		}
	}
	// Renewed: the notice rewrites the ready pod's volume.
	certs.issue(p.UID, "2")
	e.m.PodCredentialChanged(p.UID)
	eventually.True(t, "the volume rewritten", func() bool { return readPolled(filepath.Join(dir, "key.pem")) == "KEY-2\n" })
	// Torn down: the manager forgets the pod.
	if err := e.m.TearDownPod(ctx, p.UID); err != nil {
		t.Fatal(err)
	}
	if len(certs.forgotten) != 1 || certs.forgotten[0] != p.UID {
		t.Errorf("forgotten %v, want u1", certs.forgotten)
	}
	// With the gate off, the reason names it.
	e.m.opts.PodCertificates = nil
	if err := e.m.SetUpPod(ctx, pod("u3", v)); err == nil || !strings.Contains(err.Error(), "PodCertificateRequest") {
		t.Errorf("err %v, want the gate named", err)
	}
}
