package credentials

import (
	"context"
	"fmt"
	"strings"

	"github.com/distribution/reference"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// SecretGetter reads a Secret of a pod's namespace (the kubelet's Objects).
type SecretGetter interface {
	GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error)
}

// EventFailedToRetrieveImagePullSecret is upstream's event reason for a
// pull secret that cannot be read.
const EventFailedToRetrieveImagePullSecret = "FailedToRetrieveImagePullSecret"

// Login is one registry login the image puller tries, with where it came
// from, as a pull record keeps it (KubeletEnsureSecretPulledImages).
type Login struct {
	Auth *runtimeapi.AuthConfig
	// Secret is the pull secret the login came from: its namespace, name
	// and UID, and the login's Hash. Nil for a login of the node's own
	// config files, which every pod on the node may use.
	Secret *kubeletv1beta1.ImagePullSecret
}

// ForPull returns the function the image puller calls when it pulls, or
// when it checks that a pod may use an image already present: the logins
// for image from the pod's imagePullSecrets (read then, through secrets,
// which may be nil without an API server), then from the node's config
// files. A pull secret that cannot be read gives a warning event and is
// skipped, as upstream.
func ForPull(secrets SecretGetter, node *NodeKeyring, recorder record.EventRecorder) func(ctx context.Context, pod *v1.Pod, image string) []Login {
	return func(ctx context.Context, pod *v1.Pod, image string) []Login {
		repo := image
		if named, err := reference.ParseNormalizedNamed(image); err == nil {
			repo = named.Name()
		}
		var entries []Tracked
		if pod != nil && len(pod.Spec.ImagePullSecrets) > 0 {
			var got []*v1.Secret
			var failed []string
			for _, ref := range pod.Spec.ImagePullSecrets {
				if ref.Name == "" {
					continue
				}
				if secrets == nil {
					failed = append(failed, ref.Name)
					continue
				}
				s, err := secrets.GetSecret(ctx, pod.Namespace, ref.Name)
				if err != nil {
					klog.FromContext(ctx).Info("Unable to retrieve pull secret, the image pull may not succeed", "pod", klog.KObj(pod), "secret", ref.Name, "err", err)
					failed = append(failed, ref.Name)
					continue
				}
				got = append(got, s)
			}
			if len(failed) > 0 && recorder != nil {
				recorder.Eventf(pod, v1.EventTypeWarning, EventFailedToRetrieveImagePullSecret,
					"Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", strings.Join(failed, ", "))
			}
			k, err := FromSecrets(got)
			if err != nil {
				klog.FromContext(ctx).Info("Ignoring image pull secrets that do not parse", "pod", klog.KObj(pod), "err", err)
				if recorder != nil {
					recorder.Eventf(pod, v1.EventTypeWarning, EventFailedToRetrieveImagePullSecret, "%v", fmt.Errorf("unusable image pull secret: %w", err))
				}
			} else {
				entries = append(entries, k.LookupTracked(repo)...)
			}
		}
		if node != nil {
			k, _ := node.Keyring()
			for _, t := range k.LookupTracked(repo) {
				t.Secret = nil // the node's own, whatever the keyring says
				entries = append(entries, t)
			}
		}
		return Logins(entries)
	}
}

// Logins turns looked-up logins into what the puller tries, each with
// its secret's coordinates and hash (none for the node's own).
func Logins(entries []Tracked) []Login {
	out := make([]Login, 0, len(entries))
	for _, t := range entries {
		l := Login{Auth: &runtimeapi.AuthConfig{Username: t.Username, Password: t.Password}}
		if t.Secret != nil {
			l.Secret = &kubeletv1beta1.ImagePullSecret{
				Namespace: t.Secret.Namespace, Name: t.Secret.Name, UID: t.Secret.UID,
				CredentialHash: Hash(t.Entry),
			}
		}
		out = append(out, l)
	}
	return out
}
