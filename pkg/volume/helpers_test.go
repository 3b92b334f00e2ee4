package volume

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	"github.com/gokubelet/kubelet/pkg/volume/hostfs"
)

// fakeObjects serves ConfigMaps and Secrets from maps.
type fakeObjects struct {
	mu      sync.Mutex
	cms     map[string]*v1.ConfigMap
	secrets map[string]*v1.Secret
	err     error
}

func (f *fakeObjects) GetConfigMap(_ context.Context, ns, name string) (*v1.ConfigMap, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	if cm, ok := f.cms[ns+"/"+name]; ok {
		return cm.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(v1.Resource("configmaps"), name)
}

func (f *fakeObjects) GetSecret(_ context.Context, ns, name string) (*v1.Secret, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	if s, ok := f.secrets[ns+"/"+name]; ok {
		return s.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(v1.Resource("secrets"), name)
}

func (f *fakeObjects) setCM(name string, data map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cms["ns/"+name] = &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Data: data}
}

func (f *fakeObjects) setSecret(name string, data map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	f.secrets["ns/"+name] = s
}

// fakeTokens issues numbered tokens and records the requests.
type fakeTokens struct {
	mu   sync.Mutex
	n    int
	reqs []string
}

func (f *fakeTokens) GetServiceAccountToken(_ context.Context, ns, name string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	ref := tr.Spec.BoundObjectRef
	f.reqs = append(f.reqs, fmt.Sprintf("%s/%s aud=%v exp=%d bound=%s/%s/%s", ns, name, tr.Spec.Audiences, *tr.Spec.ExpirationSeconds, ref.Kind, ref.Name, ref.UID))
	out := tr.DeepCopy()
	out.Status.Token = fmt.Sprintf("token-%d", f.n)
	return out, nil
}

// fakeClaims serves claims and volumes from maps.
type fakeClaims struct {
	pvcs map[string]*v1.PersistentVolumeClaim
	pvs  map[string]*v1.PersistentVolume
}

func (f *fakeClaims) GetPersistentVolumeClaim(_ context.Context, ns, name string) (*v1.PersistentVolumeClaim, error) {
	if c, ok := f.pvcs[ns+"/"+name]; ok {
		return c.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(v1.Resource("persistentvolumeclaims"), name)
}

func (f *fakeClaims) GetPersistentVolume(_ context.Context, name string) (*v1.PersistentVolume, error) {
	if p, ok := f.pvs[name]; ok {
		return p.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(v1.Resource("persistentvolumes"), name)
}

type env struct {
	t       *testing.T
	root    string
	m       *Manager
	objects *fakeObjects
	tokens  *fakeTokens
	claims  *fakeClaims
	rec     *record.FakeRecorder
	resync  chan types.UID
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, root: t.TempDir(),
		objects: &fakeObjects{cms: map[string]*v1.ConfigMap{}, secrets: map[string]*v1.Secret{}},
		tokens:  &fakeTokens{},
		claims:  &fakeClaims{pvcs: map[string]*v1.PersistentVolumeClaim{}, pvs: map[string]*v1.PersistentVolume{}},
		rec:     record.NewFakeRecorder(100),
		resync:  make(chan types.UID, 10),
	}
	e.m = New(Options{RootDir: e.root, Objects: e.objects, Tokens: e.tokens, Claims: e.claims, Recorder: e.rec,
		NodeAllocatable: func() v1.ResourceList {
			return v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("1Gi")}
		},
		Resync: func(uid types.UID) { e.resync <- uid }})
	t.Cleanup(func() {
		// Never leave a mount behind, whatever the test did.
		hostfs.UnmountAll(e.root)
	})
	return e
}

// pod builds a pod whose one container mounts every volume at /v/<name>.
func pod(uid string, vols ...v1.Volume) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-" + uid, Namespace: "ns", UID: types.UID(uid)},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}, Volumes: vols}}
	for _, v := range vols {
		p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, v1.VolumeMount{Name: v.Name, MountPath: "/v/" + v.Name})
	}
	return p
}

func vol(name string, src v1.VolumeSource) v1.Volume { return v1.Volume{Name: name, VolumeSource: src} }

func (e *env) setUp(p *v1.Pod) {
	e.t.Helper()
	if err := e.m.SetUpPod(context.Background(), p); err != nil {
		e.t.Fatalf("SetUpPod: %v", err)
	}
}

func (e *env) volDir(p *v1.Pod, plugin, name string) string {
	return filepath.Join(e.root, "pods", string(p.UID), "volumes", plugin, name)
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// readPolled reads p for a poll while a writer may be swapping versions:
// a read that resolved ..data just before the swap can find the old
// version already removed (as with upstream's atomic writer), so an error
// counts as "not yet", never as content.
func readPolled(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	return string(b)
}

func mode(t *testing.T, p string) os.FileMode {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode()
}

func statT(t *testing.T, p string) unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

func isTmpfs(t *testing.T, p string) bool {
	t.Helper()
	var fs unix.Statfs_t
	if err := unix.Statfs(p, &fs); err != nil {
		t.Fatal(err)
	}
	return fs.Type == unix.TMPFS_MAGIC
}

// events drains the recorder.
func (e *env) events() []string {
	var out []string
	for {
		select {
		case ev := <-e.rec.Events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

func hasEvent(events []string, parts ...string) bool {
	for _, ev := range events {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(ev, p)
		}
		if ok {
			return true
		}
	}
	return false
}
