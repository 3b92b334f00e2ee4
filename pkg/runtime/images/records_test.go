package images

import (
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"
	"k8s.io/klog/v2"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/gokubelet/kubelet/pkg/runtime/credentials"
	"github.com/gokubelet/kubelet/pkg/runtime/images/pullrecords"
	"github.com/gokubelet/kubelet/pkg/runtime/images/pullverify"
)

// These tests run the puller with real pull records (a temporary root
// directory) and real pull credentials (pull secrets and the node's
// config.json), over a fake registry where some images need a login.

const (
	private = "registry.example/private:1.0"
	public  = "registry.example/public:1.0"
)

// registry is the CRI image service: a private image pulls only with the
// right login.
type registry struct {
	*critest.FakeImageService
	logins map[string]string // image -> "user:password" it needs

	mu    sync.Mutex
	pulls []string // "image as user" ("" user: anonymous)
	// during, when set, runs inside each pull.
	during func()
}

func newRegistry() *registry {
	return &registry{FakeImageService: critest.NewFakeImageService(), logins: map[string]string{private: "alice:secret"}}
}

func (r *registry) PullImage(ctx context.Context, spec *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sb *runtimeapi.PodSandboxConfig) (string, error) {
	user := ""
	if auth != nil {
		user = auth.Username
	}
	r.mu.Lock()
	r.pulls = append(r.pulls, spec.Image+" as "+user)
	during := r.during
	r.mu.Unlock()
	if during != nil {
		during()
	}
	if want, ok := r.logins[spec.Image]; ok && (auth == nil || auth.Username+":"+auth.Password != want) {
		return "", errors.New("unauthorized: authentication required")
	}
	return r.FakeImageService.PullImage(ctx, spec, auth, sb)
}

func (r *registry) takePulls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.pulls
	r.pulls = nil
	return out
}

type secretStore map[string]*v1.Secret

func (s secretStore) GetSecret(_ context.Context, ns, name string) (*v1.Secret, error) {
	if o, ok := s[ns+"/"+name]; ok {
		return o, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}

func (s secretStore) add(ns, name, uid, user, password string) {
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	s[ns+"/"+name] = &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)}, Type: v1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{v1.DockerConfigJsonKey: []byte(`{"auths":{"registry.example":{"auth":"` + auth + `"}}}`)}}
}

// node is one kubelet: its root directory, records, secrets and puller.
type node struct {
	t       *testing.T
	root    string
	reg     *registry
	secrets secretStore
	records *pullrecords.Manager
	puller  *Puller
	events  *record.FakeRecorder
}

func newNode(t *testing.T, root string, reg *registry, policy kubeletv1beta1.ImagePullCredentialsVerificationPolicy) *node {
	t.Helper()
	n := &node{t: t, root: root, reg: reg, secrets: secretStore{}, events: record.NewFakeRecorder(100)}
	if policy != "" {
		store, err := pullrecords.Open(klog.Background(), root)
		if err != nil {
			t.Fatal(err)
		}
		p, err := pullverify.NewPolicy(policy, nil)
		if err != nil {
			t.Fatal(err)
		}
		n.records = pullrecords.NewManager(store, p, nil)
		imgs, err := reg.ListImages(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		n.records.Recover(context.Background(), imgs)
	}
	n.puller = NewPuller(Options{Service: reg, Recorder: n.events, Serialize: true, Records: n.records,
		Credentials: credentials.ForPull(n.secrets, credentials.NewNodeKeyring(root), nil)})
	return n
}

// ensure runs EnsureImage for a pod of namespace ns with the named pull
// secrets and returns the waiting reason ("" on success).
func (n *node) ensure(ns, image string, policy v1.PullPolicy, pullSecrets ...string) string {
	n.t.Helper()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p", UID: types.UID(ns + "-" + strings.Join(pullSecrets, "-") + "-" + string(policy))}}
	for _, s := range pullSecrets {
		pod.Spec.ImagePullSecrets = append(pod.Spec.ImagePullSecrets, v1.LocalObjectReference{Name: s})
	}
	ref, err := n.puller.EnsureImage(context.Background(), pod, &v1.Container{Name: "c", Image: image, ImagePullPolicy: policy}, nil)
	if err == nil {
		if ref == "" {
			n.t.Fatalf("no image ref")
		}
		return ""
	}
	e, ok := AsError(err)
	if !ok {
		n.t.Fatalf("error without a reason: %v", err)
	}
	return e.Reason
}

func (n *node) sawEvent(substr string) bool {
	for {
		select {
		case e := <-n.events.Events:
			if strings.Contains(e, substr) {
				return true
			}
		default:
			return false
		}
	}
}

func (n *node) record(imageRef string) *kubeletv1beta1.ImagePulledRecord {
	n.t.Helper()
	b, err := os.ReadFile(filepath.Join(n.root, pullrecords.DirName, "pulled", pullrecords.FileName(imageRef)))
	if err != nil {
		return nil
	}
	rec, _, err := pullrecords.DecodePulled(b)
	if err != nil {
		n.t.Fatal(err)
	}
	return rec
}

func (n *node) intents() []string {
	entries, _ := os.ReadDir(filepath.Join(n.root, pullrecords.DirName, "pulling"))
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

func equal(a, b []string) bool { return strings.Join(a, "|") == strings.Join(b, "|") }

// A private image pulled with pod A's secret is not handed to pods
// without that login: IfNotPresent makes them pull with their own (and
// fail here), Never fails as if the image were absent. The same secret,
// or another secret holding the same login, is let through without a
// pull.
func TestPrivateImageNeedsThePodsCredentials(t *testing.T) {
	n := newNode(t, t.TempDir(), newRegistry(), kubeletv1beta1.NeverVerifyPreloadedImages)
	n.secrets.add("team-a", "pull", "uid-a", "alice", "secret")
	n.secrets.add("team-c", "copy", "uid-c", "alice", "secret")
	n.secrets.add("team-d", "other", "uid-d", "bob", "guess")

	if r := n.ensure("team-a", private, v1.PullIfNotPresent, "pull"); r != "" {
		t.Fatalf("pod A: %s", r)
	}
	if got := n.reg.takePulls(); !equal(got, []string{private + " as alice"}) {
		t.Errorf("pod A's pulls: %v", got)
	}
	rec := n.record(private)
	if rec == nil {
		t.Fatal("no pulled record after pod A's pull")
	}
	got := rec.CredentialMapping["registry.example/private"].KubernetesSecrets
	if len(got) != 1 || got[0].Namespace != "team-a" || got[0].Name != "pull" || got[0].UID != "uid-a" || got[0].CredentialHash != credentials.Hash(credentials.Entry{Username: "alice", Password: "secret"}) {
		t.Errorf("record of pod A's pull: %+v", got)
	}
	if len(n.intents()) != 0 {
		t.Errorf("intent left after the pull: %v", n.intents())
	}

	// Pod B, no pull secret: IfNotPresent pulls (anonymously) and fails.
	if r := n.ensure("team-b", private, v1.PullIfNotPresent); r != ReasonErrImagePull {
		t.Errorf("pod B, IfNotPresent: %q, want %s", r, ReasonErrImagePull)
	}
	if got := n.reg.takePulls(); !equal(got, []string{private + " as "}) {
		t.Errorf("pod B's pulls: %v", got)
	}
	if len(n.intents()) != 0 {
		t.Errorf("intent left after a failed pull: %v", n.intents())
	}
	// Pod B with Never: as if absent, no pull.
	if r := n.ensure("team-b", private, v1.PullNever); r != ReasonErrImageNeverPull {
		t.Errorf("pod B, Never: %q, want %s", r, ReasonErrImageNeverPull)
	}
	if !n.sawEvent(`Container image "` + private + `" is not present with pull policy of Never`) {
		t.Errorf("no ErrImageNeverPull event with upstream's message")
	}
	// Pod D, another login: pulls with it and fails.
	if r := n.ensure("team-d", private, v1.PullIfNotPresent, "other"); r != ReasonErrImagePull {
		t.Errorf("pod D: %q", r)
	}
	if got := n.reg.takePulls(); !equal(got, []string{private + " as bob"}) {
		t.Errorf("pod D's pulls: %v", got)
	}

	// Pod A again (Never works too), and pod C whose secret holds the same
	// login: no pull; the record learns C's secret.
	if r := n.ensure("team-a", private, v1.PullNever, "pull"); r != "" {
		t.Errorf("pod A again: %s", r)
	}
	if !n.sawEvent(`Container image "` + private + `" already present on machine and can be accessed by the pod`) {
		t.Errorf("no Pulled event with upstream's message")
	}
	if r := n.ensure("team-c", private, v1.PullNever, "copy"); r != "" {
		t.Errorf("pod C (same login, another secret): %s", r)
	}
	if got := n.reg.takePulls(); len(got) != 0 {
		t.Errorf("pulls for pods holding the login: %v", got)
	}
	if got := n.record(private).CredentialMapping["registry.example/private"].KubernetesSecrets; len(got) != 2 || got[1].Namespace != "team-c" {
		t.Errorf("record after pod C: %+v", got)
	}
}

// Pulled anonymously, or with the node's own login, an image is for every
// pod on the node.
func TestNodeWidePullsAreForEveryone(t *testing.T) {
	root := t.TempDir()
	auth := base64.StdEncoding.EncodeToString([]byte("alice:secret"))
	if err := os.WriteFile(filepath.Join(root, "config.json"), []byte(`{"auths":{"registry.example":{"auth":"`+auth+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	n := newNode(t, root, newRegistry(), kubeletv1beta1.AlwaysVerify)
	n.secrets.add("team-a", "pull", "uid-a", "someone", "else")
	if r := n.ensure("team-x", private, v1.PullIfNotPresent); r != "" {
		t.Fatalf("pull with the node's login: %s", r)
	}
	if r := n.ensure("team-x", public, v1.PullIfNotPresent); r != "" {
		t.Fatalf("anonymous pull: %s", r)
	}
	for _, img := range []string{private, public} {
		rec := n.record(img)
		if rec == nil || !rec.CredentialMapping[strings.TrimSuffix(img, ":1.0")].NodePodsAccessible {
			t.Errorf("%s: record %+v, want nodePodsAccessible", img, rec)
		}
	}
	n.reg.takePulls()
	for _, img := range []string{private, public} {
		if r := n.ensure("team-b", img, v1.PullNever); r != "" {
			t.Errorf("%s, a pod without secrets, Never: %s", img, r)
		}
		if r := n.ensure("team-a", img, v1.PullIfNotPresent, "pull"); r != "" {
			t.Errorf("%s, a pod with an unrelated secret: %s", img, r)
		}
	}
	if got := n.reg.takePulls(); len(got) != 0 {
		t.Errorf("pulls: %v", got)
	}
}

// Images the kubelet did not pull (no record, no intent) are preloaded:
// NeverVerifyPreloadedImages lets every pod use them; AlwaysVerify makes
// each pod pull.
func TestPreloadedImages(t *testing.T) {
	for _, tc := range []struct {
		policy      kubeletv1beta1.ImagePullCredentialsVerificationPolicy
		ifNotAbsent string // reason for IfNotPresent
		never       string // reason for Never
		pulls       int
	}{
		{kubeletv1beta1.NeverVerifyPreloadedImages, "", "", 0},
		{kubeletv1beta1.NeverVerify, "", "", 0},
		{kubeletv1beta1.AlwaysVerify, ReasonErrImagePull, ReasonErrImageNeverPull, 1},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			reg := newRegistry()
			reg.SetFakeImages([]string{private})
			n := newNode(t, t.TempDir(), reg, tc.policy)
			if r := n.ensure("team-b", private, v1.PullIfNotPresent); r != tc.ifNotAbsent {
				t.Errorf("IfNotPresent: %q, want %q", r, tc.ifNotAbsent)
			}
			if r := n.ensure("team-b", private, v1.PullNever); r != tc.never {
				t.Errorf("Never: %q, want %q", r, tc.never)
			}
			if got := n.reg.takePulls(); len(got) != tc.pulls {
				t.Errorf("pulls %v, want %d", got, tc.pulls)
			}
		})
	}
}

// The intent is on disk while the pull runs, so a pod asking for the
// image meanwhile is not handed it as preloaded.
func TestIntentDuringPull(t *testing.T) {
	reg := newRegistry()
	n := newNode(t, t.TempDir(), reg, kubeletv1beta1.NeverVerifyPreloadedImages)
	n.secrets.add("team-a", "pull", "uid-a", "alice", "secret")
	var during []string
	reg.during = func() { during = n.intents() }
	if r := n.ensure("team-a", private, v1.PullIfNotPresent, "pull"); r != "" {
		t.Fatal(r)
	}
	if !equal(during, []string{pullrecords.FileName(private)}) {
		t.Errorf("intents during the pull: %v", during)
	}
	if len(n.intents()) != 0 {
		t.Errorf("intents after: %v", n.intents())
	}
}

// A kubelet stopped during a pull: the intent survives; at the next start
// the image, now present, gets a record without credentials, so even the
// pod whose secret pulled it must pull again (which then records its
// secret), and a pod without one cannot use it. Without the intent the
// image would have been preloaded.
func TestRestartDuringPull(t *testing.T) {
	root := t.TempDir()
	reg := newRegistry()
	n := newNode(t, root, reg, kubeletv1beta1.NeverVerifyPreloadedImages)
	n.secrets.add("team-a", "pull", "uid-a", "alice", "secret")
	// The pull completes in the runtime but the kubelet dies before it
	// records it.
	if err := n.records.RecordPullIntent(context.Background(), private); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.FakeImageService.PullImage(context.Background(), &runtimeapi.ImageSpec{Image: private}, nil, nil); err != nil {
		t.Fatal(err)
	}

	n2 := newNode(t, root, reg, kubeletv1beta1.NeverVerifyPreloadedImages)
	n2.secrets = n.secrets
	n2.puller.creds = credentials.ForPull(n2.secrets, credentials.NewNodeKeyring(root), nil)
	if len(n2.intents()) != 0 {
		t.Errorf("intent not recovered: %v", n2.intents())
	}
	if rec := n2.record(private); rec == nil || len(rec.CredentialMapping) != 0 {
		t.Fatalf("recovered record %+v", rec)
	}
	if r := n2.ensure("team-b", private, v1.PullNever); r != ReasonErrImageNeverPull {
		t.Errorf("a pod without the secret after the restart: %q", r)
	}
	if r := n2.ensure("team-a", private, v1.PullIfNotPresent, "pull"); r != "" {
		t.Errorf("the pod with the secret: %q", r)
	}
	if got := reg.takePulls(); !equal(got, []string{private + " as alice"}) {
		t.Errorf("pulls after the restart: %v", got)
	}
	if got := n2.record(private).CredentialMapping["registry.example/private"].KubernetesSecrets; len(got) != 1 || got[0].UID != "uid-a" {
		t.Errorf("record after the pull: %+v", got)
	}
}

// With the gate off (no records) a present image is every pod's, and
// nothing is written.
func TestWithoutRecords(t *testing.T) {
	root := t.TempDir()
	reg := newRegistry()
	reg.SetFakeImages([]string{private})
	n := newNode(t, root, reg, "")
	if r := n.ensure("team-b", private, v1.PullNever); r != "" {
		t.Errorf("Never: %q", r)
	}
	if !n.sawEvent(`Container image "` + private + `" already present on machine`) {
		t.Errorf("no Pulled event")
	}
	if _, err := os.Stat(filepath.Join(root, pullrecords.DirName)); err == nil {
		t.Errorf("records written with the feature off")
	}
}

// The node's own login does not stand in for a pod's pull secret when the
// image was pulled with a secret: the pod pulls (with the node's login,
// which succeeds), and from then on the image is every pod's.
func TestNodeLoginIsNotAPodSecret(t *testing.T) {
	root := t.TempDir()
	auth := base64.StdEncoding.EncodeToString([]byte("alice:secret"))
	if err := os.WriteFile(filepath.Join(root, "config.json"), []byte(`{"auths":{"registry.example":{"auth":"`+auth+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	n := newNode(t, root, newRegistry(), kubeletv1beta1.NeverVerifyPreloadedImages)
	n.secrets.add("team-a", "pull", "uid-a", "alice", "secret")
	if r := n.ensure("team-a", private, v1.PullIfNotPresent, "pull"); r != "" {
		t.Fatal(r)
	}
	if r := n.ensure("team-b", private, v1.PullNever); r != ReasonErrImageNeverPull {
		t.Errorf("a pod with only the node's login, Never: %q", r)
	}
	n.reg.takePulls()
	if r := n.ensure("team-b", private, v1.PullIfNotPresent); r != "" {
		t.Errorf("a pod with only the node's login, IfNotPresent: %q", r)
	}
	if got := n.reg.takePulls(); !equal(got, []string{private + " as alice"}) {
		t.Errorf("pulls: %v", got)
	}
	if rec := n.record(private); !rec.CredentialMapping["registry.example/private"].NodePodsAccessible {
		t.Errorf("record after the node-login pull: %+v", rec)
	}
	if r := n.ensure("team-z", private, v1.PullNever); r != "" {
		t.Errorf("any pod afterwards: %q", r)
	}
}
