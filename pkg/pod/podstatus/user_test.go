package podstatus

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/gokubelet/kubelet/pkg/runtime/container"
)

// The identity the runtime reports (containerd 2 does) reaches
// status.containerStatuses[].user, as upstream; without one, none.
func TestContainerStatusUser(t *testing.T) {
	pod := podOf(v1.RestartPolicyAlways, nil, nil, "a")
	withUser := inst("a", "c1", container.StateRunning, 0, 0, t0)
	withUser.User = &container.LinuxUser{UID: 1000, GID: 3000, SupplementalGroups: []int64{3000, 4000}}
	got := ContainerStatuses(pod, false, observedOf(withUser), nil, nil, "containerd")
	want := &v1.ContainerUser{Linux: &v1.LinuxContainerUser{UID: 1000, GID: 3000, SupplementalGroups: []int64{3000, 4000}}}
	if len(got) != 1 || !reflect.DeepEqual(got[0].User, want) {
		t.Fatalf("statuses %+v: want user %+v", got, want)
	}

	got = ContainerStatuses(pod, false, observedOf(inst("a", "c1", container.StateRunning, 0, 0, t0)), nil, nil, "containerd")
	if len(got) != 1 || got[0].User != nil {
		t.Errorf("no user reported (containerd 1.6), yet status user %+v", got[0].User)
	}
}
