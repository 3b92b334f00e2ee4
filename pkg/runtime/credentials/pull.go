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
)

// SecretGetter reads a Secret of a pod's namespace (the kubelet's Objects).
type SecretGetter interface {
	GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error)
}

// EventFailedToRetrieveImagePullSecret is upstream's event reason for a
// pull secret that cannot be read.
const EventFailedToRetrieveImagePullSecret = "FailedToRetrieveImagePullSecret"

// ForPull returns the function the image puller calls, only when it
// actually pulls: the logins for image from the pod's imagePullSecrets
// (read then, through secrets, which may be nil without an API server),
// then from the node's config files. A pull secret that cannot be read
// gives a warning event and is skipped, as upstream.
func ForPull(secrets SecretGetter, node *NodeKeyring, recorder record.EventRecorder) func(ctx context.Context, pod *v1.Pod, image string) []*runtimeapi.AuthConfig {
	return func(ctx context.Context, pod *v1.Pod, image string) []*runtimeapi.AuthConfig {
		repo := image
		if named, err := reference.ParseNormalizedNamed(image); err == nil {
			repo = named.Name()
		}
		var entries []Entry
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
				entries = append(entries, k.Lookup(repo)...)
			}
		}
		if node != nil {
			k, _ := node.Keyring()
			entries = append(entries, k.Lookup(repo)...)
		}
		return AuthConfigs(entries)
	}
}
