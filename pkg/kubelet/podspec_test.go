package kubelet

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/gokubelet/kubelet/pkg/engine/cri"
	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/runtime/kuberuntime"
)

// The engine asks the runtime it is given whether a pod's handler supports
// recursive read-only mounts (containers' volumeMounts in their status).
var _ cri.RecursiveReadOnlyRuntime = (*kuberuntime.Manager)(nil)

func TestServiceEnvWaitsForTheFirstList(t *testing.T) {
	kube := fake.NewSimpleClientset(
		&v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"}, Spec: v1.ServiceSpec{ClusterIP: "10.96.0.1", Ports: []v1.ServicePort{{Name: "https", Port: 443}}}},
		&v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "web"}, Spec: v1.ServiceSpec{ClusterIP: "10.96.0.5", Ports: []v1.ServicePort{{Port: 80}}}},
	)
	f := informers.NewSharedInformerFactory(kube, 0)
	inf := f.Core().V1().Services()
	lister := inf.Lister()
	synced := false
	se := &serviceEnv{lister: lister, synced: func() bool { return synced }}
	apiPod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "p"}}
	if _, err := se.env(apiPod); err == nil || !strings.Contains(err.Error(), "services have not yet been read") {
		t.Fatalf("API pod before the first list: %v", err)
	}
	static := apiPod.DeepCopy()
	static.Annotations = map[string]string{podspec.ConfigSourceAnnotation: podspec.SourceFile}
	if _, err := se.env(static); err != nil {
		t.Fatalf("static pods must not wait: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_ = inf.Informer()
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	synced = true
	env, err := se.env(apiPod)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range env {
		got[e.Name] = e.Value
	}
	if got["KUBERNETES_SERVICE_HOST"] != "10.96.0.1" || got["WEB_SERVICE_HOST"] != "10.96.0.5" {
		t.Errorf("env %v", got)
	}
	apiPod.Spec.EnableServiceLinks = ptr.To(false)
	env, _ = se.env(apiPod)
	for _, e := range env {
		if strings.HasPrefix(e.Name, "WEB_") {
			t.Errorf("enableServiceLinks=false gave %s", e.Name)
		}
	}
}

func TestRuntimeClassLookup(t *testing.T) {
	kube := fake.NewSimpleClientset(&nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "gvisor"}, Handler: "runsc"})
	stop := make(chan struct{})
	defer close(stop)
	r := &runtimeClasses{client: kube, stop: stop}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if h, err := r.handler(ctx, "gvisor"); err != nil || h != "runsc" {
		t.Errorf("gvisor: %q %v", h, err)
	}
	if _, err := r.handler(ctx, "kata"); err == nil || err.Error() != `RuntimeClass "kata" not found` {
		t.Errorf("missing class: %v", err)
	}
}
