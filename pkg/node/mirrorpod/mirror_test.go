package mirrorpod

import (
	"context"
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

func staticPod(hash string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "etcd-n1", Namespace: "kube-system", UID: types.UID(hash),
			Labels: map[string]string{"component": "etcd"},
			Annotations: map[string]string{
				podspec.ConfigHashAnnotation:   hash,
				podspec.ConfigSourceAnnotation: podspec.SourceFile,
				podspec.ConfigSeenAnnotation:   "2024-01-01T00:00:00Z",
			},
		},
		Spec:   v1.PodSpec{NodeName: "n1", Containers: []v1.Container{{Name: "etcd", Image: "etcd"}}},
		Status: v1.PodStatus{Phase: v1.PodRunning},
	}
}

func testNode() *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "node-uid"}}
}

func mirrorOf(static *v1.Pod, hash string, opts ...func(*v1.Pod)) *v1.Pod {
	m := static.DeepCopy()
	m.UID = "mirror-uid"
	m.Annotations[podspec.ConfigMirrorAnnotation] = hash
	for _, o := range opts {
		o(m)
	}
	return m
}

func TestNeeds(t *testing.T) {
	static := staticPod("h1")
	now := metav1.Now()
	tests := []struct {
		name           string
		mirror         *v1.Pod
		create, delete bool
	}{
		{"no mirror: create", nil, true, false},
		{"matching mirror: nothing", mirrorOf(static, "h1"), false, false},
		{"mirror of an older manifest: replace", mirrorOf(static, "h0"), true, true},
		{"mirror being deleted: replace", mirrorOf(static, "h1", func(p *v1.Pod) { p.DeletionTimestamp = &now }), true, true},
		{"pod without the mirror annotation: replace", func() *v1.Pod {
			p := static.DeepCopy()
			delete(p.Annotations, podspec.ConfigMirrorAnnotation)
			return p
		}(), true, true},
		{"mirror in another namespace: replace", mirrorOf(static, "h1", func(p *v1.Pod) { p.Namespace = "default" }), true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			create, del := Needs(static, tt.mirror)
			if create != tt.create || del != tt.delete {
				t.Errorf("Needs = (create %v, delete %v), want (%v, %v)", create, del, tt.create, tt.delete)
			}
		})
	}
}

func TestBuild(t *testing.T) {
	static := staticPod("h1")
	before := static.DeepCopy()
	m, err := Build(static, testNode())
	if err != nil {
		t.Fatal(err)
	}
	if m.Annotations[podspec.ConfigMirrorAnnotation] != "h1" {
		t.Errorf("config.mirror = %q, want the static pod's hash", m.Annotations[podspec.ConfigMirrorAnnotation])
	}
	if m.Annotations[podspec.ConfigSourceAnnotation] != podspec.SourceFile || m.Labels["component"] != "etcd" {
		t.Errorf("static pod's labels/annotations not copied: %v %v", m.Labels, m.Annotations)
	}
	if len(m.OwnerReferences) != 1 {
		t.Fatalf("owner references = %v, want exactly one", m.OwnerReferences)
	}
	o := m.OwnerReferences[0]
	if o.APIVersion != "v1" || o.Kind != "Node" || o.Name != "n1" || o.UID != "node-uid" ||
		o.Controller == nil || !*o.Controller || o.BlockOwnerDeletion != nil {
		t.Errorf("owner reference = %+v, want v1 Node n1 node-uid controller=true", o)
	}
	if m.UID != "" || m.ResourceVersion != "" || m.Status.Phase != "" {
		t.Errorf("mirror carries server-owned fields: uid %q rv %q status %+v", m.UID, m.ResourceVersion, m.Status)
	}
	if m.Spec.NodeName != "n1" || m.Spec.Containers[0].Image != "etcd" {
		t.Errorf("spec not copied or not bound: %+v", m.Spec)
	}
	m.Labels["x"] = "y"
	m.Spec.Containers[0].Image = "changed"
	if static.String() != before.String() {
		t.Errorf("Build shares or modifies the static pod")
	}
}

func TestBuildRefusals(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*v1.Pod)
		node *v1.Node
		want string
	}{
		{"not a static pod", func(p *v1.Pod) { delete(p.Annotations, podspec.ConfigHashAnnotation) }, testNode(), "config.hash"},
		{"no node uid", nil, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, "owner reference"},
		{"service account", func(p *v1.Pod) { p.Spec.ServiceAccountName = "default" }, testNode(), "spec.serviceAccountName"},
		{"secret volume", func(p *v1.Pod) {
			p.Spec.Volumes = []v1.Volume{{Name: "s", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s"}}}}
		}, testNode(), "spec.volumes[0].secret"},
		{"projected token", func(p *v1.Pod) {
			p.Spec.Volumes = []v1.Volume{{Name: "t", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
				Sources: []v1.VolumeProjection{{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "t"}}}}}}}
		}, testNode(), "serviceAccountToken"},
		{"pvc", func(p *v1.Pod) {
			p.Spec.Volumes = []v1.Volume{{Name: "c", VolumeSource: v1.VolumeSource{
				PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}}}
		}, testNode(), "persistentvolumeclaims"},
		{"configmap env", func(p *v1.Pod) {
			p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "A", ValueFrom: &v1.EnvVarSource{
				ConfigMapKeyRef: &v1.ConfigMapKeySelector{Key: "k"}}}}
		}, testNode(), "spec.containers[0].env[0].valueFrom.configMapKeyRef"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := staticPod("h1")
			if tt.mod != nil {
				tt.mod(p)
			}
			_, err := Build(p, tt.node)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Build error = %v, want one naming %q", err, tt.want)
			}
		})
	}
}

func TestCreateMirror(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	m := New(client)
	static := staticPod("h1")
	if err := m.CreateMirror(ctx, static, testNode()); err != nil {
		t.Fatal(err)
	}
	got, err := client.CoreV1().Pods("kube-system").Get(ctx, "etcd-n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if create, del := Needs(static, got); create || del {
		t.Errorf("created pod is not a matching mirror: %v", got.Annotations)
	}
	// Creating again while a matching mirror exists is fine.
	if err := m.CreateMirror(ctx, static, testNode()); err != nil {
		t.Errorf("second create: %v", err)
	}
	// A new manifest's mirror clashes with the old one until it is deleted.
	if err := m.CreateMirror(ctx, staticPod("h2"), testNode()); err == nil {
		t.Errorf("create over a stale mirror succeeded")
	}
}

func TestCreateMirrorOnDeletingNode(t *testing.T) {
	client := fake.NewClientset()
	node := testNode()
	now := metav1.Now()
	node.DeletionTimestamp = &now
	err := New(client).CreateMirror(context.Background(), staticPod("h1"), node)
	if !errors.Is(err, ErrNodeDeleting) {
		t.Errorf("err = %v, want ErrNodeDeleting", err)
	}
	if len(client.Actions()) != 0 {
		t.Errorf("API called: %v", client.Actions())
	}
}

func TestDeleteMirror(t *testing.T) {
	ctx := context.Background()
	static := staticPod("h1")
	client := fake.NewClientset(mirrorOf(static, "h0"))
	var seen metav1.DeleteOptions
	// The fake tracker ignores preconditions; enforce them as the API
	// server does (409 Conflict).
	client.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		d := a.(k8stesting.DeleteAction)
		seen = d.GetDeleteOptions()
		if pc := seen.Preconditions; pc != nil && pc.UID != nil {
			obj, err := client.Tracker().Get(v1.SchemeGroupVersion.WithResource("pods"), d.GetNamespace(), d.GetName())
			if err == nil && obj.(*v1.Pod).UID != *pc.UID {
				return true, nil, apierrors.NewConflict(v1.Resource("pods"), d.GetName(), errors.New("uid precondition failed"))
			}
		}
		return false, nil, nil
	})
	m := New(client)

	// A UID that does not match: nothing deleted, no error.
	other := types.UID("someone-else")
	if deleted, err := m.DeleteMirror(ctx, "kube-system/etcd-n1", &other); err != nil || deleted {
		t.Errorf("mismatched uid: deleted %v err %v", deleted, err)
	}
	if seen.Preconditions == nil || seen.Preconditions.UID == nil || *seen.Preconditions.UID != other {
		t.Errorf("no UID precondition sent: %+v", seen)
	}
	if seen.GracePeriodSeconds == nil || *seen.GracePeriodSeconds != 0 {
		t.Errorf("grace period = %v, want 0", seen.GracePeriodSeconds)
	}

	uid := types.UID("mirror-uid")
	if deleted, err := m.DeleteMirror(ctx, "kube-system/etcd-n1", &uid); err != nil || !deleted {
		t.Errorf("matching uid: deleted %v err %v", deleted, err)
	}
	// Gone already: not an error.
	if deleted, err := m.DeleteMirror(ctx, "kube-system/etcd-n1", &uid); err != nil || deleted {
		t.Errorf("already gone: deleted %v err %v", deleted, err)
	}
	if _, err := m.DeleteMirror(ctx, "etcd-n1", nil); err == nil {
		t.Errorf("a name without namespace was accepted")
	}
}
