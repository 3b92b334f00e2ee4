package integration

import (
	"context"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestImageVolume: a pod mounts the test image itself as an image volume,
// whole and by subPath. On containerd 2.1 or later the container sees the
// image's files, read-only; on an older containerd (Debian's 1.6, the
// integration tier's second runtime) the container waits with
// CreateContainerConfigError and a message naming the runtime, instead of
// getting an empty mount.
func TestImageVolume(t *testing.T) {
	v, err := runtimeSvc.Version(context.Background(), "v1")
	if err != nil {
		t.Fatal(err)
	}
	n := startNode(t)
	n.writeManifest("img.yaml", manifest("img", `  restartPolicy: Never
  containers:
  - name: main
    image: gokubelet.local/testimage:1.0
    imagePullPolicy: IfNotPresent
    terminationMessagePath: /dev/termination-log
    command: ["sh", "-c", "{ test -x /img/testserver && echo whole=ok; test -x /imgbin/busybox && echo subpath=ok; touch /img/written 2>/dev/null || echo readonly=ok; } > /dev/termination-log"]
    volumeMounts:
    - name: img
      mountPath: /img
    - name: img
      mountPath: /imgbin
      subPath: bin
  volumes:
  - name: img
    image:
      reference: gokubelet.local/testimage:1.0
      pullPolicy: IfNotPresent
`))
	if !mountsImages(v.RuntimeName, v.RuntimeVersion) {
		p := n.waitPod("img", "CreateContainerConfigError naming the runtime", func(p *v1.Pod) bool {
			c := containerStatus(p, "main")
			return c != nil && c.State.Waiting != nil && c.State.Waiting.Reason == "CreateContainerConfigError" &&
				strings.Contains(c.State.Waiting.Message, "cannot mount image volumes")
		})
		t.Logf("%s %s: %s", v.RuntimeName, v.RuntimeVersion, describe(p))
		return
	}
	p := n.waitPod("img", "Succeeded", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodSucceeded })
	msg := containerStatus(p, "main").State.Terminated.Message
	for _, want := range []string{"whole=ok\n", "subpath=ok\n", "readonly=ok\n"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q missing from what the container saw in its image volume:\n%s", want, msg)
		}
	}
}

// mountsImages: containerd mounts image volumes from 2.1 on.
func mountsImages(name, version string) bool {
	if name != "containerd" {
		return true
	}
	major, rest, _ := strings.Cut(strings.TrimPrefix(version, "v"), ".")
	minor, _, _ := strings.Cut(rest, ".")
	ma, _ := strconv.Atoi(major)
	mi, _ := strconv.Atoi(minor)
	return ma > 2 || (ma == 2 && mi >= 1)
}
