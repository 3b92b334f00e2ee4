package envvars

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/gokubelet/kubelet/pkg/errdefs"
)

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "a", "B": "b", "EMPTY": "", "NESTED": "$(A)"}
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"plain", "plain"},
		{"$(A)", "a"},
		{"x$(A)y$(B)z", "xaybz"},
		{"$(EMPTY)", ""},
		{"$(NESTED)", "$(A)"}, // values are not expanded again
		{"$(UNKNOWN)", "$(UNKNOWN)"},
		{"$$(A)", "$(A)"},
		{"$$$(A)", "$a"},
		{"$$", "$"},
		{"$", "$"},
		{"a$", "a$"},
		{"$A", "$A"},
		{"$(A", "$(A"},
		{"$(A$$", "$(A$"}, // scanning continues after an unterminated "$("
		{"$()", "$()"},
		{"$é", "$é"},
		{"$(A)$(B)", "ab"},
		{"$(A)$(A)$$$(B)", "aa$b"},
		{"(A)", "(A)"},
		{"cost $5", "cost $5"},
	} {
		if got := Expand(tc.in, Lookup(vars)); got != tc.want {
			t.Errorf("Expand(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func svc(ns, name, ip string, ports ...v1.ServicePort) *v1.Service {
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.ServiceSpec{ClusterIP: ip, Ports: ports}}
}

func names(env []v1.EnvVar) []string {
	var out []string
	for _, e := range env {
		out = append(out, e.Name+"="+e.Value)
	}
	return out
}

func TestFromService(t *testing.T) {
	s := svc("ns", "my-svc", "10.0.0.5",
		v1.ServicePort{Port: 80},
		v1.ServicePort{Name: "metrics", Port: 9090, Protocol: v1.ProtocolUDP})
	s.Spec.Ports[0].Name = "http"
	want := []string{
		"MY_SVC_SERVICE_HOST=10.0.0.5",
		"MY_SVC_SERVICE_PORT=80",
		"MY_SVC_SERVICE_PORT_HTTP=80",
		"MY_SVC_SERVICE_PORT_METRICS=9090",
		"MY_SVC_PORT=tcp://10.0.0.5:80",
		"MY_SVC_PORT_80_TCP=tcp://10.0.0.5:80",
		"MY_SVC_PORT_80_TCP_PROTO=tcp",
		"MY_SVC_PORT_80_TCP_PORT=80",
		"MY_SVC_PORT_80_TCP_ADDR=10.0.0.5",
		"MY_SVC_PORT_9090_UDP=udp://10.0.0.5:9090",
		"MY_SVC_PORT_9090_UDP_PROTO=udp",
		"MY_SVC_PORT_9090_UDP_PORT=9090",
		"MY_SVC_PORT_9090_UDP_ADDR=10.0.0.5",
	}
	if got := names(FromService(s)); !reflect.DeepEqual(got, want) {
		t.Errorf("FromService:\n got %v\nwant %v", got, want)
	}
	v6 := svc("ns", "v6", "fd00::1", v1.ServicePort{Port: 443})
	if got := names(FromService(v6)); got[2] != "V6_PORT=tcp://[fd00::1]:443" {
		t.Errorf("IPv6 service: %v", got)
	}
	if got := FromService(svc("ns", "headless", v1.ClusterIPNone, v1.ServicePort{Port: 1})); got != nil {
		t.Errorf("headless service gave %v", got)
	}
	if got := names(FromService(svc("ns", "noports", "10.0.0.6"))); !reflect.DeepEqual(got, []string{"NOPORTS_SERVICE_HOST=10.0.0.6"}) {
		t.Errorf("service without ports: %v", got)
	}
}

func TestServiceEnv(t *testing.T) {
	services := []*v1.Service{
		svc("default", "kubernetes", "10.96.0.1", v1.ServicePort{Name: "https", Port: 443}),
		svc("default", "other", "10.96.0.2", v1.ServicePort{Port: 80}),
		svc("app", "web", "10.96.0.3", v1.ServicePort{Port: 8080}),
		svc("app", "headless", "None", v1.ServicePort{Port: 8080}),
		svc("app", "pending", "", v1.ServicePort{Port: 8080}),
		svc("elsewhere", "db", "10.96.0.4", v1.ServicePort{Port: 5432}),
	}
	has := func(env []v1.EnvVar, name string) bool {
		for _, e := range env {
			if e.Name == name {
				return true
			}
		}
		return false
	}
	for _, tc := range []struct {
		ns      string
		links   bool
		want    []string
		wantNot []string
	}{
		{"app", true, []string{"KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT_HTTPS", "WEB_SERVICE_HOST"}, []string{"OTHER_SERVICE_HOST", "DB_SERVICE_HOST", "HEADLESS_SERVICE_HOST", "PENDING_SERVICE_HOST"}},
		{"app", false, []string{"KUBERNETES_SERVICE_HOST", "KUBERNETES_PORT_443_TCP"}, []string{"WEB_SERVICE_HOST"}},
		{"default", true, []string{"KUBERNETES_SERVICE_HOST", "OTHER_SERVICE_HOST"}, []string{"WEB_SERVICE_HOST"}},
		{"default", false, []string{"KUBERNETES_SERVICE_HOST"}, []string{"OTHER_SERVICE_HOST"}},
	} {
		env := ServiceEnv(services, tc.ns, tc.links)
		for _, n := range tc.want {
			if !has(env, n) {
				t.Errorf("ns %s links %v: %s missing from %v", tc.ns, tc.links, n, names(env))
			}
		}
		for _, n := range tc.wantNot {
			if has(env, n) {
				t.Errorf("ns %s links %v: %s present", tc.ns, tc.links, n)
			}
		}
	}
	// A Service named kubernetes in the pod's namespace replaces the
	// master service's variables, whatever the list order, as upstream
	// (envvars had the master win; the virtual engine had the namespace's).
	// Without service links the master service's stay.
	own := svc("app", "kubernetes", "10.96.9.9", v1.ServicePort{Port: 1})
	for _, tc := range []struct {
		name  string
		list  []*v1.Service
		links bool
		want  string
	}{
		{"namespace's after the master", append(append([]*v1.Service{}, services...), own), true, "10.96.9.9"},
		{"namespace's before the master", append([]*v1.Service{own}, services...), true, "10.96.9.9"},
		{"no service links", append([]*v1.Service{own}, services...), false, "10.96.0.1"},
	} {
		got := ""
		for _, e := range ServiceEnv(tc.list, "app", tc.links) {
			if e.Name == "KUBERNETES_SERVICE_HOST" {
				got = e.Value
			}
		}
		if got != tc.want {
			t.Errorf("%s: KUBERNETES_SERVICE_HOST = %q, want %q", tc.name, got, tc.want)
		}
	}
	// Stable order.
	a, b := names(ServiceEnv(services, "app", true)), names(ServiceEnv([]*v1.Service{services[5], services[2], services[0], services[1]}, "app", true))
	if !reflect.DeepEqual(a, b) {
		t.Errorf("order depends on input order:\n%v\n%v", a, b)
	}
}

func testPod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns1", UID: "uid-1",
			Labels: map[string]string{"app": "web", "tier": "front"}, Annotations: map[string]string{"note": "x y", "example.com/k": "v"}},
		Spec: v1.PodSpec{NodeName: "node-a", ServiceAccountName: "sa", SchedulerName: "default-scheduler"},
	}
}

func q(s string) resource.Quantity { return resource.MustParse(s) }

func cmRef(name, key string, optional bool) *v1.EnvVarSource {
	return &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: name}, Key: key, Optional: ptr.To(optional)}}
}

func secretRef(name, key string, optional bool) *v1.EnvVarSource {
	return &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: name}, Key: key, Optional: ptr.To(optional)}}
}

func TestResolve(t *testing.T) {
	sources := Sources{
		ConfigMaps: map[string]*v1.ConfigMap{
			"cfg":     {Data: map[string]string{"b": "2", "a": "1", "SHARED": "from-cm"}},
			"odd":     {Data: map[string]string{"1st": "a", "with space": "b", "dash-key": "c"}},
			"missing": nil,
		},
		Secrets: map[string]*v1.Secret{"sec": {Data: map[string][]byte{"password": []byte("hunter2"), "SHARED": []byte("from-secret")}}},
	}
	services := []v1.EnvVar{{Name: "KUBERNETES_SERVICE_HOST", Value: "10.96.0.1"}, {Name: "WEB_SERVICE_HOST", Value: "10.96.0.3"}}
	in := Inputs{Sources: sources, PodIPs: []string{"10.1.0.2"}, HostIPs: []string{"192.0.2.1"}, ServiceEnv: services,
		NodeAllocatable: v1.ResourceList{v1.ResourceMemory: q("1Gi")}}

	tests := []struct {
		name    string
		c       v1.Container
		want    []string
		wantErr string
		// class is the errdefs class the error must have.
		class func(error) bool
	}{
		{
			name: "literal values and expansion",
			c: v1.Container{Env: []v1.EnvVar{
				{Name: "A", Value: "x"},
				{Name: "B", Value: "$(A)-$(LATER)-$(WEB_SERVICE_HOST)-$$(A)"},
				{Name: "LATER", Value: "y"},
				{Name: "EMPTY"},
			}},
			want: []string{"A=x", "B=x-$(LATER)-10.96.0.3-$(A)", "LATER=y", "EMPTY=", "KUBERNETES_SERVICE_HOST=10.96.0.1", "WEB_SERVICE_HOST=10.96.0.3"},
		},
		{
			name: "envFrom with prefix, env overrides, later source overrides in place",
			c: v1.Container{
				EnvFrom: []v1.EnvFromSource{
					{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}},
					{Prefix: "S_", SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "sec"}}},
					{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "sec"}}},
				},
				Env: []v1.EnvVar{{Name: "a", Value: "override-$(b)"}, {Name: "WEB_SERVICE_HOST", Value: "mine"}},
			},
			want: []string{"SHARED=from-secret", "a=override-2", "b=2", "S_SHARED=from-secret", "S_password=hunter2", "password=hunter2", "WEB_SERVICE_HOST=mine", "KUBERNETES_SERVICE_HOST=10.96.0.1"},
		},
		{
			// Keys that are not C identifiers are used as they are: in
			// v1.34 upstream passes every key (RelaxedEnvironmentVariable-
			// Validation is GA). The virtual engine skipped them.
			name: "envFrom keys are not filtered",
			c:    v1.Container{EnvFrom: []v1.EnvFromSource{{Prefix: "P_", ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "odd"}}}}},
			want: []string{"P_1st=a", "P_dash-key=c", "P_with space=b", "KUBERNETES_SERVICE_HOST=10.96.0.1", "WEB_SERVICE_HOST=10.96.0.3"},
		},
		{
			name: "optional missing envFrom is skipped",
			c:    v1.Container{EnvFrom: []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "missing"}, Optional: ptr.To(true)}}}},
			want: []string{"KUBERNETES_SERVICE_HOST=10.96.0.1", "WEB_SERVICE_HOST=10.96.0.3"},
		},
		{
			name:    "required missing envFrom ConfigMap",
			c:       v1.Container{EnvFrom: []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "missing"}}}}},
			wantErr: `configmap "missing" not found`,
			class:   errdefs.IsNotFound,
		},
		{
			name:    "required missing envFrom Secret",
			c:       v1.Container{EnvFrom: []v1.EnvFromSource{{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "nosuch"}}}}},
			wantErr: `secret "nosuch" not found`,
			class:   errdefs.IsNotFound,
		},
		{
			name: "key refs",
			c: v1.Container{Env: []v1.EnvVar{
				{Name: "CM", ValueFrom: cmRef("cfg", "a", false)},
				{Name: "SEC", ValueFrom: secretRef("sec", "password", false)},
				{Name: "OPT_KEY", ValueFrom: cmRef("cfg", "nokey", true)},
				{Name: "OPT_CM", ValueFrom: cmRef("missing", "x", true)},
				{Name: "OPT_SECRET", ValueFrom: secretRef("nosuch", "x", true)},
				{Name: "USE", Value: "$(CM)$(SEC)$(OPT_KEY)"},
			}},
			want: []string{"CM=1", "SEC=hunter2", "USE=1hunter2$(OPT_KEY)", "KUBERNETES_SERVICE_HOST=10.96.0.1", "WEB_SERVICE_HOST=10.96.0.3"},
		},
		{
			name:    "required missing ConfigMap key names the key",
			c:       v1.Container{Env: []v1.EnvVar{{Name: "X", ValueFrom: cmRef("cfg", "nokey", false)}}},
			wantErr: "couldn't find key nokey in ConfigMap ns1/cfg",
			class:   errdefs.IsNotFound,
		},
		{
			name:    "required missing Secret key names the key",
			c:       v1.Container{Env: []v1.EnvVar{{Name: "X", ValueFrom: secretRef("sec", "token", false)}}},
			wantErr: "couldn't find key token in Secret ns1/sec",
			class:   errdefs.IsNotFound,
		},
		{
			name:    "required missing ConfigMap of a key ref",
			c:       v1.Container{Env: []v1.EnvVar{{Name: "X", ValueFrom: cmRef("missing", "k", false)}}},
			wantErr: `configmap "missing" not found`,
			class:   errdefs.IsNotFound,
		},
		{
			name:    "required missing Secret of a key ref",
			c:       v1.Container{Env: []v1.EnvVar{{Name: "X", ValueFrom: secretRef("nosuch", "k", false)}}},
			wantErr: `secret "nosuch" not found`,
			class:   errdefs.IsNotFound,
		},
		{
			name: "downward API",
			c: v1.Container{Name: "c", Env: []v1.EnvVar{
				{Name: "POD", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				{Name: "IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
				{Name: "HOST", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.hostIP"}}},
				{Name: "MEM", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.memory", Divisor: q("1Mi")}}},
				{Name: "URL", Value: "http://$(IP):80/$(POD)"},
			}},
			want: []string{"POD=web", "IP=10.1.0.2", "HOST=192.0.2.1", "MEM=1024", "URL=http://10.1.0.2:80/web", "KUBERNETES_SERVICE_HOST=10.96.0.1", "WEB_SERVICE_HOST=10.96.0.3"},
		},
		{
			name:    "bad field path",
			c:       v1.Container{Env: []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.volumes"}}}}},
			wantErr: "env X: unsupported fieldPath",
			class:   errdefs.IsInvalid,
		},
		{
			// Not an env downward API field upstream (envvars gave "Always").
			name:    "spec.restartPolicy is not an env field",
			c:       v1.Container{Env: []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.restartPolicy"}}}}},
			wantErr: "env X: unsupported fieldPath: spec.restartPolicy",
			class:   errdefs.IsInvalid,
		},
		{
			name:    "bad resource",
			c:       v1.Container{Env: []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.gpu"}}}}},
			wantErr: "env X: unsupported container resource : limits.gpu",
			class:   errdefs.IsInvalid,
		},
		{
			name:    "fileKeyRef with the EnvFiles gate off",
			c:       v1.Container{Env: []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{FileKeyRef: &v1.FileKeySelector{VolumeName: "v", Path: "p", Key: "k"}}}}},
			wantErr: "env X: fileKeyRef",
			class:   errdefs.IsTerminal,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Resolve(testPod(), &tc.c, in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				if tc.class != nil && !tc.class(err) {
					t.Errorf("error %v is not of the expected errdefs class", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if g := names(got); !reflect.DeepEqual(g, tc.want) {
				t.Errorf("\n got %v\nwant %v", g, tc.want)
			}
		})
	}
}

func TestExpandCommand(t *testing.T) {
	env := []v1.EnvVar{{Name: "MSG", Value: "hi"}, {Name: "N", Value: "3"}}
	got := ExpandCommand([]string{"echo", "$(MSG)", "$$(MSG)", "$(NOPE)", "x$(N)"}, env)
	want := []string{"echo", "hi", "$(MSG)", "$(NOPE)", "x3"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v want %v", got, want)
	}
	if ExpandCommand(nil, env) != nil {
		t.Errorf("nil command must stay nil (the image's entrypoint)")
	}
}

type fakeObjects struct {
	cms     map[string]*v1.ConfigMap
	secrets map[string]*v1.Secret
	fail    error
	gets    []string
}

func (f *fakeObjects) GetConfigMap(_ context.Context, ns, name string) (*v1.ConfigMap, error) {
	f.gets = append(f.gets, "cm:"+ns+"/"+name)
	if f.fail != nil {
		return nil, f.fail
	}
	if o, ok := f.cms[name]; ok {
		return o, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
}

func (f *fakeObjects) GetSecret(_ context.Context, ns, name string) (*v1.Secret, error) {
	f.gets = append(f.gets, "secret:"+ns+"/"+name)
	if o, ok := f.secrets[name]; ok {
		return o, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}

func TestFetch(t *testing.T) {
	objs := &fakeObjects{cms: map[string]*v1.ConfigMap{"cfg": {Data: map[string]string{"k": "v"}}}}
	c := &v1.Container{
		EnvFrom: []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
		Env: []v1.EnvVar{
			{Name: "A", ValueFrom: cmRef("cfg", "k", false)},
			{Name: "B", ValueFrom: secretRef("gone", "k", true)},
			{Name: "C", Value: "literal"},
		},
	}
	src, err := Fetch(context.Background(), objs, testPod(), c)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"cm:ns1/cfg", "secret:ns1/gone"}; !reflect.DeepEqual(objs.gets, want) {
		t.Errorf("reads %v, want each object once: %v", objs.gets, want)
	}
	if src.ConfigMaps["cfg"] == nil || src.Secrets["gone"] != nil {
		t.Errorf("sources %+v", src)
	}
	if !NeedsObjects(c) || NeedsObjects(&v1.Container{Env: []v1.EnvVar{{Name: "x", Value: "y"}}}) {
		t.Errorf("NeedsObjects wrong")
	}
	objs.fail = errors.New("connection refused")
	if _, err := Fetch(context.Background(), objs, testPod(), c); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("a failed read must be an error, got %v", err)
	}
	if _, err := Fetch(context.Background(), nil, testPod(), c); err == nil || !strings.Contains(err.Error(), "no API server") {
		t.Errorf("without objects: %v", err)
	}
	if _, err := Fetch(context.Background(), nil, testPod(), &v1.Container{Env: []v1.EnvVar{{Name: "x", Value: "y"}}}); err != nil {
		t.Errorf("a container without references needs no objects: %v", err)
	}
}

// Fetch over a whole pod reads each object once, and takes an errdefs
// NotFound (a provider.ObjectGetter's) as absent like an API NotFound.
func TestFetchPod(t *testing.T) {
	objs := &classifiedObjects{fakeObjects: fakeObjects{cms: map[string]*v1.ConfigMap{"cfg": {Data: map[string]string{"k": "v"}}}}}
	a := &v1.Container{Env: []v1.EnvVar{{Name: "A", ValueFrom: cmRef("cfg", "k", false)}}}
	b := &v1.Container{EnvFrom: []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
		Env: []v1.EnvVar{{Name: "B", ValueFrom: secretRef("gone", "k", true)}}}
	src, err := Fetch(context.Background(), objs, testPod(), a, b)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"cm:ns1/cfg", "secret:ns1/gone"}; !reflect.DeepEqual(objs.gets, want) {
		t.Errorf("reads %v, want %v", objs.gets, want)
	}
	if _, known := src.Secrets["gone"]; !known || src.Secrets["gone"] != nil {
		t.Errorf("an errdefs NotFound must be recorded absent: %+v", src)
	}
}

// classifiedObjects answers NotFound as provider.ObjectGetter does
// (errdefs, without an API status).
type classifiedObjects struct{ fakeObjects }

func (c *classifiedObjects) GetSecret(ctx context.Context, ns, name string) (*v1.Secret, error) {
	s, err := c.fakeObjects.GetSecret(ctx, ns, name)
	if err != nil {
		return nil, errdefs.NotFound(errors.New("no such secret"))
	}
	return s, nil
}

func TestClientObjectsClassify(t *testing.T) {
	client := fake.NewSimpleClientset(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "cfg"}})
	objs := ClientObjects{Client: client}
	if cm, err := objs.GetConfigMap(context.Background(), "ns1", "cfg"); err != nil || cm.Name != "cfg" {
		t.Fatalf("GetConfigMap = %v, %v", cm, err)
	}
	_, err := objs.GetSecret(context.Background(), "ns1", "nope")
	if !errdefs.IsNotFound(err) || !apierrors.IsNotFound(err) {
		t.Errorf("a missing Secret must be NotFound for errdefs and apierrors both: %v", err)
	}
	if _, err := objs.GetConfigMap(context.Background(), "ns1", "nope"); !errdefs.IsNotFound(err) {
		t.Errorf("a missing ConfigMap: %v", err)
	}
	// The Node authorizer refuses a node until its graph has the pod:
	// retried, not terminal.
	client.PrependReactor("get", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "used", errors.New("no relationship found"))
	})
	if _, err := objs.GetSecret(context.Background(), "ns1", "used"); !errdefs.IsRetryable(err) || errdefs.IsTerminal(err) || !apierrors.IsForbidden(err) {
		t.Errorf("a Forbidden Secret read must be retryable (and still Forbidden for apierrors): %v", err)
	}
}
