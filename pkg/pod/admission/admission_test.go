package admission

import (
	"reflect"
	"runtime"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

// node has 1900m cpu, 2Gi memory, 10Gi ephemeral storage, 2 example.com/gpu
// and room for 3 pods.
func testNode() *v1.Node {
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "node-uid",
			Labels: map[string]string{v1.LabelOSStable: "linux", "zone": "a"}},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{
			v1.ResourceCPU:              resource.MustParse("1900m"),
			v1.ResourceMemory:           resource.MustParse("2Gi"),
			v1.ResourceEphemeralStorage: resource.MustParse("10Gi"),
			v1.ResourcePods:             resource.MustParse("3"),
			"example.com/gpu":           resource.MustParse("2"),
		}},
	}
}

type podOpt func(*v1.Pod)

func mkPod(uid string, opts ...podOpt) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p-" + uid, Namespace: "default", UID: types.UID(uid)},
		Spec:       v1.PodSpec{NodeName: "n1", Containers: []v1.Container{{Name: "c"}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func req(kv ...string) podOpt {
	return func(p *v1.Pod) {
		p.Spec.Containers[0].Resources.Requests = list(kv...)
	}
}

func list(kv ...string) v1.ResourceList {
	l := v1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func phase(ph v1.PodPhase) podOpt { return func(p *v1.Pod) { p.Status.Phase = ph } }

func hostPortOpt(proto v1.Protocol, ip string, port int32) podOpt {
	return func(p *v1.Pod) {
		p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports,
			v1.ContainerPort{ContainerPort: 80, HostPort: port, HostIP: ip, Protocol: proto})
	}
}

func annotate(k, v string) podOpt {
	return func(p *v1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[k] = v
	}
}

func priority(v int32) podOpt { return func(p *v1.Pod) { p.Spec.Priority = &v } }

var always = v1.ContainerRestartPolicyAlways

func TestAdmit(t *testing.T) {
	noExecute := func(n *v1.Node) {
		n.Spec.Taints = []v1.Taint{{Key: "dedicated", Value: "db", Effect: v1.TaintEffectNoExecute}}
	}
	tests := []struct {
		name     string
		pod      *v1.Pod
		node     func(*v1.Node)
		nilNode  bool
		admitted []*v1.Pod
		want     Result
	}{
		{
			name: "fits on an empty node",
			pod:  mkPod("a", req("cpu", "1", "memory", "1Gi")),
			want: Result{Admit: true},
		},
		{
			name:    "no node object",
			pod:     mkPod("a"),
			nilNode: true,
			want:    Result{Reason: "InvalidNodeInfo", Message: "Kubelet cannot get node info."},
		},
		{
			name:     "cpu: requested plus used exceeds allocatable",
			pod:      mkPod("a", req("cpu", "2")),
			admitted: []*v1.Pod{mkPod("b", req("cpu", "500m"))},
			want: Result{Reason: "OutOfcpu",
				Message: "Node didn't have enough resource: cpu, requested: 2000, used: 500, capacity: 1900"},
		},
		{
			name:     "cpu: exactly fills the node",
			pod:      mkPod("a", req("cpu", "1400m")),
			admitted: []*v1.Pod{mkPod("b", req("cpu", "500m"))},
			want:     Result{Admit: true},
		},
		{
			name:     "memory",
			pod:      mkPod("a", req("memory", "1536Mi")),
			admitted: []*v1.Pod{mkPod("b", req("memory", "1Gi"))},
			want: Result{Reason: "OutOfmemory",
				Message: "Node didn't have enough resource: memory, requested: 1610612736, used: 1073741824, capacity: 2147483648"},
		},
		{
			name: "ephemeral-storage",
			pod:  mkPod("a", req("ephemeral-storage", "11Gi")),
			want: Result{Reason: "OutOfephemeral-storage",
				Message: "Node didn't have enough resource: ephemeral-storage, requested: 11811160064, used: 0, capacity: 10737418240"},
		},
		{
			name:     "extended resource",
			pod:      mkPod("a", req("example.com/gpu", "2")),
			admitted: []*v1.Pod{mkPod("b", req("example.com/gpu", "1"))},
			want: Result{Reason: "OutOfexample.com/gpu",
				Message: "Node didn't have enough resource: example.com/gpu, requested: 2, used: 1, capacity: 2"},
		},
		{
			name: "extended resource the node does not advertise is ignored",
			pod:  mkPod("a", req("other.example.com/fpga", "4")),
			want: Result{Admit: true},
		},
		{
			name: "hugepages the node does not have",
			pod:  mkPod("a", req("hugepages-2Mi", "4Mi")),
			want: Result{Reason: "OutOfhugepages-2Mi",
				Message: "Node didn't have enough resource: hugepages-2Mi, requested: 4194304, used: 0, capacity: 0"},
		},
		{
			name:     "pod count",
			pod:      mkPod("a"),
			admitted: []*v1.Pod{mkPod("b"), mkPod("c"), mkPod("d")},
			want: Result{Reason: "OutOfpods",
				Message: "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3"},
		},
		{
			name:     "pod count is checked before cpu",
			pod:      mkPod("a", req("cpu", "10")),
			admitted: []*v1.Pod{mkPod("b"), mkPod("c"), mkPod("d")},
			want: Result{Reason: "OutOfpods",
				Message: "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3"},
		},
		{
			name: "terminal, mirror and same-UID pods are not counted",
			pod:  mkPod("a", req("cpu", "1")),
			admitted: []*v1.Pod{
				mkPod("b", req("cpu", "1"), phase(v1.PodSucceeded)),
				mkPod("c", req("cpu", "1"), phase(v1.PodFailed)),
				mkPod("d", req("cpu", "1"), annotate(podspec.ConfigMirrorAnnotation, "h")),
				mkPod("a", req("cpu", "1")),
				mkPod("e", req("cpu", "900m"), phase(v1.PodRunning)),
			},
			want: Result{Admit: true},
		},
		{
			name: "init container peak above the app containers' sum",
			pod: mkPod("a", req("cpu", "100m"), func(p *v1.Pod) {
				p.Spec.InitContainers = []v1.Container{{Name: "init",
					Resources: v1.ResourceRequirements{Requests: list("cpu", "2")}}}
			}),
			want: Result{Reason: "OutOfcpu",
				Message: "Node didn't have enough resource: cpu, requested: 2000, used: 0, capacity: 1900"},
		},
		{
			name: "sidecar adds to the app containers and to later init containers",
			// app 1000m + sidecar 500m = 1500m; init after sidecar 500m+1000m = 1500m;
			// overhead 100m -> 1600m, fits; a sidecar of 1000m would not.
			pod: mkPod("a", req("cpu", "1"), func(p *v1.Pod) {
				p.Spec.InitContainers = []v1.Container{
					{Name: "sidecar", RestartPolicy: &always, Resources: v1.ResourceRequirements{Requests: list("cpu", "500m")}},
					{Name: "init", Resources: v1.ResourceRequirements{Requests: list("cpu", "1")}},
				}
				p.Spec.Overhead = list("cpu", "100m")
			}),
			want: Result{Admit: true},
		},
		{
			name: "sidecar and overhead push the pod over",
			pod: mkPod("a", req("cpu", "1"), func(p *v1.Pod) {
				p.Spec.InitContainers = []v1.Container{
					{Name: "sidecar", RestartPolicy: &always, Resources: v1.ResourceRequirements{Requests: list("cpu", "800m")}},
				}
				p.Spec.Overhead = list("cpu", "200m")
			}),
			want: Result{Reason: "OutOfcpu",
				Message: "Node didn't have enough resource: cpu, requested: 2000, used: 0, capacity: 1900"},
		},
		{
			name: "node selector mismatch",
			pod:  mkPod("a", func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "b"} }),
			want: Result{Reason: "NodeAffinity",
				Message: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"},
		},
		{
			name: "node selector match",
			pod:  mkPod("a", func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "a"} }),
			want: Result{Admit: true},
		},
		{
			name: "required node affinity mismatch",
			pod: mkPod("a", func(p *v1.Pod) {
				p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
						MatchExpressions: []v1.NodeSelectorRequirement{{Key: "zone", Operator: v1.NodeSelectorOpIn, Values: []string{"b", "c"}}},
					}}}}}
			}),
			want: Result{Reason: "NodeAffinity",
				Message: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"},
		},
		{
			name: "required node affinity on metadata.name matches",
			pod: mkPod("a", func(p *v1.Pod) {
				p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
						MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{"n1"}}},
					}}}}}
			}),
			want: Result{Admit: true},
		},
		{
			name: "bound to another node",
			pod:  mkPod("a", func(p *v1.Pod) { p.Spec.NodeName = "n2" }),
			want: Result{Reason: "NodeName",
				Message: "Predicate NodeName failed: node(s) didn't match the requested node name"},
		},
		{
			name:     "host port taken on all addresses",
			pod:      mkPod("a", hostPortOpt("", "10.0.0.1", 8080)),
			admitted: []*v1.Pod{mkPod("b", hostPortOpt(v1.ProtocolTCP, "", 8080))},
			want: Result{Reason: "NodePorts",
				Message: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"},
		},
		{
			name:     "all addresses conflicts with a specific one",
			pod:      mkPod("a", hostPortOpt(v1.ProtocolTCP, "::", 8080)),
			admitted: []*v1.Pod{mkPod("b", hostPortOpt(v1.ProtocolTCP, "10.0.0.1", 8080))},
			want: Result{Reason: "NodePorts",
				Message: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"},
		},
		{
			name:     "same port on other addresses or protocols is free",
			pod:      mkPod("a", hostPortOpt(v1.ProtocolTCP, "10.0.0.1", 8080), hostPortOpt(v1.ProtocolUDP, "", 53)),
			admitted: []*v1.Pod{mkPod("b", hostPortOpt(v1.ProtocolTCP, "10.0.0.2", 8080), hostPortOpt(v1.ProtocolTCP, "", 53))},
			want:     Result{Admit: true},
		},
		{
			name: "host port of a sidecar counts",
			pod:  mkPod("a", hostPortOpt(v1.ProtocolTCP, "", 9000)),
			admitted: []*v1.Pod{mkPod("b", func(p *v1.Pod) {
				p.Spec.InitContainers = []v1.Container{{Name: "sidecar", RestartPolicy: &always,
					Ports: []v1.ContainerPort{{ContainerPort: 9000, HostPort: 9000}}}}
			})},
			want: Result{Reason: "NodePorts",
				Message: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"},
		},
		{
			name:     "host port of a terminated pod is free",
			pod:      mkPod("a", hostPortOpt(v1.ProtocolTCP, "", 8080)),
			admitted: []*v1.Pod{mkPod("b", hostPortOpt(v1.ProtocolTCP, "", 8080), phase(v1.PodSucceeded))},
			want:     Result{Admit: true},
		},
		{
			name: "pod os label mismatch",
			pod:  mkPod("a", func(p *v1.Pod) { p.Labels = map[string]string{v1.LabelOSStable: "windows"} }),
			want: Result{Reason: "PodOSSelectorNodeLabelDoesNotMatch",
				Message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"},
		},
		{
			name: "pod os field mismatch",
			pod:  mkPod("a", func(p *v1.Pod) { p.Spec.OS = &v1.PodOS{Name: v1.Windows} }),
			want: Result{Reason: "PodOSNotSupported",
				Message: "Failed to admit pod as the OS field doesn't match node OS"},
		},
		{
			name: "pod os field matches the node label",
			pod:  mkPod("a", func(p *v1.Pod) { p.Spec.OS = &v1.PodOS{Name: v1.Windows} }),
			node: func(n *v1.Node) { n.Labels[v1.LabelOSStable] = "windows" },
			want: Result{Admit: true},
		},
		{
			name: "os is checked before resources",
			pod:  mkPod("a", req("cpu", "10"), func(p *v1.Pod) { p.Spec.OS = &v1.PodOS{Name: v1.Windows} }),
			want: Result{Reason: "PodOSNotSupported",
				Message: "Failed to admit pod as the OS field doesn't match node OS"},
		},
		{
			name: "untolerated NoExecute taint",
			pod:  mkPod("a"),
			node: noExecute,
			want: Result{Reason: "TaintToleration",
				Message: "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate"},
		},
		{
			name: "tolerated NoExecute taint",
			pod: mkPod("a", func(p *v1.Pod) {
				p.Spec.Tolerations = []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "db",
					Effect: v1.TaintEffectNoExecute}}
			}),
			node: noExecute,
			want: Result{Admit: true},
		},
		{
			name: "NoSchedule taints are the scheduler's business",
			pod:  mkPod("a"),
			node: func(n *v1.Node) {
				n.Spec.Taints = []v1.Taint{{Key: "dedicated", Effect: v1.TaintEffectNoSchedule}}
			},
			want: Result{Admit: true},
		},
		{
			name: "static pods ignore NoExecute taints",
			pod:  mkPod("a", annotate(podspec.ConfigSourceAnnotation, podspec.SourceFile)),
			node: noExecute,
			want: Result{Admit: true},
		},
		{
			name: "resources are reported before affinity",
			pod:  mkPod("a", req("cpu", "2"), func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "b"} }),
			want: Result{Reason: "OutOfcpu",
				Message: "Node didn't have enough resource: cpu, requested: 2000, used: 0, capacity: 1900"},
		},
		{
			name:     "critical pod is admitted over capacity, with the shortage to preempt",
			pod:      mkPod("a", req("cpu", "1"), priority(2000001000)),
			admitted: []*v1.Pod{mkPod("b", req("cpu", "1500m"))},
			want: Result{Admit: true,
				Message: "Node didn't have enough resource: cpu, requested: 1000, used: 1500, capacity: 1900",
				Preempt: []Shortage{{Resource: v1.ResourceCPU, Amount: 600}}},
		},
		{
			name:     "static pod is critical",
			pod:      mkPod("a", req("cpu", "1"), annotate(podspec.ConfigSourceAnnotation, podspec.SourceFile)),
			admitted: []*v1.Pod{mkPod("b", req("cpu", "1500m"))},
			want: Result{Admit: true,
				Message: "Node didn't have enough resource: cpu, requested: 1000, used: 1500, capacity: 1900",
				Preempt: []Shortage{{Resource: v1.ResourceCPU, Amount: 600}}},
		},
		{
			name: "critical pod still fails a non-resource check",
			pod: mkPod("a", req("cpu", "10"), priority(2000000000),
				func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "b"} }),
			want: Result{Reason: "NodeAffinity",
				Message: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"},
		},
		{
			name:     "priority below critical is not",
			pod:      mkPod("a", req("cpu", "1"), priority(1999999999)),
			admitted: []*v1.Pod{mkPod("b", req("cpu", "1500m"))},
			want: Result{Reason: "OutOfcpu",
				Message: "Node didn't have enough resource: cpu, requested: 1000, used: 1500, capacity: 1900"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node := testNode()
			if tt.node != nil {
				tt.node(node)
			}
			if tt.nilNode {
				node = nil
			}
			before := tt.pod.DeepCopy()
			got := Admit(tt.pod, node, tt.admitted)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Admit() =\n  %+v\nwant\n  %+v", got, tt.want)
			}
			if tt.pod.String() != before.String() {
				t.Errorf("Admit modified the pod")
			}
		})
	}
}

func TestNodeOSDefaultsToThisMachine(t *testing.T) {
	node := testNode()
	delete(node.Labels, v1.LabelOSStable)
	pod := mkPod("a", func(p *v1.Pod) { p.Spec.OS = &v1.PodOS{Name: v1.OSName(runtime.GOOS)} })
	if got := Admit(pod, node, nil); !got.Admit {
		t.Errorf("pod for %s on an unlabelled node: %+v", runtime.GOOS, got)
	}
}

func TestContainerRestartRulesOff(t *testing.T) {
	always, never := v1.ContainerRestartPolicyAlways, v1.ContainerRestartPolicyNever
	sidecarOnly := &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "s", RestartPolicy: &always}},
		Containers:     []v1.Container{{Name: "c"}},
	}}
	if r := ContainerRestartRulesOff(sidecarOnly); !r.Admit {
		t.Errorf("a sidecar alone is refused: %+v", r)
	}
	uses := sidecarOnly.DeepCopy()
	uses.Spec.Containers[0].RestartPolicy = &never
	uses.Spec.Containers[0].RestartPolicyRules = []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart}}
	r := ContainerRestartRulesOff(uses)
	if r.Admit || r.Reason != ReasonContainerRestartRulesNotSupported ||
		!strings.Contains(r.Message, "spec.containers[0].restartPolicy, spec.containers[0].restartPolicyRules") {
		t.Errorf("container restart fields with the gate off: %+v", r)
	}
}
