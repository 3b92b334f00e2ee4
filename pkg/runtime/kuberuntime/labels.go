package kuberuntime

import (
	"encoding/json"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// CRI label and annotation keys. The names are the upstream kubelet's so
// that tools (crictl, log collectors) that match on them keep working.
const (
	LabelPodName       = "io.kubernetes.pod.name"
	LabelPodNamespace  = "io.kubernetes.pod.namespace"
	LabelPodUID        = "io.kubernetes.pod.uid"
	LabelContainerName = "io.kubernetes.container.name"

	AnnotationContainerHash            = "io.kubernetes.container.hash"
	AnnotationRestartCount             = "io.kubernetes.container.restartCount"
	AnnotationTerminationMessagePath   = "io.kubernetes.container.terminationMessagePath"
	AnnotationTerminationMessagePolicy = "io.kubernetes.container.terminationMessagePolicy"
	AnnotationTerminationGracePeriod   = "io.kubernetes.pod.terminationGracePeriod"
	AnnotationDeletionGracePeriod      = "io.kubernetes.pod.deletionGracePeriod"
	AnnotationContainerPorts           = "io.kubernetes.container.ports"
	// AnnotationContainerImage is this kubelet's own: the image as the
	// spec names it (upstream reads the runtime's status instead). A
	// container without it (created by the upstream kubelet) shows the
	// runtime's image name.
	AnnotationContainerImage = "io.kubernetes.container.image"
	// AnnotationPreStopHandler holds the container's preStop handler as
	// JSON, for killing it without its pod spec.
	AnnotationPreStopHandler = "io.kubernetes.container.preStopHandler"
)

func sandboxLabels(pod *v1.Pod) map[string]string {
	l := map[string]string{}
	for k, v := range pod.Labels {
		l[k] = v
	}
	l[LabelPodName] = pod.Name
	l[LabelPodNamespace] = pod.Namespace
	l[LabelPodUID] = string(pod.UID)
	return l
}

func sandboxAnnotations(pod *v1.Pod) map[string]string {
	a := map[string]string{}
	for k, v := range pod.Annotations {
		a[k] = v
	}
	return a
}

// containerLabels are the four identity labels, as upstream writes them: a
// container does not carry the pod's own labels (the sandbox does).
func containerLabels(pod *v1.Pod, c *v1.Container) map[string]string {
	return map[string]string{
		LabelPodName:       pod.Name,
		LabelPodNamespace:  pod.Namespace,
		LabelPodUID:        string(pod.UID),
		LabelContainerName: c.Name,
	}
}

func containerAnnotations(pod *v1.Pod, c *v1.Container, restartCount int) (map[string]string, error) {
	a := map[string]string{
		AnnotationContainerHash:            strconv.FormatUint(HashContainer(c), 16),
		AnnotationRestartCount:             strconv.Itoa(restartCount),
		AnnotationTerminationMessagePath:   c.TerminationMessagePath,
		AnnotationTerminationMessagePolicy: string(c.TerminationMessagePolicy),
		AnnotationContainerImage:           c.Image,
	}
	if pod.DeletionGracePeriodSeconds != nil {
		a[AnnotationDeletionGracePeriod] = strconv.FormatInt(*pod.DeletionGracePeriodSeconds, 10)
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		a[AnnotationTerminationGracePeriod] = strconv.FormatInt(*pod.Spec.TerminationGracePeriodSeconds, 10)
	}
	if len(c.Ports) > 0 {
		if b, err := json.Marshal(c.Ports); err == nil {
			a[AnnotationContainerPorts] = string(b)
		}
	}
	preStop, err := preStopAnnotation(c)
	if err != nil {
		return nil, err
	}
	if preStop != "" {
		a[AnnotationPreStopHandler] = preStop
	}
	return a, nil
}

// podIdentity is what labels tell about the pod an object belongs to.
type podIdentity struct {
	UID       types.UID
	Name      string
	Namespace string
}

func identityFromLabels(labels map[string]string) (podIdentity, bool) {
	uid := labels[LabelPodUID]
	if uid == "" {
		return podIdentity{}, false
	}
	return podIdentity{UID: types.UID(uid), Name: labels[LabelPodName], Namespace: labels[LabelPodNamespace]}, true
}

// containerInfo is what annotations tell about a container instance.
type containerInfo struct {
	Name         string
	Hash         uint64
	RestartCount int
	GracePeriod  *int64
	Image        string
	// PreStop is the preStop handler recorded at creation, if any.
	PreStop *v1.LifecycleHandler
}

func containerInfoFrom(labels, annotations map[string]string, md *runtimeapi.ContainerMetadata) containerInfo {
	ci := containerInfo{Name: labels[LabelContainerName], Image: annotations[AnnotationContainerImage]}
	if ci.Name == "" && md != nil {
		ci.Name = md.Name
	}
	if h, err := strconv.ParseUint(annotations[AnnotationContainerHash], 16, 64); err == nil {
		ci.Hash = h
	}
	if n, err := strconv.Atoi(annotations[AnnotationRestartCount]); err == nil {
		ci.RestartCount = n
	} else if md != nil {
		ci.RestartCount = int(md.Attempt)
	}
	// A deletion grace period recorded at creation wins, as upstream.
	if g, err := strconv.ParseInt(annotations[AnnotationDeletionGracePeriod], 10, 64); err == nil {
		ci.GracePeriod = &g
	} else if g, err := strconv.ParseInt(annotations[AnnotationTerminationGracePeriod], 10, 64); err == nil {
		ci.GracePeriod = &g
	}
	if h := annotations[AnnotationPreStopHandler]; h != "" {
		var handler v1.LifecycleHandler
		if json.Unmarshal([]byte(h), &handler) == nil {
			ci.PreStop = &handler
		}
	}
	return ci
}
