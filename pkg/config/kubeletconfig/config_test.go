package kubeletconfig

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"
)

const header = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDefaults(t *testing.T) {
	c := NewDefaultConfig()
	checks := []struct {
		name      string
		got, want any
	}{
		{"enableServer", *c.EnableServer, true},
		{"syncFrequency", c.SyncFrequency.Duration, time.Minute},
		{"fileCheckFrequency", c.FileCheckFrequency.Duration, 20 * time.Second},
		{"httpCheckFrequency", c.HTTPCheckFrequency.Duration, 20 * time.Second},
		{"address", c.Address, "0.0.0.0"},
		{"port", c.Port, int32(10250)},
		{"readOnlyPort", c.ReadOnlyPort, int32(0)},
		{"healthzPort", *c.HealthzPort, int32(10248)},
		{"healthzBindAddress", c.HealthzBindAddress, "127.0.0.1"},
		{"registryPullQPS", *c.RegistryPullQPS, int32(5)},
		{"registryBurst", c.RegistryBurst, int32(10)},
		{"eventRecordQPS", *c.EventRecordQPS, int32(50)},
		{"eventBurst", c.EventBurst, int32(100)},
		{"kubeAPIQPS", *c.KubeAPIQPS, int32(50)},
		{"kubeAPIBurst", c.KubeAPIBurst, int32(100)},
		{"serializeImagePulls", *c.SerializeImagePulls, true},
		{"evictionHard", c.EvictionHard, DefaultEvictionHard()},
		{"nodeStatusUpdateFrequency", c.NodeStatusUpdateFrequency.Duration, 10 * time.Second},
		{"nodeStatusReportFrequency", c.NodeStatusReportFrequency.Duration, 5 * time.Minute},
		{"nodeLeaseDurationSeconds", c.NodeLeaseDurationSeconds, int32(40)},
		{"imageGCHighThresholdPercent", *c.ImageGCHighThresholdPercent, int32(85)},
		{"imageGCLowThresholdPercent", *c.ImageGCLowThresholdPercent, int32(80)},
		{"imageMinimumGCAge", c.ImageMinimumGCAge.Duration, 2 * time.Minute},
		{"maxPods", c.MaxPods, int32(110)},
		{"podPidsLimit", *c.PodPidsLimit, int64(-1)},
		{"cgroupDriver", c.CgroupDriver, "cgroupfs"},
		{"cgroupsPerQOS", *c.CgroupsPerQOS, true},
		{"cgroupRoot", c.CgroupRoot, "/"},
		{"containerRuntimeEndpoint", c.ContainerRuntimeEndpoint, "unix:///run/containerd/containerd.sock"},
		{"runtimeRequestTimeout", c.RuntimeRequestTimeout.Duration, 2 * time.Minute},
		{"podLogsDir", c.PodLogsDir, "/var/log/pods"},
		{"resolvConf", *c.ResolverConfig, "/etc/resolv.conf"},
		{"hairpinMode", c.HairpinMode, "promiscuous-bridge"},
		{"failSwapOn", *c.FailSwapOn, true},
		{"containerLogMaxSize", c.ContainerLogMaxSize, "10Mi"},
		{"containerLogMaxFiles", *c.ContainerLogMaxFiles, int32(5)},
		{"clusterDomain", c.ClusterDomain, ""},
		{"registerNode", *c.RegisterNode, true},
		{"anonymous", *c.Authentication.Anonymous.Enabled, false},
		{"authn webhook", *c.Authentication.Webhook.Enabled, true},
		{"authn cacheTTL", c.Authentication.Webhook.CacheTTL.Duration, 2 * time.Minute},
		{"authz mode", c.Authorization.Mode, kubeletv1beta1.KubeletAuthorizationModeWebhook},
		{"authz authorized TTL", c.Authorization.Webhook.CacheAuthorizedTTL.Duration, 5 * time.Minute},
		{"authz unauthorized TTL", c.Authorization.Webhook.CacheUnauthorizedTTL.Duration, 30 * time.Second},
		{"oomScoreAdj", *c.OOMScoreAdj, int32(-999)},
		{"streamingConnectionIdleTimeout", c.StreamingConnectionIdleTimeout.Duration, 4 * time.Hour},
	}
	for _, tc := range checks {
		if !equal(tc.got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	if errs := Validate(c); len(errs) > 0 {
		t.Errorf("defaults do not validate: %v", errs)
	}
}

func equal(a, b any) bool {
	am, aok := a.(map[string]string)
	bm, bok := b.(map[string]string)
	if aok && bok {
		if len(am) != len(bm) {
			return false
		}
		for k, v := range am {
			if bm[k] != v {
				return false
			}
		}
		return true
	}
	return a == b
}

func TestDefaultsDependOnOtherFields(t *testing.T) {
	c := &kubeletv1beta1.KubeletConfiguration{
		NodeStatusUpdateFrequency: metav1.Duration{Duration: 20 * time.Second},
		MaxParallelImagePulls:     ptr.To[int32](3),
		EvictionHard:              map[string]string{"memory.available": "1Gi"},
	}
	SetDefaults(c)
	if c.NodeStatusReportFrequency.Duration != 20*time.Second {
		t.Errorf("nodeStatusReportFrequency should follow an explicit update frequency, got %v", c.NodeStatusReportFrequency)
	}
	if *c.SerializeImagePulls {
		t.Error("serializeImagePulls should default to false when maxParallelImagePulls >= 2")
	}
	if len(c.EvictionHard) != 1 {
		t.Errorf("a set evictionHard must not be merged with defaults unless asked: %v", c.EvictionHard)
	}

	m := &kubeletv1beta1.KubeletConfiguration{
		EvictionHard:                 map[string]string{"memory.available": "1Gi"},
		MergeDefaultEvictionSettings: ptr.To(true),
	}
	SetDefaults(m)
	if m.EvictionHard["memory.available"] != "1Gi" || m.EvictionHard["nodefs.available"] != "10%" {
		t.Errorf("mergeDefaultEvictionSettings: got %v", m.EvictionHard)
	}
}

// TestDecodeConfig: strict first, then, on strict errors only, lenient
// with the problems named (upstream v1.37's codec); any other problem is
// refused.
func TestDecodeConfig(t *testing.T) {
	tests := []struct {
		name string
		data string
		// wantMaxPods is checked when the data decodes.
		wantMaxPods  int32
		wantProblems []string // each a substring of one problem, in order
		wantErr      []string // substrings; the data is refused
	}{
		{name: "yaml ok", data: header + "maxPods: 20\nsyncFrequency: 30s\n", wantMaxPods: 20},
		{name: "json ok", data: `{"apiVersion":"kubelet.config.k8s.io/v1beta1","kind":"KubeletConfiguration","maxPods":20}`, wantMaxPods: 20},
		{name: "field of a newer kubelet", data: header + "maxPods: 20\nfieldOfAFutureKubelet: [23]\n", wantMaxPods: 20,
			wantProblems: []string{`unknown field "fieldOfAFutureKubelet"`}},
		{name: "unknown field", data: header + "maxPods: 20\nfooBar: 1\n", wantMaxPods: 20, wantProblems: []string{`unknown field "fooBar"`}},
		{name: "unknown nested field", data: header + "maxPods: 20\nauthentication:\n  anonymous:\n    enabeld: true\n", wantMaxPods: 20,
			wantProblems: []string{`unknown field "authentication.anonymous.enabeld"`}},
		{name: "two unknown fields", data: header + "maxPods: 20\na: 1\nb: 2\n", wantMaxPods: 20, wantProblems: []string{`"a"`, `"b"`}},
		{name: "wrong case is unknown, not applied", data: header + "maxPods: 20\nMaxPods: 30\n", wantMaxPods: 20, wantProblems: []string{`unknown field "MaxPods"`}},
		{name: "duplicate field: the last wins", data: header + "maxPods: 30\nmaxPods: 20\n", wantMaxPods: 20, wantProblems: []string{`duplicate field "maxPods" (line 4)`}},
		{name: "duplicate json field", data: `{"apiVersion":"kubelet.config.k8s.io/v1beta1","kind":"KubeletConfiguration","maxPods":1,"maxPods":20}`, wantMaxPods: 20,
			wantProblems: []string{`duplicate field "maxPods"`}},
		{name: "unknown and duplicate", data: header + "maxPods: 20\nx: 1\nport: 1\nport: 2\n", wantMaxPods: 20,
			wantProblems: []string{`duplicate field "port"`, `unknown field "x"`}},
		// Invalid values are still refused, naming the field.
		{name: "bad type", data: header + "maxPods: lots\n", wantErr: []string{"maxPods"}},
		{name: "bad type beside an unknown field", data: header + "x: 1\nmaxPods: lots\n", wantErr: []string{"maxPods"}},
		{name: "bad nested type", data: header + "authentication:\n  anonymous:\n    enabled: sometimes\n", wantErr: []string{"authentication.anonymous.enabled"}},
		{name: "wrong kind", data: "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeProxyConfiguration\n", wantErr: []string{`"KubeProxyConfiguration"`}},
		{name: "wrong version", data: "apiVersion: kubelet.config.k8s.io/v1\nkind: KubeletConfiguration\n", wantErr: []string{`"kubelet.config.k8s.io/v1"`}},
		{name: "missing header", data: "maxPods: 20\n", wantErr: []string{"apiVersion"}},
		{name: "empty", data: "  \n", wantErr: []string{"empty"}},
		{name: "bad yaml", data: header + "maxPods: [\n", wantErr: []string{"parse"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, problems, err := DecodeConfig([]byte(tc.data))
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("expected an error, got %+v (problems %q)", cfg, problems)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not contain %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if cfg.MaxPods != tc.wantMaxPods {
				t.Errorf("maxPods = %d, want %d", cfg.MaxPods, tc.wantMaxPods)
			}
			if len(problems) != len(tc.wantProblems) {
				t.Fatalf("problems %q, want %q", problems, tc.wantProblems)
			}
			for i, w := range tc.wantProblems {
				if !strings.Contains(problems[i], w) {
					t.Errorf("problem %d %q does not contain %q", i, problems[i], w)
				}
			}
		})
	}
}

func TestLoadConfigFile(t *testing.T) {
	p := writeFile(t, "kubelet.yaml", header+"staticPodPath: manifests\ntlsCertFile: /abs/cert\nmaxPods: 7\n")
	cfg, warns, err := LoadConfigFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) != 0 {
		t.Errorf("warnings for a strict file: %q", warns)
	}
	if want := filepath.Join(filepath.Dir(p), "manifests"); cfg.StaticPodPath != want {
		t.Errorf("staticPodPath = %q, want %q", cfg.StaticPodPath, want)
	}
	if cfg.TLSCertFile != "/abs/cert" {
		t.Errorf("absolute path changed: %q", cfg.TLSCertFile)
	}
	if cfg.MaxPods != 7 || cfg.Port != 10250 {
		t.Errorf("file value or default lost: maxPods=%d port=%d", cfg.MaxPods, cfg.Port)
	}

	lenient := writeFile(t, "lenient.yaml", header+"nope: 1\nmaxPods: 9\n")
	cfg, warns, err = LoadConfigFile(lenient)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MaxPods != 9 || cfg.Port != 10250 {
		t.Errorf("leniently decoded file: maxPods=%d port=%d", cfg.MaxPods, cfg.Port)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], lenient) || !strings.Contains(warns[0], `unknown field "nope"`) {
		t.Errorf("the warning must name the file and the field, got %q", warns)
	}

	bad := writeFile(t, "bad.yaml", header+"nope: 1\nmaxPods: many\n")
	_, _, err = LoadConfigFile(bad)
	if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "maxPods") {
		t.Errorf("error must name the file and the field, got %v", err)
	}
	_, _, err = LoadConfigFile(filepath.Join(t.TempDir(), "missing.yaml"))
	if err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing file: %v", err)
	}
}

func TestUnimplementedFieldWarnings(t *testing.T) {
	tests := []struct {
		name string
		data string
		want []string
	}{
		{"only implemented", header + "maxPods: 20\ncgroupDriver: systemd\nevictionHard:\n  memory.available: 1Gi\n", nil},
		{"unimplemented at default", header + "cpuManagerPolicy: none\nvolumeStatsAggPeriod: 1m\n", nil},
		{"unimplemented set", header + "cpuManagerPolicy: static\nfeatureGates:\n  KubeletPSI: false\nmaxPods: 5\n", []string{"cpuManagerPolicy"}},
		{"nested unimplemented", header + "tracing:\n  endpoint: localhost:4317\n", []string{"tracing"}},
		{"bool false differs from default", header + "makeIPTablesUtilChains: false\n", []string{"makeIPTablesUtilChains"}},
		{"server security is implemented", header + "enableDebuggingHandlers: false\nrotateCertificates: true\nserverTLSBootstrap: true\ntlsMinVersion: VersionTLS13\n", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, problems, err := DecodeConfig([]byte(tc.data))
			if err != nil || len(problems) > 0 {
				t.Fatal(err, problems)
			}
			SetDefaults(cfg)
			got := UnimplementedFields(cfg)
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			warns := UnimplementedFieldWarnings(cfg, "/etc/k.yaml")
			if len(warns) != len(tc.want) {
				t.Fatalf("warnings %v", warns)
			}
			for i, w := range warns {
				if !strings.Contains(w, "/etc/k.yaml") || !strings.Contains(w, `"`+tc.want[i]+`"`) {
					t.Errorf("warning %q should name the file and field", w)
				}
			}
		})
	}
}

func TestImplementedFieldsAreRealFields(t *testing.T) {
	// Every JSON name of the type's top-level fields (omitempty ones
	// included), read from the struct tags.
	known := map[string]bool{"apiVersion": true, "kind": true}
	typ := reflect.TypeOf(kubeletv1beta1.KubeletConfiguration{})
	for i := 0; i < typ.NumField(); i++ {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		if name != "" {
			known[name] = true
		}
	}
	for _, f := range ImplementedFields {
		if !known[f] {
			t.Errorf("ImplementedFields has %q, which is not a KubeletConfiguration field", f)
		}
	}
}

func TestValidateTaintsAndTypes(t *testing.T) {
	errs := ValidateTaints(nil, []v1.Taint{{Key: "a", Effect: "Bad"}})
	if len(errs) != 1 {
		t.Fatalf("got %v", errs)
	}
}
