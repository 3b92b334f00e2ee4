package kubeletconfig

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	v1 "k8s.io/api/core/v1"
)

// settingsFor runs the flag pipeline with a fixed hostname.
func settingsFor(t *testing.T, args ...string) (*Settings, error) {
	t.Helper()
	fs := pflag.NewFlagSet("kubelet", pflag.ContinueOnError)
	fs.SetOutput(new(strings.Builder))
	o := NewOptions()
	o.hostname = func() (string, error) { return " Node-A.Example.COM \n", nil }
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return o.Settings()
}

func TestFlagsOverrideFile(t *testing.T) {
	p := writeFile(t, "k.yaml", header+`
maxPods: 20
port: 10000
healthzPort: 0
syncFrequency: 30s
cgroupDriver: systemd
failSwapOn: false
registerNode: false
kubeAPIQPS: 7
containerRuntimeEndpoint: unix:///file.sock
staticPodPath: /etc/file-manifests
`)
	// No flags: the file wins over defaults.
	s, err := settingsFor(t, "--config", p)
	if err != nil {
		t.Fatal(err)
	}
	c := s.Config
	if c.MaxPods != 20 || c.Port != 10000 || *c.HealthzPort != 0 || c.SyncFrequency.Duration != 30*time.Second ||
		c.CgroupDriver != "systemd" || *c.FailSwapOn || *c.RegisterNode || *c.KubeAPIQPS != 7 ||
		c.ContainerRuntimeEndpoint != "unix:///file.sock" || c.StaticPodPath != "/etc/file-manifests" {
		t.Fatalf("file values not kept when flags are unset: %+v", c)
	}
	if s.ConfigFile != p {
		t.Errorf("ConfigFile = %q", s.ConfigFile)
	}

	// Explicit flags win, including values equal to the flag default.
	s, err = settingsFor(t, "--config", p,
		"--max-pods=110", "--port=10250", "--healthz-port=10248", "--sync-frequency=1m",
		"--cgroup-driver=cgroupfs", "--fail-swap-on=true", "--register-node=true", "--kube-api-qps=50",
		"--kube-api-burst=3", "--container-runtime-endpoint=unix:///flag.sock", "--pod-manifest-path=/flag",
		"--manifest-url=http://m/pods", "--read-only-port=10255", "--address=127.0.0.1",
		"--healthz-bind-address=0.0.0.0", "--file-check-frequency=5s", "--http-check-frequency=6s",
		"--register-with-taints=a=b:NoSchedule")
	if err != nil {
		t.Fatal(err)
	}
	c = s.Config
	checks := []struct {
		name      string
		got, want any
	}{
		{"maxPods", c.MaxPods, int32(110)},
		{"port", c.Port, int32(10250)},
		{"healthzPort", *c.HealthzPort, int32(10248)},
		{"syncFrequency", c.SyncFrequency.Duration, time.Minute},
		{"cgroupDriver", c.CgroupDriver, "cgroupfs"},
		{"failSwapOn", *c.FailSwapOn, true},
		{"registerNode", *c.RegisterNode, true},
		{"kubeAPIQPS", *c.KubeAPIQPS, int32(50)},
		{"kubeAPIBurst", c.KubeAPIBurst, int32(3)},
		{"containerRuntimeEndpoint", c.ContainerRuntimeEndpoint, "unix:///flag.sock"},
		{"staticPodPath", c.StaticPodPath, "/flag"},
		{"staticPodURL", c.StaticPodURL, "http://m/pods"},
		{"readOnlyPort", c.ReadOnlyPort, int32(10255)},
		{"address", c.Address, "127.0.0.1"},
		{"healthzBindAddress", c.HealthzBindAddress, "0.0.0.0"},
		{"fileCheckFrequency", c.FileCheckFrequency.Duration, 5 * time.Second},
		{"httpCheckFrequency", c.HTTPCheckFrequency.Duration, 6 * time.Second},
		{"taints", len(c.RegisterWithTaints), 1},
	}
	for _, tc := range checks {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

func TestFlagDefaultsWithoutFile(t *testing.T) {
	s, err := settingsFor(t)
	if err != nil {
		t.Fatal(err)
	}
	if s.NodeName != "node-a.example.com" {
		t.Errorf("NodeName = %q", s.NodeName)
	}
	if s.RootDir != "/var/lib/kubelet" || s.CertDir != "/var/lib/kubelet/pki" {
		t.Errorf("RootDir %q CertDir %q", s.RootDir, s.CertDir)
	}
	// With upstream's default gates, the only warning names the gates on
	// whose feature this kubelet lacks.
	if !s.Standalone() || len(s.Warnings) != 1 || !strings.HasPrefix(s.Warnings[0], "feature gates on whose feature this kubelet lacks") || s.Config.MaxPods != 110 {
		t.Errorf("unexpected settings %+v", s)
	}

	s, err = settingsFor(t, "--root-dir=/data/kubelet", "--hostname-override", "  MyNode ",
		"--kubeconfig=/k", "--bootstrap-kubeconfig=/b", "--node-ip=10.0.0.1,fd00::1",
		"--node-labels=a=b", "--node-labels=node.kubernetes.io/pool=,c=d")
	if err != nil {
		t.Fatal(err)
	}
	if s.CertDir != "/data/kubelet/pki" || s.NodeName != "mynode" || s.Standalone() ||
		s.KubeconfigPath != "/k" || s.BootstrapKubeconfigPath != "/b" {
		t.Errorf("unexpected settings %+v", s)
	}
	if strings.Join(s.NodeIPs, ",") != "10.0.0.1,fd00::1" {
		t.Errorf("NodeIPs = %v", s.NodeIPs)
	}
	if len(s.NodeLabels) != 3 || s.NodeLabels["c"] != "d" || s.NodeLabels["node.kubernetes.io/pool"] != "" {
		t.Errorf("NodeLabels = %v", s.NodeLabels)
	}
	s, err = settingsFor(t, "--cert-dir=/certs")
	if err != nil || s.CertDir != "/certs" {
		t.Errorf("cert-dir: %v %v", s, err)
	}
}

func TestSettingsErrors(t *testing.T) {
	bad := writeFile(t, "k.yaml", header+"maxPods: -3\nhealthzPort: 70000\n")
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"invalid flag value", []string{"--healthz-port=70000"}, []string{"healthzPort: Invalid value: 70000: must be between 0 and 65535", "--healthz-port"}},
		{"invalid file values collected", []string{"--config", bad}, []string{"maxPods: Invalid value: -3", "healthzPort", bad}},
		{"flag fixes file", []string{"--config", bad, "--max-pods=3"}, []string{"healthzPort"}},
		{"bad node ip", []string{"--node-ip=1.2.3"}, []string{"--node-ip", "not an IP"}},
		{"bad hostname", []string{"--hostname-override=bad_name"}, []string{"--hostname-override", "bad_name"}},
		{"bad cgroup driver", []string{"--cgroup-driver=foo"}, []string{"cgroupDriver", "--cgroup-driver"}},
		{"bad label", []string{"--node-labels=kubernetes.io/foo=bar"}, []string{"node-labels", "kubernetes.io/foo"}},
		{"bad taint", []string{"--register-with-taints=a=b"}, []string{"register-with-taints"}},
		{"missing config file", []string{"--config=/nonexistent/k.yaml"}, []string{"/nonexistent/k.yaml"}},
		{"unknown flag", []string{"--no-such-flag"}, []string{"no-such-flag"}},
		{"bootstrap without kubeconfig", []string{"--bootstrap-kubeconfig=/b"}, []string{"--kubeconfig"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := settingsFor(t, tc.args...)
			if err == nil {
				t.Fatal("expected an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	_, err := settingsFor(t, "--config", bad, "--max-pods=3")
	if err != nil && strings.Contains(err.Error(), "maxPods") {
		t.Errorf("flag should have replaced the invalid file value: %v", err)
	}
}

func TestSettingsWarnings(t *testing.T) {
	p := writeFile(t, "k.yaml", header+"cpuManagerPolicy: static\nmaxPods: 10\n")
	s, err := settingsFor(t, "--config", p, "--pod-infra-container-image=registry.k8s.io/pause:3.10")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Warnings) != 3 || !strings.Contains(s.Warnings[0], "cpuManagerPolicy") || !strings.Contains(s.Warnings[1], "pod-infra-container-image") ||
		!strings.Contains(s.Warnings[2], "feature gates on whose feature this kubelet lacks") {
		t.Errorf("warnings = %q", s.Warnings)
	}
}

// Regression (issue 22): a KubeletConfiguration of a newer kubelet, with a
// field this schema lacks (tlsCurvePreferences, 1.35+), was refused with
// "strict decoding failed: unknown field". It starts, with a warning that
// names the field and the file; invalid values are still refused.
func TestNewerFieldIsWarnedNotRefused(t *testing.T) {
	p := writeFile(t, "k.yaml", header+"tlsCurvePreferences: [23]\nmaxPods: 12\n")
	s, err := settingsFor(t, "--config", p)
	if err != nil {
		t.Fatal(err)
	}
	if s.Config.MaxPods != 12 {
		t.Errorf("maxPods = %d, want the file's 12", s.Config.MaxPods)
	}
	// With k8s.io/kubelet older than 1.35 the field is unknown (decoded
	// leniently); with a newer one it is known but not implemented. Either
	// way a warning names it and the file.
	warned := strings.Join(s.Warnings, "\n")
	if !strings.Contains(warned, `"tlsCurvePreferences"`) || !strings.Contains(warned, p) {
		t.Errorf("no warning naming the field and the file: %q", s.Warnings)
	}
	bad := writeFile(t, "bad.yaml", header+"tlsCurvePreferences: [23]\nmaxPods: -1\n")
	if _, err := settingsFor(t, "--config", bad); err == nil || !strings.Contains(err.Error(), "maxPods") {
		t.Errorf("an invalid value beside an unknown field: %v", err)
	}
}

func TestHostnameError(t *testing.T) {
	fs := pflag.NewFlagSet("kubelet", pflag.ContinueOnError)
	o := NewOptions()
	o.hostname = func() (string, error) { return "", errors.New("boom") }
	o.AddFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Settings(); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("got %v", err)
	}
}

func TestNewSettings(t *testing.T) {
	s, err := NewSettings([]string{"--hostname-override=n1", "--max-pods=5"})
	if err != nil {
		t.Fatal(err)
	}
	if s.NodeName != "n1" || s.Config.MaxPods != 5 {
		t.Errorf("got %+v", s)
	}
	if _, err := NewSettings([]string{"--hostname-override=n1", "extra"}); err == nil {
		t.Error("positional arguments must be rejected")
	}
}

func TestParseNodeIPs(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{"", "", false},
		{"10.0.0.1", "10.0.0.1", false},
		{" 10.0.0.1 ", "10.0.0.1", false},
		{"fd00::1", "fd00::1", false},
		{"FD00:0::1", "fd00::1", false},
		{"10.0.0.1,fd00::1", "10.0.0.1,fd00::1", false},
		{"fd00::1, 10.0.0.1", "fd00::1,10.0.0.1", false},
		{"::", "::", false},
		{"0.0.0.0", "0.0.0.0", false},
		{"10.0.0.1,10.0.0.2", "", true},
		{"fd00::1,fd00::2", "", true},
		{"10.0.0.1,fd00::1,10.0.0.2", "", true},
		{"0.0.0.0,fd00::1", "", true},
		{"host", "", true},
		{"10.0.0.1,", "", true},
	}
	for _, tc := range tests {
		got, err := ParseNodeIPs(tc.in)
		if (err != nil) != tc.wantErr {
			t.Errorf("%q: err = %v", tc.in, err)
			continue
		}
		if strings.Join(got, ",") != tc.want {
			t.Errorf("%q: got %v, want %s", tc.in, got, tc.want)
		}
	}
}

func TestParseNodeLabels(t *testing.T) {
	tests := []struct {
		in      string
		want    map[string]string
		wantErr string
	}{
		{"", map[string]string{}, ""},
		{"a=b", map[string]string{"a": "b"}, ""},
		{"a=b, example.com/c=d ,e=", map[string]string{"a": "b", "example.com/c": "d", "e": ""}, ""},
		{"node.kubernetes.io/pool=", map[string]string{"node.kubernetes.io/pool": ""}, ""},
		{"node-role.kubernetes.io/worker=", nil, "node-role.kubernetes.io/worker"},
		{"kubernetes.io/hostname=x,node.kubernetes.io/instance-type=m5", map[string]string{"kubernetes.io/hostname": "x", "node.kubernetes.io/instance-type": "m5"}, ""},
		{"a", nil, "must be key=value"},
		{"bad key=b", nil, "bad key"},
		{"a=bad value", nil, "bad value"},
		{"kubernetes.io/role=master", nil, "kubernetes.io/role"},
		{"foo.k8s.io/x=y", nil, "foo.k8s.io/x"},
	}
	for _, tc := range tests {
		got, err := ParseNodeLabels(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: err = %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if !equal(got, tc.want) {
			t.Errorf("%q: got %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestParseTaints(t *testing.T) {
	tests := []struct {
		in      string
		want    []v1.Taint
		wantErr string
	}{
		{"", nil, ""},
		{"a=b:NoSchedule", []v1.Taint{{Key: "a", Value: "b", Effect: v1.TaintEffectNoSchedule}}, ""},
		{"dedicated:NoExecute, example.com/x=y:PreferNoSchedule", []v1.Taint{
			{Key: "dedicated", Effect: v1.TaintEffectNoExecute},
			{Key: "example.com/x", Value: "y", Effect: v1.TaintEffectPreferNoSchedule}}, ""},
		{"a=b:NoSchedule,a=c:NoExecute", []v1.Taint{
			{Key: "a", Value: "b", Effect: v1.TaintEffectNoSchedule},
			{Key: "a", Value: "c", Effect: v1.TaintEffectNoExecute}}, ""},
		{"a=b", nil, "key=value:Effect"},
		{"a=b:Sometimes", nil, "Sometimes"},
		{"a=b:", nil, "effect"},
		{"bad key=b:NoSchedule", nil, "bad key"},
		{"a=bad value:NoSchedule", nil, "bad value"},
		{"a=b:NoSchedule,a=c:NoSchedule", nil, "duplicate"},
	}
	for _, tc := range tests {
		got, err := ParseTaints(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: err = %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if len(got) != len(tc.want) {
			t.Errorf("%q: got %v", tc.in, got)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%q: [%d] got %v, want %v", tc.in, i, got[i], tc.want[i])
			}
		}
	}
}

func TestServerSecurityFlags(t *testing.T) {
	p := writeFile(t, "k.yaml", header+`
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
  x509:
    clientCAFile: /file/ca.crt
authorization:
  mode: AlwaysAllow
tlsCertFile: /file/tls.crt
tlsPrivateKeyFile: /file/tls.key
rotateCertificates: false
`)
	// The file's values stand without flags.
	s, err := settingsFor(t, "--config", p)
	if err != nil {
		t.Fatal(err)
	}
	c := s.Config
	if !*c.Authentication.Anonymous.Enabled || *c.Authentication.Webhook.Enabled || c.Authorization.Mode != "AlwaysAllow" ||
		c.Authentication.X509.ClientCAFile != "/file/ca.crt" || c.TLSCertFile != "/file/tls.crt" {
		t.Fatalf("file values: %+v %+v", c.Authentication, c.Authorization)
	}
	// Flags override them, one by one.
	s, err = settingsFor(t, "--config", p, "--anonymous-auth=false", "--authentication-token-webhook",
		"--authentication-token-webhook-cache-ttl=1m", "--client-ca-file=/flag/ca.crt", "--authorization-mode=Webhook",
		"--authorization-webhook-cache-authorized-ttl=1m", "--authorization-webhook-cache-unauthorized-ttl=2s",
		"--tls-cert-file=/flag/tls.crt", "--tls-private-key-file=/flag/tls.key", "--tls-min-version=VersionTLS13",
		"--rotate-certificates", "--rotate-server-certificates", "--enable-debugging-handlers=false",
		"--contention-profiling", "--enable-server=false", "--volume-stats-agg-period=30s")
	if err != nil {
		t.Fatal(err)
	}
	c = s.Config
	if *c.Authentication.Anonymous.Enabled || !*c.Authentication.Webhook.Enabled || c.Authentication.Webhook.CacheTTL.Duration != time.Minute ||
		c.Authentication.X509.ClientCAFile != "/flag/ca.crt" || c.Authorization.Mode != "Webhook" ||
		c.Authorization.Webhook.CacheAuthorizedTTL.Duration != time.Minute || c.Authorization.Webhook.CacheUnauthorizedTTL.Duration != 2*time.Second ||
		c.TLSCertFile != "/flag/tls.crt" || c.TLSPrivateKeyFile != "/flag/tls.key" || c.TLSMinVersion != "VersionTLS13" ||
		!c.RotateCertificates || !c.ServerTLSBootstrap || *c.EnableDebuggingHandlers || !c.EnableContentionProfiling || *c.EnableServer ||
		c.VolumeStatsAggPeriod.Duration != 30*time.Second {
		t.Fatalf("flags not applied: %+v", c)
	}
	// Defaults are upstream's config-file defaults: secure.
	s, err = settingsFor(t)
	if err != nil {
		t.Fatal(err)
	}
	c = s.Config
	if *c.Authentication.Anonymous.Enabled || !*c.Authentication.Webhook.Enabled || c.Authorization.Mode != "Webhook" || c.Port != 10250 {
		t.Errorf("defaults: %+v %+v", c.Authentication, c.Authorization)
	}
	// Bad TLS settings are refused, naming the flag.
	_, err = settingsFor(t, "--tls-min-version=VersionTLS9", "--tls-cipher-suites=TLS_NOPE")
	if err == nil || !strings.Contains(err.Error(), "--tls-min-version") || !strings.Contains(err.Error(), "tlsCipherSuites[0]") {
		t.Errorf("bad TLS settings: %v", err)
	}
	_, err = settingsFor(t, "--tls-min-version=VersionTLS13", "--tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256")
	if err == nil || !strings.Contains(err.Error(), "VersionTLS13") {
		t.Errorf("cipher suites with TLS 1.3: %v", err)
	}
}

func TestVirtualNodesConfig(t *testing.T) {
	vn := writeFile(t, "vn.yaml", `apiVersion: gokubelet.io/v1alpha1
kind: VirtualNodes
realNode: false
nodes:
- {name: vk-a, provider: mock, port: 10260}
`)
	s, err := settingsFor(t, "--virtual-nodes-config", vn, "--kubeconfig", "/k")
	if err != nil {
		t.Fatal(err)
	}
	if s.VirtualNodes == nil || len(s.VirtualNodes.Nodes) != 1 || s.RunsRealNode() || s.VirtualNodesConfigFile != vn {
		t.Fatalf("settings = %+v", s)
	}
	// Virtual nodes need an API server.
	if _, err := settingsFor(t, "--virtual-nodes-config", vn); err == nil || !strings.Contains(err.Error(), "virtual nodes need an API server") {
		t.Errorf("no kubeconfig: %v", err)
	}
	// Beside the real node, a virtual node's port and name must be its own.
	clash := writeFile(t, "clash.yaml", `apiVersion: gokubelet.io/v1alpha1
kind: VirtualNodes
nodes:
- {name: node-a.example.com, provider: mock, port: 10250}
`)
	_, err = settingsFor(t, "--virtual-nodes-config", clash, "--kubeconfig", "/k")
	if err == nil || !strings.Contains(err.Error(), "port 10250 is the real node's") || !strings.Contains(err.Error(), "real node's name") {
		t.Errorf("clash: %v", err)
	}
	bad := writeFile(t, "bad.yaml", "apiVersion: gokubelet.io/v1alpha1\nkind: VirtualNodes\nnodes: [{name: x}]\n")
	if _, err := settingsFor(t, "--virtual-nodes-config", bad, "--kubeconfig", "/k"); err == nil || !strings.Contains(err.Error(), "--virtual-nodes-config") {
		t.Errorf("invalid file: %v", err)
	}
}
