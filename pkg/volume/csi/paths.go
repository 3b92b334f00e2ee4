// Package csi sets CSI volumes up on the node and tears them down, as the
// upstream kubelet's CSI volume plugin does: an inline ephemeral volume
// (spec.volumes[].csi) is published straight to the pod; a persistent one
// (a PersistentVolume with spec.csi) waits for its VolumeAttachment when
// its driver needs attaching, is staged once per node when the driver
// stages (STAGE_UNSTAGE_VOLUME) and then published to each pod. Tear-down
// unpublishes, and unstages once no pod on the node uses the volume.
//
// Everything lives where upstream keeps it, with upstream's vol_data.json
// beside it, so a node taken over from the upstream kubelet (or handed
// back) finds its volumes:
//
//	<root>/plugins/kubernetes.io/csi/<driver>/<sha256(volumeHandle)>/globalmount   (staging path)
//	<root>/plugins/kubernetes.io/csi/<driver>/<sha256(volumeHandle)>/vol_data.json
//	<root>/pods/<uid>/volumes/kubernetes.io~csi/<name>/mount                     (publish target)
//	<root>/pods/<uid>/volumes/kubernetes.io~csi/<name>/vol_data.json
//
// where <name> is the pod's volume name for an inline volume and the
// PersistentVolume's name for a persistent one.
//
// The decisions (paths, requests, publish context, who still uses a staged
// volume) are pure functions in paths.go, voldata.go and request.go;
// mounter.go does the I/O: the driver's calls, the API reads, the disk.
package csi

import (
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"strings"
)

const (
	// PluginName is upstream's name of the CSI volume plugin.
	PluginName = "kubernetes.io/csi"
	// PodPluginDir is the plugin's directory under pods/<uid>/volumes
	// (the plugin name with "/" escaped).
	PodPluginDir = "kubernetes.io~csi"
	// globalMount is the staging path's last element.
	globalMount = "globalmount"
	// publishLeaf is the publish target's last element.
	publishLeaf = "mount"
)

// escapeQualifiedName escapes a name for one path element, as upstream
// ("/" becomes "~").
func escapeQualifiedName(s string) string { return strings.ReplaceAll(s, "/", "~") }

// StagingPath is where a persistent volume is staged on the node.
func StagingPath(rootDir, driver, volumeHandle string) string {
	return filepath.Join(rootDir, "plugins", PluginName, driver, fmt.Sprintf("%x", sha256.Sum256([]byte(volumeHandle))), globalMount)
}

// PodVolumesDir is the directory of a pod's CSI volumes.
func PodVolumesDir(podDir string) string {
	return filepath.Join(podDir, "volumes", PodPluginDir)
}

// PublishPath is where the volume called specName (the pod's volume name
// for an inline volume, the PersistentVolume's name otherwise) is
// published for the pod whose directory is podDir.
func PublishPath(podDir, specName string) string {
	return filepath.Join(PodVolumesDir(podDir), escapeQualifiedName(specName), publishLeaf)
}

// AttachmentName is the name of the VolumeAttachment that attaches a
// volume of driver to node.
func AttachmentName(volumeHandle, driver, node string) string {
	return fmt.Sprintf("csi-%x", sha256.Sum256([]byte(volumeHandle+driver+node)))
}

// EphemeralHandle is the volume ID of a pod's inline volume.
func EphemeralHandle(podUID, volumeName string) string {
	return fmt.Sprintf("csi-%x", sha256.Sum256([]byte(podUID+volumeName)))
}

// UniqueVolumeName names a persistent volume in the Node's volumesInUse
// and volumesAttached, as upstream ("kubernetes.io/csi/<driver>^<handle>").
func UniqueVolumeName(driver, volumeHandle string) string {
	return PluginName + "/" + driver + "^" + volumeHandle
}

// checkDriverName refuses a driver name that could leave the plugin's
// directory (the API validates names; a static pod's are not).
func checkDriverName(driver string) error {
	if driver == "" || strings.ContainsAny(driver, "/\x00") || strings.HasPrefix(driver, ".") {
		return fmt.Errorf("invalid CSI driver name %q", driver)
	}
	return nil
}
