package dns

import (
	"fmt"
	"io"
	"os"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Limits of a pod's resolver configuration, as the API and the upstream
// kubelet apply them.
const (
	MaxNameservers     = 3
	MaxSearchPaths     = 32
	MaxSearchListChars = 2048
	// maxResolvConfBytes bounds how much of the host's file is read.
	maxResolvConfBytes = 10 << 20
)

// Event reasons (upstream's).
const (
	ReasonDNSConfigForming  = "DNSConfigForming"
	ReasonMissingClusterDNS = "MissingClusterDNS"
)

// Host is what the host's resolver file says.
type Host struct {
	Servers, Searches, Options []string
}

// ParseResolvConf reads a resolv.conf: nameserver lines in order, the last
// search line (trailing dots dropped, "." ignored), options merged by name
// (a later one replaces an earlier one of the same name). Comments start
// with '#' or ';'. A nameserver line without an address is an error.
func ParseResolvConf(r io.Reader) (Host, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxResolvConfBytes+1))
	if err != nil {
		return Host{}, err
	}
	if len(b) > maxResolvConfBytes {
		return Host{}, fmt.Errorf("resolver configuration is larger than %d bytes", maxResolvConfBytes)
	}
	h := Host{Servers: []string{}, Searches: []string{}, Options: []string{}}
	var errs []string
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";") {
			continue
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "nameserver":
			if len(f) < 2 {
				errs = append(errs, "nameserver list is empty")
				continue
			}
			h.Servers = append(h.Servers, f[1])
		case "search":
			h.Searches = []string{}
			for _, s := range f[1:] {
				if s != "." {
					h.Searches = append(h.Searches, strings.TrimSuffix(s, "."))
				}
			}
		case "options":
			h.Options = mergeOptions(h.Options, f[1:])
		}
	}
	if len(errs) > 0 {
		return h, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return h, nil
}

// ReadResolvConf reads the host's resolver file; "" means none (an empty
// Host).
func ReadResolvConf(path string) (Host, error) {
	if path == "" {
		return Host{}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return Host{}, err
	}
	defer f.Close()
	h, err := ParseResolvConf(f)
	if err != nil {
		return Host{}, fmt.Errorf("parsing %s: %w", path, err)
	}
	return h, nil
}

// Config is the kubelet's DNS settings.
type Config struct {
	// ClusterDNS are the cluster's DNS server IPs (clusterDNS).
	ClusterDNS []string
	// ClusterDomain is the cluster's domain (clusterDomain); may be empty.
	ClusterDomain string
	// ResolverConfig is the host's resolver file (resolvConf); "" means
	// none, and pods inheriting the host's config get the node's loopback
	// resolver instead.
	ResolverConfig string
	// NodeIPs are the node's IPs, used for that loopback resolver's family.
	NodeIPs []string
}

// Warning is something the caller reports as a Warning event (on the pod,
// and on the node too when Node is set) and logs.
type Warning struct {
	Reason  string
	Message string
	Node    bool
}

// Policy is the effective DNS policy: ClusterFirst on the host network
// means Default; an empty policy means ClusterFirst.
func Policy(pod *v1.Pod) v1.DNSPolicy {
	switch pod.Spec.DNSPolicy {
	case v1.DNSNone, v1.DNSDefault, v1.DNSClusterFirstWithHostNet:
		return pod.Spec.DNSPolicy
	}
	if pod.Spec.HostNetwork {
		return v1.DNSDefault
	}
	return v1.DNSClusterFirst
}

// PodDNS returns the resolver configuration of pod's sandbox, from its
// dnsPolicy, its dnsConfig, the kubelet's cluster DNS settings and the
// host's resolver file:
//
//   - None: only dnsConfig;
//   - ClusterFirst (not host network) and ClusterFirstWithHostNet: the
//     cluster DNS servers, search <ns>.svc.<domain> svc.<domain> <domain>
//     then the host's, options ndots:5; without cluster DNS servers, the
//     host's configuration, with a MissingClusterDNS warning;
//   - Default (and ClusterFirst on the host network): the host's; with no
//     resolver file, the node's loopback resolver and search ".";
//
// then dnsConfig's nameservers, searches (duplicates dropped) and options
// (by name) are added, and the limits applied: at most 3 nameservers, 32
// search paths of at most 253 characters, 2048 characters of search line;
// anything cut gives a DNSConfigForming warning.
func PodDNS(pod *v1.Pod, host Host, cfg Config) (*runtimeapi.DNSConfig, []Warning) {
	var warns []Warning
	out := &runtimeapi.DNSConfig{
		Servers:  append([]string(nil), host.Servers...),
		Searches: append([]string(nil), host.Searches...),
		Options:  append([]string(nil), host.Options...),
	}
	policy := Policy(pod)
	useHost := policy == v1.DNSDefault
	switch policy {
	case v1.DNSNone:
		out = &runtimeapi.DNSConfig{}
	case v1.DNSClusterFirst, v1.DNSClusterFirstWithHostNet:
		if len(cfg.ClusterDNS) == 0 {
			msg := fmt.Sprintf("kubelet does not have ClusterDNS IP configured and cannot create Pod using %q policy. Falling back to %q policy.", v1.DNSClusterFirst, v1.DNSDefault)
			warns = append(warns, Warning{Reason: ReasonMissingClusterDNS, Message: msg, Node: true})
			useHost = true
			break
		}
		out.Servers = append([]string(nil), cfg.ClusterDNS...)
		if cfg.ClusterDomain != "" {
			d := cfg.ClusterDomain
			out.Searches = dedupe(append([]string{pod.Namespace + ".svc." + d, "svc." + d, d}, host.Searches...))
		}
		out.Options = []string{"ndots:5"}
	}
	if useHost && cfg.ResolverConfig == "" {
		out.Servers = nil
		for _, ip := range cfg.NodeIPs {
			if strings.Contains(ip, ":") {
				out.Servers = append(out.Servers, "::1")
			} else {
				out.Servers = append(out.Servers, "127.0.0.1")
			}
		}
		if len(out.Servers) == 0 {
			out.Servers = []string{"127.0.0.1"}
		}
		out.Searches = []string{"."}
		out.Options = nil
	}
	if dc := pod.Spec.DNSConfig; dc != nil {
		out.Servers = dedupe(append(out.Servers, dc.Nameservers...))
		out.Searches = dedupe(append(out.Searches, dc.Searches...))
		var opts []string
		for _, o := range dc.Options {
			if o.Value != nil && *o.Value != "" {
				opts = append(opts, o.Name+":"+*o.Value)
			} else {
				opts = append(opts, o.Name)
			}
		}
		out.Options = mergeOptions(out.Options, opts)
	}
	if len(out.Servers) > MaxNameservers {
		out.Servers = out.Servers[:MaxNameservers]
		warns = append(warns, Warning{Reason: ReasonDNSConfigForming,
			Message: "Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: " + strings.Join(out.Servers, " ")})
	}
	var cut bool
	out.Searches, cut = fitSearches(out.Searches)
	if cut {
		warns = append(warns, Warning{Reason: ReasonDNSConfigForming,
			Message: "Search Line limits were exceeded, some search paths have been omitted, the applied search line is: " + strings.Join(out.Searches, " ")})
	}
	return out, warns
}

// fitSearches applies the search path limits: 32 paths, each at most 253
// characters (longer ones dropped), 2048 characters in all (cut from the
// end).
func fitSearches(s []string) ([]string, bool) {
	cut := false
	if len(s) > MaxSearchPaths {
		s, cut = s[:MaxSearchPaths], true
	}
	kept := s[:0:0]
	for _, d := range s {
		if len(d) > validation.DNS1123SubdomainMaxLength {
			cut = true
			continue
		}
		kept = append(kept, d)
	}
	for len(kept) > 0 && len(strings.Join(kept, " ")) > MaxSearchListChars {
		kept, cut = kept[:len(kept)-1], true
	}
	if len(kept) == 0 && len(s) == 0 {
		return s, cut
	}
	return kept, cut
}

func dedupe(in []string) []string {
	seen := map[string]bool{}
	out := make([]string, 0, len(in))
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// mergeOptions adds options to base; one with the name of an earlier one
// ("ndots:2" and "ndots:5") replaces its value in place.
func mergeOptions(base, add []string) []string {
	out := append([]string{}, base...)
	for _, o := range add {
		name, _, _ := strings.Cut(o, ":")
		replaced := false
		for i, b := range out {
			if bn, _, _ := strings.Cut(b, ":"); bn == name {
				out[i], replaced = o, true
				break
			}
		}
		if !replaced {
			out = append(out, o)
		}
	}
	return out
}

// ResolvConf renders a DNS configuration as the resolv.conf the runtime
// writes (for tests and diagnostics).
func ResolvConf(c *runtimeapi.DNSConfig) string {
	var b strings.Builder
	if len(c.Searches) > 0 {
		b.WriteString("search " + strings.Join(c.Searches, " ") + "\n")
	}
	for _, s := range c.Servers {
		b.WriteString("nameserver " + s + "\n")
	}
	if len(c.Options) > 0 {
		b.WriteString("options " + strings.Join(c.Options, " ") + "\n")
	}
	return b.String()
}
