package pullrecords

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gokubelet/kubelet/pkg/runtime/images/pullverify"
)

var ctx = context.Background()

func newManager(t *testing.T, root string, policy kubeletv1beta1.ImagePullCredentialsVerificationPolicy) (*Manager, *clocktesting.FakeClock) {
	t.Helper()
	p, err := pullverify.NewPolicy(policy, nil)
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	return NewManager(open(t, root), p, clk), clk
}

func podWith(s ...kubeletv1beta1.ImagePullSecret) func() pullverify.PodCredentials {
	return func() pullverify.PodCredentials { return pullverify.PodCredentials{Secrets: s} }
}

var (
	secretA = kubeletv1beta1.ImagePullSecret{Namespace: "a", Name: "pull", UID: "uid-a", CredentialHash: "hash-a"}
	secretB = kubeletv1beta1.ImagePullSecret{Namespace: "b", Name: "pull", UID: "uid-b", CredentialHash: "hash-b"}
	nobody  = podWith()
)

// The pull cycle: an intent while the pull runs (the image then counts as
// pulled by the kubelet), a pulled record with the login once it
// succeeds, the intent gone; a failed pull leaves no intent either.
func TestPullCycle(t *testing.T) {
	root := t.TempDir()
	m, _ := newManager(t, root, kubeletv1beta1.NeverVerifyPreloadedImages)
	const img, ref = "registry.example/app:1.0", "sha256:app"
	if m.MustPull(ctx, img, ref, nobody) {
		t.Fatalf("a preloaded image needs verification")
	}
	must(t, m.RecordPullIntent(ctx, img))
	must(t, m.RecordPullIntent(ctx, img)) // a second pod pulls it too
	if ok, _ := m.store.IntentExists(img); !ok {
		t.Fatalf("no intent during the pull")
	}
	if !m.MustPull(ctx, img, ref, nobody) {
		t.Errorf("while a pull is under way the image is not preloaded")
	}
	m.RecordPullFailed(ctx, img)
	if ok, _ := m.store.IntentExists(img); !ok {
		t.Fatalf("intent removed while another pull of the image is under way")
	}
	m.RecordPulled(ctx, img, ref, pullverify.PulledWith(&secretA))
	if ok, _ := m.store.IntentExists(img); ok {
		t.Errorf("intent left after the last pull ended")
	}
	rec, _, err := m.store.GetPulled(ref)
	if err != nil || len(rec.CredentialMapping["registry.example/app"].KubernetesSecrets) != 1 {
		t.Fatalf("record %+v %v", rec, err)
	}
	if m.MustPull(ctx, img, ref, podWith(secretA)) {
		t.Errorf("the pod holding the secret must pull")
	}
	if !m.MustPull(ctx, img, ref, podWith(secretB)) {
		t.Errorf("a pod with another secret may use the image")
	}
	if !m.MustPull(ctx, img, ref, nobody) {
		t.Errorf("a pod without secrets may use the image")
	}

	// A failed pull of a new image leaves nothing behind.
	must(t, m.RecordPullIntent(ctx, "registry.example/other:1"))
	m.RecordPullFailed(ctx, "registry.example/other:1")
	if n, p, _ := m.store.Count(); n != 0 || p != 1 {
		t.Errorf("after a failed pull: %d intents, %d records", n, p)
	}
}

// A pod whose secret holds the recorded login under another name is let
// through, and the record learns that secret.
func TestMustPullLearns(t *testing.T) {
	m, clk := newManager(t, t.TempDir(), kubeletv1beta1.NeverVerifyPreloadedImages)
	const img, ref = "registry.example/app:1.0", "sha256:app"
	must(t, m.RecordPullIntent(ctx, img))
	m.RecordPulled(ctx, img, ref, pullverify.PulledWith(&secretA))
	copyOfA := secretA
	copyOfA.Namespace, copyOfA.UID = "c", "uid-c"
	clk.Step(time.Minute)
	if m.MustPull(ctx, img, ref, podWith(copyOfA)) {
		t.Fatalf("the same login under another secret must pull")
	}
	rec, _, _ := m.store.GetPulled(ref)
	got := rec.CredentialMapping["registry.example/app"].KubernetesSecrets
	if len(got) != 2 || got[0].Namespace != "a" || got[1].Namespace != "c" {
		t.Errorf("record after the match: %+v", got)
	}
	if !rec.LastUpdatedTime.Time.Equal(clk.Now()) {
		t.Errorf("lastUpdatedTime %v, want %v", rec.LastUpdatedTime, clk.Now())
	}
}

// A record that cannot be read means "pull", whatever the policy (as
// upstream), and a successful pull replaces it.
func TestUnreadableRecordMeansPull(t *testing.T) {
	root := t.TempDir()
	m, _ := newManager(t, root, kubeletv1beta1.NeverVerify)
	const img, ref = "registry.example/app:1.0", "sha256:app"
	path := filepath.Join(root, DirName, "pulled", FileName(ref))
	must(t, os.WriteFile(path, []byte(`{"kind":"ImagePulledRecord",`), 0o600))
	if !m.MustPull(ctx, img, ref, nobody) {
		t.Errorf("an unreadable record let a pod through")
	}
	must(t, m.RecordPullIntent(ctx, img))
	m.RecordPulled(ctx, img, ref, pullverify.PulledWith(nil))
	rec, _, err := m.store.GetPulled(ref)
	if err != nil || !rec.CredentialMapping["registry.example/app"].NodePodsAccessible {
		t.Errorf("record after the pull: %+v %v", rec, err)
	}
	// An unreadable intent, likewise.
	must(t, os.WriteFile(filepath.Join(root, DirName, "pulling", FileName("x:1")), []byte(`nope`), 0o600))
	if !m.MustPull(ctx, "x:1", "sha256:x", nobody) {
		t.Errorf("an unreadable intent let a pod through")
	}
}

// After a restart, an intent whose image the runtime has becomes a
// record without credentials (every pod must show its own); an intent
// whose image is absent stays and keeps the image "pulled by the
// kubelet".
func TestRecover(t *testing.T) {
	root := t.TempDir()
	digest := "registry.example/app@sha256:" + strings.Repeat("d", 64)
	{
		s := open(t, root)
		for _, img := range []string{"registry.example/app:1.0", digest, "registry.example/gone:1", "busybox"} {
			must(t, s.WriteIntent(img))
		}
	}
	m, _ := newManager(t, root, kubeletv1beta1.NeverVerifyPreloadedImages)
	m.Recover(ctx, []*runtimeapi.Image{
		{Id: "sha256:app", RepoTags: []string{"registry.example/app:1.0"}, RepoDigests: []string{digest}},
		// The runtime names Docker Hub images in full: "busybox" does not
		// match, as upstream.
		{Id: "sha256:busybox", RepoTags: []string{"docker.io/library/busybox:latest"}},
	})
	rec, exists, err := m.store.GetPulled("sha256:app")
	if !exists || err != nil || len(rec.CredentialMapping) != 0 {
		t.Fatalf("recovered record: %+v %v %v", rec, exists, err)
	}
	for img, want := range map[string]bool{"registry.example/app:1.0": false, digest: false, "registry.example/gone:1": true, "busybox": true} {
		if ok, _ := m.store.IntentExists(img); ok != want {
			t.Errorf("intent for %s: %v, want %v", img, ok, want)
		}
	}
	if !m.MustPull(ctx, "registry.example/app:1.0", "sha256:app", podWith(secretA)) {
		t.Errorf("a recovered image let a pod through without a pull")
	}
	if !m.MustPull(ctx, "registry.example/gone:1", "sha256:gone", nobody) {
		t.Errorf("an image with a leftover intent counts as preloaded")
	}
	if m.MustPull(ctx, "registry.example/never-pulled:1", "sha256:other", nobody) {
		t.Errorf("a preloaded image needs verification")
	}
}

func TestPrune(t *testing.T) {
	root := t.TempDir()
	m, clk := newManager(t, root, kubeletv1beta1.NeverVerifyPreloadedImages)
	for _, name := range []string{"kept", "gone"} {
		must(t, m.RecordPullIntent(ctx, name+":1"))
		m.RecordPulled(ctx, name+":1", "sha256:"+name, pullverify.PulledWith(nil))
	}
	clk.Step(10 * time.Second)
	listedAt := clk.Now().Add(500 * time.Millisecond)
	clk.Step(900 * time.Millisecond)
	// Written during the listing, in the same second (the record keeps
	// whole seconds): kept although the listing lacks it.
	must(t, m.RecordPullIntent(ctx, "new:1"))
	m.RecordPulled(ctx, "new:1", "sha256:new", pullverify.PulledWith(nil))
	m.Prune(ctx, []string{"sha256:kept"}, listedAt)
	for ref, want := range map[string]bool{"sha256:kept": true, "sha256:gone": false, "sha256:new": true} {
		if _, exists, _ := m.store.GetPulled(ref); exists != want {
			t.Errorf("%s: exists %v, want %v", ref, exists, want)
		}
	}
}

// The directories exist as soon as the store opens (the node e2e suite
// waits for <root-dir>/image_manager after restarting the kubelet).
func TestOpenMakesDirectories(t *testing.T) {
	root := t.TempDir()
	if _, err := Open(klog.Background(), root); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"pulling", "pulled"} {
		if fi, err := os.Stat(filepath.Join(root, DirName, d)); err != nil || !fi.IsDir() {
			t.Errorf("%s: %v", d, err)
		}
	}
}
