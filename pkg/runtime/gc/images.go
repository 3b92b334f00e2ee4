package gc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/distribution/reference"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/gokubelet/kubelet/pkg/metrics"
)

// ImagePolicy is the image GC configuration (KubeletConfiguration's).
type ImagePolicy struct {
	// HighThresholdPercent of the image filesystem's usage starts a
	// collection; LowThresholdPercent is where it stops.
	HighThresholdPercent int
	LowThresholdPercent  int
	// MinAge: images first seen more recently stay.
	MinAge time.Duration
	// MaxAge > 0: images unused for longer go whatever the usage.
	MaxAge time.Duration
}

// ImageRecord is what the collector knows about one image.
type ImageRecord struct {
	ID            string
	Size          int64
	FirstDetected time.Time
	LastUsed      time.Time
	// Keep: in use, pinned or the sandbox image.
	Keep bool
}

// EvictionOrder returns the images that may go, least recently used
// first (first detected first among equals).
func EvictionOrder(recs []ImageRecord) []ImageRecord {
	var out []ImageRecord
	for _, r := range recs {
		if !r.Keep {
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].LastUsed.Equal(out[j].LastUsed) {
			return out[i].FirstDetected.Before(out[j].FirstDetected)
		}
		return out[i].LastUsed.Before(out[j].LastUsed)
	})
	return out
}

// SelectImages picks, from candidates in eviction order, the images to
// remove at now to free bytesToFree: images used at or after now and
// images younger than minAge are skipped; it stops once enough is freed.
func SelectImages(candidates []ImageRecord, bytesToFree int64, now time.Time, minAge time.Duration) []ImageRecord {
	var out []ImageRecord
	var freed int64
	for _, r := range candidates {
		if freed >= bytesToFree {
			break
		}
		if !r.LastUsed.Before(now) || now.Sub(r.FirstDetected) < minAge {
			continue
		}
		out = append(out, r)
		freed += r.Size
	}
	return out
}

// Disabled reports whether the periodic collection is off, as upstream
// documents it: imageGCHighThresholdPercent 100 and no imageMaximumGCAge.
// The eviction manager may still reclaim unused images under disk
// pressure (DeleteUnusedImages).
func Disabled(p ImagePolicy) bool {
	return p.HighThresholdPercent >= 100 && p.MaxAge <= 0
}

// BytesToFree is what a collection must free: nothing below the high
// threshold, else down to the low one.
func BytesToFree(capacity, available int64, p ImagePolicy) int64 {
	if capacity <= 0 {
		return 0
	}
	if available > capacity {
		available = capacity
	}
	usage := 100 - int(available*100/capacity)
	if usage < p.HighThresholdPercent {
		return 0
	}
	return capacity*int64(100-p.LowThresholdPercent)/100 - available
}

// ImageGC collects unused images through the CRI.
type ImageGC struct {
	Images  cri.ImageManagerService
	Runtime cri.RuntimeService
	Policy  ImagePolicy
	// Protected are image names never removed (the sandbox image).
	Protected func(ctx context.Context) []string
	// InUse, when set, returns the images pods use other than as their
	// containers' images, as the pod specs write them (the references of
	// the image volumes of the pods on the node): in use, as a container's
	// image is, without asking the runtime for every container's mounts.
	InUse    func(ctx context.Context) []string
	Recorder record.EventRecorder
	NodeRef  *v1.ObjectReference
	Clock    clock.Clock
	// AfterCollect, when set, is called after each collection (the
	// periodic one, whatever it removed, and DeleteUnusedImages) with the
	// IDs of the images still on the node and the time their listing
	// began: the image pull records prune the records of other images
	// (KubeletEnsureSecretPulledImages).
	AfterCollect func(ctx context.Context, present []string, listedAt time.Time)

	mu      sync.Mutex
	records map[string]*ImageRecord
	started time.Time
	// listed is the last ListImages result, less what was removed since
	// (see Listed). pulls counts the pulls reported; listedPulls is the
	// count when the listing started (older: see Relist).
	listed      []*runtimeapi.Image
	haveList    bool
	pulls       uint64
	listedPulls uint64
}

// ImagePeriod is how often images are collected (upstream's).
const ImagePeriod = 5 * time.Minute

// Event reasons on the node (upstream's).
const (
	eventFreeDiskSpaceFailed = "FreeDiskSpaceFailed"
	eventInvalidDiskCapacity = "InvalidDiskCapacity"
)

func (g *ImageGC) clock() clock.Clock {
	if g.Clock == nil {
		return clock.RealClock{}
	}
	return g.Clock
}

// Start collects every ImagePeriod until ctx ends, detecting images (and
// which are in use) at once so ages count from the kubelet's start.
func (g *ImageGC) Start(ctx context.Context) error {
	log := klog.FromContext(ctx).WithName("image-gc")
	ctx = klog.NewContext(ctx, log)
	g.mu.Lock()
	g.started = g.clock().Now()
	g.mu.Unlock()
	if _, err := g.detect(ctx, g.clock().Now()); err != nil {
		log.V(2).Info("Detecting images failed", "err", err)
	}
	if Disabled(g.Policy) {
		log.Info("Image garbage collection is disabled: imageGCHighThresholdPercent is 100 and imageMaximumGCAge is 0")
		<-ctx.Done()
		return nil
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-g.clock().After(ImagePeriod):
		}
		if err := g.GarbageCollect(ctx); err != nil {
			log.Error(err, "Image garbage collection failed")
		}
	}
}

// GarbageCollect runs one collection: images past MaxAge, then images
// by least recent use while usage is over the high threshold.
func (g *ImageGC) GarbageCollect(ctx context.Context) error {
	now := g.clock().Now()
	recs, err := g.detect(ctx, now)
	if err != nil {
		return err
	}
	defer g.afterCollect(ctx, now)
	cands := EvictionOrder(recs)
	var errs []error
	g.mu.Lock()
	started := g.started
	g.mu.Unlock()
	if g.Policy.MaxAge > 0 && now.Sub(started) > g.Policy.MaxAge {
		var left []ImageRecord
		for _, r := range cands {
			if now.Sub(r.LastUsed) > g.Policy.MaxAge {
				if err := g.remove(ctx, r, "age"); err != nil {
					errs = append(errs, err)
					left = append(left, r)
				}
				continue
			}
			left = append(left, r)
		}
		cands = left
	}
	capacity, available, err := g.fsUsage(ctx)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	if capacity == 0 {
		err := errors.New("invalid capacity 0 on image filesystem")
		g.event(eventInvalidDiskCapacity, err.Error())
		return errors.Join(append(errs, err)...)
	}
	need := BytesToFree(capacity, available, g.Policy)
	if need <= 0 {
		return errors.Join(errs...)
	}
	klog.FromContext(ctx).Info("Disk usage on image filesystem is over the high threshold, trying to free bytes down to the low threshold",
		"usage", 100-int(available*100/capacity), "highThreshold", g.Policy.HighThresholdPercent, "amountToFree", need, "lowThreshold", g.Policy.LowThresholdPercent)
	freed := int64(0)
	for _, r := range SelectImages(cands, need, now, g.Policy.MinAge) {
		if err := g.remove(ctx, r, "space"); err != nil {
			errs = append(errs, err)
			continue
		}
		freed += r.Size
	}
	if freed < need {
		err := fmt.Errorf("Failed to garbage collect required amount of images. Attempted to free %d bytes, but only found %d bytes eligible to free.", need, freed)
		g.event(eventFreeDiskSpaceFailed, err.Error())
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// DeleteUnusedImages is the eviction manager's reclaimer: every image
// that may go.
func (g *ImageGC) DeleteUnusedImages(ctx context.Context) error {
	now := g.clock().Now()
	recs, err := g.detect(ctx, now)
	if err != nil {
		return err
	}
	defer g.afterCollect(ctx, now)
	var errs []error
	for _, r := range SelectImages(EvictionOrder(recs), math.MaxInt64, now, g.Policy.MinAge) {
		if err := g.remove(ctx, r, "pressure"); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// afterCollect calls AfterCollect with the images of the listing begun
// at listedAt, less those removed since.
func (g *ImageGC) afterCollect(ctx context.Context, listedAt time.Time) {
	if g.AfterCollect == nil {
		return
	}
	g.mu.Lock()
	present := make([]string, 0, len(g.records))
	for id := range g.records {
		present = append(present, id)
	}
	g.mu.Unlock()
	sort.Strings(present)
	g.AfterCollect(ctx, present, listedAt)
}

func (g *ImageGC) event(reason, msg string) {
	if g.Recorder != nil && g.NodeRef != nil {
		g.Recorder.Event(g.NodeRef, v1.EventTypeWarning, reason, msg)
	}
}

func (g *ImageGC) remove(ctx context.Context, r ImageRecord, why string) error {
	klog.FromContext(ctx).Info("Removing image to free bytes", "imageID", r.ID, "size", r.Size, "reason", why)
	if err := g.Images.RemoveImage(ctx, &runtimeapi.ImageSpec{Image: r.ID}); err != nil && !notFound(err) {
		return fmt.Errorf("removing image %s: %w", r.ID, err)
	}
	g.mu.Lock()
	delete(g.records, r.ID)
	g.forgetListedLocked(r.ID)
	g.mu.Unlock()
	metrics.ImageGarbageCollectedTotal.WithLabelValues(collectedReason(why)).Inc()
	return nil
}

// collectedReason is kubelet_image_garbage_collected_total's reason label:
// upstream's "age" or "space" (a removal for disk pressure frees space).
func collectedReason(why string) string {
	if why == "age" {
		return "age"
	}
	return "space"
}

// detect lists the images and the containers, records first detection and
// last use (now for every image a container refers to), and returns the
// records.
func (g *ImageGC) detect(ctx context.Context, now time.Time) ([]ImageRecord, error) {
	pulls := g.pullCount()
	imgs, err := g.Images.ListImages(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("listing images: %w", err)
	}
	ctrs, err := g.Runtime.ListContainers(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("listing containers: %w", err)
	}
	used := map[string]bool{}
	for _, c := range ctrs {
		used[c.ImageRef] = true
		used[c.GetImage().GetImage()] = true
	}
	if g.InUse != nil {
		for _, n := range g.InUse(ctx) {
			used[n] = true
			if full, ok := fullName(n); ok {
				used[full] = true
			}
		}
	}
	protected := map[string]bool{}
	if g.Protected != nil {
		for _, n := range g.Protected(ctx) {
			protected[n] = true
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.setListedLocked(imgs, pulls)
	if g.records == nil {
		g.records = map[string]*ImageRecord{}
	}
	seen := map[string]bool{}
	var out []ImageRecord
	for _, img := range imgs {
		seen[img.Id] = true
		r, ok := g.records[img.Id]
		if !ok {
			r = &ImageRecord{ID: img.Id, FirstDetected: now}
			g.records[img.Id] = r
		}
		r.Size = int64(img.Size)
		inUse := used[img.Id]
		keep := img.Pinned
		for _, n := range append(append([]string(nil), img.RepoTags...), img.RepoDigests...) {
			if used[n] {
				inUse = true
			}
			if protected[n] {
				keep = true
			}
		}
		if inUse {
			r.LastUsed = now
		}
		r.Keep = keep || inUse
		out = append(out, *r)
	}
	for id := range g.records {
		if !seen[id] {
			delete(g.records, id)
		}
	}
	return out, nil
}

// fsUsage is the image filesystem's capacity and available bytes, from
// the runtime's image fs info and statfs of its mount point.
func (g *ImageGC) fsUsage(ctx context.Context) (int64, int64, error) {
	mp, err := ImageFsMountpoint(ctx, g.Images)
	if err != nil {
		return 0, 0, err
	}
	return statfs(mp)
}

// ImageFsMountpoint is the mount point of the runtime's image filesystem
// (CRI ImageFsInfo).
func ImageFsMountpoint(ctx context.Context, is cri.ImageManagerService) (string, error) {
	fss, err := is.ImageFsInfo(ctx)
	if err != nil {
		return "", fmt.Errorf("image filesystem info: %w", err)
	}
	for _, fs := range fss.GetImageFilesystems() {
		if mp := fs.GetFsId().GetMountpoint(); mp != "" {
			return mp, nil
		}
	}
	return "", errors.New("the runtime reports no image filesystem")
}

// SandboxImage is the runtime's sandbox (pause) image, from its verbose
// status (containerd and CRI-O report their configuration there: the
// "sandboxImage" or "pause_image" key); "" when it does not say.
func SandboxImage(ctx context.Context, rs cri.RuntimeService) string {
	resp, err := rs.Status(ctx, true)
	if err != nil {
		return ""
	}
	for _, raw := range resp.GetInfo() {
		var m map[string]any
		if json.Unmarshal([]byte(raw), &m) != nil {
			continue
		}
		for _, k := range []string{"sandboxImage", "pause_image"} {
			if s, ok := m[k].(string); ok && s != "" {
				return s
			}
		}
	}
	return ""
}

// fullName is an image reference as the runtime lists it among an image's
// RepoTags or RepoDigests: "busybox" is "docker.io/library/busybox:latest".
func fullName(image string) (string, bool) {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return "", false
	}
	return reference.TagNameOnly(named).String(), true
}
