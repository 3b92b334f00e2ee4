// Package upstream names the upstream Kubernetes release this kubelet
// follows: its flags, configuration fields and feature gates, container
// hash, static-pod UIDs, CRI labels and the version-bearing strings it
// sends (User-Agents, the reported kubelet version). It is the Go side of
// the one version knob, KUBE_VERSION in hack/versions.sh, which builds the
// reference binaries; a test keeps the two equal. docs/upgrading-kubernetes.md
// is the procedure for moving it.
package upstream

// Version is the upstream release, as hack/versions.sh's KUBE_VERSION.
const Version = "v1.37.2"

// Minor is Version's "major.minor", as upstream puts it in User-Agents
// (kube-probe/1.37, kube-lifecycle/1.37).
const Minor = "1.37"
