package dra

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"sort"

	"github.com/moby/sys/atomicwriter"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
)

// The pure part of the DRA manager: what the node knows of each claim it
// prepared, the checkpoint's format, and which CDI devices a container
// gets. Nothing here calls a driver or the API server.

// claimState is one prepared (or being prepared) ResourceClaim, in
// upstream's checkpoint shape (ClaimInfoState).
type claimState struct {
	ClaimUID    types.UID
	ClaimName   string
	Namespace   string
	PodUIDs     sets.Set[string]
	DriverState map[string]driverState
}

// driverState is what one driver prepared for a claim.
type driverState struct {
	Devices            []deviceState
	SkipNodeOperations []resourceapi.SkipNodeOperation `json:"skipNodeOperations,omitempty"`
}

// deviceState is one prepared device.
type deviceState struct {
	PoolName     string
	DeviceName   string
	ShareID      *types.UID
	RequestNames []string
	CDIDeviceIDs []string
}

// claim is a claimState with what is not checkpointed: whether the
// driver's NodePrepareResources has succeeded since this kubelet started
// (a restored claim is prepared again before a new sandbox uses it, as
// upstream does: the driver's CDI files may be gone after a reboot).
type claim struct {
	claimState
	prepared bool
}

// claimKey is namespace/name.
func claimKey(namespace, name string) string { return namespace + "/" + name }

// drivers of an allocation: the drivers of its results, sorted.
func driversOf(c *resourceapi.ResourceClaim) ([]string, error) {
	if c.Status.Allocation == nil {
		return nil, errors.New("not allocated")
	}
	set := sets.New[string]()
	for _, r := range c.Status.Allocation.Devices.Results {
		set.Insert(r.Driver)
	}
	return sets.List(set), nil
}

// cdiDevices are the CDI device IDs of a claim's devices for one request
// ("" for the whole claim); a device that names no request serves all.
func (c *claimState) cdiDevices(request string) []string {
	var out []string
	for _, d := range sortedKeys(c.DriverState) {
		for _, dev := range c.DriverState[d].Devices {
			if request == "" || len(dev.RequestNames) == 0 || slices.Contains(dev.RequestNames, request) || slices.Contains(dev.RequestNames, resourceclaim.BaseRequestRef(request)) {
				out = append(out, dev.CDIDeviceIDs...)
			}
		}
	}
	return out
}

// containerClaims are the claims a container uses, by claim name, with
// the requests it names ("" for the whole claim). Claims the pod does
// not need (a template that generated none) are left out.
func containerClaims(pod *v1.Pod, c *v1.Container) (map[string][]string, error) {
	byPodClaim := map[string][]string{}
	for _, rc := range c.Resources.Claims {
		byPodClaim[rc.Name] = append(byPodClaim[rc.Name], rc.Request)
	}
	out := map[string][]string{}
	for i := range pod.Spec.ResourceClaims {
		pc := &pod.Spec.ResourceClaims[i]
		reqs, ok := byPodClaim[pc.Name]
		if !ok {
			continue
		}
		name, _, err := resourceclaim.Name(pod, pc)
		if err != nil {
			return nil, err
		}
		if name == nil {
			continue
		}
		out[*name] = append(out[*name], reqs...)
	}
	return out, nil
}

// cdiDevicesFor are the CDI devices of a container: those of the requests
// it names in the claims it uses, without repeats, in claim order.
func cdiDevicesFor(claims map[string]*claim, namespace string, used map[string][]string) ([]string, error) {
	var out []string
	seen := sets.New[string]()
	for _, name := range sortedKeys(used) {
		c := claims[claimKey(namespace, name)]
		if c == nil {
			return nil, fmt.Errorf("ResourceClaim %s/%s has not been prepared on this node", namespace, name)
		}
		for _, req := range used[name] {
			for _, id := range c.cdiDevices(req) {
				if !seen.Has(id) {
					seen.Insert(id)
					out = append(out, id)
				}
			}
		}
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ---- the checkpoint: upstream's dra_manager_state -----------------------

// StateFile is the checkpoint's name under the root directory.
const StateFile = "dra_manager_state"

// Upstream's checkpoint kind and version.
const (
	checkpointKind       = "DRACheckpoint"
	checkpointAPIVersion = "checkpoint.dra.kubelet.k8s.io/v1"
)

// checkpointFile is the file: the data as a JSON string, and its CRC-32.
type checkpointFile struct {
	Data     string
	Checksum uint32
}

// checkpointData is the data.
type checkpointData struct {
	Kind               string `json:"kind,omitempty"`
	APIVersion         string `json:"apiVersion,omitempty"`
	ClaimInfoStateList []claimState
}

// encodeState builds the file's bytes from the claims, sorted by key.
func encodeState(claims map[string]*claim) ([]byte, error) {
	list := make([]claimState, 0, len(claims))
	for _, k := range sortedKeys(claims) {
		list = append(list, claims[k].claimState)
	}
	data, err := json.Marshal(checkpointData{Kind: checkpointKind, APIVersion: checkpointAPIVersion, ClaimInfoStateList: list})
	if err != nil {
		return nil, err
	}
	return json.Marshal(checkpointFile{Data: string(data), Checksum: crc32.ChecksumIEEE(data)})
}

// decodeState parses and verifies the file's bytes.
func decodeState(b []byte) ([]claimState, error) {
	var f checkpointFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("DRA checkpoint: %w", err)
	}
	if crc32.ChecksumIEEE([]byte(f.Data)) != f.Checksum {
		return nil, errors.New("DRA checkpoint is corrupt: checksum mismatch")
	}
	var d checkpointData
	if err := json.Unmarshal([]byte(f.Data), &d); err != nil {
		return nil, fmt.Errorf("DRA checkpoint data: %w", err)
	}
	if d.Kind != checkpointKind || d.APIVersion != checkpointAPIVersion {
		return nil, fmt.Errorf("DRA checkpoint is a %s %s, not a %s %s", d.APIVersion, d.Kind, checkpointAPIVersion, checkpointKind)
	}
	return d.ClaimInfoStateList, nil
}

// writeState replaces the checkpoint (a temporary file and a rename).
func writeState(path string, claims map[string]*claim) error {
	b, err := encodeState(claims)
	if err != nil {
		return err
	}
	return atomicwriter.WriteFile(path, b, 0o600)
}

// AnyDriver is the driver_name of dra_resource_claims_in_use that counts
// every claim in use, whatever its drivers (upstream's "<any>").
const AnyDriver = "<any>"

// claimsInUse counts the prepared claims by driver and, under AnyDriver,
// in all (a claim with devices of two drivers counts once there and once
// for each driver), as upstream's dra_resource_claims_in_use. AnyDriver
// is always present; a driver only while it has a claim in use.
func claimsInUse(claims map[string]*claim) map[string]int {
	counts := map[string]int{AnyDriver: 0}
	for _, c := range claims {
		if !c.prepared {
			continue
		}
		counts[AnyDriver]++
		for d := range c.DriverState {
			counts[d]++
		}
	}
	return counts
}
