package pullrecords

import (
	"context"
	"fmt"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/clock"

	"github.com/gokubelet/kubelet/pkg/metrics"
	"github.com/gokubelet/kubelet/pkg/runtime/images/pullverify"
)

// Manager keeps the records around pulls and answers MustPull. Safe for
// concurrent use: one lock covers the files and the counts of pulls under
// way (record files are small; no pull runs under the lock).
type Manager struct {
	store  *Store
	policy pullverify.Policy
	clock  clock.Clock

	mu sync.Mutex
	// pulling counts the pulls under way per image (container image
	// field): the intent file is removed when the last one ends.
	pulling map[string]int
}

// NewManager returns a Manager over store. A nil clock is the real one.
func NewManager(store *Store, policy pullverify.Policy, clk clock.Clock) *Manager {
	if clk == nil {
		clk = clock.RealClock{}
	}
	m := &Manager{store: store, policy: policy, clock: clk, pulling: map[string]int{}}
	m.updateGauges(klog.Background())
	return m
}

// Policy is the verification policy in force.
func (m *Manager) Policy() pullverify.Policy { return m.policy }

// Dir is <root-dir>/image_manager.
func (m *Manager) Dir() string { return m.store.Dir() }

// Recover is the start-up step, before any pull: each intent left by a
// pull that was under way when the kubelet stopped, whose image the
// runtime has (images: its listing; the intent's image is compared with
// each image's tags and digests), becomes a pulled record without
// credentials, and the intent is removed. Other intents stay.
func (m *Manager) Recover(ctx context.Context, images []*runtimeapi.Image) {
	logger := klog.FromContext(ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	defer m.updateGauges(logger)
	intents, err := m.store.ListIntents()
	if err != nil {
		logger.Error(err, "Some image pull intents cannot be read; recovering the others")
	}
	if len(intents) == 0 {
		return
	}
	left := map[string]bool{}
	for _, in := range intents {
		left[in.Image] = true
	}
	for _, img := range images {
		for _, name := range append(append([]string(nil), img.GetRepoDigests()...), img.GetRepoTags()...) {
			if !left[name] {
				continue
			}
			if err := m.writePulledLocked(ctx, name, img.GetId(), nil); err != nil {
				logger.Error(err, "Could not turn an interrupted pull's intent into a pulled record", "image", name, "imageRef", img.GetId())
				continue
			}
			delete(left, name)
			if err := m.store.DeleteIntent(name); err != nil {
				logger.V(2).Info("Could not remove the image pull intent of a recovered pull", "image", name, "err", err)
			}
			logger.V(2).Info("Interrupted image pull found its image present; every pod must show credentials to use it", "image", name, "imageRef", img.GetId())
		}
	}
}

// RecordPullIntent writes the intent to pull image (a container's image
// field), before the pull. Every call must be followed by one
// RecordPulled or RecordPullFailed.
func (m *Manager) RecordPullIntent(ctx context.Context, image string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.store.WriteIntent(image); err != nil {
		return fmt.Errorf("failed to record image pull intent: %w", err)
	}
	m.pulling[image]++
	m.updateGauges(klog.FromContext(ctx))
	return nil
}

// RecordPulled records that image was pulled as imageRef with creds (see
// pullverify.PulledWith), and ends the pull's intent. When the record
// cannot be written the intent stays, so the image keeps counting as
// pulled by the kubelet (and a restart turns the intent into a record).
func (m *Manager) RecordPulled(ctx context.Context, image, imageRef string, creds *kubeletv1beta1.ImagePullCredentials) {
	logger := klog.FromContext(ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.writePulledLocked(ctx, image, imageRef, creds); err != nil {
		logger.Error(err, "Could not write the image pulled record", "image", image, "imageRef", imageRef)
		return
	}
	m.endPullLocked(logger, image)
}

// RecordPullFailed ends the intent of a pull that failed (or never
// started).
func (m *Manager) RecordPullFailed(ctx context.Context, image string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.endPullLocked(klog.FromContext(ctx), image)
}

func (m *Manager) endPullLocked(logger klog.Logger, image string) {
	if m.pulling[image] > 1 {
		m.pulling[image]--
		return
	}
	if err := m.store.DeleteIntent(image); err != nil {
		logger.Error(err, "Could not remove the image pull intent", "image", image)
		return
	}
	delete(m.pulling, image)
	m.updateGauges(logger)
}

// MustPull reports whether a pod asking for image (its container's image
// field), present on the node as imageRef, must pull it with its own
// credentials (pod is called only when they matter). Records that cannot
// be read count as "must pull".
func (m *Manager) MustPull(ctx context.Context, image, imageRef string, pod func() pullverify.PodCredentials) bool {
	if imageRef == "" {
		return true
	}
	logger := klog.FromContext(ctx)
	rec, pulledByKubelet, err := m.lookup(image, imageRef)
	if err != nil {
		logger.Error(err, "Image pull records cannot be read; the pod must pull the image with its own credentials", "image", image, "imageRef", imageRef)
		metrics.ImageManagerMustPullChecksTotal.WithLabelValues(string(pullverify.ResultError)).Inc()
		return true
	}
	v := pullverify.Decide(m.policy, image, pulledByKubelet, rec, pod)
	if v.Result == pullverify.ResultError {
		logger.Info("Image name does not parse; the pod must pull the image with its own credentials", "image", image)
	}
	if v.Learn != nil {
		m.mu.Lock()
		err := m.writePulledLocked(ctx, image, imageRef, pullverify.PulledWith(v.Learn))
		m.mu.Unlock()
		if err != nil {
			logger.Error(err, "Could not add a matching pull secret to the image pulled record", "image", image, "imageRef", imageRef)
		}
	}
	metrics.ImageManagerMustPullChecksTotal.WithLabelValues(string(v.Result)).Inc()
	return v.Pull
}

// lookup returns imageRef's pulled record (nil when none) and whether the
// kubelet pulled the image: a record, a pull under way, or an intent left
// on disk.
func (m *Manager) lookup(image, imageRef string) (*kubeletv1beta1.ImagePulledRecord, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec, exists, err := m.store.GetPulled(imageRef)
	if err != nil {
		return nil, false, err
	}
	if exists {
		return rec, true, nil
	}
	if m.pulling[image] > 0 {
		return nil, true, nil
	}
	ok, err := m.store.IntentExists(image)
	if err != nil {
		return nil, false, err
	}
	return nil, ok, nil
}

// writePulledLocked adds creds for image to imageRef's record, writing it
// only when it changes. nil creds make a record without credentials when
// there is none. A record that cannot be read is replaced.
func (m *Manager) writePulledLocked(ctx context.Context, image, imageRef string, creds *kubeletv1beta1.ImagePullCredentials) error {
	name, err := pullverify.TrimTagDigest(image)
	if err != nil {
		return fmt.Errorf("invalid image name %q: %w", image, err)
	}
	rec, _, err := m.store.GetPulled(imageRef)
	if err != nil {
		klog.FromContext(ctx).Info("Replacing an image pulled record that cannot be read", "imageRef", imageRef, "err", err)
		rec = nil
	}
	now := m.clock.Now()
	if rec == nil {
		rec = pullverify.NewRecord(imageRef, name, creds, now)
	} else {
		var changed bool
		if rec, changed = pullverify.Merge(rec, name, creds, now); !changed {
			return nil
		}
	}
	if err := m.store.WritePulled(rec); err != nil {
		return err
	}
	m.updateGauges(klog.FromContext(ctx))
	return nil
}

// Prune removes the pulled records of images no longer on the node:
// present are the image refs of the runtime's listing taken at listedAt,
// and only records last written before that second are removed (a record
// keeps its time to the second; one written during the listing may be of
// an image the listing missed).
func (m *Manager) Prune(ctx context.Context, present []string, listedAt time.Time) {
	logger := klog.FromContext(ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	recs, err := m.store.ListPulled()
	if err != nil {
		logger.Error(err, "Some image pulled records cannot be read; pruning the others")
	}
	keep := map[string]bool{}
	for _, ref := range present {
		keep[ref] = true
	}
	cutoff := listedAt.Truncate(time.Second)
	removed := 0
	for _, rec := range recs {
		if keep[rec.ImageRef] || !rec.LastUpdatedTime.Time.Before(cutoff) {
			continue
		}
		if err := m.store.DeletePulled(rec.ImageRef); err != nil {
			logger.Error(err, "Could not remove the pulled record of an image no longer on the node", "imageRef", rec.ImageRef)
			continue
		}
		removed++
	}
	if removed > 0 {
		logger.V(2).Info("Removed the pulled records of images no longer on the node", "count", removed)
		m.updateGauges(logger)
	}
}

func (m *Manager) updateGauges(logger klog.Logger) {
	intents, pulled, err := m.store.Count()
	if err != nil {
		logger.V(4).Info("Could not count the image pull records", "err", err)
		return
	}
	metrics.ImageManagerOnDiskPullIntents.Set(float64(intents))
	metrics.ImageManagerOnDiskPulledRecords.Set(float64(pulled))
}
