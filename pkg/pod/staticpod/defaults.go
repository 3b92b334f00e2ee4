package staticpod

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// Values the API server fills in when a pod is created through it. A static
// pod never passes through the API server, so the kubelet applies them
// itself; without them two kubelets (or a kubelet and the mirror pod) would
// disagree about what the pod means.
const (
	defaultNamespace            = "default"
	defaultSchedulerName        = "default-scheduler"
	defaultTerminationGrace     = int64(30)
	defaultTerminationMsgPath   = "/dev/termination-log"
	defaultProbeTimeoutSeconds  = int32(1)
	defaultProbePeriodSeconds   = int32(10)
	defaultProbeSuccessThresh   = int32(1)
	defaultProbeFailureThresh   = int32(3)
	defaultVolumeMode           = int32(0o644)
	defaultFieldRefAPIVersion   = "v1"
	defaultHTTPGetPath          = "/"
	defaultServiceAccountTokenS = int64(3600)
)

// applyDefaults fills in, in place, the fields the API server would default.
// It never overwrites a value the manifest set.
func applyDefaults(pod *v1.Pod) {
	if pod.Namespace == "" {
		pod.Namespace = defaultNamespace
	}
	spec := &pod.Spec
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = v1.RestartPolicyAlways
	}
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = v1.DNSClusterFirst
	}
	if spec.TerminationGracePeriodSeconds == nil {
		spec.TerminationGracePeriodSeconds = ptr.To(defaultTerminationGrace)
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = defaultSchedulerName
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &v1.PodSecurityContext{}
	}
	if spec.EnableServiceLinks == nil {
		spec.EnableServiceLinks = ptr.To(true)
	}
	for i := range spec.InitContainers {
		defaultContainer(&spec.InitContainers[i], spec.HostNetwork)
	}
	for i := range spec.Containers {
		defaultContainer(&spec.Containers[i], spec.HostNetwork)
	}
	for i := range spec.Volumes {
		defaultVolume(&spec.Volumes[i])
	}
	roundUp(spec.Overhead)
	if spec.Resources != nil {
		roundUp(spec.Resources.Limits)
		roundUp(spec.Resources.Requests)
	}
}

// roundUp rounds every quantity up to milli precision, as the API server's
// defaulting does (a request of 1n CPU becomes 1m). The stored value is
// the one the upstream kubelet hashes into a static pod's UID.
func roundUp(l v1.ResourceList) {
	for name, q := range l {
		q.RoundUp(-3)
		l[name] = q
	}
}

func defaultContainer(c *v1.Container, hostNetwork bool) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = defaultPullPolicy(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = defaultTerminationMsgPath
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = v1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		p := &c.Ports[i]
		if p.Protocol == "" {
			p.Protocol = v1.ProtocolTCP
		}
		// With the host's network the container port is the host port.
		if hostNetwork && p.HostPort == 0 {
			p.HostPort = p.ContainerPort
		}
	}
	for i := range c.Env {
		if vf := c.Env[i].ValueFrom; vf != nil && vf.FieldRef != nil && vf.FieldRef.APIVersion == "" {
			vf.FieldRef.APIVersion = defaultFieldRefAPIVersion
		}
	}
	defaultResources(&c.Resources)
	roundUp(c.Resources.Limits)
	roundUp(c.Resources.Requests)
	defaultProbe(c.LivenessProbe)
	defaultProbe(c.ReadinessProbe)
	defaultProbe(c.StartupProbe)
	if c.Lifecycle != nil {
		defaultHandler(c.Lifecycle.PostStart)
		defaultHandler(c.Lifecycle.PreStop)
	}
}

// defaultPullPolicy is Always for an image without a tag or tagged
// "latest", IfNotPresent otherwise (a digest alone counts as pinned).
func defaultPullPolicy(image string) v1.PullPolicy {
	name, _, hasDigest := strings.Cut(image, "@")
	tag := ""
	if i := strings.LastIndex(name, ":"); i >= 0 && !strings.Contains(name[i+1:], "/") {
		tag = name[i+1:]
	}
	if tag == "latest" || (tag == "" && !hasDigest) {
		return v1.PullAlways
	}
	return v1.PullIfNotPresent
}

// defaultResources copies a limit into the request of the same resource when
// only the limit is set.
func defaultResources(r *v1.ResourceRequirements) {
	for name, limit := range r.Limits {
		if _, ok := r.Requests[name]; ok {
			continue
		}
		if r.Requests == nil {
			r.Requests = v1.ResourceList{}
		}
		r.Requests[name] = limit.DeepCopy()
	}
}

func defaultProbe(p *v1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = defaultProbeTimeoutSeconds
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = defaultProbePeriodSeconds
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = defaultProbeSuccessThresh
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = defaultProbeFailureThresh
	}
	if p.HTTPGet != nil {
		defaultHTTPGet(p.HTTPGet)
	}
	if p.GRPC != nil && p.GRPC.Service == nil {
		p.GRPC.Service = ptr.To("")
	}
}

func defaultHandler(h *v1.LifecycleHandler) {
	if h != nil && h.HTTPGet != nil {
		defaultHTTPGet(h.HTTPGet)
	}
}

func defaultHTTPGet(g *v1.HTTPGetAction) {
	if g.Path == "" {
		g.Path = defaultHTTPGetPath
	}
	if g.Scheme == "" {
		g.Scheme = v1.URISchemeHTTP
	}
}

func defaultVolume(v *v1.Volume) {
	src := &v.VolumeSource
	if ptr.AllPtrFieldsNil(src) {
		// A volume naming no source is an emptyDir.
		src.EmptyDir = &v1.EmptyDirVolumeSource{}
	}
	switch {
	case src.HostPath != nil:
		if src.HostPath.Type == nil {
			src.HostPath.Type = ptr.To(v1.HostPathUnset)
		}
	case src.Secret != nil:
		if src.Secret.DefaultMode == nil {
			src.Secret.DefaultMode = ptr.To(defaultVolumeMode)
		}
	case src.ConfigMap != nil:
		if src.ConfigMap.DefaultMode == nil {
			src.ConfigMap.DefaultMode = ptr.To(defaultVolumeMode)
		}
	case src.DownwardAPI != nil:
		if src.DownwardAPI.DefaultMode == nil {
			src.DownwardAPI.DefaultMode = ptr.To(defaultVolumeMode)
		}
		for i := range src.DownwardAPI.Items {
			if fr := src.DownwardAPI.Items[i].FieldRef; fr != nil && fr.APIVersion == "" {
				fr.APIVersion = defaultFieldRefAPIVersion
			}
		}
	case src.Projected != nil:
		if src.Projected.DefaultMode == nil {
			src.Projected.DefaultMode = ptr.To(defaultVolumeMode)
		}
		for i := range src.Projected.Sources {
			ps := &src.Projected.Sources[i]
			if t := ps.ServiceAccountToken; t != nil && t.ExpirationSeconds == nil {
				t.ExpirationSeconds = ptr.To(defaultServiceAccountTokenS)
			}
			if d := ps.DownwardAPI; d != nil {
				for j := range d.Items {
					if fr := d.Items[j].FieldRef; fr != nil && fr.APIVersion == "" {
						fr.APIVersion = defaultFieldRefAPIVersion
					}
				}
			}
		}
	case src.Ephemeral != nil && src.Ephemeral.VolumeClaimTemplate != nil:
		pvc := &src.Ephemeral.VolumeClaimTemplate.Spec
		if pvc.VolumeMode == nil {
			pvc.VolumeMode = ptr.To(v1.PersistentVolumeFilesystem)
		}
		roundUp(pvc.Resources.Limits)
		roundUp(pvc.Resources.Requests)
	}
}

// intOrStringPort returns the numeric value of a probe or handler port, or
// -1 when it is a named port.
func intOrStringPort(p intstr.IntOrString) int {
	if p.Type == intstr.Int {
		return p.IntValue()
	}
	return -1
}
