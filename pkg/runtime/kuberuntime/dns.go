package kuberuntime

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Limits the upstream kubelet applies to a pod's resolver configuration.
const (
	maxDNSNameservers   = 3
	maxDNSSearchDomains = 32
)

// hostDNS is what the host's resolv.conf says.
type hostDNS struct {
	Servers, Searches, Options []string
}

func parseResolvConf(r io.Reader) hostDNS {
	var d hostDNS
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexAny(line, "#;"); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "nameserver":
			if len(f) > 1 {
				d.Servers = append(d.Servers, f[1])
			}
		case "search":
			// The last search line wins, as in the resolver.
			d.Searches = append([]string(nil), f[1:]...)
		case "domain":
			if len(f) > 1 {
				d.Searches = []string{f[1]}
			}
		case "options":
			d.Options = append(d.Options, f[1:]...)
		}
	}
	return d
}

func readHostDNS(path string) (hostDNS, error) {
	if path == "" {
		return hostDNS{}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return hostDNS{}, fmt.Errorf("reading resolver config %s: %w", path, err)
	}
	defer f.Close()
	return parseResolvConf(f), nil
}

// DNSConfig builds the pod's resolver configuration from its dnsPolicy and
// dnsConfig, the kubelet's cluster DNS settings and the host's resolv.conf.
// ClusterFirst with no cluster DNS server falls back to the host's config.
func DNSConfig(pod *v1.Pod, host hostDNS, clusterDNS []string, clusterDomain string) *runtimeapi.DNSConfig {
	policy := pod.Spec.DNSPolicy
	if policy == "" {
		policy = v1.DNSClusterFirst
	}
	useCluster := false
	switch policy {
	case v1.DNSClusterFirstWithHostNet:
		useCluster = true
	case v1.DNSClusterFirst:
		useCluster = !pod.Spec.HostNetwork
	}
	if useCluster && len(clusterDNS) == 0 {
		useCluster = false
	}
	cfg := &runtimeapi.DNSConfig{}
	switch {
	case policy == v1.DNSNone:
	case useCluster:
		cfg.Servers = append([]string(nil), clusterDNS...)
		ns := pod.Namespace
		cfg.Searches = []string{ns + ".svc." + clusterDomain, "svc." + clusterDomain, clusterDomain}
		cfg.Searches = append(cfg.Searches, host.Searches...)
		cfg.Options = []string{"ndots:5"}
	default:
		cfg.Servers = append([]string(nil), host.Servers...)
		cfg.Searches = append([]string(nil), host.Searches...)
		cfg.Options = append([]string(nil), host.Options...)
	}
	if dc := pod.Spec.DNSConfig; dc != nil {
		cfg.Servers = dedupe(append(cfg.Servers, dc.Nameservers...))
		cfg.Searches = dedupe(append(cfg.Searches, dc.Searches...))
		cfg.Options = mergeOptions(cfg.Options, dc.Options)
	}
	if len(cfg.Servers) > maxDNSNameservers {
		cfg.Servers = cfg.Servers[:maxDNSNameservers]
	}
	if len(cfg.Searches) > maxDNSSearchDomains {
		cfg.Searches = cfg.Searches[:maxDNSSearchDomains]
	}
	return cfg
}

func dedupe(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// mergeOptions adds pod options to base; an option of the same name
// replaces the base one.
func mergeOptions(base []string, pod []v1.PodDNSConfigOption) []string {
	var names []string
	vals := map[string]string{}
	add := func(name, val string) {
		if _, ok := vals[name]; !ok {
			names = append(names, name)
		}
		vals[name] = val
	}
	for _, o := range base {
		n, v, _ := strings.Cut(o, ":")
		add(n, v)
	}
	for _, o := range pod {
		v := ""
		if o.Value != nil {
			v = *o.Value
		}
		add(o.Name, v)
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		if vals[n] == "" {
			out = append(out, n)
		} else {
			out = append(out, n+":"+vals[n])
		}
	}
	return out
}
