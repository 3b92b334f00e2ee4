package e2e

// A podCertificate projected volume end to end: the test plays the signer
// (an in-memory CA answering the PodCertificateRequests of a signer name
// of its own), and a pod reads its credential bundle back through
// `kubectl logs`. The upstream conformance specs of this feature left
// make test's subset because they read the log once, the instant the pod
// is Running, before the container has necessarily written it; here the
// log is polled until the bundle is complete.

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/gokubelet/kubelet/test/framework"
)

// pcrSigner issues the PodCertificateRequests of one signer name in one
// namespace: what a signer controller does, with a root CA and an
// intermediate held in memory. The leaf is signed by the intermediate and
// the chain it writes is leaf then intermediate, wrapped in text and with
// a PEM header on the leaf, which the kubelet must strip (the API says it
// projects CERTIFICATE blocks only).
type pcrSigner struct {
	name      string
	root      *x509.Certificate
	inter     *x509.Certificate
	interKey  crypto.Signer
	lifetime  time.Duration
	refreshIn time.Duration

	mu sync.Mutex
	// issued holds the leaf issued for each request, by the request's UID.
	issued map[types.UID]*x509.Certificate
	// lastErr is the last failure (a request it could not issue, an API
	// error), for the test's failure message.
	lastErr string
}

func newPCRSigner(t *testing.T) *pcrSigner {
	t.Helper()
	suffix := make([]byte, 4)
	if _, err := rand.Read(suffix); err != nil {
		t.Fatal(err)
	}
	rootKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ca := func(cn string, pub crypto.PublicKey, parent *x509.Certificate, parentKey crypto.Signer) *x509.Certificate {
		tmpl := &x509.Certificate{
			SerialNumber:          randomSerial(t),
			Subject:               pkix.Name{CommonName: cn},
			NotBefore:             now.Add(-time.Hour),
			NotAfter:              now.Add(24 * time.Hour),
			IsCA:                  true,
			BasicConstraintsValid: true,
			KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		}
		if parent == nil {
			parent = tmpl
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, parentKey)
		if err != nil {
			t.Fatal(err)
		}
		c, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	root := ca("gokubelet e2e pod certificate root", rootKey.Public(), nil, rootKey)
	interKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	inter := ca("gokubelet e2e pod certificate intermediate", interKey.Public(), root, rootKey)
	return &pcrSigner{
		name: "e2e.gokubelet.local/" + hex.EncodeToString(suffix),
		root: root, inter: inter, interKey: interKey,
		// The API server wants a lifetime of at least an hour and a
		// refresh time 10 minutes inside it.
		lifetime:  2 * time.Hour,
		refreshIn: time.Hour,
		issued:    map[types.UID]*x509.Certificate{},
	}
}

func randomSerial(t *testing.T) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// run answers the signer's requests in ns until ctx ends, looking every
// 200 ms.
func (s *pcrSigner) run(ctx context.Context, ns string) {
	for ctx.Err() == nil {
		l, err := client.CertificatesV1().PodCertificateRequests(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			s.fail("listing PodCertificateRequests: %v", err)
		} else {
			for i := range l.Items {
				r := &l.Items[i]
				if r.Spec.SignerName != s.name || len(r.Status.Conditions) > 0 {
					continue
				}
				s.issue(ctx, r)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (s *pcrSigner) fail(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastErr = fmt.Sprintf(format, args...)
}

// issue signs the public key of r's stub PKCS#10 request, after checking
// its self-signature (the proof that the requester holds the key), and
// writes the chain, its times and the Issued condition to r's status.
func (s *pcrSigner) issue(ctx context.Context, r *certificatesv1.PodCertificateRequest) {
	csr, err := x509.ParseCertificateRequest(r.Spec.StubPKCS10Request)
	if err != nil {
		s.fail("request %s: spec.stubPKCS10Request: %v", r.Name, err)
		return
	}
	if err := csr.CheckSignature(); err != nil {
		s.fail("request %s: spec.stubPKCS10Request is not signed by its key: %v", r.Name, err)
		return
	}
	lifetime := s.lifetime
	if m := r.Spec.MaxExpirationSeconds; m != nil && time.Duration(*m)*time.Second < lifetime {
		lifetime = time.Duration(*m) * time.Second
	}
	// The status times must equal the leaf's, which X.509 and the API
	// both keep to the second.
	notBefore := time.Now().Add(-time.Minute).Truncate(time.Second)
	notAfter := notBefore.Add(lifetime)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "pod " + r.Namespace + "/" + r.Spec.PodName},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, s.inter, csr.PublicKey, s.interKey)
	if err != nil {
		s.fail("request %s: signing: %v", r.Name, err)
		return
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		s.fail("request %s: %v", r.Name, err)
		return
	}
	var chain bytes.Buffer
	chain.WriteString("issued by the gokubelet e2e signer\n")
	_ = pem.Encode(&chain, &pem.Block{Type: "CERTIFICATE", Headers: map[string]string{"Issued-For": r.Namespace + "/" + r.Spec.PodName}, Bytes: der})
	chain.WriteString("the intermediate follows\n")
	_ = pem.Encode(&chain, &pem.Block{Type: "CERTIFICATE", Bytes: s.inter.Raw})

	up := r.DeepCopy()
	up.Status = certificatesv1.PodCertificateRequestStatus{
		Conditions: []metav1.Condition{{
			Type:               certificatesv1.PodCertificateRequestConditionTypeIssued,
			Status:             metav1.ConditionTrue,
			Reason:             "E2EIssued",
			Message:            "issued by the e2e test's signer",
			LastTransitionTime: metav1.Now(),
		}},
		CertificateChain: chain.String(),
		NotBefore:        ptr.To(metav1.NewTime(notBefore)),
		BeginRefreshAt:   ptr.To(metav1.NewTime(notBefore.Add(s.refreshIn))),
		NotAfter:         ptr.To(metav1.NewTime(notAfter)),
	}
	if _, err := client.CertificatesV1().PodCertificateRequests(r.Namespace).UpdateStatus(ctx, up, metav1.UpdateOptions{}); err != nil {
		s.fail("request %s: updating its status: %v", r.Name, err)
		return
	}
	s.mu.Lock()
	s.issued[r.UID] = leaf
	s.mu.Unlock()
}

func (s *pcrSigner) issuedFor(uid types.UID) (*x509.Certificate, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.issued[uid], s.lastErr
}

func TestPodCertificateVolumeIsIssuedAndMounted(t *testing.T) {
	nodeName := node(t)
	ns := namespace(t)
	ctx := context.Background()

	signer := newPCRSigner(t)
	signing, stopSigning := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { signer.run(signing, ns) })
	t.Cleanup(func() { stopSigning(); wg.Wait() })

	// The container prints its bundle, then the file's mode and group,
	// then a marker: the log is complete once the marker is there. With an
	// fsGroup the credential is its owner's only (0600) and the fsGroup
	// ownership of the read-only volume adds group read: 0640, as
	// upstream's kubelet.
	const (
		dir    = "/var/run/podcert"
		bundle = "credentialbundle.pem"
		done   = "bundle-done"
	)
	fsGroup := int64(2345)
	pod := &v1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "podcert"},
		Spec: v1.PodSpec{
			NodeName:                      nodeName,
			RestartPolicy:                 v1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			SecurityContext:               &v1.PodSecurityContext{FSGroup: &fsGroup},
			Containers: []v1.Container{{
				Name: "main", Image: testImage, ImagePullPolicy: v1.PullIfNotPresent,
				Command:      []string{"sh", "-c", fmt.Sprintf(`f=%s/%s; cat $f; echo "stat: $(stat -L -c '%%a %%g' $f)"; echo %s; exec sleep 3600`, dir, bundle, done)},
				VolumeMounts: []v1.VolumeMount{{Name: "cert", MountPath: dir, ReadOnly: true}},
			}},
			Volumes: []v1.Volume{{Name: "cert", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
				Sources: []v1.VolumeProjection{{PodCertificate: &v1.PodCertificateProjection{
					SignerName:           signer.name,
					KeyType:              "ECDSAP256",
					CredentialBundlePath: bundle,
				}}},
			}}}},
		},
	}
	manifest, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	mustKubectl(t, nil, string(manifest), ns, "create", "-f", "-")

	got := waitPod(t, ns, "podcert", "Running", running)
	runningAt := time.Now()
	var log string
	framework.EventuallyWithin(t, time.Minute, "the credential bundle in the container's log", func() (bool, string) {
		out, errs, _ := kubectl(t, nil, "", ns, "logs", "podcert")
		log = out
		return strings.Contains(out, "BEGIN CERTIFICATE") && strings.Contains(out, "PRIVATE KEY") && strings.Contains(out, done), out + errs
	})
	t.Logf("bundle in the log %v after the pod was seen Running", time.Since(runningAt).Round(time.Millisecond))

	// The request the kubelet made for this pod: one, for its node and
	// service account, to the test's signer, owned by the pod.
	l, err := client.CertificatesV1().PodCertificateRequests(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var reqs []certificatesv1.PodCertificateRequest
	for _, r := range l.Items {
		if r.Spec.PodUID == got.UID {
			reqs = append(reqs, r)
		}
	}
	if len(reqs) != 1 {
		t.Fatalf("%d PodCertificateRequests for pod UID %s, want 1: %+v", len(reqs), got.UID, l.Items)
	}
	req := reqs[0]
	n, err := client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sa, err := client.CoreV1().ServiceAccounts(ns).Get(ctx, got.Spec.ServiceAccountName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s := req.Spec; s.SignerName != signer.name || s.PodName != got.Name || s.NodeName != types.NodeName(nodeName) || s.NodeUID != n.UID ||
		s.ServiceAccountName != sa.Name || s.ServiceAccountUID != sa.UID || ptr.Deref(s.MaxExpirationSeconds, 0) != 86400 {
		t.Errorf("request %s spec: signer %q pod %q node %q/%s serviceAccount %q/%s maxExpirationSeconds %v; want %q %q %q/%s %q/%s 86400 (the API server's default)",
			req.Name, s.SignerName, s.PodName, s.NodeName, s.NodeUID, s.ServiceAccountName, s.ServiceAccountUID, ptr.Deref(s.MaxExpirationSeconds, 0),
			signer.name, got.Name, nodeName, n.UID, sa.Name, sa.UID)
	}
	if o := req.OwnerReferences; len(o) != 1 || o[0].Kind != "Pod" || o[0].UID != got.UID {
		t.Errorf("request %s owner references %+v, want the pod %s", req.Name, o, got.UID)
	}
	issued, signerErr := signer.issuedFor(req.UID)
	if issued == nil {
		t.Fatalf("the signer issued nothing for request %s (last signer error: %s)", req.Name, signerErr)
	}
	stub, err := x509.ParseCertificateRequest(req.Spec.StubPKCS10Request)
	if err != nil {
		t.Fatalf("request %s: spec.stubPKCS10Request: %v", req.Name, err)
	}

	// The bundle: a PKCS#8 key, the leaf and the intermediate, nothing
	// else (the signer's text and PEM header are dropped).
	statAt := strings.LastIndex(log, "stat: ")
	if statAt < 0 {
		t.Fatalf("no stat line in the log:\n%s", log)
	}
	text := log[:statAt]
	var blocks []*pem.Block
	for rest := []byte(text); ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		blocks = append(blocks, b)
	}
	if len(blocks) != 3 || blocks[0].Type != "PRIVATE KEY" || blocks[1].Type != "CERTIFICATE" || blocks[2].Type != "CERTIFICATE" {
		var kinds []string
		for _, b := range blocks {
			kinds = append(kinds, b.Type)
		}
		t.Fatalf("bundle blocks %v, want [PRIVATE KEY CERTIFICATE CERTIFICATE]:\n%s", kinds, text)
	}
	var clean []byte
	for _, b := range blocks {
		clean = append(clean, pem.EncodeToMemory(&pem.Block{Type: b.Type, Bytes: b.Bytes})...)
	}
	if text != string(clean) {
		t.Errorf("bundle is not bare PEM blocks (text or headers kept):\n%s", text)
	}
	key, err := x509.ParsePKCS8PrivateKey(blocks[0].Bytes)
	if err != nil {
		t.Fatalf("bundle key: %v", err)
	}
	ecKey, ok := key.(*ecdsa.PrivateKey)
	if !ok || ecKey.Curve != elliptic.P256() {
		t.Errorf("bundle key is a %T, want an ECDSA P-256 key (keyType ECDSAP256)", key)
	}
	leaf, err := x509.ParseCertificate(blocks[1].Bytes)
	if err != nil {
		t.Fatalf("bundle leaf: %v", err)
	}
	if !bytes.Equal(leaf.Raw, issued.Raw) {
		t.Errorf("the leaf in the pod (serial %v) is not the one issued for request %s (serial %v)", leaf.SerialNumber, req.Name, issued.SerialNumber)
	}
	if !bytes.Equal(blocks[2].Bytes, signer.inter.Raw) {
		t.Errorf("the second certificate of the bundle is not the signer's intermediate")
	}
	roots, inters := x509.NewCertPool(), x509.NewCertPool()
	roots.AddCert(signer.root)
	inters.AddCert(signer.inter)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inters, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		t.Errorf("the leaf in the pod does not chain to the test CA: %v", err)
	}
	if pub, ok := stub.PublicKey.(interface{ Equal(crypto.PublicKey) bool }); !ok || !pub.Equal(leaf.PublicKey) {
		t.Errorf("the leaf's public key is not the one of request %s's spec.stubPKCS10Request", req.Name)
	}
	if !ecKey.PublicKey.Equal(leaf.PublicKey) {
		t.Errorf("the bundle's private key does not belong to the leaf's public key")
	}

	stat := strings.TrimSpace(strings.SplitN(log[statAt+len("stat: "):], "\n", 2)[0])
	if want := fmt.Sprintf("640 %d", fsGroup); stat != want {
		t.Errorf("bundle file mode and group %q, want %q (0600, plus group read from fsGroup %d)", stat, want, fsGroup)
	}
}
