package kubelet

// The image pull records of KubeletEnsureSecretPulledImages
// (pkg/runtime/images/pullrecords): opened at start, which makes
// <root-dir>/image_manager/{pulling,pulled}; recovered from the runtime's
// image listing before any pod starts; pruned after each image
// collection. With the gate off none of this happens and any pod uses
// an image already on the node, as before the feature.

import (
	"context"
	"fmt"

	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/pkg/config/features"
	"github.com/gokubelet/kubelet/pkg/config/kubeletconfig"
	"github.com/gokubelet/kubelet/pkg/runtime/images/pullrecords"
	"github.com/gokubelet/kubelet/pkg/runtime/images/pullverify"
	"github.com/gokubelet/kubelet/pkg/runtime/kuberuntime"
)

// newPullRecords returns the node's pull records, nil with the gate off.
func newPullRecords(ctx context.Context, s *kubeletconfig.Settings) (*pullrecords.Manager, error) {
	log := klog.FromContext(ctx)
	if !s.Features.Enabled(features.KubeletEnsureSecretPulledImages) {
		log.Info("Feature gate KubeletEnsureSecretPulledImages is off: any pod may use an image already on the node, whoever pulled it")
		return nil, nil
	}
	cfg := s.Config
	policy, err := pullverify.NewPolicy(cfg.ImagePullCredentialsVerificationPolicy, cfg.PreloadedImagesVerificationAllowlist)
	if err != nil {
		return nil, fmt.Errorf("imagePullCredentialsVerificationPolicy: %w", err)
	}
	store, err := pullrecords.Open(log, s.RootDir)
	if err != nil {
		return nil, err
	}
	log.Info("Image pull records kept: a pod uses an image already on the node only as the verification policy allows",
		"dir", store.Dir(), "imagePullCredentialsVerificationPolicy", policy.Name(),
		"preloadedImagesVerificationAllowlist", cfg.PreloadedImagesVerificationAllowlist)
	return pullrecords.NewManager(store, policy, nil), nil
}

// recoverPullRecords turns the intents of pulls a stopped kubelet left
// into records, for the images the runtime has.
func recoverPullRecords(ctx context.Context, records *pullrecords.Manager, rt *kuberuntime.Manager) {
	if records == nil {
		return
	}
	imgs, err := rt.ImageService().ListImages(ctx, nil)
	if err != nil {
		// The intents stay: their images keep counting as pulled by the
		// kubelet, so pods must show credentials for them.
		klog.FromContext(ctx).Error(err, "Listing images to recover interrupted pulls failed; their intents are kept")
	}
	records.Recover(ctx, imgs)
}
