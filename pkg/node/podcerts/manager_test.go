package podcerts

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gokubelet/kubelet/internal/testing/eventually"
)

const signerName = "example.com/spiffe"

// harness runs a Manager for node-a against a fake API server holding the
// service account ns/web, and plays the signer.
type harness struct {
	client  *fake.Clientset
	clk     *clocktesting.FakeClock
	m       *Manager
	nodeUID atomic.Value // types.UID

	mu      sync.Mutex
	changes []types.UID
	watches []metav1.ListOptions

	ca    *x509.Certificate
	caKey crypto.Signer
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{
		client: fake.NewClientset(&v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "sa-uid"}}),
		clk:    clocktesting.NewFakeClock(t0),
	}
	h.nodeUID.Store(types.UID("node-uid"))
	h.ca, h.caKey = newCA(t)

	// The API server names requests (generateName) and gives them UIDs;
	// the fake does neither.
	var n atomic.Int32
	h.client.PrependReactor("create", "podcertificaterequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pcr := a.(k8stesting.CreateAction).GetObject().(*certificatesv1.PodCertificateRequest)
		i := n.Add(1)
		pcr.Name = fmt.Sprintf("%s%d", pcr.GenerateName, i)
		pcr.UID = types.UID(fmt.Sprintf("pcr-uid-%d", i))
		return false, nil, nil
	})
	// Record each watch once the tracker serves it, so that the test
	// writes nothing the watch could miss.
	h.client.PrependWatchReactor("podcertificaterequests", func(a k8stesting.Action) (bool, watch.Interface, error) {
		opts := a.(k8stesting.WatchActionImpl).ListOptions
		w, err := h.client.Tracker().Watch(a.GetResource(), a.GetNamespace(), opts)
		h.mu.Lock()
		h.watches = append(h.watches, opts)
		h.mu.Unlock()
		return true, w, err
	})

	h.m = New(Options{
		Client:   h.client,
		NodeName: "node-a",
		NodeUID:  func() types.UID { return h.nodeUID.Load().(types.UID) },
		Clock:    h.clk,
		OnChange: func(uid types.UID) {
			h.mu.Lock()
			h.changes = append(h.changes, uid)
			h.mu.Unlock()
		},
	})
	h.m.jitter = func(time.Duration) time.Duration { return 0 }

	// The watch waits for the first source (TestWatchWaitsForASource);
	// these tests want it from the start.
	h.m.neededOnce.Do(func() { close(h.m.needed) })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.m.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	eventually.True(t, "the manager watching", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return len(h.watches) > 0
	})
	return h
}

func newCA(t *testing.T) (*x509.Certificate, crypto.Signer) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "test CA"},
		NotBefore:             t0.Add(-time.Hour),
		NotAfter:              t0.Add(365 * 24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return ca, key
}

func testPod(uid, name string, srcs ...v1.PodCertificateProjection) *v1.Pod {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid)},
		Spec:       v1.PodSpec{NodeName: "node-a", ServiceAccountName: "web"},
	}
	vol := v1.Volume{Name: "certs", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{}}}
	for i := range srcs {
		vol.Projected.Sources = append(vol.Projected.Sources, v1.VolumeProjection{PodCertificate: &srcs[i]})
	}
	pod.Spec.Volumes = []v1.Volume{vol}
	return pod
}

func source(keyType string) v1.PodCertificateProjection {
	return v1.PodCertificateProjection{SignerName: signerName, KeyType: keyType, CredentialBundlePath: "bundle.pem"}
}

// bundle asks for source 0 of the pod's volume "certs".
func (h *harness) bundle(pod *v1.Pod) ([]byte, []byte, error) {
	return h.m.CredentialBundle(context.Background(), pod, "certs", 0, pod.Spec.Volumes[0].Projected.Sources[0].PodCertificate)
}

func (h *harness) requests(t *testing.T) []certificatesv1.PodCertificateRequest {
	t.Helper()
	// Straight from the tracker, so that the test's reads are not among
	// the manager's calls.
	obj, err := h.client.Tracker().List(certificatesv1.SchemeGroupVersion.WithResource("podcertificaterequests"),
		certificatesv1.SchemeGroupVersion.WithKind("PodCertificateRequest"), "ns")
	if err != nil {
		t.Fatal(err)
	}
	l := obj.(*certificatesv1.PodCertificateRequestList)
	slices.SortFunc(l.Items, func(a, b certificatesv1.PodCertificateRequest) int { return strings.Compare(a.Name, b.Name) })
	return l.Items
}

// waitRequests waits for n requests and returns them, by name.
func (h *harness) waitRequests(t *testing.T, n int) []certificatesv1.PodCertificateRequest {
	t.Helper()
	var got []certificatesv1.PodCertificateRequest
	eventually.Seen(t, fmt.Sprintf("%d PodCertificateRequests", n), func() (bool, string) {
		got = h.requests(t)
		return len(got) == n, fmt.Sprintf("%d requests", len(got))
	})
	return got
}

func (h *harness) changeCount(uid types.UID) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, c := range h.changes {
		if c == uid {
			n++
		}
	}
	return n
}

func (h *harness) waitChanges(t *testing.T, uid types.UID, n int) {
	t.Helper()
	eventually.True(t, fmt.Sprintf("%d changes of pod %s", n, uid), func() bool { return h.changeCount(uid) == n })
}

// issue signs pcr's stub request with the test CA, as a signer would,
// valid from now to notAfter with refresh from beginRefreshAt. The chain
// has text around and headers in its blocks, which the pod must not see.
func (h *harness) issue(t *testing.T, pcr certificatesv1.PodCertificateRequest, beginRefreshAt, notAfter time.Time) *x509.Certificate {
	t.Helper()
	csr, err := x509.ParseCertificateRequest(pcr.Spec.StubPKCS10Request)
	if err != nil {
		t.Fatal(err)
	}
	if err := csr.CheckSignature(); err != nil {
		t.Fatalf("signer: proof of possession does not verify: %v", err)
	}
	notBefore := h.clk.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		URIs:         []*url.URL{{Scheme: "spiffe", Host: "cluster.local", Path: "/ns/ns/sa/" + pcr.Spec.ServiceAccountName}},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, h.ca, csr.PublicKey, h.caKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	chain := "leaf:\n" + string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Headers: map[string]string{"Serial": leaf.SerialNumber.String()}, Bytes: der})) +
		"issuer:\n" + string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: h.ca.Raw}))
	pcr.Status = certificatesv1.PodCertificateRequestStatus{
		Conditions:       []metav1.Condition{{Type: "Issued", Status: metav1.ConditionTrue, Reason: "Issued", LastTransitionTime: metav1.NewTime(notBefore)}},
		CertificateChain: chain,
		NotBefore:        &metav1.Time{Time: notBefore},
		BeginRefreshAt:   &metav1.Time{Time: beginRefreshAt},
		NotAfter:         &metav1.Time{Time: notAfter},
	}
	h.updateStatus(t, &pcr)
	return leaf
}

func (h *harness) refuse(t *testing.T, pcr certificatesv1.PodCertificateRequest, typ, reason, message string) {
	t.Helper()
	pcr.Status.Conditions = []metav1.Condition{{Type: typ, Status: metav1.ConditionTrue, Reason: reason, Message: message, LastTransitionTime: metav1.NewTime(h.clk.Now())}}
	h.updateStatus(t, &pcr)
}

func (h *harness) updateStatus(t *testing.T, pcr *certificatesv1.PodCertificateRequest) {
	t.Helper()
	if _, err := h.client.CertificatesV1().PodCertificateRequests(pcr.Namespace).UpdateStatus(context.Background(), pcr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// checkBundle checks that key and chain are a usable credential: the chain
// is the leaf then the CA, bare PEM; the leaf verifies against the CA; the
// key is the leaf's and the one the request was made for.
func (h *harness) checkBundle(t *testing.T, keyPEM, chainPEM []byte, pcr certificatesv1.PodCertificateRequest, leaf *x509.Certificate) {
	t.Helper()
	want := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leaf.Raw})) + string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: h.ca.Raw}))
	if string(chainPEM) != want {
		t.Fatalf("chain =\n%s\nwant leaf and CA, bare:\n%s", chainPEM, want)
	}
	key := checkKeyAndProof(t, keyPEM, pcr.Spec.StubPKCS10Request)
	if !key.Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(leaf.PublicKey) {
		t.Fatal("key is not the certificate's")
	}
	roots := x509.NewCertPool()
	roots.AddCert(h.ca)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: h.clk.Now(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		t.Fatalf("leaf does not verify: %v", err)
	}
}

func TestIssuanceEachKeyType(t *testing.T) {
	h := newHarness(t)
	exp := int32(7200)
	var pods []*v1.Pod
	for i, kt := range KeyTypes() {
		src := source(kt)
		if i == 0 {
			src.MaxExpirationSeconds = &exp
			src.UserAnnotations = map[string]string{"example.com/spiffe-path": "/custom"}
		}
		pods = append(pods, testPod(fmt.Sprintf("pod-uid-%d", i), fmt.Sprintf("pod-%d", i), src))
	}

	for _, pod := range pods {
		if _, _, err := h.bundle(pod); !errors.Is(err, ErrNotIssued) {
			t.Fatalf("before any request: err = %v, want ErrNotIssued", err)
		}
	}
	reqs := h.waitRequests(t, len(pods))
	byPod := map[types.UID]certificatesv1.PodCertificateRequest{}
	for _, r := range reqs {
		byPod[r.Spec.PodUID] = r
	}

	for i, pod := range pods {
		r, ok := byPod[pod.UID]
		if !ok {
			t.Fatalf("no request for pod %s", pod.Name)
		}
		s := r.Spec
		if s.SignerName != signerName || s.PodName != pod.Name || s.ServiceAccountName != "web" || s.ServiceAccountUID != "sa-uid" ||
			s.NodeName != "node-a" || s.NodeUID != "node-uid" || r.GenerateName != "req-" ||
			len(r.OwnerReferences) != 1 || r.OwnerReferences[0].UID != pod.UID || r.OwnerReferences[0].Kind != "Pod" {
			t.Fatalf("request for %s = %+v", pod.Name, r)
		}
		if i == 0 {
			if s.MaxExpirationSeconds == nil || *s.MaxExpirationSeconds != 7200 || s.UnverifiedUserAnnotations["example.com/spiffe-path"] != "/custom" {
				t.Fatalf("maxExpirationSeconds/userAnnotations not copied: %+v", s)
			}
		} else if s.MaxExpirationSeconds != nil || s.UnverifiedUserAnnotations != nil {
			t.Fatalf("unset maxExpirationSeconds/userAnnotations filled in: %+v", s)
		}
		// Pending: not issued, and the error names the request.
		_, _, err := h.bundle(pod)
		if !errors.Is(err, ErrNotIssued) || !strings.Contains(err.Error(), "ns/"+r.Name+" is pending") {
			t.Fatalf("pending: err = %v", err)
		}
	}

	leaves := map[types.UID]*x509.Certificate{}
	for _, pod := range pods {
		leaves[pod.UID] = h.issue(t, byPod[pod.UID], t0.Add(12*time.Hour), t0.Add(24*time.Hour))
	}
	for _, pod := range pods {
		h.waitChanges(t, pod.UID, 1)
		key, chain, err := h.bundle(pod)
		if err != nil {
			t.Fatalf("%s: %v", pod.Name, err)
		}
		t.Run(pod.Spec.Volumes[0].Projected.Sources[0].PodCertificate.KeyType, func(t *testing.T) {
			h.checkBundle(t, key, chain, byPod[pod.UID], leaves[pod.UID])
		})
	}
	if n := len(h.requests(t)); n != len(pods) {
		t.Fatalf("%d requests after issuance, want %d", n, len(pods))
	}
}

func TestNodeAuthorizerScope(t *testing.T) {
	h := newHarness(t)
	pod := testPod("pod-uid", "web-0", source("ECDSAP256"))
	h.bundle(pod)
	r := h.waitRequests(t, 1)[0]
	h.issue(t, r, t0.Add(time.Hour), t0.Add(2*time.Hour))
	h.waitChanges(t, pod.UID, 1)

	for _, a := range h.client.Actions() {
		res, verb := a.GetResource().Resource, a.GetVerb()
		switch {
		case res == "podcertificaterequests" && (verb == "list" || verb == "watch"):
			var sel string
			if l, ok := a.(k8stesting.ListActionImpl); ok {
				sel = l.ListOptions.FieldSelector
			}
			if w, ok := a.(k8stesting.WatchActionImpl); ok {
				sel = w.ListOptions.FieldSelector
			}
			if sel != "spec.nodeName=node-a" || a.GetNamespace() != "" {
				t.Errorf("%s of requests with field selector %q in namespace %q: the Node authorizer allows only spec.nodeName=node-a", verb, sel, a.GetNamespace())
			}
		case res == "podcertificaterequests" && verb == "create" && a.GetSubresource() == "":
		case res == "serviceaccounts" && verb == "get" && a.GetSubresource() == "":
		case res == "podcertificaterequests" && verb == "update" && a.GetSubresource() == "status":
			// The test's signer.
		default:
			t.Errorf("call a node may not make: %s %s/%s", verb, res, a.GetSubresource())
		}
	}
}

func TestRefusal(t *testing.T) {
	for _, typ := range []string{"Denied", "Failed"} {
		t.Run(typ, func(t *testing.T) {
			h := newHarness(t)
			pod := testPod("pod-uid", "web-0", source("ED25519"))
			h.bundle(pod)
			r := h.waitRequests(t, 1)[0]
			h.refuse(t, r, typ, "UnsupportedKeyType", "use ECDSAP256")

			var err error
			eventually.Seen(t, "a final error", func() (bool, string) {
				_, _, err = h.bundle(pod)
				return err != nil && !errors.Is(err, ErrNotIssued), fmt.Sprint(err)
			})
			for _, want := range []string{"ns/" + r.Name, `reason="UnsupportedKeyType"`, `message="use ECDSAP256"`} {
				if !strings.Contains(err.Error(), want) {
					t.Fatalf("err = %v, want it to name %s", err, want)
				}
			}
			// Final: a day later, nothing more is requested.
			h.clk.Step(24 * time.Hour)
			h.m.sweep(context.Background())
			if n := len(h.requests(t)); n != 1 || h.changeCount(pod.UID) != 0 {
				t.Fatalf("after refusal: %d requests, %d changes", n, h.changeCount(pod.UID))
			}
		})
	}
}

func TestRefreshAtBeginRefreshAt(t *testing.T) {
	h := newHarness(t)
	pod := testPod("pod-uid", "web-0", source("ECDSAP384"))
	h.bundle(pod)
	first := h.waitRequests(t, 1)[0]
	leaf1 := h.issue(t, first, t0.Add(30*time.Minute), t0.Add(time.Hour))
	h.waitChanges(t, pod.UID, 1)
	key1, chain1, err := h.bundle(pod)
	if err != nil {
		t.Fatal(err)
	}
	h.checkBundle(t, key1, chain1, first, leaf1)

	// Just before beginRefreshAt: nothing to do.
	h.clk.Step(29 * time.Minute)
	h.m.sweep(context.Background())
	if n := len(h.requests(t)); n != 1 {
		t.Fatalf("%d requests before beginRefreshAt", n)
	}

	// At beginRefreshAt the periodic pass asks again, with a new key,
	// while the first credential is still served.
	h.clk.Step(time.Minute)
	reqs := h.waitRequests(t, 2)
	second := reqs[1]
	if string(second.Spec.StubPKCS10Request) == string(first.Spec.StubPKCS10Request) {
		t.Fatal("refresh reused the key")
	}
	key, chain, err := h.bundle(pod)
	if err != nil || string(key) != string(key1) || string(chain) != string(chain1) {
		t.Fatalf("while refreshing: err %v, same credential %v", err, string(key) == string(key1))
	}

	leaf2 := h.issue(t, second, t0.Add(90*time.Minute), t0.Add(2*time.Hour))
	h.waitChanges(t, pod.UID, 2)
	key2, chain2, err := h.bundle(pod)
	if err != nil {
		t.Fatal(err)
	}
	if string(key2) == string(key1) {
		t.Fatal("refreshed credential has the old key")
	}
	h.checkBundle(t, key2, chain2, second, leaf2)
}

func TestForgetPod(t *testing.T) {
	h := newHarness(t)
	issued := testPod("pod-a", "a", source("ECDSAP256"), source("ED25519"))
	waiting := testPod("pod-b", "b", source("ECDSAP256"))
	other := testPod("pod-c", "c", source("ECDSAP256"))
	for i := range 2 {
		h.m.CredentialBundle(context.Background(), issued, "certs", i, issued.Spec.Volumes[0].Projected.Sources[i].PodCertificate)
	}
	h.bundle(waiting)
	h.bundle(other)
	reqs := h.waitRequests(t, 4)
	byPod := map[types.UID][]certificatesv1.PodCertificateRequest{}
	for _, r := range reqs {
		byPod[r.Spec.PodUID] = append(byPod[r.Spec.PodUID], r)
	}
	for _, r := range byPod["pod-a"] {
		h.issue(t, r, t0.Add(time.Hour), t0.Add(2*time.Hour))
	}
	eventually.True(t, "both sources of pod-a issued", func() bool {
		for i := range 2 {
			if _, _, err := h.m.CredentialBundle(context.Background(), issued, "certs", i, issued.Spec.Volumes[0].Projected.Sources[i].PodCertificate); err != nil {
				return false
			}
		}
		return true
	})

	h.m.ForgetPod("pod-a")
	h.m.ForgetPod("pod-b")
	h.m.mu.Lock()
	var left []entryKey
	for k := range h.m.entries {
		left = append(left, k)
	}
	inflightUIDs := len(h.m.byUID)
	h.m.mu.Unlock()
	if len(left) != 1 || left[0].pod != "pod-c" || inflightUIDs != 1 {
		t.Fatalf("after ForgetPod: entries %v, %d requests in flight", left, inflightUIDs)
	}

	// The forgotten pod's late answer changes nothing; the other pod's
	// answer still arrives.
	h.issue(t, byPod["pod-b"][0], t0.Add(time.Hour), t0.Add(2*time.Hour))
	h.issue(t, byPod["pod-c"][0], t0.Add(time.Hour), t0.Add(2*time.Hour))
	h.waitChanges(t, "pod-c", 1)
	if n := h.changeCount("pod-b"); n != 0 {
		t.Fatalf("forgotten pod notified %d times", n)
	}
	h.m.mu.Lock()
	n := len(h.m.entries)
	h.m.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d entries, want 1", n)
	}

	// Asked again (a pod is never asked for after ForgetPod, but if it
	// were), the source starts over.
	if _, _, err := h.bundle(issued); !errors.Is(err, ErrNotIssued) {
		t.Fatalf("forgotten pod's state kept: err = %v", err)
	}
}

func TestOnlyOwnRequestsCount(t *testing.T) {
	h := newHarness(t)
	pod := testPod("pod-uid", "web-0", source("ECDSAP256"))
	h.bundle(pod)
	ours := h.waitRequests(t, 1)[0]

	// Someone else's request for the same pod, issued: not ours by UID.
	_, stub, err := newKey("ECDSAP256")
	if err != nil {
		t.Fatal(err)
	}
	foreign := requestFor(podRef{namespace: "ns", name: "web-0", uid: "pod-uid", serviceAccount: "web"}, &v1.PodCertificateProjection{SignerName: signerName}, "sa-uid", "node-a", "node-uid", stub)
	foreign, err = h.client.CertificatesV1().PodCertificateRequests("ns").Create(context.Background(), foreign, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h.issue(t, *foreign, t0.Add(time.Hour), t0.Add(2*time.Hour))

	// Our request is then answered; only that answer is used. Waiting for
	// it also proves the foreign one was seen and ignored: the watch
	// delivers events in order.
	leaf := h.issue(t, ours, t0.Add(time.Hour), t0.Add(2*time.Hour))
	h.waitChanges(t, pod.UID, 1)
	key, chain, err := h.bundle(pod)
	if err != nil {
		t.Fatal(err)
	}
	h.checkBundle(t, key, chain, ours, leaf)
}

func TestDeletedRequestIsRequestedAgain(t *testing.T) {
	h := newHarness(t)
	pod := testPod("pod-uid", "web-0", source("ECDSAP256"))
	h.bundle(pod)
	first := h.waitRequests(t, 1)[0]
	if err := h.client.CertificatesV1().PodCertificateRequests("ns").Delete(context.Background(), first.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var got []certificatesv1.PodCertificateRequest
	eventually.True(t, "a new request", func() bool {
		got = h.requests(t)
		return len(got) == 1 && got[0].UID != first.UID
	})
	leaf := h.issue(t, got[0], t0.Add(time.Hour), t0.Add(2*time.Hour))
	h.waitChanges(t, pod.UID, 1)
	key, chain, err := h.bundle(pod)
	if err != nil {
		t.Fatal(err)
	}
	h.checkBundle(t, key, chain, got[0], leaf)
}

func TestCreateFailureRetried(t *testing.T) {
	h := newHarness(t)
	h.nodeUID.Store(types.UID(""))
	pod := testPod("pod-uid", "web-0", source("ECDSAP256"))
	h.bundle(pod)
	eventually.Seen(t, "the failure reported", func() (bool, string) {
		_, _, err := h.bundle(pod)
		return err != nil && strings.Contains(err.Error(), "node not registered"), fmt.Sprint(err)
	})
	if !errors.Is(func() error { _, _, err := h.bundle(pod); return err }(), ErrNotIssued) {
		t.Fatal("a failed create must leave the source waiting, not refused")
	}

	// Registered, but the first retry is not due yet.
	h.nodeUID.Store(types.UID("node-uid"))
	h.m.sweep(context.Background())
	if n := len(h.requests(t)); n != 0 {
		t.Fatalf("%d requests before the retry is due", n)
	}
	h.clk.Step(retryBase)
	h.m.sweep(context.Background())
	if r := h.requests(t); len(r) != 1 || r[0].Spec.NodeUID != "node-uid" {
		t.Fatalf("after the retry: %+v", r)
	}
}

func TestStandaloneAndRefusedPods(t *testing.T) {
	m := New(Options{})
	src := source("ECDSAP256")
	if _, _, err := m.CredentialBundle(context.Background(), testPod("u", "p", src), "certs", 0, &src); !errors.Is(err, ErrStandalone) {
		t.Fatalf("standalone: err = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Start(ctx) }()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("standalone Start: %v", err)
	}

	m = New(Options{Client: fake.NewClientset(), NodeName: "node-a"})
	static := testPod("u1", "p", src)
	static.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
	mirror := testPod("u2", "p", src)
	mirror.Annotations = map[string]string{"kubernetes.io/config.mirror": "hash"}
	noSA := testPod("u3", "p", src)
	noSA.Spec.ServiceAccountName = ""
	bad := source("RSA1024")
	for name, tc := range map[string]struct {
		pod  *v1.Pod
		src  *v1.PodCertificateProjection
		want string
	}{
		"static":       {static, &src, "static pods"},
		"mirror":       {mirror, &src, "static pods"},
		"no account":   {noSA, &src, "service account"},
		"bad key type": {testPod("u4", "p", bad), &bad, `unsupported key type "RSA1024"`},
	} {
		_, _, err := m.CredentialBundle(context.Background(), tc.pod, "certs", 0, tc.src)
		if err == nil || !strings.Contains(err.Error(), tc.want) || errors.Is(err, ErrNotIssued) {
			t.Errorf("%s: err = %v, want %q", name, err, tc.want)
		}
	}
	if len(m.entries) != 0 {
		t.Fatalf("refused pods left %d entries", len(m.entries))
	}
}

// A node none of whose pods projects a certificate never watches
// requests: the first source asked for opens the way.
func TestWatchWaitsForASource(t *testing.T) {
	m := New(Options{Client: fake.NewClientset(), NodeName: "node-a"})
	closed := func() bool {
		select {
		case <-m.needed:
			return true
		default:
			return false
		}
	}
	if closed() {
		t.Fatal("the watch may start before any source is asked for")
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"}, Spec: v1.PodSpec{ServiceAccountName: "sa"}}
	if _, _, err := m.CredentialBundle(context.Background(), pod, "v", 0, &v1.PodCertificateProjection{SignerName: "example.com/s", KeyType: "ED25519"}); !errors.Is(err, ErrNotIssued) {
		t.Fatalf("err %v, want ErrNotIssued", err)
	}
	if !closed() {
		t.Error("the first source asked for does not start the watch")
	}
}
