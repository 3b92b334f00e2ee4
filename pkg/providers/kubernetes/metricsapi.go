package kubernetes

// The edge of stats.go: the target's metrics API, read with a plain GET
// through the target client, and GetStatsSummary.

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

// metricsAPI names the target's metrics API in errors and docs.
const metricsAPI = "metrics.k8s.io/v1beta1"

// podMetricsLister lists the PodMetrics of one target namespace.
type podMetricsLister func(ctx context.Context, namespace string) ([]metricsv1beta1.PodMetrics, error)

// restPodMetrics lists PodMetrics with a plain GET through rc, the target
// client's own REST client (its identity, transport and rate limit),
// decoded into the metrics API's types: no generated metrics clientset.
func restPodMetrics(rc rest.Interface) podMetricsLister {
	return func(ctx context.Context, ns string) ([]metricsv1beta1.PodMetrics, error) {
		if nilREST(rc) {
			return nil, fmt.Errorf("the target cluster's metrics API (%s): no REST client to the target", metricsAPI)
		}
		raw, err := rc.Get().AbsPath("/apis", metricsv1beta1.GroupName, "v1beta1", "namespaces", ns, "pods").
			SetHeader("Accept", "application/json").Do(ctx).Raw()
		if err != nil {
			return nil, metricsError(ns, err)
		}
		var list metricsv1beta1.PodMetricsList
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, fmt.Errorf("decoding the target cluster's pod metrics (%s) in namespace %s: %w", metricsAPI, ns, err)
		}
		return list.Items, nil
	}
}

// nilREST: a client without a REST client (a fake, in tests).
func nilREST(rc rest.Interface) bool {
	if rc == nil {
		return true
	}
	v := reflect.ValueOf(rc)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// errNoMetricsAPI is the cause of the error when the target has no
// metrics API (not registered, or its server is down).
var errNoMetricsAPI = fmt.Errorf("the target cluster's metrics API (%s) is not available; is metrics-server running in the target?", metricsAPI)

// metricsError says why listing PodMetrics of ns failed: no metrics API
// (404, 503), not allowed (403, naming the rule), or else.
func metricsError(ns string, err error) error {
	switch {
	case apierrors.IsNotFound(err), apierrors.IsServiceUnavailable(err):
		return fmt.Errorf("%w (listing pods.metrics.k8s.io in target namespace %s: %w)", errNoMetricsAPI, ns, err)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("the target identity may not list pods.metrics.k8s.io in target namespace %s (it needs list on pods in API group metrics.k8s.io there): %w", ns, err)
	}
	return fmt.Errorf("listing pod metrics (%s) in target namespace %s: %w", metricsAPI, ns, err)
}

// GetStatsSummary reports the pods this provider runs in the target, from
// the target's metrics API (see stats.go): a pod without
// PodMetrics yet is left out, and the node's CPU and memory are the sums
// of its pods' (not a machine's), present once a pod has figures. It
// fails, naming metrics.k8s.io, when the target has no metrics API.
func (p *Provider) GetStatsSummary(ctx context.Context) (*statsv1alpha1.Summary, error) {
	if err := p.synced(); err != nil {
		return nil, err
	}
	p.mu.Lock()
	recs := make([]ownedPod, 0, len(p.owned))
	for _, o := range p.owned {
		recs = append(recs, *o)
	}
	p.mu.Unlock()
	targets := ownedTargets(recs, func(ns, name string) *v1.Pod {
		tp, err := p.pods.Pods(ns).Get(name)
		if err != nil {
			return nil
		}
		return tp
	})
	var items []metricsv1beta1.PodMetrics
	for _, ns := range targetNamespaces(targets) {
		list, err := p.podMetrics(ctx, ns)
		if err != nil {
			return nil, err
		}
		for _, pm := range list {
			if pm.Namespace == ns {
				items = append(items, pm)
			}
		}
	}
	return p.stats.update(targets, items, p.node, p.started), nil
}
