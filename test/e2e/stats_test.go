package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/gokubelet/kubelet/pkg/metrics/metricstest"
	"github.com/gokubelet/kubelet/pkg/pod/timeline"
	"github.com/gokubelet/kubelet/test/framework"
)

// The monitoring endpoints, read on the test kubelet's API (10250) as the
// cluster's metrics-server reads them: with its client certificate
// (system:metrics-server, allowed nodes/stats and nodes/metrics, nothing
// else).

var (
	monitorOnce   sync.Once
	monitorClient *http.Client
	monitorErr    error
)

// monitoring is an HTTP client presenting metrics-server's certificate.
func monitoring() (*http.Client, error) {
	monitorOnce.Do(func() {
		pki := filepath.Dir(clusterEnv["CLUSTER_CA_FILE"])
		cert, err := tls.LoadX509KeyPair(filepath.Join(pki, "metrics-server.crt"), filepath.Join(pki, "metrics-server.key"))
		if err != nil {
			monitorErr = fmt.Errorf("metrics-server's client certificate (hack/metrics-server.sh pki): %w", err)
			return
		}
		monitorClient = framework.APIClient(&cert)
	})
	return monitorClient, monitorErr
}

// getMonitoring GETs path from the kubelet API as metrics-server.
func getMonitoring(path, accept string) (int, string, error) {
	c, err := monitoring()
	if err != nil {
		return 0, "", err
	}
	req, err := http.NewRequest(http.MethodGet, kubeletURL(path), nil)
	if err != nil {
		return 0, "", err
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func kubeletJSON(path string, into any) error {
	code, body, err := getMonitoring(path, "")
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", path, code, framework.Tail(body, 5))
	}
	return json.Unmarshal([]byte(body), into)
}

func scrape(path string) (metricstest.Families, error) {
	code, body, err := getMonitoring(path, "text/plain")
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %d %s", path, code, framework.Tail(body, 5))
	}
	return metricstest.Parse(strings.NewReader(body))
}

// The monitoring identity reaches the stats and metrics endpoints and
// nothing else: one authorization mapping for the built-in and the
// monitoring routes.
func TestMonitoringAuthorization(t *testing.T) {
	node(t)
	for _, p := range []string{"/stats/summary", "/metrics", "/metrics/resource", "/metrics/probes", "/metrics/cadvisor", "/stats/timeline"} {
		if code, body, err := getMonitoring(p, ""); err != nil || code != http.StatusOK {
			t.Errorf("%s as metrics-server: %d %v %s", p, code, err, framework.Tail(body, 2))
		}
		if code, _ := callKubelet(t, "", nil, p); code != http.StatusUnauthorized {
			t.Errorf("%s without credentials: %d, want 401", p, code)
		}
	}
	for _, p := range []string{"/pods", "/configz", "/runningpods/"} {
		if code, body, err := getMonitoring(p, ""); err != nil || code != http.StatusForbidden {
			t.Errorf("%s as metrics-server: %d %v %s, want 403 (nodes/stats and nodes/metrics only)", p, code, err, framework.Tail(body, 2))
		}
	}
}

// busyPod runs "spin", a container burning CPU (at most a quarter core)
// that first writes 4 MiB into an emptyDir, and "web", the test server
// with a readiness probe.
func busyPod(name string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PodSpec{
			Containers: []v1.Container{
				{Name: "spin", Image: testImage, ImagePullPolicy: v1.PullIfNotPresent,
					Command:      []string{"/bin/sh", "-c", "dd if=/dev/zero of=/scratch/fill bs=1048576 count=4; while :; do :; done"},
					Resources:    v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m"), v1.ResourceMemory: resource.MustParse("64Mi")}},
					VolumeMounts: []v1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}},
				{Name: "web", Image: testImage, ImagePullPolicy: v1.PullIfNotPresent,
					ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(8080)}}, PeriodSeconds: 1}},
			},
			Volumes: []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}},
		},
	}
}

func startBusyPod(t *testing.T, ns string) *v1.Pod {
	t.Helper()
	if _, err := client.CoreV1().Pods(ns).Create(context.Background(), busyPod("busy"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return waitPod(t, ns, "busy", "running and ready", running)
}

func findPod(s *statsapi.Summary, ns, name string) *statsapi.PodStats {
	for i := range s.Pods {
		if s.Pods[i].PodRef.Namespace == ns && s.Pods[i].PodRef.Name == name {
			return &s.Pods[i]
		}
	}
	return nil
}

func findContainer(p *statsapi.PodStats, name string) *statsapi.ContainerStats {
	for i := range p.Containers {
		if p.Containers[i].Name == name {
			return &p.Containers[i]
		}
	}
	return nil
}

func val(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}

// TestStatsSummary: /stats/summary has the node and every running pod of
// the node, with CPU and memory for a busy container, its volume and logs.
func TestStatsSummary(t *testing.T) {
	nodeName := node(t)
	ns := namespace(t)
	startBusyPod(t, ns)

	var s statsapi.Summary
	framework.Eventually(t, "the busy pod's stats with a CPU rate", func() (bool, string) {
		s = statsapi.Summary{}
		if err := kubeletJSON("/stats/summary", &s); err != nil {
			return false, err.Error()
		}
		p := findPod(&s, ns, "busy")
		if p == nil {
			return false, "pod not listed"
		}
		c := findContainer(p, "spin")
		if c == nil || c.CPU == nil || c.Memory == nil {
			return false, fmt.Sprintf("containers %+v", p.Containers)
		}
		vol := 0
		for _, v := range p.VolumeStats {
			if v.Name == "scratch" {
				vol = int(val(v.UsedBytes))
			}
		}
		seen := fmt.Sprintf("spin cpu=%d nanocores=%d ws=%d scratch=%d", val(c.CPU.UsageCoreNanoSeconds), val(c.CPU.UsageNanoCores), val(c.Memory.WorkingSetBytes), vol)
		return val(c.CPU.UsageNanoCores) > 0 && val(c.CPU.UsageCoreNanoSeconds) > 0 && val(c.Memory.WorkingSetBytes) > 0 && vol >= 4<<20, seen
	})

	n := s.Node
	if n.NodeName != nodeName || val(n.CPU.UsageCoreNanoSeconds) == 0 || val(n.Memory.WorkingSetBytes) == 0 || val(n.Memory.AvailableBytes) == 0 {
		t.Errorf("node: %s cpu=%+v memory=%+v", n.NodeName, n.CPU, n.Memory)
	}
	if n.Fs == nil || val(n.Fs.CapacityBytes) == 0 || val(n.Fs.AvailableBytes) > val(n.Fs.CapacityBytes) {
		t.Errorf("node fs: %+v", n.Fs)
	}
	if n.Runtime == nil || n.Runtime.ImageFs == nil || val(n.Runtime.ImageFs.CapacityBytes) == 0 {
		t.Errorf("image fs: %+v", n.Runtime)
	}
	if n.Network == nil || len(n.Network.Interfaces) == 0 || n.Rlimit == nil || n.Rlimit.MaxPID == nil || *n.Rlimit.MaxPID == 0 {
		t.Errorf("node network %+v rlimit %+v", n.Network, n.Rlimit)
	}
	p := findPod(&s, ns, "busy")
	if p.CPU == nil || val(p.CPU.UsageCoreNanoSeconds) < val(findContainer(p, "spin").CPU.UsageCoreNanoSeconds) {
		t.Errorf("pod cpu %+v below its container's", p.CPU)
	}
	if p.Network == nil || p.Network.Name != "eth0" || val(p.Network.RxBytes) == 0 {
		t.Errorf("pod network: %+v", p.Network)
	}
	if web := findContainer(p, "web"); web == nil || web.Logs == nil || val(web.Logs.UsedBytes) == 0 || web.Rootfs == nil {
		t.Errorf("web container fs: %+v", web)
	}
	if p.EphemeralStorage == nil || val(p.EphemeralStorage.UsedBytes) < 4<<20 {
		t.Errorf("ephemeral storage: %+v", p.EphemeralStorage)
	}

	// Every pod running on the node (by the API server) is in the summary.
	pods, err := client.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{FieldSelector: "spec.nodeName=" + nodeName})
	if err != nil {
		t.Fatal(err)
	}
	for _, ap := range pods.Items {
		// Pods of earlier tests' namespaces may be on their way out.
		if running(&ap) && ap.DeletionTimestamp == nil && findPod(&s, ap.Namespace, ap.Name) == nil {
			t.Errorf("running pod %s/%s missing from the summary", ap.Namespace, ap.Name)
		}
	}

	// CPU and memory only.
	var small statsapi.Summary
	if err := kubeletJSON("/stats/summary?only_cpu_and_memory=true", &small); err != nil {
		t.Fatal(err)
	}
	if small.Node.Fs != nil || small.Node.CPU == nil || findPod(&small, ns, "busy") == nil || findPod(&small, ns, "busy").VolumeStats != nil {
		t.Errorf("only_cpu_and_memory summary: node fs %v, pod %+v", small.Node.Fs, findPod(&small, ns, "busy"))
	}
}

// TestMetricsEndpoints scrapes /metrics, /metrics/resource,
// /metrics/probes and /metrics/cadvisor and checks names, labels and
// plausible values.
func TestMetricsEndpoints(t *testing.T) {
	nodeName := node(t)
	ns := namespace(t)
	startBusyPod(t, ns)
	spin := map[string]string{"container": "spin", "pod": "busy", "namespace": ns}

	// /metrics/resource: what metrics-server reads.
	framework.Eventually(t, "/metrics/resource with the busy container", func() (bool, string) {
		f, err := scrape("/metrics/resource")
		if err != nil {
			return false, err.Error()
		}
		cpu := f.Find("container_cpu_usage_seconds_total", spin)
		if len(cpu) != 1 {
			return false, "no container_cpu_usage_seconds_total for spin; have " + f.Names()
		}
		if cpu[0].GetTimestampMs() == 0 {
			return false, "no timestamp on container_cpu_usage_seconds_total"
		}
		start := f.Sum("container_start_time_seconds", spin)
		now := float64(time.Now().Unix())
		ok := metricstest.Value(cpu[0]) > 0 && f.Sum("container_memory_working_set_bytes", spin) > 0 &&
			f.Sum("node_cpu_usage_seconds_total", nil) > 0 && f.Sum("node_memory_working_set_bytes", nil) > 0 &&
			f.Sum("pod_cpu_usage_seconds_total", map[string]string{"pod": "busy", "namespace": ns}) > 0 &&
			f.Sum("pod_memory_working_set_bytes", map[string]string{"pod": "busy", "namespace": ns}) > 0 &&
			len(f.Find("resource_scrape_error", nil)) == 1 && f.Sum("resource_scrape_error", nil) == 0 &&
			start > now-600 && start <= now+1
		return ok, fmt.Sprintf("cpu=%v start=%v err=%v", metricstest.Value(cpu[0]), start, f.Sum("resource_scrape_error", nil))
	})

	// /metrics: the kubelet's own.
	framework.Eventually(t, "/metrics with the pod's start recorded", func() (bool, string) {
		f, err := scrape("/metrics")
		if err != nil {
			return false, err.Error()
		}
		checks := map[string]bool{
			"kubelet_node_name":                                f.Sum("kubelet_node_name", map[string]string{"node": nodeName}) == 1,
			"kubelet_running_pods":                             f.Sum("kubelet_running_pods", nil) >= 1,
			"kubelet_running_containers{running}":              f.Sum("kubelet_running_containers", map[string]string{"container_state": "running"}) >= 2,
			"kubelet_runtime_operations_total{run_podsandbox}": f.Sum("kubelet_runtime_operations_total", map[string]string{"operation_type": "run_podsandbox"}) >= 1,
			"kubelet_runtime_operations_duration_seconds":      f.Sum("kubelet_runtime_operations_duration_seconds", map[string]string{"operation_type": "list_podsandbox"}) >= 1,
			"kubelet_pleg_relist_duration_seconds":             f.Sum("kubelet_pleg_relist_duration_seconds", nil) >= 1,
			"kubelet_pleg_relist_interval_seconds":             f.Sum("kubelet_pleg_relist_interval_seconds", nil) >= 1,
			"kubelet_pleg_last_seen_seconds":                   time.Since(time.Unix(int64(f.Sum("kubelet_pleg_last_seen_seconds", nil)), 0)) < time.Minute,
			"kubelet_pod_worker_duration_seconds{create}":      f.Sum("kubelet_pod_worker_duration_seconds", map[string]string{"operation_type": "create"}) >= 1,
			"kubelet_pod_start_duration_seconds":               f.Sum("kubelet_pod_start_duration_seconds", nil) >= 1,
			"kubelet_pod_start_sli_duration_seconds":           f.Sum("kubelet_pod_start_sli_duration_seconds", nil) >= 1,
			"kubelet_pod_start_total_duration_seconds":         f.Sum("kubelet_pod_start_total_duration_seconds", nil) >= 1,
			"kubelet_pod_startup_phase_duration_seconds":       f.Sum("kubelet_pod_startup_phase_duration_seconds", map[string]string{"phase": "sandbox"}) >= 1,
			"kubelet_started_pods_total":                       f.Sum("kubelet_started_pods_total", nil) >= 1,
			"kubelet_started_containers_total{container}":      f.Sum("kubelet_started_containers_total", map[string]string{"container_type": "container"}) >= 2,
			"process_start_time_seconds":                       f["process_start_time_seconds"] != nil,
			"kubelet_pod_status_sync_duration_seconds":         f.Sum("kubelet_pod_status_sync_duration_seconds", nil) >= 1,
		}
		// containerd 2 streams container events, which the PLEG follows
		// (Debian's containerd 1.6 does not).
		if os.Getenv("CONTAINERD_FLAVOR") != "debian" {
			checks["kubelet_evented_pleg_connection_success_count"] = f.Sum("kubelet_evented_pleg_connection_success_count", nil) >= 1
		}
		var missing []string
		for k, ok := range checks {
			if !ok {
				missing = append(missing, k)
			}
		}
		return len(missing) == 0, "failing: " + strings.Join(missing, ", ")
	})

	// /metrics/probes: the web container's readiness probe.
	framework.Eventually(t, "/metrics/probes with the readiness probe", func() (bool, string) {
		f, err := scrape("/metrics/probes")
		if err != nil {
			return false, err.Error()
		}
		sel := map[string]string{"probe_type": "Readiness", "result": "successful", "container": "web", "pod": "busy", "namespace": ns}
		ms := f.Find("prober_probe_total", sel)
		if len(ms) != 1 || metricstest.Labels(ms[0])["pod_uid"] == "" {
			return false, fmt.Sprintf("prober_probe_total%v: %v", sel, ms)
		}
		return metricstest.Value(ms[0]) >= 1 && f.Sum("prober_probe_duration_seconds", map[string]string{"probe_type": "Readiness", "pod": "busy"}) >= 1, "counted"
	})

	// /metrics/cadvisor: cadvisor's names and labels.
	framework.Eventually(t, "/metrics/cadvisor with the busy pod", func() (bool, string) {
		f, err := scrape("/metrics/cadvisor")
		if err != nil {
			return false, err.Error()
		}
		cpu := f.Find("container_cpu_usage_seconds_total", map[string]string{"container": "spin", "pod": "busy", "namespace": ns, "cpu": "total"})
		if len(cpu) != 1 {
			return false, "no container_cpu_usage_seconds_total for spin; have " + f.Names()
		}
		l := metricstest.Labels(cpu[0])
		if !strings.HasPrefix(l["id"], "/kubepods") || l["image"] != testImage || l["name"] == "" {
			return false, fmt.Sprintf("labels %v", l)
		}
		podWS := f.Sum("container_memory_working_set_bytes", map[string]string{"container": "", "pod": "busy", "namespace": ns})
		rx := f.Sum("container_network_receive_bytes_total", map[string]string{"pod": "busy", "namespace": ns, "interface": "eth0"})
		root := f.Sum("container_memory_working_set_bytes", map[string]string{"id": "/"})
		return metricstest.Value(cpu[0]) > 0 && podWS > 0 && rx > 0 && root > 0 && f.Sum("machine_cpu_cores", nil) > 0,
			fmt.Sprintf("cpu=%v podWS=%v rx=%v root=%v", metricstest.Value(cpu[0]), podWS, rx, root)
	})
}

// TestKubectlTop: metrics-server scrapes the kubelet, and kubectl top
// answers with numbers for the node and the pods on it.
func TestKubectlTop(t *testing.T) {
	// Waiting for metrics-server's scrapes: beside the other waiting tests.
	nodeName := parallelOnSharedKubelet(t)
	ns := namespace(t)
	startBusyPod(t, ns)
	kubectl := func(args ...string) (string, error) {
		cmd := exec.Command("kubectl", append([]string{"--kubeconfig", filepath.Join(clusterDir, "admin.kubeconfig")}, args...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	// metrics-server needs two scrapes (15s apart) for a CPU rate.
	framework.EventuallyWithin(t, 3*time.Minute, "kubectl top pods", func() (bool, string) {
		out, err := kubectl("top", "pods", "-n", ns, "--no-headers", "--containers")
		if err != nil {
			return false, out
		}
		cpu := map[string]int{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Fields(line)
			if len(f) != 4 || f[0] != "busy" {
				continue
			}
			// POD NAME CPU(cores) MEMORY(bytes), e.g. "busy spin 248m 0Mi"
			// (a spinning shell's memory rounds down to 0Mi).
			m, errC := strconv.Atoi(strings.TrimSuffix(f[2], "m"))
			_, errM := strconv.Atoi(strings.TrimSuffix(f[3], "Mi"))
			if errC != nil || errM != nil || !strings.HasSuffix(f[2], "m") || !strings.HasSuffix(f[3], "Mi") {
				return false, "unparsable: " + line
			}
			cpu[f[1]] = m
		}
		return len(cpu) == 2 && cpu["spin"] > 0, out
	})
	framework.EventuallyWithin(t, 3*time.Minute, "kubectl top nodes", func() (bool, string) {
		out, err := kubectl("top", "nodes", "--no-headers")
		if err != nil {
			return false, out
		}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Fields(line)
			// NAME CPU(cores) CPU% MEMORY(bytes) MEMORY%
			if len(f) >= 5 && f[0] == nodeName {
				c, errC := strconv.Atoi(strings.TrimSuffix(f[1], "m"))
				m, errM := strconv.Atoi(strings.TrimSuffix(f[3], "Mi"))
				return errC == nil && errM == nil && c > 0 && m > 0, line
			}
		}
		return false, out
	})
}

// TestPodStartupTimeline: the kubelet serves where a pod's start spent its
// time.
func TestPodStartupTimeline(t *testing.T) {
	node(t)
	ns := namespace(t)
	p := startBusyPod(t, ns)
	var tl timeline.Timeline
	framework.Eventually(t, "a complete timeline, observed on the watch", func() (bool, string) {
		tl = timeline.Timeline{}
		if err := kubeletJSON("/stats/timeline/"+ns+"/busy", &tl); err != nil {
			return false, err.Error()
		}
		_, observed := tl.PhasesSeconds[timeline.PhaseAPIReport]
		return tl.Complete && observed, fmt.Sprintf("%+v", tl)
	})
	if tl.UID != p.UID || tl.Adopted {
		t.Errorf("timeline of %s adopted=%v", tl.UID, tl.Adopted)
	}
	seen := map[timeline.EventType]int{}
	started := map[string]bool{}
	var last time.Time
	for _, e := range tl.Events {
		seen[e.Type]++
		if e.Type == timeline.ContainerStarted {
			started[e.Container] = true
		}
		if e.Time.Before(last) {
			t.Errorf("events out of order: %+v", tl.Events)
		}
		last = e.Time
	}
	for _, want := range []timeline.EventType{timeline.Seen, timeline.WorkerStarted, timeline.SandboxReady, timeline.Running, timeline.Ready, timeline.ObservedRunning} {
		if seen[want] != 1 {
			t.Errorf("event %s seen %d times: %+v", want, seen[want], tl.Events)
		}
	}
	if !started["spin"] || !started["web"] {
		t.Errorf("container starts: %v", started)
	}
	for _, ph := range []string{timeline.PhaseAdmission, timeline.PhaseSandbox, timeline.PhaseImagePull, timeline.PhaseContainers, timeline.PhaseReadiness} {
		if _, ok := tl.PhasesSeconds[ph]; !ok {
			t.Errorf("phase %s missing: %v", ph, tl.PhasesSeconds)
		}
	}
	if tl.Events[0].Time.Before(p.CreationTimestamp.Add(-time.Second)) || tl.TotalSeconds <= 0 {
		t.Errorf("seen %v before creation %v, or total %v", tl.Events[0].Time, p.CreationTimestamp, tl.TotalSeconds)
	}
	code, _, err := getMonitoring("/stats/timeline/"+ns+"/no-such-pod", "")
	if err != nil || code != http.StatusNotFound {
		t.Errorf("unknown pod: %d %v", code, err)
	}
}
