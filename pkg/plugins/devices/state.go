package devices

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/gokubelet/kubelet/pkg/plugins/devices/checkpoint"
)

// The pure part of the device manager: what is known of each resource and
// each assignment, and the decisions taken from it. Nothing here does I/O.

// resourceState is one extended resource served by a device plugin.
type resourceState struct {
	// devices are the devices as the last ListAndWatch answer of any of
	// its plugins gave them.
	devices map[string]*pluginapi.Device
	// endpoint is the plugin serving the resource (the one registered
	// last); nil when none does (it went away, or the resource is only
	// known from the checkpoint).
	endpoint *endpoint
	// standby are the other plugins serving it, on other sockets, in the
	// order they registered: upstream (1.37) lets several plugins serve
	// one resource, and one of them takes over when the serving one goes.
	standby []*endpoint
	// stoppedAt is when the resource lost its plugin (zero while one
	// serves it). After the grace period the resource is removed.
	stoppedAt time.Time
}

// healthy are the devices that can be allocated: none while no plugin
// serves the resource (upstream marks them all unhealthy).
func (r *resourceState) healthy() sets.Set[string] {
	out := sets.New[string]()
	if r.endpoint == nil {
		return out
	}
	for id, d := range r.devices {
		if d.Health == pluginapi.Healthy {
			out.Insert(id)
		}
	}
	return out
}

// add makes e the resource's serving plugin. A plugin on the same socket
// is replaced (returned, to be closed; its stream's end then changes
// nothing); the serving plugin on another socket stands by.
func (r *resourceState) add(e *endpoint) (replaced []*endpoint) {
	kept := r.standby[:0]
	for _, o := range r.standby {
		if o.socket == e.socket {
			replaced = append(replaced, o)
		} else {
			kept = append(kept, o)
		}
	}
	r.standby = kept
	if old := r.endpoint; old != nil {
		if old.socket == e.socket {
			replaced = append(replaced, old)
		} else {
			r.standby = append(r.standby, old)
		}
	}
	r.endpoint, r.stoppedAt = e, time.Time{}
	return replaced
}

// remove forgets a plugin that stopped. When it served the resource, the
// plugin that registered last before it takes over, with the devices as
// they are; with none left, the resource has no plugin from now on.
// found tells whether e was one of the resource's plugins at all, and
// last whether the resource lost its last one.
func (r *resourceState) remove(e *endpoint, now time.Time) (found, last bool) {
	for i, o := range r.standby {
		if o == e {
			r.standby = append(r.standby[:i:i], r.standby[i+1:]...)
			return true, false
		}
	}
	if r.endpoint != e {
		return false, false
	}
	if n := len(r.standby); n > 0 {
		r.endpoint, r.standby = r.standby[n-1], r.standby[:n-1:n-1]
		return true, false
	}
	r.endpoint, r.stoppedAt = nil, now
	return true, true
}

// serves: e is one of the resource's plugins (its lists count).
func (r *resourceState) serves(e *endpoint) bool {
	return r.bySocket(e.socket) == e
}

// bySocket is the resource's plugin on socket, or nil.
func (r *resourceState) bySocket(socket string) *endpoint {
	if r.endpoint != nil && r.endpoint.socket == socket {
		return r.endpoint
	}
	for _, o := range r.standby {
		if o.socket == socket {
			return o
		}
	}
	return nil
}

// keepHeld decides whether a container keeps the devices an assignment
// from before holds for it (upstream's devicesToAllocate on devices
// already allocated). A pod that ran when the kubelet started, at its
// first admission since, is a kubelet restart: it has the devices already
// and keeps them unchecked. Otherwise (a node reboot: the runtime lost the
// pod) the resource must be registered and hold every one of them
// healthy, or the pod is refused.
//
// Upstream decides by container: a pod whose device-holding container
// (or finished init container) was not running is refused at a kubelet
// restart until the plugin registers again. Ours keeps such a pod, as a
// container restart in steady state keeps its devices unchecked.
func keepHeld(res string, held []string, runningAtStart bool, r *resourceState) error {
	if runningAtStart {
		return nil
	}
	if r == nil {
		return fmt.Errorf("cannot allocate unregistered device %s", res)
	}
	healthy := r.healthy()
	if healthy.Len() == 0 {
		return fmt.Errorf("no healthy devices present; cannot allocate unhealthy devices %s", res)
	}
	if !healthy.HasAll(held...) {
		return fmt.Errorf("previously allocated devices are no longer healthy; cannot allocate unhealthy devices %s", res)
	}
	return nil
}

// assignment is what one container holds of one resource.
type assignment struct {
	ids  checkpoint.DevicesPerNUMA
	resp *pluginapi.ContainerAllocateResponse
}

// assignments are by pod UID, container name and resource name.
type assignments map[string]map[string]map[string]*assignment

func (a assignments) get(pod, container, res string) *assignment {
	return a[pod][container][res]
}

func (a assignments) set(pod, container, res string, as *assignment) {
	if a[pod] == nil {
		a[pod] = map[string]map[string]*assignment{}
	}
	if a[pod][container] == nil {
		a[pod][container] = map[string]*assignment{}
	}
	a[pod][container][res] = as
}

// inUse are the devices of res that some container holds.
func (a assignments) inUse(res string) sets.Set[string] {
	out := sets.New[string]()
	for _, cs := range a {
		for _, rs := range cs {
			if as := rs[res]; as != nil {
				out.Insert(as.ids.IDs()...)
			}
		}
	}
	return out
}

// resources are the resource names any assignment holds.
func (a assignments) resources() sets.Set[string] {
	out := sets.New[string]()
	for _, cs := range a {
		for _, rs := range cs {
			for r := range rs {
				out.Insert(r)
			}
		}
	}
	return out
}

// resourceCapacity is what the Node reports for device plugin resources: capacity
// counts every device, allocatable the healthy ones. A resource whose
// plugin has been gone for longer than grace is removed (expired), and
// reported, like every resource removed before (gone), at 0 in both, so
// the Node shows it was a device plugin's and has nothing now.
func resourceCapacity(res map[string]*resourceState, gone sets.Set[string], now time.Time, grace time.Duration) (capacity, allocatable v1.ResourceList, expired []string) {
	capacity, allocatable = v1.ResourceList{}, v1.ResourceList{}
	for name, r := range res {
		if r.endpoint == nil && !r.stoppedAt.IsZero() && now.Sub(r.stoppedAt) >= grace {
			expired = append(expired, name)
			continue
		}
		capacity[v1.ResourceName(name)] = *resource.NewQuantity(int64(len(r.devices)), resource.DecimalSI)
		allocatable[v1.ResourceName(name)] = *resource.NewQuantity(int64(r.healthy().Len()), resource.DecimalSI)
	}
	sort.Strings(expired)
	for name := range gone {
		if _, ok := res[name]; ok {
			continue
		}
		capacity[v1.ResourceName(name)] = *resource.NewQuantity(0, resource.DecimalSI)
		allocatable[v1.ResourceName(name)] = *resource.NewQuantity(0, resource.DecimalSI)
	}
	for _, name := range expired {
		capacity[v1.ResourceName(name)] = *resource.NewQuantity(0, resource.DecimalSI)
		allocatable[v1.ResourceName(name)] = *resource.NewQuantity(0, resource.DecimalSI)
	}
	return capacity, allocatable, expired
}

// choose picks needed devices for a container: first from reusable (the
// devices of the pod's init containers that have run), then the plugin's
// preferred ones among the free healthy devices, then the rest in order.
// It never returns fewer than needed: it fails instead, with upstream's
// message.
func choose(res string, needed int, healthy, inUse, reusable sets.Set[string], preferred []string) ([]string, error) {
	var out []string
	taken := sets.New[string]()
	take := func(id string) bool {
		if taken.Has(id) {
			return false
		}
		taken.Insert(id)
		out = append(out, id)
		return len(out) == needed
	}
	for _, id := range sets.List(reusable) {
		if take(id) {
			return out, nil
		}
	}
	free := healthy.Difference(inUse).Difference(taken)
	if free.Len() < needed-len(out) {
		return nil, fmt.Errorf("requested number of devices unavailable for %s. Requested: %d, Available: %d", res, needed-len(out), free.Len())
	}
	for _, id := range preferred {
		if free.Has(id) && take(id) {
			return out, nil
		}
	}
	for _, id := range sets.List(free) {
		if take(id) {
			return out, nil
		}
	}
	return nil, fmt.Errorf("unexpectedly allocated less resources than required. Requested: %d, Got: %d", needed, len(out))
}

// maxDeviceIDLength bounds a device ID: IDs are kept in memory, in the
// checkpoint and in the pod-resources API.
const maxDeviceIDLength = 1024

// validDevices checks a ListAndWatch answer: every device has an ID that
// is printable, not too long and not repeated, and a health of Healthy or
// Unhealthy. It returns the devices by ID, and what was wrong, if anything
// (bad devices are left out, the rest kept).
func validDevices(devs []*pluginapi.Device) (map[string]*pluginapi.Device, []string) {
	out := make(map[string]*pluginapi.Device, len(devs))
	var problems []string
	for i, d := range devs {
		switch {
		case d == nil:
			problems = append(problems, fmt.Sprintf("device %d is empty", i))
		case d.ID == "":
			problems = append(problems, fmt.Sprintf("device %d has no ID", i))
		case len(d.ID) > maxDeviceIDLength || strings.IndexFunc(d.ID, func(r rune) bool { return r < 0x21 || r == 0x7f }) >= 0:
			problems = append(problems, fmt.Sprintf("device %d has an invalid ID %.40q", i, d.ID))
		case out[d.ID] != nil:
			problems = append(problems, fmt.Sprintf("device ID %q is listed twice", d.ID))
		case d.Health != pluginapi.Healthy && d.Health != pluginapi.Unhealthy:
			problems = append(problems, fmt.Sprintf("device %q has health %.40q (want %s or %s)", d.ID, d.Health, pluginapi.Healthy, pluginapi.Unhealthy))
		default:
			out[d.ID] = d
		}
	}
	return out, problems
}

// validResponse checks what Allocate returned for one container: paths are
// absolute and clean, names are not empty. A response that fails is not
// given to the runtime.
func validResponse(r *pluginapi.ContainerAllocateResponse) error {
	if r == nil {
		return fmt.Errorf("empty container response")
	}
	abs := func(what, p string) error {
		if p == "" || !filepath.IsAbs(p) || strings.ContainsRune(p, 0) {
			return fmt.Errorf("%s %q is not an absolute path", what, p)
		}
		return nil
	}
	for k := range r.Envs {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return fmt.Errorf("invalid environment variable name %q", k)
		}
	}
	for _, m := range r.Mounts {
		if m == nil {
			return fmt.Errorf("empty mount")
		}
		if err := abs("mount container path", m.ContainerPath); err != nil {
			return err
		}
		if err := abs("mount host path", m.HostPath); err != nil {
			return err
		}
	}
	for _, d := range r.Devices {
		if d == nil {
			return fmt.Errorf("empty device")
		}
		if err := abs("device container path", d.ContainerPath); err != nil {
			return err
		}
		if err := abs("device host path", d.HostPath); err != nil {
			return err
		}
		if strings.Trim(d.Permissions, "rwm") != "" {
			return fmt.Errorf("device %s has invalid permissions %q", d.ContainerPath, d.Permissions)
		}
	}
	for _, c := range r.CdiDevices {
		if c == nil || !validCDIName(c.Name) {
			name := ""
			if c != nil {
				name = c.Name
			}
			return fmt.Errorf("invalid CDI device name %q (want vendor.com/class=name)", name)
		}
	}
	for k := range r.Annotations {
		if k == "" {
			return fmt.Errorf("empty annotation name")
		}
	}
	return nil
}

// validCDIName: a fully qualified CDI device name, vendor/class=name.
func validCDIName(s string) bool {
	kind, name, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return false
	}
	vendor, class, ok := strings.Cut(kind, "/")
	return ok && vendor != "" && class != "" && !strings.ContainsAny(s, " \x00")
}

// RunOptions are what a container's devices add to its CRI configuration.
type RunOptions struct {
	Envs        []KeyValue
	Mounts      []*pluginapi.Mount
	Devices     []*pluginapi.DeviceSpec
	Annotations []KeyValue
	CDIDevices  []string
}

// KeyValue is an environment variable or an annotation.
type KeyValue struct{ Key, Value string }

// runOptions merges the Allocate answers of a container's resources (in
// resource name order): the first answer that sets an env, a container
// path, an annotation or a CDI device wins, as upstream merges them. The
// conflicts are returned for a log line.
func runOptions(byResource map[string]*assignment) (RunOptions, []string) {
	var o RunOptions
	var conflicts []string
	names := make([]string, 0, len(byResource))
	for n := range byResource {
		names = append(names, n)
	}
	sort.Strings(names)
	envs, mounts, devs, annots, cdi := map[string]string{}, map[string]string{}, map[string]string{}, map[string]string{}, sets.New[string]()
	for _, n := range names {
		r := byResource[n].resp
		if r == nil {
			continue
		}
		for _, k := range sortedKeys(r.Envs) {
			v := r.Envs[k]
			if old, ok := envs[k]; ok {
				if old != v {
					conflicts = append(conflicts, fmt.Sprintf("env %s: %q kept, %q from %s dropped", k, old, v, n))
				}
				continue
			}
			envs[k] = v
			o.Envs = append(o.Envs, KeyValue{k, v})
		}
		for _, m := range r.Mounts {
			if old, ok := mounts[m.ContainerPath]; ok {
				if old != m.HostPath {
					conflicts = append(conflicts, fmt.Sprintf("mount %s: %s kept, %s from %s dropped", m.ContainerPath, old, m.HostPath, n))
				}
				continue
			}
			mounts[m.ContainerPath] = m.HostPath
			o.Mounts = append(o.Mounts, m)
		}
		for _, d := range r.Devices {
			if old, ok := devs[d.ContainerPath]; ok {
				if old != d.HostPath {
					conflicts = append(conflicts, fmt.Sprintf("device %s: %s kept, %s from %s dropped", d.ContainerPath, old, d.HostPath, n))
				}
				continue
			}
			devs[d.ContainerPath] = d.HostPath
			o.Devices = append(o.Devices, d)
		}
		for _, k := range sortedKeys(r.Annotations) {
			v := r.Annotations[k]
			if old, ok := annots[k]; ok {
				if old != v {
					conflicts = append(conflicts, fmt.Sprintf("annotation %s: %q kept, %q from %s dropped", k, old, v, n))
				}
				continue
			}
			annots[k] = v
			o.Annotations = append(o.Annotations, KeyValue{k, v})
		}
		for _, c := range r.CdiDevices {
			if !cdi.Has(c.Name) {
				cdi.Insert(c.Name)
				o.CDIDevices = append(o.CDIDevices, c.Name)
			}
		}
	}
	return o, conflicts
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// devicesPerNUMA files the chosen devices under their NUMA nodes, as
// upstream's checkpoint does (checkpoint.NoTopology for none).
func devicesPerNUMA(ids []string, known map[string]*pluginapi.Device) checkpoint.DevicesPerNUMA {
	out := checkpoint.DevicesPerNUMA{}
	for _, id := range ids {
		d := known[id]
		if d == nil || d.Topology == nil || len(d.Topology.Nodes) == 0 {
			out[checkpoint.NoTopology] = append(out[checkpoint.NoTopology], id)
			continue
		}
		for _, n := range d.Topology.Nodes {
			out[n.ID] = append(out[n.ID], id)
		}
	}
	return out
}
