package kubelet

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/gokubelet/kubelet/pkg/config/features"
	"github.com/gokubelet/kubelet/pkg/config/kubeletconfig"
)

// With KubeletEnsureSecretPulledImages on, the kubelet makes
// <root-dir>/image_manager at start (upstream's node e2e suite waits for
// it after a restart) with the configured policy; off, it keeps no
// records and leaves the root directory alone.
func TestNewPullRecords(t *testing.T) {
	for _, tc := range []struct {
		name    string
		gateOn  bool
		policy  kubeletv1beta1.ImagePullCredentialsVerificationPolicy
		allow   []string
		wantDir bool
		wantErr bool
	}{
		{name: "on", gateOn: true, policy: kubeletv1beta1.NeverVerifyPreloadedImages, wantDir: true},
		{name: "on, allowlist", gateOn: true, policy: kubeletv1beta1.NeverVerifyAllowlistedImages, allow: []string{"registry.example/*"}, wantDir: true},
		{name: "off", gateOn: false},
		{name: "on, a policy validation would refuse", gateOn: true, policy: "Sometimes", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			cfg := kubeletconfig.NewDefaultConfig()
			cfg.ImagePullCredentialsVerificationPolicy = tc.policy
			cfg.PreloadedImagesVerificationAllowlist = tc.allow
			s := &kubeletconfig.Settings{Config: cfg, RootDir: root, Features: features.Gates{}.With(features.KubeletEnsureSecretPulledImages, tc.gateOn)}
			m, err := newPullRecords(context.Background(), s)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v", err)
			}
			if tc.wantErr {
				return
			}
			if (m != nil) != tc.gateOn {
				t.Errorf("records %v with the gate on=%v", m, tc.gateOn)
			}
			if m != nil && m.Policy().Name() != tc.policy {
				t.Errorf("policy %q, want %q", m.Policy().Name(), tc.policy)
			}
			for _, d := range []string{"pulling", "pulled"} {
				_, err := os.Stat(filepath.Join(root, "image_manager", d))
				if (err == nil) != tc.wantDir {
					t.Errorf("image_manager/%s: %v, want it there: %v", d, err, tc.wantDir)
				}
			}
		})
	}
}
