package kuberuntime

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"
)

func TestDecideCgroupDriver(t *testing.T) {
	linux := func(d runtimeapi.CgroupDriver) *runtimeapi.RuntimeConfigResponse {
		return &runtimeapi.RuntimeConfigResponse{Linux: &runtimeapi.LinuxRuntimeConfiguration{CgroupDriver: d}}
	}
	for _, tc := range []struct {
		name       string
		resp       *runtimeapi.RuntimeConfigResponse
		err        error
		configured string
		want       CgroupDriverChoice
		retry      bool
		fail       bool
	}{
		{"containerd 2 with cgroupfs, config agrees", linux(runtimeapi.CgroupDriver_CGROUPFS), nil, "cgroupfs", CgroupDriverChoice{Driver: "cgroupfs", FromRuntime: true}, false, false},
		{"the runtime's systemd wins over the config's cgroupfs", linux(runtimeapi.CgroupDriver_SYSTEMD), nil, "cgroupfs", CgroupDriverChoice{Driver: "systemd", FromRuntime: true}, false, false},
		{"the runtime's cgroupfs wins over the config's systemd", linux(runtimeapi.CgroupDriver_CGROUPFS), nil, "systemd", CgroupDriverChoice{Driver: "cgroupfs", FromRuntime: true}, false, false},
		{"containerd 1.6: Unimplemented keeps the config's", nil, status.Error(codes.Unimplemented, "unknown method RuntimeConfig"), "systemd", CgroupDriverChoice{Driver: "systemd", Reason: "the container runtime does not implement the CRI RuntimeConfig call"}, false, false},
		{"no Linux section keeps the config's", &runtimeapi.RuntimeConfigResponse{}, nil, "cgroupfs", CgroupDriverChoice{Driver: "cgroupfs", Reason: "the container runtime's RuntimeConfig names no Linux cgroup driver"}, false, false},
		{"a runtime still starting is asked again", nil, status.Error(codes.Unavailable, "connection refused"), "cgroupfs", CgroupDriverChoice{}, true, true},
		{"an unknown driver is an error", linux(runtimeapi.CgroupDriver(7)), nil, "cgroupfs", CgroupDriverChoice{}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, retry, fail := decideCgroupDriver(tc.resp, tc.err, tc.configured)
			if got != tc.want || retry != tc.retry || (fail != nil) != tc.fail {
				t.Errorf("got %+v retry=%v fail=%v; want %+v retry=%v fail=%v", got, retry, fail, tc.want, tc.retry, tc.fail)
			}
		})
	}
}

// configRuntime answers RuntimeConfig with the queued answers in order.
type configRuntime struct {
	*critest.FakeRuntimeService
	answers []error
	resp    *runtimeapi.RuntimeConfigResponse
	calls   int
}

func (r *configRuntime) RuntimeConfig(context.Context) (*runtimeapi.RuntimeConfigResponse, error) {
	r.calls++
	if len(r.answers) > 0 {
		err := r.answers[0]
		r.answers = r.answers[1:]
		if err != nil {
			return nil, err
		}
	}
	return r.resp, nil
}

func noRetryWait(t *testing.T) {
	old := cgroupDriverRetryWait
	cgroupDriverRetryWait = 0
	t.Cleanup(func() { cgroupDriverRetryWait = old })
}

func TestCgroupDriverRetriesAStartingRuntimeThenUsesItsAnswer(t *testing.T) {
	noRetryWait(t)
	rs := &configRuntime{
		FakeRuntimeService: critest.NewFakeRuntimeService(),
		answers:            []error{status.Error(codes.Unavailable, "starting"), nil},
		resp:               &runtimeapi.RuntimeConfigResponse{Linux: &runtimeapi.LinuxRuntimeConfiguration{CgroupDriver: runtimeapi.CgroupDriver_SYSTEMD}},
	}
	got, err := CgroupDriver(context.Background(), rs, "cgroupfs")
	if err != nil || got.Driver != "systemd" || !got.FromRuntime || rs.calls != 2 {
		t.Errorf("got %+v, %v after %d calls; want systemd from the runtime after 2", got, err, rs.calls)
	}
}

func TestCgroupDriverGivesUpOnARuntimeThatKeepsFailing(t *testing.T) {
	noRetryWait(t)
	down := status.Error(codes.Unavailable, "connection refused")
	rs := &configRuntime{FakeRuntimeService: critest.NewFakeRuntimeService(), answers: []error{down, down, down, down}}
	_, err := CgroupDriver(context.Background(), rs, "cgroupfs")
	if err == nil || !errors.Is(err, down) || rs.calls != cgroupDriverAttempts {
		t.Errorf("err %v after %d calls; want the runtime's error after %d", err, rs.calls, cgroupDriverAttempts)
	}
}
