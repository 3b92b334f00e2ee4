// Package testca makes throwaway self-signed CA certificates for tests of
// code that handles trust anchors.
package testca

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"testing"

	certutil "k8s.io/client-go/util/cert"
)

// PEM returns a new self-signed CA certificate with common name cn, as one
// PEM block (client-go's cert helper makes it).
func PEM(t testing.TB, cn string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: cn}, key)
	if err != nil {
		t.Fatal(err)
	}
	pemBytes, err := certutil.EncodeCertificates(cert)
	if err != nil {
		t.Fatal(err)
	}
	return string(pemBytes)
}
