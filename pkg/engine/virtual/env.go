package virtual

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/gokubelet/kubelet/pkg/errdefs"
	"github.com/gokubelet/kubelet/pkg/provider"
)

// The environment a provider's pods get, resolved here as a kubelet does
// before it starts a container: envFrom, configMapKeyRef and secretKeyRef
// (unless the provider keeps object references: provider.ObjectRefKeeper),
// the downward API (fieldRef: metadata, spec.nodeName,
// spec.serviceAccountName, status.hostIP(s)) and resourceFieldRef, the
// service link variables, and $(VAR) expansion. status.podIP(s) is not
// known before the provider places the pod: it resolves to "" (a provider
// that keeps object references gets the fieldRef as is, and its backend
// resolves it).
//
// The reads go through provider.ObjectGetter (ConfigMaps, Secrets) and
// ServiceLister, small interfaces so the kubelet's shared caches can stand
// behind them. (The CRI engine's own resolution is being built in
// pkg/runtime/kuberuntime; the two are to become one.)

// ServiceLister lists the services whose variables pods get.
type ServiceLister interface {
	// Services returns the services of a namespace.
	Services(namespace string) ([]*v1.Service, error)
}

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
func (r *envResolver) resolve(ctx context.Context, pod *v1.Pod, keepRefs bool) (*v1.Pod, error) {
	// Without managedFields: no provider needs them, and a provider
	// keeping thousands of pods would keep them too.
	shallow := *pod
	shallow.ManagedFields = nil
	out := shallow.DeepCopy()
	svcEnv, err := r.serviceEnv(pod)
	if err != nil {
		return nil, err
	}
	cache := map[string]any{}
	for i := range out.Spec.InitContainers {
		if err := r.container(ctx, out, &out.Spec.InitContainers[i], svcEnv, keepRefs, cache); err != nil {
			return nil, err
		}
	}
	for i := range out.Spec.Containers {
		if err := r.container(ctx, out, &out.Spec.Containers[i], svcEnv, keepRefs, cache); err != nil {
			return nil, err
		}
	}
	for i := range out.Spec.EphemeralContainers {
		c := (*v1.Container)(&out.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		if err := r.container(ctx, out, c, svcEnv, keepRefs, cache); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (r *envResolver) container(ctx context.Context, pod *v1.Pod, c *v1.Container, svcEnv []v1.EnvVar, keepRefs bool, cache map[string]any) error {
	if keepRefs {
		return r.containerKeepingRefs(pod, c, svcEnv)
	}
	vars := map[string]string{}
	var order []string
	set := func(name, value string) {
		if _, ok := vars[name]; !ok {
			order = append(order, name)
		}
		vars[name] = value
	}
	for _, e := range svcEnv {
		set(e.Name, e.Value)
	}
	for _, from := range c.EnvFrom {
		data, err := r.envFromData(ctx, pod.Namespace, from, cache)
		if err != nil {
			return err
		}
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			name := from.Prefix + k
			if len(validation.IsEnvVarName(name)) > 0 {
				continue // upstream skips invalid names too
			}
			set(name, data[k])
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			set(e.Name, expand(e.Value, vars))
			continue
		}
		v, err := r.valueFrom(ctx, pod, c, e, cache)
		if err != nil {
			return err
		}
		set(e.Name, v)
	}
	env := make([]v1.EnvVar, 0, len(order))
	for _, n := range order {
		env = append(env, v1.EnvVar{Name: n, Value: vars[n]})
	}
	c.Env, c.EnvFrom = env, nil
	for i := range c.Command {
		c.Command[i] = expand(c.Command[i], vars)
	}
	for i := range c.Args {
		c.Args[i] = expand(c.Args[i], vars)
	}
	return nil
}

// containerKeepingRefs: service variables first (those the container does
// not set itself), then the container's env with fieldRef (but
// status.podIP/podIPs) and resourceFieldRef resolved; envFrom, key
// references and $(VAR) stay.
func (r *envResolver) containerKeepingRefs(pod *v1.Pod, c *v1.Container, svcEnv []v1.EnvVar) error {
	own := map[string]bool{}
	for _, e := range c.Env {
		own[e.Name] = true
	}
	var env []v1.EnvVar
	for _, e := range svcEnv {
		if !own[e.Name] {
			env = append(env, e)
		}
	}
	for _, e := range c.Env {
		if vf := e.ValueFrom; vf != nil && vf.FieldRef != nil && strings.HasPrefix(vf.FieldRef.FieldPath, "status.pod") {
			env = append(env, e) // the pod's own IP: only the backend knows it
			continue
		}
		if e.ValueFrom != nil && (e.ValueFrom.FieldRef != nil || e.ValueFrom.ResourceFieldRef != nil) {
			v, err := r.valueFrom(context.Background(), pod, c, e, nil)
			if err != nil {
				return err
			}
			e = v1.EnvVar{Name: e.Name, Value: strings.ReplaceAll(v, "$", "$$")}
		}
		env = append(env, e)
	}
	c.Env = env
	return nil
}

func (r *envResolver) envFromData(ctx context.Context, ns string, from v1.EnvFromSource, cache map[string]any) (map[string]string, error) {
	switch {
	case from.ConfigMapRef != nil:
		cm, err := r.configMap(ctx, ns, from.ConfigMapRef.Name, cache)
		if err != nil {
			if errdefs.IsNotFound(err) && isTrue(from.ConfigMapRef.Optional) {
				return nil, nil
			}
			return nil, err
		}
		data := map[string]string{}
		for k, v := range cm.Data {
			data[k] = v
		}
		return data, nil
	case from.SecretRef != nil:
		s, err := r.secret(ctx, ns, from.SecretRef.Name, cache)
		if err != nil {
			if errdefs.IsNotFound(err) && isTrue(from.SecretRef.Optional) {
				return nil, nil
			}
			return nil, err
		}
		data := map[string]string{}
		for k, v := range s.Data {
			data[k] = string(v)
		}
		return data, nil
	}
	return nil, nil
}

func (r *envResolver) valueFrom(ctx context.Context, pod *v1.Pod, c *v1.Container, e v1.EnvVar, cache map[string]any) (string, error) {
	vf := e.ValueFrom
	switch {
	case vf.FieldRef != nil:
		v, err := r.fieldValue(pod, vf.FieldRef.FieldPath)
		if err != nil {
			return "", errdefs.Invalid(fmt.Errorf("env %s: %w", e.Name, err))
		}
		return v, nil
	case vf.ResourceFieldRef != nil:
		v, err := r.resourceValue(pod, c, vf.ResourceFieldRef)
		if err != nil {
			return "", errdefs.Invalid(fmt.Errorf("env %s: %w", e.Name, err))
		}
		return v, nil
	case vf.ConfigMapKeyRef != nil:
		ref := vf.ConfigMapKeyRef
		cm, err := r.configMap(ctx, pod.Namespace, ref.Name, cache)
		if err != nil {
			if errdefs.IsNotFound(err) && isTrue(ref.Optional) {
				return "", nil
			}
			return "", err
		}
		if v, ok := cm.Data[ref.Key]; ok {
			return v, nil
		}
		if isTrue(ref.Optional) {
			return "", nil
		}
		return "", &configError{errdefs.NotFound(fmt.Errorf("couldn't find key %s in ConfigMap %s/%s", ref.Key, pod.Namespace, ref.Name))}
	case vf.SecretKeyRef != nil:
		ref := vf.SecretKeyRef
		s, err := r.secret(ctx, pod.Namespace, ref.Name, cache)
		if err != nil {
			if errdefs.IsNotFound(err) && isTrue(ref.Optional) {
				return "", nil
			}
			return "", err
		}
		if v, ok := s.Data[ref.Key]; ok {
			return string(v), nil
		}
		if isTrue(ref.Optional) {
			return "", nil
		}
		return "", &configError{errdefs.NotFound(fmt.Errorf("couldn't find key %s in Secret %s/%s", ref.Key, pod.Namespace, ref.Name))}
	}
	return "", errdefs.Invalid(fmt.Errorf("env %s: this kind of valueFrom is not supported on a virtual node", e.Name))
}

func (r *envResolver) configMap(ctx context.Context, ns, name string, cache map[string]any) (*v1.ConfigMap, error) {
	k := "cm/" + name
	if v, ok := cache[k]; ok {
		return v.(*v1.ConfigMap), nil
	}
	cm, err := r.objects.GetConfigMap(ctx, ns, name)
	if err != nil {
		if errdefs.IsNotFound(err) {
			return nil, &configError{errdefs.NotFound(fmt.Errorf("configmap %q not found", name))}
		}
		return nil, err
	}
	if cache != nil {
		cache[k] = cm
	}
	return cm, nil
}

func (r *envResolver) secret(ctx context.Context, ns, name string, cache map[string]any) (*v1.Secret, error) {
	k := "secret/" + name
	if v, ok := cache[k]; ok {
		return v.(*v1.Secret), nil
	}
	s, err := r.objects.GetSecret(ctx, ns, name)
	if err != nil {
		if errdefs.IsNotFound(err) {
			return nil, &configError{errdefs.NotFound(fmt.Errorf("secret %q not found", name))}
		}
		return nil, err
	}
	if cache != nil {
		cache[k] = s
	}
	return s, nil
}

// fieldValue is the downward API for env.
func (r *envResolver) fieldValue(pod *v1.Pod, path string) (string, error) {
	if strings.HasPrefix(path, "metadata.labels['") || strings.HasPrefix(path, "metadata.annotations['") {
		field, key, ok := strings.Cut(path, "['")
		if !ok || !strings.HasSuffix(key, "']") {
			return "", fmt.Errorf("unsupported fieldPath %q", path)
		}
		key = strings.TrimSuffix(key, "']")
		if field == "metadata.labels" {
			return pod.Labels[key], nil
		}
		return pod.Annotations[key], nil
	}
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP":
		if len(r.hostIPs) > 0 {
			return r.hostIPs[0], nil
		}
		return "", nil
	case "status.hostIPs":
		return strings.Join(r.hostIPs, ","), nil
	case "status.podIP", "status.podIPs":
		// Not known before the provider places the pod.
		return pod.Status.PodIP, nil
	}
	return "", fmt.Errorf("unsupported fieldPath %q", path)
}

func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%q\n", k, m[k])
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// resourceValue is resourceFieldRef: the container's limit or request
// (limits default to the node's allocatable) divided by the divisor,
// rounded up.
func (r *envResolver) resourceValue(pod *v1.Pod, c *v1.Container, ref *v1.ResourceFieldSelector) (string, error) {
	if ref.ContainerName != "" && ref.ContainerName != c.Name {
		other, ok := findContainer(pod, ref.ContainerName)
		if !ok {
			return "", fmt.Errorf("container %q not found", ref.ContainerName)
		}
		c = other
	}
	kind, name, ok := strings.Cut(ref.Resource, ".")
	if !ok {
		return "", fmt.Errorf("unsupported resource %q", ref.Resource)
	}
	var q resource.Quantity
	var found bool
	switch kind {
	case "limits":
		q, found = c.Resources.Limits[v1.ResourceName(name)]
		if !found && r.allocatable != nil {
			q, found = r.allocatable()[v1.ResourceName(name)]
		}
	case "requests":
		q, found = c.Resources.Requests[v1.ResourceName(name)]
	default:
		return "", fmt.Errorf("unsupported resource %q", ref.Resource)
	}
	if !found {
		q = resource.Quantity{}
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if name == string(v1.ResourceCPU) {
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10), nil
	}
	return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10), nil
}

func findContainer(pod *v1.Pod, name string) (*v1.Container, bool) {
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i], true
			}
		}
	}
	return nil, false
}

// serviceEnv are the service link variables: the master service's always,
// the namespace's services' when enableServiceLinks is not false. A
// service in the namespace wins over the master service of the same name.
func (r *envResolver) serviceEnv(pod *v1.Pod) ([]v1.EnvVar, error) {
	if r.services == nil {
		return nil, nil
	}
	byName := map[string]*v1.Service{}
	master, err := r.services.Services(metav1.NamespaceDefault)
	if err != nil {
		return nil, errdefs.Retryable(fmt.Errorf("listing services: %w", err))
	}
	for _, s := range master {
		if s.Name == "kubernetes" {
			byName[s.Name] = s
		}
	}
	if pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks {
		svcs, err := r.services.Services(pod.Namespace)
		if err != nil {
			return nil, errdefs.Retryable(fmt.Errorf("listing services: %w", err))
		}
		for _, s := range svcs {
			byName[s.Name] = s
		}
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []v1.EnvVar
	for _, n := range names {
		out = append(out, serviceVars(byName[n])...)
	}
	return out, nil
}

// serviceVars are one service's variables (FOO_SERVICE_HOST and the
// Docker-link style FOO_PORT_80_TCP...).
func serviceVars(s *v1.Service) []v1.EnvVar {
	if s.Spec.ClusterIP == "" || s.Spec.ClusterIP == v1.ClusterIPNone || len(s.Spec.Ports) == 0 {
		return nil
	}
	prefix := strings.ToUpper(strings.ReplaceAll(s.Name, "-", "_"))
	ip := s.Spec.ClusterIP
	first := s.Spec.Ports[0]
	env := []v1.EnvVar{
		{Name: prefix + "_SERVICE_HOST", Value: ip},
		{Name: prefix + "_SERVICE_PORT", Value: strconv.Itoa(int(first.Port))},
	}
	for _, p := range s.Spec.Ports {
		if p.Name != "" {
			env = append(env, v1.EnvVar{Name: prefix + "_SERVICE_PORT_" + strings.ToUpper(strings.ReplaceAll(p.Name, "-", "_")), Value: strconv.Itoa(int(p.Port))})
		}
	}
	host := ip
	if strings.Contains(ip, ":") {
		host = "[" + ip + "]"
	}
	env = append(env, v1.EnvVar{Name: prefix + "_PORT", Value: fmt.Sprintf("%s://%s:%d", strings.ToLower(string(first.Protocol)), host, first.Port)})
	for _, p := range s.Spec.Ports {
		proto := strings.ToUpper(string(p.Protocol))
		base := fmt.Sprintf("%s_PORT_%d_%s", prefix, p.Port, proto)
		env = append(env,
			v1.EnvVar{Name: base, Value: fmt.Sprintf("%s://%s:%d", strings.ToLower(proto), host, p.Port)},
			v1.EnvVar{Name: base + "_PROTO", Value: strings.ToLower(proto)},
			v1.EnvVar{Name: base + "_PORT", Value: strconv.Itoa(int(p.Port))},
			v1.EnvVar{Name: base + "_ADDR", Value: ip},
		)
	}
	return env
}

// expand replaces $(VAR) with the value of VAR when it is defined, leaves
// it as is when not, and turns $$ into $ (the API's escaping).
func expand(s string, vars map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := vars[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

func isTrue(b *bool) bool { return b != nil && *b }

// ClientObjects reads ConfigMaps and Secrets with GETs through a client
// (the node's identity: the Node authorizer lets a node read those its
// pods reference). Errors are classified with errdefs.FromAPI.
type ClientObjects struct{ Client kubernetes.Interface }

// GetConfigMap reads a ConfigMap.
func (c ClientObjects) GetConfigMap(ctx context.Context, ns, name string) (*v1.ConfigMap, error) {
	cm, err := c.Client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	return cm, errdefs.FromAPI(err)
}

// GetSecret reads a Secret.
func (c ClientObjects) GetSecret(ctx context.Context, ns, name string) (*v1.Secret, error) {
	s, err := c.Client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	return s, errdefs.FromAPI(err)
}

// ListerServices serves ServiceLister from a (shared) service informer's
// lister.
type ListerServices struct{ Lister corelisters.ServiceLister }

// Services lists a namespace's services from the cache.
func (l ListerServices) Services(ns string) ([]*v1.Service, error) {
	return l.Lister.Services(ns).List(labels.Everything())
}
