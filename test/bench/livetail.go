package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The live log-tail workload, run by each kubelet at the end of its share
// of a round: one pod writes a log of about 100 MiB, then the request
// `kubectl logs --tail=N` makes (GET pods/log?tailLines=N through the API
// server to the kubelet's /containerLogs) is repeated, and the kubelet's
// CPU over the requests is divided by their number. CPU comes from
// /proc/<pid>/stat in 10 ms ticks, so the cheap request is repeated often
// enough for a tick to be small against the figure.

// liveTailContent is what the container writes: 100-byte lines. The CRI
// log adds a timestamp, the stream and a tag to each (about 41 bytes), so
// the file ends up near 106 MiB.
const liveTailContent = 75 << 20

// liveTailDone is the line the container writes after the content.
const liveTailDone = "bench-log-written"

// liveTails are the requests, each repeated `requests` times.
var liveTails = []struct {
	lines    int64
	requests int
}{{10, 50}, {10000, 10}}

func liveTailKey(lines int64) string { return fmt.Sprintf("tail-%d", lines) }

func liveTailPod() *v1.Pod {
	p := benchPod("logger")
	c := &p.Spec.Containers[0]
	c.Name = "log"
	line := strings.Repeat("x", 99) // yes adds the newline
	c.Command = []string{"sh", "-c", fmt.Sprintf("yes %s | head -c %d; echo %s; exec sleep 3600", line, liveTailContent, liveTailDone)}
	return p
}

func (b *bench) runLiveTail(ctx context.Context, kind, ns string, pid int) error {
	pods := b.cs.CoreV1().Pods(ns)
	if _, err := pods.Create(ctx, liveTailPod(), metav1.CreateOptions{}); err != nil {
		return err
	}
	one := int64(1)
	deadline := time.Now().Add(180 * time.Second)
	for {
		raw, err := pods.GetLogs("logger", &v1.PodLogOptions{TailLines: &one}).DoRaw(ctx)
		if err == nil && strings.TrimSpace(string(raw)) == liveTailDone {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("log tail: the log was not written after 180s (last: %v %q)", err, truncate(string(raw), 200))
		}
		time.Sleep(500 * time.Millisecond)
	}
	if size, err := b.liveTailLogSize(ctx, ns); err != nil {
		logf("log tail: size of the log: %v", err)
	} else {
		b.res.add(kind, "log-tail", "size_mib", float64(size)/(1<<20))
	}
	for _, lt := range liveTails {
		n := lt.lines
		_ = resetPeakRSS(pid)
		p0, err := readProc(pid)
		if err != nil {
			return err
		}
		start := time.Now()
		for i := 0; i < lt.requests; i++ {
			raw, err := pods.GetLogs("logger", &v1.PodLogOptions{TailLines: &n}).DoRaw(ctx)
			if err != nil {
				return fmt.Errorf("log tail %d: %w", n, err)
			}
			if got := bytes.Count(raw, []byte("\n")); int64(got) != n {
				return fmt.Errorf("log tail %d: %d lines returned", n, got)
			}
		}
		wall := time.Since(start)
		p1, err := readProc(pid)
		if err != nil {
			return err
		}
		key := liveTailKey(n)
		b.res.add(kind, key, "cpu_ms", 1000*float64(p1.cpuTicks-p0.cpuTicks)/clockTicks/float64(lt.requests))
		b.res.add(kind, key, "wall_ms", 1000*wall.Seconds()/float64(lt.requests))
		b.res.add(kind, key, "hwm_delta", float64(int64(p1.hwmKB)-int64(p0.rssKB))/1024)
	}
	return nil
}

// liveTailLogSize is the size of the logger's CRI log file.
func (b *bench) liveTailLogSize(ctx context.Context, ns string) (int64, error) {
	p, err := b.cs.CoreV1().Pods(ns).Get(ctx, "logger", metav1.GetOptions{})
	if err != nil {
		return 0, err
	}
	if len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].ContainerID == "" {
		return 0, fmt.Errorf("no container ID in the pod's status")
	}
	id := p.Status.ContainerStatuses[0].ContainerID
	if i := strings.Index(id, "://"); i >= 0 {
		id = id[i+3:]
	}
	st, err := b.rt.ContainerStatus(ctx, id, false)
	if err != nil {
		return 0, err
	}
	fi, err := os.Stat(st.GetStatus().GetLogPath())
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// liveTailTable renders the workload's figures: medians over rounds
// [min–max], and the paired ratio.
func (b *bench) liveTailTable() string {
	var sb strings.Builder
	size := b.res.get("ours", "log-tail", "size_mib")
	fmt.Fprintf(&sb, "### kubectl logs --tail on a %s MiB log (live kubelets)\n\n", FormatSpread(size))
	sb.WriteString("One pod writes 100-byte lines (75 MiB of output; the CRI log file's size is above) with both kubelets' `containerLogMaxSize` at 200Mi, so the log is one file; then `GET pods/log?tailLines=N` (what `kubectl logs --tail=N` sends) through the API server, repeated, every answer checked to have N lines. Kubelet CPU (utime+stime) over the requests divided by their number; peak RSS: VmHWM over the requests less VmRSS before them.\n\n")
	sb.WriteString("| request | figure | ours | upstream | ours/upstream |\n|---|---|---|---|---|\n")
	for _, lt := range liveTails {
		label := fmt.Sprintf("tail=%d (×%d)", lt.lines, lt.requests)
		for _, f := range []figure{{"cpu_ms", "kubelet CPU / request (ms)"}, {"wall_ms", "wall / request (ms)"}, {"hwm_delta", "kubelet peak RSS above start (MiB)"}} {
			key := liveTailKey(lt.lines)
			ours, up := b.res.get("ours", key, f.key), b.res.get("upstream", key, f.key)
			fmt.Fprintf(&sb, "| %s | %s | %s | %s | %s |\n", label, f.label, FormatSpread(ours), FormatSpread(up), FormatSpread(PairedRatios(ours, up)))
			label = ""
		}
	}
	sb.WriteString("\n")
	return sb.String()
}
