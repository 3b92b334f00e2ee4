package dra

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	"k8s.io/klog/v2"
	drahealthv1 "k8s.io/kubelet/pkg/apis/dra-health/v1"
	drahealthv1alpha1 "k8s.io/kubelet/pkg/apis/dra-health/v1alpha1"

	"github.com/gokubelet/kubelet/pkg/pod/podstatus"
)

// Device health (ResourceHealthStatus): a driver that serves
// v1.DRAResourceHealth (or only v1alpha1.DRAResourceHealth, which
// upstream 1.37 to 1.39 still watch) streams its devices' health; the
// containers that use them show it in allocatedResourcesStatus.

// DefaultHealthTimeout is how long a reported health holds when the
// driver states no timeout (upstream's); after it the health is Unknown.
const DefaultHealthTimeout = 30 * time.Second

// healthRetry is how long a broken health stream waits before it is
// opened again, while its driver is registered.
const healthRetry = 5 * time.Second

// deviceHealth is the last health a driver reported for a device.
type deviceHealth struct {
	health  v1.ResourceHealthStatus
	updated time.Time
	timeout time.Duration
	message string
}

// healthAt is the health as of now: Unknown once it is older than its
// timeout.
func (h deviceHealth) healthAt(now time.Time) (v1.ResourceHealthStatus, string) {
	timeout := h.timeout
	if timeout <= 0 {
		timeout = DefaultHealthTimeout
	}
	if h.health == "" || now.Sub(h.updated) > timeout {
		return v1.ResourceHealthStatusUnknown, ""
	}
	return h.health, h.message
}

// healthOf converts a reported health.
func healthOf(d *drahealthv1.DeviceHealth) deviceHealth {
	h := deviceHealth{health: v1.ResourceHealthStatusUnknown, updated: time.Unix(d.GetLastUpdatedTime(), 0)}
	switch d.GetHealth() {
	case drahealthv1.HealthStatus_HEALTHY:
		h.health = v1.ResourceHealthStatusHealthy
	case drahealthv1.HealthStatus_UNHEALTHY:
		h.health = v1.ResourceHealthStatusUnhealthy
	}
	if s := d.GetHealthCheckTimeoutSeconds(); s > 0 {
		h.timeout = time.Duration(s) * time.Second
	}
	h.message = d.GetMessage()
	if len(h.message) > v1.ResourceHealthMessageMaxLength {
		h.message = h.message[:v1.ResourceHealthMessageMaxLength-3] + "..."
	}
	return h
}

// pickHealthService is the health API to watch among the services a
// driver lists at registration: the newest the kubelet knows, "" if none.
func pickHealthService(versions []string) string {
	for _, s := range []string{drahealthv1.DRAResourceHealthService, drahealthv1alpha1.DRAResourceHealthService} {
		if slices.Contains(versions, s) {
			return s
		}
	}
	return ""
}

// watchHealth keeps a driver's health stream open while ctx lasts.
func (m *Manager) watchHealth(ctx context.Context, d *driver) {
	log := klog.FromContext(ctx).WithValues("driver", d.name, "service", d.healthService)
	var client drahealthv1.DRAResourceHealthClient = drahealthv1.NewDRAResourceHealthClient(d.conn)
	if d.healthService == drahealthv1alpha1.DRAResourceHealthService {
		// k8s.io/kubelet's wrapper converts the v1alpha1 answers to v1.
		client = drahealthv1.V1Alpha1ClientWrapper{Client: drahealthv1alpha1.NewDRAResourceHealthClient(d.conn)}
	}
	for ctx.Err() == nil {
		stream, err := client.NodeWatchResources(ctx, &drahealthv1.NodeWatchResourcesRequest{})
		for err == nil {
			var resp *drahealthv1.NodeWatchResourcesResponse
			if resp, err = stream.Recv(); err == nil {
				m.updateHealth(d.name, resp.Devices)
			}
		}
		if ctx.Err() != nil {
			return
		}
		log.Error(err, "DRA driver's health stream ended; opening it again", "after", healthRetry)
		select {
		case <-ctx.Done():
		case <-time.After(healthRetry):
		}
	}
}

// updateHealth records reported healths and resyncs the pods whose
// devices' health changed.
func (m *Manager) updateHealth(driverName string, devs []*drahealthv1.DeviceHealth) {
	m.mu.Lock()
	if m.health[driverName] == nil {
		m.health[driverName] = map[string]deviceHealth{}
	}
	now := time.Now()
	changed := map[string]bool{}
	for _, d := range devs {
		if d.GetDevice() == nil {
			continue
		}
		key := d.GetDevice().GetPoolName() + "/" + d.GetDevice().GetDeviceName()
		h := healthOf(d)
		before, beforeMsg := m.health[driverName][key].healthAt(now)
		after, afterMsg := h.healthAt(now)
		m.health[driverName][key] = h
		if before != after || beforeMsg != afterMsg {
			changed[key] = true
		}
	}
	var pods []types.UID
	if len(changed) > 0 {
		seen := map[string]bool{}
		for _, c := range m.claims {
			for _, dev := range c.DriverState[driverName].Devices {
				if changed[dev.PoolName+"/"+dev.DeviceName] {
					for uid := range c.PodUIDs {
						if !seen[uid] {
							seen[uid] = true
							pods = append(pods, types.UID(uid))
						}
					}
				}
			}
		}
	}
	m.mu.Unlock()
	if len(pods) > 0 && m.opts.PodsChanged != nil {
		m.opts.PodsChanged(pods)
	}
}

// SetResourcesStatus sets, in a pod's computed status, each container's
// allocatedResourcesStatus for the claims it uses: one entry per claim
// reference ("claim:<name>" or "claim:<name>/<request>"), its devices by
// their first CDI device ID (else driver/pool/device), with the health
// the driver last reported (Unknown when none or too old) and, with
// messages, the driver's message.
func (m *Manager) SetResourcesStatus(pod *v1.Pod, st *v1.PodStatus) {
	if len(pod.Spec.ResourceClaims) == 0 {
		return
	}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range st.ContainerStatuses {
		cs := &st.ContainerStatuses[i]
		var spec *v1.Container
		for j := range pod.Spec.Containers {
			if pod.Spec.Containers[j].Name == cs.Name {
				spec = &pod.Spec.Containers[j]
			}
		}
		if spec == nil || len(spec.Resources.Claims) == 0 {
			continue
		}
		var set []v1.ResourceStatus
		for _, ref := range spec.Resources.Claims {
			claimName := ""
			for k := range pod.Spec.ResourceClaims {
				if pod.Spec.ResourceClaims[k].Name == ref.Name {
					if n, _, err := resourceclaim.Name(pod, &pod.Spec.ResourceClaims[k]); err == nil && n != nil {
						claimName = *n
					}
				}
			}
			c := m.claims[claimKey(pod.Namespace, claimName)]
			if c == nil {
				continue
			}
			name := "claim:" + ref.Name
			if ref.Request != "" {
				name += "/" + ref.Request
			}
			rs := v1.ResourceStatus{Name: v1.ResourceName(name)}
			seen := map[v1.ResourceID]bool{}
			for _, drv := range sortedKeys(c.DriverState) {
				for _, dev := range c.DriverState[drv].Devices {
					if ref.Request != "" && len(dev.RequestNames) > 0 && !slices.Contains(dev.RequestNames, resourceclaim.BaseRequestRef(ref.Request)) {
						continue
					}
					id := v1.ResourceID(fmt.Sprintf("%s/%s/%s", drv, dev.PoolName, dev.DeviceName))
					if len(dev.CDIDeviceIDs) > 0 {
						id = v1.ResourceID(dev.CDIDeviceIDs[0])
					}
					if seen[id] {
						continue
					}
					seen[id] = true
					health, msg := m.health[drv][dev.PoolName+"/"+dev.DeviceName].healthAt(now)
					rh := v1.ResourceHealth{ResourceID: id, Health: health}
					if msg != "" && m.opts.HealthMessages {
						rh.Message = &msg
					}
					rs.Resources = append(rs.Resources, rh)
				}
			}
			if len(rs.Resources) > 0 {
				sort.Slice(rs.Resources, func(a, b int) bool { return rs.Resources[a].ResourceID < rs.Resources[b].ResourceID })
				set = append(set, rs)
			}
		}
		cs.AllocatedResourcesStatus = podstatus.MergeResourceStatus(cs.AllocatedResourcesStatus, set)
	}
}
