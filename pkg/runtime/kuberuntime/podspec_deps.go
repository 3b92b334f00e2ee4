package kuberuntime

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gokubelet/kubelet/pkg/pod/envvars"
	"github.com/gokubelet/kubelet/pkg/upstream"
)

// userAgentVersion is the Kubernetes minor version in the User-Agent of
// HTTP lifecycle hooks (kube-lifecycle/<version>), as upstream.
const userAgentVersion = upstream.Minor

// StartedFunc reports whether the startup probe of one running container
// instance has succeeded. It must not block: the pure decision reads it.
type StartedFunc func(podUID types.UID, containerName, containerID string) bool

// PodSpecDeps is what the runtime manager needs from the rest of the
// kubelet to run containers exactly as the pod spec asks. Every field is
// optional; what is missing makes the features that need it fail with a
// clear CreateContainerConfigError, never silently.
type PodSpecDeps struct {
	// Objects reads the ConfigMaps and Secrets container environments
	// refer to. Nil without an API server.
	Objects envvars.Objects
	// ServiceEnv returns the service link variables of a pod
	// (envvars.ServiceEnv over the kubelet's Service cache), or an error
	// while the Services have not been read yet. Nil: no service
	// variables (a kubelet without an API server, as upstream).
	ServiceEnv func(pod *v1.Pod) ([]v1.EnvVar, error)
	// NodeAllocatable returns the node's allocatable resources, the
	// default limits of the downward API's resourceFieldRef.
	NodeAllocatable func() v1.ResourceList
	// HostIPs are the node's IPs, primary first (status.hostIP(s)).
	HostIPs []string
	// RuntimeHandler resolves a pod's runtimeClassName to the CRI runtime
	// handler. It is only called for pods that name a RuntimeClass. Nil:
	// such pods fail with a clear reason.
	RuntimeHandler func(ctx context.Context, name string) (string, error)
	// SeccompDefault makes RuntimeDefault the seccomp profile of
	// containers that ask for none (seccompDefault).
	SeccompDefault bool
	// NodeHostsFile is the node's hosts file, copied for host-network pods
	// (default /etc/hosts).
	NodeHostsFile string
}
