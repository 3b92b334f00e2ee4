package kubelet

import (
	"context"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Pods serves /pods: the desired pods with the status the kubelet computed.
func (k *Kubelet) Pods() []*v1.Pod {
	pods := k.pods.List()
	out := make([]*v1.Pod, 0, len(pods))
	for _, p := range pods {
		c := p.DeepCopy()
		if st, ok := k.status.GetPodStatus(p.UID); ok {
			c.Status = st
		}
		out = append(out, c)
	}
	return out
}

// RunningPods serves /runningpods/: what the runtime runs, as bare pods.
func (k *Kubelet) RunningPods(ctx context.Context) ([]*v1.Pod, error) {
	running, err := k.runtime.GetPods(ctx, false)
	if err != nil {
		return nil, err
	}
	out := make([]*v1.Pod, 0, len(running))
	for _, rp := range running {
		p := &v1.Pod{
			TypeMeta:   metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Name: rp.Name, Namespace: rp.Namespace, UID: rp.UID},
		}
		for _, c := range rp.Containers {
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: c.Name, Image: c.Image})
		}
		out = append(out, p)
	}
	return out, nil
}
