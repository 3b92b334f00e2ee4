package objects

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/gokubelet/kubelet/internal/testing/eventually"
)

func TestReferences(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}, Spec: v1.PodSpec{
		ImagePullSecrets: []v1.LocalObjectReference{{Name: "pull"}},
		Volumes: []v1.Volume{
			{Name: "a", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm-vol"}}}},
			{Name: "b", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "sec-vol"}}},
			{Name: "c", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
				{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "kube-root-ca.crt"}}},
				{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "sec-proj"}}},
				{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}},
			}}}},
			{Name: "d", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		},
		InitContainers: []v1.Container{{Name: "i", EnvFrom: []v1.EnvFromSource{{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "sec-envfrom"}}}}}},
		Containers: []v1.Container{{Name: "c", Env: []v1.EnvVar{
			{Name: "A", Value: "x"},
			{Name: "B", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "cm-vol"}, Key: "k"}}},
			{Name: "C", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		}}},
		EphemeralContainers: []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "e", EnvFrom: []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm-eph"}}}}}}},
	}}
	var got []string
	for _, r := range References(pod) {
		got = append(got, r.String())
	}
	want := []string{"ConfigMap ns/cm-eph", "ConfigMap ns/cm-vol", "ConfigMap ns/kube-root-ca.crt", "Secret ns/pull", "Secret ns/sec-envfrom", "Secret ns/sec-proj", "Secret ns/sec-vol"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("References = %v\nwant %v", got, want)
	}
}

type changes struct {
	mu   sync.Mutex
	seen []Ref
}

func (c *changes) add(r Ref) { c.mu.Lock(); c.seen = append(c.seen, r); c.mu.Unlock() }
func (c *changes) has(r Ref) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.seen {
		if s == r {
			return true
		}
	}
	return false
}

// watches counts the watches the fake clientset has registered, by
// resource. The fake tracker sends a change only to the watchers registered
// when it happens (it does not replay from a resourceVersion as the API
// server does), so a test must not change an object before the informer
// that follows it watches: that change would be lost for good.
type watches struct {
	mu sync.Mutex
	n  map[string]int
}

func trackWatches(c *fake.Clientset) *watches {
	w := &watches{n: map[string]int{}}
	c.PrependWatchReactor("*", func(a k8stesting.Action) (bool, watch.Interface, error) {
		var opts metav1.ListOptions
		if wa, ok := a.(k8stesting.WatchActionImpl); ok {
			opts = wa.ListOptions
		}
		wi, err := c.Tracker().Watch(a.GetResource(), a.GetNamespace(), opts)
		if err != nil {
			return true, nil, err
		}
		w.mu.Lock()
		w.n[a.GetResource().Resource]++
		w.mu.Unlock()
		return true, wi, nil
	})
	return w
}

func (w *watches) wait(t *testing.T, resource string) {
	t.Helper()
	eventually.True(t, "a watch of "+resource, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.n[resource] > 0
	})
}

func podRef(uid, ns string, cms ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Namespace: ns}}
	for _, c := range cms {
		p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: c, VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: c}}}})
	}
	return p
}

func TestManagerWatchesWhatPodsReference(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset(
		&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cfg"}, Data: map[string]string{"k": "v1"}},
		&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "unrelated"}},
	)
	w := trackWatches(client)
	var ch changes
	m := New(Options{Client: client, OnChange: ch.add, SyncTimeout: 5 * time.Second})
	go func() { _ = m.Start(ctx) }()

	if _, err := m.GetConfigMap(ctx, "ns", "cfg"); err == nil {
		t.Fatal("read of an object no pod references succeeded")
	}
	pod := podRef("p1", "ns", "cfg")
	pod.Spec.Volumes = append(pod.Spec.Volumes, v1.Volume{Name: "s", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "later"}}})
	m.RegisterPod(pod)
	cm, err := m.GetConfigMap(ctx, "ns", "cfg")
	if err != nil || cm.Data["k"] != "v1" {
		t.Fatalf("GetConfigMap = %v, %v", cm, err)
	}
	cm.Data["k"] = "mutated" // the caller's copy
	if _, err := m.GetSecret(ctx, "ns", "later"); !apierrors.IsNotFound(err) {
		t.Fatalf("missing secret: %v, want NotFound", err)
	}

	// Changes arrive through the watch and are reported.
	w.wait(t, "configmaps")
	upd := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cfg", ResourceVersion: "2"}, Data: map[string]string{"k": "v2"}}
	if _, err := client.CoreV1().ConfigMaps("ns").Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, "the update", func() bool {
		cm, err := m.GetConfigMap(ctx, "ns", "cfg")
		return err == nil && cm.Data["k"] == "v2"
	})
	eventually.True(t, "OnChange for the ConfigMap", func() bool { return ch.has(Ref{ConfigMap, "ns", "cfg"}) })
	w.wait(t, "secrets")
	if _, err := client.CoreV1().Secrets("ns").Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "later"}, Data: map[string][]byte{"x": []byte("y")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, "OnChange for the created Secret", func() bool { return ch.has(Ref{Secret, "ns", "later"}) })
	if s, err := m.GetSecret(ctx, "ns", "later"); err != nil || string(s.Data["x"]) != "y" {
		t.Fatalf("GetSecret after create = %v, %v", s, err)
	}
	if ch.has(Ref{ConfigMap, "ns", "unrelated"}) {
		t.Error("change reported for an object nobody references")
	}

	// A second pod shares the watch; the watch lives until both are gone.
	m.RegisterPod(podRef("p2", "ns", "cfg"))
	if n := len(m.Watched()); n != 2 {
		t.Errorf("watched %v, want 2 objects", m.Watched())
	}
	m.UnregisterPod("p1")
	if w := m.Watched(); len(w) != 1 || w[0] != (Ref{ConfigMap, "ns", "cfg"}) {
		t.Errorf("after p1 left: %v", w)
	}
	// A spec change releases what the pod no longer references.
	m.RegisterPod(podRef("p2", "ns", "other"))
	if w := m.Watched(); len(w) != 1 || w[0] != (Ref{ConfigMap, "ns", "other"}) {
		t.Errorf("after p2 changed: %v", w)
	}
	m.UnregisterPod("p2")
	if w := m.Watched(); len(w) != 0 {
		t.Errorf("after all left: %v", w)
	}
}

func TestManagerReportsAWatchThatCannotList(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("list", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(v1.Resource("configmaps"), "cfg", errors.New("no relationship found"))
	})
	m := New(Options{Client: client, SyncTimeout: 2 * time.Second})
	defer m.cancel()
	m.RegisterPod(podRef("p", "ns", "cfg"))
	_, err := m.GetConfigMap(context.Background(), "ns", "cfg")
	if err == nil || !apierrors.IsForbidden(errors.Unwrap(err)) {
		t.Fatalf("err = %v, want the list's Forbidden", err)
	}
}

func TestStandalone(t *testing.T) {
	m := New(Options{})
	m.RegisterPod(podRef("p", "ns", "cfg"))
	if _, err := m.GetConfigMap(context.Background(), "ns", "cfg"); !errors.Is(err, ErrStandalone) {
		t.Errorf("standalone GetConfigMap: %v", err)
	}
	if _, err := NewTokens(nil, nil).GetServiceAccountToken(context.Background(), "ns", "default", &authenticationv1.TokenRequest{}); !errors.Is(err, ErrStandalone) {
		t.Errorf("standalone token: %v", err)
	}
}

func TestNeedsRefresh(t *testing.T) {
	issued := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	tok := func(ttl time.Duration) *authenticationv1.TokenRequest {
		return &authenticationv1.TokenRequest{
			Spec:   authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(ttl / time.Second))},
			Status: authenticationv1.TokenRequestStatus{ExpirationTimestamp: metav1.NewTime(issued.Add(ttl))},
		}
	}
	for _, tc := range []struct {
		name   string
		tr     *authenticationv1.TokenRequest
		age    time.Duration
		jitter time.Duration
		want   bool
	}{
		{"fresh", tok(time.Hour), 10 * time.Minute, 0, false},
		{"just before 80%", tok(time.Hour), 47 * time.Minute, 0, false},
		{"past 80%", tok(time.Hour), 49 * time.Minute, 0, true},
		{"jitter brings 80% forward", tok(time.Hour), 47*time.Minute + 55*time.Second, 10 * time.Second, true},
		{"long token, before 24h", tok(72 * time.Hour), 23 * time.Hour, 0, false},
		{"long token, past 24h", tok(72 * time.Hour), 24*time.Hour + time.Second, 0, true},
		{"expired", tok(10 * time.Minute), time.Hour, 0, true},
		{"unknown lifetime, valid", &authenticationv1.TokenRequest{Status: authenticationv1.TokenRequestStatus{ExpirationTimestamp: metav1.NewTime(issued.Add(time.Hour))}}, 59 * time.Minute, 0, false},
		{"unknown lifetime, expired", &authenticationv1.TokenRequest{Status: authenticationv1.TokenRequestStatus{ExpirationTimestamp: metav1.NewTime(issued.Add(time.Hour))}}, time.Hour, 0, true},
	} {
		if got := NeedsRefresh(tc.tr, issued.Add(tc.age), tc.jitter); got != tc.want {
			t.Errorf("%s: NeedsRefresh = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestTokensCacheRenewAndFallback(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	client := fake.NewClientset()
	var calls int
	fail := false
	client.PrependReactor("create", "serviceaccounts", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "token" {
			return false, nil, nil
		}
		calls++
		if fail {
			return true, nil, errors.New("apiserver down")
		}
		req := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenRequest).DeepCopy()
		req.Status.Token = fmt.Sprintf("token-%d", calls)
		req.Status.ExpirationTimestamp = metav1.NewTime(clk.Now().Add(time.Duration(*req.Spec.ExpirationSeconds) * time.Second))
		return true, req, nil
	})
	tk := NewTokens(client, clk)
	ctx := context.Background()
	req := func(uid types.UID) *authenticationv1.TokenRequest {
		return &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			Audiences: []string{"api"}, ExpirationSeconds: ptr.To[int64](3600),
			BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "p", UID: uid}}}
	}
	get := func(uid types.UID) string {
		t.Helper()
		tr, err := tk.GetServiceAccountToken(ctx, "ns", "default", req(uid))
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	if a, b := get("u1"), get("u1"); a != "token-1" || b != "token-1" || calls != 1 {
		t.Fatalf("cached: %s %s after %d calls", a, b, calls)
	}
	if get("u2") != "token-2" {
		t.Fatal("another pod shares a token")
	}
	clk.Step(49 * time.Minute) // past 80% of an hour even with jitter
	if got := get("u1"); got != "token-3" {
		t.Fatalf("after 49m: %s, want a renewed token", got)
	}
	clk.Step(49 * time.Minute)
	fail = true
	if got := get("u1"); got != "token-3" {
		t.Fatalf("failed renewal: %s, want the still valid token", got)
	}
	clk.Step(20 * time.Minute) // token-3 expired
	if _, err := tk.GetServiceAccountToken(ctx, "ns", "default", req("u1")); err == nil {
		t.Fatal("expired token served after a failed renewal")
	}
	fail = false
	tk.DeletePodTokens("u2")
	before := calls
	get("u2")
	if calls != before+1 {
		t.Error("DeletePodTokens kept the pod's token")
	}
}
