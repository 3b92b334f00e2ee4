package volume

import (
	"context"
	"errors"
	"fmt"
	"os"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	volcsi "github.com/gokubelet/kubelet/pkg/volume/csi"
	"github.com/gokubelet/kubelet/pkg/volume/hostfs"
)

// ClaimGetter reads PersistentVolumeClaims and PersistentVolumes (the
// Node authorizer lets a node get those its pods use).
type ClaimGetter interface {
	GetPersistentVolumeClaim(ctx context.Context, namespace, name string) (*v1.PersistentVolumeClaim, error)
	GetPersistentVolume(ctx context.Context, name string) (*v1.PersistentVolume, error)
}

// ClaimStatusWriter patches a claim's status (strategic merge), as the
// node: the Node authorizer lets a node write the status of the claims
// its pods use, and NodeRestriction only its capacity, conditions and
// allocated resources and their statuses.
type ClaimStatusWriter interface {
	PatchPersistentVolumeClaimStatus(ctx context.Context, namespace, name string, patch []byte) (*v1.PersistentVolumeClaim, error)
}

// ClientClaimStatus is a ClaimStatusWriter over an API client.
func ClientClaimStatus(c kubernetes.Interface) ClaimStatusWriter { return clientClaims{c} }

func (c clientClaims) PatchPersistentVolumeClaimStatus(ctx context.Context, ns, name string, patch []byte) (*v1.PersistentVolumeClaim, error) {
	return c.c.CoreV1().PersistentVolumeClaims(ns).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
}

// ClientClaims is a ClaimGetter over an API client (plain GETs: a claim
// is read until it is usable, then never again for that pod).
func ClientClaims(c kubernetes.Interface) ClaimGetter { return clientClaims{c} }

type clientClaims struct{ c kubernetes.Interface }

func (c clientClaims) GetPersistentVolumeClaim(ctx context.Context, ns, name string) (*v1.PersistentVolumeClaim, error) {
	return c.c.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
}

func (c clientClaims) GetPersistentVolume(ctx context.Context, name string) (*v1.PersistentVolume, error) {
	return c.c.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
}

// claim: a persistentVolumeClaim, or the claim of a generic ephemeral
// volume (named <pod>-<volume>, which must belong to the pod). The claim
// must be Bound to a PersistentVolume this node can mount: local or
// hostPath, used where it is (a local one, not read-only, gets the pod's
// fsGroup, by its fsGroupChangePolicy), or CSI, published to the pod by
// its driver (pkg/volume/csi).
type claim struct {
	name      string
	ro        bool
	ephemeral bool
	// local: set up on a local PersistentVolume (whose usage the node
	// reports; a hostPath one's it does not, as upstream).
	local bool
	// republish: a CSI PersistentVolume whose driver asks for
	// NodePublishVolume again periodically.
	republish bool
	// csi is the CSI PersistentVolume published to the pod (its usage
	// is its driver's, and it is grown on the node: expand.go).
	csi *csiClaim
}

// csiClaim is what a published CSI claim volume is.
type csiClaim struct {
	pv, driver, handle string
}

func (c *claim) kind() string {
	if c.ephemeral {
		return "ephemeral"
	}
	return "persistentVolumeClaim"
}

func (c *claim) describe() string {
	if c.ephemeral {
		return fmt.Sprintf("ephemeral, claim %q", c.name)
	}
	return fmt.Sprintf("persistentVolumeClaim %q", c.name)
}

func (c *claim) pluginDir() string { return "" }
func (c *claim) readOnly() bool    { return c.ro }
func (c *claim) refreshed() bool   { return c.republish }

func (c *claim) setUp(ctx context.Context, s *setup) (string, error) {
	claims := s.m.opts.Claims
	if claims == nil {
		return "", errors.New("this kubelet has no access to PersistentVolumeClaims")
	}
	pvc, err := claims.GetPersistentVolumeClaim(ctx, s.pod.Namespace, c.name)
	if apierrors.IsNotFound(err) {
		if c.ephemeral {
			return "", fmt.Errorf("waiting for the PersistentVolumeClaim %q of the ephemeral volume to be created", c.name)
		}
		return "", fmt.Errorf("PersistentVolumeClaim %q not found", c.name)
	}
	if err != nil {
		return "", err
	}
	if c.ephemeral && !metav1.IsControlledBy(pvc, s.pod) {
		return "", fmt.Errorf("PersistentVolumeClaim %q was not created for this pod", c.name)
	}
	if pvc.DeletionTimestamp != nil {
		return "", fmt.Errorf("PersistentVolumeClaim %q is being deleted", c.name)
	}
	if pvc.Status.Phase != v1.ClaimBound || pvc.Spec.VolumeName == "" {
		phase := pvc.Status.Phase
		if phase == "" {
			phase = v1.ClaimPending
		}
		return "", fmt.Errorf("PersistentVolumeClaim %q is not bound (phase %s)", c.name, phase)
	}
	pv, err := claims.GetPersistentVolume(ctx, pvc.Spec.VolumeName)
	if err != nil {
		return "", fmt.Errorf("PersistentVolume %q of claim %q: %w", pvc.Spec.VolumeName, c.name, err)
	}
	if ref := pv.Spec.ClaimRef; ref == nil || ref.UID != pvc.UID {
		return "", fmt.Errorf("PersistentVolume %q is not bound to claim %q", pv.Name, c.name)
	}
	if pv.Spec.VolumeMode != nil && *pv.Spec.VolumeMode == v1.PersistentVolumeBlock {
		return "", fmt.Errorf("PersistentVolume %q is a raw block volume, which this node does not support", pv.Name)
	}
	ro := c.ro
	var path string
	switch {
	case pv.Spec.Local != nil:
		path = pv.Spec.Local.Path
		c.local = true
		st, err := os.Stat(path)
		if err != nil {
			return "", fmt.Errorf("local PersistentVolume %q: %w", pv.Name, err)
		}
		if !st.IsDir() {
			return "", fmt.Errorf("local PersistentVolume %q: %s is not a directory", pv.Name, path)
		}
		if s.fsGroup != nil && !ro && s.first {
			always := s.fsGroupPolicy == nil || *s.fsGroupPolicy != v1.FSGroupChangeOnRootMismatch
			if always || hostfs.NeedsOwnershipChange(path, *s.fsGroup, false) {
				if err := hostfs.ChangeOwnership(path, *s.fsGroup, false); err != nil {
					klog.FromContext(ctx).Error(err, "Setting fsGroup ownership of a local volume", "pod", klog.KObj(s.pod), "volume", s.name)
				}
			}
		}
	case pv.Spec.HostPath != nil:
		path = pv.Spec.HostPath.Path
		if err := checkHostPath(path, pv.Spec.HostPath.Type); err != nil {
			return "", fmt.Errorf("PersistentVolume %q: %w", pv.Name, err)
		}
	case pv.Spec.CSI != nil:
		if !csiRegistered(s.m.opts.CSIDrivers, pv.Spec.CSI.Driver) {
			return "", fmt.Errorf("PersistentVolume %q has type csi, which this node cannot mount (%s)", pv.Name, csiNotRegistered(pv.Spec.CSI.Driver))
		}
		res, err := s.m.csi.SetUp(ctx, volcsi.Persistent(s.pod, s.name, pv, ro), s.csiOptions())
		c.republish = res.Republish
		if err != nil {
			return "", err
		}
		path = res.Path
		c.csi = &csiClaim{pv: pv.Name, driver: pv.Spec.CSI.Driver, handle: pv.Spec.CSI.VolumeHandle}
	default:
		return "", fmt.Errorf("PersistentVolume %q has type %s, which this node cannot mount", pv.Name, setField(pv.Spec.PersistentVolumeSource))
	}
	return path, nil
}
