package cgroups

import (
	"path"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

// Cgroup drivers.
const (
	DriverCgroupfs = "cgroupfs"
	DriverSystemd  = "systemd"
)

// Names of the levels of the hierarchy, as upstream names them.
const (
	kubepodsName   = "kubepods"
	burstableName  = "burstable"
	besteffortName = "besteffort"
	podPrefix      = "pod"
	systemdSuffix  = ".slice"
)

// Name is a cgroup as its path components from the hierarchy's root, driver
// neutral: {"kubepods", "burstable", "pod<uid>"}.
type Name []string

// Child returns n with one more component.
func (n Name) Child(part string) Name {
	out := make(Name, 0, len(n)+1)
	return append(append(out, n...), part)
}

// Cgroupfs is the name as a cgroupfs path: /kubepods/burstable/pod<uid>.
func (n Name) Cgroupfs() string {
	return "/" + path.Join(n...)
}

// Systemd is the name as a systemd slice path, each level named after all
// its ancestors with dashes escaped:
// /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice.
func (n Name) Systemd() string {
	if len(n) == 0 {
		return "/"
	}
	out, prefix := "/", ""
	for _, p := range n {
		p = strings.ReplaceAll(p, "-", "_")
		if prefix != "" {
			prefix += "-"
		}
		prefix += p
		out = path.Join(out, prefix+systemdSuffix)
	}
	return out
}

// Path is the name's path for the driver, relative to each hierarchy's
// mount point.
func (n Name) Path(driver string) string {
	if driver == DriverSystemd {
		return n.Systemd()
	}
	return n.Cgroupfs()
}

// Unit is the systemd unit of the name's last level
// (kubepods-burstable-pod<uid>.slice) and Parent the unit of the level
// above ("-.slice" for the root).
func (n Name) Unit() string {
	if len(n) == 0 {
		return "-.slice"
	}
	parts := make([]string, len(n))
	for i, p := range n {
		parts[i] = strings.ReplaceAll(p, "-", "_")
	}
	return strings.Join(parts, "-") + systemdSuffix
}

// Parent is the name without its last level.
func (n Name) Parent() Name {
	if len(n) == 0 {
		return n
	}
	return n[:len(n)-1]
}

// ParseRoot turns cgroupRoot into a Name: a cgroupfs path ("/", "/foo/bar")
// or, with the systemd driver, a slice path ("/foo.slice/foo-bar.slice",
// whose last slice names every level).
func ParseRoot(root, driver string) Name {
	root = strings.TrimSpace(root)
	if root == "" || root == "/" {
		return Name{}
	}
	if driver == DriverSystemd && strings.HasSuffix(root, systemdSuffix) {
		last := path.Base(root)
		last = strings.TrimSuffix(last, systemdSuffix)
		if last == "-" {
			return Name{}
		}
		var out Name
		for _, p := range strings.Split(last, "-") {
			out = append(out, strings.ReplaceAll(p, "_", "-"))
		}
		return out
	}
	var out Name
	for _, p := range strings.Split(strings.Trim(path.Clean(root), "/"), "/") {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Hierarchy names the node's levels for one configuration.
type Hierarchy struct {
	// Root is cgroupRoot as a Name.
	Root Name
	// PerQOS is cgroupsPerQOS: without it there is no kubepods level and
	// no pod cgroups; pods go straight under Root.
	PerQOS bool
}

// Kubepods is the node allocatable cgroup (Root itself without PerQOS).
func (h Hierarchy) Kubepods() Name {
	if !h.PerQOS {
		return h.Root
	}
	return h.Root.Child(kubepodsName)
}

// QOS is the level a pod of class q lives under.
func (h Hierarchy) QOS(q v1.PodQOSClass) Name {
	k := h.Kubepods()
	if !h.PerQOS {
		return k
	}
	switch q {
	case v1.PodQOSBurstable:
		return k.Child(burstableName)
	case v1.PodQOSBestEffort:
		return k.Child(besteffortName)
	}
	return k
}

// Pod is the pod's own cgroup; ok is false without PerQOS (no pod
// cgroups).
func (h Hierarchy) Pod(pod *v1.Pod) (Name, bool) {
	if !h.PerQOS {
		return h.Root, false
	}
	return h.QOS(podspec.QOSClass(pod)).Child(podPrefix + string(pod.UID)), true
}

// PodParents are the levels pod cgroups can be found under.
func (h Hierarchy) PodParents() []Name {
	if !h.PerQOS {
		return nil
	}
	return []Name{h.Kubepods(), h.QOS(v1.PodQOSBurstable), h.QOS(v1.PodQOSBestEffort)}
}

// PodUID returns the UID in a pod cgroup's last level (pod<uid>, or the
// systemd unit ...-pod<uid_escaped>.slice), and false for anything else.
func PodUID(base string, driver string) (types.UID, bool) {
	if driver == DriverSystemd {
		if !strings.HasSuffix(base, systemdSuffix) {
			return "", false
		}
		base = strings.TrimSuffix(base, systemdSuffix)
		if i := strings.LastIndex(base, "-"); i >= 0 {
			base = base[i+1:]
		}
		if !strings.HasPrefix(base, podPrefix) || len(base) == len(podPrefix) {
			return "", false
		}
		return types.UID(strings.ReplaceAll(strings.TrimPrefix(base, podPrefix), "_", "-")), true
	}
	if !strings.HasPrefix(base, podPrefix) || len(base) == len(podPrefix) {
		return "", false
	}
	return types.UID(strings.TrimPrefix(base, podPrefix)), true
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
