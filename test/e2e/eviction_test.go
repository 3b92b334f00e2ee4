package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/gokubelet/kubelet/test/framework"
)

// Sizes of the eviction test: the pods' memory (kubepods, node
// allocatable) is capped at evictAllocatable by reserving the rest of the
// machine, and memory.available's hard threshold evicts at
// evictAllocatable - evictMemThreshold of pod usage; the node filesystem is
// a loop-mounted ext4 of evictFsSize holding the kubelet's root and the pod
// logs, with nodefs.available at evictFsThreshold. The machine's own
// memory and disk are never pressed (imagefs.available, containerd's
// filesystem on the machine's disk, keeps the shared absolute value).
const (
	evictAllocatable  = 600 << 20
	evictMemThreshold = "200Mi"
	evictFsSize       = 512 << 20
	evictFsThreshold  = "200Mi"
	// evictTransition is evictionPressureTransitionPeriod: long enough for
	// the Node to report the condition and the controller to taint it.
	evictTransition = "30s"
)

// loopFS creates and mounts an ext4 filesystem of size on a loop device,
// and unmounts and removes it at the end of the test.
func loopFS(t *testing.T, size int64) string {
	t.Helper()
	dir := t.TempDir()
	img := filepath.Join(dir, "fs.img")
	mnt := filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(img)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, args := range [][]string{{"mkfs.ext4", "-q", "-F", img}, {"mount", "-o", "loop", img, mnt}} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	t.Cleanup(func() {
		// Pods' volume mounts below go first.
		out, _ := exec.Command("sh", "-c", "grep -o ' "+mnt+"/[^ ]*' /proc/self/mounts | sort -r").Output()
		for _, m := range strings.Fields(string(out)) {
			exec.Command("umount", "-l", m).Run()
		}
		if out, err := exec.Command("umount", "-l", mnt).CombinedOutput(); err != nil {
			t.Errorf("unmounting %s: %v %s", mnt, err, out)
		}
	})
	return mnt
}

func machineMemory(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, _ := strconv.ParseInt(fields[1], 10, 64)
			return kb * 1024
		}
	}
	t.Fatal("no MemTotal in /proc/meminfo")
	return 0
}

// nodeWatch records the Node's condition and taint changes through an
// informer.
type nodeWatch struct {
	mu     sync.Mutex
	seen   map[string]bool
	notRdy []string
	stop   chan struct{}
}

func watchNode(t *testing.T, name string) *nodeWatch {
	t.Helper()
	w := &nodeWatch{seen: map[string]bool{}, stop: make(chan struct{})}
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
	}))
	inf := f.Core().V1().Nodes().Informer()
	record := func(obj any) {
		n, ok := obj.(*v1.Node)
		if !ok {
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, c := range n.Status.Conditions {
			w.seen["condition/"+string(c.Type)+"="+string(c.Status)] = true
			if c.Type == v1.NodeReady && c.Status != v1.ConditionTrue {
				w.notRdy = append(w.notRdy, fmt.Sprintf("%s %s: %s", time.Now().Format("15:04:05"), c.Reason, c.Message))
			}
		}
		for _, tn := range n.Spec.Taints {
			w.seen["taint/"+tn.Key+":"+string(tn.Effect)] = true
		}
	}
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: record, UpdateFunc: func(_, n any) { record(n) }})
	if err != nil {
		t.Fatal(err)
	}
	go inf.Run(w.stop)
	cache.WaitForCacheSync(w.stop, inf.HasSynced)
	t.Cleanup(func() { close(w.stop) })
	return w
}

func (w *nodeWatch) has(key string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen[key]
}

func (w *nodeWatch) notReady() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.notRdy...)
}

// A best-effort pod that fills memory and one that fills the disk are
// evicted (Failed, Evicted, a message naming the resource), and only them:
// the guaranteed pod is never touched. Under each pressure the node
// refuses what upstream refuses, the Node reports the condition and is
// tainted for it, and it stays Ready throughout.
func TestEvictionOfMemoryHogAndDiskFiller(t *testing.T) {
	name := node(t)
	ns := namespace(t)
	ctx := context.Background()

	fs := loopFS(t, evictFsSize)
	root, logs := filepath.Join(fs, "root"), filepath.Join(fs, "pod-logs")
	for _, d := range []string{root, logs} {
		if err := os.Mkdir(d, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	shared, err := os.ReadFile(filepath.Join(workDir, "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// This test's thresholds replace the shared ones (the last block of
	// the tests' disk settings); the rest of those settings stays.
	disk, err := framework.DiskConfig()
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(disk, "\nevictionHard:\n")
	if i < 0 || !strings.Contains(string(shared), disk) {
		t.Fatalf("the shared kubelet config lacks the tests' disk settings, or they have no evictionHard block:\n%s", shared)
	}
	shared = []byte(strings.Replace(string(shared), disk, disk[:i+1], 1))
	reserved := machineMemory(t) - evictAllocatable
	cfg := regexp.MustCompile(`(?m)^podLogsDir: .*$`).ReplaceAllString(string(shared), "podLogsDir: "+logs) + fmt.Sprintf(`cgroupRoot: /gokubelet-e2e-eviction
systemReserved:
  memory: "%d"
enforceNodeAllocatable: [pods]
evictionHard:
  memory.available: %s
  nodefs.available: %s
  imagefs.available: 2Gi
evictionPressureTransitionPeriod: %s
`, reserved, evictMemThreshold, evictFsThreshold, evictTransition)
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	k := swapKubelet(t, func(args []string) []string {
		return replaceArg(replaceArg(args, "--config", cfgPath), "--root-dir", root)
	})
	nw := watchNode(t, name)

	guaranteed := testPod("guaranteed")
	guaranteed.Spec.Containers[0].Resources = v1.ResourceRequirements{Limits: v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("64Mi")}}
	if _, err := client.CoreV1().Pods(ns).Create(ctx, guaranteed, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	g := waitPod(t, ns, "guaranteed", "Running", running)
	gID := g.Status.ContainerStatuses[0].ContainerID

	// Memory: busybox tail keeps a line without newline whole, 10MiB a
	// second.
	hog := testPod("memory-hog")
	hog.Spec.Containers[0].Command = []string{"sh", "-c", "(i=0; while [ $i -lt 100 ]; do head -c 10485760 /dev/zero; sleep 1; i=$((i+1)); done) | tail"}
	if _, err := client.CoreV1().Pods(ns).Create(ctx, hog, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	evicted := func(resourceName string) func(*v1.Pod) bool {
		return func(p *v1.Pod) bool {
			return p.Status.Phase == v1.PodFailed && p.Status.Reason == "Evicted" &&
				strings.Contains(p.Status.Message, "The node was low on resource: "+resourceName+".")
		}
	}
	within(t, 3*time.Minute, "the memory hog evicted", func() (bool, string) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, "memory-hog", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if c := p.Status.ContainerStatuses; len(c) > 0 && c[0].RestartCount > 0 {
			t.Fatalf("the hog was OOM-killed and restarted instead of evicted: %+v", c[0])
		}
		return evicted("memory")(p), fmt.Sprintf("%s %s %q", p.Status.Phase, p.Status.Reason, p.Status.Message)
	})
	// Under memory pressure a best-effort pod is refused (sent straight to
	// the node: the scheduler would keep it off the tainted node).
	refusedBE := testPod("refused-besteffort")
	refusedBE.Spec.NodeName = name
	if _, err := client.CoreV1().Pods(ns).Create(ctx, refusedBE, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, ns, "refused-besteffort", "refused under memory pressure", func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodFailed && p.Status.Reason == "Evicted" && strings.Contains(p.Status.Message, "MemoryPressure")
	})
	within(t, 2*time.Minute, "MemoryPressure reported and tainted", func() (bool, string) {
		return nw.has("condition/MemoryPressure=True") && nw.has("taint/node.kubernetes.io/memory-pressure:NoSchedule"), ""
	})
	within(t, 3*time.Minute, "MemoryPressure gone", func() (bool, string) {
		n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range n.Status.Conditions {
			if c.Type == v1.NodeMemoryPressure {
				return c.Status == v1.ConditionFalse, string(c.Status)
			}
		}
		return false, "no condition"
	})

	// Disk: an emptyDir on the node filesystem, 10MiB every half second.
	filler := testPod("disk-filler")
	filler.Spec.Containers[0].Command = []string{"sh", "-c", "i=0; while [ $i -lt 40 ]; do dd if=/dev/zero of=/data/f$i bs=1M count=10 2>/dev/null; i=$((i+1)); sleep 0.5; done; sleep 3600"}
	filler.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
	filler.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	if _, err := client.CoreV1().Pods(ns).Create(ctx, filler, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	within(t, 3*time.Minute, "the disk filler evicted", func() (bool, string) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, "disk-filler", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return evicted("ephemeral-storage")(p), fmt.Sprintf("%s %s %q", p.Status.Phase, p.Status.Reason, p.Status.Message)
	})
	// Under disk pressure every non-critical pod is refused.
	refused := testPod("refused-burstable")
	refused.Spec.NodeName = name
	refused.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("10m")}
	if _, err := client.CoreV1().Pods(ns).Create(ctx, refused, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, ns, "refused-burstable", "refused under disk pressure", func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodFailed && p.Status.Reason == "Evicted" && strings.Contains(p.Status.Message, "DiskPressure")
	})
	within(t, 2*time.Minute, "DiskPressure reported and tainted", func() (bool, string) {
		return nw.has("condition/DiskPressure=True") && nw.has("taint/node.kubernetes.io/disk-pressure:NoSchedule"), ""
	})

	// Only them: the guaranteed pod runs on, untouched; the node was Ready
	// all along.
	g = waitPod(t, ns, "guaranteed", "still Running", running)
	if cs := g.Status.ContainerStatuses[0]; cs.ContainerID != gID || cs.RestartCount != 0 {
		t.Errorf("the guaranteed pod was touched: %s -> %s, restarts %d", gID, cs.ContainerID, cs.RestartCount)
	}
	if nr := nw.notReady(); len(nr) > 0 {
		t.Errorf("the node was reported not Ready: %v", nr)
	}
	for _, line := range strings.Split(k.Log(), "\n") {
		if strings.Contains(line, "Eviction manager: evicting pod") && !strings.Contains(line, "memory-hog") && !strings.Contains(line, "disk-filler") {
			t.Errorf("another pod was evicted: %s", line)
		}
	}
	deleteAllPods(t, ns)
}
