package staticpod

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

// validatePod checks a defaulted pod. It covers what a static pod most often
// gets wrong; it is not the API server's full validation.
func validatePod(pod *v1.Pod) field.ErrorList {
	var errs field.ErrorList
	meta := field.NewPath("metadata")
	if pod.Name == "" {
		errs = append(errs, field.Required(meta.Child("name"), "a static pod needs a name"))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(pod.Name) {
			errs = append(errs, field.Invalid(meta.Child("name"), pod.Name, msg))
		}
	}
	if pod.UID != "" {
		// The UID names the pod's directories on the host (pods/<uid>,
		// the log dir): one clean path element or nothing. Unset, it is
		// derived from the manifest (identity.go).
		if err := podspec.UIDPathElement(string(pod.UID)); err != nil {
			errs = append(errs, field.Invalid(meta.Child("uid"), pod.UID, fmt.Sprintf("must be one clean path element: %v", err)))
		}
	}
	for _, msg := range validation.IsDNS1123Label(pod.Namespace) {
		errs = append(errs, field.Invalid(meta.Child("namespace"), pod.Namespace, msg))
	}
	errs = append(errs, metavalidation.ValidateLabels(pod.Labels, meta.Child("labels"))...)
	errs = append(errs, apimachineryvalidation.ValidateAnnotations(pod.Annotations, meta.Child("annotations"))...)
	errs = append(errs, validateSpec(&pod.Spec, field.NewPath("spec"))...)
	return errs
}

var (
	restartPolicies = sets.New(v1.RestartPolicyAlways, v1.RestartPolicyOnFailure, v1.RestartPolicyNever)
	dnsPolicies     = sets.New(v1.DNSClusterFirst, v1.DNSClusterFirstWithHostNet, v1.DNSDefault, v1.DNSNone)
	pullPolicies    = sets.New(v1.PullAlways, v1.PullIfNotPresent, v1.PullNever)
	protocols       = sets.New(v1.ProtocolTCP, v1.ProtocolUDP, v1.ProtocolSCTP)
	msgPolicies     = sets.New(v1.TerminationMessageReadFile, v1.TerminationMessageFallbackToLogsOnError)
)

func validateSpec(spec *v1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(spec.Containers) == 0 {
		errs = append(errs, field.Required(path.Child("containers"), "a pod needs at least one container"))
	}
	if len(spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(path.Child("ephemeralContainers"), "static pods cannot have ephemeral containers"))
	}
	if !restartPolicies.Has(spec.RestartPolicy) {
		errs = append(errs, field.NotSupported(path.Child("restartPolicy"), spec.RestartPolicy, sets.List(restartPolicies)))
	}
	if !dnsPolicies.Has(spec.DNSPolicy) {
		errs = append(errs, field.NotSupported(path.Child("dnsPolicy"), spec.DNSPolicy, sets.List(dnsPolicies)))
	}
	if g := spec.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		errs = append(errs, field.Invalid(path.Child("terminationGracePeriodSeconds"), *g, "must be greater than or equal to 0"))
	}
	if d := spec.ActiveDeadlineSeconds; d != nil && *d <= 0 {
		errs = append(errs, field.Invalid(path.Child("activeDeadlineSeconds"), *d, "must be greater than 0"))
	}

	volumes, volErrs := validateVolumes(spec.Volumes, path.Child("volumes"))
	errs = append(errs, volErrs...)

	names := sets.New[string]()
	for i := range spec.InitContainers {
		errs = append(errs, validateContainer(&spec.InitContainers[i], true, spec.HostNetwork, names, volumes,
			path.Child("initContainers").Index(i))...)
	}
	for i := range spec.Containers {
		errs = append(errs, validateContainer(&spec.Containers[i], false, spec.HostNetwork, names, volumes,
			path.Child("containers").Index(i))...)
	}
	errs = append(errs, validateHostPorts(spec.Containers, path.Child("containers"))...)
	errs = append(errs, validateHostPorts(spec.InitContainers, path.Child("initContainers"))...)
	return errs
}

func validateVolumes(volumes []v1.Volume, path *field.Path) (sets.Set[string], field.ErrorList) {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, v := range volumes {
		p := path.Index(i).Child("name")
		switch {
		case v.Name == "":
			errs = append(errs, field.Required(p, ""))
		case names.Has(v.Name):
			errs = append(errs, field.Duplicate(p, v.Name))
		default:
			for _, msg := range validation.IsDNS1123Label(v.Name) {
				errs = append(errs, field.Invalid(p, v.Name, msg))
			}
		}
		names.Insert(v.Name)
	}
	return names, errs
}

func validateContainer(c *v1.Container, isInit, hostNetwork bool, names, volumes sets.Set[string], path *field.Path) field.ErrorList {
	var errs field.ErrorList
	namePath := path.Child("name")
	switch {
	case c.Name == "":
		errs = append(errs, field.Required(namePath, ""))
	case names.Has(c.Name):
		// Names are unique across init and app containers: both share the
		// pod's status and the runtime's container names.
		errs = append(errs, field.Duplicate(namePath, c.Name))
	default:
		for _, msg := range validation.IsDNS1123Label(c.Name) {
			errs = append(errs, field.Invalid(namePath, c.Name, msg))
		}
	}
	names.Insert(c.Name)

	if strings.TrimSpace(c.Image) == "" {
		errs = append(errs, field.Required(path.Child("image"), "a container needs an image"))
	} else if c.Image != strings.TrimSpace(c.Image) {
		errs = append(errs, field.Invalid(path.Child("image"), c.Image, "must not have leading or trailing whitespace"))
	}
	if !pullPolicies.Has(c.ImagePullPolicy) {
		errs = append(errs, field.NotSupported(path.Child("imagePullPolicy"), c.ImagePullPolicy, sets.List(pullPolicies)))
	}
	if !msgPolicies.Has(c.TerminationMessagePolicy) {
		errs = append(errs, field.NotSupported(path.Child("terminationMessagePolicy"), c.TerminationMessagePolicy, sets.List(msgPolicies)))
	}
	errs = append(errs, validateContainerRestart(c, path)...)
	// Probes on a plain init container make no sense: it must run to completion.
	sidecar := isInit && c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
	if isInit && !sidecar {
		if c.LivenessProbe != nil {
			errs = append(errs, field.Forbidden(path.Child("livenessProbe"), "may not be set for init containers without restartPolicy=Always"))
		}
		if c.ReadinessProbe != nil {
			errs = append(errs, field.Forbidden(path.Child("readinessProbe"), "may not be set for init containers without restartPolicy=Always"))
		}
		if c.StartupProbe != nil {
			errs = append(errs, field.Forbidden(path.Child("startupProbe"), "may not be set for init containers without restartPolicy=Always"))
		}
	}

	errs = append(errs, validatePorts(c.Ports, hostNetwork, path.Child("ports"))...)
	errs = append(errs, validateEnv(c.Env, path.Child("env"))...)
	errs = append(errs, validateResources(&c.Resources, path.Child("resources"))...)
	errs = append(errs, validateProbe(c.LivenessProbe, true, path.Child("livenessProbe"))...)
	errs = append(errs, validateProbe(c.ReadinessProbe, false, path.Child("readinessProbe"))...)
	errs = append(errs, validateProbe(c.StartupProbe, true, path.Child("startupProbe"))...)

	mountPaths := sets.New[string]()
	for i, m := range c.VolumeMounts {
		p := path.Child("volumeMounts").Index(i)
		if m.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else if !volumes.Has(m.Name) {
			errs = append(errs, field.NotFound(p.Child("name"), m.Name))
		}
		switch {
		case m.MountPath == "":
			errs = append(errs, field.Required(p.Child("mountPath"), ""))
		case mountPaths.Has(m.MountPath):
			errs = append(errs, field.Invalid(p.Child("mountPath"), m.MountPath, "must be unique"))
		}
		mountPaths.Insert(m.MountPath)
	}
	return errs
}

func validatePorts(ports []v1.ContainerPort, hostNetwork bool, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, p := range ports {
		pp := path.Index(i)
		if p.Name != "" {
			for _, msg := range validation.IsValidPortName(p.Name) {
				errs = append(errs, field.Invalid(pp.Child("name"), p.Name, msg))
			}
			if names.Has(p.Name) {
				errs = append(errs, field.Duplicate(pp.Child("name"), p.Name))
			}
			names.Insert(p.Name)
		}
		for _, msg := range validation.IsValidPortNum(int(p.ContainerPort)) {
			errs = append(errs, field.Invalid(pp.Child("containerPort"), p.ContainerPort, msg))
		}
		if p.HostPort != 0 {
			for _, msg := range validation.IsValidPortNum(int(p.HostPort)) {
				errs = append(errs, field.Invalid(pp.Child("hostPort"), p.HostPort, msg))
			}
			if hostNetwork && p.HostPort != p.ContainerPort {
				errs = append(errs, field.Invalid(pp.Child("hostPort"), p.HostPort, "must match containerPort when hostNetwork is true"))
			}
		}
		if !protocols.Has(p.Protocol) {
			errs = append(errs, field.NotSupported(pp.Child("protocol"), p.Protocol, sets.List(protocols)))
		}
	}
	return errs
}

// validateHostPorts rejects two ports of the pod that would bind the same
// host address, port and protocol.
func validateHostPorts(containers []v1.Container, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for ci, c := range containers {
		for pi, p := range c.Ports {
			if p.HostPort == 0 {
				continue
			}
			key := fmt.Sprintf("%s/%s:%d", p.Protocol, p.HostIP, p.HostPort)
			if seen.Has(key) {
				errs = append(errs, field.Duplicate(path.Index(ci).Child("ports").Index(pi).Child("hostPort"), key))
			}
			seen.Insert(key)
		}
	}
	return errs
}

func validateEnv(env []v1.EnvVar, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, e := range env {
		p := path.Index(i)
		if e.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else {
			for _, msg := range validation.IsRelaxedEnvVarName(e.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), e.Name, msg))
			}
		}
		if e.ValueFrom == nil {
			continue
		}
		if e.Value != "" {
			errs = append(errs, field.Invalid(p.Child("valueFrom"), "", "may not be specified when `value` is not empty"))
		}
		n := 0
		vf := e.ValueFrom
		for _, set := range []bool{vf.FieldRef != nil, vf.ResourceFieldRef != nil, vf.ConfigMapKeyRef != nil, vf.SecretKeyRef != nil, vf.FileKeyRef != nil} {
			if set {
				n++
			}
		}
		if n != 1 {
			errs = append(errs, field.Invalid(p.Child("valueFrom"), "", "must specify exactly one of fieldRef, resourceFieldRef, configMapKeyRef, secretKeyRef, fileKeyRef"))
		}
	}
	return errs
}

func validateResources(r *v1.ResourceRequirements, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for name, q := range r.Limits {
		p := path.Child("limits").Key(string(name))
		for _, msg := range validation.IsQualifiedName(string(name)) {
			errs = append(errs, field.Invalid(p, name, msg))
		}
		if q.Sign() < 0 {
			errs = append(errs, field.Invalid(p, q.String(), "must be greater than or equal to 0"))
		}
	}
	for name, q := range r.Requests {
		p := path.Child("requests").Key(string(name))
		for _, msg := range validation.IsQualifiedName(string(name)) {
			errs = append(errs, field.Invalid(p, name, msg))
		}
		if q.Sign() < 0 {
			errs = append(errs, field.Invalid(p, q.String(), "must be greater than or equal to 0"))
		}
		if limit, ok := r.Limits[name]; ok && q.Cmp(limit) > 0 {
			errs = append(errs, field.Invalid(p, q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
		}
	}
	return errs
}

func validateProbe(p *v1.Probe, successMustBeOne bool, path *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	var errs field.ErrorList
	n := 0
	for _, set := range []bool{p.Exec != nil, p.HTTPGet != nil, p.TCPSocket != nil, p.GRPC != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		errs = append(errs, field.Invalid(path, "", "must specify exactly one of exec, httpGet, tcpSocket, grpc"))
	}
	for _, v := range []struct {
		name string
		val  int32
		min  int32
	}{
		{"initialDelaySeconds", p.InitialDelaySeconds, 0},
		{"timeoutSeconds", p.TimeoutSeconds, 1},
		{"periodSeconds", p.PeriodSeconds, 1},
		{"successThreshold", p.SuccessThreshold, 1},
		{"failureThreshold", p.FailureThreshold, 1},
	} {
		if v.val < v.min {
			errs = append(errs, field.Invalid(path.Child(v.name), v.val, fmt.Sprintf("must be greater than or equal to %d", v.min)))
		}
	}
	if successMustBeOne && p.SuccessThreshold != 1 {
		errs = append(errs, field.Invalid(path.Child("successThreshold"), p.SuccessThreshold, "must be 1"))
	}
	if p.HTTPGet != nil {
		if port := intOrStringPort(p.HTTPGet.Port); port >= 0 {
			for _, msg := range validation.IsValidPortNum(port) {
				errs = append(errs, field.Invalid(path.Child("httpGet", "port"), port, msg))
			}
		}
	}
	if p.TCPSocket != nil {
		if port := intOrStringPort(p.TCPSocket.Port); port >= 0 {
			for _, msg := range validation.IsValidPortNum(port) {
				errs = append(errs, field.Invalid(path.Child("tcpSocket", "port"), port, msg))
			}
		}
	}
	return errs
}

var (
	containerRestartPolicies = sets.New(v1.ContainerRestartPolicyAlways, v1.ContainerRestartPolicyNever, v1.ContainerRestartPolicyOnFailure)
	restartRuleActions       = sets.New(v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleActionRestartAllContainers)
	restartRuleOperators     = sets.New(v1.ContainerRestartRuleOnExitCodesOpIn, v1.ContainerRestartRuleOnExitCodesOpNotIn)
)

// validateContainerRestart checks a container's own restartPolicy and
// restartPolicyRules as the 1.37 API server does with ContainerRestartRules
// on: any container may set Always, OnFailure or Never (Always on an init
// container makes it a sidecar); rules need a policy, at most 20 of them,
// each with exit codes (In or NotIn, at most 255 values). What this kubelet
// cannot do with a valid rule is refused later with a reason.
func validateContainerRestart(c *v1.Container, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	p := path.Child("restartPolicy")
	switch {
	case c.RestartPolicy == nil && len(c.RestartPolicyRules) > 0:
		errs = append(errs, field.Required(p, "must specify restartPolicy when restart rules are used"))
	case c.RestartPolicy != nil && !containerRestartPolicies.Has(*c.RestartPolicy):
		errs = append(errs, field.NotSupported(p, *c.RestartPolicy, sets.List(containerRestartPolicies)))
	}
	rules := path.Child("restartPolicyRules")
	if len(c.RestartPolicyRules) > 20 {
		errs = append(errs, field.TooMany(rules, len(c.RestartPolicyRules), 20))
	}
	for i, r := range c.RestartPolicyRules {
		rp := rules.Index(i)
		if !restartRuleActions.Has(r.Action) {
			errs = append(errs, field.NotSupported(rp.Child("action"), r.Action, sets.List(restartRuleActions)))
		}
		if r.ExitCodes == nil {
			errs = append(errs, field.Required(rp.Child("exitCodes"), "must be specified"))
			continue
		}
		if !restartRuleOperators.Has(r.ExitCodes.Operator) {
			errs = append(errs, field.NotSupported(rp.Child("exitCodes", "operator"), r.ExitCodes.Operator, sets.List(restartRuleOperators)))
		}
		if len(r.ExitCodes.Values) > 255 {
			errs = append(errs, field.TooMany(rp.Child("exitCodes", "values"), len(r.ExitCodes.Values), 255))
		}
	}
	return errs
}
