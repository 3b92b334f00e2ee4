package stats

import (
	"encoding/json"
	"net/http"

	"k8s.io/klog/v2"
)

// SummaryHandler serves /stats/summary (GET or POST, as upstream);
// ?only_cpu_and_memory=true leaves out filesystems, network and volumes.
func SummaryHandler(src SummarySource) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodPost {
			w.Header().Set("Allow", "GET, POST")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		if err := r.ParseForm(); err != nil {
			http.Error(w, "parsing the request: "+err.Error(), http.StatusBadRequest)
			return
		}
		only := r.Form["only_cpu_and_memory"]
		scope := Full
		if len(only) == 1 && only[0] == "true" {
			scope = CPUAndMemory
		}
		s, err := src.Summary(r.Context(), scope)
		if err != nil {
			klog.ErrorS(err, "Serving /stats/summary failed")
			http.Error(w, "Internal Error: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if err := json.NewEncoder(w).Encode(s); err != nil {
			klog.ErrorS(err, "Writing /stats/summary failed")
		}
	})
}
