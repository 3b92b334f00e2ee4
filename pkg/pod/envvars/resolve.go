package envvars

import (
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"

	"github.com/gokubelet/kubelet/pkg/errdefs"
	"github.com/gokubelet/kubelet/pkg/pod/fieldpath"
)

// RefusedFileKeyRef is why a container with an env var from a file
// (valueFrom.fileKeyRef) waits when the EnvFiles feature gate is off (or
// the kubelet has no volume manager to find the file in).
const RefusedFileKeyRef = "fileKeyRef needs the EnvFiles feature gate, which is off"

// Sources are the ConfigMaps and Secrets of the pod's namespace that a
// container refers to, by name, as Fetch read them. A name mapped to nil,
// or missing, does not exist.
type Sources struct {
	ConfigMaps map[string]*v1.ConfigMap
	Secrets    map[string]*v1.Secret
}

// Inputs are the facts Resolve needs besides the pod and the container.
type Inputs struct {
	Sources Sources
	// PodIPs and HostIPs, primary first.
	PodIPs  []string
	HostIPs []string
	// NodeAllocatable gives the limits of containers that set none, for
	// resourceFieldRef.
	NodeAllocatable v1.ResourceList
	// ServiceEnv are the service link variables (ServiceEnv); nil when the
	// kubelet has no API server.
	ServiceEnv []v1.EnvVar
	// FileKey reads a valueFrom.fileKeyRef from the pod's emptyDir volume
	// (FileKeyValue over the volume's directory): the value, and whether
	// the key is defined with a non-empty value. Nil: fileKeyRef is refused
	// (the EnvFiles gate is off).
	FileKey func(ref *v1.FileKeySelector) (string, bool, error)
}

// Resolve returns container c's environment, as the upstream kubelet
// builds it:
//
//  1. envFrom, in order: every key of the ConfigMap or Secret, with the
//     prefix; a missing source is an error unless optional;
//  2. env, in order: a value has its $(VAR) references expanded against the
//     variables defined so far and the service variables; a valueFrom is
//     resolved (fieldRef, resourceFieldRef, configMapKeyRef, secretKeyRef,
//     fileKeyRef; a missing ConfigMap, Secret, file or key is an error
//     unless optional, and an optional one that is missing leaves the
//     variable out);
//  3. the service variables not defined by 1 or 2.
//
// A later definition of a name replaces the value of an earlier one in
// place, so the order is that of first definition. The errors are the
// upstream kubelet's words (they become the container's
// CreateContainerConfigError message), classified: a missing ConfigMap,
// Secret or key is errdefs.NotFound (it may appear later), a fieldRef or
// resourceFieldRef that cannot be resolved is errdefs.Invalid, a source
// this kubelet does not support is errdefs.Terminal.
func Resolve(pod *v1.Pod, c *v1.Container, in Inputs) ([]v1.EnvVar, error) {
	var out []v1.EnvVar
	index := map[string]int{}
	vals := map[string]string{}
	set := func(name, value string) {
		if i, ok := index[name]; ok {
			out[i].Value = value
		} else {
			index[name] = len(out)
			out = append(out, v1.EnvVar{Name: name, Value: value})
		}
		vals[name] = value
	}
	ns := pod.Namespace

	for _, from := range c.EnvFrom {
		switch {
		case from.ConfigMapRef != nil:
			cm := in.Sources.ConfigMaps[from.ConfigMapRef.Name]
			if cm == nil {
				if isTrue(from.ConfigMapRef.Optional) {
					continue
				}
				return nil, errdefs.NotFound(fmt.Errorf("configmap %q not found", from.ConfigMapRef.Name))
			}
			for _, k := range sortedKeys(cm.Data) {
				set(from.Prefix+k, cm.Data[k])
			}
		case from.SecretRef != nil:
			s := in.Sources.Secrets[from.SecretRef.Name]
			if s == nil {
				if isTrue(from.SecretRef.Optional) {
					continue
				}
				return nil, errdefs.NotFound(fmt.Errorf("secret %q not found", from.SecretRef.Name))
			}
			keys := make([]string, 0, len(s.Data))
			for k := range s.Data {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				set(from.Prefix+k, string(s.Data[k]))
			}
		}
	}

	services := map[string]string{}
	for _, e := range in.ServiceEnv {
		services[e.Name] = e.Value
	}
	lookup := Lookup(vals, services)
	for _, e := range c.Env {
		v := e.Value
		switch {
		case v != "" || e.ValueFrom == nil:
			v = Expand(v, lookup)
		case e.ValueFrom.FieldRef != nil:
			fv, err := fieldpath.EnvField(pod, e.ValueFrom.FieldRef.FieldPath, in.PodIPs, in.HostIPs)
			if err != nil {
				return nil, errdefs.Invalid(fmt.Errorf("env %s: %w", e.Name, err))
			}
			v = fv
		case e.ValueFrom.ResourceFieldRef != nil:
			rv, err := fieldpath.ContainerResource(pod, c, e.ValueFrom.ResourceFieldRef, in.NodeAllocatable)
			if err != nil {
				return nil, errdefs.Invalid(fmt.Errorf("env %s: %w", e.Name, err))
			}
			v = rv
		case e.ValueFrom.ConfigMapKeyRef != nil:
			ref := e.ValueFrom.ConfigMapKeyRef
			cm := in.Sources.ConfigMaps[ref.Name]
			if cm == nil {
				if isTrue(ref.Optional) {
					continue
				}
				return nil, errdefs.NotFound(fmt.Errorf("configmap %q not found", ref.Name))
			}
			cv, ok := cm.Data[ref.Key]
			if !ok {
				if isTrue(ref.Optional) {
					continue
				}
				return nil, errdefs.NotFound(fmt.Errorf("couldn't find key %s in ConfigMap %s/%s", ref.Key, ns, ref.Name))
			}
			v = cv
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			s := in.Sources.Secrets[ref.Name]
			if s == nil {
				if isTrue(ref.Optional) {
					continue
				}
				return nil, errdefs.NotFound(fmt.Errorf("secret %q not found", ref.Name))
			}
			sv, ok := s.Data[ref.Key]
			if !ok {
				if isTrue(ref.Optional) {
					continue
				}
				return nil, errdefs.NotFound(fmt.Errorf("couldn't find key %s in Secret %s/%s", ref.Key, ns, ref.Name))
			}
			v = string(sv)
		case e.ValueFrom.FileKeyRef != nil:
			ref := e.ValueFrom.FileKeyRef
			if in.FileKey == nil {
				return nil, errdefs.Terminal(fmt.Errorf("env %s: "+RefusedFileKeyRef, e.Name))
			}
			fv, ok, err := in.FileKey(ref)
			if err != nil {
				// The file may not be written yet (an init container
				// writes it): retried at the next sync, as upstream.
				return nil, errdefs.NotFound(fmt.Errorf("env %s: %w", e.Name, err))
			}
			if !ok {
				if isTrue(ref.Optional) {
					continue
				}
				return nil, errdefs.NotFound(fmt.Errorf("environment variable key %q not found in file %q of volume %q", ref.Key, ref.Path, ref.VolumeName))
			}
			v = fv
		}
		set(e.Name, v)
	}

	for _, e := range in.ServiceEnv {
		if _, ok := index[e.Name]; !ok {
			index[e.Name] = len(out)
			out = append(out, e)
		}
	}
	return out, nil
}

// ExpandCommand expands $(VAR) references in a container's command or
// args against its final environment.
func ExpandCommand(list []string, env []v1.EnvVar) []string {
	if len(list) == 0 {
		return nil
	}
	vals := make(map[string]string, len(env))
	for _, e := range env {
		vals[e.Name] = e.Value
	}
	lookup := Lookup(vals)
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = Expand(s, lookup)
	}
	return out
}

func isTrue(b *bool) bool { return b != nil && *b }

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
