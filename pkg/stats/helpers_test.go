package stats

import (
	"net/http"

	"k8s.io/component-base/metrics"
)

func handlerFor(g metrics.Gatherer) http.Handler {
	return metrics.HandlerFor(g, metrics.HandlerOpts{ErrorHandling: metrics.ContinueOnError})
}
