package volume

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// EventFieldsIgnored is the warning a pod gets when one of its volumes
// sets a field of an alpha feature whose gate is off on this node
// (upstream ignores such a field without a word): user and defaultUser
// (AtomicWriteVolumeUserFields), an emptyDir's mode (EmptyDirVolumeMode).
const EventFieldsIgnored = "VolumeFieldsIgnored"

// fileDefaults are what a volume's files get unless an item sets its own:
// the volume's defaultMode, and the owner its defaultUser names (nil with
// the AtomicWriteVolumeUserFields gate off).
type fileDefaults struct {
	mode  int32
	owner *int64
}

// defaults reads a volume's defaultMode and defaultUser.
func (s *setup) defaults(mode *int32, defaultUser *int64) fileDefaults {
	d := fileDefaults{mode: defaultMode(mode)}
	if s.m.opts.UserFields {
		d.owner = defaultUser
	}
	return d
}

// owner is the owner uid of an item's file: the item's user, else the
// volume's defaultUser, else fallback (nil: the writer's own uid). The
// item's user counts only with the AtomicWriteVolumeUserFields gate on,
// as d.owner does.
func (s *setup) owner(item *int64, d fileDefaults, fallback *int64) *int64 {
	switch {
	case s.m.opts.UserFields && item != nil:
		return item
	case d.owner != nil:
		return d.owner
	}
	return fallback
}

// ignoredFields are the fields src sets that this node ignores because
// their feature gate is off, by gate.
func (m *Manager) ignoredFields(src *v1.VolumeSource) map[string][]string {
	out := map[string][]string{}
	if !m.opts.UserFields {
		if f := userFields(reflect.ValueOf(src).Elem(), ""); len(f) > 0 {
			out["AtomicWriteVolumeUserFields"] = f
		}
	}
	if !m.opts.EmptyDirMode && src.EmptyDir != nil && src.EmptyDir.Mode != nil {
		out["EmptyDirVolumeMode"] = []string{"emptyDir.mode"}
	}
	return out
}

// userFields lists the paths of the user and defaultUser fields set under
// v, a value of a core/v1 volume type.
func userFields(v reflect.Value, path string) []string {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return userFields(v.Elem(), path)
	case reflect.Slice:
		var out []string
		for i := 0; i < v.Len(); i++ {
			out = append(out, userFields(v.Index(i), fmt.Sprintf("%s[%d]", path, i))...)
		}
		return out
	case reflect.Struct:
		var out []string
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			p := name
			if path != "" {
				p = path + "." + name
			}
			fv := v.Field(i)
			if (name == "user" || name == "defaultUser") && f.Type == reflect.TypeOf((*int64)(nil)) {
				if !fv.IsNil() {
					out = append(out, p)
				}
				continue
			}
			out = append(out, userFields(fv, p)...)
		}
		return out
	}
	return nil
}

// warnIgnoredFields says, once per pod volume and kubelet life, which of
// the volume's fields are ignored here and why.
func (m *Manager) warnIgnoredFields(ctx context.Context, pod *v1.Pod, v *v1.Volume) {
	ignored := m.ignoredFields(&v.VolumeSource)
	gates := make([]string, 0, len(ignored))
	for g := range ignored {
		gates = append(gates, g)
	}
	sort.Strings(gates)
	for _, g := range gates {
		fields := strings.Join(ignored[g], ", ")
		klog.FromContext(ctx).Info("Volume fields ignored", "pod", klog.KObj(pod), "volume", v.Name, "fields", fields, "reason", "the "+g+" feature gate is off")
		m.opts.Recorder.Eventf(pod, v1.EventTypeWarning, EventFieldsIgnored, "volume %q sets %s, which this node ignores: the %s feature gate is off", v.Name, fields, g)
	}
}
