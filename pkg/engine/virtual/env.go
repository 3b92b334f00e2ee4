package virtual

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/gokubelet/kubelet/pkg/errdefs"
	"github.com/gokubelet/kubelet/pkg/pod/envvars"
	"github.com/gokubelet/kubelet/pkg/pod/fieldpath"
	"github.com/gokubelet/kubelet/pkg/provider"
)

// The environment a provider's pods get, resolved here as a kubelet does
// before it starts a container, by the rules the CRI engine uses too
// (pkg/pod/envvars, pkg/pod/fieldpath): envFrom, configMapKeyRef and
// secretKeyRef, the downward API, resourceFieldRef, the service link
// variables, and $(VAR) expansion in env, command and args.
//
// What is this engine's own: a provider that keeps object references
// (provider.ObjectRefKeeper) gets only what its backend cannot know
// resolved (downward API, resources, service variables) and the rest as
// written; status.podIP(s) is the pod's status as the engine last saw it
// ("" before the provider placed the pod); and errors are classified for
// the engine (configError: wait and retry).
//
// The reads go through provider.ObjectGetter (ConfigMaps, Secrets) and
// ServiceLister, small interfaces so the kubelet's shared caches can stand
// behind them.

// ServiceLister lists the services whose variables pods get.
type ServiceLister interface {
	// Services returns the services of a namespace.
	Services(namespace string) ([]*v1.Service, error)
}

// ClientObjects reads ConfigMaps and Secrets with GETs through a client,
// errors classified (envvars.ClientObjects).
type ClientObjects = envvars.ClientObjects

// configError is a pod whose environment cannot be resolved (yet): a
// missing object or key. The pod waits with CreateContainerConfigError and
// is retried.
type configError struct{ err error }

func (e *configError) Error() string { return e.err.Error() }
func (e *configError) Unwrap() error { return e.err }

// envResolver resolves the environment of a pod's containers.
type envResolver struct {
	objects  provider.ObjectGetter
	services ServiceLister
	// hostIPs are the node's IPs (status.hostIP, hostIPs).
	hostIPs []string
	// allocatable is the node's allocatable, the default for unset limits
	// (resourceFieldRef).
	allocatable func() v1.ResourceList
}

// resolve returns a copy of pod, without managedFields, whose containers
// (init, app, ephemeral) carry their resolved environment. With keepRefs,
// envFrom and configMap/secret key references stay and $(VAR) is left to
// the backend; fieldRef and resourceFieldRef become values in both modes.
// Without keepRefs it also returns the references to ConfigMaps, Secrets
// and keys that do not exist (envvars.MissingRefs), the optional ones
// included, also when it fails on a mandatory one.
func (r *envResolver) resolve(ctx context.Context, pod *v1.Pod, keepRefs bool) (*v1.Pod, []envvars.Missing, error) {
	// Without managedFields: no provider needs them, and a provider
	// keeping thousands of pods would keep them too.
	shallow := *pod
	shallow.ManagedFields = nil
	out := shallow.DeepCopy()
	svcEnv, err := r.serviceEnv(pod)
	if err != nil {
		return nil, nil, err
	}
	containers := make([]*v1.Container, 0, len(out.Spec.InitContainers)+len(out.Spec.Containers)+len(out.Spec.EphemeralContainers))
	for i := range out.Spec.InitContainers {
		containers = append(containers, &out.Spec.InitContainers[i])
	}
	for i := range out.Spec.Containers {
		containers = append(containers, &out.Spec.Containers[i])
	}
	for i := range out.Spec.EphemeralContainers {
		containers = append(containers, (*v1.Container)(&out.Spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	in := envvars.Inputs{PodIPs: podIPs(pod), HostIPs: r.hostIPs, ServiceEnv: svcEnv}
	if r.allocatable != nil {
		in.NodeAllocatable = r.allocatable()
	}
	if keepRefs {
		for _, c := range containers {
			if err := keepingRefs(out, c, in); err != nil {
				return nil, nil, classify(err)
			}
		}
		return out, nil, nil
	}
	if in.Sources, err = envvars.Fetch(ctx, r.objects, out, containers...); err != nil {
		return nil, nil, classify(err)
	}
	missing := envvars.MissingRefs(in.Sources, containers...)
	for _, c := range containers {
		env, err := envvars.Resolve(out, c, in)
		if err != nil {
			return nil, missing, classify(err)
		}
		c.Env, c.EnvFrom = env, nil
		c.Command = envvars.ExpandCommand(c.Command, env)
		c.Args = envvars.ExpandCommand(c.Args, env)
	}
	return out, missing, nil
}

// keepingRefs: service variables first (those the container does not set
// itself), then the container's env with fieldRef (but status.podIP/podIPs)
// and resourceFieldRef resolved; envFrom, key references and $(VAR) stay.
func keepingRefs(pod *v1.Pod, c *v1.Container, in envvars.Inputs) error {
	own := map[string]bool{}
	for _, e := range c.Env {
		own[e.Name] = true
	}
	var env []v1.EnvVar
	for _, e := range in.ServiceEnv {
		if !own[e.Name] {
			env = append(env, e)
		}
	}
	for _, e := range c.Env {
		vf := e.ValueFrom
		if vf != nil && vf.FieldRef != nil && strings.HasPrefix(vf.FieldRef.FieldPath, "status.pod") {
			env = append(env, e) // the pod's own IP: only the backend knows it
			continue
		}
		var v string
		var err error
		switch {
		case vf != nil && vf.FieldRef != nil:
			v, err = fieldpath.EnvField(pod, vf.FieldRef.FieldPath, in.PodIPs, in.HostIPs)
		case vf != nil && vf.ResourceFieldRef != nil:
			v, err = fieldpath.ContainerResource(pod, c, vf.ResourceFieldRef, in.NodeAllocatable)
		default:
			env = append(env, e)
			continue
		}
		if err != nil {
			return errdefs.Invalid(fmt.Errorf("env %s: %w", e.Name, err))
		}
		// A value, escaped so that the backend's expansion leaves it be.
		env = append(env, v1.EnvVar{Name: e.Name, Value: strings.ReplaceAll(v, "$", "$$")})
	}
	c.Env = env
	return nil
}

// classify: a missing object or key waits (configError); the rest keeps
// its class (Invalid, Terminal: the pod fails; Retryable or unknown: retried).
func classify(err error) error {
	var ce *configError
	if errdefs.IsNotFound(err) && !errors.As(err, &ce) {
		return &configError{err}
	}
	return err
}

// podIPs are the pod's IPs as its status shows them, primary first: none
// before the provider placed it.
func podIPs(pod *v1.Pod) []string {
	var ips []string
	for _, ip := range pod.Status.PodIPs {
		ips = append(ips, ip.IP)
	}
	if len(ips) == 0 && pod.Status.PodIP != "" {
		ips = []string{pod.Status.PodIP}
	}
	return ips
}

// serviceEnv are the service link variables (envvars.ServiceEnv) over the
// master service's namespace and, with service links, the pod's.
func (r *envResolver) serviceEnv(pod *v1.Pod) ([]v1.EnvVar, error) {
	if r.services == nil {
		return nil, nil
	}
	list, err := r.services.Services(metav1.NamespaceDefault)
	if err != nil {
		return nil, errdefs.Retryable(fmt.Errorf("listing services: %w", err))
	}
	links := pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks
	if links && pod.Namespace != metav1.NamespaceDefault {
		more, err := r.services.Services(pod.Namespace)
		if err != nil {
			return nil, errdefs.Retryable(fmt.Errorf("listing services: %w", err))
		}
		list = append(append([]*v1.Service{}, list...), more...)
	}
	return envvars.ServiceEnv(list, pod.Namespace, links), nil
}

// ListerServices serves ServiceLister from a (shared) service informer's
// lister.
type ListerServices struct{ Lister corelisters.ServiceLister }

// Services lists a namespace's services from the cache.
func (l ListerServices) Services(ns string) ([]*v1.Service, error) {
	return l.Lister.Services(ns).List(labels.Everything())
}

// Event reasons for references to ConfigMaps, Secrets and keys that do not
// exist. They are Virtual Kubelet's (its end-to-end suite waits for them);
// the upstream kubelet has none for the optional ones and reports a
// mandatory one as the container's CreateContainerConfigError, which this
// engine does as well.
const (
	ReasonOptionalConfigMapNotFound     = "OptionalConfigMapNotFound"
	ReasonOptionalConfigMapKeyNotFound  = "OptionalConfigMapKeyNotFound"
	ReasonOptionalSecretNotFound        = "OptionalSecretNotFound"
	ReasonOptionalSecretKeyNotFound     = "OptionalSecretKeyNotFound"
	ReasonMandatoryConfigMapNotFound    = "MandatoryConfigMapNotFound"
	ReasonMandatoryConfigMapKeyNotFound = "MandatoryConfigMapKeyNotFound"
	ReasonMandatorySecretNotFound       = "MandatorySecretNotFound"
	ReasonMandatorySecretKeyNotFound    = "MandatorySecretKeyNotFound"
)

type missingKey struct {
	kind     string
	key      bool
	optional bool
}

var missingReasons = map[missingKey]string{
	{"ConfigMap", false, true}:  ReasonOptionalConfigMapNotFound,
	{"ConfigMap", true, true}:   ReasonOptionalConfigMapKeyNotFound,
	{"Secret", false, true}:     ReasonOptionalSecretNotFound,
	{"Secret", true, true}:      ReasonOptionalSecretKeyNotFound,
	{"ConfigMap", false, false}: ReasonMandatoryConfigMapNotFound,
	{"ConfigMap", true, false}:  ReasonMandatoryConfigMapKeyNotFound,
	{"Secret", false, false}:    ReasonMandatorySecretNotFound,
	{"Secret", true, false}:     ReasonMandatorySecretKeyNotFound,
}

// missingEvent is the event for a missing reference: Warning with the
// Mandatory reason when the pod cannot start without it, Normal with the
// Optional one when the variable (or envFrom source) is left out.
func missingEvent(m envvars.Missing) (typ, reason, msg string) {
	what := strings.ToLower(m.Kind) + " " + strconv.Quote(m.Name)
	if m.Key != "" {
		what = "key " + strconv.Quote(m.Key) + " of " + what
	}
	var ref string
	if m.Env != "" {
		ref = "variable " + m.Env + " of container " + m.Container
	} else {
		ref = "envFrom of container " + m.Container
	}
	reason = missingReasons[missingKey{m.Kind, m.Key != "", m.Optional}]
	if m.Optional {
		return v1.EventTypeNormal, reason, fmt.Sprintf("%s not found: %s left out (optional)", what, ref)
	}
	return v1.EventTypeWarning, reason, fmt.Sprintf("%s not found: %s needs it; the pod waits for it", what, ref)
}
