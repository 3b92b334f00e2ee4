package kubernetes

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/gokubelet/kubelet/internal/testing/eventually"
	"github.com/gokubelet/kubelet/pkg/errdefs"
)

// Attacks by a tenant of the target cluster: someone who may create,
// label and delete Secrets and pods in the namespaces the provider maps
// to. None of them may make the provider mint an origin token, report a
// status for an origin pod, or fail one.

// tokenRequest is one TokenRequest the origin was asked for.
type tokenRequest struct {
	namespace, serviceAccount string
	*authenticationv1.TokenRequest
}

// tokenRequests are the TokenRequests the origin was asked for.
func tokenRequests(origin *fake.Clientset) []tokenRequest {
	var out []tokenRequest
	for _, a := range origin.Actions() {
		if a.GetVerb() == "create" && a.GetResource().Resource == "serviceaccounts" && a.GetSubresource() == "token" {
			ca := a.(k8stesting.CreateActionImpl)
			out = append(out, tokenRequest{ca.GetNamespace(), ca.Name, ca.GetObject().(*authenticationv1.TokenRequest)})
		}
	}
	return out
}

// forgedTokenSecret looks like a token copy of virtual node vk-remote that
// names another pod and a powerful service account, and is due for
// renewal.
func forgedTokenSecret(ns, name string) *v1.Secret {
	return &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
		Labels: map[string]string{LabelNode: "vk-remote", LabelCopy: copyToken, LabelOriginUID: ""},
		Annotations: map[string]string{
			AnnotationOriginNamespace:               "kube-system",
			AnnotationOriginName:                    "victim",
			"gokubelet.io/token-service-account":    "clusterrole-aggregation-controller",
			"gokubelet.io/token-audience":           "",
			"gokubelet.io/token-expiration-seconds": "3600",
			AnnotationTokenExpiry:                   time.Now().Add(-time.Hour).UTC().Format(time.RFC3339),
		}}}
}

// A labelled Secret in a target namespace does not make the provider
// request a token: renewal follows the provider's records only, and each
// request names the origin pod and its UID.
func TestForgedTokenSecretMintsNothing(t *testing.T) {
	target, watching := fakeTarget()
	origin := originFixture()
	p, _, _ := startProvider(t, "vk-remote", target, watching, origin)
	ctx := context.Background()
	if err := p.CreatePod(ctx, originPod()); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*v1.Secret{forgedTokenSecret("vk-shop", "stolen"), forgedTokenSecret("elsewhere", "stolen")} {
		if _, err := target.CoreV1().Secrets(s.Namespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	before := len(tokenRequests(origin))
	// Every token is due: the real copy must be renewed (the refresher ran).
	p.now = func() time.Time { return time.Now().Add(24 * time.Hour) }
	p.RefreshTokens(ctx)
	reqs := tokenRequests(origin)[before:]
	if len(reqs) != 1 {
		t.Fatalf("%d token requests on renewal, want 1 (the real copy's)", len(reqs))
	}
	ref := reqs[0].Spec.BoundObjectRef
	if ref == nil || ref.Kind != "Pod" || ref.Name != "web-1" || ref.UID != "uid-1" {
		t.Errorf("token request bound to %+v, want pod web-1 uid-1", ref)
	}
	if reqs[0].namespace != "shop" || reqs[0].serviceAccount != "shopper" {
		t.Errorf("token requested for service account %s/%s, want shop/shopper", reqs[0].namespace, reqs[0].serviceAccount)
	}
	for _, ns := range []string{"vk-shop", "elsewhere"} {
		s, err := target.CoreV1().Secrets(ns).Get(ctx, "stolen", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Data) != 0 {
			t.Errorf("forged secret %s/stolen got data %v", ns, s.Data)
		}
	}
}

// A token copy replaced by a Secret of the same name (labels and all)
// never gets a token: the provider writes only into the Secret it created,
// by UID.
func TestReplacedTokenSecretGetsNoToken(t *testing.T) {
	target, watching := fakeTarget()
	origin := originFixture()
	p, _, _ := startProvider(t, "vk-remote", target, watching, origin)
	ctx := context.Background()
	if err := p.CreatePod(ctx, originPod()); err != nil {
		t.Fatal(err)
	}
	list, err := target.CoreV1().Secrets("vk-shop").List(ctx, metav1.ListOptions{LabelSelector: LabelCopy + "=" + copyToken})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("token copies: %v %v", list, err)
	}
	real := list.Items[0]
	if err := target.CoreV1().Secrets("vk-shop").Delete(ctx, real.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	fake := real.DeepCopy()
	fake.UID, fake.ResourceVersion, fake.Data, fake.OwnerReferences = "", "", nil, nil
	if _, err := target.CoreV1().Secrets("vk-shop").Create(ctx, fake, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := len(tokenRequests(origin))
	p.now = func() time.Time { return time.Now().Add(24 * time.Hour) }
	p.RefreshTokens(ctx)
	if n := len(tokenRequests(origin)) - before; n != 0 {
		t.Errorf("%d tokens minted for a replaced copy, want 0", n)
	}
	got, err := target.CoreV1().Secrets("vk-shop").Get(ctx, real.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Data) != 0 {
		t.Errorf("the replacement secret got a token: %v", got.Data)
	}
}

// forgedPod claims, by labels and annotations, to be the copy of origin
// pod shop/web-1 (uid-1), and runs with an address of the tenant's.
func forgedPod(ns, name string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
			Labels:      map[string]string{LabelNode: "vk-remote", LabelOriginUID: "uid-1"},
			Annotations: map[string]string{AnnotationOriginNamespace: "shop", AnnotationOriginName: "web-1"}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "main", Image: "evil"}}},
		Status: v1.PodStatus{Phase: v1.PodRunning, PodIP: "6.6.6.6",
			Conditions:        []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}},
			ContainerStatuses: []v1.ContainerStatus{{Name: "main", Ready: true, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}},
	}
}

// runReal creates origin pod web-1 and makes its target pod Running at
// ip; it returns once the notifier reported that (every target event
// before it has been handled).
func runReal(t *testing.T, p *Provider, target *fake.Clientset, seen *[]*v1.Pod, mu *sync.Mutex, ip string) {
	t.Helper()
	ctx := context.Background()
	if err := p.CreatePod(ctx, originPod()); err != nil {
		t.Fatal(err)
	}
	barrier(t, target, seen, mu, ip)
}

// barrier sets the real target pod's IP and waits until the notifier
// reported it: the informer handles events in order, so everything the
// target did before has been seen by then.
func barrier(t *testing.T, target *fake.Clientset, seen *[]*v1.Pod, mu *sync.Mutex, ip string) {
	t.Helper()
	ctx := context.Background()
	tp, err := target.CoreV1().Pods("vk-shop").Get(ctx, "web-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tp.Status = v1.PodStatus{Phase: v1.PodRunning, PodIP: ip,
		ContainerStatuses: []v1.ContainerStatus{{Name: "main", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}}
	if _, err := target.CoreV1().Pods("vk-shop").UpdateStatus(ctx, tp, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, "the real pod's status at "+ip, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, s := range *seen {
			if s.UID == "uid-1" && s.Status.PodIP == ip {
				return true
			}
		}
		return false
	})
}

// noSpoof fails if any notification, list or get showed the forgery's
// address or a failed origin pod.
func noSpoof(t *testing.T, p *Provider, seen *[]*v1.Pod, mu *sync.Mutex) {
	t.Helper()
	mu.Lock()
	for _, s := range *seen {
		if s.Status.PodIP == "6.6.6.6" || s.Status.Phase == v1.PodFailed {
			t.Errorf("notified %s/%s uid %s phase %s ip %s", s.Namespace, s.Name, s.UID, s.Status.Phase, s.Status.PodIP)
		}
	}
	mu.Unlock()
	list, err := p.ListPods(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].UID != "uid-1" || list[0].Status.PodIP == "6.6.6.6" {
		t.Errorf("ListPods = %d pods, first %+v", len(list), list)
	}
	got, err := p.GetPod(context.Background(), "shop", "web-1")
	if err != nil || got.Status.PodIP == "6.6.6.6" || got.Status.Phase != v1.PodRunning {
		t.Errorf("GetPod = %+v, %v", got, err)
	}
}

// A pod in a target namespace labelled and annotated as the copy of an
// origin pod reports nothing for it: no address, no readiness.
func TestForgedTargetPodSpoofsNoStatus(t *testing.T) {
	target, watching := fakeTarget()
	p, seen, mu := startProvider(t, "vk-remote", target, watching, originFixture())
	ctx := context.Background()
	runReal(t, p, target, seen, mu, "10.244.1.7")
	for _, fp := range []*v1.Pod{forgedPod("vk-shop", "evil"), forgedPod("elsewhere", "web-1")} {
		if _, err := target.CoreV1().Pods(fp.Namespace).Create(ctx, fp, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	barrier(t, target, seen, mu, "10.244.1.8")
	noSpoof(t, p, seen, mu)
}

// Deleting a forged copy does not mark the origin pod it names Failed.
func TestDeletingForgedPodFailsNoOriginPod(t *testing.T) {
	target, watching := fakeTarget()
	p, seen, mu := startProvider(t, "vk-remote", target, watching, originFixture())
	ctx := context.Background()
	runReal(t, p, target, seen, mu, "10.244.1.7")
	fp := forgedPod("vk-shop", "evil")
	if _, err := target.CoreV1().Pods("vk-shop").Create(ctx, fp, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	barrier(t, target, seen, mu, "10.244.1.8")
	if err := target.CoreV1().Pods("vk-shop").Delete(ctx, "evil", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	barrier(t, target, seen, mu, "10.244.1.9")
	noSpoof(t, p, seen, mu)
}

// A pod planted under the expected name before the provider creates its
// copy, labelled with this node and the origin UID, is not taken over:
// creation waits (retryable, with a reason) and the plant reports nothing.
func TestPrePlantedTargetPodIsNotAdopted(t *testing.T) {
	plant := forgedPod("vk-shop", "web-1")
	target, watching := fakeTarget(plant, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "vk-shop"}})
	p, seen, mu := startProvider(t, "vk-remote", target, watching, originFixture())
	ctx := context.Background()
	if err := p.CreatePod(ctx, originPod()); !errdefs.IsRetryable(err) {
		t.Errorf("CreatePod over a planted pod: %v, want retryable", err)
	}
	if _, err := p.GetPod(ctx, "shop", "web-1"); !errdefs.IsNotFound(err) {
		t.Errorf("GetPod of a planted pod: %v, want NotFound", err)
	}
	if l, _ := p.ListPods(ctx); len(l) != 0 {
		t.Errorf("ListPods = %d, want 0", len(l))
	}
	mu.Lock()
	n := len(*seen)
	mu.Unlock()
	if n != 0 {
		t.Errorf("%d notifications about a planted pod", n)
	}
	// Its deletion fails nothing either, and then the real copy is made.
	if err := target.CoreV1().Pods("vk-shop").Delete(ctx, "web-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	runReal(t, p, target, seen, mu, "10.244.1.7")
	noSpoof(t, p, seen, mu)
}

// A restarted provider adopts exactly the pods it recorded in its state
// directory, and renews their tokens once, bound to the origin pod; a pod
// planted meanwhile (labelled as another of its pods) is not adopted.
func TestRestartAdoptsOnlyRecordedPods(t *testing.T) {
	dir := t.TempDir()
	target, watching := fakeTarget()
	origin := originFixture()
	p, _, _, stop := startProviderIn(t, "vk-remote", target, watching, origin, dir)
	ctx := context.Background()
	if err := p.CreatePod(ctx, originPod()); err != nil {
		t.Fatal(err)
	}
	stop()
	plant := forgedPod("vk-shop", "web-2")
	plant.Labels[LabelOriginUID] = "uid-2"
	plant.Annotations[AnnotationOriginName] = "web-2"
	if _, err := target.CoreV1().Pods("vk-shop").Create(ctx, plant, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	synced := make(chan struct{})
	close(synced) // the fake target's watch reactor signalled the first provider's watch already
	p2, _, _, _ := startProviderIn(t, "vk-remote", target, synced, origin, dir)
	list, err := p2.ListPods(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Name != "web-1" || list[0].UID != "uid-1" || list[0].Namespace != "shop" {
		t.Fatalf("adopted %d pods: %+v", len(list), list)
	}
	before := len(tokenRequests(origin))
	p2.RefreshTokens(ctx)
	reqs := tokenRequests(origin)[before:]
	if len(reqs) != 1 || reqs[0].Spec.BoundObjectRef == nil || reqs[0].Spec.BoundObjectRef.UID != "uid-1" {
		t.Errorf("token renewals after restart: %d, first %+v", len(reqs), reqs)
	}
	// Deleting through the adopted record removes it.
	if err := p2.DeletePod(ctx, originPod()); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, "the record removed", func() bool {
		_, err := os.Stat(filepath.Join(dir, "uid-1.json"))
		return os.IsNotExist(err)
	})
}

// Records that do not decode, are incomplete or are filed under another
// UID are not loaded.
func TestRecordsLoadOnlyUsableFiles(t *testing.T) {
	dir := t.TempDir()
	r, err := newRecords(dir)
	if err != nil {
		t.Fatal(err)
	}
	good := &ownedPod{OriginNamespace: "shop", OriginName: "web-1", OriginUID: "uid-1", ServiceAccount: "default", TargetNamespace: "vk-shop", TargetUID: "t-1",
		Tokens: []ownedToken{{Secret: "tok", SecretUID: "s-1", ExpirationSeconds: 3600}}}
	if err := r.save(good); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{
		"garbage.json": "{",
		"uid-2.json":   `{"originNamespace":"shop","originName":"web-2","originUID":"uid-2","targetNamespace":"vk-shop"}`,
		"uid-3.json":   `{"originNamespace":"shop","originName":"web-3","originUID":"uid-other","targetNamespace":"vk-shop","targetUID":"t-3"}`,
		"uid-4.json":   `{"originNamespace":"../x","originName":"web-4","originUID":"uid-4","targetNamespace":"vk-shop","targetUID":"t-4"}`,
		"not-json.txt": "ignored",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	recs, errs := r.load()
	if len(recs) != 1 || recs[0].OriginUID != "uid-1" || recs[0].Tokens[0].SecretUID != "s-1" {
		t.Errorf("loaded %+v", recs)
	}
	if len(errs) != 4 {
		t.Errorf("%d errors, want 4: %v", len(errs), errs)
	}
	if _, err := r.path("../evil"); err == nil {
		t.Error("a UID with a slash named a file")
	}
}
