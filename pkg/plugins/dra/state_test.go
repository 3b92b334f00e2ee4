package dra

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// testdata/upstream-1.37.2-dra_manager_state was written by upstream
// kubelet 1.37.2's DRA checkpoint code (state.NewCheckpoint(...)
// .MarshalCheckpoint()) from the module proxy's k8s.io/kubernetes v1.37.2.
func TestReadsAndWritesUpstreamCheckpoint(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("testdata", "upstream-1.37.2-dra_manager_state"))
	if err != nil {
		t.Fatal(err)
	}
	list, err := decodeState(want)
	if err != nil {
		t.Fatalf("upstream's checkpoint does not verify: %v", err)
	}
	if len(list) != 1 || list[0].ClaimName != "pod-gpu-abcde" || !list[0].PodUIDs.Has("pod-uid-1") ||
		list[0].DriverState["test-driver.cdi.k8s.io"].Devices[0].CDIDeviceIDs[0] != "test-driver.cdi.k8s.io/test=claim-uid-1-device-00" {
		t.Fatalf("decoded %+v", list)
	}
	got, err := encodeState(map[string]*claim{"ns/pod-gpu-abcde": {claimState: list[0]}})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("re-encoded checkpoint differs from upstream's:\n got %s\nwant %s", got, want)
	}
	if _, err := decodeState(bytes.Replace(want, []byte("device-00"), []byte("device-01"), 1)); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Errorf("a tampered checkpoint decoded: %v", err)
	}
}

func TestCDIDevicesForAContainer(t *testing.T) {
	tmpl, claimName := "tmpl", "pod-gpu-x"
	pod := &v1.Pod{}
	pod.Namespace = "ns"
	pod.Spec.ResourceClaims = []v1.PodResourceClaim{
		{Name: "gpu", ResourceClaimTemplateName: &tmpl},
		{Name: "none", ResourceClaimTemplateName: &tmpl},
		{Name: "shared", ResourceClaimName: &claimName},
	}
	generated := "pod-gpu-abc"
	pod.Status.ResourceClaimStatuses = []v1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: &generated}, {Name: "none"}}
	c := &v1.Container{Name: "c", Resources: v1.ResourceRequirements{Claims: []v1.ResourceClaim{{Name: "gpu", Request: "a"}, {Name: "none"}, {Name: "shared"}}}}
	used, err := containerClaims(pod, c)
	if err != nil {
		t.Fatal(err)
	}
	if len(used) != 2 || len(used[generated]) != 1 || used[generated][0] != "a" || len(used[claimName]) != 1 {
		t.Fatalf("containerClaims = %v", used)
	}
	claims := map[string]*claim{
		"ns/" + generated: {claimState: claimState{DriverState: map[string]driverState{"d": {Devices: []deviceState{
			{RequestNames: []string{"a"}, CDIDeviceIDs: []string{"d/x=1"}},
			{RequestNames: []string{"b"}, CDIDeviceIDs: []string{"d/x=2"}},
			{CDIDeviceIDs: []string{"d/x=all"}},
		}}}}},
		"ns/" + claimName: {claimState: claimState{DriverState: map[string]driverState{"d": {Devices: []deviceState{{CDIDeviceIDs: []string{"d/x=1", "d/x=3"}}}}}}},
	}
	got, err := cdiDevicesFor(claims, "ns", used)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != "d/x=1 d/x=all d/x=3" {
		t.Errorf("CDI devices = %v", got)
	}
	if _, err := cdiDevicesFor(map[string]*claim{}, "ns", used); err == nil {
		t.Error("a claim not prepared gave devices")
	}
	// A pod whose template claim has no status yet cannot be resolved.
	pod.Status.ResourceClaimStatuses = nil
	if _, err := containerClaims(pod, c); err == nil {
		t.Error("containerClaims resolved a template claim without status")
	}
}

func TestClaimsInUse(t *testing.T) {
	two := map[string]driverState{"a.example.com": {}, "b.example.com": {}}
	one := map[string]driverState{"a.example.com": {}}
	for _, c := range []struct {
		name   string
		claims map[string]*claim
		want   map[string]int
	}{
		{"none: <any> is 0", nil, map[string]int{AnyDriver: 0}},
		{"only prepared claims count", map[string]*claim{
			"ns/x": {claimState: claimState{DriverState: one}, prepared: true},
			"ns/y": {claimState: claimState{DriverState: one}, prepared: false},
		}, map[string]int{AnyDriver: 1, "a.example.com": 1}},
		{"a claim of two drivers counts once in all", map[string]*claim{
			"ns/x": {claimState: claimState{DriverState: two}, prepared: true},
			"ns/y": {claimState: claimState{DriverState: one}, prepared: true},
		}, map[string]int{AnyDriver: 2, "a.example.com": 2, "b.example.com": 1}},
	} {
		if got := claimsInUse(c.claims); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
