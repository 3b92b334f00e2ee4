package integration

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestStaticPodSeesItsNamesAndIdentity: a standalone kubelet (no API
// server, no cluster DNS) gives a static pod the host's resolver, its
// hostname, the managed /etc/hosts and the security context it asks for;
// the downward API works; a ConfigMap reference is a clear error; a
// forbidden sysctl fails the pod with SysctlForbidden.
func TestStaticPodSeesItsNamesAndIdentity(t *testing.T) {
	n := startNodeWith(t, "clusterDomain: cluster.local\nresolvConf: /etc/resolv.conf\n")
	n.writeManifest("names.yaml", manifest("names", `  restartPolicy: Never
  hostname: box
  hostAliases:
  - ip: 203.0.113.4
    hostnames: [alias.example]
  securityContext:
    runAsUser: 1000
    runAsGroup: 1000
  containers:
  - name: main
    image: gokubelet.local/testimage:1.0
    imagePullPolicy: IfNotPresent
    terminationMessagePath: /dev/termination-log
    env:
    - name: ME
      valueFrom:
        fieldRef: {fieldPath: metadata.name}
    - name: GREETING
      value: hello-$(ME)
    command: ["sh", "-c", "{ echo \"greeting=$GREETING\"; echo \"hostname=$(hostname)\"; echo \"uid=$(id -u)\"; cat /etc/resolv.conf /etc/hosts; } > /dev/termination-log"]
`))
	p := n.waitPod("names", "Succeeded", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodSucceeded })
	msg := containerStatus(p, "main").State.Terminated.Message
	for _, want := range []string{"greeting=hello-names-itest\n", "hostname=box\n", "uid=1000\n", "# Kubernetes-managed hosts file.\n", "\tbox\n", "203.0.113.4\talias.example\n"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q missing from what the container saw:\n%s", want, msg)
		}
	}
	if !strings.Contains(msg, "nameserver ") || strings.Contains(msg, "svc.cluster.local") {
		t.Errorf("ClusterFirst without clusterDNS must use the host's resolver:\n%s", msg)
	}
	if !eventLogged(n.Log(), "MissingClusterDNS", "kubelet does not have ClusterDNS IP configured") {
		t.Errorf("no MissingClusterDNS event logged")
	}

	n.writeManifest("cm.yaml", manifest("cm", `  containers:
  - name: main
    image: gokubelet.local/testimage:1.0
    imagePullPolicy: IfNotPresent
    env:
    - name: X
      valueFrom:
        configMapKeyRef: {name: cfg, key: k}
`))
	n.waitPod("cm", "waiting with CreateContainerConfigError", func(p *v1.Pod) bool {
		c := containerStatus(p, "main")
		return c != nil && c.State.Waiting != nil && c.State.Waiting.Reason == "CreateContainerConfigError" &&
			strings.Contains(c.State.Waiting.Message, "no API server connection")
	})

	n.writeManifest("sysctl.yaml", manifest("sysctl", `  securityContext:
    sysctls:
    - {name: kernel.sem, value: "250 32000 32 128"}
  containers:
  - name: main
    image: gokubelet.local/testimage:1.0
    imagePullPolicy: IfNotPresent
`))
	bad := n.waitPod("sysctl", "Failed with SysctlForbidden", func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodFailed && p.Status.Reason == "SysctlForbidden"
	})
	if !strings.Contains(bad.Status.Message, `"kernel.sem" not allowlisted`) {
		t.Errorf("message %q", bad.Status.Message)
	}
}
