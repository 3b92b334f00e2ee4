package prober

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// EventFieldsIgnored is the warning a pod gets when a probe sets a field
// of an alpha feature whose gate is off on this node (upstream ignores such
// a field without a word): an httpGet's protocol (H2CContainerProbe), a
// grpc probe's mode (GRPCContainerProbeTLS).
const EventFieldsIgnored = "ProbeFieldsIgnored"

// ignoredField is a probe field set but ignored, and the gate that is off.
type ignoredField struct{ field, gate string }

// ignoredFields are the fields of p this node ignores with the gates as
// opts has them.
func ignoredFields(p *v1.Probe, opts *Options) []ignoredField {
	var out []ignoredField
	if p.HTTPGet != nil && p.HTTPGet.Protocol != nil && !opts.H2C {
		out = append(out, ignoredField{"httpGet.protocol", "H2CContainerProbe"})
	}
	if p.GRPC != nil && p.GRPC.Mode != nil && !opts.GRPCTLS {
		out = append(out, ignoredField{"grpc.mode", "GRPCContainerProbeTLS"})
	}
	return out
}

// warnIgnoredFields says, when a probe's worker starts, which of its
// fields are ignored here and why.
func (m *Manager) warnIgnoredFields(pod *v1.Pod, c *v1.Container, kind Kind) {
	for _, f := range ignoredFields(probeOf(c, kind), &m.opts) {
		klog.InfoS("Probe field ignored", "pod", klog.KObj(pod), "container", c.Name, "probe", kind, "field", f.field, "reason", "the "+f.gate+" feature gate is off")
		m.opts.Recorder.Eventf(pod, v1.EventTypeWarning, EventFieldsIgnored, "%s probe of container %s sets %s, which this node ignores: the %s feature gate is off", kind, c.Name, f.field, f.gate)
	}
}
