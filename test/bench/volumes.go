package main

// The volumes workload: how long a pod takes to start when it mounts the
// volumes nearly every pod has: a configMap, a secret, the projected
// service-account token (the TokenRequest the kubelet makes for it) and an
// emptyDir. A stream of pods, one every volEvery, each with the four; the
// configMap and the secret are shared and exist before the first pod.

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const (
	volConfigMap = "bench-volumes"
	volSecret    = "bench-volumes"
)

// volumesPod is benchPod with a configMap, a secret, the service-account
// token (the API server's admission adds its projected volume) and an
// emptyDir mounted.
func volumesPod(name string) *v1.Pod {
	p := benchPod(name)
	p.Spec.AutomountServiceAccountToken = ptr.To(true)
	p.Spec.Volumes = []v1.Volume{
		{Name: "config", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
			LocalObjectReference: v1.LocalObjectReference{Name: volConfigMap}}}},
		{Name: "secret", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: volSecret}}},
		{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
	}
	p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{
		{Name: "config", MountPath: "/etc/bench-config"},
		{Name: "secret", MountPath: "/etc/bench-secret"},
		{Name: "scratch", MountPath: "/scratch"},
	}
	return p
}

// runVolumes is the volumes workload of one kubelet's round. The pods are
// deleted before it returns.
func (b *bench) runVolumes(ctx context.Context, kind, ns string, t *tracker) error {
	o := b.opt
	if _, err := b.cs.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: volConfigMap},
		Data: map[string]string{"app.conf": "level=info\n", "features": "a,b,c\n"}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	if _, err := b.cs.CoreV1().Secrets(ns).Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: volSecret},
		StringData: map[string]string{"password": "bench", "token": "0123456789abcdef"}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	names := podNames("volumes", o.volPods)
	// The token is the API server's to add (its ServiceAccount admission):
	// without it the workload would not measure what it says.
	check := func() error {
		p, err := b.cs.CoreV1().Pods(ns).Get(ctx, names[0], metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !hasTokenVolume(p) {
			return fmt.Errorf("pod %s has no projected service-account token volume", p.Name)
		}
		return nil
	}
	return b.podStream(ctx, kind, "volumes", ns, t, names, o.volEvery, volumesPod, check)
}

// podStream creates the named pods, one every interval, waits until all
// run, checks them (check may be nil), records their startup as workload wl,
// and deletes them, waiting until they are gone.
func (b *bench) podStream(ctx context.Context, kind, wl, ns string, t *tracker, names []string, every time.Duration,
	pod func(string) *v1.Pod, check func() error) error {
	running := func(p *podTimes) bool { return !p.running.IsZero() }
	gone := func(p *podTimes) bool { return !p.deleted.IsZero() }
	if err := createPodsWith(ctx, b.cs, ns, t, names, 1, every, pod); err != nil {
		return err
	}
	if err := t.waitAll(names, running, 180*time.Second); err != nil {
		return fmt.Errorf("%s: %w", wl, err)
	}
	if check != nil {
		if err := check(); err != nil {
			return fmt.Errorf("%s: %w", wl, err)
		}
	}
	b.recordStartup(kind, wl, t.snapshot(names))
	if err := deletePods(ctx, b.cs, ns, t, names, len(names)); err != nil {
		return err
	}
	if err := t.waitAll(names, gone, 180*time.Second); err != nil {
		return fmt.Errorf("deleting the %s pods: %w", wl, err)
	}
	return nil
}

// hasTokenVolume: the pod mounts a projected service-account token.
func hasTokenVolume(p *v1.Pod) bool {
	for _, v := range p.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, src := range v.Projected.Sources {
			if src.ServiceAccountToken != nil {
				return true
			}
		}
	}
	return false
}
