package kubernetes

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

// sample: container c1 (started at 0) at second sec, window 15s, rate
// in millicores.
func sample(id string, sec int, milli uint64) containerSample {
	return containerSample{name: "main", id: id, started: t0, at: at(sec), window: 15 * time.Second,
		nanoCores: milli * 1e6, workingSet: 1 << 20}
}

// The counter integrates rate × elapsed between distinct samples, so the
// rate of two of its samples is the target's rate of the newer one.
func TestIntegrate(t *testing.T) {
	type step struct {
		s         containerSample
		wantTotal uint64 // core-nanoseconds
		wantInc   uint64
		wantAt    int
	}
	fresh := sample("c1", 12, 500)
	fresh.window = 12 * time.Second // metrics-server's first figures: since the start
	freshSkew := fresh
	freshSkew.at = at(12).Add(600 * time.Millisecond) // the status' start is cut to the second
	tests := []struct {
		name  string
		steps []step
	}{
		{"first sight of a running container starts at 0", []step{
			{sample("c1", 100, 500), 0, 0, 100},
		}},
		{"rate × elapsed between distinct samples", []step{
			{sample("c1", 100, 500), 0, 0, 100},
			{sample("c1", 115, 500), 7_500_000_000, 7_500_000_000, 115},
			{sample("c1", 145, 2000), 67_500_000_000, 60_000_000_000, 145},
		}},
		{"a sample with the same timestamp adds nothing, changes nothing", []step{
			{sample("c1", 100, 500), 0, 0, 100},
			{sample("c1", 115, 500), 7_500_000_000, 7_500_000_000, 115},
			{sample("c1", 115, 900), 7_500_000_000, 0, 115},
		}},
		{"an older sample adds nothing, changes nothing", []step{
			{sample("c1", 100, 500), 0, 0, 100},
			{sample("c1", 115, 500), 7_500_000_000, 7_500_000_000, 115},
			{sample("c1", 110, 900), 7_500_000_000, 0, 115},
		}},
		{"a restart (new container ID) starts again at 0", []step{
			{sample("c1", 100, 500), 0, 0, 100},
			{sample("c1", 115, 500), 7_500_000_000, 7_500_000_000, 115},
			{sample("c2", 130, 500), 0, 0, 130},
			{sample("c2", 145, 100), 1_500_000_000, 1_500_000_000, 145},
		}},
		{"a window reaching back to the start counts the whole life", []step{
			{fresh, 6_000_000_000, 6_000_000_000, 12},
			{sample("c1", 27, 1000), 21_000_000_000, 15_000_000_000, 27},
		}},
		{"within the second the status' start is cut to", []step{
			{freshSkew, 6_000_000_000, 6_000_000_000, 12},
		}},
		{"zero rate adds nothing but moves on", []step{
			{sample("c1", 100, 0), 0, 0, 100},
			{sample("c1", 160, 0), 0, 0, 160},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var u *containerUsage
			for i, st := range tt.steps {
				n, inc := integrate(u, st.s)
				if n.total != st.wantTotal || inc != st.wantInc || !n.at.Truncate(time.Second).Equal(at(st.wantAt)) {
					t.Errorf("step %d: total %d inc %d at %v, want %d %d at %ds", i, n.total, inc, n.at.Sub(t0), st.wantTotal, st.wantInc, st.wantAt)
				}
				if u != nil && !st.s.at.After(u.at) && st.s.id == u.id && n != *u {
					t.Errorf("step %d: a sample not after the last one changed the figures: %+v -> %+v", i, *u, n)
				}
				if u != nil && n.id == u.id && n.total >= u.total && n.at.After(u.at) {
					// What metrics-server computes from two scrapes.
					rate := float64(n.total-u.total) / n.at.Sub(u.at).Seconds()
					if math.Abs(rate-float64(st.s.nanoCores)) > 1 {
						t.Errorf("step %d: rate from the counter %v, want the target's %d", i, rate, st.s.nanoCores)
					}
				}
				u = &n
			}
		})
	}
}

func TestCPUTime(t *testing.T) {
	for _, tt := range []struct {
		nano uint64
		d    time.Duration
		want uint64
	}{
		{0, time.Hour, 0},
		{1e9, -time.Second, 0},
		{1e9, time.Second, 1e9},
		{250_000_000, 4 * time.Second, 1e9},
		{3, time.Nanosecond, 0},                     // below a core-nanosecond
		{1e12, 1000 * time.Hour, 3.6e18},            // 1000 cores for 1000 h: no overflow on the way
		{math.MaxUint64, time.Hour, math.MaxUint64}, // saturates
	} {
		if got := cpuTime(tt.nano, tt.d); got != tt.want {
			t.Errorf("cpuTime(%d, %v) = %d, want %d", tt.nano, tt.d, got, tt.want)
		}
	}
}

func targetPod(ns, name string, uid types.UID) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: uid}}
}

// Only the pods the provider created count: the record's target pod with
// its UID, whatever else lives in the namespace.
func TestOwnedTargets(t *testing.T) {
	rec := func(originNS, name, originUID, targetNS, targetUID string) ownedPod {
		return ownedPod{OriginNamespace: originNS, OriginName: name, OriginUID: types.UID(originUID), TargetNamespace: targetNS,
			TargetUID: types.UID(targetUID), Tokens: []ownedToken{{Secret: "s"}}}
	}
	pods := map[string]*v1.Pod{
		"vk-shop/web":  targetPod("vk-shop", "web", "t-web"),
		"vk-shop/db":   targetPod("vk-shop", "db", "t-other"), // a pod of that name, not the one created
		"vk-ops/job":   targetPod("vk-ops", "job", "t-job"),
		"vk-shop/evil": targetPod("vk-shop", "evil", "t-evil"), // no record
	}
	get := func(ns, name string) *v1.Pod { return pods[ns+"/"+name] }
	recs := []ownedPod{
		rec("shop", "web", "o-web", "vk-shop", "t-web"),
		rec("shop", "db", "o-db", "vk-shop", "t-db"),
		rec("ops", "job", "o-job", "vk-ops", "t-job"),
		rec("shop", "new", "o-new", "vk-shop", ""),         // not created yet
		rec("shop", "gone", "o-gone", "vk-shop", "t-gone"), // no target pod
	}
	got := ownedTargets(recs, get)
	var keys []string
	for _, g := range got {
		keys = append(keys, fmt.Sprintf("%s/%s=%s->%s", g.rec.OriginNamespace, g.rec.OriginName, g.rec.OriginUID, g.pod.UID))
		if g.rec.Tokens != nil {
			t.Errorf("%s: tokens kept in a stats target", g.rec.key())
		}
	}
	if want := "ops/job=o-job->t-job shop/web=o-web->t-web"; strings.Join(keys, " ") != want {
		t.Errorf("targets = %v, want %s", keys, want)
	}
	if ns := targetNamespaces(got); strings.Join(ns, ",") != "vk-ops,vk-shop" {
		t.Errorf("namespaces = %v", ns)
	}
}

func running(name, id string, started time.Time) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, ContainerID: id, State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}}}
}

func usage(cpu, mem string) v1.ResourceList {
	l := v1.ResourceList{}
	if cpu != "" {
		l[v1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		l[v1.ResourceMemory] = resource.MustParse(mem)
	}
	return l
}

func podMetrics(ns, name string, sec int, containers ...metricsv1beta1.ContainerMetrics) metricsv1beta1.PodMetrics {
	return metricsv1beta1.PodMetrics{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Timestamp: metav1.NewTime(at(sec)), Window: metav1.Duration{Duration: 15 * time.Second}, Containers: containers}
}

func TestSamplesOf(t *testing.T) {
	withStatus := func(init []v1.ContainerStatus, cs ...v1.ContainerStatus) *v1.Pod {
		p := targetPod("vk-shop", "web", "t-web")
		p.Status.InitContainerStatuses, p.Status.ContainerStatuses = init, cs
		return p
	}
	main := metricsv1beta1.ContainerMetrics{Name: "main", Usage: usage("250m", "64Mi")}
	side := metricsv1beta1.ContainerMetrics{Name: "proxy", Usage: usage("10m", "8Mi")}
	tests := []struct {
		name     string
		pm       *metricsv1beta1.PodMetrics
		pod      *v1.Pod
		want     []string
		complete bool
	}{
		{"no PodMetrics yet", nil, withStatus(nil, running("main", "c://1", t0)), nil, false},
		{"a running container with figures", ptrTo(podMetrics("vk-shop", "web", 100, main)),
			withStatus(nil, running("main", "c://1", t0)), []string{"main c://1 250000000 67108864"}, true},
		{"a sidecar (running init container) too", ptrTo(podMetrics("vk-shop", "web", 100, main, side)),
			withStatus([]v1.ContainerStatus{running("proxy", "c://2", t0)}, running("main", "c://1", t0)),
			[]string{"proxy c://2 10000000 8388608", "main c://1 250000000 67108864"}, true},
		{"a running container without figures: incomplete", ptrTo(podMetrics("vk-shop", "web", 100, main)),
			withStatus([]v1.ContainerStatus{running("proxy", "c://2", t0)}, running("main", "c://1", t0)),
			[]string{"main c://1 250000000 67108864"}, false},
		{"figures of a container not running are not counted", ptrTo(podMetrics("vk-shop", "web", 100, main)),
			withStatus(nil, v1.ContainerStatus{Name: "main", ContainerID: "c://1", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{}}}), nil, false},
		{"no container ID yet", ptrTo(podMetrics("vk-shop", "web", 100, main)),
			withStatus(nil, running("main", "", t0)), nil, false},
		{"figures from before the container started are an earlier instance's", ptrTo(podMetrics("vk-shop", "web", 100, main)),
			withStatus(nil, running("main", "c://9", at(120))), nil, false},
		{"figures without memory", ptrTo(podMetrics("vk-shop", "web", 100, metricsv1beta1.ContainerMetrics{Name: "main", Usage: usage("1", "")})),
			withStatus(nil, running("main", "c://1", t0)), nil, false},
		{"negative figures", ptrTo(podMetrics("vk-shop", "web", 100, metricsv1beta1.ContainerMetrics{Name: "main", Usage: usage("-1", "1Mi")})),
			withStatus(nil, running("main", "c://1", t0)), nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, complete := samplesOf(tt.pm, tt.pod)
			var s []string
			for _, g := range got {
				s = append(s, fmt.Sprintf("%s %s %d %d", g.name, g.id, g.nanoCores, g.workingSet))
				if !g.at.Equal(at(100)) || g.window != 15*time.Second {
					t.Errorf("%s: at %v window %v", g.name, g.at, g.window)
				}
			}
			if strings.Join(s, "|") != strings.Join(tt.want, "|") || complete != tt.complete {
				t.Errorf("samples %q complete %v, want %q %v", s, complete, tt.want, tt.complete)
			}
		})
	}
}

// statsFixture: origin shop/web (uid o-web) runs as vk-shop/web (t-web)
// with containers main and proxy; origin ops/job as vk-ops/job.
func statsFixture(webMainID string) []statsTarget {
	start := metav1.NewTime(t0)
	web := targetPod("vk-shop", "web", "t-web")
	web.Status.StartTime = &start
	web.Status.ContainerStatuses = []v1.ContainerStatus{running("main", webMainID, t0), running("proxy", "c://p", t0)}
	job := targetPod("vk-ops", "job", "t-job")
	job.Status.ContainerStatuses = []v1.ContainerStatus{running("main", "c://j", t0)}
	return []statsTarget{
		{rec: ownedPod{OriginNamespace: "ops", OriginName: "job", OriginUID: "o-job", TargetNamespace: "vk-ops", TargetUID: "t-job"}, pod: job},
		{rec: ownedPod{OriginNamespace: "shop", OriginName: "web", OriginUID: "o-web", TargetNamespace: "vk-shop", TargetUID: "t-web"}, pod: web},
	}
}

func webMetrics(sec int, mainCPU, proxyCPU string) metricsv1beta1.PodMetrics {
	return podMetrics("vk-shop", "web", sec,
		metricsv1beta1.ContainerMetrics{Name: "main", Usage: usage(mainCPU, "100Mi")},
		metricsv1beta1.ContainerMetrics{Name: "proxy", Usage: usage(proxyCPU, "10Mi")})
}

func cpuOf(c *statsv1alpha1.CPUStats) string {
	if c == nil {
		return "-"
	}
	return fmt.Sprintf("%d/%d@%d", *c.UsageNanoCores, *c.UsageCoreNanoSeconds, c.Time.Sub(t0)/time.Second)
}

func memOf(m *statsv1alpha1.MemoryStats) string {
	if m == nil {
		return "-"
	}
	if m.UsageBytes != nil {
		return "usageBytes set"
	}
	return fmt.Sprint(*m.WorkingSetBytes >> 20)
}

// describe prints a summary compactly: pods by origin ref, containers'
// and pods' rate/cumulative@second and working set in MiB.
func describe(s *statsv1alpha1.Summary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "node %s cpu %s mem %s", s.Node.NodeName, cpuOf(s.Node.CPU), memOf(s.Node.Memory))
	for _, p := range s.Pods {
		fmt.Fprintf(&b, "; %s/%s(%s) cpu %s mem %s [", p.PodRef.Namespace, p.PodRef.Name, p.PodRef.UID, cpuOf(p.CPU), memOf(p.Memory))
		for i, c := range p.Containers {
			if i > 0 {
				b.WriteString(" ")
			}
			fmt.Fprintf(&b, "%s %s %s", c.Name, cpuOf(c.CPU), memOf(c.Memory))
		}
		b.WriteString("]")
	}
	return b.String()
}

// The summary across calls: origin identities, only owned pods, sums,
// restarts, pods gone.
func TestStatsUpdate(t *testing.T) {
	var st statsState
	foreign := podMetrics("vk-shop", "evil", 100, metricsv1beta1.ContainerMetrics{Name: "main", Usage: usage("64", "1Ti")})
	steps := []struct {
		name    string
		targets []statsTarget
		items   []metricsv1beta1.PodMetrics
		want    string
	}{
		{"nothing measured yet: no figures at all", statsFixture("c://1"), nil,
			"node vk cpu - mem -"},
		{"first sight; the job has no PodMetrics; a foreign pod's are ignored", statsFixture("c://1"),
			[]metricsv1beta1.PodMetrics{foreign, webMetrics(100, "500m", "100m")},
			"node vk cpu 600000000/0@100 mem 110; shop/web(o-web) cpu 600000000/0@100 mem 110 [main 500000000/0@100 100 proxy 100000000/0@100 10]"},
		{"15 s on", statsFixture("c://1"),
			[]metricsv1beta1.PodMetrics{webMetrics(115, "1", "200m")},
			"node vk cpu 1200000000/18000000000@115 mem 110; shop/web(o-web) cpu 1200000000/18000000000@115 mem 110 [main 1000000000/15000000000@115 100 proxy 200000000/3000000000@115 10]"},
		{"the same sample again changes nothing", statsFixture("c://1"),
			[]metricsv1beta1.PodMetrics{webMetrics(115, "1", "200m")},
			"node vk cpu 1200000000/18000000000@115 mem 110; shop/web(o-web) cpu 1200000000/18000000000@115 mem 110 [main 1000000000/15000000000@115 100 proxy 200000000/3000000000@115 10]"},
		{"main restarted: its counter starts again, the pod's and node's go on", statsFixture("c://2"),
			[]metricsv1beta1.PodMetrics{webMetrics(130, "1", "200m")},
			"node vk cpu 1200000000/21000000000@130 mem 110; shop/web(o-web) cpu 1200000000/21000000000@130 mem 110 [main 1000000000/0@130 100 proxy 200000000/6000000000@130 10]"},
		{"only proxy has figures: the pod has no sums", statsFixture("c://2"),
			[]metricsv1beta1.PodMetrics{podMetrics("vk-shop", "web", 145, metricsv1beta1.ContainerMetrics{Name: "proxy", Usage: usage("200m", "10Mi")})},
			"node vk cpu 200000000/24000000000@145 mem 10; shop/web(o-web) cpu - mem - [proxy 200000000/9000000000@145 10]"},
		{"web is gone: forgotten", statsFixture("c://2")[:1],
			[]metricsv1beta1.PodMetrics{webMetrics(160, "1", "200m")},
			"node vk cpu - mem -"},
		{"a pod of that name again is a new pod: first sight", statsFixture("c://3"),
			[]metricsv1beta1.PodMetrics{webMetrics(175, "1", "200m")},
			"node vk cpu 1200000000/24000000000@175 mem 110; shop/web(o-web) cpu 1200000000/0@175 mem 110 [main 1000000000/0@175 100 proxy 200000000/0@175 10]"},
	}
	for _, s := range steps {
		got := describe(st.update(s.targets, s.items, "vk", t0))
		if got != s.want {
			t.Errorf("%s:\n got %s\nwant %s", s.name, got, s.want)
		}
	}
	if len(st.pods) != 1 {
		t.Errorf("%d pods remembered, want 1", len(st.pods))
	}
}
