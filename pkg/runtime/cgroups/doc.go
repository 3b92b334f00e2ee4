// Package cgroups is the node's cgroup hierarchy: the kubepods cgroup that
// carries node allocatable, its burstable and besteffort levels, and one
// cgroup per pod carrying the pod's limits (CPU shares and quota, memory,
// pids), as the upstream kubelet lays them out:
//
//	<cgroupRoot>/kubepods                      guaranteed pods, node allocatable
//	<cgroupRoot>/kubepods/burstable            cpu shares = sum of burstable requests
//	<cgroupRoot>/kubepods/besteffort           cpu shares = 2
//	<cgroupRoot>/kubepods[/<qos>]/pod<uid>     the pod's limits; the runtime puts
//	                                           the sandbox and containers below
//
// With the systemd driver the same levels are slices
// (kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice)
// created and configured through systemd over D-Bus; with cgroupfs they are
// directories written directly, on cgroup v1 (one directory per controller)
// or v2 (one unified tree, controllers enabled in each parent's
// cgroup.subtree_control). The version is detected from the mounts, never
// assumed: a hybrid machine (v1 controllers plus a cgroup2 mount at
// /sys/fs/cgroup/unified) counts as v1.
//
// ForPod (resources.go) is the pure mapping from a pod to its cgroup
// limits, table-tested; the drivers only write what it returns. Creating a
// pod's cgroup is on the pod start path: one mkdir per controller and a few
// writes, no runtime round trip.
package cgroups
