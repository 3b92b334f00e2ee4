package csi

import (
	"fmt"
	"slices"
	"sort"
	"strconv"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	plugincsi "github.com/gokubelet/kubelet/pkg/plugins/csi"
)

// Volume is one CSI volume of a pod, inline or persistent.
type Volume struct {
	Pod *v1.Pod
	// Name is the pod's volume name.
	Name string
	// PV is the PersistentVolume's name ("" for an inline volume).
	PV     string
	Driver string
	// Handle is the volume ID the driver knows (an inline volume's is
	// derived from the pod and the volume name).
	Handle   string
	ReadOnly bool
	FSType   string
	// Attributes are the volume's (volumeAttributes).
	Attributes map[string]string
	// PublishSecret and StageSecret name the secrets passed to the
	// driver's calls (namespace resolved; nil for none).
	PublishSecret, StageSecret *v1.SecretReference
	// ExpandSecret names the secret passed to NodeExpandVolume.
	ExpandSecret *v1.SecretReference
	MountOptions []string
	AccessModes  []v1.PersistentVolumeAccessMode
}

// Inline describes a pod's inline CSI volume.
func Inline(pod *v1.Pod, v *v1.Volume) *Volume {
	src := v.CSI
	out := &Volume{Pod: pod, Name: v.Name, Driver: src.Driver, Handle: EphemeralHandle(string(pod.UID), v.Name),
		ReadOnly: src.ReadOnly != nil && *src.ReadOnly, Attributes: src.VolumeAttributes}
	if src.FSType != nil {
		out.FSType = *src.FSType
	}
	if src.NodePublishSecretRef != nil && src.NodePublishSecretRef.Name != "" {
		out.PublishSecret = &v1.SecretReference{Namespace: pod.Namespace, Name: src.NodePublishSecretRef.Name}
	}
	return out
}

// Persistent describes a pod's volume backed by a CSI PersistentVolume;
// readOnly is the pod's claim's.
func Persistent(pod *v1.Pod, name string, pv *v1.PersistentVolume, readOnly bool) *Volume {
	src := pv.Spec.CSI
	return &Volume{Pod: pod, Name: name, PV: pv.Name, Driver: src.Driver, Handle: src.VolumeHandle, ReadOnly: readOnly,
		FSType: src.FSType, Attributes: src.VolumeAttributes, PublishSecret: src.NodePublishSecretRef, StageSecret: src.NodeStageSecretRef,
		ExpandSecret: src.NodeExpandSecretRef, MountOptions: pv.Spec.MountOptions, AccessModes: pv.Spec.AccessModes}
}

// Mode is the volume's lifecycle mode.
func (v *Volume) Mode() storagev1.VolumeLifecycleMode {
	if v.PV == "" {
		return storagev1.VolumeLifecycleEphemeral
	}
	return storagev1.VolumeLifecyclePersistent
}

// SpecName names the volume's directory under the pod.
func (v *Volume) SpecName() string {
	if v.PV != "" {
		return v.PV
	}
	return v.Name
}

// describe names the volume for messages.
func (v *Volume) describe() string {
	if v.PV != "" {
		return fmt.Sprintf("volume %q (PersistentVolume %q, handle %q) of CSI driver %q", v.Name, v.PV, v.Handle, v.Driver)
	}
	return fmt.Sprintf("inline volume %q of CSI driver %q", v.Name, v.Driver)
}

// checkLifecycleMode refuses a volume its driver does not serve in its
// mode: an inline volume needs a CSIDriver object that lists Ephemeral;
// a persistent one is refused only by a CSIDriver that does not list
// Persistent. An empty list is the API's default, Persistent.
func checkLifecycleMode(drv *storagev1.CSIDriver, v *Volume) error {
	mode := v.Mode()
	if drv == nil {
		if mode == storagev1.VolumeLifecyclePersistent {
			return nil
		}
		return fmt.Errorf("volume mode %q not supported by driver %s (no CSIDriver object)", mode, v.Driver)
	}
	modes := drv.Spec.VolumeLifecycleModes
	if len(modes) == 0 {
		modes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}
	}
	if slices.Contains(modes, mode) {
		return nil
	}
	return fmt.Errorf("volume mode %q not supported by driver %s (only supports %q)", mode, v.Driver, modes)
}

// attachRequired: a persistent volume waits for its VolumeAttachment
// unless the driver's CSIDriver says attachRequired: false (no CSIDriver
// object: attach, as upstream).
func attachRequired(drv *storagev1.CSIDriver) bool {
	return drv == nil || drv.Spec.AttachRequired == nil || *drv.Spec.AttachRequired
}

// podInfoOnMount: the driver wants the pod's identity in the volume
// context.
func podInfoOnMount(drv *storagev1.CSIDriver) bool {
	return drv != nil && drv.Spec.PodInfoOnMount != nil && *drv.Spec.PodInfoOnMount
}

// Volume context keys the kubelet adds, upstream's.
const (
	ctxPodName        = "csi.storage.k8s.io/pod.name"
	ctxPodNamespace   = "csi.storage.k8s.io/pod.namespace"
	ctxPodUID         = "csi.storage.k8s.io/pod.uid"
	ctxServiceAccount = "csi.storage.k8s.io/serviceAccount.name"
	ctxEphemeral      = "csi.storage.k8s.io/ephemeral"
	ctxTokens         = "csi.storage.k8s.io/serviceAccount.tokens"
)

// publishContext is NodePublishVolume's volume context: the volume's
// attributes, the pod's identity when the driver asks for it
// (podInfoOnMount), and the service account tokens (tokens, "" for none)
// unless the driver takes them with the secrets.
func publishVolumeContext(v *Volume, drv *storagev1.CSIDriver, tokens string) map[string]string {
	out := make(map[string]string, len(v.Attributes)+6)
	for k, val := range v.Attributes {
		out[k] = val
	}
	if podInfoOnMount(drv) {
		out[ctxPodName] = v.Pod.Name
		out[ctxPodNamespace] = v.Pod.Namespace
		out[ctxPodUID] = string(v.Pod.UID)
		out[ctxServiceAccount] = v.Pod.Spec.ServiceAccountName
		out[ctxEphemeral] = strconv.FormatBool(v.Mode() == storagev1.VolumeLifecycleEphemeral)
	}
	if tokens != "" && !tokensInSecrets(drv) {
		out[ctxTokens] = tokens
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// publishSecrets are NodePublishVolume's secrets: the secret's data, and
// the tokens when the driver takes them there.
func publishSecrets(data map[string][]byte, drv *storagev1.CSIDriver, tokens string) map[string]string {
	out := secretStrings(data)
	if tokens != "" && tokensInSecrets(drv) {
		if out == nil {
			out = map[string]string{}
		}
		out[ctxTokens] = tokens
	}
	return out
}

func tokensInSecrets(drv *storagev1.CSIDriver) bool {
	return drv != nil && drv.Spec.ServiceAccountTokenInSecrets != nil && *drv.Spec.ServiceAccountTokenInSecrets
}

func secretStrings(data map[string][]byte) map[string]string {
	if len(data) == 0 {
		return nil
	}
	out := make(map[string]string, len(data))
	for k, val := range data {
		out[k] = string(val)
	}
	return out
}

// accessMode maps the PersistentVolume's first access mode (ReadWriteOnce
// when it has none, and for inline volumes) to CSI's, as upstream: drivers
// without SINGLE_NODE_MULTI_WRITER get SINGLE_NODE_WRITER for both
// ReadWriteOnce and ReadWriteOncePod.
func accessMode(modes []v1.PersistentVolumeAccessMode, caps plugincsi.NodeCaps) csipb.VolumeCapability_AccessMode_Mode {
	m := v1.ReadWriteOnce
	if len(modes) > 0 {
		m = modes[0]
	}
	switch m {
	case v1.ReadWriteOnce:
		if caps.SingleNodeMultiWriter {
			return csipb.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER
		}
		return csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
	case v1.ReadWriteOncePod:
		if caps.SingleNodeMultiWriter {
			return csipb.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER
		}
		return csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
	case v1.ReadOnlyMany:
		return csipb.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY
	case v1.ReadWriteMany:
		return csipb.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
	}
	return csipb.VolumeCapability_AccessMode_UNKNOWN
}

// capability is the volume capability of stage and publish: a mounted
// filesystem of the volume's type and mount options; the pod's fsGroup is
// the mount group when the driver applies it itself.
func capability(v *Volume, caps plugincsi.NodeCaps, fsGroup *int64) *csipb.VolumeCapability {
	mount := &csipb.VolumeCapability_MountVolume{FsType: v.FSType, MountFlags: v.MountOptions}
	if caps.VolumeMountGroup && fsGroup != nil {
		mount.VolumeMountGroup = strconv.FormatInt(*fsGroup, 10)
	}
	return &csipb.VolumeCapability{
		AccessMode: &csipb.VolumeCapability_AccessMode{Mode: accessMode(v.AccessModes, caps)},
		AccessType: &csipb.VolumeCapability_Mount{Mount: mount},
	}
}

// fsGroupPolicy is the driver's fsGroupPolicy (no CSIDriver object:
// ReadWriteOnceWithFSType, as upstream).
func fsGroupPolicy(drv *storagev1.CSIDriver) storagev1.FSGroupPolicy {
	if drv == nil || drv.Spec.FSGroupPolicy == nil || *drv.Spec.FSGroupPolicy == "" {
		return storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy
	}
	return *drv.Spec.FSGroupPolicy
}

// kubeletAppliesFSGroup: after publishing, the kubelet gives the volume
// the pod's fsGroup (the driver does not, through VOLUME_MOUNT_GROUP):
// never for read-only volumes or policy None; always for policy File;
// for ReadWriteOnceWithFSType only when the volume states an fsType and is
// inline or ReadWriteOnce(Pod).
func kubeletAppliesFSGroup(v *Volume, policy storagev1.FSGroupPolicy, caps plugincsi.NodeCaps, fsGroup *int64) bool {
	if fsGroup == nil || caps.VolumeMountGroup || v.ReadOnly || policy == storagev1.NoneFSGroupPolicy {
		return false
	}
	if policy == storagev1.FileFSGroupPolicy {
		return true
	}
	if v.FSType == "" {
		return false
	}
	if v.PV == "" {
		return true
	}
	return slices.Contains(v.AccessModes, v1.ReadWriteOnce) || slices.Contains(v.AccessModes, v1.ReadWriteOncePod)
}

// AttachState is what a VolumeAttachment says of a volume.
type AttachState struct {
	Attached bool
	// PublishContext is the attacher's metadata for stage and publish.
	PublishContext map[string]string
	// Err is a failure the attacher reported, or the attachment going.
	Err error
}

// attachState reads a VolumeAttachment (nil: it does not exist yet).
func attachState(va *storagev1.VolumeAttachment) AttachState {
	switch {
	case va == nil:
		return AttachState{}
	case va.DeletionTimestamp != nil:
		return AttachState{Err: fmt.Errorf("VolumeAttachment %s is being deleted", va.Name)}
	case va.Status.Attached:
		return AttachState{Attached: true, PublishContext: va.Status.AttachmentMetadata}
	case va.Status.AttachError != nil:
		return AttachState{Err: fmt.Errorf("attaching failed (VolumeAttachment %s): %s", va.Name, va.Status.AttachError.Message)}
	}
	return AttachState{}
}

// stillPublished reports whether any of the node's published volumes is
// the persistent volume (driver, handle): then its staging stays.
func stillPublished(published []Published, driver, handle string) bool {
	for _, p := range published {
		if p.Driver == driver && p.VolumeHandle == handle && p.Mode == storagev1.VolumeLifecyclePersistent {
			return true
		}
	}
	return false
}

// volumesInUse names, sorted and once each, the persistent volumes among
// used (of pods being set up or set up, and published on disk) that the
// Node's status.volumesInUse lists. As upstream 1.37, whose volume manager
// reports only attachable volumes there, those are the volumes whose
// driver needs attaching. attach holds, by driver, what its CSIDriver
// object said (attachRequired) when a volume of it was last set up; a
// driver not in it (not read since this kubelet started: a volume
// published before a restart or a takeover) counts as attaching, so a
// volume under a running pod is never reported unused before it is known
// to need no attachment.
func volumesInUse(used []wantedVolume, attach map[string]bool) []v1.UniqueVolumeName {
	set := map[v1.UniqueVolumeName]bool{}
	for _, u := range used {
		if needs, known := attach[u.driver]; needs || !known {
			set[v1.UniqueVolumeName(UniqueVolumeName(u.driver, u.handle))] = true
		}
	}
	out := make([]v1.UniqueVolumeName, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
