package kubernetes

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/gokubelet/kubelet/internal/testing/eventually"
	"github.com/gokubelet/kubelet/pkg/errdefs"
	"github.com/gokubelet/kubelet/pkg/provider"
)

type originObjects struct{ c *fake.Clientset }

func (o originObjects) GetConfigMap(ctx context.Context, ns, name string) (*v1.ConfigMap, error) {
	cm, err := o.c.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	return cm, errdefs.FromAPI(err)
}

func (o originObjects) GetSecret(ctx context.Context, ns, name string) (*v1.Secret, error) {
	s, err := o.c.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	return s, errdefs.FromAPI(err)
}

// fakeTarget gives created objects UIDs and lets watches start before
// anything is created.
func fakeTarget(objs ...runtime.Object) (*fake.Clientset, chan struct{}) {
	c := fake.NewClientset(objs...)
	n := 0
	var mu sync.Mutex
	c.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if o, ok := a.(k8stesting.CreateAction).GetObject().(metav1.Object); ok && o.GetUID() == "" {
			mu.Lock()
			n++
			o.SetUID(types.UID(fmt.Sprintf("t-%d", n)))
			mu.Unlock()
		}
		return false, nil, nil
	})
	watching := make(chan struct{})
	var once sync.Once
	c.PrependWatchReactor("pods", func(a k8stesting.Action) (bool, watch.Interface, error) {
		w, err := c.Tracker().Watch(a.GetResource(), a.GetNamespace())
		once.Do(func() { close(watching) })
		return true, w, err
	})
	return c, watching
}

func startProvider(t *testing.T, node string, target *fake.Clientset, watching chan struct{}, origin *fake.Clientset) (*Provider, *[]*v1.Pod, *sync.Mutex) {
	t.Helper()
	p, seen, mu, _ := startProviderIn(t, node, target, watching, origin, "")
	return p, seen, mu
}

// startProviderIn starts a provider keeping its records in stateDir; stop
// stops it (also done at cleanup).
func startProviderIn(t *testing.T, node string, target *fake.Clientset, watching chan struct{}, origin *fake.Clientset, stateDir string) (p *Provider, seen *[]*v1.Pod, mu *sync.Mutex, stop func()) {
	t.Helper()
	cfg, err := ParseConfig([]byte(`{"kubeconfig": "/unused", "namespacePrefix": "vk-"}`), "")
	if err != nil {
		t.Fatal(err)
	}
	p = NewForClients(node, cfg, target, nil, origin, originObjects{origin})
	if p.records, err = newRecords(stateDir); err != nil {
		t.Fatal(err)
	}
	p.stateDir = stateDir
	mu = &sync.Mutex{}
	seen = &[]*v1.Pod{}
	ctx, cancel := context.WithCancel(context.Background())
	p.NotifyPods(ctx, func(pod *v1.Pod) { mu.Lock(); *seen = append(*seen, pod); mu.Unlock() })
	done := make(chan struct{})
	go func() { _ = p.Start(ctx); close(done) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	select {
	case <-p.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("provider not ready")
	}
	<-watching
	return p, seen, mu, stop
}

func originFixture() *fake.Clientset {
	c := fake.NewClientset(
		&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "shop"}, Data: map[string]string{"m": "fast"}},
		&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Namespace: "shop"}, Data: map[string]string{"ca.crt": "CA"}},
		&v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "shop"}, Data: map[string][]byte{"p": []byte("pw")}},
		&v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "regcred", Namespace: "shop"}, Type: v1.SecretTypeDockerConfigJson, Data: map[string][]byte{".dockerconfigjson": []byte("{}")}},
	)
	c.PrependReactor("create", "serviceaccounts", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "token" {
			return false, nil, nil
		}
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenRequest)
		if tr.Spec.BoundObjectRef == nil || tr.Spec.BoundObjectRef.UID != "uid-1" {
			return true, nil, fmt.Errorf("token not bound to the pod: %+v", tr.Spec.BoundObjectRef)
		}
		tr.Status = authenticationv1.TokenRequestStatus{Token: "origin-token", ExpirationTimestamp: metav1.NewTime(time.Now().Add(time.Hour))}
		return true, tr, nil
	})
	return c
}

// CreatePod copies what the pod references (owned by the target pod),
// creates the pod in the mapped namespace, and the target's status comes
// back as the origin's pod through the notifier.
func TestCreateCopiesAndMirrorsStatus(t *testing.T) {
	target, watching := fakeTarget()
	p, seen, mu := startProvider(t, "vk-remote", target, watching, originFixture())
	ctx := context.Background()
	if err := p.CreatePod(ctx, originPod()); err != nil {
		t.Fatal(err)
	}
	if _, err := target.CoreV1().Namespaces().Get(ctx, "vk-shop", metav1.GetOptions{}); err != nil {
		t.Errorf("target namespace not created: %v", err)
	}
	tp, err := target.CoreV1().Pods("vk-shop").Get(ctx, "web-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cms, _ := target.CoreV1().ConfigMaps("vk-shop").List(ctx, metav1.ListOptions{})
	secrets, _ := target.CoreV1().Secrets("vk-shop").List(ctx, metav1.ListOptions{})
	if len(cms.Items) != 4 || len(secrets.Items) != 3 {
		t.Fatalf("%d configmaps and %d secrets copied, want 4 (cfg, root CA, 2 downward) and 3 (creds, regcred, token)", len(cms.Items), len(secrets.Items))
	}
	for _, s := range secrets.Items {
		if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != tp.UID || s.Labels[LabelNode] != "vk-remote" {
			t.Errorf("secret copy %s: owners %v labels %v", s.Name, s.OwnerReferences, s.Labels)
		}
		if s.Labels[LabelCopy] == copyToken && string(s.Data[tokenKey]) != "origin-token" {
			t.Errorf("token copy = %q", s.Data[tokenKey])
		}
		if s.Type == v1.SecretTypeServiceAccountToken {
			t.Errorf("secret %s copied as a service account token secret", s.Name)
		}
	}
	// Idempotent: a second create changes nothing and succeeds.
	if err := p.CreatePod(ctx, originPod()); err != nil {
		t.Errorf("second CreatePod: %v", err)
	}
	// The target's kubelet runs it.
	tp.Status = v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.244.1.7",
		ContainerStatuses: []v1.ContainerStatus{{Name: "main", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}}
	if _, err := target.CoreV1().Pods("vk-shop").UpdateStatus(ctx, tp, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, "a Running notification", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, s := range *seen {
			if s.UID == "uid-1" && s.Namespace == "shop" && s.Status.Phase == v1.PodRunning && s.Status.PodIP == "10.244.1.7" {
				return true
			}
		}
		return false
	})
	got, err := p.GetPod(ctx, "shop", "web-1")
	if err != nil || got.UID != "uid-1" {
		t.Errorf("GetPod = %+v %v", got, err)
	}
}

// The provider never takes over what is not its own.
func TestOwnership(t *testing.T) {
	foreign := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "vk-shop", UID: "someone"}}
	mine := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "vk-shop", UID: "x",
		Labels:      map[string]string{LabelNode: "other-node", LabelOriginUID: "o"},
		Annotations: map[string]string{AnnotationOriginNamespace: "shop", AnnotationOriginName: "db"}}}
	target, watching := fakeTarget(foreign, mine, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "vk-shop"}})
	p, _, _ := startProvider(t, "vk-remote", target, watching, originFixture())
	ctx := context.Background()
	if err := p.CreatePod(ctx, originPod()); !errdefs.IsRetryable(err) {
		t.Errorf("creating over a foreign pod: %v, want a retryable error (waiting for it to go)", err)
	}
	if _, err := p.GetPod(ctx, "shop", "web-1"); !errdefs.IsNotFound(err) {
		t.Errorf("GetPod of a foreign pod: %v", err)
	}
	if _, err := p.GetPod(ctx, "shop", "db"); !errdefs.IsNotFound(err) {
		t.Errorf("GetPod of another node's pod: %v", err)
	}
	if err := p.DeletePod(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db"}}); !errdefs.IsNotFound(err) {
		t.Errorf("DeletePod of another node's pod: %v", err)
	}
	if _, err := target.CoreV1().Pods("vk-shop").Get(ctx, "db", metav1.GetOptions{}); err != nil {
		t.Errorf("another node's pod was deleted: %v", err)
	}
	list, _ := p.ListPods(ctx)
	if len(list) != 0 {
		t.Errorf("ListPods = %d pods, want none", len(list))
	}
	copyOfCopy := originPod()
	copyOfCopy.Labels[LabelNode] = "vk-remote"
	if err := p.CreatePod(ctx, copyOfCopy); !errdefs.IsInvalid(err) {
		t.Errorf("a copy made by a virtual node was accepted: %v", err)
	}
}

// DeletePod deletes with the grace period and a UID precondition; the
// deleted pod's last notification shows nothing running.
func TestDelete(t *testing.T) {
	target, watching := fakeTarget()
	p, seen, mu := startProvider(t, "vk-remote", target, watching, originFixture())
	ctx := context.Background()
	pod := originPod()
	if err := p.CreatePod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, "the informer to see the pod", func() bool { _, err := p.GetPod(ctx, "shop", "web-1"); return err == nil })
	d := pod.DeepCopy()
	d.DeletionGracePeriodSeconds = ptrTo(int64(7))
	if err := p.DeletePod(ctx, d); err != nil {
		t.Fatal(err)
	}
	var del k8stesting.DeleteActionImpl
	for _, a := range target.Actions() {
		if x, ok := a.(k8stesting.DeleteActionImpl); ok && a.GetResource().Resource == "pods" {
			del = x
		}
	}
	o := del.GetDeleteOptions()
	if o.GracePeriodSeconds == nil || *o.GracePeriodSeconds != 7 || o.Preconditions == nil || o.Preconditions.UID == nil {
		t.Errorf("delete options = %+v", o)
	}
	eventually.True(t, "GetPod NotFound", func() bool { _, err := p.GetPod(ctx, "shop", "web-1"); return errdefs.IsNotFound(err) })
	eventually.True(t, "the last notification", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, s := range *seen {
			if s.UID == "uid-1" && s.Status.Phase == v1.PodFailed {
				return true
			}
		}
		return false
	})
	if err := p.DeletePod(ctx, d); !errdefs.IsNotFound(err) {
		t.Errorf("second delete: %v", err)
	}
}

var _ provider.Provider = (*Provider)(nil)
