package stats

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// measuredVolumePlugins are the volume kinds whose usage is measured: the
// ones whose data lives in a directory of the pod under the kubelet's root
// (emptyDir on disk, and the API-projected kinds). hostPath and other
// volumes are not the pod's to account.
var measuredVolumePlugins = map[string]bool{
	"kubernetes.io~empty-dir":    true,
	"kubernetes.io~configmap":    true,
	"kubernetes.io~secret":       true,
	"kubernetes.io~projected":    true,
	"kubernetes.io~downward-api": true,
}

// podVolume is one measured volume directory of a pod.
type podVolume struct {
	Name string
	Path string
}

// listPodVolumes lists <rootDir>/pods/<uid>/volumes/<plugin>/<name> for
// the measured plugins, ordered by name.
func listPodVolumes(rootDir string, uid types.UID) []podVolume {
	base := filepath.Join(rootDir, "pods", string(uid), "volumes")
	plugins, err := os.ReadDir(base)
	if err != nil {
		return nil
	}
	var out []podVolume
	for _, p := range plugins {
		if !p.IsDir() || !measuredVolumePlugins[p.Name()] {
			continue
		}
		vols, err := os.ReadDir(filepath.Join(base, p.Name()))
		if err != nil {
			continue
		}
		for _, v := range vols {
			if v.IsDir() && !strings.HasPrefix(v.Name(), ".") {
				out = append(out, podVolume{Name: v.Name(), Path: filepath.Join(base, p.Name(), v.Name())})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// volumeUsage is a cached du of one volume directory.
type volumeUsage struct {
	usage      DiskUsage
	fs         FsInfo
	measuredAt time.Time
	// lastAsked lets entries of departed volumes expire.
	lastAsked time.Time
	running   bool
	done      chan struct{}
	// lastErr is the last failure logged ("" after a success); a
	// failed measurement is tried again a period after failedAt.
	lastErr  string
	failedAt time.Time
}

// volumeCache measures volume directories in the background, at most once
// per period each, and only for volumes someone asked about: a walk of a
// large emptyDir never runs on a request's path for longer than the
// request is willing to wait, and never on the pod start path.
type volumeCache struct {
	period time.Duration
	clock  clock.PassiveClock
	// measure is du plus statfs; replaced in tests.
	measure func(path string) (DiskUsage, FsInfo, error)

	mu      sync.Mutex
	entries map[string]*volumeUsage
	// slots bounds concurrent walks.
	slots chan struct{}
}

func newVolumeCache(period time.Duration, clk clock.PassiveClock) *volumeCache {
	return &volumeCache{period: period, clock: clk, entries: map[string]*volumeUsage{}, slots: make(chan struct{}, 2),
		measure: func(p string) (DiskUsage, FsInfo, error) {
			u, err := du(p)
			if err != nil {
				return u, FsInfo{}, err
			}
			fi, err := fsInfo(p)
			return u, fi, err
		}}
}

// get returns the latest measurement of path, starting a new one when none
// is fresh. When there is none yet it waits for the new one until
// deadline.
func (c *volumeCache) get(path string, deadline time.Time) (DiskUsage, FsInfo, time.Time, bool) {
	return c.getWith(path, func() (DiskUsage, FsInfo, error) { return c.measure(path) }, true, deadline)
}

// getWith is get for a measurement of key that measure makes; walk says
// it walks a directory (walks share a few slots; a driver's answer, which
// is bounded by its own timeout, does not wait for them).
func (c *volumeCache) getWith(key string, measure func() (DiskUsage, FsInfo, error), walk bool, deadline time.Time) (DiskUsage, FsInfo, time.Time, bool) {
	now := c.clock.Now()
	c.mu.Lock()
	e := c.entries[key]
	if e == nil {
		e = &volumeUsage{}
		c.entries[key] = e
	}
	e.lastAsked = now
	if !e.running && (e.measuredAt.IsZero() || now.Sub(e.measuredAt) >= c.period) &&
		(e.failedAt.IsZero() || now.Sub(e.failedAt) >= c.period) {
		e.running = true
		e.done = make(chan struct{})
		go c.run(key, e, measure, walk)
	}
	done, have := e.done, !e.measuredAt.IsZero()
	c.mu.Unlock()
	if !have && done != nil {
		if wait := time.Until(deadline); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-done:
			case <-t.C:
			}
			t.Stop()
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.measuredAt.IsZero() {
		return DiskUsage{}, FsInfo{}, time.Time{}, false
	}
	return e.usage, e.fs, e.measuredAt, true
}

// ErrUsageNotReported is a measurement the volume's driver does not offer
// (a CSI driver without GET_VOLUME_STATS): the volume is left out of the
// stats, as upstream, and one log line says so.
var ErrUsageNotReported = errors.New("the volume's driver does not report its usage")

func (c *volumeCache) run(key string, e *volumeUsage, measure func() (DiskUsage, FsInfo, error), walk bool) {
	if walk {
		c.slots <- struct{}{}
	}
	u, fi, err := measure()
	if walk {
		<-c.slots
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e.running = false
	close(e.done)
	if err != nil {
		e.failedAt = c.clock.Now()
		// A failure is logged when it is new (a driver failing every
		// period says so once, and again when it recovers).
		switch msg := err.Error(); {
		case os.IsNotExist(err):
		case msg == e.lastErr:
			klog.V(4).InfoS("Measuring volume usage still fails", "volume", key, "err", err)
		case errors.Is(err, ErrUsageNotReported):
			e.lastErr = msg
			klog.InfoS("Volume usage not reported", "volume", key, "reason", err)
		case walk:
			e.lastErr = msg
			klog.V(2).InfoS("Measuring volume usage failed", "path", key, "err", err)
		default:
			e.lastErr = msg
			klog.ErrorS(err, "Measuring volume usage failed", "volume", key)
		}
		return
	}
	if e.lastErr != "" {
		klog.InfoS("Measuring volume usage works again", "volume", key)
		e.lastErr = ""
	}
	e.failedAt = time.Time{}
	e.usage, e.fs, e.measuredAt = u, fi, c.clock.Now()
}

// expire drops entries nobody asked about for a few periods.
func (c *volumeCache) expire() {
	now := c.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for p, e := range c.entries {
		if !e.running && now.Sub(e.lastAsked) > 3*c.period {
			delete(c.entries, p)
		}
	}
}
