package kubeletconfig

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
)

// ownDefaults are the top-level fields whose default here differs from
// upstream's on purpose (SetDefaults says why).
var ownDefaults = map[string]bool{
	"cgroupRoot": true, // "/" here: the kubepods hierarchy needs a root
	// upstream fills it at start (cmd/kubelet/app), not in v1beta1
	// defaulting; the values are the same (DefaultEvictionHard)
	"evictionHard": true,
	// false here: this kubelet runs on cgroup v1 (these machines are v1);
	// upstream 1.37 defaults it to true and refuses v1 unless the file says false
	"failCgroupV1": true,
}

// The defaults are upstream's: testdata/upstream_defaults.json is the
// upstream kubelet's own v1beta1 defaulting of an empty configuration
// (hack/upstream-lists.sh, from the kubelet of upstreamVersion), so a
// default that changes upstream fails here until SetDefaults follows.
func TestDefaultsAreUpstreams(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "upstream_defaults.json"))
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	got := toMap(NewDefaultConfig())
	var diffs []string
	for k, w := range want {
		if ownDefaults[k] {
			continue
		}
		if g, ok := got[k]; !ok || !reflect.DeepEqual(g, w) {
			diffs = append(diffs, k)
			t.Errorf("default of %s: %v here, upstream %v", k, got[k], w)
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok && !ownDefaults[k] {
			diffs = append(diffs, k)
			t.Errorf("%s defaults to %v here, upstream leaves it unset", k, g)
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		t.Logf("differing defaults: %v", diffs)
	}
}
