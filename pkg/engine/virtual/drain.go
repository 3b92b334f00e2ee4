package virtual

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/pkg/errdefs"
	"github.com/gokubelet/kubelet/pkg/provider"
)

// Drain deletes every pod the provider runs for a node that is being
// removed from the kubelet (its engine already stopped), each within its
// termination grace period, and waits until the provider lists none or
// ctx ends. It reports how many pods were left.
func Drain(ctx context.Context, prov provider.Provider) (int, error) {
	log := klog.FromContext(ctx)
	asked := map[string]bool{}
	for {
		pods, err := prov.ListPods(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return -1, fmt.Errorf("draining: %w", ctx.Err())
			}
			log.Error(err, "Listing the provider's pods to drain, will retry")
		} else {
			if len(pods) == 0 {
				return 0, nil
			}
			for _, p := range pods {
				key := keyOf(p.Namespace, p.Name) + "/" + string(p.UID)
				if asked[key] {
					continue
				}
				d := p.DeepCopy()
				if d.DeletionTimestamp == nil {
					now := metav1.Now()
					d.DeletionTimestamp = &now
				}
				if d.DeletionGracePeriodSeconds == nil {
					g := int64(30)
					if p.Spec.TerminationGracePeriodSeconds != nil {
						g = *p.Spec.TerminationGracePeriodSeconds
					}
					d.DeletionGracePeriodSeconds = &g
				}
				if err := prov.DeletePod(ctx, d); err != nil && !errdefs.IsNotFound(err) {
					log.Error(err, "Deleting a pod of a removed virtual node, will retry", "pod", klog.KObj(p))
					continue
				}
				asked[key] = true
			}
		}
		select {
		case <-ctx.Done():
			left := -1
			if err == nil {
				left = len(pods)
			}
			return left, fmt.Errorf("draining: %w", ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}
