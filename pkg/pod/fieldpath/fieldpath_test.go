package fieldpath

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func testPod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u-1",
			Labels:      map[string]string{"b": "2", "a": "one \"quoted\"\n"},
			Annotations: map[string]string{"example.com/x": "y"}},
		Spec: v1.PodSpec{
			InitContainers: []v1.Container{{Name: "init", Resources: v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Mi")}}}},
			Containers: []v1.Container{{Name: "app", Resources: v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m"), v1.ResourceMemory: resource.MustParse("32Mi")},
				Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("1250m"), v1.ResourceMemory: resource.MustParse("64Mi"), "hugepages-2Mi": resource.MustParse("4Mi")},
			}}, {Name: "nolimits"}},
			EphemeralContainers: []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug"}}},
		},
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
		{path: "metadata.annotations", want: "example.com/x=\"y\""},
		{path: "metadata.labels['b']", want: "2"},
		{path: "metadata.labels['missing']", want: ""},
		{path: "metadata.annotations['example.com/x']", want: "y"},
		{path: "metadata.annotations['Example.com/X']", want: ""},
		{path: "metadata.labels['bad key!']", err: true},
		{path: "metadata.name['x']", err: true},
		{path: "spec.nodeName", err: true},
		{path: "['x']", err: true},
	} {
		got, err := PodField(pod, tc.path)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("PodField(%q) = %q, %v; want %q, error %v", tc.path, got, err, tc.want, tc.err)
		}
	}
	if got := FormatMap(nil); got != "" {
		t.Errorf("FormatMap(nil) = %q", got)
	}
}

func TestContainerResource(t *testing.T) {
	pod := testPod()
	alloc := v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("8Gi"), v1.ResourceEphemeralStorage: resource.MustParse("10Gi")}
	for _, tc := range []struct {
		container, res, divisor, want string
		err                           bool
	}{
		{container: "app", res: "limits.cpu", want: "2"}, // 1.25 rounded up
		{container: "app", res: "limits.cpu", divisor: "1m", want: "1250"},
		{container: "app", res: "requests.cpu", divisor: "1m", want: "250"},
		{container: "app", res: "requests.cpu", want: "1"},
		{container: "app", res: "limits.memory", want: "67108864"},
		{container: "app", res: "limits.memory", divisor: "1Mi", want: "64"},
		{container: "app", res: "requests.memory", divisor: "1Mi", want: "32"},
		{container: "app", res: "limits.hugepages-2Mi", divisor: "1Mi", want: "4"},
		{container: "app", res: "limits.ephemeral-storage", divisor: "1Gi", want: "10"}, // allocatable
		{container: "nolimits", res: "limits.cpu", divisor: "1m", want: "2000"},
		{container: "nolimits", res: "limits.memory", divisor: "1Gi", want: "8"},
		{container: "nolimits", res: "requests.memory", want: "0"},
		{container: "init", res: "requests.memory", divisor: "1Ki", want: "1024"},
		{container: "debug", res: "limits.cpu", err: true},
		{container: "nope", res: "limits.cpu", err: true},
		{container: "app", res: "limits.gpu", err: true},
		{container: "app", res: "cpu", err: true},
	} {
		ref := &v1.ResourceFieldSelector{ContainerName: tc.container, Resource: tc.res}
		if tc.divisor != "" {
			ref.Divisor = resource.MustParse(tc.divisor)
		}
		got, err := ContainerResource(pod, tc.container, ref, alloc)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("%s %s /%s = %q, %v; want %q, error %v", tc.container, tc.res, tc.divisor, got, err, tc.want, tc.err)
		}
	}
}
