package framework

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
)

// CA signs client certificates for tests of the kubelet API's x509
// authentication.
type CA struct {
	Cert    *x509.Certificate
	Key     any
	CertPEM []byte
	// File is where the CA certificate was written (for clientCAFile).
	File string
}

// NewCA creates a CA and writes its certificate to dir/ca.crt.
func NewCA(dir string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "gokubelet-test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	ca := &CA{Cert: c, Key: key, CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), File: filepath.Join(dir, "ca.crt")}
	return ca, os.WriteFile(ca.File, ca.CertPEM, 0o644)
}

// LoadCA reads a CA pair from PEM files (the local cluster's ca.crt and
// ca.key).
func LoadCA(certFile, keyFile string) (*CA, error) {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	c, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(certFile)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: c, Key: pair.PrivateKey, CertPEM: b, File: certFile}, nil
}

// ClientCert issues a client certificate for user (CN) in groups (O).
func (ca *CA) ClientCert(user string, groups ...string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: user, Organization: groups},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(2 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// APIClient is an HTTPS client for a kubelet API that does not verify the
// kubelet's serving certificate (as the API server does by default) and
// presents cert when given.
func APIClient(cert *tls.Certificate) *http.Client {
	cfg := &tls.Config{InsecureSkipVerify: true}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 30 * time.Second}
}

// RESTConfig is a client-go configuration for a kubelet API at host
// (https://ip:port) with a client certificate, for the streaming clients
// (remotecommand, portforward).
func RESTConfig(host string, cert tls.Certificate) (*rest.Config, error) {
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]})
	keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("client key: %w", err)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	return &rest.Config{Host: host, TLSClientConfig: rest.TLSClientConfig{Insecure: true, CertData: certPEM, KeyData: keyPEM}}, nil
}
