# Versions and cache locations shared by the hack/ scripts. Sourced, not run.
# The upstream control plane (and the upstream kubelet used by the benchmark)
# are built at KUBE_VERSION; change it here only.
KUBE_VERSION=${KUBE_VERSION:-v1.37.2}
# The previous minor's newest served patch: the upstream kubelet of a node
# not yet upgraded, which TestTakeoverFromPreviousMinorAndBack takes over
# (built by KUBE_VERSION=$KUBE_PREVIOUS_VERSION hack/build-upstream.sh kubelet).
KUBE_PREVIOUS_VERSION=${KUBE_PREVIOUS_VERSION:-v1.36.3}
UPSTREAM_CACHE=${UPSTREAM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gokubelet/upstream}
# The cluster DNS server, built from the Go module proxy (hack/build-coredns.sh);
# the version kubeadm deploys with KUBE_VERSION.
COREDNS_VERSION=${COREDNS_VERSION:-v1.14.6}
# The pause (sandbox) image tag of KUBE_VERSION's e2e manifest and kubeadm
# (images/pause, hack/images.sh; containerd's sandbox_image in hack/containerd.sh).
PAUSE_VERSION=${PAUSE_VERSION:-3.10.2}
COREDNS_CACHE=${COREDNS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gokubelet/coredns}
# The scale benchmark's contenders (make bench-scale), built from the Go
# module proxy by hack/build-contenders.sh and cached by version:
# Virtual Kubelet's own binary with its mock provider, and KWOK's controller.
VK_VERSION=${VK_VERSION:-v1.13.0}
KWOK_VERSION=${KWOK_VERSION:-v0.8.0}
CONTENDERS_CACHE=${CONTENDERS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gokubelet/contenders}
# The container runtime of make run/test/cluster/bench/conformance:
# containerd built from the Go module proxy at CONTAINERD_VERSION
# (hack/build-containerd.sh, cached in CONTAINERD_CACHE). CONTAINERD_FLAVOR=debian
# runs Debian's containerd 1.6 (/usr/bin/containerd) instead.
CONTAINERD_VERSION=${CONTAINERD_VERSION:-v2.4.2}
CONTAINERD_CACHE=${CONTAINERD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gokubelet/containerd}
CONTAINERD_FLAVOR=${CONTAINERD_FLAVOR:-upstream}
