package kubeletconfig

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// configzField returns field of the effective configuration as /configz
// serves it (the JSON of Settings.Config), compacted.
func configzField(t *testing.T, s *Settings, field string) string {
	t.Helper()
	b, err := json.Marshal(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return string(m[field])
}

// Regression (issue 22): these upstream flags set fields this kubelet
// implements, yet they were ignored with a warning. Each now takes effect,
// parsed as upstream parses it, with upstream's precedence: defaults, then
// the --config file, then the --config-dir drop-ins, then the flags given
// on the command line.
func TestUpstreamFlagsTakeEffect(t *testing.T) {
	tests := []struct {
		flag string
		// field is the JSON name in /configz.
		field string
		// file and dropIn set the field (YAML lines after the header);
		// wantDropIn is the field with both and no flag.
		file, dropIn, wantDropIn string
		// args is the command line; wantFlag the field then.
		args     []string
		wantFlag string
	}{
		{"cgroups-per-qos", "cgroupsPerQOS", "cgroupsPerQOS: true\n", "cgroupsPerQOS: true\n", `true`,
			[]string{"--cgroups-per-qos=false", "--enforce-node-allocatable="}, `false`},
		{"enforce-node-allocatable", "enforceNodeAllocatable", "enforceNodeAllocatable: [none]\n", "enforceNodeAllocatable: [pods]\n", `["pods"]`,
			[]string{"--enforce-node-allocatable=pods,system-reserved", "--system-reserved-cgroup=/system.slice"}, `["pods","system-reserved"]`},
		{"eviction-soft", "evictionSoft", "evictionSoft: {memory.available: 1Gi}\nevictionSoftGracePeriod: {memory.available: 1m, nodefs.available: 1m}\n",
			"evictionSoft: {nodefs.available: 20%}\n", `{"memory.available":"1Gi","nodefs.available":"20%"}`,
			[]string{"--eviction-soft=memory.available<1.5Gi"}, `{"memory.available":"1.5Gi"}`},
		{"eviction-soft-grace-period", "evictionSoftGracePeriod", "evictionSoft: {memory.available: 1Gi}\nevictionSoftGracePeriod: {memory.available: 1m}\n",
			"evictionSoftGracePeriod: {memory.available: 2m}\n", `{"memory.available":"2m"}`,
			[]string{"--eviction-soft-grace-period=memory.available=1m30s"}, `{"memory.available":"1m30s"}`},
		{"eviction-minimum-reclaim", "evictionMinimumReclaim", "evictionMinimumReclaim: {memory.available: 0Mi}\n",
			"evictionMinimumReclaim: {imagefs.available: 1Gi}\n", `{"imagefs.available":"1Gi","memory.available":"0Mi"}`,
			[]string{"--eviction-minimum-reclaim=imagefs.available=2Gi,nodefs.available=500Mi"}, `{"imagefs.available":"2Gi","nodefs.available":"500Mi"}`},
		{"eviction-pressure-transition-period", "evictionPressureTransitionPeriod", "evictionPressureTransitionPeriod: 1m\n", "evictionPressureTransitionPeriod: 2m\n", `"2m0s"`,
			[]string{"--eviction-pressure-transition-period=30s"}, `"30s"`},
		{"eviction-max-pod-grace-period", "evictionMaxPodGracePeriod", "evictionMaxPodGracePeriod: 10\n", "evictionMaxPodGracePeriod: 20\n", `20`,
			[]string{"--eviction-max-pod-grace-period=45"}, `45`},
		{"local-storage-capacity-isolation", "localStorageCapacityIsolation", "localStorageCapacityIsolation: false\n", "localStorageCapacityIsolation: true\n", `true`,
			[]string{"--local-storage-capacity-isolation=false"}, `false`},
		{"image-gc-high-threshold", "imageGCHighThresholdPercent", "imageGCHighThresholdPercent: 90\n", "imageGCHighThresholdPercent: 95\n", `95`,
			[]string{"--image-gc-high-threshold=70", "--image-gc-low-threshold=60"}, `70`},
		{"image-gc-low-threshold", "imageGCLowThresholdPercent", "imageGCLowThresholdPercent: 50\n", "imageGCLowThresholdPercent: 60\n", `60`,
			[]string{"--image-gc-low-threshold=40"}, `40`},
		{"minimum-image-ttl-duration", "imageMinimumGCAge", "imageMinimumGCAge: 5m\n", "imageMinimumGCAge: 10m\n", `"10m0s"`,
			[]string{"--minimum-image-ttl-duration=1h"}, `"1h0m0s"`},
		{"container-log-max-size", "containerLogMaxSize", "containerLogMaxSize: 5Mi\n", "containerLogMaxSize: 20Mi\n", `"20Mi"`,
			[]string{"--container-log-max-size=50Mi"}, `"50Mi"`},
		{"container-log-max-files", "containerLogMaxFiles", "containerLogMaxFiles: 3\n", "containerLogMaxFiles: 4\n", `4`,
			[]string{"--container-log-max-files=8"}, `8`},
		{"pod-max-pids", "podPidsLimit", "podPidsLimit: 100\n", "podPidsLimit: 200\n", `200`,
			[]string{"--pod-max-pids=4096"}, `4096`},
		{"pod-max-pids", "podPidsLimit", "podPidsLimit: 100\n", "podPidsLimit: 200\n", `200`,
			[]string{"--pod-max-pids=-5"}, `-1`},
		{"system-reserved-cgroup", "systemReservedCgroup", "systemReservedCgroup: /a\n", "systemReservedCgroup: /b\n", `"/b"`,
			[]string{"--system-reserved-cgroup=/system.slice"}, `"/system.slice"`},
		{"kube-reserved-cgroup", "kubeReservedCgroup", "kubeReservedCgroup: /a\n", "kubeReservedCgroup: /b\n", `"/b"`,
			[]string{"--kube-reserved-cgroup=/kube.slice"}, `"/kube.slice"`},
		{"cpu-cfs-quota", "cpuCFSQuota", "cpuCFSQuota: true\n", "cpuCFSQuota: true\n", `true`,
			[]string{"--cpu-cfs-quota=false"}, `false`},
		{"cpu-cfs-quota-period", "cpuCFSQuotaPeriod", "cpuCFSQuotaPeriod: 100ms\n", "cpuCFSQuotaPeriod: 100ms\n", `"100ms"`,
			[]string{"--cpu-cfs-quota-period=50ms", "--feature-gates=" + customCFSQuotaPeriodGate() + "=true"}, `"50ms"`},
		{"manifest-url-header", "staticPodURLHeader", "staticPodURLHeader: {X-A: [a]}\n", "staticPodURLHeader: {X-B: [b]}\n", `{"X-A":["a"],"X-B":["b"]}`,
			[]string{"--manifest-url-header=X-C:c,X-C:d"}, `{"X-C":["c","d"]}`},
	}
	flagged := map[string]bool{}
	for _, tc := range tests {
		flagged[tc.flag] = true
		t.Run(tc.flag, func(t *testing.T) {
			dir := t.TempDir()
			file := writeIn(t, dir, "kubelet.yaml", header+tc.file)
			d := filepath.Join(dir, "conf.d")
			writeIn(t, d, "10.conf", header+tc.dropIn)

			s, err := settingsFor(t, "--config", file, "--config-dir", d)
			if err != nil {
				t.Fatal(err)
			}
			if got := configzField(t, s, tc.field); got != tc.wantDropIn {
				t.Errorf("without the flag: %s = %s, want %s (file, then drop-in)", tc.field, got, tc.wantDropIn)
			}
			s, err = settingsFor(t, append([]string{"--config", file, "--config-dir", d}, tc.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			if got := configzField(t, s, tc.field); got != tc.wantFlag {
				t.Errorf("%v: %s = %s, want %s", tc.args, tc.field, got, tc.wantFlag)
			}
			for _, w := range s.Warnings {
				if strings.Contains(w, "--"+tc.flag+" ") {
					t.Errorf("the flag is still warned about: %s", w)
				}
			}
		})
	}
}

// Every upstream flag this kubelet only accepts is classified: it sets a
// field this kubelet does not implement (CompatFlagFields), or no field at
// all. So when a field becomes implemented, or the upstream list gains a
// flag, this fails until the flag is bound or classified.
func TestAcceptedOnlyFlags(t *testing.T) {
	o := NewOptions()
	o.AddFlags(pflag.NewFlagSet("kubelet", pflag.ContinueOnError))
	compat := map[string]bool{}
	for _, n := range o.CompatFlagNames() {
		compat[n] = true
		field, sets := CompatFlagFields[n]
		switch {
		case sets && IsImplemented(field):
			t.Errorf("flag --%s sets %s, which is implemented: bind the flag (ConfigFlagNames)", n, field)
		case !sets && !compatFlagsWithoutField[n]:
			t.Errorf("upstream flag --%s is accepted-only and unclassified: bind it, or add it to CompatFlagFields or compatFlagsWithoutField", n)
		case sets && compatFlagsWithoutField[n]:
			t.Errorf("flag --%s is classified twice", n)
		}
		if _, bound := ConfigFlagNames[n]; bound {
			t.Errorf("flag --%s is in ConfigFlagNames but only accepted", n)
		}
	}
	for n := range CompatFlagFields {
		if !compat[n] {
			t.Errorf("CompatFlagFields has --%s, which is not an accepted-only flag (bound now, or gone upstream)", n)
		}
	}
	for n := range compatFlagsWithoutField {
		if !compat[n] {
			t.Errorf("compatFlagsWithoutField has --%s, which is not an accepted-only flag", n)
		}
	}
	// A warned flag names its field.
	s, err := settingsFor(t, "--registry-qps=3")
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(s.Warnings, "\n"); !strings.Contains(w, "--registry-qps") || !strings.Contains(w, `"registryPullQPS"`) {
		t.Errorf("warnings %q", s.Warnings)
	}
}

// Invalid flag values are refused naming the flag and the field, as
// values from the file are.
func TestUpstreamFlagsInvalidValues(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"--image-gc-high-threshold=120"}, []string{"imageGCHighThresholdPercent", "--image-gc-high-threshold"}},
		{[]string{"--image-gc-low-threshold=90"}, []string{"imageGCLowThresholdPercent"}},
		{[]string{"--container-log-max-files=1"}, []string{"containerLogMaxFiles", "--container-log-max-files"}},
		{[]string{"--container-log-max-size=lots"}, []string{"containerLogMaxSize", "--container-log-max-size"}},
		{[]string{"--enforce-node-allocatable=kube-reserved"}, []string{"kubeReservedCgroup"}},
		{[]string{"--enforce-node-allocatable=bogus"}, []string{"enforceNodeAllocatable", "--enforce-node-allocatable"}},
		{[]string{"--eviction-soft=memory.available<1Gi"}, []string{"evictionSoftGracePeriod"}},
		{[]string{"--cpu-cfs-quota-period=2s", "--feature-gates=" + customCFSQuotaPeriodGate() + "=true"}, []string{"cpuCFSQuotaPeriod", "--cpu-cfs-quota-period"}},
		{[]string{"--eviction-soft-grace-period=memory.available=soon"}, []string{"evictionSoftGracePeriod"}},
		{[]string{"--cpu-cfs-quota-period=50ms", "--feature-gates=" + customCFSQuotaPeriodGate() + "=false"}, []string{"cpuCFSQuotaPeriod", customCFSQuotaPeriodGate()}},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := settingsFor(t, tc.args...)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}
