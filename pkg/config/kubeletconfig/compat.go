package kubeletconfig

import (
	_ "embed"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gokubelet/kubelet/pkg/upstream"
)

// upstreamVersion is the upstream kubelet whose flags, fields and feature
// gates this kubelet follows.
const upstreamVersion = upstream.Version

//go:embed upstream_flags.txt
var upstreamFlagsText string

// UpstreamFlag is a flag of the upstream kubelet.
type UpstreamFlag struct {
	Name string
	// Type is pflag's value type name (string, int32, duration, ...).
	Type string
	// Bool flags take no value (--flag means --flag=true).
	Bool bool
	// Deprecated upstream (most flags that set a config field are).
	Deprecated bool
}

// UpstreamFlags returns the flags of the upstream kubelet (upstreamVersion).
func UpstreamFlags() []UpstreamFlag {
	var out []UpstreamFlag
	for _, line := range strings.Split(upstreamFlagsText, "\n") {
		f := strings.Fields(line)
		if len(f) != 4 || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, UpstreamFlag{Name: f[0], Type: f[1], Bool: f[2] == "true", Deprecated: f[3] == "deprecated"})
	}
	return out
}

// CompatFlagFields maps each upstream flag this kubelet accepts without
// implementing it and that sets a KubeletConfiguration field to the field
// (its JSON name), as upstream's cmd/kubelet/app/options binds it. An
// upstream flag that sets a field this kubelet implements is bound instead
// (ConfigFlagNames); TestAcceptedOnlyFlags fails when a field here becomes
// implemented, or when an accepted-only flag is in neither this map nor
// compatFlagsWithoutField.
var CompatFlagFields = map[string]string{
	"cpu-manager-policy":              "cpuManagerPolicy",
	"cpu-manager-policy-options":      "cpuManagerPolicyOptions",
	"cpu-manager-reconcile-period":    "cpuManagerReconcilePeriod",
	"fail-cgroupv1":                   "failCgroupV1",
	"hairpin-mode":                    "hairpinMode",
	"kernel-memcg-notification":       "kernelMemcgNotification",
	"make-iptables-util-chains":       "makeIPTablesUtilChains",
	"max-open-files":                  "maxOpenFiles",
	"memory-manager-policy":           "memoryManagerPolicy",
	"pod-cidr":                        "podCIDR",
	"pods-per-core":                   "podsPerCore",
	"protect-kernel-defaults":         "protectKernelDefaults",
	"qos-reserved":                    "qosReserved",
	"registry-burst":                  "registryBurst",
	"registry-qps":                    "registryPullQPS",
	"reserved-cpus":                   "reservedSystemCPUs",
	"reserved-memory":                 "reservedMemory",
	"runonce":                         "runOnce",
	"topology-manager-policy":         "topologyManagerPolicy",
	"topology-manager-policy-options": "topologyManagerPolicyOptions",
	"topology-manager-scope":          "topologyManagerScope",
	"volume-plugin-dir":               "volumePluginDir",
}

// compatFlagsWithoutField are the accepted-only upstream flags that set no
// KubeletConfiguration field (upstream's KubeletFlags, container runtime
// options and cadvisor's global flags).
var compatFlagsWithoutField = map[string]bool{
	"cloud-provider":          true,
	"exit-on-lock-contention": true, "experimental-allocatable-ignore-eviction": true,
	"experimental-mounter-path": true, "housekeeping-interval": true, "image-credential-provider-bin-dir": true,
	"image-credential-provider-config": true, "lock-file": true, "maximum-dead-containers": true,
	"maximum-dead-containers-per-container": true, "minimum-container-ttl-duration": true,
}

// addCompatFlags accepts every flag of the upstream kubelet that this one
// does not define (bools take no value, others take any value and may be
// repeated). They are hidden from --help; setting one warns by name
// (compatFlagWarnings). Call it after every real flag is on fs; names the
// command adds itself (--version, --help) are skipped.
func (o *Options) addCompatFlags(fs *pflag.FlagSet) {
	o.compat = map[string]bool{}
	for _, f := range UpstreamFlags() {
		if f.Name == "version" || f.Name == "help" || fs.Lookup(f.Name) != nil {
			continue
		}
		if f.Bool {
			fs.Bool(f.Name, false, "Accepted for compatibility with the upstream kubelet; not implemented, ignored with a warning.")
		} else {
			fs.Var(&anyValue{typ: f.Type}, f.Name, "Accepted for compatibility with the upstream kubelet; not implemented, ignored with a warning.")
		}
		_ = fs.MarkHidden(f.Name)
		o.compat[f.Name] = true
	}
}

// compatFlagWarnings names each accepted-but-unimplemented flag that was
// given.
func (o *Options) compatFlagWarnings() []string {
	var names []string
	for n := range o.compat {
		if o.fs.Changed(n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var out []string
	for _, n := range names {
		if field, ok := CompatFlagFields[n]; ok {
			out = append(out, fmt.Sprintf("flag --%s is a flag of the upstream kubelet that this kubelet does not implement; it is ignored (it sets field %q, which is not implemented either)", n, field))
			continue
		}
		out = append(out, fmt.Sprintf("flag --%s is a flag of the upstream kubelet that this kubelet does not implement; it is ignored", n))
	}
	return out
}

// CompatFlagNames returns the upstream flags accepted without being
// implemented, sorted (for documentation and tests).
func (o *Options) CompatFlagNames() []string {
	var out []string
	for n := range o.compat {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// anyValue accepts any value for a flag that is only warned about.
type anyValue struct {
	typ    string
	values []string
}

func (a *anyValue) String() string     { return strings.Join(a.values, ",") }
func (a *anyValue) Set(s string) error { a.values = append(a.values, s); return nil }
func (a *anyValue) Type() string       { return a.typ }
