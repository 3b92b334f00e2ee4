package timeline

import (
	"encoding/json"
	"net/http"
	"strings"

	"k8s.io/klog/v2"
)

// Handler serves the timelines under prefix (e.g. "/stats/timeline"):
// GET <prefix> lists every pod's timeline; GET <prefix>/<namespace>/<name>
// returns one pod's, 404 when the kubelet has none for it.
func (t *Tracker) Handler(prefix string) http.Handler {
	prefix = strings.TrimSuffix(prefix, "/")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		rest, ok := strings.CutPrefix(r.URL.Path, prefix)
		if !ok {
			http.NotFound(w, r)
			return
		}
		rest = strings.Trim(rest, "/")
		if rest == "" {
			writeJSON(w, t.List())
			return
		}
		parts := strings.Split(rest, "/")
		if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
			http.Error(w, "want "+prefix+"/<namespace>/<name>", http.StatusNotFound)
			return
		}
		tl, found := t.Get(parts[0], parts[1])
		if !found {
			http.Error(w, "no startup timeline for pod "+parts[0]+"/"+parts[1]+" on this node", http.StatusNotFound)
			return
		}
		writeJSON(w, tl)
	})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		klog.ErrorS(err, "Writing a timeline response failed")
	}
}
