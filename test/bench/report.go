package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

type figure struct{ key, label string }

var (
	workloads = []struct{ key, label string }{
		{"start", "kubelet start on an empty runtime, fresh node"},
		{"batch-small", "batch of %d"},
		{"batch-large", "batch of %d"},
		{"stream", "stream of %d"},
		{"churn", "churn: delete %d"},
		{"exit", "exit: %d containers killed through CRI, one every %v (kill → terminated status)"},
		{"volumes", "volumes: stream of %d pods, each with a configMap, a secret, the service-account token and an emptyDir"},
		{"csi", "CSI: stream of %d pods, each with a pre-provisioned volume of upstream's mock driver"},
	}
	startFigs = []figure{
		{"reg", "process start → node registered (s)"}, {"ready", "process start → node Ready (s)"},
		{"rss0", "kubelet RSS, Ready, no pods (MiB)"}, {"rss0_anon", "… anonymous (MiB)"}, {"rss0_file", "… file-backed (MiB)"},
	}
	latencyFigs = []figure{
		{"p50", "p50 (s)"}, {"p90", "p90 (s)"}, {"p99", "p99 (s)"}, {"max", "max (s)"}, {"batch", "whole batch (s)"},
	}
	resourceFigs = []figure{
		{"cpu", "kubelet CPU (s)"},
		{"cpu_cp", "control plane CPU: etcd, kube-apiserver, -scheduler, -controller-manager, add-ons (s)"},
		{"cpu_machine", "machine CPU, every process and the kernel (s)"},
		{"hwm", "kubelet peak RSS (MiB)"}, {"rss_idle", "kubelet RSS idle, pods running (MiB)"},
		{"rss_idle_anon", "… anonymous (MiB)"}, {"rss_idle_file", "… file-backed (MiB)"},
		{"reqs", "API requests / pod"},
	}
	phaseFigs = []figure{
		{"ph_sched", "create → scheduled (s)"}, {"ph_status", "scheduled → first kubelet status (s)"},
		{"ph_running", "first kubelet status → running (s)"},
		{"ph_report", "container started (runtime's StartedAt) → running seen by the driver (s)"},
	}
	// Our kubelet only: the same path split with its log (-v=2 lines).
	logPhaseFigs = []figure{
		{"lg_seen", "scheduled (watch) → kubelet ADD (log)"}, {"lg_sandbox", "ADD → sandbox created (admission, dispatch, RunPodSandbox)"},
		{"lg_container", "sandbox → container started (ImageStatus, Create, Start)"},
		{"lg_report", "container started → running seen by the driver (status, patch, watch)"},
	}
)

func (b *bench) wlLabel(key, label string) string {
	n := b.opt.batchSmall
	switch key {
	case "start":
		return label
	case "batch-large", "churn":
		n = b.opt.batchLarge
	case "stream":
		n = b.opt.streamN
	case "csi":
		return fmt.Sprintf(label+" (1 / %v)", b.opt.csiPods, b.opt.csiEvery)
	case "volumes":
		return fmt.Sprintf(label+" (1 / %v)", b.opt.volPods, b.opt.volEvery)
	case "exit":
		return fmt.Sprintf(label, b.opt.exitPods, b.opt.exitEvery)
	}
	if key == "stream" {
		return fmt.Sprintf(label+" (1 / %v)", n, b.opt.streamEvery)
	}
	return fmt.Sprintf(label, n)
}

// table renders the main table: medians over rounds with [min–max], and
// per-round paired ratios (median [min–max]).
func (b *bench) table() string {
	var sb strings.Builder
	sb.WriteString("| workload | figure | ours | upstream | floor (CRI) | ours/upstream | ours/floor | upstream/floor |\n")
	sb.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, wl := range workloads {
		label := b.wlLabel(wl.key, wl.label)
		if wl.key == "churn" {
			label += " (delete → DELETED)"
		}
		for _, f := range append(append(append([]figure{}, startFigs...), latencyFigs...), resourceFigs...) {
			ours, up, fl := b.res.get("ours", wl.key, f.key), b.res.get("upstream", wl.key, f.key), b.res.get("floor", wl.key, f.key)
			if len(ours) == 0 && len(up) == 0 {
				continue
			}
			fmt.Fprintf(&sb, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", label, f.label,
				FormatSpread(ours), FormatSpread(up), FormatSpread(fl),
				FormatSpread(PairedRatios(ours, up)), FormatSpread(PairedRatios(ours, fl)), FormatSpread(PairedRatios(up, fl)))
			label = ""
		}
	}
	return sb.String()
}

func (b *bench) phaseTable() string {
	var sb strings.Builder
	sb.WriteString("| workload | phase (per-pod median) | ours | upstream | ours/upstream |\n|---|---|---|---|---|\n")
	for _, wl := range workloads {
		if wl.key == "churn" || wl.key == "exit" || wl.key == "start" {
			continue
		}
		label := b.wlLabel(wl.key, wl.label)
		for _, f := range phaseFigs {
			ours, up := b.res.get("ours", wl.key, f.key), b.res.get("upstream", wl.key, f.key)
			if len(ours) == 0 && len(up) == 0 {
				continue
			}
			fmt.Fprintf(&sb, "| %s | %s | %s | %s | %s |\n", label, f.label, FormatSpread(ours), FormatSpread(up), FormatSpread(PairedRatios(ours, up)))
			label = ""
		}
		for _, f := range logPhaseFigs {
			ours := b.res.get("ours", wl.key, f.key)
			fmt.Fprintf(&sb, "| | ours: %s (s) | %s | | |\n", f.label, FormatSpread(ours))
		}
	}
	return sb.String()
}

// exitTable sets our kubelet's exit latencies with the runtime's event
// stream beside its own with the relist alone (the relist-only run, on the
// runtime behind the proxy that streams nothing), and upstream's.
func (b *bench) exitTable() string {
	var sb strings.Builder
	sb.WriteString("| kill → terminated status (s) | ours, event stream + relist | ours, relist alone | upstream | events/relist alone (ours) | ours relist alone/upstream |\n|---|---|---|---|---|---|\n")
	for _, f := range latencyFigs {
		ev, rl, up := b.res.get("ours", "exit", f.key), b.res.get(kindRelist, "exit", f.key), b.res.get("upstream", "exit", f.key)
		if len(ev) == 0 && len(rl) == 0 && len(up) == 0 {
			continue
		}
		fmt.Fprintf(&sb, "| %s | %s | %s | %s | %s | %s |\n", f.label, FormatSpread(ev), FormatSpread(rl), FormatSpread(up),
			FormatSpread(PairedRatios(ev, rl)), FormatSpread(PairedRatios(rl, up)))
	}
	return sb.String()
}

// floorTable sets the floor's CRI calls beside our kubelet's span of the same
// steps (from its log), for runc and, when it runs here, crun.
func (b *bench) floorTable() string {
	var sb strings.Builder
	sb.WriteString("| workload | step (per-pod median, s) | ours (log) | floor, runc | floor, crun | ours/floor (runc) | crun/runc |\n|---|---|---|---|---|---|---|\n")
	rows := []struct{ label, ours, floor string }{
		{"startup p50", "p50", "p50"},
		{"sandbox: ours ADD → sandbox created; floor RunPodSandbox", "lg_sandbox", "cri_sandbox"},
		{"container: ours sandbox → container started; floor CreateContainer + StartContainer", "lg_container", "cri_container"},
		{"… floor CreateContainer", "", "cri_create"},
		{"… floor StartContainer", "", "cri_start"},
	}
	for _, wl := range workloads {
		if wl.key != "batch-small" && wl.key != "batch-large" && wl.key != "stream" {
			continue
		}
		label := b.wlLabel(wl.key, wl.label)
		for _, r := range rows {
			var ours []float64
			if r.ours != "" {
				ours = b.res.get("ours", wl.key, r.ours)
			}
			runc, crun := b.res.get("floor", wl.key, r.floor), b.res.get("floor-crun", wl.key, r.floor)
			fmt.Fprintf(&sb, "| %s | %s | %s | %s | %s | %s | %s |\n", label, r.label, FormatSpread(ours), FormatSpread(runc), FormatSpread(crun),
				FormatSpread(PairedRatios(ours, runc)), FormatSpread(PairedRatios(crun, runc)))
			label = ""
		}
	}
	if b.crun.note != "" {
		fmt.Fprintf(&sb, "\ncrun: %s\n", b.crun.note)
	} else {
		sb.WriteString("\ncrun: not installed (hack/install-deps.sh adds Debian's, optional, when it installs packages), so it has no column.\n")
	}
	return sb.String()
}

// runtimeOpsTable: the runtime calls each kubelet made per pod, by operation
// type, over each startup workload's window.
func (b *bench) runtimeOpsTable() string {
	var sb strings.Builder
	sb.WriteString("| workload | CRI calls per pod | ours | upstream | ours/upstream |\n|---|---|---|---|---|\n")
	for _, wl := range workloads {
		if wl.key != "batch-small" && wl.key != "batch-large" && wl.key != "stream" {
			continue
		}
		ops := map[string]bool{}
		for _, kind := range []string{"ours", "upstream"} {
			for fig := range b.res[kind][wl.key] {
				if op, ok := strings.CutPrefix(fig, "ops:"); ok {
					ops[op] = true
				}
			}
		}
		if len(b.res.get("ours", wl.key, "ops")) == 0 && len(b.res.get("upstream", wl.key, "ops")) == 0 {
			continue
		}
		label := b.wlLabel(wl.key, wl.label)
		for _, op := range append([]string{""}, slices.Sorted(maps.Keys(ops))...) {
			f, name := "ops:"+op, op
			if op == "" {
				f, name = "ops", "all"
			}
			ours, up := b.res.get("ours", wl.key, f), b.res.get("upstream", wl.key, f)
			if op != "" && !anyNonZero(ours) && !anyNonZero(up) {
				continue
			}
			fmt.Fprintf(&sb, "| %s | %s | %s | %s | %s |\n", label, name, FormatSpread(ours), FormatSpread(up), FormatSpread(PairedRatios(ours, up)))
			label = ""
		}
	}
	return sb.String()
}

func (b *bench) report(m machine, table string) string {
	o := b.opt
	var sb strings.Builder
	fmt.Fprintf(&sb, `# Benchmarks: our kubelet side by side with the upstream kubelet

Written by `+"`make bench`"+` (hack/bench.sh, test/bench). Do not edit the generated
part by hand; re-run `+"`make bench`"+` instead.

## Run

| | |
|---|---|
| date | %s |
| our kubelet | commit %s |
| upstream kubelet | %s (same version as the control plane: %s) |
| kubelet binaries, loaded part (the ELF sections mapped into memory: the stripped size) | %s |
| container runtime | %s (dedicated instance `+"`bench`"+`, runc, overlayfs/native per hack/containerd.sh) |
| kernel | %s |
| machine | %d CPUs, %.1f GiB memory |
| rounds | %d (each: ours, upstream, ours with the relist alone (exit workload), floor) |
| wall time of the measurement | %s |

## Method

- The local cluster (`+"`hack/cluster.sh up`"+` with CLUSTER_NODE=0; `+"`hack/node.sh stop`"+` first)
  runs etcd, kube-apiserver, kube-controller-manager and kube-scheduler on this machine, and
  with its add-ons (the default) kube-proxy, CoreDNS and metrics-server, which scrapes each
  kubelet's resource metrics every 15 s. Each kubelet joins it with the same identity
  (`+"`node.kubeconfig`"+`, NODE_NAME and NODE_IP from kubelet-env; clusterDomain and, with the
  add-ons, clusterDNS from there as `+"`hack/node.sh`"+` configures a node) on the same dedicated containerd (`+"`hack/containerd.sh up bench`"+`, images imported
  by `+"`hack/images.sh bench`"+`, so no pulls). Before each kubelet starts, every CRI pod is removed
  and the Node object is deleted, so each run registers a fresh node on an empty runtime. The whole
  benchmark holds `+"`/run/gokubelet/cluster.lock`"+`.
- Rounds alternate: ours, upstream, ours relist-only, floor in odd rounds; upstream, ours, ours
  relist-only, floor in even ones, so that neither kubelet always runs first after the floor's
  clear. Before each kubelet starts, and before the large batch, the stream and each floor
  workload, the driver waits (at most 30 s, `+"`-quiet`"+`) for a 2 s window with the machine's CPU
  at least 75%% idle, so the work the previous workload left to the runtime and the kernel is not
  charged to the next one; the log says how long each wait took. Both kubelets run at `+"`-v=%d`"+`
  with their default API QPS (50/100) and their own --root-dir, podLogsDir and healthz port.
  Both serve the kubelet API with the cluster's kubelet serving certificate, x509-only
  authentication (webhook and anonymous off) and authorization `+"`AlwaysAllow`"+`. The upstream
  kubelet's configuration adds what it needs here: `+"`failCgroupV1: false`"+`,
  `+"`cgroupDriver: cgroupfs`"+`, `+"`failSwapOn: false`"+`, `+"`resolvConf`"+` and `+"`--cert-dir`"+` under its
  root dir.
- Pods: one container `+"`%s`"+` running `+"`sleep 3600`"+`, imagePullPolicy IfNotPresent,
  terminationGracePeriodSeconds 1 (sleep as PID 1 ignores SIGTERM), no service-account token,
  scheduled by kube-scheduler.
- Workloads per kubelet and round, in this order on an otherwise empty node: a batch of %d pods
  created at once (one create call per pod, all in parallel; client QPS 1000), then deleted; a
  batch of %d the same way, left running for %v (idle RSS); churn: the %d pods deleted at once; a
  steady stream of %d pods, one every %v, then deleted; then the exit workload: %d pods (restartPolicy
  Never) running, whose containers the driver kills straight through CRI (StopContainer, no grace:
  as an OOM kill or a crash ends them), one every %v, timed from StopContainer's return to the
  first watch event showing the container terminated (a kubelet that relists every second sees an
  exit up to a second late; one that follows the runtime's event stream, at once; the relist-only
  run below measures ours without the stream); then the volumes workload: %d pods, one every %v,
  each mounting a configMap, a secret, the projected service-account token (automounted: the
  kubelet requests the token) and an emptyDir; then the CSI workload: upstream's mock CSI
  driver (`+"`hack/csi-mock`"+`, the driver of upstream's csi-mock e2e specs) started and registered
  through this kubelet's plugins_registry, %d volumes created in it with CreateVolume (as a
  provisioner would) and bound to claims before any pod exists, then %d pods, one every %v, each
  mounting its own claim (CSIDriver: no attach; the mock stages, so each volume is staged and
  published), then deleted, waiting until every volume is unstaged. The mock mounts nothing:
  the figure is the kubelet's share of a CSI volume's set-up (the claim, volume and CSIDriver
  reads, NodeStageVolume, NodePublishVolume, their bookkeeping). It has no floor.
- Startup latency per pod (the upstream pod-startup SLI, no pulls): from the moment the driver
  issued the create call to the arrival of the first watch event showing every container running
  (driver clock, sub-millisecond; never the API's 1 s timestamps). "Whole batch": first create
  issued to the last pod running. Deletion: from the delete call to the watch's DELETED event.
- Kubelet start: from just before the process is started to the driver's first watch event of
  the Node object (registered) and of it Ready, on a runtime with no pods and with the Node object
  deleted; then, 3 s later, its RSS with no pods. RSS is VmRSS, split into RssAnon (the process's
  own memory) and RssFile (file-backed: mostly the pages of the kubelet's own binary that are
  mapped in).
- Kubelet CPU: utime+stime from /proc/<pid>/stat over the workload's window (from its first call
  to 3 s after it completed; %v for the large batch). Peak RSS: VmHWM over the same window (reset
  through /proc/<pid>/clear_refs at its start). Idle RSS: VmRSS with the large batch running,
  %v after the last pod started; each kubelet's heap profile at that moment is kept beside its
  log (`+"`<kind>-r<round>-heap-idle.pb.gz`"+`, for `+"`go tool pprof`"+`).
- Machine and control plane CPU, over the same windows: the busy time of /proc/stat (every
  process and the kernel, all CPUs), and utime+stime of the processes whose pid files
  hack/cluster.sh keeps (etcd, kube-apiserver, kube-scheduler, kube-controller-manager,
  kube-proxy, CoreDNS, metrics-server; one that restarts within the window is left out). The
  floor's window runs from its first CRI call until as long after its last start as the
  kubelets' windows stay open after their last pod ran. The floor starts its pods with the
  control plane idle; a kubelet's come through it, on the same CPUs as the runtime.
- API requests per pod, from the API server's side: the increase of
  `+"`apiserver_flowcontrol_dispatched_requests_total`"+` for the flow schemas that match group
  system:nodes (`+"`system-nodes`"+`, `+"`system-node-high`"+`; only the kubelet under test uses that
  group) over the workload's window, divided by its pods. Node-status and lease heartbeats inside
  the window are included.
- Floor: the same batches (and the same stream) straight through CRI with cri-client —
  RunPodSandbox, CreateContainer, StartContainer per pod, one goroutine per pod, through the
  start gate our kubelet uses (pkg/runtime/startgate: at most `+"`-floor-slots`"+` sandbox or
  container starts at once, oldest pod first, a call slower than 5 s no longer counting; the
  default is our kubelet's limit, 4 per CPU), so that the floor runs at our kubelet's
  parallelism. Latency: first CRI call issued (the wait for the gate included) to StartContainer
  returned. Each call is timed too, without the wait. When Debian's crun is installed,
  one pod with the runtime handler crun (hack/containerd.sh configures it: the same shim, crun as
  its binary) is tried first; if it starts, each round runs the floor once more with crun.
- Relist-only: in each round, after the two kubelets, our kubelet runs again (a fresh node, as
  above) for the exit workload alone, on the same containerd reached through a proxy
  (test/bench/noevents.go) that passes every CRI call through except GetContainerEvents, which it
  answers Unimplemented, as containerd 1.6 does. Our PLEG then relists alone, every second; the
  run fails unless the kubelet's log says so. Same binary, configuration and runtime: the two
  columns differ by the event stream only.
- Log reads, last in each kubelet's share of a round: see the section of that name below.
- Every cell: median over rounds [min–max across rounds]. Ratios are computed per round between
  runs of the same round (paired), then median [min–max] over rounds.

## Results

%s
### Where the startup time goes (driver-observed, per-pod medians)

"First kubelet status" is the first watch event with the kubelet's Initialized condition.
"Container started → running seen" is the kubelet's share of reporting a start: from the
runtime's own StartedAt of the container (CRI ContainerStatus, nanoseconds, read after the
workload) to the first watch event showing it running.

%s
### Exits: the event stream against the relist alone

The exit workload (see Method) for our kubelet as it runs on containerd 2, which streams container
events (CRI GetContainerEvents; an exit makes the PLEG relist at once, and a relist every 10 s
stays the safety net), beside the same kubelet on the same runtime with no event stream, relisting
alone every second (the relist-only run), and beside upstream (its generic PLEG relists every second).

%s
### The floor's CRI calls beside ours

Each floor pod times its three CRI calls; our kubelet's span of the same steps comes from its
log (from the pod's ADD, so it includes admission and dispatch; from the sandbox to the started
container, so it includes ImageStatus). The remaining distance to the floor is in these rows.

%s
### The runtime calls each kubelet makes

The floor makes three calls per pod (RunPodSandbox, CreateContainer, StartContainer). Each
kubelet counts its own in `+"`kubelet_runtime_operations_total`"+` by operation type; read from its
`+"`/metrics`"+` (through the API server's node proxy) before and after each workload's window,
divided by the workload's pods. The relists of the window (each listing sandboxes and containers:
upstream's about one a second; ours one every 10 s with containerd 2's event stream, plus one for
each change the stream reports that the kubelet did not make) are included.

%s
`, m.date, m.commit, m.upstream, m.server, m.images, m.runtime, m.kernel, m.cpus, m.memGiB, o.rounds, m.duration.Round(1e9),
		o.verbosity, testImage, o.batchSmall, o.batchLarge, o.settleIdle, o.batchLarge, o.streamN, o.streamEvery,
		o.exitPods, o.exitEvery, o.volPods, o.volEvery, o.csiPods, o.csiPods, o.csiEvery, o.settleIdle, o.settleIdle, table, b.phaseTable(), b.exitTable(), b.floorTable(), b.runtimeOpsTable())
	sb.WriteString(b.liveTailTable())
	if len(b.fails) > 0 {
		sb.WriteString("### Failed runs (their figures are missing above)\n\n")
		for _, f := range b.fails {
			fmt.Fprintf(&sb, "- %s\n", strings.ReplaceAll(f, "\n", " "))
		}
		sb.WriteString("\n")
	}
	return sb.String()
}

func anyNonZero(xs []float64) bool {
	for _, x := range xs {
		if x != 0 {
			return true
		}
	}
	return false
}
