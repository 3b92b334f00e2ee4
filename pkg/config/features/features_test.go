package features

import (
	"reflect"
	"testing"
)

func TestGates(t *testing.T) {
	var zero Gates
	if !zero.Enabled(InPlacePodVerticalScaling) {
		t.Error("the zero Gates has a wired feature off")
	}
	off := zero.With(InPlacePodVerticalScaling, false)
	if off.Enabled(InPlacePodVerticalScaling) || !zero.Enabled(InPlacePodVerticalScaling) || !off.Enabled(PodReadyToStartContainersCondition) {
		t.Error("With changed the wrong gate or its receiver")
	}
	if !off.With(InPlacePodVerticalScaling, true).Enabled(InPlacePodVerticalScaling) {
		t.Error("With cannot turn a gate back on")
	}
	// A gate off by default upstream is off in the zero Gates, and With
	// and New turn it on.
	if zero.Enabled(AtomicWriteVolumeUserFields) || !zero.With(AtomicWriteVolumeUserFields, true).Enabled(AtomicWriteVolumeUserFields) ||
		zero.With(AtomicWriteVolumeUserFields, true).With(AtomicWriteVolumeUserFields, false).Enabled(AtomicWriteVolumeUserFields) {
		t.Error("AtomicWriteVolumeUserFields: not off by default, or With does not set it")
	}
	if New(func(string) (bool, bool) { return false, true }).Enabled(AtomicWriteVolumeUserFields) ||
		!New(func(string) (bool, bool) { return true, true }).Enabled(AtomicWriteVolumeUserFields) {
		t.Error("New does not follow the feature gate for a gate off by default")
	}
	// A gate the feature gate does not know (removed upstream after GA)
	// is on; a known gate follows the feature gate.
	g := New(func(name string) (bool, bool) {
		switch Feature(name) {
		case PodReadyToStartContainersCondition:
			return false, true
		case InPlacePodVerticalScaling:
			return false, false
		}
		return true, true
	})
	if g.Enabled(PodReadyToStartContainersCondition) || !g.Enabled(InPlacePodVerticalScaling) || !g.Enabled(KubeletFineGrainedAuthz) {
		t.Errorf("New: %+v", g)
	}
	lacking := LackingOn(func(name string) (bool, bool) {
		switch name {
		case "ImageVolumeWithDigest", "ImageVolume", "KubeletInUserNamespace", "KubeletPSI", string(InPlacePodVerticalScaling):
			return true, true
		case "DynamicResourceAllocation":
			return true, false
		}
		return false, true
	})
	if want := []string{"ImageVolumeWithDigest", "KubeletInUserNamespace"}; !reflect.DeepEqual(lacking, want) {
		t.Errorf("LackingOn = %v, want %v (wired, locked and unknown gates never lacking)", lacking, want)
	}
	if _, ok := Lookup("SidecarContainers"); !ok {
		t.Error("Lookup misses a row")
	}
}
