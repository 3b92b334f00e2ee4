package volume

import (
	"path/filepath"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// userFieldsPod has a volume of each kind that takes user and defaultUser
// (the AtomicWriteVolumeUserFields gate), each with one item of its own
// user and one without.
func userFieldsPod() *v1.Pod {
	items := []v1.KeyToPath{{Key: "a", Path: "a", User: ptr.To[int64](1001)}, {Key: "b", Path: "b"}}
	down := []v1.DownwardAPIVolumeFile{
		{Path: "a", User: ptr.To[int64](1001), FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}},
		{Path: "b", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}},
	}
	p := pod("u1",
		vol("cm", v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}, Items: items, DefaultUser: ptr.To[int64](2002)}}),
		vol("sec", v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "sec", Items: items, DefaultUser: ptr.To[int64](2002)}}),
		vol("down", v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: down, DefaultUser: ptr.To[int64](2002)}}),
		vol("proj", v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{DefaultUser: ptr.To[int64](2002), Sources: []v1.VolumeProjection{
			{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}, Items: []v1.KeyToPath{{Key: "a", Path: "cm-a", User: ptr.To[int64](1001)}, {Key: "b", Path: "cm-b"}}}},
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", User: ptr.To[int64](1003)}},
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token-default", Audience: "x"}},
		}}}),
	)
	return p
}

func TestVolumeUserFields(t *testing.T) {
	for _, tc := range []struct {
		name string
		on   bool
		// want: "volume/file" -> owner uid and mode.
		want   map[string][2]int
		events []string
	}{
		{
			name: "gate on: the item's user, else the volume's defaultUser",
			on:   true,
			want: map[string][2]int{
				"cm/a": {1001, 0o644}, "cm/b": {2002, 0o644},
				"sec/a": {1001, 0o644}, "sec/b": {2002, 0o644},
				"down/a": {1001, 0o644}, "down/b": {2002, 0o644},
				"proj/cm-a": {1001, 0o644}, "proj/cm-b": {2002, 0o644},
				// A credential with an owner is the owner's alone.
				"proj/token": {1003, 0o600}, "proj/token-default": {2002, 0o600},
			},
		},
		{
			name: "gate off: ignored, as upstream, with a warning",
			on:   false,
			want: map[string][2]int{
				"cm/a": {0, 0o644}, "cm/b": {0, 0o644},
				"sec/a": {0, 0o644}, "sec/b": {0, 0o644},
				"down/a": {0, 0o644}, "down/b": {0, 0o644},
				"proj/cm-a": {0, 0o644}, "proj/cm-b": {0, 0o644},
				"proj/token": {0, 0o644}, "proj/token-default": {0, 0o644},
			},
			events: []string{EventFieldsIgnored, `volume "cm" sets configMap.items[0].user, configMap.defaultUser`, "AtomicWriteVolumeUserFields feature gate is off"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.m.opts.UserFields = tc.on
			e.objects.setCM("cm", map[string]string{"a": "1", "b": "2"})
			e.objects.setSecret("sec", map[string]string{"a": "1", "b": "2"})
			p := userFieldsPod()
			e.setUp(p)
			dirs := map[string]string{"cm": dirConfigMap, "sec": dirSecret, "down": dirDownwardAPI, "proj": dirProjected}
			for f, want := range tc.want {
				vol, file := filepath.Split(f)
				vol = filepath.Clean(vol)
				st := statT(t, filepath.Join(e.volDir(p, dirs[vol], vol), file))
				if got := [2]int{int(st.Uid), int(st.Mode & 0o777)}; got != want {
					t.Errorf("%s: uid %d mode %o, want uid %d mode %o", f, got[0], got[1], want[0], want[1])
				}
			}
			events := e.events()
			if len(tc.events) == 0 {
				if len(events) != 0 {
					t.Errorf("events %v, want none", events)
				}
				return
			}
			if !hasEvent(events, tc.events...) {
				t.Errorf("events %v, want one with %q", events, tc.events)
			}
			if len(events) != 4 {
				t.Errorf("%d events, want one per volume: %v", len(events), events)
			}
			// Once per volume: a second sync says nothing more.
			e.setUp(p)
			if more := e.events(); len(more) != 0 {
				t.Errorf("a second sync warned again: %v", more)
			}
		})
	}
}

func TestIgnoredFields(t *testing.T) {
	for _, tc := range []struct {
		name    string
		src     v1.VolumeSource
		userOn  bool
		emptyOn bool
		want    map[string][]string
	}{
		{name: "none", src: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{Items: []v1.KeyToPath{{Key: "a", Path: "a"}}}}, want: map[string][]string{}},
		{name: "emptyDir without mode", src: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}, want: map[string][]string{}},
		{name: "emptyDir mode, gate off", src: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Mode: ptr.To[int32](0o700)}},
			want: map[string][]string{"EmptyDirVolumeMode": {"emptyDir.mode"}}},
		{name: "emptyDir mode, gate on", src: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Mode: ptr.To[int32](0o700)}}, emptyOn: true, want: map[string][]string{}},
		{name: "secret defaultUser 0", src: v1.VolumeSource{Secret: &v1.SecretVolumeSource{DefaultUser: ptr.To[int64](0)}},
			want: map[string][]string{"AtomicWriteVolumeUserFields": {"secret.defaultUser"}}},
		{name: "secret defaultUser, gate on", src: v1.VolumeSource{Secret: &v1.SecretVolumeSource{DefaultUser: ptr.To[int64](0)}}, userOn: true, want: map[string][]string{}},
		{name: "projected, deep", src: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			{Secret: &v1.SecretProjection{}},
			{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "x"}, {Path: "y", User: ptr.To[int64](5)}}}},
			{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{User: ptr.To[int64](6)}},
			{PodCertificate: &v1.PodCertificateProjection{User: ptr.To[int64](7)}},
		}}}, want: map[string][]string{"AtomicWriteVolumeUserFields": {"projected.sources[1].downwardAPI.items[1].user", "projected.sources[2].clusterTrustBundle.user", "projected.sources[3].podCertificate.user"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := New(Options{RootDir: t.TempDir(), UserFields: tc.userOn, EmptyDirMode: tc.emptyOn})
			if got := m.ignoredFields(&tc.src); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ignoredFields = %q, want %q", got, tc.want)
			}
		})
	}
}
