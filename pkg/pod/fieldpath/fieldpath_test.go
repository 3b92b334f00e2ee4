package fieldpath

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func q(s string) resource.Quantity { return resource.MustParse(s) }

func testPod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u-1",
			Labels:      map[string]string{"b": "2", "a": "one \"quoted\"\n"},
			Annotations: map[string]string{"example.com/x": "y", "note": "x y"}},
		Spec: v1.PodSpec{
			NodeName: "node-a", ServiceAccountName: "sa", SchedulerName: "default-scheduler",
			InitContainers: []v1.Container{{Name: "init", Resources: v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceMemory: q("1Mi")}}}},
			Containers: []v1.Container{{Name: "app", Resources: v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceCPU: q("250m"), v1.ResourceMemory: q("32Mi")},
				Limits:   v1.ResourceList{v1.ResourceCPU: q("1250m"), v1.ResourceMemory: q("64Mi"), "hugepages-2Mi": q("4Mi")},
			}}, {Name: "nolimits"}, {Name: "zerolimit", Resources: v1.ResourceRequirements{
				Limits: v1.ResourceList{v1.ResourceMemory: q("0")}}}},
			EphemeralContainers: []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug"}}},
		},
		Status: v1.PodStatus{Phase: v1.PodRunning},
	}
}

func TestFormatMap(t *testing.T) {
	for _, tc := range []struct {
		m    map[string]string
		want string
	}{
		{nil, ""},
		{map[string]string{"b": "2", "a": "1"}, "a=\"1\"\nb=\"2\""},
		{map[string]string{"k": "tab\there \"q\" é\n"}, "k=\"tab\\there \\\"q\\\" é\\n\""},
		// Keys are sorted, not lines: "a" before "a-b" and "a.b" although
		// '-' and '.' sort before '='. (The kubernetes provider sorted whole
		// lines; upstream's FormatMap sorts keys.)
		{map[string]string{"a.b": "2", "a": "1", "a-b": "3"}, "a=\"1\"\na-b=\"3\"\na.b=\"2\""},
	} {
		if got := FormatMap(tc.m); got != tc.want {
			t.Errorf("FormatMap(%v) = %q, want %q", tc.m, got, tc.want)
		}
	}
}

func TestPodField(t *testing.T) {
	pod := testPod()
	for _, tc := range []struct {
		path, want string
		err        bool
	}{
		{path: "metadata.name", want: "web"},
		{path: "metadata.namespace", want: "ns"},
		{path: "metadata.uid", want: "u-1"},
		{path: "metadata.labels", want: "a=\"one \\\"quoted\\\"\\n\"\nb=\"2\""},
		{path: "metadata.annotations", want: "example.com/x=\"y\"\nnote=\"x y\""},
		{path: "metadata.labels['b']", want: "2"},
		{path: "metadata.labels['missing']", want: ""},
		{path: "metadata.annotations['example.com/x']", want: "y"},
		{path: "metadata.annotations['Example.com/X']", want: ""},
		// An invalid key is an error, as upstream (the virtual engine and
		// the kubernetes provider returned "" for it).
		{path: "metadata.labels['bad key!']", err: true},
		{path: "metadata.annotations['bad key!']", err: true},
		{path: "metadata.name['x']", err: true},
		{path: "['x']", err: true},
		// Volumes project metadata only.
		{path: "spec.nodeName", err: true},
		{path: "status.podIP", err: true},
	} {
		got, err := PodField(pod, tc.path)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("PodField(%q) = %q, %v; want %q, error %v", tc.path, got, err, tc.want, tc.err)
		}
	}
}

func TestEnvField(t *testing.T) {
	pod := testPod()
	podIPs, hostIPs := []string{"10.1.0.2", "fd00::2"}, []string{"192.0.2.1", "2001:db8::1"}
	for _, tc := range []struct {
		path            string
		podIPs, hostIPs []string
		want            string
		err             string
	}{
		{path: "metadata.name", want: "web"},
		{path: "metadata.namespace", want: "ns"},
		{path: "metadata.uid", want: "u-1"},
		{path: "metadata.labels['b']", want: "2"},
		{path: "metadata.annotations['example.com/x']", want: "y"},
		{path: "spec.nodeName", want: "node-a"},
		{path: "spec.host", want: "node-a"},
		{path: "spec.serviceAccountName", want: "sa"},
		{path: "status.podIP", want: "10.1.0.2"},
		{path: "status.podIPs", want: "10.1.0.2,fd00::2"},
		{path: "status.hostIP", want: "192.0.2.1"},
		{path: "status.hostIPs", want: "192.0.2.1,2001:db8::1"},
		{path: "status.podIP", podIPs: []string{}, want: ""}, // before the sandbox has one
		{path: "status.podIPs", podIPs: []string{}, want: ""},
		// The node's IP not known is an error, as upstream (the virtual
		// engine gave "").
		{path: "status.hostIP", hostIPs: []string{}, err: "not known"},
		{path: "status.hostIPs", hostIPs: []string{}, err: "not known"},
		// Not downward API fields for env: upstream's kubelet answers
		// "unsupported fieldPath" (envvars returned the values).
		{path: "spec.restartPolicy", err: "unsupported fieldPath"},
		{path: "spec.schedulerName", err: "unsupported fieldPath"},
		{path: "status.phase", err: "unsupported fieldPath"},
		{path: "spec.containers", err: "unsupported fieldPath"},
		{path: "metadata.labels['bad key!']", err: "invalid key subscript"},
	} {
		pips, hips := podIPs, hostIPs
		if tc.podIPs != nil {
			pips = tc.podIPs
		}
		if tc.hostIPs != nil {
			hips = tc.hostIPs
		}
		got, err := EnvField(pod, tc.path, pips, hips)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("EnvField(%s) = %q, %v; want error %q", tc.path, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("EnvField(%s) = %q, %v; want %q", tc.path, got, err, tc.want)
		}
	}
}

func TestContainerResource(t *testing.T) {
	alloc := v1.ResourceList{v1.ResourceCPU: q("2"), v1.ResourceMemory: q("8Gi"), v1.ResourceEphemeralStorage: q("10Gi")}
	podLevel := &v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: q("1Gi"), v1.ResourceEphemeralStorage: q("1Gi")}}
	for _, tc := range []struct {
		self         string // the container whose env it is ("" for a volume)
		container    string // ref.containerName
		res, divisor string
		podResources *v1.ResourceRequirements
		want         string
		err          string
	}{
		{container: "app", res: "limits.cpu", want: "2"}, // 1.25 rounded up
		{container: "app", res: "limits.cpu", divisor: "1m", want: "1250"},
		{container: "app", res: "requests.cpu", divisor: "1m", want: "250"},
		{container: "app", res: "requests.cpu", want: "1"},
		{container: "app", res: "limits.memory", want: "67108864"},
		{container: "app", res: "limits.memory", divisor: "1Mi", want: "64"},
		{container: "app", res: "requests.memory", divisor: "1Mi", want: "32"},
		{container: "app", res: "limits.hugepages-2Mi", divisor: "1Mi", want: "4"},
		{container: "app", res: "requests.hugepages-2Mi", want: "0"},
		{container: "app", res: "limits.ephemeral-storage", divisor: "1Gi", want: "10"}, // allocatable
		{container: "nolimits", res: "limits.cpu", divisor: "1m", want: "2000"},
		{container: "nolimits", res: "limits.memory", divisor: "1Gi", want: "8"},
		{container: "nolimits", res: "limits.hugepages-2Mi", want: "0"}, // never defaulted
		{container: "nolimits", res: "requests.memory", want: "0"},
		{container: "init", res: "requests.memory", divisor: "1Ki", want: "1024"},
		{container: "init", res: "limits.memory", divisor: "1Gi", want: "8"},
		// A limit set to zero is defaulted too, as upstream (the virtual
		// engine kept 0).
		{container: "zerolimit", res: "limits.memory", divisor: "1Gi", want: "8"},
		// The container's own env: self, or another container by name.
		{self: "nolimits", res: "limits.cpu", want: "2"},
		{self: "app", res: "limits.cpu", divisor: "1m", want: "1250"},
		{self: "nolimits", container: "app", res: "limits.memory", divisor: "1Mi", want: "64"},
		{self: "debug", res: "requests.cpu", want: "0"}, // an ephemeral container's own env
		// The pod-level limit comes before allocatable, for env and
		// volumes alike (cpu and memory; ephemeral-storage has none).
		{container: "nolimits", res: "limits.memory", divisor: "1Mi", podResources: podLevel, want: "1024"},
		{self: "nolimits", res: "limits.memory", divisor: "1Mi", podResources: podLevel, want: "1024"},
		{container: "nolimits", res: "limits.cpu", podResources: podLevel, want: "2"},
		{container: "nolimits", res: "limits.ephemeral-storage", divisor: "1Gi", podResources: podLevel, want: "10"},
		{container: "app", res: "limits.memory", divisor: "1Mi", podResources: podLevel, want: "64"},
		// Errors, in upstream's words.
		{container: "debug", res: "limits.cpu", err: "container debug not found"}, // ephemeral: not by name
		{container: "nope", res: "limits.cpu", err: "container nope not found"},
		{res: "limits.cpu", err: "not found"}, // a volume must name one
		// Resources the downward API does not expose are refused, as
		// upstream (the virtual engine gave any resource, defaulted to
		// allocatable).
		{container: "app", res: "limits.gpu", err: "unsupported container resource"},
		{container: "app", res: "limits.nvidia.com/gpu", err: "unsupported container resource"},
		{container: "app", res: "cpu", err: "unsupported container resource"},
		{container: "app", res: "usage.cpu", err: "unsupported container resource"},
	} {
		pod := testPod()
		pod.Spec.Resources = tc.podResources
		var self *v1.Container
		if tc.self == "debug" {
			c := v1.Container(pod.Spec.EphemeralContainers[0].EphemeralContainerCommon)
			self = &c
		} else if tc.self != "" {
			self = &pod.Spec.Containers[map[string]int{"app": 0, "nolimits": 1}[tc.self]]
		}
		ref := &v1.ResourceFieldSelector{ContainerName: tc.container, Resource: tc.res}
		if tc.divisor != "" {
			ref.Divisor = q(tc.divisor)
		}
		got, err := ContainerResource(pod, self, ref, alloc)
		name := tc.self + "/" + tc.container + " " + tc.res + " /" + tc.divisor
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s = %q, %v; want error %q", name, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s = %q, %v; want %q", name, got, err, tc.want)
		}
	}
}
