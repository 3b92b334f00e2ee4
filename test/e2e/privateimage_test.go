package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/gokubelet/kubelet/test/framework"
)

// privateRepo is the repository of the private image, a name no other
// test uses.
const privateRepo = "gokubelet-e2e/private-testimage"

// TestPrivateImageNeedsThePodsOwnPullSecret is KEP-2535's promise
// (KubeletEnsureSecretPulledImages, on by default) on real parts: an image
// that one pod's pull secret brought to the node is not handed to a pod
// that cannot log in to its registry. The registry is
// hack/tools/ociregistry with -basic-auth-file on the loopback interface
// (containerd pulls from a 127.0.0.1:<port> registry over plain HTTP
// without any configuration), serving an image built here whose ID no
// other image on the node has:
//
//   - A, with a pull secret holding the login (IfNotPresent), pulls it and
//     runs; its record names A's secret, in upstream's format and place;
//   - D, with another secret holding the same login, runs without asking
//     the registry anything ("already present on machine and can be
//     accessed by the pod": the login's hash matched);
//   - C, without a secret and with pullPolicy Never, waits with
//     ErrImageNeverPull, as if the image were absent;
//   - B, without a secret (IfNotPresent), does not run the present image:
//     it asks the registry itself, which refuses it (401), and waits in
//     ErrImagePull / ImagePullBackOff.
//
// With the gate off, C and B would run the image A pulled.
func TestPrivateImageNeedsThePodsOwnPullSecret(t *testing.T) {
	nodeName := node(t)
	ns := namespace(t)
	ctx := context.Background()
	images := imageService(t)

	layout, imageID := privateImageLayout(t)
	host := fmt.Sprintf("127.0.0.1:%d", framework.FreePort(t))
	image := host + "/" + privateRepo + ":1.0"
	repo := host + "/" + privateRepo // the records' key: the image without its tag

	// The image must come from the registry: one left by an interrupted
	// run (same content, same ID) goes first, and again when the test
	// ends, after its pods (the cleanups run last registered first).
	removeImage(t, images, imageID)
	if st, err := images.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: image}, false); err != nil || st.GetImage() != nil {
		t.Fatalf("image %s before the test: %v, %v", image, st.GetImage(), err)
	}
	user, password := "e2e-puller", randomHex(t, 16)
	reg := startPrivateRegistry(t, host, image+"="+layout, user+":"+password)
	t.Cleanup(func() { removeImage(t, images, imageID) })
	t.Cleanup(func() { deletePodsGracefully(t, ns) })

	// A: the secret's login pulls the image.
	secretA := createPullSecret(t, ns, "private-registry", host, user, password)
	mustCreatePod(t, ns, privatePod(nodeName, "with-secret", image, v1.PullIfNotPresent, secretA.Name))
	waitPod(t, ns, "with-secret", "Running", running)
	t.Logf("A pulled %s with its secret and runs", image)
	manifest := " /v2/" + privateRepo + "/manifests/1.0 "
	if log := reg.requests(); !containsLine(log, manifest+"401 ") || !containsLine(log, manifest+"200 ") {
		t.Fatalf("A's pull: want the registry to refuse the manifest without the login, then serve it with it; requests:\n%s", strings.Join(log, "\n"))
	}
	st, err := images.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: image}, false)
	if err != nil || st.GetImage().GetId() != imageID {
		t.Fatalf("image %s after A's pull: ID %q (%v), want %s, the layout's config", image, st.GetImage().GetId(), err, imageID)
	}
	wantA := kubeletv1beta1.ImagePullSecret{UID: string(secretA.UID), Namespace: ns, Name: secretA.Name}
	rec := readPulledRecord(t, imageID)
	creds, ok := rec.CredentialMapping[repo]
	if !ok || creds.NodePodsAccessible || len(creds.KubernetesSecrets) != 1 ||
		!sameSecret(creds.KubernetesSecrets[0], wantA) || creds.KubernetesSecrets[0].CredentialHash == "" {
		t.Fatalf("record after A's pull: %+v; want %s pulled with %+v only, and a credential hash", rec.CredentialMapping, repo, wantA)
	}
	hash := creds.KubernetesSecrets[0].CredentialHash
	t.Logf("A's record: %+v", rec.CredentialMapping[repo].KubernetesSecrets)

	// D: the same login under another secret name is let through
	// without a pull, and the record learns that secret.
	before := len(reg.requests())
	secretD := createPullSecret(t, ns, "private-registry-copy", host, user, password)
	mustCreatePod(t, ns, privatePod(nodeName, "with-copied-secret", image, v1.PullIfNotPresent, secretD.Name))
	waitPod(t, ns, "with-copied-secret", "Running", running)
	waitEvent(t, ns, "with-copied-secret", "Pulled",
		fmt.Sprintf("Container image %q already present on machine and can be accessed by the pod", image))
	if log := reg.requests(); len(log) != before {
		t.Errorf("D reached the registry; it should have used the present image: %s", strings.Join(log[before:], "\n"))
	}
	t.Logf("D runs the present image with the copied secret, without asking the registry")
	rec = readPulledRecord(t, imageID)
	wantD := kubeletv1beta1.ImagePullSecret{UID: string(secretD.UID), Namespace: ns, Name: secretD.Name, CredentialHash: hash}
	if got := rec.CredentialMapping[repo].KubernetesSecrets; len(got) != 2 ||
		!slices.ContainsFunc(got, func(s kubeletv1beta1.ImagePullSecret) bool { return sameSecret(s, wantA) && s.CredentialHash == hash }) ||
		!slices.Contains(got, wantD) {
		t.Errorf("record after D: %+v; want A's secret and D's with the same hash %s", got, hash)
	}

	// C: no secret and pullPolicy Never: as if the image were absent.
	before = len(reg.requests())
	mustCreatePod(t, ns, privatePod(nodeName, "never-without-secret", image, v1.PullNever, ""))
	reason, msg := waitRefused(t, ns, "never-without-secret", "ErrImageNeverPull")
	if want := fmt.Sprintf("Container image %q is not present with pull policy of Never", image); reason != "ErrImageNeverPull" || msg != want {
		t.Errorf("C waits with %s %q, want ErrImageNeverPull %q", reason, msg, want)
	}
	if log := reg.requests(); len(log) != before {
		t.Errorf("C reached the registry; with pullPolicy Never it must not: %s", strings.Join(log[before:], "\n"))
	}
	t.Logf("C waits with %s: %s", reason, msg)

	// B: no secret (IfNotPresent): it must pull with its own (no)
	// credentials, and the registry refuses it.
	mustCreatePod(t, ns, privatePod(nodeName, "without-secret", image, v1.PullIfNotPresent, ""))
	reason, msg = waitRefused(t, ns, "without-secret", "ErrImagePull", "ImagePullBackOff")
	t.Logf("B waits with %s: %s", reason, msg)
	waitEvent(t, ns, "without-secret", "Pulling", fmt.Sprintf("Pulling image %q", image))
	framework.Eventually(t, "B's refused pull in the registry's log", func() (bool, string) {
		log := reg.requests()[before:]
		return containsLine(log, manifest+"401 "), strings.Join(log, "\n")
	})
	for _, l := range reg.requests()[before:] {
		if !strings.Contains(l, " 401 ") {
			t.Errorf("after D, the registry answered B's request other than with 401: %s", l)
		}
	}
	if got := readPulledRecord(t, imageID).CredentialMapping; len(got[repo].KubernetesSecrets) != 2 || got[repo].NodePodsAccessible {
		t.Errorf("record after B and C: %+v; want it as D left it", got)
	}
}

// privatePod runs the private image's server, on the test's node (no
// scheduler in between), with the pull secret secret when it is set.
func privatePod(nodeName, name, image string, policy v1.PullPolicy, secret string) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PodSpec{
			NodeName:   nodeName,
			Containers: []v1.Container{{Name: "main", Image: image, ImagePullPolicy: policy}},
		},
	}
	if secret != "" {
		p.Spec.ImagePullSecrets = []v1.LocalObjectReference{{Name: secret}}
	}
	return p
}

func mustCreatePod(t *testing.T, ns string, p *v1.Pod) {
	t.Helper()
	if _, err := client.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitRefused waits until the pod's container waits with one of reasons,
// and fails at once if it was ever created: the pod must not run the image.
// It returns the waiting reason and message.
func waitRefused(t *testing.T, ns, name string, reasons ...string) (string, string) {
	t.Helper()
	var reason, msg string
	waitPod(t, ns, name, "waiting with "+strings.Join(reasons, " or "), func(p *v1.Pod) bool {
		if p.Status.Phase == v1.PodRunning {
			return failNow(t, "%s runs the image pulled with another pod's secret: %+v", name, p.Status)
		}
		if len(p.Status.ContainerStatuses) != 1 {
			return false
		}
		cs := p.Status.ContainerStatuses[0]
		if cs.State.Running != nil || cs.State.Terminated != nil || cs.ContainerID != "" {
			return failNow(t, "%s has a container of the image pulled with another pod's secret: %+v", name, cs)
		}
		if w := cs.State.Waiting; w != nil {
			reason, msg = w.Reason, w.Message
		}
		return slices.Contains(reasons, reason)
	})
	return reason, msg
}

// failNow ends the test from inside a wait's condition.
func failNow(t *testing.T, format string, args ...any) bool {
	t.Helper()
	t.Fatalf(format, args...)
	return false
}

// waitEvent waits for the kubelet's event reason about the pod with
// exactly message.
func waitEvent(t *testing.T, ns, pod, reason, message string) {
	t.Helper()
	framework.Eventually(t, fmt.Sprintf("event %s %q of %s", reason, message, pod), func() (bool, string) {
		l, err := client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod})
		if err != nil {
			return false, err.Error()
		}
		var all []string
		for _, e := range l.Items {
			if e.Reason == reason && e.Message == message && (e.Source.Component == "kubelet" || e.ReportingController == "kubelet") {
				return true, ""
			}
			all = append(all, e.Reason+": "+e.Message)
		}
		return false, strings.Join(all, "; ")
	})
}

// deletePodsGracefully deletes the namespace's pods and waits until the
// kubelet has confirmed each deletion (their containers are gone), unlike
// deleteAllPods, whose zero grace period removes the objects at once.
func deletePodsGracefully(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	if err := client.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Errorf("deleting the pods of %s: %v", ns, err)
		return
	}
	framework.Eventually(t, "the pods of "+ns+" gone", func() (bool, string) {
		n := len(listPods(t, ns, ""))
		return n == 0, fmt.Sprintf("%d left", n)
	})
}

// createPullSecret creates a kubernetes.io/dockerconfigjson Secret with
// user's login to the registry at host.
func createPullSecret(t *testing.T, ns, name, host, user, password string) *v1.Secret {
	t.Helper()
	login := map[string]string{"username": user, "password": password,
		"auth": base64.StdEncoding.EncodeToString([]byte(user + ":" + password))}
	cfg, err := json.Marshal(map[string]any{"auths": map[string]any{host: login}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := client.CoreV1().Secrets(ns).Create(context.Background(), &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Type:       v1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{v1.DockerConfigJsonKey: cfg},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// sameSecret compares a record's secret with want, ignoring the hash.
func sameSecret(got, want kubeletv1beta1.ImagePullSecret) bool {
	return got.UID == want.UID && got.Namespace == want.Namespace && got.Name == want.Name
}

// readPulledRecord reads the kubelet's pull record of the image imageID:
// <root-dir>/image_manager/pulled/sha256-<hex SHA-256 of the image ID>, a
// kubelet.config.k8s.io/v1beta1 ImagePulledRecord (upstream's file).
func readPulledRecord(t *testing.T, imageID string) *kubeletv1beta1.ImagePulledRecord {
	t.Helper()
	sum := sha256.Sum256([]byte(imageID))
	path := filepath.Join(rootDir, "image_manager", "pulled", "sha256-"+hex.EncodeToString(sum[:]))
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the pull record of %s: %v", imageID, err)
	}
	var rec kubeletv1beta1.ImagePulledRecord
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rec); err != nil {
		t.Fatalf("%s: %v\n%s", path, err, b)
	}
	if rec.Kind != "ImagePulledRecord" || rec.APIVersion != "kubelet.config.k8s.io/v1beta1" || rec.ImageRef != imageID || rec.LastUpdatedTime.IsZero() {
		t.Fatalf("%s: kind %q, apiVersion %q, imageRef %q, lastUpdatedTime %v; want an ImagePulledRecord of kubelet.config.k8s.io/v1beta1 for %s\n%s",
			path, rec.Kind, rec.APIVersion, rec.ImageRef, rec.LastUpdatedTime, imageID, b)
	}
	return &rec
}

// imageService is a CRI image client of the test runtime.
func imageService(t *testing.T) cri.ImageManagerService {
	t.Helper()
	is, err := remote.NewRemoteImageServiceBuilder().WithEndpoint(framework.CRIEndpoint()).
		WithConnectionTimeout(10 * time.Second).WithTracerProvider(nil).Build(context.Background())
	if err != nil {
		t.Fatalf("CRI image service at %s: %v", framework.CRIEndpoint(), err)
	}
	return is
}

// removeImage removes the image id from the runtime (every name it has)
// when it is there.
func removeImage(t *testing.T, is cri.ImageManagerService, id string) {
	t.Helper()
	ctx := context.Background()
	st, err := is.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: id}, false)
	if err != nil {
		t.Errorf("image status of %s: %v", id, err)
		return
	}
	if st.GetImage() == nil {
		return
	}
	if err := is.RemoveImage(ctx, &runtimeapi.ImageSpec{Image: id}); err != nil {
		t.Errorf("removing image %s (%v): %v", id, st.GetImage().GetRepoTags(), err)
	}
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// privateImageLayout writes an OCI image layout directory holding one
// image: the test image's server (images/testserver, built here, static)
// as its only layer, run as the test image runs it, with a config label
// naming this test. It returns the directory and the image's ID (its
// config's digest, what the runtime reports).
//
// Not gokubelet.local/testimage itself: an image the node already holds
// under another name has that image's ID, so it would count as present,
// its pull record would be the test image's (which every other test then
// could not use without verifying: the record names only the private
// name), and removing it would remove the test image.
func privateImageLayout(t *testing.T) (string, string) {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "testserver")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, "./images/testserver")
	build.Dir = repoRoot
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the test server: %v\n%s", err, out)
	}
	server, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}

	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	if err := tw.WriteHeader(&tar.Header{Name: "testserver", Mode: 0o755, Size: int64(len(server)), Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(server); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	var layer bytes.Buffer
	zw := gzip.NewWriter(&layer)
	if _, err := zw.Write(raw.Bytes()); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}

	layout := filepath.Join(dir, "layout")
	writeBlob := func(data []byte) map[string]any {
		sum := sha256.Sum256(data)
		p := filepath.Join(layout, "blobs", "sha256", hex.EncodeToString(sum[:]))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return map[string]any{"digest": "sha256:" + hex.EncodeToString(sum[:]), "size": len(data)}
	}
	mustJSON := func(v any) []byte {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	diffID := sha256.Sum256(raw.Bytes())
	layerDesc := writeBlob(layer.Bytes())
	layerDesc["mediaType"] = "application/vnd.oci.image.layer.v1.tar+gzip"
	config := mustJSON(map[string]any{
		"architecture": runtime.GOARCH, "os": "linux",
		"config": map[string]any{
			"Cmd":    []string{"/testserver", "--http-port=8080"},
			"Labels": map[string]string{"gokubelet.e2e/test": "TestPrivateImageNeedsThePodsOwnPullSecret"},
		},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + hex.EncodeToString(diffID[:])}},
	})
	configDesc := writeBlob(config)
	configDesc["mediaType"] = "application/vnd.oci.image.config.v1+json"
	const manifestType = "application/vnd.oci.image.manifest.v1+json"
	manifestDesc := writeBlob(mustJSON(map[string]any{
		"schemaVersion": 2, "mediaType": manifestType, "config": configDesc, "layers": []any{layerDesc},
	}))
	manifestDesc["mediaType"] = manifestType
	manifestDesc["annotations"] = map[string]string{"org.opencontainers.image.ref.name": "1.0"}
	for name, content := range map[string][]byte{
		"oci-layout": []byte(`{"imageLayoutVersion":"1.0.0"}`),
		"index.json": mustJSON(map[string]any{"schemaVersion": 2, "manifests": []any{manifestDesc}}),
	} {
		if err := os.WriteFile(filepath.Join(layout, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return layout, configDesc["digest"].(string)
}

// privateRegistry is hack/tools/ociregistry running for one test.
type privateRegistry struct {
	log *lockedBuffer
}

// requestLine matches the registry's line for one request.
var requestLine = regexp.MustCompile(`(?m)^ociregistry: \S+ \S+ (GET|HEAD|POST|PUT|PATCH|DELETE) /v2/.*$`)

// requests are the registry's request lines so far, in order.
func (r *privateRegistry) requests() []string {
	return requestLine.FindAllString(r.log.String(), -1)
}

// startPrivateRegistry runs hack/tools/ociregistry on host serving image
// (REF=PATH) to the login (USER:PASSWORD) only, until the test ends, and
// waits until it refuses an anonymous request. Its log is kept if the test
// fails.
func startPrivateRegistry(t *testing.T, host, image, login string) *privateRegistry {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "ociregistry")
	build := exec.Command("go", "build", "-o", bin, "./hack/tools/ociregistry")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building ociregistry: %v\n%s", err, out)
	}
	loginFile := filepath.Join(dir, "login")
	if err := os.WriteFile(loginFile, []byte(login+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	reg := &privateRegistry{log: &lockedBuffer{}}
	cmd, exited := startUntilTestEnds(t, "ociregistry", reg.log, 15*time.Second, bin, "-listen", host, "-basic-auth-file", loginFile, "-image", image)
	framework.Eventually(t, "ociregistry on "+host+" wants a login", func() (bool, string) {
		select {
		case <-exited:
			t.Fatalf("ociregistry exited at start: %s\n%s", cmd.ProcessState, reg.log.String())
		default:
		}
		code, body := framework.HTTPGet("http://" + host + "/v2/")
		return code == 401, fmt.Sprintf("%d %s", code, body)
	})
	return reg
}

// containsLine reports whether one of lines contains s.
func containsLine(lines []string, s string) bool {
	return slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, s) })
}
