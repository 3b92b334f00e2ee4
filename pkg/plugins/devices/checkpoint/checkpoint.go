// Package checkpoint reads and writes the device manager's checkpoint in
// upstream's on-disk format: the file kubelet_internal_checkpoint in the
// device-plugin directory, JSON of
//
//	{"Data":{"PodDeviceEntries":[{"PodUID":..,"ContainerName":..,
//	  "ResourceName":..,"DeviceIDs":{"<numa node or -1>":[ids]},
//	  "AllocResp":<protobuf ContainerAllocateResponse, base64>}],
//	  "RegisteredDevices":{"<resource>":[ids]}},
//	 "Checksum":<n>}
//
// The checksum is FNV-32a over k8s.io/utils/dump.ForHash of the Data
// value, whose printed form carries the Go type names of the data
// ("checkpoint.checkpointData", "checkpoint.PodDevicesEntry",
// "checkpoint.DevicesPerNUMA"). That is why this package is named
// checkpoint and its types carry those names: an upstream kubelet that
// takes the node back verifies this file's checksum, and this kubelet
// verifies upstream's (testdata holds files written by upstream 1.37.2).
package checkpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"

	"github.com/moby/sys/atomicwriter"
	"k8s.io/utils/dump"
)

// FileName is the checkpoint's name in the device-plugin directory.
const FileName = "kubelet_internal_checkpoint"

// NoTopology is the NUMA key of devices without topology.
const NoTopology int64 = -1

// DevicesPerNUMA are device IDs by NUMA node (NoTopology for none).
type DevicesPerNUMA map[int64][]string

// IDs are all the device IDs, in the order they appear by NUMA node.
func (d DevicesPerNUMA) IDs() []string {
	var out []string
	for _, ids := range d {
		out = append(out, ids...)
	}
	return out
}

// PodDevicesEntry is one container's devices of one resource, and what the
// plugin's Allocate answered for them.
type PodDevicesEntry struct {
	PodUID        string
	ContainerName string
	ResourceName  string
	DeviceIDs     DevicesPerNUMA
	AllocResp     []byte
}

// checkpointData is the checksummed part. Its name is part of the
// checksum (see the package comment).
type checkpointData struct {
	PodDeviceEntries  []PodDevicesEntry
	RegisteredDevices map[string][]string
}

// Data is the file.
type Data struct {
	Data     checkpointData
	Checksum uint64
}

// checksum is upstream's: FNV-32a of the dump of the data.
func checksum(d checkpointData) uint64 {
	h := fnv.New32a()
	fmt.Fprintf(h, "%v", dump.ForHash(d))
	return uint64(h.Sum32())
}

// Encode builds the file's bytes.
func Encode(entries []PodDevicesEntry, registered map[string][]string) ([]byte, error) {
	d := checkpointData{PodDeviceEntries: entries, RegisteredDevices: registered}
	return json.Marshal(Data{Data: d, Checksum: checksum(d)})
}

// ErrCorrupt is a checkpoint whose checksum does not match its data.
var ErrCorrupt = errors.New("device manager checkpoint is corrupt: checksum mismatch")

// Decode parses and verifies the file's bytes.
func Decode(b []byte) ([]PodDevicesEntry, map[string][]string, error) {
	var d Data
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, nil, fmt.Errorf("device manager checkpoint: %w", err)
	}
	if d.Checksum != checksum(d.Data) {
		return nil, nil, ErrCorrupt
	}
	return d.Data.PodDeviceEntries, d.Data.RegisteredDevices, nil
}

// Read reads and verifies the checkpoint in dir; a missing file is
// os.ErrNotExist.
func Read(dir string) ([]PodDevicesEntry, map[string][]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		return nil, nil, err
	}
	return Decode(b)
}

// Write replaces the checkpoint in dir (through a temporary file and a
// rename, so a crash leaves the old or the new file, never half of one).
func Write(dir string, entries []PodDevicesEntry, registered map[string][]string) error {
	b, err := Encode(entries, registered)
	if err != nil {
		return err
	}
	return atomicwriter.WriteFile(filepath.Join(dir, FileName), b, 0o644)
}
