package csi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	plugincsi "github.com/gokubelet/kubelet/pkg/plugins/csi"
	"github.com/gokubelet/kubelet/pkg/volume/hostfs"
)

// Drivers are the node's registered CSI drivers (pkg/plugins/csi).
type Drivers interface {
	Registered(name string) bool
	// NodeClient returns a registered driver's volume client, or a
	// *plugincsi.NotRegisteredError.
	NodeClient(name string) (*plugincsi.NodeClient, error)
}

// API reads what CSI volumes need from the API server, as the node: the
// drivers' CSIDriver objects, the VolumeAttachments of this node and the
// secrets the volumes name (the Node authorizer allows each of these for
// a node running a pod that uses them). A missing object is an error for
// which apierrors.IsNotFound is true.
type API interface {
	GetCSIDriver(ctx context.Context, name string) (*storagev1.CSIDriver, error)
	GetVolumeAttachment(ctx context.Context, name string) (*storagev1.VolumeAttachment, error)
	GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error)
}

// ClientAPI is an API over a client acting as the node (plain GETs, as
// upstream reads a volume's secrets; a volume is set up once per pod).
func ClientAPI(c kubernetes.Interface) API { return clientAPI{c} }

type clientAPI struct{ c kubernetes.Interface }

func (a clientAPI) GetCSIDriver(ctx context.Context, name string) (*storagev1.CSIDriver, error) {
	return a.c.StorageV1().CSIDrivers().Get(ctx, name, metav1.GetOptions{})
}

func (a clientAPI) GetVolumeAttachment(ctx context.Context, name string) (*storagev1.VolumeAttachment, error) {
	return a.c.StorageV1().VolumeAttachments().Get(ctx, name, metav1.GetOptions{})
}

func (a clientAPI) GetSecret(ctx context.Context, ns, name string) (*v1.Secret, error) {
	return a.c.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
}

// TokenGetter issues service account tokens (pkg/node/objects).
type TokenGetter interface {
	GetServiceAccountToken(ctx context.Context, namespace, name string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error)
}

// Options configure a Mounter.
type Options struct {
	RootDir  string
	NodeName string
	Drivers  Drivers
	// API is nil in standalone mode: no CSIDriver objects (inline
	// volumes are refused, persistent ones do not exist), no secrets.
	API API
	// Tokens issues the tokens a CSIDriver's tokenRequests ask for.
	Tokens TokenGetter
}

// Mounter sets CSI volumes up and tears them down. It is safe for
// concurrent use: the stage, publish and unstage of one persistent volume
// are serialised, so a pod's tear-down never unstages a volume another
// pod is being given.
type Mounter struct {
	opts Options

	mu sync.Mutex
	// locks serialise the work on one persistent volume (driver^handle).
	locks map[string]*volumeLock
	// staged are the persistent volumes this kubelet staged (a volume
	// found staged after a restart is staged again: NodeStageVolume is
	// idempotent).
	staged map[string]bool
	// wanted are the persistent volumes of pods being set up or set up,
	// by pod and driver^handle: the node reports them in use before they
	// are published, and a pod's tear-down unstages them even when its
	// publish never started (a stage that timed out may have staged).
	wanted map[types.UID]map[string]wantedVolume
	// attach: by driver, whether its volumes need attaching, as its
	// CSIDriver object said at the last set-up of one of them.
	attach map[string]bool
}

type wantedVolume struct{ driver, handle string }

type volumeLock struct {
	sync.Mutex
	users int
}

// New returns a Mounter.
func New(o Options) *Mounter {
	return &Mounter{opts: o, locks: map[string]*volumeLock{}, staged: map[string]bool{}, wanted: map[types.UID]map[string]wantedVolume{}, attach: map[string]bool{}}
}

func (m *Mounter) lock(key string) func() {
	m.mu.Lock()
	l := m.locks[key]
	if l == nil {
		l = &volumeLock{}
		m.locks[key] = l
	}
	l.users++
	m.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		m.mu.Lock()
		if l.users--; l.users == 0 {
			delete(m.locks, key)
		}
		m.mu.Unlock()
	}
}

func (m *Mounter) podDir(uid types.UID) string {
	return filepath.Join(m.opts.RootDir, "pods", string(uid))
}

// SetUpOptions are the pod's settings for one set-up.
type SetUpOptions struct {
	// First: the volume is not set up yet in this kubelet's life (a
	// later call republishes, for drivers that ask for it).
	First         bool
	FSGroup       *int64
	FSGroupPolicy *v1.PodFSGroupChangePolicy
}

// SetUpResult is a set-up volume.
type SetUpResult struct {
	// Path is the publish target, the host path containers mount.
	Path string
	// Republish: the driver wants NodePublishVolume called again
	// periodically (requiresRepublish).
	Republish bool
}

// SetUp makes the volume ready for the pod: it waits for the volume's
// attachment where the driver needs one, stages it (once per node) where
// the driver stages, and publishes it to the pod. Errors say what is
// missing or what failed, naming the driver and the volume.
func (m *Mounter) SetUp(ctx context.Context, v *Volume, o SetUpOptions) (SetUpResult, error) {
	if err := checkDriverName(v.Driver); err != nil {
		return SetUpResult{}, err
	}
	if v.Handle == "" {
		return SetUpResult{}, fmt.Errorf("%s has no volume handle", v.describe())
	}
	key := UniqueVolumeName(v.Driver, v.Handle)
	if v.Mode() == storagev1.VolumeLifecyclePersistent {
		m.want(v.Pod.UID, key, wantedVolume{v.Driver, v.Handle})
	}
	client, err := m.opts.Drivers.NodeClient(v.Driver)
	if err != nil {
		return SetUpResult{}, err
	}
	drv, err := m.csiDriver(ctx, v.Driver)
	if err != nil {
		return SetUpResult{}, err
	}
	if err := checkLifecycleMode(drv, v); err != nil {
		return SetUpResult{}, err
	}
	if v.Mode() == storagev1.VolumeLifecyclePersistent {
		m.mu.Lock()
		m.attach[v.Driver] = attachRequired(drv)
		m.mu.Unlock()
	}
	res := SetUpResult{Republish: drv != nil && drv.Spec.RequiresRepublish != nil && *drv.Spec.RequiresRepublish}
	caps, err := client.Capabilities(ctx)
	if err != nil {
		return res, err
	}

	var publishCtx map[string]string
	staging := ""
	if v.Mode() == storagev1.VolumeLifecyclePersistent {
		if attachRequired(drv) {
			name := AttachmentName(v.Handle, v.Driver, m.opts.NodeName)
			st, err := m.attachment(ctx, name)
			if err != nil {
				return res, err
			}
			if st.Err != nil {
				return res, fmt.Errorf("%s: %w", v.describe(), st.Err)
			}
			if !st.Attached {
				return res, fmt.Errorf("waiting for %s to be attached to this node (VolumeAttachment %s)", v.describe(), name)
			}
			publishCtx = st.PublishContext
		}
		unlock := m.lock(key)
		defer unlock()
		if caps.StageUnstage {
			staging = StagingPath(m.opts.RootDir, v.Driver, v.Handle)
			if err := m.stage(ctx, client, v, caps, staging, publishCtx, o.FSGroup); err != nil {
				return res, err
			}
		}
	}

	target := PublishPath(m.podDir(v.Pod.UID), v.SpecName())
	if err := m.publish(ctx, client, v, drv, caps, staging, target, publishCtx, o); err != nil {
		return res, err
	}
	res.Path = target
	return res, nil
}

// csiDriver reads the driver's CSIDriver object (nil when there is none).
func (m *Mounter) csiDriver(ctx context.Context, name string) (*storagev1.CSIDriver, error) {
	if m.opts.API == nil {
		return nil, nil
	}
	drv, err := m.opts.API.GetCSIDriver(ctx, name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the CSIDriver %q: %w", name, err)
	}
	return drv, nil
}

func (m *Mounter) attachment(ctx context.Context, name string) (AttachState, error) {
	if m.opts.API == nil {
		return AttachState{}, errors.New("this kubelet has no API server to read VolumeAttachments from")
	}
	va, err := m.opts.API.GetVolumeAttachment(ctx, name)
	if apierrors.IsNotFound(err) {
		return AttachState{}, nil
	}
	if err != nil {
		return AttachState{}, fmt.Errorf("reading the VolumeAttachment %s: %w", name, err)
	}
	return attachState(va), nil
}

func (m *Mounter) secret(ctx context.Context, ref *v1.SecretReference, what string) (map[string][]byte, error) {
	if ref == nil {
		return nil, nil
	}
	if m.opts.API == nil {
		return nil, fmt.Errorf("fetching %s %s/%s: this kubelet has no API server", what, ref.Namespace, ref.Name)
	}
	s, err := m.opts.API.GetSecret(ctx, ref.Namespace, ref.Name)
	if err != nil {
		return nil, fmt.Errorf("fetching %s %s/%s failed: %w", what, ref.Namespace, ref.Name, err)
	}
	return s.Data, nil
}

// stage stages the volume unless this kubelet did already. The caller
// holds the volume's lock.
func (m *Mounter) stage(ctx context.Context, client *plugincsi.NodeClient, v *Volume, caps plugincsi.NodeCaps, staging string, publishCtx map[string]string, fsGroup *int64) error {
	key := UniqueVolumeName(v.Driver, v.Handle)
	m.mu.Lock()
	done := m.staged[key]
	m.mu.Unlock()
	if done {
		return nil
	}
	secrets, err := m.secret(ctx, v.StageSecret, "NodeStageSecretRef")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(staging, 0o750); err != nil {
		return fmt.Errorf("staging %s: %w", v.describe(), err)
	}
	if replaced, err := rewriteVolData(filepath.Dir(staging), Staged{VolumeHandle: v.Handle, Driver: v.Driver}.data()); err != nil {
		return fmt.Errorf("staging %s: %w", v.describe(), err)
	} else if replaced != nil {
		klog.FromContext(ctx).Error(replaced, "Replaced an unreadable staging vol_data.json", "driver", v.Driver, "volumeHandle", v.Handle)
	}
	req := &csipb.NodeStageVolumeRequest{
		VolumeId: v.Handle, PublishContext: publishCtx, StagingTargetPath: staging,
		VolumeCapability: capability(v, caps, fsGroup), Secrets: secretStrings(secrets), VolumeContext: v.Attributes,
	}
	if err := client.StageVolume(ctx, req); err != nil {
		if plugincsi.Final(err) {
			// The driver refused: nothing is staged.
			if rerr := removeVolumeDir(staging); rerr != nil {
				klog.FromContext(ctx).Error(rerr, "Cleaning up after a refused NodeStageVolume", "driver", v.Driver, "volume", v.Handle)
			}
		}
		return err
	}
	m.mu.Lock()
	m.staged[key] = true
	m.mu.Unlock()
	klog.FromContext(ctx).V(2).Info("CSI volume staged", "driver", v.Driver, "volumeHandle", v.Handle, "stagingPath", staging)
	return nil
}

func (m *Mounter) publish(ctx context.Context, client *plugincsi.NodeClient, v *Volume, drv *storagev1.CSIDriver, caps plugincsi.NodeCaps,
	staging, target string, publishCtx map[string]string, o SetUpOptions) error {
	secrets, err := m.secret(ctx, v.PublishSecret, "NodePublishSecretRef")
	if err != nil {
		return err
	}
	tokens, err := m.tokens(ctx, v, drv)
	if err != nil {
		return err
	}
	dir := filepath.Dir(target)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("publishing %s: %w", v.describe(), err)
	}
	data := Published{SpecName: v.SpecName(), VolumeHandle: v.Handle, Driver: v.Driver, NodeName: m.opts.NodeName,
		AttachmentID: AttachmentName(v.Handle, v.Driver, m.opts.NodeName), Mode: v.Mode()}
	if replaced, err := rewriteVolData(dir, data.data()); err != nil {
		return fmt.Errorf("publishing %s: %w", v.describe(), err)
	} else if replaced != nil {
		klog.FromContext(ctx).Error(replaced, "Replaced an unreadable vol_data.json", "pod", klog.KObj(v.Pod), "driver", v.Driver, "volume", v.Name)
	}
	req := &csipb.NodePublishVolumeRequest{
		VolumeId: v.Handle, PublishContext: publishCtx, StagingTargetPath: staging, TargetPath: target,
		VolumeCapability: capability(v, caps, o.FSGroup), Readonly: v.ReadOnly,
		Secrets: publishSecrets(secrets, drv, tokens), VolumeContext: publishVolumeContext(v, drv, tokens),
	}
	if err := client.PublishVolume(ctx, req); err != nil {
		if o.First && plugincsi.Final(err) {
			// The driver refused: nothing is published (a refused
			// republish leaves the volume as it was).
			if rerr := removeVolumeDir(target); rerr != nil {
				klog.FromContext(ctx).Error(rerr, "Cleaning up after a refused NodePublishVolume", "driver", v.Driver, "volume", v.Handle)
			}
		}
		return err
	}
	if o.First && kubeletAppliesFSGroup(v, fsGroupPolicy(drv), caps, o.FSGroup) {
		gid := *o.FSGroup
		onMismatch := o.FSGroupPolicy != nil && *o.FSGroupPolicy == v1.FSGroupChangeOnRootMismatch
		if !onMismatch || hostfs.NeedsOwnershipChange(target, gid, false) {
			if err := hostfs.ChangeOwnership(target, gid, false); err != nil {
				return fmt.Errorf("applying fsGroup %d to %s: %w", gid, v.describe(), err)
			}
		}
	}
	if o.First {
		klog.FromContext(ctx).V(2).Info("CSI volume published", "pod", klog.KObj(v.Pod), "driver", v.Driver, "volume", v.Name, "volumeHandle", v.Handle, "target", target)
	}
	return nil
}

// tokens are the service account tokens the driver's tokenRequests ask
// for, as upstream passes them: a JSON object of TokenRequestStatus by
// audience ("" when the driver asks for none).
func (m *Mounter) tokens(ctx context.Context, v *Volume, drv *storagev1.CSIDriver) (string, error) {
	if drv == nil || len(drv.Spec.TokenRequests) == 0 {
		return "", nil
	}
	if m.opts.Tokens == nil {
		return "", fmt.Errorf("CSI driver %q asks for service account tokens, which this kubelet cannot issue", v.Driver)
	}
	out := map[string]authenticationv1.TokenRequestStatus{}
	for _, r := range drv.Spec.TokenRequests {
		audiences := []string{}
		if r.Audience != "" {
			audiences = []string{r.Audience}
		}
		tr, err := m.opts.Tokens.GetServiceAccountToken(ctx, v.Pod.Namespace, v.Pod.Spec.ServiceAccountName, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{
				Audiences: audiences, ExpirationSeconds: r.ExpirationSeconds,
				BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: v.Pod.Name, UID: v.Pod.UID},
			},
		})
		if err != nil {
			return "", fmt.Errorf("service account token for CSI driver %q (audience %q): %w", v.Driver, r.Audience, err)
		}
		out[r.Audience] = tr.Status
	}
	b, err := json.Marshal(out)
	return string(b), err
}

// removeVolumeDir removes a publish target or staging path that nothing
// is mounted on, the vol_data.json beside it and their directory, as
// upstream. A path still mounted is an error: its data is never removed.
func removeVolumeDir(p string) error {
	if mounted, err := hostfs.IsMountPoint(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	} else if mounted {
		return fmt.Errorf("%s is still mounted", p)
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	dir := filepath.Dir(p)
	if err := os.Remove(filepath.Join(dir, VolDataFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// removeEmptyStagingDir removes a staging path that is an empty directory
// nothing is mounted on, and then its parent if that is empty too (the
// layout upstream leaves for a driver that does not stage). A missing
// path is fine; a mounted or non-empty one is an error and stays.
func removeEmptyStagingDir(staging string) error {
	if _, err := os.Lstat(staging); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if mounted, err := hostfs.IsMountPoint(staging); err != nil {
		return err
	} else if mounted {
		return fmt.Errorf("%s is mounted, but no NodeStageVolume is recorded for it", staging)
	}
	if err := os.Remove(staging); err != nil {
		return err
	}
	return os.Remove(filepath.Dir(staging))
}

// TearDownPod unpublishes every CSI volume of the pod (found from its
// directory, so this works after a restart too), then unstages each
// persistent one no other pod on the node still has published. A volume
// whose driver is not registered or fails stays as it is, and the error
// says so: tear-down is retried.
func (m *Mounter) TearDownPod(ctx context.Context, uid types.UID) error {
	dir := PodVolumesDir(m.podDir(uid))
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	var errs []error
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if err := m.tearDown(ctx, filepath.Join(dir, e.Name())); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	// Volumes the pod was being given but never published to it: a
	// stage that failed uncertainly may have staged them.
	for _, w := range m.wantedBy(uid) {
		client, err := m.opts.Drivers.NodeClient(w.driver)
		if err != nil {
			if m.isStaged(w.driver, w.handle) {
				errs = append(errs, fmt.Errorf("unstaging volume %q: %w", w.handle, err))
			}
			continue
		}
		if err := m.unstageIfUnused(ctx, client, w.driver, w.handle); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	m.unwant(uid)
	if entries != nil {
		_ = os.Remove(dir)
	}
	return nil
}

// isStaged reports whether the volume's staging record is on disk.
func (m *Mounter) isStaged(driver, handle string) bool {
	_, err := os.Stat(filepath.Join(filepath.Dir(StagingPath(m.opts.RootDir, driver, handle)), VolDataFile))
	return err == nil
}

func (m *Mounter) tearDown(ctx context.Context, volDir string) error {
	log := klog.FromContext(ctx)
	target := filepath.Join(volDir, publishLeaf)
	p, err := readPublished(volDir)
	if errors.Is(err, os.ErrNotExist) {
		// Never published (a refused publish cleans up after itself).
		return removeVolumeDir(target)
	}
	if err != nil {
		return err
	}
	client, err := m.opts.Drivers.NodeClient(p.Driver)
	if err != nil {
		return fmt.Errorf("unpublishing volume %q (handle %q): %w", p.SpecName, p.VolumeHandle, err)
	}
	if err := client.UnpublishVolume(ctx, p.VolumeHandle, target); err != nil {
		return fmt.Errorf("unpublishing volume %q: %w", p.SpecName, err)
	}
	if err := removeVolumeDir(target); err != nil {
		return fmt.Errorf("after NodeUnpublishVolume of volume %q (CSI driver %q): %w", p.SpecName, p.Driver, err)
	}
	log.V(2).Info("CSI volume unpublished", "driver", p.Driver, "volume", p.SpecName, "volumeHandle", p.VolumeHandle, "target", target)
	if p.Mode != storagev1.VolumeLifecyclePersistent {
		return nil
	}
	return m.unstageIfUnused(ctx, client, p.Driver, p.VolumeHandle)
}

// unstageIfUnused unstages a persistent volume no pod on the node has
// published any more.
func (m *Mounter) unstageIfUnused(ctx context.Context, client *plugincsi.NodeClient, driver, handle string) error {
	key := UniqueVolumeName(driver, handle)
	unlock := m.lock(key)
	defer unlock()
	published, err := m.published()
	if err != nil {
		return err
	}
	if stillPublished(published, driver, handle) {
		return nil
	}
	staging := StagingPath(m.opts.RootDir, driver, handle)
	if !m.isStaged(driver, handle) {
		// Not staged (the driver does not stage, or already unstaged).
		m.forgetStaged(key)
		// The upstream kubelet makes the staging directory even for a
		// driver that does not stage, records nothing beside it and
		// never removes it: after a takeover the empty directory is
		// ours to remove. Anything else there is left, and said.
		if err := removeEmptyStagingDir(staging); err != nil {
			klog.FromContext(ctx).Error(err, "Leaving the staging directory of a volume that is not staged", "driver", driver, "volumeHandle", handle, "stagingPath", staging)
		}
		return nil
	}
	caps, err := client.Capabilities(ctx)
	if err != nil {
		return err
	}
	if caps.StageUnstage {
		if err := client.UnstageVolume(ctx, handle, staging); err != nil {
			return fmt.Errorf("unstaging volume %q: %w", handle, err)
		}
	}
	if err := removeVolumeDir(staging); err != nil {
		return fmt.Errorf("after NodeUnstageVolume of volume %q (CSI driver %q): %w", handle, driver, err)
	}
	m.forgetStaged(key)
	klog.FromContext(ctx).V(2).Info("CSI volume unstaged", "driver", driver, "volumeHandle", handle, "stagingPath", staging)
	return nil
}

func (m *Mounter) forgetStaged(key string) {
	m.mu.Lock()
	delete(m.staged, key)
	m.mu.Unlock()
}

// published lists every volume published to a pod on this node, from the
// pods' directories. A vol_data.json that cannot be read is an error:
// unstaging must not guess.
func (m *Mounter) published() ([]Published, error) {
	files, err := filepath.Glob(filepath.Join(m.opts.RootDir, "pods", "*", "volumes", PodPluginDir, "*", VolDataFile))
	if err != nil {
		return nil, err
	}
	var out []Published
	for _, f := range files {
		p, err := readPublished(filepath.Dir(f))
		if errors.Is(err, os.ErrNotExist) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func (m *Mounter) want(uid types.UID, key string, w wantedVolume) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.wanted[uid] == nil {
		m.wanted[uid] = map[string]wantedVolume{}
	}
	m.wanted[uid][key] = w
}

// wantedBy lists the persistent volumes the pod was given or is being
// given.
func (m *Mounter) wantedBy(uid types.UID) []wantedVolume {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]wantedVolume, 0, len(m.wanted[uid]))
	for _, w := range m.wanted[uid] {
		out = append(out, w)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].driver+"^"+out[i].handle < out[j].driver+"^"+out[j].handle
	})
	return out
}

func (m *Mounter) unwant(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.wanted, uid)
}

// InUse names the persistent CSI volumes the node reports in use (the
// Node's volumesInUse): those of pods being set up or set up, and those
// published on disk (pods set up before a restart or a takeover), whose
// driver needs attaching or is not known yet not to (volumesInUse).
func (m *Mounter) InUse() []v1.UniqueVolumeName {
	var used []wantedVolume
	m.mu.Lock()
	for _, vols := range m.wanted {
		for _, w := range vols {
			used = append(used, w)
		}
	}
	attach := make(map[string]bool, len(m.attach))
	for d, a := range m.attach {
		attach[d] = a
	}
	m.mu.Unlock()
	published, err := m.published()
	if err != nil {
		klog.Background().Error(err, "Listing the published CSI volumes for the node's volumesInUse")
	}
	for _, p := range published {
		if p.Mode == storagev1.VolumeLifecyclePersistent {
			used = append(used, wantedVolume{p.Driver, p.VolumeHandle})
		}
	}
	return volumesInUse(used, attach)
}
