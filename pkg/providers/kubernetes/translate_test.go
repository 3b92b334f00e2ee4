package kubernetes

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gokubelet/kubelet/pkg/errdefs"
)

func originPod() *v1.Pod {
	optional := true
	exp := int64(3607)
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "shop", UID: "uid-1",
			Labels:      map[string]string{"app": "web"},
			Annotations: map[string]string{"kubernetes.io/config.seen": "x", "note": "keep"}},
		Spec: v1.PodSpec{
			NodeName: "vk-remote", ServiceAccountName: "shopper", NodeSelector: map[string]string{"type": "virtual-kubelet"},
			Affinity: &v1.Affinity{}, PriorityClassName: "high", Priority: ptrTo(int32(1000)), SchedulerName: "custom",
			Tolerations:      []v1.Toleration{{Key: taintKey, Operator: v1.TolerationOpExists}, {Key: "other", Operator: v1.TolerationOpExists}},
			ImagePullSecrets: []v1.LocalObjectReference{{Name: "regcred"}},
			ReadinessGates:   []v1.PodReadinessGate{{ConditionType: "x"}},
			Containers: []v1.Container{{Name: "main", Image: "img",
				Env: []v1.EnvVar{
					{Name: "PASS", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "creds"}, Key: "p"}}},
					{Name: "MODE", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Key: "m"}}},
				},
				EnvFrom: []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
			}},
			Volumes: []v1.Volume{
				{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Optional: &optional}}},
				{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
					{Path: "ns", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}},
					{Path: "cpu", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "main", Resource: "limits.cpu", Divisor: resource.MustParse("1m")}},
				}}}},
				{Name: "kube-api-access-abcde", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
					{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &exp}},
					{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []v1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
					{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
				}}}},
			},
		},
	}
}

func TestToTarget(t *testing.T) {
	pl, err := toTarget(originPod(), "vk-remote", "vk-shop")
	if err != nil {
		t.Fatal(err)
	}
	tp := pl.pod
	if tp.Name != "web-1" || tp.Namespace != "vk-shop" || tp.UID != "" {
		t.Errorf("identity %s/%s %s", tp.Namespace, tp.Name, tp.UID)
	}
	if tp.Labels[LabelNode] != "vk-remote" || tp.Labels[LabelOriginUID] != "uid-1" || tp.Labels["app"] != "web" {
		t.Errorf("labels = %v", tp.Labels)
	}
	if tp.Annotations[AnnotationOriginNamespace] != "shop" || tp.Annotations[AnnotationOriginName] != "web-1" ||
		tp.Annotations["note"] != "keep" || tp.Annotations["kubernetes.io/config.seen"] != "" {
		t.Errorf("annotations = %v", tp.Annotations)
	}
	s := tp.Spec
	if s.NodeName != "" || s.NodeSelector != nil || s.Affinity != nil || s.PriorityClassName != "" || s.Priority != nil ||
		s.SchedulerName != "" || s.ServiceAccountName != "" || s.ReadinessGates != nil || *s.AutomountServiceAccountToken || *s.EnableServiceLinks {
		t.Errorf("origin-only fields kept: %+v", s)
	}
	if len(s.Tolerations) != 1 || s.Tolerations[0].Key != "other" {
		t.Errorf("tolerations = %v: the virtual node toleration must go (no loops)", s.Tolerations)
	}
	kinds := map[string][]objectCopy{}
	for _, c := range pl.copies {
		kinds[c.kind] = append(kinds[c.kind], c)
		// Regression: a token copy was named after its volume and path
		// ("kube-api-access-x/token-..."), which the API server refuses.
		if errs := validation.IsDNS1123Subdomain(c.target); len(errs) > 0 {
			t.Errorf("copy name %q is not a valid object name: %v", c.target, errs)
		}
	}
	// cfg (volume, env, envFrom: one copy), kube-root-ca.crt.
	if len(kinds[copyConfigMap]) != 2 || len(kinds[copySecret]) != 2 || len(kinds[copyToken]) != 1 || len(kinds[copyDownward]) != 2 {
		t.Fatalf("copies = %+v", pl.copies)
	}
	cfgCopy := copyName("uid-1", copyConfigMap, "cfg")
	if !strings.HasPrefix(cfgCopy, "cfg-") || s.Volumes[0].ConfigMap.Name != cfgCopy ||
		s.Containers[0].EnvFrom[0].ConfigMapRef.Name != cfgCopy || s.Containers[0].Env[1].ValueFrom.ConfigMapKeyRef.Name != cfgCopy {
		t.Errorf("configmap references not renamed to %s: %+v", cfgCopy, s)
	}
	for _, c := range kinds[copyConfigMap] {
		if c.source == "cfg" && c.optional {
			t.Error("cfg is required by env, optional only by the volume: the copy must be required")
		}
	}
	if s.Containers[0].Env[0].ValueFrom.SecretKeyRef.Name != copyName("uid-1", copySecret, "creds") || s.ImagePullSecrets[0].Name != copyName("uid-1", copySecret, "regcred") {
		t.Errorf("secret references not renamed")
	}
	info := s.Volumes[1].Projected
	if info == nil || len(info.Sources) != 2 || info.Sources[0].ConfigMap == nil || info.Sources[1].DownwardAPI == nil ||
		info.Sources[1].DownwardAPI.Items[0].Path != "cpu" || info.Sources[0].ConfigMap.Items[0].Path != "ns" {
		t.Fatalf("downward volume = %+v", s.Volumes[1])
	}
	var nsValue string
	for _, c := range kinds[copyDownward] {
		if c.target == info.Sources[0].ConfigMap.Name {
			nsValue = c.data[info.Sources[0].ConfigMap.Items[0].Key]
		}
	}
	if nsValue != "shop" {
		t.Errorf("downward metadata.namespace = %q, want the origin's", nsValue)
	}
	api := s.Volumes[2].Projected.Sources
	if api[0].Secret == nil || api[0].Secret.Items[0].Key != tokenKey || api[0].Secret.Items[0].Path != "token" || api[1].ConfigMap == nil || api[2].ConfigMap == nil {
		t.Errorf("service account volume = %+v", api)
	}
	if tok := kinds[copyToken][0]; tok.source != "shopper" || tok.expiration != 3607 {
		t.Errorf("token copy = %+v", tok)
	}
}

func TestToTargetRefusesPVC(t *testing.T) {
	p := originPod()
	p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}})
	if _, err := toTarget(p, "vk", "ns"); !errdefs.IsInvalid(err) || !strings.Contains(err.Error(), `volume "data"`) {
		t.Errorf("err = %v", err)
	}
}

func TestFromTarget(t *testing.T) {
	pl, _ := toTarget(originPod(), "vk-remote", "vk-shop")
	tp := pl.pod
	tp.UID = "target-uid"
	tp.Status = v1.PodStatus{Phase: v1.PodRunning, HostIP: "10.9.9.9", PodIP: "10.244.0.5", ObservedGeneration: 4,
		ContainerStatuses: []v1.ContainerStatus{{Name: "main", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}}
	// The identity comes from the record, not the target's annotations.
	tp.Annotations[AnnotationOriginName] = "forged-name"
	tp.Annotations[AnnotationOriginNamespace] = "forged-ns"
	tp.Labels[LabelOriginUID] = "forged-uid"
	rec := &ownedPod{OriginNamespace: "shop", OriginName: "web-1", OriginUID: "uid-1", TargetNamespace: "vk-shop", TargetUID: "target-uid"}
	op := fromTarget(tp, rec, "vk-remote")
	if op.Namespace != "shop" || op.Name != "web-1" || op.UID != "uid-1" || op.Spec.NodeName != "vk-remote" {
		t.Errorf("identity %s/%s %s on %s", op.Namespace, op.Name, op.UID, op.Spec.NodeName)
	}
	if op.Status.PodIP != "10.244.0.5" || op.Status.HostIP != "" || op.Status.ObservedGeneration != 0 {
		t.Errorf("status = %+v", op.Status)
	}
	if _, ok := op.Labels[LabelNode]; ok {
		t.Error("owner labels leak into the origin's view")
	}
	markGone(op)
	if op.Status.Phase != v1.PodFailed || op.Status.ContainerStatuses[0].State.Terminated == nil {
		t.Errorf("gone = %+v", op.Status)
	}
}

func TestCapacity(t *testing.T) {
	ready := []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}
	alloc := v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("4Gi"), v1.ResourcePods: resource.MustParse("110")}
	node := func(name string, mod func(*v1.Node)) *v1.Node {
		n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: v1.NodeStatus{Allocatable: alloc, Conditions: ready}}
		if mod != nil {
			mod(n)
		}
		return n
	}
	nodes := []*v1.Node{
		node("a", nil), node("b", nil),
		node("virtual", func(n *v1.Node) {
			n.Spec.Taints = []v1.Taint{{Key: taintKey, Value: "kubernetes", Effect: v1.TaintEffectNoSchedule}}
		}),
		node("cordoned", func(n *v1.Node) { n.Spec.Unschedulable = true }),
		node("notready", func(n *v1.Node) {
			n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionFalse}}
		}),
	}
	sum, n, _ := Capacity(nodes)
	if n != 2 {
		t.Errorf("%d nodes counted, want 2", n)
	}
	if q := sum[v1.ResourceCPU]; q.Value() != 4 {
		t.Errorf("cpu = %s", q.String())
	}
	if q := sum[v1.ResourcePods]; q.Value() != 220 {
		t.Errorf("pods = %s", q.String())
	}
}

func TestParseConfig(t *testing.T) {
	c, err := ParseConfig([]byte(`{"kubeconfig": "t.kubeconfig", "namespacePrefix": "vk-", "namespaces": {"a": "b"}}`), "/etc/gk")
	if err != nil {
		t.Fatal(err)
	}
	if c.Kubeconfig != "/etc/gk/t.kubeconfig" || c.KubeAPIQPS != 100 || !c.createNamespaces() {
		t.Errorf("config = %+v", c)
	}
	if ns, _ := c.targetNamespace("a"); ns != "b" {
		t.Errorf("mapped = %s", ns)
	}
	if ns, _ := c.targetNamespace("shop"); ns != "vk-shop" {
		t.Errorf("prefixed = %s", ns)
	}
	if _, err := c.targetNamespace(strings.Repeat("x", 62)); err == nil {
		t.Error("a target namespace longer than 63 characters was accepted")
	}
	for raw, want := range map[string]string{
		``:                                "kubeconfig",
		`{"namespacePrefix": "x"}`:        "kubeconfig",
		`{"kubeconfig": "k", "bogus": 1}`: "bogus",
		`{"kubeconfig": "k", "namespacePrefix": "UP"}`: "namespacePrefix",
	} {
		if _, err := ParseConfig([]byte(raw), ""); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error naming %s", raw, err, want)
		}
	}
}

func TestCopyName(t *testing.T) {
	for _, name := range []string{"kube-api-access-x/token", "Upper_Case", "-.-", strings.Repeat("a", 300), "cfg"} {
		got := copyName("uid", copyToken, name)
		if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
			t.Errorf("copyName(%q) = %q: %v", name, got, errs)
		}
	}
	if copyName("u1", copySecret, "a") == copyName("u2", copySecret, "a") || copyName("u1", copySecret, "a") == copyName("u1", copyConfigMap, "a") {
		t.Error("copies of different pods or kinds collide")
	}
}

// The origin values of a downward API volume's fieldRef items are what a
// downwardAPI volume on a CRI node shows (fieldpath.PodField).
func TestDownwardSourcesValues(t *testing.T) {
	pod := originPod()
	pod.Labels = map[string]string{"a": "1", "a.b": "2", "a-b": "3"}
	for _, tc := range []struct {
		path, want string
		err        bool
	}{
		{path: "metadata.name", want: "web-1"},
		{path: "metadata.uid", want: "uid-1"},
		{path: "metadata.labels['a.b']", want: "2"},
		// Keys sorted, not whole lines (this provider sorted lines, which
		// put "a-b" and "a.b" before "a"); upstream's FormatMap sorts keys.
		{path: "metadata.labels", want: "a=\"1\"\na-b=\"3\"\na.b=\"2\""},
		// An invalid key is an error, as upstream (this provider gave "").
		{path: "metadata.labels['bad key!']", err: true},
		{path: "spec.nodeName", err: true},
	} {
		var copies []objectCopy
		add := func(c objectCopy) string { copies = append(copies, c); return c.target }
		items := []v1.DownwardAPIVolumeFile{{Path: "f", FieldRef: &v1.ObjectFieldSelector{FieldPath: tc.path}}}
		srcs, err := downwardSources(pod, "info", items, add)
		if tc.err {
			if !errdefs.IsInvalid(err) {
				t.Errorf("%s: err = %v, want Invalid", tc.path, err)
			}
			continue
		}
		if err != nil || len(copies) != 1 || len(srcs) != 1 {
			t.Fatalf("%s: %v %v %v", tc.path, srcs, copies, err)
		}
		if got := copies[0].data[srcs[0].ConfigMap.Items[0].Key]; got != tc.want {
			t.Errorf("%s = %q, want %q", tc.path, got, tc.want)
		}
	}
}
