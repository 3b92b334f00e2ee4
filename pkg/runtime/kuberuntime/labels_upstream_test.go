package kuberuntime

import (
	"testing"

	kubelettypes "k8s.io/kubelet/pkg/types"
)

// The identity labels are the ones k8s.io/kubelet publishes for the
// release followed (pkg/types), which the upstream kubelet writes and
// reads: a node taken over from it keeps its containers.
func TestIdentityLabelsAreUpstreams(t *testing.T) {
	for ours, theirs := range map[string]string{
		LabelPodName:       kubelettypes.KubernetesPodNameLabel,
		LabelPodNamespace:  kubelettypes.KubernetesPodNamespaceLabel,
		LabelPodUID:        kubelettypes.KubernetesPodUIDLabel,
		LabelContainerName: kubelettypes.KubernetesContainerNameLabel,
	} {
		if ours != theirs {
			t.Errorf("label %q, upstream %q", ours, theirs)
		}
	}
}
