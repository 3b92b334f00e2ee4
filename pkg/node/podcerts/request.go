package podcerts

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"maps"
	"slices"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// keyGenerators are the keyType values a PodCertificateProjection may name
// (the API server rejects any other), each with the key it stands for.
var keyGenerators = map[string]func() (crypto.Signer, error){
	"RSA3072":   func() (crypto.Signer, error) { return rsa.GenerateKey(rand.Reader, 3072) },
	"RSA4096":   func() (crypto.Signer, error) { return rsa.GenerateKey(rand.Reader, 4096) },
	"ECDSAP256": func() (crypto.Signer, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) },
	"ECDSAP384": func() (crypto.Signer, error) { return ecdsa.GenerateKey(elliptic.P384(), rand.Reader) },
	"ECDSAP521": func() (crypto.Signer, error) { return ecdsa.GenerateKey(elliptic.P521(), rand.Reader) },
	"ED25519": func() (crypto.Signer, error) {
		_, k, err := ed25519.GenerateKey(rand.Reader)
		return k, err
	},
}

// KeyTypes lists the supported keyType values, sorted.
func KeyTypes() []string { return slices.Sorted(maps.Keys(keyGenerators)) }

// newKey generates a key of keyType and returns it PEM-encoded (a PKCS#8
// "PRIVATE KEY" block, what the credential bundle starts with) together
// with the stub PKCS#10 request for spec.stubPKCS10Request. The request is
// empty but for the public key and is signed with the key: that signature,
// checked by the API server on create, is the proof that the kubelet holds
// the private key.
func newKey(keyType string) (keyPEM, stubCSR []byte, err error) {
	gen, ok := keyGenerators[keyType]
	if !ok {
		return nil, nil, fmt.Errorf("unsupported key type %q (supported: %v)", keyType, KeyTypes())
	}
	key, err := gen()
	if err != nil {
		return nil, nil, fmt.Errorf("generating a %s key: %w", keyType, err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the %s key: %w", keyType, err)
	}
	stubCSR, err = x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		return nil, nil, fmt.Errorf("signing the stub PKCS#10 request: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), stubCSR, nil
}

// podRef is what a request says about its pod. It is taken from the pod
// when the source is first asked for; the fields cannot change for a UID.
type podRef struct {
	namespace, name string
	uid             types.UID
	serviceAccount  string
}

// requestFor builds the PodCertificateRequest for a source of pod. Every
// field is one NodeRestriction cross-checks against the live objects (node
// name and UID, pod name and UID, service account name and UID), so a
// stale value fails the create rather than reaching a signer. The owner
// reference to the pod lets the garbage collector delete the request with
// the pod: a node may not delete requests itself.
func requestFor(pod podRef, src *v1.PodCertificateProjection, saUID types.UID, node types.NodeName, nodeUID types.UID, stubCSR []byte) *certificatesv1.PodCertificateRequest {
	var maxExp *int32
	if src.MaxExpirationSeconds != nil {
		v := *src.MaxExpirationSeconds
		maxExp = &v
	}
	return &certificatesv1.PodCertificateRequest{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:    pod.namespace,
			GenerateName: "req-",
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1",
				Kind:       "Pod",
				Name:       pod.name,
				UID:        pod.uid,
			}},
		},
		Spec: certificatesv1.PodCertificateRequestSpec{
			SignerName:                src.SignerName,
			PodName:                   pod.name,
			PodUID:                    pod.uid,
			ServiceAccountName:        pod.serviceAccount,
			ServiceAccountUID:         saUID,
			NodeName:                  node,
			NodeUID:                   nodeUID,
			MaxExpirationSeconds:      maxExp,
			StubPKCS10Request:         stubCSR,
			UnverifiedUserAnnotations: maps.Clone(src.UserAnnotations),
		},
	}
}

// verdict is where a request stands.
type verdict int

const (
	pending verdict = iota
	issued
	denied
	failed
)

// outcome is what a request's status says. reason and message are the
// Denied or Failed condition's; chain, beginRefreshAt and notAfter are set
// when issued.
type outcome struct {
	verdict         verdict
	reason, message string
	chain           []byte
	beginRefreshAt  time.Time
	notAfter        time.Time
}

// readStatus classifies a request by its status conditions. The API allows
// at most one of Issued, Denied and Failed; the first one present decides,
// and other condition types are ignored. An Issued status the API server
// would not have accepted (no certificate, no refresh or expiry time) is
// treated as a failure rather than waited on, since an issued status can
// no longer change.
func readStatus(st *certificatesv1.PodCertificateRequestStatus) outcome {
	for _, c := range st.Conditions {
		switch c.Type {
		case certificatesv1.PodCertificateRequestConditionTypeDenied:
			return outcome{verdict: denied, reason: c.Reason, message: c.Message}
		case certificatesv1.PodCertificateRequestConditionTypeFailed:
			return outcome{verdict: failed, reason: c.Reason, message: c.Message}
		case certificatesv1.PodCertificateRequestConditionTypeIssued:
			chain := cleanChain([]byte(st.CertificateChain))
			if len(chain) == 0 || st.BeginRefreshAt == nil || st.NotAfter == nil {
				return outcome{verdict: failed, reason: "IncompleteStatus",
					message: "issued without a certificate chain, beginRefreshAt or notAfter"}
			}
			return outcome{verdict: issued, chain: chain, beginRefreshAt: st.BeginRefreshAt.Time, notAfter: st.NotAfter.Time}
		}
	}
	return outcome{verdict: pending}
}

// cleanChain re-encodes the PEM blocks of a certificate chain as bare
// CERTIFICATE blocks: text between blocks and block headers are dropped,
// as the API documents for what the kubelet projects, so that the pod
// reads only certificates whatever the signer wrote around them.
func cleanChain(in []byte) []byte {
	var out bytes.Buffer
	for {
		var b *pem.Block
		b, in = pem.Decode(in)
		if b == nil {
			return out.Bytes()
		}
		_ = pem.Encode(&out, &pem.Block{Type: "CERTIFICATE", Bytes: b.Bytes})
	}
}
