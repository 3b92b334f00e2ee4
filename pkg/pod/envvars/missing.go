package envvars

import v1 "k8s.io/api/core/v1"

// Missing is a reference of a container's environment to a ConfigMap or
// Secret, or to a key of one, that Sources do not hold.
type Missing struct {
	// Kind is "ConfigMap" or "Secret".
	Kind string
	// Name is the object's name.
	Name string
	// Key is the missing key; "" when the whole object is missing.
	Key string
	// Env is the variable that refers to it; "" for envFrom.
	Env string
	// Optional is the reference's optional flag.
	Optional bool
	// Container is the container whose environment refers to it.
	Container string
}

// MissingRefs lists, in the containers' order and then each container's
// (envFrom first, then env), the references Resolve finds missing, the
// optional ones (which Resolve skips) as well as the mandatory ones
// (which fail it). Resolve alone decides what a missing reference does;
// this is for telling people about it.
func MissingRefs(src Sources, containers ...*v1.Container) []Missing {
	var out []Missing
	for _, c := range containers {
		for _, f := range c.EnvFrom {
			switch {
			case f.ConfigMapRef != nil:
				if src.ConfigMaps[f.ConfigMapRef.Name] == nil {
					out = append(out, Missing{Kind: "ConfigMap", Name: f.ConfigMapRef.Name, Optional: isTrue(f.ConfigMapRef.Optional), Container: c.Name})
				}
			case f.SecretRef != nil:
				if src.Secrets[f.SecretRef.Name] == nil {
					out = append(out, Missing{Kind: "Secret", Name: f.SecretRef.Name, Optional: isTrue(f.SecretRef.Optional), Container: c.Name})
				}
			}
		}
		for _, e := range c.Env {
			if e.Value != "" || e.ValueFrom == nil {
				continue
			}
			switch {
			case e.ValueFrom.ConfigMapKeyRef != nil:
				ref := e.ValueFrom.ConfigMapKeyRef
				m := Missing{Kind: "ConfigMap", Name: ref.Name, Env: e.Name, Optional: isTrue(ref.Optional), Container: c.Name}
				if cm := src.ConfigMaps[ref.Name]; cm == nil {
					out = append(out, m)
				} else if _, ok := cm.Data[ref.Key]; !ok {
					m.Key = ref.Key
					out = append(out, m)
				}
			case e.ValueFrom.SecretKeyRef != nil:
				ref := e.ValueFrom.SecretKeyRef
				m := Missing{Kind: "Secret", Name: ref.Name, Env: e.Name, Optional: isTrue(ref.Optional), Container: c.Name}
				if s := src.Secrets[ref.Name]; s == nil {
					out = append(out, m)
				} else if _, ok := s.Data[ref.Key]; !ok {
					m.Key = ref.Key
					out = append(out, m)
				}
			}
		}
	}
	return out
}
