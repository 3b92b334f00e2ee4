package kuberuntime

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
)

// cgroupDriverAttempts and cgroupDriverRetryWait bound how long the kubelet
// waits for a runtime that is still starting before it gives up, as
// upstream: three tries, two seconds apart.
const cgroupDriverAttempts = 3

var cgroupDriverRetryWait = 2 * time.Second // a variable for the tests

// CgroupDriverChoice is what the kubelet decided about its cgroup driver.
type CgroupDriverChoice struct {
	// Driver is cgroupfs or systemd.
	Driver string
	// FromRuntime: the runtime named it (CRI RuntimeConfig); else it is the
	// configured one, and Reason says why.
	FromRuntime bool
	Reason      string
}

// decideCgroupDriver is the decision on one RuntimeConfig answer: the
// runtime's driver when it names one; the configured driver when the
// runtime does not implement the call (containerd 1.6) or answers without
// a Linux section; retry when the call failed otherwise (a runtime still
// starting); an error for a driver this kubelet does not know.
func decideCgroupDriver(resp *runtimeapi.RuntimeConfigResponse, err error, configured string) (choice CgroupDriverChoice, retry bool, fail error) {
	if err != nil {
		if status.Code(err) == codes.Unimplemented {
			return CgroupDriverChoice{Driver: configured, Reason: "the container runtime does not implement the CRI RuntimeConfig call"}, false, nil
		}
		return CgroupDriverChoice{}, true, err
	}
	linux := resp.GetLinux()
	if linux == nil {
		return CgroupDriverChoice{Driver: configured, Reason: "the container runtime's RuntimeConfig names no Linux cgroup driver"}, false, nil
	}
	switch linux.GetCgroupDriver() {
	case runtimeapi.CgroupDriver_SYSTEMD:
		return CgroupDriverChoice{Driver: CgroupDriverSystemd, FromRuntime: true}, false, nil
	case runtimeapi.CgroupDriver_CGROUPFS:
		return CgroupDriverChoice{Driver: CgroupDriverCgroupfs, FromRuntime: true}, false, nil
	default:
		return CgroupDriverChoice{}, false, fmt.Errorf("the container runtime returned an unknown cgroup driver %d", linux.GetCgroupDriver())
	}
}

// CgroupDriver asks the runtime which cgroup driver it uses (CRI
// RuntimeConfig) and returns the one the kubelet must use, as upstream
// kubelets do (KubeletCgroupDriverFromCRI, GA): the runtime's when it
// answers, the configured one when it cannot (logged with the reason). A
// runtime that keeps failing is an error: pods would land in cgroups the
// runtime does not manage.
func CgroupDriver(ctx context.Context, rs cri.RuntimeService, configured string) (CgroupDriverChoice, error) {
	log := klog.FromContext(ctx)
	var lastErr error
	for i := 0; i < cgroupDriverAttempts; i++ {
		if i > 0 {
			t := time.NewTimer(cgroupDriverRetryWait)
			select {
			case <-ctx.Done():
				t.Stop()
				return CgroupDriverChoice{}, ctx.Err()
			case <-t.C:
			}
		}
		resp, err := rs.RuntimeConfig(ctx)
		choice, retry, fail := decideCgroupDriver(resp, err, configured)
		if fail != nil && !retry {
			return CgroupDriverChoice{}, fail
		}
		if retry {
			lastErr = fail
			continue
		}
		switch {
		case !choice.FromRuntime:
			log.Info("Using the cgroup driver from the kubelet config", "cgroupDriver", choice.Driver, "reason", choice.Reason)
		case choice.Driver != configured:
			log.Info("The container runtime's cgroup driver differs from the kubelet config; using the runtime's", "cgroupDriver", choice.Driver, "configured", configured)
		default:
			log.Info("Using the cgroup driver the container runtime reports", "cgroupDriver", choice.Driver)
		}
		return choice, nil
	}
	return CgroupDriverChoice{}, fmt.Errorf("asking the container runtime for its cgroup driver (CRI RuntimeConfig): %w", lastErr)
}
