package csi

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// A rewritten vol_data.json keeps the keys this kubelet does not write
// (upstream's seLinuxMountContext) of the same volume, never those of
// another volume, and this kubelet's values win.
func TestMergeVolData(t *testing.T) {
	ours := map[string]string{keyVolumeHandle: "h", keyDriverName: "d", keySpecVolID: "pv"}
	for _, tc := range []struct {
		name string
		old  map[string]string
		want map[string]string
	}{
		{"no file", nil, ours},
		{"the same keys", map[string]string{keyVolumeHandle: "h", keyDriverName: "d", keySpecVolID: "pv"}, ours},
		{"upstream's SELinux context kept",
			map[string]string{keyVolumeHandle: "h", keyDriverName: "d", keySpecVolID: "pv", "seLinuxMountContext": "system_u:object_r:container_file_t:s0:c1,c2"},
			map[string]string{keyVolumeHandle: "h", keyDriverName: "d", keySpecVolID: "pv", "seLinuxMountContext": "system_u:object_r:container_file_t:s0:c1,c2"}},
		{"our value wins", map[string]string{keyVolumeHandle: "h", keyDriverName: "d", keySpecVolID: "old-pv", keyNodeName: "n"},
			map[string]string{keyVolumeHandle: "h", keyDriverName: "d", keySpecVolID: "pv", keyNodeName: "n"}},
		{"another handle: nothing kept", map[string]string{keyVolumeHandle: "other", keyDriverName: "d", "seLinuxMountContext": "x"}, ours},
		{"another driver: nothing kept", map[string]string{keyVolumeHandle: "h", keyDriverName: "other", "seLinuxMountContext": "x"}, ours},
		{"no identity: nothing kept", map[string]string{"seLinuxMountContext": "x"}, ours},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := mergeVolData(tc.old, ours); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// rewriteVolData merges into the file there; an unreadable file is
// replaced and said so.
func TestRewriteVolData(t *testing.T) {
	ours := Staged{VolumeHandle: "h", Driver: "d"}.data()
	for _, tc := range []struct {
		name, before string
		replaced     bool
		want         map[string]string
	}{
		{"none", "", false, ours},
		{"upstream's", `{"driverName":"d","seLinuxMountContext":"ctx","volumeHandle":"h"}` + "\n", false,
			map[string]string{keyVolumeHandle: "h", keyDriverName: "d", "seLinuxMountContext": "ctx"}},
		{"unreadable", `{"driverName":`, true, ours},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.before != "" {
				if err := os.WriteFile(filepath.Join(dir, VolDataFile), []byte(tc.before), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			replaced, err := rewriteVolData(dir, ours)
			if err != nil || (replaced != nil) != tc.replaced {
				t.Fatalf("replaced %v, err %v", replaced, err)
			}
			if got, err := readVolData(dir); err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}
