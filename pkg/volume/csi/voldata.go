package csi

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/moby/sys/atomicwriter"
	storagev1 "k8s.io/api/storage/v1"
)

// VolDataFile is upstream's file of what a staged or published volume is,
// beside its staging path or publish target.
const VolDataFile = "vol_data.json"

// Keys of vol_data.json, upstream's.
const (
	keySpecVolID     = "specVolID"
	keyVolumeHandle  = "volumeHandle"
	keyDriverName    = "driverName"
	keyNodeName      = "nodeName"
	keyAttachmentID  = "attachmentID"
	keyLifecycleMode = "volumeLifecycleMode"
)

// Published is what the vol_data.json of a publish target says.
type Published struct {
	SpecName, VolumeHandle, Driver, NodeName, AttachmentID string
	Mode                                                   storagev1.VolumeLifecycleMode
}

func (p Published) data() map[string]string {
	return map[string]string{
		keySpecVolID:     p.SpecName,
		keyVolumeHandle:  p.VolumeHandle,
		keyDriverName:    p.Driver,
		keyNodeName:      p.NodeName,
		keyAttachmentID:  p.AttachmentID,
		keyLifecycleMode: string(p.Mode),
	}
}

func publishedFrom(d map[string]string) (Published, error) {
	p := Published{
		SpecName: d[keySpecVolID], VolumeHandle: d[keyVolumeHandle], Driver: d[keyDriverName],
		NodeName: d[keyNodeName], AttachmentID: d[keyAttachmentID], Mode: storagev1.VolumeLifecycleMode(d[keyLifecycleMode]),
	}
	if p.VolumeHandle == "" || p.Driver == "" {
		return p, errors.New("no volume handle or driver name")
	}
	if p.Mode == "" {
		// Written by a kubelet before lifecycle modes: persistent.
		p.Mode = storagev1.VolumeLifecyclePersistent
	}
	return p, nil
}

// Staged is what the vol_data.json beside a staging path says.
type Staged struct{ VolumeHandle, Driver string }

func (s Staged) data() map[string]string {
	return map[string]string{keyVolumeHandle: s.VolumeHandle, keyDriverName: s.Driver}
}

// mergeVolData is what a vol_data.json rewritten with ours says, given the
// file already there (old, nil if none): ours, plus every key of old that
// ours does not set when old describes the same volume (same handle and
// driver). Upstream writes keys this kubelet does not (seLinuxMountContext
// for a volume mounted with an SELinux context), which upstream reads back
// when the node is handed back to it; a republish by this kubelet (after a
// takeover) leaves the driver's mount as it was, so what upstream recorded
// of it stays true. A file of another volume (a stale one) keeps nothing.
func mergeVolData(old, ours map[string]string) map[string]string {
	out := make(map[string]string, len(ours)+len(old))
	for k, v := range ours {
		out[k] = v
	}
	if old == nil || old[keyVolumeHandle] != ours[keyVolumeHandle] || old[keyDriverName] != ours[keyDriverName] {
		return out
	}
	for k, v := range old {
		if _, set := ours[k]; !set {
			out[k] = v
		}
	}
	return out
}

// rewriteVolData writes dir/vol_data.json with ours merged into the file
// already there (mergeVolData). A file there that cannot be read is
// replaced by ours, and the returned replaced error says why (for the
// log); err is a failed write.
func rewriteVolData(dir string, ours map[string]string) (replaced, err error) {
	old, rerr := readVolData(dir)
	if rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		replaced = rerr
	}
	return replaced, writeVolData(dir, mergeVolData(old, ours))
}

// writeVolData writes data as dir/vol_data.json (a JSON object and a
// newline, as upstream).
func writeVolData(dir string, data map[string]string) error {
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	return atomicwriter.WriteFile(filepath.Join(dir, VolDataFile), append(b, '\n'), 0o640)
}

// readVolData reads dir/vol_data.json; a missing file is an error for
// which errors.Is(err, os.ErrNotExist).
func readVolData(dir string) (map[string]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, VolDataFile))
	if err != nil {
		return nil, err
	}
	d := map[string]string{}
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, VolDataFile), err)
	}
	return d, nil
}

// readPublished reads the vol_data.json of a pod's volume directory.
func readPublished(volDir string) (Published, error) {
	d, err := readVolData(volDir)
	if err != nil {
		return Published{}, err
	}
	p, err := publishedFrom(d)
	if err != nil {
		return p, fmt.Errorf("%s: %w", filepath.Join(volDir, VolDataFile), err)
	}
	return p, nil
}
