package virtual

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gokubelet/kubelet/pkg/errdefs"
	"github.com/gokubelet/kubelet/pkg/pod/envvars"
)

type fakeObjects struct {
	cms     map[string]*v1.ConfigMap
	secrets map[string]*v1.Secret
	gets    int
}

func (f *fakeObjects) GetConfigMap(_ context.Context, ns, name string) (*v1.ConfigMap, error) {
	f.gets++
	if cm, ok := f.cms[ns+"/"+name]; ok {
		return cm, nil
	}
	return nil, errdefs.NotFound(fmt.Errorf("configmaps %q not found", name))
}

func (f *fakeObjects) GetSecret(_ context.Context, ns, name string) (*v1.Secret, error) {
	f.gets++
	if s, ok := f.secrets[ns+"/"+name]; ok {
		return s, nil
	}
	return nil, errdefs.NotFound(fmt.Errorf("secrets %q not found", name))
}

type fakeServices map[string][]*v1.Service

func (f fakeServices) Services(ns string) ([]*v1.Service, error) { return f[ns], nil }

func svc(ns, name, ip string, ports ...v1.ServicePort) *v1.Service {
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.ServiceSpec{ClusterIP: ip, Ports: ports}}
}

func envOf(c v1.Container) map[string]string {
	m := map[string]string{}
	for _, e := range c.Env {
		m[e.Name] = e.Value
	}
	return m
}

func resolverFixture() (*envResolver, *fakeObjects) {
	objs := &fakeObjects{
		cms:     map[string]*v1.ConfigMap{"ns/cfg": {Data: map[string]string{"MODE": "fast", "LEVEL": "3", "bad key": "x"}}},
		secrets: map[string]*v1.Secret{"ns/creds": {Data: map[string][]byte{"password": []byte("s3cret")}}},
	}
	services := fakeServices{
		"default": {svc("default", "kubernetes", "10.96.0.1", v1.ServicePort{Name: "https", Port: 443, Protocol: v1.ProtocolTCP})},
		"ns": {svc("ns", "redis-main", "10.96.3.4", v1.ServicePort{Port: 6379, Protocol: v1.ProtocolTCP}),
			svc("ns", "headless", v1.ClusterIPNone, v1.ServicePort{Port: 80})},
	}
	return &envResolver{objects: objs, services: services, hostIPs: []string{"192.0.2.1"},
		allocatable: func() v1.ResourceList { return v1.ResourceList{v1.ResourceMemory: resource.MustParse("4Gi")} }}, objs
}

func envPod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u1", Labels: map[string]string{"app": "web"}},
		Spec: v1.PodSpec{NodeName: "vn", ServiceAccountName: "sa", Containers: []v1.Container{{
			Name: "main", Image: "img",
			Command:   []string{"run", "--mode=$(MODE)", "--literal=$$(MODE)"},
			Resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m")}},
			EnvFrom:   []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}, Prefix: "CFG_"}},
			Env: []v1.EnvVar{
				{Name: "MODE", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Key: "MODE"}}},
				{Name: "PASSWORD", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "creds"}, Key: "password"}}},
				{Name: "POD", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				{Name: "APP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}},
				{Name: "NODE", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
				{Name: "HOST_IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.hostIP"}}},
				{Name: "CPU_MILLIS", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.cpu", Divisor: resource.MustParse("1m")}}},
				{Name: "MEM_LIMIT", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
				{Name: "GREETING", Value: "mode $(MODE) on $(NODE), unknown $(NOPE)"},
				{Name: "POD_IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
			},
		}}},
	}
}

func TestResolveEnv(t *testing.T) {
	r, _ := resolverFixture()
	pod := envPod()
	pod.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate}}
	keep := pod.DeepCopy()
	out, _, err := r.resolve(context.Background(), pod, false)
	if err != nil {
		t.Fatal(err)
	}
	if pod.Spec.Containers[0].Env[0].ValueFrom == nil || len(keep.Spec.Containers[0].Env) != len(pod.Spec.Containers[0].Env) ||
		len(pod.ManagedFields) != 1 {
		t.Fatal("resolve changed its input")
	}
	if out.ManagedFields != nil || out.Name != pod.Name || out.UID != pod.UID {
		t.Errorf("the provider's copy: managedFields %v, name %q, uid %q", out.ManagedFields, out.Name, out.UID)
	}
	c := out.Spec.Containers[0]
	if len(c.EnvFrom) != 0 {
		t.Errorf("envFrom left: %v", c.EnvFrom)
	}
	env := envOf(c)
	for k, want := range map[string]string{
		"MODE": "fast", "CFG_MODE": "fast", "CFG_LEVEL": "3", "PASSWORD": "s3cret", "POD": "web", "APP": "web",
		"NODE": "vn", "HOST_IP": "192.0.2.1", "CPU_MILLIS": "500", "MEM_LIMIT": "4096",
		"GREETING":                      "mode fast on vn, unknown $(NOPE)",
		"KUBERNETES_SERVICE_HOST":       "10.96.0.1",
		"KUBERNETES_SERVICE_PORT":       "443",
		"REDIS_MAIN_SERVICE_HOST":       "10.96.3.4",
		"REDIS_MAIN_PORT_6379_TCP":      "tcp://10.96.3.4:6379",
		"REDIS_MAIN_PORT":               "tcp://10.96.3.4:6379",
		"KUBERNETES_SERVICE_PORT_HTTPS": "443",
	} {
		if env[k] != want {
			t.Errorf("%s = %q, want %q", k, env[k], want)
		}
	}
	// Keys that are not C identifiers pass, as upstream v1.34 (this
	// engine used to drop them).
	if env["CFG_bad key"] != "x" {
		t.Errorf("CFG_bad key = %q: envFrom keys are used as they are", env["CFG_bad key"])
	}
	if _, ok := env["HEADLESS_SERVICE_HOST"]; ok {
		t.Error("a headless service got variables")
	}
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			t.Errorf("%s still has valueFrom", e.Name)
		}
	}
	if got := strings.Join(c.Command, " "); got != "run --mode=fast --literal=$(MODE)" {
		t.Errorf("command = %q", got)
	}
	if env["POD_IP"] != "" {
		t.Errorf("POD_IP = %q before the provider placed the pod", env["POD_IP"])
	}
}

// Each ConfigMap and Secret is read once per pod, however many containers
// refer to it.
func TestResolveEnvReadsOncePerPod(t *testing.T) {
	r, objs := resolverFixture()
	pod := envPod()
	side := pod.Spec.Containers[0]
	side.Name = "side"
	pod.Spec.Containers = append(pod.Spec.Containers, side)
	pod.Spec.InitContainers = []v1.Container{{Name: "init", Env: pod.Spec.Containers[0].Env[:2]}}
	out, _, err := r.resolve(context.Background(), pod, false)
	if err != nil {
		t.Fatal(err)
	}
	if objs.gets != 2 {
		t.Errorf("%d reads, want 2 (cfg and creds, once each)", objs.gets)
	}
	if env := envOf(out.Spec.InitContainers[0]); env["MODE"] != "fast" || env["PASSWORD"] != "s3cret" {
		t.Errorf("init container env = %v", env)
	}
	if env := envOf(out.Spec.Containers[1]); env["CFG_LEVEL"] != "3" {
		t.Errorf("second container env = %v", env)
	}
}

// status.podIP(s) are the pod's status as last seen: the provider's IPs
// once it placed the pod (this engine gave status.podIP for podIPs too).
func TestResolveEnvPodIPs(t *testing.T) {
	r, _ := resolverFixture()
	pod := envPod()
	pod.Spec.Containers[0].Env = []v1.EnvVar{
		{Name: "IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		{Name: "IPS", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIPs"}}},
	}
	pod.Status.PodIP = "10.0.0.7"
	pod.Status.PodIPs = []v1.PodIP{{IP: "10.0.0.7"}, {IP: "fd00::7"}}
	out, _, err := r.resolve(context.Background(), pod, false)
	if err != nil {
		t.Fatal(err)
	}
	if env := envOf(out.Spec.Containers[0]); env["IP"] != "10.0.0.7" || env["IPS"] != "10.0.0.7,fd00::7" {
		t.Errorf("env = %v", env)
	}
	pod.Status.PodIPs = nil // only the singular field set
	out, _, err = r.resolve(context.Background(), pod, false)
	if err != nil {
		t.Fatal(err)
	}
	if env := envOf(out.Spec.Containers[0]); env["IP"] != "10.0.0.7" || env["IPS"] != "10.0.0.7" {
		t.Errorf("env = %v", env)
	}
}

// A provider that copies objects keeps the references; only what its
// backend cannot know (downward API, resources, services) is resolved.
func TestResolveEnvKeepingRefs(t *testing.T) {
	r, objs := resolverFixture()
	out, _, err := r.resolve(context.Background(), envPod(), true)
	if err != nil {
		t.Fatal(err)
	}
	c := out.Spec.Containers[0]
	if len(c.EnvFrom) != 1 {
		t.Errorf("envFrom = %v, want kept", c.EnvFrom)
	}
	byName := map[string]v1.EnvVar{}
	for _, e := range c.Env {
		byName[e.Name] = e
	}
	if byName["PASSWORD"].ValueFrom == nil || byName["PASSWORD"].ValueFrom.SecretKeyRef == nil || byName["PASSWORD"].Value != "" {
		t.Errorf("PASSWORD = %+v: the secret reference must stay (no secret value in the spec)", byName["PASSWORD"])
	}
	if byName["POD"].Value != "web" || byName["POD"].ValueFrom != nil || byName["HOST_IP"].Value != "192.0.2.1" {
		t.Errorf("downward API not resolved: %+v %+v", byName["POD"], byName["HOST_IP"])
	}
	if byName["POD_IP"].ValueFrom == nil || byName["POD_IP"].ValueFrom.FieldRef == nil {
		t.Errorf("POD_IP = %+v: the pod's own IP is the backend's to resolve", byName["POD_IP"])
	}
	if byName["GREETING"].Value != "mode $(MODE) on $(NODE), unknown $(NOPE)" {
		t.Errorf("GREETING = %q: expansion is the backend's", byName["GREETING"].Value)
	}
	if byName["REDIS_MAIN_SERVICE_HOST"].Value != "10.96.3.4" {
		t.Error("service variables missing")
	}
	if c.Command[1] != "--mode=$(MODE)" {
		t.Errorf("command expanded: %v", c.Command)
	}
	if objs.gets != 0 {
		t.Errorf("%d object reads: keeping references must not read Secrets", objs.gets)
	}
}

func TestResolveEnvErrors(t *testing.T) {
	r, _ := resolverFixture()
	missing := envPod()
	missing.Spec.Containers[0].Env = []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "nope"}, Key: "k"}}}}
	_, _, err := r.resolve(context.Background(), missing, false)
	var ce *configError
	if !errors.As(err, &ce) || !errdefs.IsNotFound(err) || !strings.Contains(err.Error(), `secret "nope" not found`) {
		t.Errorf("missing secret: %v", err)
	}
	optional := true
	missing.Spec.Containers[0].Env[0].ValueFrom.SecretKeyRef.Optional = &optional
	if _, _, err := r.resolve(context.Background(), missing, false); err != nil {
		t.Errorf("an optional missing secret: %v", err)
	}
	badKey := envPod()
	badKey.Spec.Containers[0].Env = []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Key: "NOPE"}}}}
	if _, _, err := r.resolve(context.Background(), badKey, false); !errors.As(err, &ce) || !strings.Contains(err.Error(), "couldn't find key NOPE") {
		t.Errorf("missing key: %v", err)
	}
	for _, tc := range []struct {
		name string
		env  v1.EnvVar
		want string
	}{
		// Not an env field upstream: the pod fails (Invalid), not waits.
		{"field", v1.EnvVar{Name: "X", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.phase"}}}, "unsupported fieldPath"},
		{"label key", v1.EnvVar{Name: "X", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels['bad key!']"}}}, "invalid key subscript"},
		{"resource", v1.EnvVar{Name: "X", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.nvidia.com/gpu"}}}, "unsupported container resource"},
	} {
		for _, keep := range []bool{false, true} {
			bad := envPod()
			bad.Spec.Containers[0].Env = []v1.EnvVar{tc.env}
			_, _, err := r.resolve(context.Background(), bad, keep)
			if err == nil || !errdefs.IsInvalid(err) || errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s (keepRefs %v): %v, want an Invalid error naming %q", tc.name, keep, err, tc.want)
			}
		}
	}
	noHost := envPod()
	r.hostIPs = nil
	if _, _, err := r.resolve(context.Background(), noHost, true); !errdefs.IsInvalid(err) || !strings.Contains(err.Error(), "status.hostIP") {
		t.Errorf("status.hostIP without node IPs: %v", err)
	}
	r, _ = resolverFixture()

	noLinks := envPod()
	f := false
	noLinks.Spec.EnableServiceLinks = &f
	out, _, err := r.resolve(context.Background(), noLinks, false)
	if err != nil {
		t.Fatal(err)
	}
	env := envOf(out.Spec.Containers[0])
	if _, ok := env["REDIS_MAIN_SERVICE_HOST"]; ok || env["KUBERNETES_SERVICE_HOST"] == "" {
		t.Errorf("enableServiceLinks=false: %v", env)
	}
}

// A Service of the pod's namespace named kubernetes replaces the master
// service's variables (as upstream, and as this engine did), unless the
// pod turns service links off.
func TestResolveEnvServiceShadowing(t *testing.T) {
	r, _ := resolverFixture()
	services := r.services.(fakeServices)
	services["ns"] = append(services["ns"], svc("ns", "kubernetes", "10.96.9.9", v1.ServicePort{Port: 1, Protocol: v1.ProtocolTCP}))
	out, _, err := r.resolve(context.Background(), envPod(), false)
	if err != nil {
		t.Fatal(err)
	}
	if got := envOf(out.Spec.Containers[0])["KUBERNETES_SERVICE_HOST"]; got != "10.96.9.9" {
		t.Errorf("KUBERNETES_SERVICE_HOST = %q, want the namespace's service", got)
	}
	off := envPod()
	f := false
	off.Spec.EnableServiceLinks = &f
	if out, _, err = r.resolve(context.Background(), off, false); err != nil {
		t.Fatal(err)
	}
	if got := envOf(out.Spec.Containers[0])["KUBERNETES_SERVICE_HOST"]; got != "10.96.0.1" {
		t.Errorf("KUBERNETES_SERVICE_HOST = %q without service links, want the master's", got)
	}
}

func TestMissingEvent(t *testing.T) {
	for _, tc := range []struct {
		m                   envvars.Missing
		typ, reason, inText string
	}{
		{envvars.Missing{Kind: "ConfigMap", Name: "c", Container: "x", Optional: true}, v1.EventTypeNormal, ReasonOptionalConfigMapNotFound, `configmap "c" not found: envFrom of container x left out`},
		{envvars.Missing{Kind: "ConfigMap", Name: "c", Key: "k", Env: "E", Container: "x", Optional: true}, v1.EventTypeNormal, ReasonOptionalConfigMapKeyNotFound, `key "k" of configmap "c" not found: variable E of container x left out`},
		{envvars.Missing{Kind: "Secret", Name: "s", Env: "E", Container: "x", Optional: true}, v1.EventTypeNormal, ReasonOptionalSecretNotFound, `secret "s" not found: variable E`},
		{envvars.Missing{Kind: "Secret", Name: "s", Key: "k", Env: "E", Container: "x", Optional: true}, v1.EventTypeNormal, ReasonOptionalSecretKeyNotFound, `key "k" of secret "s"`},
		{envvars.Missing{Kind: "ConfigMap", Name: "c", Env: "E", Container: "x"}, v1.EventTypeWarning, ReasonMandatoryConfigMapNotFound, `variable E of container x needs it`},
		{envvars.Missing{Kind: "ConfigMap", Name: "c", Key: "k", Env: "E", Container: "x"}, v1.EventTypeWarning, ReasonMandatoryConfigMapKeyNotFound, `key "k" of configmap "c" not found`},
		{envvars.Missing{Kind: "Secret", Name: "s", Container: "x"}, v1.EventTypeWarning, ReasonMandatorySecretNotFound, `secret "s" not found: envFrom of container x needs it`},
		{envvars.Missing{Kind: "Secret", Name: "s", Key: "k", Env: "E", Container: "x"}, v1.EventTypeWarning, ReasonMandatorySecretKeyNotFound, `key "k" of secret "s"`},
	} {
		typ, reason, msg := missingEvent(tc.m)
		if typ != tc.typ || reason != tc.reason || !strings.Contains(msg, tc.inText) {
			t.Errorf("missingEvent(%+v) = %s %s %q, want %s %s containing %q", tc.m, typ, reason, msg, tc.typ, tc.reason, tc.inText)
		}
	}
}
