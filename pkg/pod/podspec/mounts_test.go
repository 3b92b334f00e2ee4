package podspec

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestResolveRecursiveReadOnly(t *testing.T) {
	mode := func(m v1.RecursiveReadOnlyMode) *v1.RecursiveReadOnlyMode { return &m }
	prop := func(p v1.MountPropagationMode) *v1.MountPropagationMode { return &p }
	for _, tc := range []struct {
		name      string
		vm        v1.VolumeMount
		supported bool
		want      bool
		err       string
	}{
		{name: "unset", vm: v1.VolumeMount{Name: "v", ReadOnly: true}, supported: true},
		{name: "unset on a writable mount", vm: v1.VolumeMount{Name: "v"}, supported: true},
		{name: "disabled", vm: v1.VolumeMount{Name: "v", ReadOnly: true, RecursiveReadOnly: mode(v1.RecursiveReadOnlyDisabled)}, supported: true},
		{name: "disabled on a writable mount with propagation", vm: v1.VolumeMount{Name: "v", RecursiveReadOnly: mode(v1.RecursiveReadOnlyDisabled), MountPropagation: prop(v1.MountPropagationBidirectional)}},
		{name: "if possible, supported", vm: v1.VolumeMount{Name: "v", ReadOnly: true, RecursiveReadOnly: mode(v1.RecursiveReadOnlyIfPossible)}, supported: true, want: true},
		{name: "if possible, unsupported: plain read-only", vm: v1.VolumeMount{Name: "v", ReadOnly: true, RecursiveReadOnly: mode(v1.RecursiveReadOnlyIfPossible)}},
		{name: "enabled, supported", vm: v1.VolumeMount{Name: "v", ReadOnly: true, RecursiveReadOnly: mode(v1.RecursiveReadOnlyEnabled)}, supported: true, want: true},
		{name: "enabled, propagation None", vm: v1.VolumeMount{Name: "v", ReadOnly: true, RecursiveReadOnly: mode(v1.RecursiveReadOnlyEnabled), MountPropagation: prop(v1.MountPropagationNone)}, supported: true, want: true},
		{name: "enabled, unsupported", vm: v1.VolumeMount{Name: "v", ReadOnly: true, RecursiveReadOnly: mode(v1.RecursiveReadOnlyEnabled)},
			err: `volume "v" requested recursive read-only mode, but it is not supported by the runtime`},
		{name: "enabled, not read-only", vm: v1.VolumeMount{Name: "v", RecursiveReadOnly: mode(v1.RecursiveReadOnlyEnabled)}, supported: true,
			err: `volume "v" requested recursive read-only mode, but it is not read-only`},
		{name: "if possible, not read-only, even unsupported", vm: v1.VolumeMount{Name: "v", RecursiveReadOnly: mode(v1.RecursiveReadOnlyIfPossible)},
			err: `volume "v" requested recursive read-only mode, but it is not read-only`},
		{name: "enabled, host-to-container propagation", vm: v1.VolumeMount{Name: "v", ReadOnly: true, RecursiveReadOnly: mode(v1.RecursiveReadOnlyEnabled), MountPropagation: prop(v1.MountPropagationHostToContainer)}, supported: true,
			err: `volume "v" requested recursive read-only mode, but it is not compatible with propagation "HostToContainer"`},
		{name: "if possible, bidirectional propagation", vm: v1.VolumeMount{Name: "v", ReadOnly: true, RecursiveReadOnly: mode(v1.RecursiveReadOnlyIfPossible), MountPropagation: prop(v1.MountPropagationBidirectional)}, supported: true,
			err: `volume "v" requested recursive read-only mode, but it is not compatible with propagation "Bidirectional"`},
		{name: "unknown mode", vm: v1.VolumeMount{Name: "v", ReadOnly: true, RecursiveReadOnly: mode("Sometimes")}, supported: true,
			err: `unknown recursive read-only mode "Sometimes"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ResolveRecursiveReadOnly(tc.vm, tc.supported)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %v %v, want %v", got, err, tc.want)
			}
		})
	}
}

func TestVolumeMountStatuses(t *testing.T) {
	mode := func(m v1.RecursiveReadOnlyMode) *v1.RecursiveReadOnlyMode { return &m }
	c := &v1.Container{VolumeMounts: []v1.VolumeMount{
		{Name: "rw", MountPath: "/rw"},
		{Name: "ro", MountPath: "/ro", ReadOnly: true},
		{Name: "ifp", MountPath: "/ifp", ReadOnly: true, RecursiveReadOnly: mode(v1.RecursiveReadOnlyIfPossible)},
		{Name: "en", MountPath: "/en", ReadOnly: true, RecursiveReadOnly: mode(v1.RecursiveReadOnlyEnabled)},
		{Name: "bad", MountPath: "/bad", RecursiveReadOnly: mode(v1.RecursiveReadOnlyEnabled)},
	}}
	show := func(sts []v1.VolumeMountStatus) map[string]string {
		out := map[string]string{}
		for _, s := range sts {
			v := "rw"
			if s.ReadOnly {
				v = "ro"
			}
			if s.RecursiveReadOnly != nil {
				v += "," + string(*s.RecursiveReadOnly)
			}
			out[s.Name+" "+s.MountPath] = v
		}
		return out
	}
	for supported, want := range map[bool]map[string]string{
		true:  {"rw /rw": "rw", "ro /ro": "ro,Disabled", "ifp /ifp": "ro,Enabled", "en /en": "ro,Enabled", "bad /bad": "rw"},
		false: {"rw /rw": "rw", "ro /ro": "ro,Disabled", "ifp /ifp": "ro,Disabled", "en /en": "ro,Disabled", "bad /bad": "rw"},
	} {
		got := show(VolumeMountStatuses(c, supported))
		if len(got) != len(want) {
			t.Errorf("supported=%v: %v, want %v", supported, got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("supported=%v: %s is %q, want %q", supported, k, got[k], v)
			}
		}
	}
	if VolumeMountStatuses(&v1.Container{}, true) != nil {
		t.Errorf("a container without volumeMounts reports some")
	}
}
