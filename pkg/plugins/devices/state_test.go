package devices

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/gokubelet/kubelet/pkg/plugins/devices/checkpoint"
)

func TestChoose(t *testing.T) {
	s := sets.New[string]
	for _, tc := range []struct {
		name                     string
		needed                   int
		healthy, inUse, reusable sets.Set[string]
		preferred                []string
		want                     string
		err                      string
	}{
		{name: "lowest free first", needed: 2, healthy: s("a", "b", "c"), inUse: s("a"), want: "b,c"},
		{name: "reusable first", needed: 2, healthy: s("a", "b", "c"), inUse: s("a"), reusable: s("a"), want: "a,b"},
		{name: "preferred before order", needed: 1, healthy: s("a", "b", "c"), preferred: []string{"c"}, want: "c"},
		{name: "preferred in use is skipped", needed: 1, healthy: s("a", "b"), inUse: s("b"), preferred: []string{"b"}, want: "a"},
		{name: "preferred unknown is skipped", needed: 1, healthy: s("a"), preferred: []string{"zzz"}, want: "a"},
		{name: "too few", needed: 2, healthy: s("a", "b"), inUse: s("b"), err: "requested number of devices unavailable for r. Requested: 2, Available: 1"},
		{name: "unhealthy are not free", needed: 1, healthy: s(), err: "Available: 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.inUse == nil {
				tc.inUse = s()
			}
			if tc.reusable == nil {
				tc.reusable = s()
			}
			got, err := choose("r", tc.needed, tc.healthy, tc.inUse, tc.reusable, tc.preferred)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || strings.Join(got, ",") != tc.want {
				t.Fatalf("choose = %v, %v; want %s", got, err, tc.want)
			}
		})
	}
}

func dev(id, health string) *pluginapi.Device { return &pluginapi.Device{ID: id, Health: health} }

func TestResourceCapacity(t *testing.T) {
	now := time.Unix(1000, 0)
	grace := 5 * time.Minute
	ep := &endpoint{}
	res := map[string]*resourceState{
		"x.io/served":        {endpoint: ep, devices: map[string]*pluginapi.Device{"a": dev("a", pluginapi.Healthy), "b": dev("b", pluginapi.Unhealthy)}},
		"x.io/gone-recently": {stoppedAt: now.Add(-time.Minute), devices: map[string]*pluginapi.Device{"a": dev("a", pluginapi.Healthy)}},
		"x.io/expired":       {stoppedAt: now.Add(-grace), devices: map[string]*pluginapi.Device{"a": dev("a", pluginapi.Healthy)}},
	}
	capacity, allocatable, expired := resourceCapacity(res, sets.New("x.io/removed-before"), now, grace)
	want := map[string][2]int64{
		"x.io/served":         {2, 1}, // capacity counts the unhealthy device, allocatable does not
		"x.io/gone-recently":  {1, 0}, // within the grace period: capacity kept, nothing allocatable
		"x.io/expired":        {0, 0},
		"x.io/removed-before": {0, 0},
	}
	for name, w := range want {
		c, a := capacity[v1.ResourceName(name)], allocatable[v1.ResourceName(name)]
		if c.Value() != w[0] || a.Value() != w[1] {
			t.Errorf("%s: capacity %s allocatable %s, want %d %d", name, c.String(), a.String(), w[0], w[1])
		}
	}
	if len(capacity) != len(want) {
		t.Errorf("capacity has %d resources, want %d: %v", len(capacity), len(want), capacity)
	}
	if strings.Join(expired, ",") != "x.io/expired" {
		t.Errorf("expired = %v", expired)
	}
}

func TestValidDevices(t *testing.T) {
	got, problems := validDevices([]*pluginapi.Device{
		dev("ok", pluginapi.Healthy),
		nil,
		dev("", pluginapi.Healthy),
		dev("ok", pluginapi.Healthy),
		dev("sp ace", pluginapi.Healthy),
		dev(strings.Repeat("x", maxDeviceIDLength+1), pluginapi.Healthy),
		dev("sick", "Sickly"),
		dev("down", pluginapi.Unhealthy),
	})
	if len(got) != 2 || got["ok"] == nil || got["down"] == nil {
		t.Errorf("kept %v, want ok and down", got)
	}
	if len(problems) != 6 {
		t.Errorf("problems = %q, want 6", problems)
	}
}

func TestValidResponse(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    *pluginapi.ContainerAllocateResponse
		err  string
	}{
		{name: "full", r: &pluginapi.ContainerAllocateResponse{
			Envs:        map[string]string{"A": "1"},
			Mounts:      []*pluginapi.Mount{{ContainerPath: "/c", HostPath: "/h"}},
			Devices:     []*pluginapi.DeviceSpec{{ContainerPath: "/dev/x", HostPath: "/dev/null", Permissions: "rw"}},
			Annotations: map[string]string{"a": "b"},
			CdiDevices:  []*pluginapi.CDIDevice{{Name: "vendor.com/gpu=0"}},
		}},
		{name: "empty is fine", r: &pluginapi.ContainerAllocateResponse{}},
		{name: "nil", err: "empty container response"},
		{name: "relative mount", r: &pluginapi.ContainerAllocateResponse{Mounts: []*pluginapi.Mount{{ContainerPath: "c", HostPath: "/h"}}}, err: "not an absolute path"},
		{name: "no host path", r: &pluginapi.ContainerAllocateResponse{Devices: []*pluginapi.DeviceSpec{{ContainerPath: "/dev/x"}}}, err: "not an absolute path"},
		{name: "bad permissions", r: &pluginapi.ContainerAllocateResponse{Devices: []*pluginapi.DeviceSpec{{ContainerPath: "/dev/x", HostPath: "/dev/x", Permissions: "rwx"}}}, err: "invalid permissions"},
		{name: "bad env", r: &pluginapi.ContainerAllocateResponse{Envs: map[string]string{"A=B": "1"}}, err: "invalid environment variable"},
		{name: "bad CDI", r: &pluginapi.ContainerAllocateResponse{CdiDevices: []*pluginapi.CDIDevice{{Name: "gpu0"}}}, err: "invalid CDI device name"},
		{name: "nil mount", r: &pluginapi.ContainerAllocateResponse{Mounts: []*pluginapi.Mount{nil}}, err: "empty mount"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := validResponse(tc.r)
			if (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("validResponse = %v, want %q", err, tc.err)
			}
		})
	}
}

func TestRunOptionsMergeFirstWins(t *testing.T) {
	a := &assignment{resp: &pluginapi.ContainerAllocateResponse{
		Envs:        map[string]string{"SHARED": "a", "A": "1"},
		Mounts:      []*pluginapi.Mount{{ContainerPath: "/m", HostPath: "/ha"}},
		Devices:     []*pluginapi.DeviceSpec{{ContainerPath: "/dev/d", HostPath: "/dev/a", Permissions: "rw"}},
		Annotations: map[string]string{"k": "a"},
		CdiDevices:  []*pluginapi.CDIDevice{{Name: "v.com/c=1"}},
	}}
	b := &assignment{resp: &pluginapi.ContainerAllocateResponse{
		Envs:        map[string]string{"SHARED": "b", "B": "2"},
		Mounts:      []*pluginapi.Mount{{ContainerPath: "/m", HostPath: "/hb"}, {ContainerPath: "/n", HostPath: "/hn"}},
		Devices:     []*pluginapi.DeviceSpec{{ContainerPath: "/dev/d", HostPath: "/dev/a"}},
		Annotations: map[string]string{"k": "b"},
		CdiDevices:  []*pluginapi.CDIDevice{{Name: "v.com/c=1"}, {Name: "v.com/c=2"}},
	}}
	o, conflicts := runOptions(map[string]*assignment{"a.io/r": a, "b.io/r": b})
	var envs []string
	for _, e := range o.Envs {
		envs = append(envs, e.Key+"="+e.Value)
	}
	if strings.Join(envs, " ") != "A=1 SHARED=a B=2" {
		t.Errorf("envs = %v", envs)
	}
	if len(o.Mounts) != 2 || o.Mounts[0].HostPath != "/ha" || o.Mounts[1].ContainerPath != "/n" {
		t.Errorf("mounts = %v", o.Mounts)
	}
	if len(o.Devices) != 1 || len(o.Annotations) != 1 || o.Annotations[0].Value != "a" {
		t.Errorf("devices %v annotations %v", o.Devices, o.Annotations)
	}
	if strings.Join(o.CDIDevices, " ") != "v.com/c=1 v.com/c=2" {
		t.Errorf("cdi = %v", o.CDIDevices)
	}
	// SHARED, /m and k conflict; the same device path with the same host
	// path and the same CDI device do not.
	if len(conflicts) != 3 {
		t.Errorf("conflicts = %q", conflicts)
	}
}

func TestDevicesPerNUMA(t *testing.T) {
	known := map[string]*pluginapi.Device{
		"a": {ID: "a", Topology: &pluginapi.TopologyInfo{Nodes: []*pluginapi.NUMANode{{ID: 1}}}},
		"b": {ID: "b"},
	}
	got := devicesPerNUMA([]string{"a", "b", "unknown"}, known)
	if len(got[1]) != 1 || len(got[checkpoint.NoTopology]) != 2 {
		t.Errorf("devicesPerNUMA = %v", got)
	}
}

func TestKeepHeld(t *testing.T) {
	serving := &resourceState{endpoint: &endpoint{}, devices: map[string]*pluginapi.Device{
		"a": {ID: "a", Health: pluginapi.Healthy}, "b": {ID: "b", Health: pluginapi.Unhealthy}, "c": {ID: "c", Health: pluginapi.Healthy}}}
	fromCheckpoint := &resourceState{devices: map[string]*pluginapi.Device{}}
	for _, tc := range []struct {
		name           string
		held           []string
		runningAtStart bool
		r              *resourceState
		err            string
	}{
		{"kubelet restart, plugin not back", []string{"a"}, true, nil, ""},
		{"kubelet restart, device unhealthy", []string{"b"}, true, serving, ""},
		{"reboot, resource unknown", []string{"a"}, false, nil, "cannot allocate unregistered device r"},
		{"reboot, plugin not back", []string{"a"}, false, fromCheckpoint, "no healthy devices present; cannot allocate unhealthy devices r"},
		{"reboot, a held device unhealthy", []string{"a", "b"}, false, serving, "previously allocated devices are no longer healthy; cannot allocate unhealthy devices r"},
		{"reboot, a held device gone", []string{"z"}, false, serving, "previously allocated devices are no longer healthy; cannot allocate unhealthy devices r"},
		{"reboot, held devices healthy", []string{"a", "c"}, false, serving, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := keepHeld("r", tc.held, tc.runningAtStart, tc.r)
			if got := fmt.Sprint(err); (tc.err == "" && err != nil) || (tc.err != "" && got != tc.err) {
				t.Errorf("keepHeld = %v, want %q", err, tc.err)
			}
		})
	}
}

func TestSeveralPluginsOfOneResource(t *testing.T) {
	now := time.Unix(100, 0)
	sockets := func(r *resourceState) string {
		out := "serving:"
		if r.endpoint != nil {
			out += r.endpoint.socket
		}
		out += " standby:"
		for _, e := range r.standby {
			out += e.socket + ","
		}
		return out
	}
	r := &resourceState{}
	a, b, c, a2 := &endpoint{socket: "a"}, &endpoint{socket: "b"}, &endpoint{socket: "c"}, &endpoint{socket: "a"}
	for _, e := range []*endpoint{a, b, c} {
		if replaced := r.add(e); len(replaced) != 0 {
			t.Fatalf("add(%s) replaced %v", e.socket, replaced)
		}
	}
	if got := sockets(r); got != "serving:c standby:a,b," {
		t.Fatalf("after a, b, c: %s", got)
	}
	// The same socket again replaces its connection, wherever it is.
	if replaced := r.add(a2); len(replaced) != 1 || replaced[0] != a {
		t.Fatalf("add(a again) replaced %v", replaced)
	}
	if got := sockets(r); got != "serving:a standby:b,c," || r.serves(a) || !r.serves(a2) {
		t.Fatalf("after a again: %s", got)
	}
	// A replaced connection's end is not the resource's.
	if found, _ := r.remove(a, now); found {
		t.Error("the replaced connection was found")
	}
	// A standby plugin goes: nothing else changes.
	if found, last := r.remove(b, now); !found || last || sockets(r) != "serving:a standby:c," {
		t.Errorf("remove(b) = %v %v, %s", found, last, sockets(r))
	}
	// The serving one goes: the one registered last before it serves.
	if found, last := r.remove(a2, now); !found || last || sockets(r) != "serving:c standby:" || !r.stoppedAt.IsZero() {
		t.Errorf("remove(a) = %v %v, %s", found, last, sockets(r))
	}
	// The last goes: no plugin, the grace period runs.
	if found, last := r.remove(c, now); !found || !last || r.endpoint != nil || !r.stoppedAt.Equal(now) {
		t.Errorf("remove(c) = %v %v, %s stopped at %v", found, last, sockets(r), r.stoppedAt)
	}
	// A new registration serves again.
	r.add(b)
	if !r.stoppedAt.IsZero() || sockets(r) != "serving:b standby:" {
		t.Errorf("after b came back: %s, stopped at %v", sockets(r), r.stoppedAt)
	}
}
