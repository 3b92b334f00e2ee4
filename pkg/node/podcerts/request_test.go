package podcerts

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"reflect"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// parseKey decodes a credential bundle's key: exactly one PKCS#8 PRIVATE
// KEY block.
func parseKey(t *testing.T, keyPEM []byte) crypto.Signer {
	t.Helper()
	b, rest := pem.Decode(keyPEM)
	if b == nil || b.Type != "PRIVATE KEY" || len(strings.TrimSpace(string(rest))) != 0 {
		t.Fatalf("key is not a single PRIVATE KEY block: %q", keyPEM)
	}
	k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		t.Fatalf("key is not PKCS#8: %v", err)
	}
	return k.(crypto.Signer)
}

// checkKeyAndProof checks that stubCSR proves possession of keyPEM: its
// signature verifies and it carries the key's public half.
func checkKeyAndProof(t *testing.T, keyPEM, stubCSR []byte) crypto.Signer {
	t.Helper()
	key := parseKey(t, keyPEM)
	csr, err := x509.ParseCertificateRequest(stubCSR)
	if err != nil {
		t.Fatalf("stub request does not parse: %v", err)
	}
	if err := csr.CheckSignature(); err != nil {
		t.Fatalf("proof of possession does not verify: %v", err)
	}
	if !key.Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(csr.PublicKey) {
		t.Fatal("stub request carries another public key")
	}
	if len(csr.Subject.Names) != 0 || len(csr.DNSNames)+len(csr.URIs)+len(csr.IPAddresses)+len(csr.EmailAddresses) != 0 || len(csr.Extensions) != 0 {
		t.Fatalf("stub request is not empty: %+v", csr.Subject)
	}
	return key
}

func TestNewKeyEachType(t *testing.T) {
	for _, tc := range []struct {
		keyType string
		check   func(crypto.Signer) bool
	}{
		{"RSA3072", func(k crypto.Signer) bool { r, ok := k.(*rsa.PrivateKey); return ok && r.N.BitLen() == 3072 }},
		{"RSA4096", func(k crypto.Signer) bool { r, ok := k.(*rsa.PrivateKey); return ok && r.N.BitLen() == 4096 }},
		{"ECDSAP256", func(k crypto.Signer) bool {
			e, ok := k.(*ecdsa.PrivateKey)
			return ok && e.Curve.Params().Name == "P-256"
		}},
		{"ECDSAP384", func(k crypto.Signer) bool {
			e, ok := k.(*ecdsa.PrivateKey)
			return ok && e.Curve.Params().Name == "P-384"
		}},
		{"ECDSAP521", func(k crypto.Signer) bool {
			e, ok := k.(*ecdsa.PrivateKey)
			return ok && e.Curve.Params().Name == "P-521"
		}},
		{"ED25519", func(k crypto.Signer) bool { _, ok := k.(ed25519.PrivateKey); return ok }},
	} {
		t.Run(tc.keyType, func(t *testing.T) {
			keyPEM, stub, err := newKey(tc.keyType)
			if err != nil {
				t.Fatal(err)
			}
			if key := checkKeyAndProof(t, keyPEM, stub); !tc.check(key) {
				t.Fatalf("key is a %T, not a %s key", key, tc.keyType)
			}
			// Every call makes a new key.
			again, _, err := newKey(tc.keyType)
			if err != nil || string(again) == string(keyPEM) {
				t.Fatalf("second key equals the first (err %v)", err)
			}
		})
	}
	if got := KeyTypes(); len(got) != 6 {
		t.Fatalf("KeyTypes() = %v", got)
	}
	if _, _, err := newKey("DSA1024"); err == nil || !strings.Contains(err.Error(), "DSA1024") {
		t.Fatalf("unsupported key type: err = %v", err)
	}
}

func TestRequestFor(t *testing.T) {
	pod := podRef{namespace: "ns", name: "web-0", uid: "pod-uid", serviceAccount: "web"}
	exp := int32(3600)
	src := &v1.PodCertificateProjection{
		SignerName:           "example.com/spiffe",
		KeyType:              "ED25519",
		MaxExpirationSeconds: &exp,
		UserAnnotations:      map[string]string{"example.com/path": "/custom"},
	}
	got := requestFor(pod, src, "sa-uid", "node-a", "node-uid", []byte("stub"))
	want := &certificatesv1.PodCertificateRequest{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       "ns",
			GenerateName:    "req-",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "web-0", UID: "pod-uid"}},
		},
		Spec: certificatesv1.PodCertificateRequestSpec{
			SignerName:                "example.com/spiffe",
			PodName:                   "web-0",
			PodUID:                    "pod-uid",
			ServiceAccountName:        "web",
			ServiceAccountUID:         "sa-uid",
			NodeName:                  "node-a",
			NodeUID:                   "node-uid",
			MaxExpirationSeconds:      &exp,
			StubPKCS10Request:         []byte("stub"),
			UnverifiedUserAnnotations: map[string]string{"example.com/path": "/custom"},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("request =\n%+v\nwant\n%+v", got, want)
	}
	// The request must not alias the pod's spec.
	*got.Spec.MaxExpirationSeconds = 1
	got.Spec.UnverifiedUserAnnotations["x"] = "y"
	if exp != 3600 || len(src.UserAnnotations) != 1 {
		t.Fatal("request aliases the projection")
	}

	// Unset stays unset: the API server's default (24h) applies.
	src.MaxExpirationSeconds, src.UserAnnotations = nil, nil
	got = requestFor(pod, src, "sa-uid", "node-a", "node-uid", nil)
	if got.Spec.MaxExpirationSeconds != nil || got.Spec.UnverifiedUserAnnotations != nil {
		t.Fatalf("unset fields filled in: %v %v", got.Spec.MaxExpirationSeconds, got.Spec.UnverifiedUserAnnotations)
	}
}

func TestReadStatus(t *testing.T) {
	at := func(m int) *metav1.Time { v := metav1.NewTime(time.Date(2026, 1, 1, 0, m, 0, 0, time.UTC)); return &v }
	cert := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1, 2, 3}}))
	cond := func(typ, reason, msg string) []metav1.Condition {
		return []metav1.Condition{{Type: typ, Status: metav1.ConditionTrue, Reason: reason, Message: msg}}
	}
	for _, tc := range []struct {
		name string
		st   certificatesv1.PodCertificateRequestStatus
		want outcome
	}{
		{"no conditions", certificatesv1.PodCertificateRequestStatus{}, outcome{verdict: pending}},
		{"other condition", certificatesv1.PodCertificateRequestStatus{Conditions: cond("Progressing", "Queued", "")}, outcome{verdict: pending}},
		{"denied", certificatesv1.PodCertificateRequestStatus{Conditions: cond("Denied", "UnsupportedKeyType", "use ECDSAP256")},
			outcome{verdict: denied, reason: "UnsupportedKeyType", message: "use ECDSAP256"}},
		{"failed", certificatesv1.PodCertificateRequestStatus{Conditions: cond("Failed", "Backend", "HSM down")},
			outcome{verdict: failed, reason: "Backend", message: "HSM down"}},
		{"issued", certificatesv1.PodCertificateRequestStatus{Conditions: cond("Issued", "Issued", ""), CertificateChain: "x\n" + cert, BeginRefreshAt: at(30), NotAfter: at(60)},
			outcome{verdict: issued, chain: []byte(cert), beginRefreshAt: at(30).Time, notAfter: at(60).Time}},
		{"issued without chain", certificatesv1.PodCertificateRequestStatus{Conditions: cond("Issued", "Issued", ""), CertificateChain: "garbage", BeginRefreshAt: at(30), NotAfter: at(60)},
			outcome{verdict: failed, reason: "IncompleteStatus", message: "issued without a certificate chain, beginRefreshAt or notAfter"}},
		{"issued without beginRefreshAt", certificatesv1.PodCertificateRequestStatus{Conditions: cond("Issued", "Issued", ""), CertificateChain: cert, NotAfter: at(60)},
			outcome{verdict: failed, reason: "IncompleteStatus", message: "issued without a certificate chain, beginRefreshAt or notAfter"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := readStatus(&tc.st); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("readStatus = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestCleanChain(t *testing.T) {
	leaf := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Headers: map[string]string{"Note": "leaf"}, Bytes: []byte("leaf")})
	mid := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("intermediate")})
	in := "issued by example signer\n" + string(leaf) + "\n-- and its issuer --\n" + string(mid) + "trailing"
	want := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("leaf")})) + string(mid)
	if got := string(cleanChain([]byte(in))); got != want {
		t.Fatalf("cleanChain =\n%s\nwant\n%s", got, want)
	}
	if got := cleanChain([]byte("no pem here")); len(got) != 0 {
		t.Fatalf("cleanChain(no blocks) = %q", got)
	}
}
