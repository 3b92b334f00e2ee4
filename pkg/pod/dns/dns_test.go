package dns

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestParseResolvConf(t *testing.T) {
	in := `# comment
; another
nameserver 192.0.2.53
nameserver   192.0.2.54  # trailing
search old.example
search example.org. corp.example . 
options ndots:2 edns0
options ndots:3 rotate
domain ignored.example
`
	h, err := ParseResolvConf(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := Host{
		Servers:  []string{"192.0.2.53", "192.0.2.54"},
		Searches: []string{"example.org", "corp.example"},
		Options:  []string{"ndots:3", "edns0", "rotate"},
	}
	if !reflect.DeepEqual(h, want) {
		t.Errorf("got %+v\nwant %+v", h, want)
	}
	if _, err := ParseResolvConf(strings.NewReader("nameserver\n")); err == nil {
		t.Errorf("empty nameserver line accepted")
	}
}

func pod(policy v1.DNSPolicy, hostNet bool) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "team"}, Spec: v1.PodSpec{DNSPolicy: policy, HostNetwork: hostNet}}
}

func TestPodDNS(t *testing.T) {
	host := Host{Servers: []string{"192.0.2.53"}, Searches: []string{"example.org"}, Options: []string{"edns0"}}
	cluster := Config{ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local", ResolverConfig: "/etc/resolv.conf", NodeIPs: []string{"192.0.2.1"}}
	noCluster := cluster
	noCluster.ClusterDNS = nil
	noFile := cluster
	noFile.ResolverConfig = ""
	clusterSearch := []string{"team.svc.cluster.local", "svc.cluster.local", "cluster.local", "example.org"}
	withDNSConfig := func(p *v1.Pod) *v1.Pod {
		p.Spec.DNSConfig = &v1.PodDNSConfig{
			Nameservers: []string{"203.0.113.1", "10.96.0.10"},
			Searches:    []string{"my.dns.search", "cluster.local"},
			Options:     []v1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("2")}, {Name: "single-request"}},
		}
		return p
	}
	for _, tc := range []struct {
		name     string
		pod      *v1.Pod
		cfg      Config
		servers  []string
		searches []string
		options  []string
		warnings []string
	}{
		{"ClusterFirst", pod(v1.DNSClusterFirst, false), cluster, []string{"10.96.0.10"}, clusterSearch, []string{"ndots:5"}, nil},
		{"empty policy means ClusterFirst", pod("", false), cluster, []string{"10.96.0.10"}, clusterSearch, []string{"ndots:5"}, nil},
		{"ClusterFirst on host network is Default", pod(v1.DNSClusterFirst, true), cluster, host.Servers, host.Searches, host.Options, nil},
		{"ClusterFirstWithHostNet", pod(v1.DNSClusterFirstWithHostNet, true), cluster, []string{"10.96.0.10"}, clusterSearch, []string{"ndots:5"}, nil},
		{"Default", pod(v1.DNSDefault, false), cluster, host.Servers, host.Searches, host.Options, nil},
		{"None", pod(v1.DNSNone, false), cluster, nil, nil, nil, nil},
		{"ClusterFirst without cluster DNS falls back", pod(v1.DNSClusterFirst, false), noCluster, host.Servers, host.Searches, host.Options, []string{ReasonMissingClusterDNS}},
		{"Default without a resolver file", pod(v1.DNSDefault, false), noFile, []string{"127.0.0.1"}, []string{"."}, nil, nil},
		{"ClusterFirst without cluster domain keeps host search", pod(v1.DNSClusterFirst, false), Config{ClusterDNS: []string{"10.96.0.10"}, ResolverConfig: "/r"}, []string{"10.96.0.10"}, host.Searches, []string{"ndots:5"}, nil},
		{"None with dnsConfig", withDNSConfig(pod(v1.DNSNone, false)), cluster, []string{"203.0.113.1", "10.96.0.10"}, []string{"my.dns.search", "cluster.local"}, []string{"ndots:2", "single-request"}, nil},
		{"ClusterFirst with dnsConfig merges", withDNSConfig(pod(v1.DNSClusterFirst, false)), cluster,
			[]string{"10.96.0.10", "203.0.113.1"}, append(append([]string{}, clusterSearch...), "my.dns.search"), []string{"ndots:2", "single-request"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, warns := PodDNS(tc.pod, host, tc.cfg)
			if !reflect.DeepEqual(nilIfEmpty(got.Servers), tc.servers) || !reflect.DeepEqual(nilIfEmpty(got.Searches), tc.searches) || !reflect.DeepEqual(nilIfEmpty(got.Options), tc.options) {
				t.Errorf("got servers %v searches %v options %v\nwant %v %v %v", got.Servers, got.Searches, got.Options, tc.servers, tc.searches, tc.options)
			}
			var reasons []string
			for _, w := range warns {
				reasons = append(reasons, w.Reason)
			}
			if !reflect.DeepEqual(reasons, tc.warnings) {
				t.Errorf("warnings %v, want %v", warns, tc.warnings)
			}
		})
	}
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func TestPodDNSLimits(t *testing.T) {
	p := pod(v1.DNSNone, false)
	p.Spec.DNSConfig = &v1.PodDNSConfig{Nameservers: []string{"1.1.1.1", "1.1.1.2", "1.1.1.3", "1.1.1.4"}}
	for i := 0; i < 40; i++ {
		p.Spec.DNSConfig.Searches = append(p.Spec.DNSConfig.Searches, fmt.Sprintf("d%d.example", i))
	}
	got, warns := PodDNS(p, Host{}, Config{})
	if len(got.Servers) != MaxNameservers || len(got.Searches) != MaxSearchPaths || len(warns) != 2 {
		t.Errorf("servers %d searches %d warnings %v", len(got.Servers), len(got.Searches), warns)
	}
	for _, w := range warns {
		if w.Reason != ReasonDNSConfigForming {
			t.Errorf("reason %s", w.Reason)
		}
	}
	// Long paths are dropped; the whole line is cut to 2048 characters.
	long := strings.Repeat("a", 254)
	p.Spec.DNSConfig = &v1.PodDNSConfig{Searches: []string{"ok.example", long}}
	got, _ = PodDNS(p, Host{}, Config{})
	if !reflect.DeepEqual(got.Searches, []string{"ok.example"}) {
		t.Errorf("overlong path kept: %v", got.Searches)
	}
	p.Spec.DNSConfig.Searches = nil
	for i := 0; i < 20; i++ {
		p.Spec.DNSConfig.Searches = append(p.Spec.DNSConfig.Searches, fmt.Sprintf("%03d.%s", i, strings.Repeat("b", 200)))
	}
	got, warns = PodDNS(p, Host{}, Config{})
	if n := len(strings.Join(got.Searches, " ")); n > MaxSearchListChars || len(got.Searches) != 9 || len(warns) != 1 {
		t.Errorf("search line %d chars, %d paths, warnings %v", n, len(got.Searches), warns)
	}
}

func TestHostname(t *testing.T) {
	long := strings.Repeat("a", 62) + "-b-c"
	for _, tc := range []struct {
		name, hostname, subdomain string
		override                  string
		fqdn                      bool
		hostNet                   bool
		wantHost, wantDomain      string
		wantKernel                string
		wantErr                   bool
	}{
		{name: "web-0", wantHost: "web-0", wantKernel: "web-0"},
		{name: "web-0", hostname: "box", wantHost: "box", wantKernel: "box"},
		{name: "web-0", hostname: "box", subdomain: "sub", wantHost: "box", wantDomain: "sub.team.svc.cluster.local", wantKernel: "box"},
		{name: "web-0", hostname: "box", subdomain: "sub", fqdn: true, wantHost: "box", wantDomain: "sub.team.svc.cluster.local", wantKernel: "box.sub.team.svc.cluster.local"},
		{name: "web-0", fqdn: true, wantHost: "web-0", wantKernel: "web-0"}, // no subdomain: no FQDN
		{name: long, wantHost: strings.Repeat("a", 62), wantKernel: strings.Repeat("a", 62)},
		{name: "web-0", hostname: strings.Repeat("h", 40), subdomain: "sub", fqdn: true, wantHost: strings.Repeat("h", 40), wantDomain: "sub.team.svc.cluster.local", wantErr: true},
		{name: "web-0", hostNet: true, wantHost: "web-0", wantKernel: ""},
		// hostnameOverride replaces hostname and subdomain; no domain.
		{name: "web-0", override: "override.example.host", wantHost: "override.example.host", wantKernel: "override.example.host"},
		{name: "web-0", hostname: "box", override: "override-host", wantHost: "override-host", wantKernel: "override-host"},
		{name: "web-0", subdomain: "t", override: "override-host", wantHost: "override-host", wantKernel: "override-host"},
		{name: "web-0", override: strings.Repeat("o", 62) + ".x", wantHost: strings.Repeat("o", 62), wantKernel: strings.Repeat("o", 62)},
	} {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: tc.name, Namespace: "team"},
			Spec: v1.PodSpec{Hostname: tc.hostname, Subdomain: tc.subdomain, HostNetwork: tc.hostNet, SetHostnameAsFQDN: ptr.To(tc.fqdn)}}
		if tc.override != "" {
			p.Spec.HostnameOverride = ptr.To(tc.override)
		}
		h, d, err := Hostname(p, "cluster.local")
		if err != nil || h != tc.wantHost || d != tc.wantDomain {
			t.Errorf("%+v: Hostname = %q %q %v", tc, h, d, err)
		}
		k, err := KernelHostname(p, "cluster.local")
		if (err != nil) != tc.wantErr || (!tc.wantErr && k != tc.wantKernel) {
			t.Errorf("%+v: KernelHostname = %q %v", tc, k, err)
		}
	}
	if _, _, err := Hostname(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1.PodSpec{HostnameOverride: ptr.To("Not-RFC1123")}}, "cluster.local"); err == nil ||
		!strings.Contains(err.Error(), "HostnameOverride") {
		t.Errorf("invalid hostnameOverride: %v, want an error naming it", err)
	}
	bad := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1.PodSpec{Hostname: "Not_A_Label"}}
	if _, _, err := Hostname(bad, "cluster.local"); err == nil {
		t.Errorf("invalid hostname accepted")
	}
}

func TestManagedHosts(t *testing.T) {
	aliases := []v1.HostAlias{{IP: "123.45.67.89", Hostnames: []string{"foo", "bar"}}, {IP: "::2", Hostnames: []string{"six"}}}
	got := string(ManagedHosts([]string{"10.1.0.2", "fd00::2"}, "box", "sub.team.svc.cluster.local", aliases))
	want := `# Kubernetes-managed hosts file.
127.0.0.1	localhost
::1	localhost ip6-localhost ip6-loopback
fe00::0	ip6-localnet
fe00::0	ip6-mcastprefix
fe00::1	ip6-allnodes
fe00::2	ip6-allrouters
10.1.0.2	box.sub.team.svc.cluster.local	box
fd00::2	box.sub.team.svc.cluster.local	box

# Entries added by HostAliases.
123.45.67.89	foo	bar
::2	six
`
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if got := string(ManagedHosts([]string{"10.1.0.2"}, "web", "", nil)); !strings.HasSuffix(got, "fe00::2\tip6-allrouters\n10.1.0.2\tweb\n") {
		t.Errorf("without domain or aliases:\n%s", got)
	}
	hn := string(HostNetworkHosts([]byte("127.0.0.1 localhost\n192.0.2.1 node\n"), aliases[:1]))
	if hn != ManagedHostsHeaderHostNetwork+"127.0.0.1 localhost\n192.0.2.1 node\n\n# Entries added by HostAliases.\n123.45.67.89\tfoo\tbar\n" {
		t.Errorf("host network:\n%s", hn)
	}
	if strings.HasPrefix(hn, ManagedHostsHeader) {
		t.Errorf("a host-network hosts file must not look pod-managed")
	}
}

func TestMountsHostsAndWrite(t *testing.T) {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team"}}
	c := &v1.Container{Name: "c"}
	if MountsHosts(p, c, nil) {
		t.Errorf("pod network without an IP yet must not get the file")
	}
	if !MountsHosts(p, c, []string{"10.1.0.2"}) {
		t.Errorf("pod with an IP must get the file")
	}
	own := &v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "v", MountPath: "/etc/hosts/"}}}
	if MountsHosts(p, own, []string{"10.1.0.2"}) {
		t.Errorf("a container mounting /etc/hosts itself must not get the file")
	}
	hp := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "h"}, Spec: v1.PodSpec{HostNetwork: true}}
	if !MountsHosts(hp, c, nil) {
		t.Errorf("host network pods get the node's file")
	}

	dir := t.TempDir()
	path, err := WriteHostsFile(filepath.Join(dir, "pod"), p, []string{"10.1.0.2"}, "cluster.local", "")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	st, _ := os.Stat(path)
	if path != filepath.Join(dir, "pod", "etc-hosts") || !strings.Contains(string(b), "10.1.0.2\tweb\n") || st.Mode().Perm() != 0o644 {
		t.Errorf("wrote %s (%v):\n%s", path, st.Mode(), b)
	}
	nodeHosts := filepath.Join(dir, "hosts")
	os.WriteFile(nodeHosts, []byte("192.0.2.1 node\n"), 0o644)
	path, err = WriteHostsFile(filepath.Join(dir, "hostpod"), hp, nil, "cluster.local", nodeHosts)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != ManagedHostsHeaderHostNetwork+"192.0.2.1 node\n" {
		t.Errorf("host network file:\n%s", b)
	}
}
