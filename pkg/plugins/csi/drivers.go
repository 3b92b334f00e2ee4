// Package csi is the node's side of CSI: the drivers registered through the
// plugin manager (pkg/plugins/registration, type CSIPlugin), and what the
// node tells the cluster about them: the CSINode object (driver name, node
// ID, topology keys, allocatable volume count), the Node annotation
// csi.volume.kubernetes.io/nodeid and the topology labels. All of it is
// removed again when a driver deregisters.
//
// The rules are pure functions (nodeinfo.go); this file holds the registry
// and the I/O: the driver's NodeGetInfo and the API updates. node.go is a
// registered driver's volume client (capabilities, stage, publish and
// their reverses), which pkg/volume/csi sets volumes up with.
package csi

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/gokubelet/kubelet/pkg/errdefs"
)

// PluginType is the registration type of CSI drivers.
const PluginType = registerapi.CSIPlugin

// DefaultCallTimeout bounds a call to a driver (NodeGetInfo here).
const DefaultCallTimeout = 30 * time.Second

// Options configure Drivers.
type Options struct {
	NodeName string
	// Client acts as the node (its Node, its CSINode). Nil: no API server;
	// drivers register on the node only.
	Client kubernetes.Interface
	// CallTimeout bounds each driver call (default DefaultCallTimeout).
	CallTimeout time.Duration
}

// Driver is a registered CSI driver.
type Driver struct {
	Name     string
	Endpoint string
	// Version is the highest CSI version both sides speak.
	Version string
	Info    NodeInfo
	conn    *grpc.ClientConn
	// Node is the driver's CSI Node service.
	Node csipb.NodeClient
	// caps caches the Node service's capabilities (node.go).
	capsOnce sync.Once
	caps     *capsCache
}

// Drivers is the registry of the node's CSI drivers and the plugin
// manager's handler of type CSIPlugin.
type Drivers struct {
	opts Options

	mu      sync.Mutex
	drivers map[string]*Driver
	// api serializes the Node and CSINode updates of concurrent
	// registrations.
	api sync.Mutex
}

// New returns an empty registry.
func New(o Options) *Drivers {
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	return &Drivers{opts: o, drivers: map[string]*Driver{}}
}

// Get returns the registered driver of that name.
func (d *Drivers) Get(name string) (*Driver, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	drv, ok := d.drivers[name]
	return drv, ok
}

// Names lists the registered drivers.
func (d *Drivers) Names() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]string, 0, len(d.drivers))
	for n := range d.drivers {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// highestVersion is the highest of versions with major version 1 (the CSI
// versions this node speaks), or an error naming what was offered.
func highestVersion(versions []string) (string, error) {
	best, bestMinor, bestPatch := "", -1, -1
	for _, v := range versions {
		major, minor, patch, ok := parseVersion(v)
		if !ok || major != 1 {
			continue
		}
		if minor > bestMinor || (minor == bestMinor && patch > bestPatch) {
			best, bestMinor, bestPatch = v, minor, patch
		}
	}
	if best == "" {
		return "", fmt.Errorf("none of the CSI versions %v is 1.x, the versions this node speaks", versions)
	}
	return best, nil
}

// parseVersion reads "1", "1.2", "1.2.3", with or without a leading "v".
func parseVersion(v string) (major, minor, patch int, ok bool) {
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	nums := []int{0, 0, 0}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return 0, 0, 0, false
		}
		nums[i] = n
	}
	return nums[0], nums[1], nums[2], true
}

// ValidatePlugin accepts a driver with a name and a 1.x CSI version.
func (d *Drivers) ValidatePlugin(name, endpoint string, versions []string) error {
	if name == "" {
		return errors.New("a CSI driver needs a name")
	}
	if endpoint == "" {
		return fmt.Errorf("CSI driver %s has no endpoint", name)
	}
	_, err := highestVersion(versions)
	return err
}

// RegisterPlugin connects to the driver, asks it NodeGetInfo, and writes
// the node's facts about it (CSINode, the node ID annotation, topology
// labels). A driver registered again under the same name replaces the
// earlier registration.
func (d *Drivers) RegisterPlugin(ctx context.Context, name, endpoint string, versions []string) error {
	version, err := highestVersion(versions)
	if err != nil {
		return err
	}
	target := endpoint
	if !strings.Contains(target, "://") {
		target = "unix://" + target
	}
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("CSI driver %s at %s: %w", name, endpoint, err)
	}
	node := csipb.NewNodeClient(conn)
	cctx, cancel := context.WithTimeout(ctx, d.opts.CallTimeout)
	resp, err := node.NodeGetInfo(cctx, &csipb.NodeGetInfoRequest{}, grpc.WaitForReady(true))
	cancel()
	if err != nil {
		_ = conn.Close()
		return fmt.Errorf("CSI driver %s: NodeGetInfo: %w", name, err)
	}
	if resp.GetNodeId() == "" {
		_ = conn.Close()
		return fmt.Errorf("CSI driver %s: NodeGetInfo returned no node ID", name)
	}
	info := NodeInfo{NodeID: resp.GetNodeId(), MaxVolumes: resp.GetMaxVolumesPerNode()}
	if t := resp.GetAccessibleTopology(); t != nil && len(t.GetSegments()) > 0 {
		info.Topology = t.GetSegments()
	}
	drv := &Driver{Name: name, Endpoint: endpoint, Version: version, Info: info, conn: conn, Node: node}

	d.mu.Lock()
	old := d.drivers[name]
	d.mu.Unlock()
	var previous map[string]string
	if old != nil {
		previous = old.Info.Topology
	}
	if err := d.publish(ctx, name, &info, previous); err != nil {
		_ = conn.Close()
		return err
	}
	d.mu.Lock()
	d.drivers[name] = drv
	d.mu.Unlock()
	if old != nil {
		_ = old.conn.Close()
	}
	klog.FromContext(ctx).Info("CSI driver registered", "driver", name, "endpoint", endpoint, "version", version,
		"nodeID", info.NodeID, "maxVolumes", info.MaxVolumes, "topology", info.Topology)
	return nil
}

// DeRegisterPlugin forgets the driver registered at endpoint and removes
// the node's facts about it. A driver since registered again at another
// endpoint stays.
func (d *Drivers) DeRegisterPlugin(ctx context.Context, name, endpoint string) {
	d.mu.Lock()
	drv, ok := d.drivers[name]
	if !ok || drv.Endpoint != endpoint {
		d.mu.Unlock()
		return
	}
	delete(d.drivers, name)
	d.mu.Unlock()
	_ = drv.conn.Close()
	if err := d.publish(ctx, name, nil, drv.Info.Topology); err != nil {
		klog.FromContext(ctx).Error(err, "Could not remove a deregistered CSI driver from the node's objects", "driver", name)
		return
	}
	klog.FromContext(ctx).Info("CSI driver deregistered", "driver", name)
}

// ownedTopology are the topology keys the registered drivers but name use.
func (d *Drivers) ownedTopology(name string) map[string]bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string]bool{}
	for n, drv := range d.drivers {
		if n == name {
			continue
		}
		for k := range drv.Info.Topology {
			out[k] = true
		}
	}
	return out
}

// publish writes (info non-nil) or removes a driver's facts: the Node's
// annotation and labels, then the CSINode's entry.
func (d *Drivers) publish(ctx context.Context, name string, info *NodeInfo, previous map[string]string) error {
	c := d.opts.Client
	if c == nil {
		return nil
	}
	d.api.Lock()
	defer d.api.Unlock()
	owned := d.ownedTopology(name)
	// A conflict is asked again after a fresh read; so is a write cut by
	// the kubelet's own client certificate rotation (both updates carry
	// their object's resourceVersion). Any other failure refuses the
	// registration, which the registration manager retries.
	again := func(err error) bool { return apierrors.IsConflict(err) || errdefs.IsConnectionClosed(ctx, err) }
	var node *v1.Node
	err := retry.OnError(retry.DefaultBackoff, again, func() error {
		n, err := c.CoreV1().Nodes().Get(ctx, d.opts.NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		changed, err := applyDriverToNode(n, name, info, previous, owned)
		if err != nil || !changed {
			node = n
			return err
		}
		node, err = c.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("node %s, CSI driver %s: %w", d.opts.NodeName, name, err)
	}
	return retry.OnError(retry.DefaultBackoff, again, func() error {
		cn, owner, err := d.csiNode(ctx, node)
		if err != nil {
			return err
		}
		if !applyDriverToCSINode(cn, name, info) && !owner {
			return nil
		}
		_, err = c.StorageV1().CSINodes().Update(ctx, cn, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("CSINode %s, driver %s: %w", d.opts.NodeName, name, err)
		}
		return nil
	})
}

// csiNode returns the node's CSINode, created (owned by the Node) when
// there is none. One owned by an older Node of the same name is taken
// over: its owner becomes this Node, and changed says it needs writing.
func (d *Drivers) csiNode(ctx context.Context, node *v1.Node) (cn *storagev1.CSINode, changed bool, err error) {
	c := d.opts.Client
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}
	cn, err = c.StorageV1().CSINodes().Get(ctx, node.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		cn = &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: node.Name, OwnerReferences: []metav1.OwnerReference{owner}}}
		cn, err = c.StorageV1().CSINodes().Create(ctx, cn, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return d.csiNode(ctx, node)
		}
		return cn, false, err
	}
	if err != nil {
		return nil, false, err
	}
	owned := false
	for i, o := range cn.OwnerReferences {
		if o.Kind == "Node" && o.Name == node.Name {
			owned = true
			if o.UID != node.UID {
				cn.OwnerReferences[i].UID = node.UID
				changed = true
			}
		}
	}
	if !owned {
		cn.OwnerReferences = append(cn.OwnerReferences, owner)
		changed = true
	}
	return cn, changed, nil
}

// Start makes sure the node's CSINode exists once its Node does (as
// upstream, also without drivers: the scheduler and the attach-detach
// controller read it), then returns nil.
func (d *Drivers) Start(ctx context.Context) error {
	if d.opts.Client == nil {
		return nil
	}
	log := klog.FromContext(ctx)
	backoff := wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Cap: 30 * time.Second, Steps: 1 << 30}
	for {
		err := func() error {
			d.api.Lock()
			defer d.api.Unlock()
			node, err := d.opts.Client.CoreV1().Nodes().Get(ctx, d.opts.NodeName, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cn, changed, err := d.csiNode(ctx, node)
			if err != nil || !changed {
				return err
			}
			_, err = d.opts.Client.StorageV1().CSINodes().Update(ctx, cn, metav1.UpdateOptions{})
			return err
		}()
		if err == nil {
			return nil
		}
		log.V(2).Info("CSINode not written yet", "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff.Step()):
		}
	}
}

// Registered reports whether a driver of that name is registered.
func (d *Drivers) Registered(name string) bool {
	_, ok := d.Get(name)
	return ok
}
