package nodestatus

import (
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/gokubelet/kubelet/pkg/node/machineinfo"
)

func TestValidateNodeLabels(t *testing.T) {
	tests := []struct {
		name    string
		labels  map[string]string
		wantErr string
	}{
		{"none", nil, ""},
		{"custom namespace", map[string]string{"example.com/role": "db", "plain": "x"}, ""},
		{"node.kubernetes.io prefix", map[string]string{"node.kubernetes.io/pool": "a"}, ""},
		{"kubelet.kubernetes.io prefix", map[string]string{"kubelet.kubernetes.io/x": "a"}, ""},
		{"subdomain of allowed prefix", map[string]string{"foo.node.kubernetes.io/x": "a"}, ""},
		{"well-known zone label", map[string]string{"topology.kubernetes.io/zone": "z1"}, ""},
		{"well-known instance type", map[string]string{"node.kubernetes.io/instance-type": "big"}, ""},
		{"role label refused", map[string]string{"node-role.kubernetes.io/master": ""}, "node-role.kubernetes.io/master"},
		{"k8s.io refused", map[string]string{"k8s.io/anything": "x"}, "k8s.io/anything"},
		{"subdomain of k8s.io refused", map[string]string{"foo.k8s.io/x": "x"}, "foo.k8s.io/x"},
		{"invalid value", map[string]string{"example.com/a": "not valid!"}, "invalid"},
		{"invalid key", map[string]string{"-bad": "x"}, "invalid"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateNodeLabels(tc.labels)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestRefusedLabelErrorNamesAllowedPrefixes(t *testing.T) {
	err := ValidateNodeLabels(map[string]string{"node-role.kubernetes.io/worker": ""})
	if err == nil {
		t.Fatal("want error")
	}
	for _, want := range []string{"kubelet.kubernetes.io", "node.kubernetes.io", "kubernetes.io/hostname"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func mustThresholds(t *testing.T, m map[string]string) []Threshold {
	t.Helper()
	th, err := ParseHardEviction(m)
	if err != nil {
		t.Fatal(err)
	}
	return th
}

func TestAllocatable(t *testing.T) {
	gi := int64(1 << 30)
	capacity := v1.ResourceList{
		v1.ResourceCPU:              resource.MustParse("4"),
		v1.ResourceMemory:           *resource.NewQuantity(8*gi, resource.BinarySI),
		v1.ResourceEphemeralStorage: *resource.NewQuantity(100*gi, resource.BinarySI),
		v1.ResourcePods:             resource.MustParse("110"),
	}
	tests := []struct {
		name         string
		kube, system v1.ResourceList
		hard         map[string]string
		want         map[v1.ResourceName]string
	}{
		{
			name: "nothing reserved",
			want: map[v1.ResourceName]string{"cpu": "4", "memory": "8Gi", "ephemeral-storage": "100Gi", "pods": "110"},
		},
		{
			name:   "reservations and absolute thresholds",
			kube:   v1.ResourceList{"cpu": resource.MustParse("500m"), "memory": resource.MustParse("1Gi")},
			system: v1.ResourceList{"cpu": resource.MustParse("250m"), "ephemeral-storage": resource.MustParse("10Gi")},
			hard:   map[string]string{"memory.available": "100Mi", "nodefs.available": "1Gi"},
			want:   map[v1.ResourceName]string{"cpu": "3250m", "memory": "7068Mi", "ephemeral-storage": "89Gi", "pods": "110"},
		},
		{
			name: "percentage thresholds relative to capacity",
			hard: map[string]string{"memory.available": "25%", "nodefs.available": "10%", "imagefs.available": "15%", "nodefs.inodesFree": "5%"},
			want: map[v1.ResourceName]string{"memory": "6Gi", "ephemeral-storage": "92160Mi", "cpu": "4"},
		},
		{
			name: "never below zero",
			kube: v1.ResourceList{"memory": resource.MustParse("16Gi")},
			want: map[v1.ResourceName]string{"memory": "0"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Allocatable(capacity, tc.kube, tc.system, mustThresholds(t, tc.hard))
			for name, want := range tc.want {
				q := got[name]
				if q.Cmp(resource.MustParse(want)) != 0 {
					t.Errorf("%s = %s, want %s", name, q.String(), want)
				}
			}
		})
	}
}

func TestParseHardEvictionRejectsBadValues(t *testing.T) {
	for _, v := range []string{"abc", "120%", "-1Mi", "x%"} {
		if _, err := ParseHardEviction(map[string]string{"memory.available": v}); err == nil ||
			!strings.Contains(err.Error(), "memory.available") {
			t.Errorf("%q: error = %v, want one naming the signal", v, err)
		}
	}
}

func TestParseReservation(t *testing.T) {
	rl, err := ParseReservation("kubeReserved", map[string]string{"cpu": "100m", "memory": "1Gi"})
	if err != nil || rl.Cpu().MilliValue() != 100 || rl.Memory().Value() != 1<<30 {
		t.Fatalf("got %v, %v", rl, err)
	}
	if _, err := ParseReservation("kubeReserved", map[string]string{"cpu": "lots"}); err == nil || !strings.Contains(err.Error(), "kubeReserved[cpu]") {
		t.Fatalf("error = %v", err)
	}
}

func TestConditionsTransitionTimes(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(10 * time.Second))
	ready := func(s v1.ConditionStatus) v1.NodeCondition {
		return v1.NodeCondition{Type: v1.NodeReady, Status: s}
	}
	first := Conditions(nil, []v1.NodeCondition{ready(v1.ConditionFalse)}, t0)
	if !first[0].LastTransitionTime.Equal(&t0) || !first[0].LastHeartbeatTime.Equal(&t0) {
		t.Fatalf("new condition times = %+v", first[0])
	}
	same := Conditions(first, []v1.NodeCondition{ready(v1.ConditionFalse)}, t1)
	if !same[0].LastTransitionTime.Equal(&t0) || !same[0].LastHeartbeatTime.Equal(&t1) {
		t.Fatalf("unchanged condition: transition must stay, heartbeat move: %+v", same[0])
	}
	flipped := Conditions(first, []v1.NodeCondition{ready(v1.ConditionTrue)}, t1)
	if !flipped[0].LastTransitionTime.Equal(&t1) {
		t.Fatalf("flipped condition must transition: %+v", flipped[0])
	}
	foreign := v1.NodeCondition{Type: "KernelDeadlock", Status: v1.ConditionFalse}
	kept := Conditions([]v1.NodeCondition{foreign, first[0]}, []v1.NodeCondition{ready(v1.ConditionFalse)}, t1)
	if len(kept) != 2 || kept[0].Type != "KernelDeadlock" {
		t.Fatalf("conditions of other agents must be kept: %+v", kept)
	}
}

func TestReadyCondition(t *testing.T) {
	full := v1.ResourceList{"cpu": resource.MustParse("1"), "memory": resource.MustParse("1Gi"), "pods": resource.MustParse("10")}
	tests := []struct {
		name     string
		capacity v1.ResourceList
		r        Readiness
		status   v1.ConditionStatus
		reason   string
		message  string
	}{
		{"ready", full, Readiness{RuntimeReady: true, NetworkReady: true}, v1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"},
		{"network error", full, Readiness{RuntimeReady: true, Errors: []string{"container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:cni plugin not initialized"}},
			v1.ConditionFalse, "KubeletNotReady", "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:cni plugin not initialized"},
		{"runtime down no message", full, Readiness{NetworkReady: true}, v1.ConditionFalse, "KubeletNotReady", "container runtime not ready"},
		{"two errors aggregated", full, Readiness{Errors: []string{"a", "b"}}, v1.ConditionFalse, "KubeletNotReady", "[a, b]"},
		{"missing capacity", v1.ResourceList{"cpu": resource.MustParse("1")}, Readiness{RuntimeReady: true, NetworkReady: true},
			v1.ConditionFalse, "KubeletNotReady", "missing node capacity for resources: memory, pods"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := readyCondition(tc.capacity, tc.r)
			if c.Status != tc.status || c.Reason != tc.reason || c.Message != tc.message {
				t.Fatalf("got %s/%s/%q, want %s/%s/%q", c.Status, c.Reason, c.Message, tc.status, tc.reason, tc.message)
			}
		})
	}
}

func TestStatusChangedIgnoresHeartbeat(t *testing.T) {
	t0 := metav1.NewTime(time.Unix(100, 0))
	t1 := metav1.NewTime(time.Unix(200, 0))
	a := &v1.NodeStatus{Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, LastHeartbeatTime: t0}}}
	b := a.DeepCopy()
	b.Conditions[0].LastHeartbeatTime = t1
	if StatusChanged(a, b) {
		t.Fatal("heartbeat alone must not count as a change")
	}
	b.Conditions[0].Status = v1.ConditionFalse
	if !StatusChanged(a, b) {
		t.Fatal("status flip must count")
	}
	c := a.DeepCopy()
	c.Addresses = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.1"}}
	if !StatusChanged(a, c) {
		t.Fatal("address change must count")
	}
}

func TestAddresses(t *testing.T) {
	m := machineinfo.Info{DefaultRouteIPv4: net.ParseIP("192.0.2.7")}
	got := Addresses(&Config{Hostname: "h1"}, m)
	if len(got) != 2 || got[0] != (v1.NodeAddress{Type: v1.NodeInternalIP, Address: "192.0.2.7"}) || got[1].Type != v1.NodeHostName {
		t.Fatalf("default-route address: %+v", got)
	}
	got = Addresses(&Config{Hostname: "h1", NodeIPs: []net.IP{net.ParseIP("10.1.2.3"), net.ParseIP("fd00::1")}}, m)
	if len(got) != 3 || got[0].Address != "10.1.2.3" || got[1].Address != "fd00::1" {
		t.Fatalf("--node-ip addresses: %+v", got)
	}
}

func TestNewNodeUnschedulableAddsTaint(t *testing.T) {
	n := NewNode(&Config{NodeName: "n", Unschedulable: true, Taints: []v1.Taint{{Key: "a", Value: "b", Effect: v1.TaintEffectNoExecute}}}, Facts{})
	if !n.Spec.Unschedulable || len(n.Spec.Taints) != 2 || n.Spec.Taints[1].Key != v1.TaintNodeUnschedulable {
		t.Fatalf("spec = %+v", n.Spec)
	}
}

func TestReconcileExisting(t *testing.T) {
	cfg := &Config{NodeName: "n", Hostname: "new-host", ControllerAttachDetach: true,
		NodeLabels: map[string]string{"example.com/x": "y"}}
	desired := NewNode(cfg, HostFacts(cfg, machineinfo.Info{OperatingSystem: "linux", Architecture: "amd64"}))
	existing := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{
		v1.LabelHostname: "old-host", v1.LabelOSStable: "linux", "team": "blue"}},
		Spec: v1.NodeSpec{Taints: []v1.Taint{{Key: "admin", Effect: v1.TaintEffectNoSchedule}}}}
	if !ReconcileExisting(desired, existing) {
		t.Fatal("want a change")
	}
	if existing.Labels[v1.LabelHostname] != "new-host" || existing.Labels[v1.LabelArchStable] != "amd64" ||
		existing.Labels["team"] != "blue" || existing.Annotations[ControllerManagedAttachAnnotation] != "true" {
		t.Fatalf("labels/annotations = %v %v", existing.Labels, existing.Annotations)
	}
	if _, ok := existing.Labels["example.com/x"]; ok {
		t.Error("user --node-labels are set at creation only, as upstream")
	}
	if len(existing.Spec.Taints) != 1 {
		t.Error("taints of an existing node belong to the cluster")
	}
	if ReconcileExisting(desired, existing) {
		t.Error("second reconcile must be a no-op")
	}
}

func TestStatusPatchCarriesUIDAndNoSpec(t *testing.T) {
	orig := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", UID: "u1", ResourceVersion: "5"}}
	upd := orig.DeepCopy()
	upd.ResourceVersion = "6"
	upd.Spec.Unschedulable = true
	upd.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeHostName, Address: "n"}}
	p, err := StatusPatch(orig, upd)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(p, &m); err != nil {
		t.Fatal(err)
	}
	if m["metadata"].(map[string]any)["uid"] != "u1" {
		t.Errorf("no uid precondition in %s", p)
	}
	if _, ok := m["spec"]; ok {
		t.Errorf("spec must not be patched: %s", p)
	}
	if _, ok := m["status"]; !ok {
		t.Errorf("status missing: %s", p)
	}
}

// A changed address list is replaced whole: a merge on "type" would keep a
// stale second InternalIP.
func TestStatusPatchReplacesChangedAddresses(t *testing.T) {
	old := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", UID: "u1"}, Status: v1.NodeStatus{Addresses: []v1.NodeAddress{
		{Type: v1.NodeInternalIP, Address: "10.0.0.1"}, {Type: v1.NodeHostName, Address: "n"}}}}
	upd := old.DeepCopy()
	// A second address of the same type (dual stack added).
	upd.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.1"}, {Type: v1.NodeInternalIP, Address: "fd00::1"}, {Type: v1.NodeHostName, Address: "n"}}
	patch, got := patchedStatus(t, old, upd)
	if !equality.Semantic.DeepEqual(got.Status.Addresses, upd.Status.Addresses) {
		t.Errorf("addresses after patch %v, want %v (patch %s)", got.Status.Addresses, upd.Status.Addresses, patch)
	}
	if !strings.Contains(string(patch), `"uid":"u1"`) {
		t.Errorf("the UID precondition is lost: %s", patch)
	}
	// Unchanged addresses: no addresses in the patch.
	same := old.DeepCopy()
	same.Status.Phase = v1.NodeRunning
	patch, _ = StatusPatch(old, same)
	if strings.Contains(string(patch), "addresses") {
		t.Errorf("unchanged addresses patched: %s", patch)
	}
}

// A virtual node's provider reports conditions of its own: they are
// written beside the kubelet's four, and one of the kubelet's types given
// there cannot override the kubelet's computation.
func TestSetStatusExtraConditions(t *testing.T) {
	cfg := &Config{NodeName: "vn"}
	f := Facts{
		Capacity:  v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("1Gi"), v1.ResourcePods: resource.MustParse("10")},
		Readiness: Readiness{RuntimeReady: true, NetworkReady: true},
		Conditions: []v1.NodeCondition{
			{Type: "BackendQuota", Status: v1.ConditionFalse, Reason: "QuotaOK", Message: "quota left"},
			{Type: v1.NodeReady, Status: v1.ConditionFalse, Reason: "Ignored"},
		},
	}
	node := NewNode(cfg, f)
	SetStatus(node, cfg, f, metav1.Now())
	if len(node.Status.Conditions) != 5 {
		t.Fatalf("conditions = %+v, want the kubelet's four and BackendQuota", node.Status.Conditions)
	}
	var extra *v1.NodeCondition
	for i, c := range node.Status.Conditions {
		if c.Type == "BackendQuota" {
			extra = &node.Status.Conditions[i]
		}
		if c.Type == v1.NodeReady && c.Status != v1.ConditionTrue {
			t.Errorf("Ready = %+v: a provider condition of type Ready must not override the kubelet's", c)
		}
	}
	if extra == nil || extra.Reason != "QuotaOK" || extra.LastHeartbeatTime.IsZero() {
		t.Errorf("BackendQuota = %+v", extra)
	}
}

// The declared features are the kubelet's: a list the upstream kubelet
// left on a node taken over is cleared by the status patch.
func TestSetStatusReplacesDeclaredFeatures(t *testing.T) {
	cfg := &Config{NodeName: "n"}
	f := Facts{Capacity: v1.ResourceList{v1.ResourcePods: resource.MustParse("10")}}
	old := NewNode(cfg, f)
	old.UID = "u1"
	old.Status.DeclaredFeatures = []string{"ExtendWebSocketsToKubelet", "RestartAllContainersOnContainerExits"}
	upd := old.DeepCopy()
	SetStatus(upd, cfg, f, metav1.Now())
	patch, got := patchedStatus(t, old, upd)
	if !equality.Semantic.DeepEqual(got.Status.DeclaredFeatures, DeclaredFeatures()) {
		t.Errorf("declaredFeatures after the patch = %q, want %q (patch %s)", got.Status.DeclaredFeatures, DeclaredFeatures(), patch)
	}
}

// The volumes in use are the kubelet's to report: the patch sets them,
// and clears those no longer used.
func TestSetStatusVolumesInUse(t *testing.T) {
	cfg := &Config{NodeName: "n"}
	f := Facts{Capacity: v1.ResourceList{v1.ResourcePods: resource.MustParse("10")},
		VolumesInUse: []v1.UniqueVolumeName{"kubernetes.io/csi/a^1", "kubernetes.io/csi/b^2"}}
	old := NewNode(cfg, Facts{Capacity: f.Capacity})
	old.UID = "u1"
	old.Status.VolumesAttached = []v1.AttachedVolume{{Name: "kubernetes.io/csi/a^1", DevicePath: "/dev/x"}}
	upd := old.DeepCopy()
	SetStatus(upd, cfg, f, metav1.Now())
	patch, got := patchedStatus(t, old, upd)
	if !equality.Semantic.DeepEqual(got.Status.VolumesInUse, f.VolumesInUse) || len(got.Status.VolumesAttached) != 1 {
		t.Errorf("after the patch: in use %v, attached %v (patch %s)", got.Status.VolumesInUse, got.Status.VolumesAttached, patch)
	}
	f.VolumesInUse = nil
	upd2 := got.DeepCopy()
	SetStatus(upd2, cfg, f, metav1.Now())
	if patch, got := patchedStatus(t, &got, upd2); len(got.Status.VolumesInUse) != 0 || len(got.Status.VolumesAttached) != 1 {
		t.Errorf("none in use: in use %v, attached %v (patch %s)", got.Status.VolumesInUse, got.Status.VolumesAttached, patch)
	}
}

// patchedStatus is old with the status patch from old to upd applied, as
// the API server applies it.
func patchedStatus(t *testing.T, old, upd *v1.Node) ([]byte, v1.Node) {
	t.Helper()
	patch, err := StatusPatch(old, upd)
	if err != nil {
		t.Fatal(err)
	}
	oldJSON, _ := json.Marshal(old)
	merged, err := strategicpatch.StrategicMergePatch(oldJSON, patch, v1.Node{})
	if err != nil {
		t.Fatal(err)
	}
	var got v1.Node
	if err := json.Unmarshal(merged, &got); err != nil {
		t.Fatal(err)
	}
	return patch, got
}
