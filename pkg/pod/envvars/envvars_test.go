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
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
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
		{"(A)", "(A)"},
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
	// A Service named kubernetes in the pod's namespace does not replace
	// the master service.
	shadow := append(services, svc("app", "kubernetes", "10.96.9.9", v1.ServicePort{Port: 1}))
	for _, e := range ServiceEnv(shadow, "app", true) {
		if e.Name == "KUBERNETES_SERVICE_HOST" && e.Value != "10.96.0.1" {
			t.Errorf("master service shadowed: %s", e.Value)
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

func TestFieldValue(t *testing.T) {
	pod := testPod()
	pod.Status.Phase = v1.PodRunning
	podIPs, hostIPs := []string{"10.1.0.2", "fd00::2"}, []string{"192.0.2.1", "2001:db8::1"}
	for _, tc := range []struct{ path, want string }{
		{"metadata.name", "web"},
		{"metadata.namespace", "ns1"},
		{"metadata.uid", "uid-1"},
		{"metadata.labels['app']", "web"},
		{"metadata.labels['missing']", ""},
		{"metadata.annotations['example.com/k']", "v"},
		{"metadata.labels", "app=\"web\"\ntier=\"front\""},
		{"metadata.annotations", "example.com/k=\"v\"\nnote=\"x y\""},
		{"spec.nodeName", "node-a"},
		{"spec.host", "node-a"},
		{"spec.serviceAccountName", "sa"},
		{"spec.restartPolicy", "Always"},
		{"spec.schedulerName", "default-scheduler"},
		{"status.phase", "Running"},
		{"status.podIP", "10.1.0.2"},
		{"status.podIPs", "10.1.0.2,fd00::2"},
		{"status.hostIP", "192.0.2.1"},
		{"status.hostIPs", "192.0.2.1,2001:db8::1"},
	} {
		got, err := FieldValue(pod, tc.path, podIPs, hostIPs)
		if err != nil || got != tc.want {
			t.Errorf("FieldValue(%s) = %q, %v; want %q", tc.path, got, err, tc.want)
		}
	}
	for _, bad := range []string{"spec.containers", "metadata.name['x']", "metadata.labels['bad key!']"} {
		if _, err := FieldValue(pod, bad, podIPs, hostIPs); err == nil {
			t.Errorf("FieldValue(%s) gave no error", bad)
		}
	}
	if v, err := FieldValue(pod, "status.podIP", nil, hostIPs); err != nil || v != "" {
		t.Errorf("podIP before the sandbox has one: %q %v", v, err)
	}
}

func q(s string) resource.Quantity { return resource.MustParse(s) }

func TestResourceValue(t *testing.T) {
	pod := testPod()
	pod.Spec.Containers = []v1.Container{
		{Name: "limited", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: q("250m"), v1.ResourceMemory: q("32Mi")},
			Limits:   v1.ResourceList{v1.ResourceCPU: q("1250m"), v1.ResourceMemory: q("64Mi")}}},
		{Name: "unlimited"},
	}
	alloc := v1.ResourceList{v1.ResourceCPU: q("2"), v1.ResourceMemory: q("4Gi"), v1.ResourceEphemeralStorage: q("10Gi")}
	for _, tc := range []struct {
		c, res, container string
		divisor           string
		want              string
	}{
		{"limited", "limits.cpu", "", "", "2"}, // 1.25 cores rounded up
		{"limited", "limits.cpu", "", "1m", "1250"},
		{"limited", "requests.cpu", "", "1m", "250"},
		{"limited", "limits.memory", "", "", "67108864"},
		{"limited", "limits.memory", "", "1Mi", "64"},
		{"limited", "requests.memory", "", "1Mi", "32"},
		{"unlimited", "limits.cpu", "", "", "2"},
		{"unlimited", "limits.memory", "", "1Gi", "4"},
		{"unlimited", "limits.ephemeral-storage", "", "1Gi", "10"},
		{"unlimited", "requests.cpu", "", "", "0"},
		{"unlimited", "limits.memory", "limited", "1Mi", "64"}, // another container named
	} {
		c := &pod.Spec.Containers[0]
		if tc.c == "unlimited" {
			c = &pod.Spec.Containers[1]
		}
		fs := &v1.ResourceFieldSelector{Resource: tc.res, ContainerName: tc.container}
		if tc.divisor != "" {
			fs.Divisor = q(tc.divisor)
		}
		got, err := ResourceValue(fs, pod, c, alloc)
		if err != nil || got != tc.want {
			t.Errorf("%s %s (container %q, divisor %q) = %q, %v; want %q", tc.c, tc.res, tc.container, tc.divisor, got, err, tc.want)
		}
	}
	pod.Spec.Resources = &v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: q("1Gi")}}
	if got, _ := ResourceValue(&v1.ResourceFieldSelector{Resource: "limits.memory", Divisor: q("1Mi")}, pod, &pod.Spec.Containers[1], alloc); got != "1024" {
		t.Errorf("pod-level limit not used as default: %s", got)
	}
	if _, err := ResourceValue(&v1.ResourceFieldSelector{Resource: "limits.gpu"}, pod, &pod.Spec.Containers[0], alloc); err == nil {
		t.Errorf("unsupported resource gave no error")
	}
	if _, err := ResourceValue(&v1.ResourceFieldSelector{Resource: "limits.cpu", ContainerName: "nope"}, pod, &pod.Spec.Containers[0], alloc); err == nil {
		t.Errorf("unknown container gave no error")
	}
}

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
			name: "optional missing envFrom is skipped",
			c:    v1.Container{EnvFrom: []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "missing"}, Optional: ptr.To(true)}}}},
			want: []string{"KUBERNETES_SERVICE_HOST=10.96.0.1", "WEB_SERVICE_HOST=10.96.0.3"},
		},
		{
			name:    "required missing envFrom ConfigMap",
			c:       v1.Container{EnvFrom: []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "missing"}}}}},
			wantErr: `configmap "missing" not found`,
		},
		{
			name:    "required missing envFrom Secret",
			c:       v1.Container{EnvFrom: []v1.EnvFromSource{{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "nosuch"}}}}},
			wantErr: `secret "nosuch" not found`,
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
		},
		{
			name:    "required missing Secret key names the key",
			c:       v1.Container{Env: []v1.EnvVar{{Name: "X", ValueFrom: secretRef("sec", "token", false)}}},
			wantErr: "couldn't find key token in Secret ns1/sec",
		},
		{
			name:    "required missing ConfigMap of a key ref",
			c:       v1.Container{Env: []v1.EnvVar{{Name: "X", ValueFrom: cmRef("missing", "k", false)}}},
			wantErr: `configmap "missing" not found`,
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
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Resolve(testPod(), &tc.c, in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
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
}
