package csi

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	storagev1 "k8s.io/api/storage/v1"

	plugincsi "github.com/gokubelet/kubelet/pkg/plugins/csi"
)

// NotSupportedError is a volume call the driver does not offer (its Node
// service lacks the capability): upstream leaves the volume out of the
// stats, and does not grow its filesystem on the node.
type NotSupportedError struct {
	Driver string
	// Capability is the missing Node service capability.
	Capability string
}

func (e *NotSupportedError) Error() string {
	return fmt.Sprintf("CSI driver %q does not have the node capability %s", e.Driver, e.Capability)
}

// VolumeStats asks the driver the usage of the volume published at target
// (NodeGetVolumeStats), as upstream reports a CSI volume's usage: a driver
// without GET_VOLUME_STATS gives a *NotSupportedError.
func (m *Mounter) VolumeStats(ctx context.Context, driver, handle, target string) (plugincsi.VolumeUsage, error) {
	client, err := m.opts.Drivers.NodeClient(driver)
	if err != nil {
		return plugincsi.VolumeUsage{}, err
	}
	caps, err := client.Capabilities(ctx)
	if err != nil {
		return plugincsi.VolumeUsage{}, err
	}
	if !caps.GetVolumeStats {
		return plugincsi.VolumeUsage{}, &NotSupportedError{Driver: driver, Capability: "GET_VOLUME_STATS"}
	}
	return client.VolumeStats(ctx, handle, target)
}

// CanExpand reports whether the volume's driver grows filesystems on the
// node (EXPAND_VOLUME).
func (m *Mounter) CanExpand(ctx context.Context, driver string) (bool, error) {
	client, err := m.opts.Drivers.NodeClient(driver)
	if err != nil {
		return false, err
	}
	caps, err := client.Capabilities(ctx)
	if err != nil {
		return false, err
	}
	return caps.ExpandVolume, nil
}

// ExpandVolume asks the driver to grow the filesystem of a persistent
// volume published to v.Pod to newSize bytes (NodeExpandVolume, with the
// staging path where the driver stages, and the PersistentVolume's
// NodeExpandSecretRef). It returns the capacity the driver reports (0: it
// did not say). A driver without EXPAND_VOLUME gives a
// *NotSupportedError; the volume must be published.
func (m *Mounter) ExpandVolume(ctx context.Context, v *Volume, newSize int64) (int64, error) {
	if v.Mode() != storagev1.VolumeLifecyclePersistent {
		return 0, fmt.Errorf("%s is not a persistent volume: only those are expanded", v.describe())
	}
	client, err := m.opts.Drivers.NodeClient(v.Driver)
	if err != nil {
		return 0, err
	}
	caps, err := client.Capabilities(ctx)
	if err != nil {
		return 0, err
	}
	if !caps.ExpandVolume {
		return 0, &NotSupportedError{Driver: v.Driver, Capability: "EXPAND_VOLUME"}
	}
	target := PublishPath(m.podDir(v.Pod.UID), v.SpecName())
	if _, err := os.Stat(filepath.Join(filepath.Dir(target), VolDataFile)); err != nil {
		return 0, fmt.Errorf("%s is not published to pod %s/%s: %w", v.describe(), v.Pod.Namespace, v.Pod.Name, err)
	}
	secrets, err := m.secret(ctx, v.ExpandSecret, "NodeExpandSecretRef")
	if err != nil {
		return 0, err
	}
	unlock := m.lock(UniqueVolumeName(v.Driver, v.Handle))
	defer unlock()
	return client.ExpandVolume(ctx, expandRequest(v, caps, m.opts.RootDir, target, newSize, secrets))
}

// expandRequest is the NodeExpandVolume request of a published volume.
func expandRequest(v *Volume, caps plugincsi.NodeCaps, rootDir, target string, newSize int64, secrets map[string][]byte) *csipb.NodeExpandVolumeRequest {
	req := &csipb.NodeExpandVolumeRequest{
		VolumeId: v.Handle, VolumePath: target,
		CapacityRange:    &csipb.CapacityRange{RequiredBytes: newSize},
		VolumeCapability: capability(v, caps, nil),
		Secrets:          secretStrings(secrets),
	}
	if caps.StageUnstage {
		req.StagingTargetPath = StagingPath(rootDir, v.Driver, v.Handle)
	}
	return req
}
