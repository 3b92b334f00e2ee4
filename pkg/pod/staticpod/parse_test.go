package staticpod

import (
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

const node = "Node-1"

const minimal = `
apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: app
    image: gokubelet.local/testimage:1.0
`

func mustParse(t *testing.T, manifest, source, origin string) []*v1.Pod {
	t.Helper()
	pods, err := Parse([]byte(manifest), source, origin, node)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return pods
}

func TestParseFormats(t *testing.T) {
	tests := []struct {
		name     string
		manifest string
		want     []string
	}{
		{"yaml pod", minimal, []string{"web-node-1"}},
		{"json pod", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"j"},"spec":{"containers":[{"name":"c","image":"busybox:1"}]}}`, []string{"j-node-1"}},
		{"pod list", `
apiVersion: v1
kind: PodList
items:
- metadata: {name: a}
  spec: {containers: [{name: c, image: "busybox:1"}]}
- metadata: {name: b}
  spec: {containers: [{name: c, image: "busybox:1"}]}
`, []string{"a-node-1", "b-node-1"}},
		{"multi document", minimal + "\n---\n# comment only\n---\n" + strings.Replace(minimal, "name: web", "name: web2", 1),
			[]string{"web-node-1", "web2-node-1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pods := mustParse(t, tt.manifest, podspec.SourceFile, "/etc/manifests/x.yaml")
			var got []string
			for _, p := range pods {
				got = append(got, p.Name)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("names = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseDefaults(t *testing.T) {
	manifest := `
apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  initContainers:
  - name: init
    image: busybox
  containers:
  - name: latest
    image: example.com:5000/app:latest
    ports:
    - containerPort: 8080
    resources:
      limits: {cpu: 500m, memory: 64Mi}
      requests: {cpu: 100m}
    livenessProbe:
      httpGet: {port: 8080}
  - name: pinned
    image: example.com:5000/app:1.2
  - name: digest
    image: app@sha256:0000000000000000000000000000000000000000000000000000000000000000
  volumes:
  - name: host
    hostPath: {path: /tmp}
`
	pod := mustParse(t, manifest, podspec.SourceFile, "/m/web.yaml")[0]
	s := pod.Spec
	checks := []struct {
		field string
		got   any
		want  any
	}{
		{"metadata.namespace", pod.Namespace, "default"},
		{"spec.restartPolicy", s.RestartPolicy, v1.RestartPolicyAlways},
		{"spec.dnsPolicy", s.DNSPolicy, v1.DNSClusterFirst},
		{"spec.terminationGracePeriodSeconds", *s.TerminationGracePeriodSeconds, int64(30)},
		{"spec.schedulerName", s.SchedulerName, "default-scheduler"},
		{"spec.securityContext set", s.SecurityContext != nil, true},
		{"spec.enableServiceLinks", *s.EnableServiceLinks, true},
		{"init imagePullPolicy (no tag)", s.InitContainers[0].ImagePullPolicy, v1.PullAlways},
		{"imagePullPolicy (:latest)", s.Containers[0].ImagePullPolicy, v1.PullAlways},
		{"imagePullPolicy (tag, registry port)", s.Containers[1].ImagePullPolicy, v1.PullIfNotPresent},
		{"imagePullPolicy (digest)", s.Containers[2].ImagePullPolicy, v1.PullIfNotPresent},
		{"terminationMessagePath", s.Containers[0].TerminationMessagePath, "/dev/termination-log"},
		{"terminationMessagePolicy", s.Containers[0].TerminationMessagePolicy, v1.TerminationMessageReadFile},
		{"ports[0].protocol", s.Containers[0].Ports[0].Protocol, v1.ProtocolTCP},
		{"probe timeoutSeconds", s.Containers[0].LivenessProbe.TimeoutSeconds, int32(1)},
		{"probe periodSeconds", s.Containers[0].LivenessProbe.PeriodSeconds, int32(10)},
		{"probe successThreshold", s.Containers[0].LivenessProbe.SuccessThreshold, int32(1)},
		{"probe failureThreshold", s.Containers[0].LivenessProbe.FailureThreshold, int32(3)},
		{"probe httpGet.path", s.Containers[0].LivenessProbe.HTTPGet.Path, "/"},
		{"probe httpGet.scheme", s.Containers[0].LivenessProbe.HTTPGet.Scheme, v1.URISchemeHTTP},
		{"requests.memory from limit", s.Containers[0].Resources.Requests.Memory().String(), "64Mi"},
		{"requests.cpu kept", s.Containers[0].Resources.Requests.Cpu().String(), "100m"},
		{"no probe defaulted when unset", s.Containers[1].LivenessProbe == nil, true},
		{"hostPath type", *s.Volumes[0].HostPath.Type, v1.HostPathUnset},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.field, c.got, c.want)
		}
	}
}

func TestParseHostNetworkDefaultsHostPort(t *testing.T) {
	pod := mustParse(t, `
apiVersion: v1
kind: Pod
metadata: {name: hn}
spec:
  hostNetwork: true
  containers:
  - {name: c, image: "busybox:1", ports: [{containerPort: 9000}]}
`, podspec.SourceFile, "/m/hn.yaml")[0]
	if got := pod.Spec.Containers[0].Ports[0].HostPort; got != 9000 {
		t.Fatalf("hostPort = %d, want 9000", got)
	}
}

func TestParseIdentity(t *testing.T) {
	pod := mustParse(t, minimal, podspec.SourceFile, "/etc/manifests/web.yaml")[0]
	if pod.Name != "web-node-1" {
		t.Errorf("name = %q, want web-node-1 (node name lowercased)", pod.Name)
	}
	if pod.Spec.NodeName != node {
		t.Errorf("spec.nodeName = %q, want %q", pod.Spec.NodeName, node)
	}
	if len(pod.UID) != 32 {
		t.Errorf("uid %q: want 32 hex characters", pod.UID)
	}
	if got := pod.Annotations[podspec.ConfigHashAnnotation]; got != string(pod.UID) {
		t.Errorf("config.hash = %q, want the UID %q", got, pod.UID)
	}
	if got := pod.Annotations[podspec.ConfigSourceAnnotation]; got != "file" {
		t.Errorf("config.source = %q, want file", got)
	}
	found := false
	for _, tol := range pod.Spec.Tolerations {
		if tol.Operator == v1.TolerationOpExists && tol.Effect == v1.TaintEffectNoExecute && tol.Key == "" {
			found = true
		}
	}
	if !found {
		t.Errorf("tolerations %v: want one for every NoExecute taint", pod.Spec.Tolerations)
	}
	if pod.Spec.Priority != nil {
		t.Errorf("priority = %d, want unset without a priority class", *pod.Spec.Priority)
	}

	httpPod := mustParse(t, minimal, podspec.SourceHTTP, "http://example.com/pods")[0]
	if got := httpPod.Annotations[podspec.ConfigSourceAnnotation]; got != "http" {
		t.Errorf("config.source = %q, want http", got)
	}
}

func TestParseKeepsManifestUID(t *testing.T) {
	m := strings.Replace(minimal, "name: web", "name: web\n  uid: fixed-uid", 1)
	pod := mustParse(t, m, podspec.SourceFile, "/m/web.yaml")[0]
	if pod.UID != "fixed-uid" || pod.Annotations[podspec.ConfigHashAnnotation] != "fixed-uid" {
		t.Fatalf("uid = %q, hash = %q; want both fixed-uid", pod.UID, pod.Annotations[podspec.ConfigHashAnnotation])
	}
}

func TestParseUID(t *testing.T) {
	uid := func(manifest, source, origin, nodeName string) string {
		t.Helper()
		pods, err := Parse([]byte(manifest), source, origin, nodeName)
		if err != nil {
			t.Fatal(err)
		}
		return string(pods[0].UID)
	}
	edited := strings.Replace(minimal, "testimage:1.0", "testimage:1.1", 1)
	reformatted := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},"spec":{"containers":[{"name":"app","image":"gokubelet.local/testimage:1.0"}]}}`
	explicitDefaults := strings.Replace(minimal, "image: gokubelet.local/testimage:1.0",
		"image: gokubelet.local/testimage:1.0\n    imagePullPolicy: IfNotPresent", 1)
	base := uid(minimal, "file", "/m/web.yaml", "n1")
	tests := []struct {
		name string
		got  string
		same bool
	}{
		{"same content, same place", uid(minimal, "file", "/m/web.yaml", "n1"), true},
		{"same pod in JSON", uid(reformatted, "file", "/m/web.yaml", "n1"), true},
		{"defaults written out", uid(explicitDefaults, "file", "/m/web.yaml", "n1"), true},
		{"edited content", uid(edited, "file", "/m/web.yaml", "n1"), false},
		{"other path", uid(minimal, "file", "/m/web2.yaml", "n1"), false},
		{"other node", uid(minimal, "file", "/m/web.yaml", "n2"), false},
		{"from a URL", uid(minimal, "http", "/m/web.yaml", "n1"), false},
	}
	for _, tt := range tests {
		if (tt.got == base) != tt.same {
			t.Errorf("%s: uid %s vs %s, want same=%v", tt.name, tt.got, base, tt.same)
		}
	}
	// For a URL the node does not enter the hash.
	if uid(minimal, "http", "http://h/p", "n1") != uid(minimal, "http", "http://h/p", "n2") {
		t.Errorf("http UID depends on the node name; want only the URL")
	}
	if uid(minimal, "http", "http://h/p", "n1") == uid(minimal, "http", "http://h/q", "n1") {
		t.Errorf("http UID does not depend on the URL")
	}
}

func TestParsePriority(t *testing.T) {
	tests := []struct {
		class string
		want  *int32
	}{
		{"system-node-critical", ptrTo(int32(2000001000))},
		{"system-cluster-critical", ptrTo(int32(2000000000))},
		{"my-class", nil},
	}
	for _, tt := range tests {
		m := strings.Replace(minimal, "spec:\n", "spec:\n  priorityClassName: "+tt.class+"\n", 1)
		pod := mustParse(t, m, "file", "/m/p.yaml")[0]
		switch {
		case tt.want == nil && pod.Spec.Priority != nil:
			t.Errorf("%s: priority = %d, want unset", tt.class, *pod.Spec.Priority)
		case tt.want != nil && (pod.Spec.Priority == nil || *pod.Spec.Priority != *tt.want):
			t.Errorf("%s: priority = %v, want %d", tt.class, pod.Spec.Priority, *tt.want)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

func TestParseErrors(t *testing.T) {
	container := func(extra string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    image: busybox:1\n" + extra
	}
	tests := []struct {
		name     string
		manifest string
		want     string // a substring of the error, naming the field
	}{
		{"empty", "", "manifest is empty"},
		{"only comments", "# nothing\n---\n", "manifest is empty"},
		{"not yaml", "{", "document 0"},
		{"no apiVersion", "kind: Pod\nmetadata: {name: p}\n", "apiVersion: Required value"},
		{"wrong kind", "apiVersion: v1\nkind: Deployment\n", `kind: Unsupported value: "Deployment"`},
		{"unknown field", container("    imagee: x\n"), `unknown field "spec.containers[0].imagee"`},
		{"wrong case field", container("    Image: x\n"), `unknown field "spec.containers[0].Image"`},
		{"duplicate field", container("    image: busybox:2\n"), `"image"`},
		{"second document bad", minimal + "---\napiVersion: v1\nkind: Service\n", "document 1: kind"},
		{"no name", "apiVersion: v1\nkind: Pod\nspec:\n  containers: [{name: c, image: x}]\n", "metadata.name: Required value"},
		{"bad name", strings.Replace(minimal, "name: web", "name: Web_1", 1), "metadata.name: Invalid value: \"Web_1\""},
		{"bad namespace", strings.Replace(minimal, "name: web", "name: web\n  namespace: kube.system", 1), "metadata.namespace: Invalid value"},
		{"bad label", strings.Replace(minimal, "name: web", "name: web\n  labels: {\"a b\": x}", 1), "metadata.labels: Invalid value: \"a b\""},
		{"no containers", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {}\n", "spec.containers: Required value"},
		{"bad container name", strings.Replace(minimal, "name: app", "name: App", 1), "spec.containers[0].name: Invalid value: \"App\""},
		{"duplicate across init", strings.Replace(minimal, "  containers:", "  initContainers:\n  - {name: app, image: x}\n  containers:", 1), "spec.containers[0].name: Duplicate value: \"app\""},
		{"no image", strings.Replace(minimal, "image: gokubelet.local/testimage:1.0", "image: \" \"", 1), "spec.containers[0].image: Required value"},
		{"restartPolicy", strings.Replace(minimal, "spec:\n", "spec:\n  restartPolicy: Sometimes\n", 1), "spec.restartPolicy: Unsupported value: \"Sometimes\""},
		{"container restartPolicy", container("    restartPolicy: Sometimes\n"), "spec.containers[0].restartPolicy: Unsupported value: \"Sometimes\""},
		{"rules without a policy", container("    restartPolicyRules: [{action: Restart, exitCodes: {operator: In, values: [42]}}]\n"), "spec.containers[0].restartPolicy: Required value"},
		{"rule without exit codes", container("    restartPolicy: Never\n    restartPolicyRules: [{action: Restart}]\n"), "spec.containers[0].restartPolicyRules[0].exitCodes: Required value"},
		{"rule operator", container("    restartPolicy: Never\n    restartPolicyRules: [{action: Restart, exitCodes: {operator: Is, values: [1]}}]\n"), "spec.containers[0].restartPolicyRules[0].exitCodes.operator: Unsupported value: \"Is\""},
		{"container port", container("    ports: [{containerPort: 70000}]\n"), "spec.containers[0].ports[0].containerPort: Invalid value: 70000"},
		{"host port", container("    ports: [{containerPort: 80, hostPort: -1}]\n"), "spec.containers[0].ports[0].hostPort: Invalid value: -1"},
		{"protocol", container("    ports: [{containerPort: 80, protocol: ICMP}]\n"), "spec.containers[0].ports[0].protocol: Unsupported value: \"ICMP\""},
		{"host port clash", container("    ports: [{containerPort: 80, hostPort: 8080}]\n  - name: d\n    image: x\n    ports: [{containerPort: 81, hostPort: 8080}]\n"),
			"spec.containers[1].ports[0].hostPort: Duplicate value"},
		{"requests above limits", container("    resources: {limits: {cpu: 100m}, requests: {cpu: 200m}}\n"), "spec.containers[0].resources.requests[cpu]: Invalid value: \"200m\""},
		{"negative quantity", container("    resources: {requests: {memory: -1Mi}}\n"), "spec.containers[0].resources.requests[memory]: Invalid value: \"-1Mi\""},
		{"env name", container("    env: [{name: \"A=B\", value: x}]\n"), "spec.containers[0].env[0].name: Invalid value: \"A=B\""},
		{"unknown volume", container("    volumeMounts: [{name: data, mountPath: /data}]\n"), "spec.containers[0].volumeMounts[0].name: Not found: \"data\""},
		{"probe without handler", container("    livenessProbe: {periodSeconds: 5}\n"), "spec.containers[0].livenessProbe: Invalid value"},
		{"liveness successThreshold", container("    livenessProbe: {exec: {command: [\"true\"]}, successThreshold: 2}\n"), "spec.containers[0].livenessProbe.successThreshold: Invalid value: 2"},
		{"ephemeral containers", container("  ephemeralContainers: [{name: e, image: x}]\n"), "spec.ephemeralContainers: Forbidden"},
		{"duplicate pods", minimal + "---\n" + minimal, "metadata.name: Duplicate value: \"default/web\""},
		{"priority mismatch", strings.Replace(minimal, "spec:\n", "spec:\n  priorityClassName: system-node-critical\n  priority: 5\n", 1), "spec.priority: Invalid value: 5"},
		{"uid ../../victim (attack: removing the pod would rm -rf outside the root dir)", strings.Replace(minimal, "name: web", "name: web\n  uid: ../../victim", 1), `metadata.uid: Invalid value: "../../victim": must be one clean path element`},
		{"uid with a slash", strings.Replace(minimal, "name: web", "name: web\n  uid: a/b", 1), `metadata.uid: Invalid value: "a/b"`},
		{"uid dot", strings.Replace(minimal, "name: web", "name: web\n  uid: \".\"", 1), `metadata.uid: Invalid value: "."`},
		{"uid dot dot", strings.Replace(minimal, "name: web", "name: web\n  uid: \"..\"", 1), `metadata.uid: Invalid value: ".."`},
		{"name too long with node", strings.Replace(minimal, "name: web", "name: "+strings.Repeat("a", 250), 1), "metadata.name: Invalid value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pods, err := Parse([]byte(tt.manifest), podspec.SourceFile, "/m/p.yaml", node)
			if err == nil {
				t.Fatalf("no error; pods %v", pods)
			}
			if pods != nil {
				t.Errorf("pods returned with an error")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q\n does not contain %q", err, tt.want)
			}
		})
	}
}

func TestParseEmptyIsErrEmpty(t *testing.T) {
	if _, err := Parse([]byte("\n\n"), "file", "/m/e.yaml", node); !errors.Is(err, ErrEmpty) {
		t.Fatalf("err = %v, want ErrEmpty", err)
	}
}

func TestDefaultPullPolicy(t *testing.T) {
	tests := map[string]v1.PullPolicy{
		"busybox":                       v1.PullAlways,
		"busybox:latest":                v1.PullAlways,
		"busybox:1.36":                  v1.PullIfNotPresent,
		"localhost:5000/busybox":        v1.PullAlways,
		"localhost:5000/busybox:1":      v1.PullIfNotPresent,
		"busybox@sha256:abc":            v1.PullIfNotPresent,
		"busybox:latest@sha256:abc":     v1.PullAlways,
		"gokubelet.local/testimage:1.0": v1.PullIfNotPresent,
	}
	for image, want := range tests {
		if got := defaultPullPolicy(image); got != want {
			t.Errorf("defaultPullPolicy(%q) = %s, want %s", image, got, want)
		}
	}
}

func TestDefaultsDoNotOverwrite(t *testing.T) {
	r := v1.ResourceRequirements{
		Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")},
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m")},
	}
	defaultResources(&r)
	if got := r.Requests.Cpu().String(); got != "250m" {
		t.Fatalf("request = %s, want 250m kept", got)
	}
}

// A container's own restart policy and rules (ContainerRestartRules, on by
// default since 1.35) are valid in a manifest, as the API server takes them.
func TestParseContainerRestartRules(t *testing.T) {
	manifest := strings.Replace(minimal, "    image: gokubelet.local/testimage:1.0\n",
		"    image: gokubelet.local/testimage:1.0\n    restartPolicy: Never\n    restartPolicyRules: [{action: Restart, exitCodes: {operator: In, values: [42]}}]\n", 1)
	manifest = strings.Replace(manifest, "  containers:", "  initContainers:\n  - {name: init, image: x, restartPolicy: OnFailure}\n  containers:", 1)
	pods := mustParse(t, manifest, "file", "/m.yaml")
	c := pods[0].Spec.Containers[0]
	if c.RestartPolicy == nil || *c.RestartPolicy != v1.ContainerRestartPolicyNever || len(c.RestartPolicyRules) != 1 {
		t.Errorf("container restart fields not kept: %v %v", c.RestartPolicy, c.RestartPolicyRules)
	}
	if p := pods[0].Spec.InitContainers[0].RestartPolicy; p == nil || *p != v1.ContainerRestartPolicyOnFailure {
		t.Errorf("init container restartPolicy not kept: %v", p)
	}
}
