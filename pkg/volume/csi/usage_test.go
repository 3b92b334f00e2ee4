package csi

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// NodeGetVolumeStats is asked on the publish target, only of a driver
// with GET_VOLUME_STATS; without it the answer is a *NotSupportedError
// and the driver is not called.
func TestVolumeStatsAskTheDriver(t *testing.T) {
	ctx := context.Background()
	e := newMounterEnv(t, csipb.NodeServiceCapability_RPC_GET_VOLUME_STATS)
	e.fake.SetUsage(&csipb.VolumeUsage{Unit: csipb.VolumeUsage_BYTES, Total: 5 << 30, Used: 1 << 30, Available: 4 << 30})
	u, err := e.m.VolumeStats(ctx, driverName, "h1", "/target")
	if err != nil || u.Bytes == nil || u.Bytes.Total != 5<<30 || u.Bytes.Used != 1<<30 || u.Inodes != nil {
		t.Fatalf("usage %+v, %v", u, err)
	}
	if r := e.fake.Last("NodeGetVolumeStats").(*csipb.NodeGetVolumeStatsRequest); r.GetVolumeId() != "h1" || r.GetVolumePath() != "/target" {
		t.Errorf("request %v", r)
	}

	e2 := newMounterEnv(t)
	_, err = e2.m.VolumeStats(ctx, driverName, "h1", "/target")
	var ns *NotSupportedError
	if !errors.As(err, &ns) || ns.Capability != "GET_VOLUME_STATS" {
		t.Fatalf("without the capability: %v", err)
	}
	if e2.fake.Last("NodeGetVolumeStats") != nil {
		t.Error("NodeGetVolumeStats called of a driver without GET_VOLUME_STATS")
	}
}

// NodeExpandVolume gets the publish target, the staging path (drivers
// that stage), the new size, the capability and the expand secret; a
// driver without EXPAND_VOLUME is not called, nor is a volume that is not
// published.
func TestExpandVolume(t *testing.T) {
	ctx := context.Background()
	e := newMounterEnv(t, csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME, csipb.NodeServiceCapability_RPC_EXPAND_VOLUME)
	e.csiDriver(func(s *storagev1.CSIDriverSpec) { s.AttachRequired = ptr.To(false) })
	e.api.secrets["ns/exp"] = &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "exp", Namespace: "ns"}, Data: map[string][]byte{"key": []byte("val")}}
	pod := mpod("u1")
	pv := pvWith("h1", func(pv *v1.PersistentVolume) {
		pv.Spec.CSI.NodeExpandSecretRef = &v1.SecretReference{Namespace: "ns", Name: "exp"}
		pv.Spec.CSI.FSType = "ext4"
	})
	v := Persistent(pod, "data", pv, false)

	if _, err := e.m.ExpandVolume(ctx, v, 2<<30); err == nil || e.fake.Last("NodeExpandVolume") != nil {
		t.Fatalf("expanding a volume not published: %v", err)
	}
	if _, err := e.m.SetUp(ctx, v, first); err != nil {
		t.Fatal(err)
	}
	got, err := e.m.ExpandVolume(ctx, v, 2<<30)
	if err != nil || got != 2<<30 {
		t.Fatalf("expand: %d, %v", got, err)
	}
	r := e.fake.Last("NodeExpandVolume").(*csipb.NodeExpandVolumeRequest)
	target := PublishPath(filepath.Join(e.root, "pods", "u1"), "pv-h1")
	if r.GetVolumeId() != "h1" || r.GetVolumePath() != target || r.GetStagingTargetPath() != StagingPath(e.root, driverName, "h1") ||
		r.GetCapacityRange().GetRequiredBytes() != 2<<30 || r.GetSecrets()["key"] != "val" ||
		r.GetVolumeCapability().GetMount().GetFsType() != "ext4" ||
		r.GetVolumeCapability().GetAccessMode().GetMode() != csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER {
		t.Errorf("request %v", r)
	}

	e2 := newMounterEnv(t)
	e2.csiDriver(func(s *storagev1.CSIDriverSpec) { s.AttachRequired = ptr.To(false) })
	v2 := Persistent(mpod("u2"), "data", pvWith("h2", nil), false)
	if _, err := e2.m.SetUp(ctx, v2, first); err != nil {
		t.Fatal(err)
	}
	_, err = e2.m.ExpandVolume(ctx, v2, 2<<30)
	var ns *NotSupportedError
	if !errors.As(err, &ns) || ns.Capability != "EXPAND_VOLUME" || e2.fake.Last("NodeExpandVolume") != nil {
		t.Fatalf("without the capability: %v", err)
	}
	if ok, err := e2.m.CanExpand(ctx, driverName); ok || err != nil {
		t.Errorf("CanExpand without the capability: %v %v", ok, err)
	}
	if ok, err := e.m.CanExpand(ctx, driverName); !ok || err != nil {
		t.Errorf("CanExpand with the capability: %v %v", ok, err)
	}
}
