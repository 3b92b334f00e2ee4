package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"

	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/klog/v2"
)

// TLSOptions say where the serving certificate comes from and which TLS
// versions and cipher suites are offered.
type TLSOptions struct {
	// CertFile and KeyFile (tlsCertFile, tlsPrivateKeyFile) are served
	// and re-read when they change on disk.
	CertFile, KeyFile string
	// GetCertificate, when set (serverTLSBootstrap), supplies the current
	// serving certificate instead; nil while none has been issued.
	GetCertificate func() *tls.Certificate
	// Without either, a self-signed pair kubelet.crt/kubelet.key in
	// CertDir is served, generated for Host when missing.
	CertDir string
	Host    string
	// CipherSuites (tlsCipherSuites) are IANA names; empty means Go's
	// defaults. MinVersion (tlsMinVersion) is VersionTLS10..VersionTLS13;
	// empty means TLS 1.2.
	CipherSuites []string
	MinVersion   string
	// RequestClientCert asks clients for a certificate (with x509
	// authentication); the authenticator verifies it.
	RequestClientCert bool
	// StaticCertFile serves CertFile and KeyFile as read at start, not
	// re-read when they change (ReloadKubeletServerCertificateFile off,
	// as upstream).
	StaticCertFile bool
}

// TLS is a serving configuration whose certificate may change while
// serving.
type TLS struct {
	Config *tls.Config
	run    func(ctx context.Context)
	// Source says where the certificate comes from, for the log.
	Source string
}

// Run watches the certificate files until ctx ends (no-op otherwise).
func (t *TLS) Run(ctx context.Context) {
	if t.run != nil {
		t.run(ctx)
	}
}

// SelfSignedPaths are the files of the self-signed serving pair in
// certDir, as upstream names them.
func SelfSignedPaths(certDir string) (cert, key string) {
	return filepath.Join(certDir, "kubelet.crt"), filepath.Join(certDir, "kubelet.key")
}

// BuildTLS builds the serving TLS configuration.
func BuildTLS(o TLSOptions) (*TLS, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.MinVersion != "" {
		v, err := cliflag.TLSVersion(o.MinVersion)
		if err != nil {
			return nil, fmt.Errorf("tlsMinVersion: %w", err)
		}
		cfg.MinVersion = v
	}
	if len(o.CipherSuites) > 0 {
		ids, err := cliflag.TLSCipherSuites(o.CipherSuites)
		if err != nil {
			return nil, fmt.Errorf("tlsCipherSuites: %w", err)
		}
		cfg.CipherSuites = ids
	}
	if o.RequestClientCert {
		cfg.ClientAuth = tls.RequestClientCert
	}
	t := &TLS{Config: cfg}
	if o.GetCertificate != nil {
		get := o.GetCertificate
		cfg.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			if c := get(); c != nil {
				return c, nil
			}
			return nil, errors.New("no serving certificate available for the kubelet yet")
		}
		t.Source = "certificate signing request (serverTLSBootstrap)"
		return t, nil
	}
	certFile, keyFile := o.CertFile, o.KeyFile
	t.Source = "tlsCertFile " + certFile
	if certFile == "" {
		var err error
		certFile, keyFile, err = ensureSelfSigned(o.CertDir, o.Host)
		if err != nil {
			return nil, err
		}
		t.Source = "self-signed " + certFile
	}
	if o.StaticCertFile && o.CertFile != "" {
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("serving certificate: %w", err)
		}
		cfg.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &pair, nil }
		t.Source += " (not reloaded: ReloadKubeletServerCertificateFile is off)"
		return t, nil
	}
	content, err := dynamiccertificates.NewDynamicServingContentFromFiles("kubelet-serving", certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	var cache parsedPair
	cfg.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		return cache.get(content.CurrentCertKeyContent())
	}
	t.run = func(ctx context.Context) { content.Run(ctx, 1) }
	return t, nil
}

// parsedPair caches the parsed form of the current PEM pair.
type parsedPair struct {
	mu   sync.Mutex
	cert []byte
	key  []byte
	tls  *tls.Certificate
}

func (p *parsedPair) get(certPEM, keyPEM []byte) (*tls.Certificate, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tls != nil && bytes.Equal(p.cert, certPEM) && bytes.Equal(p.key, keyPEM) {
		return p.tls, nil
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	p.cert, p.key, p.tls = certPEM, keyPEM, &c
	return &c, nil
}

// ensureSelfSigned returns the self-signed pair in certDir, generating it
// (with a CA of its own, as upstream) when missing or unreadable.
func ensureSelfSigned(certDir, host string) (string, string, error) {
	certFile, keyFile := SelfSignedPaths(certDir)
	if _, err := tls.LoadX509KeyPair(certFile, keyFile); err == nil {
		return certFile, keyFile, nil
	}
	if host == "" {
		host = "localhost"
	}
	var ips []net.IP
	var names []string
	if host != "localhost" {
		names = append(names, "localhost")
	}
	cert, key, err := certutil.GenerateSelfSignedCertKey(host, ips, names)
	if err != nil {
		return "", "", fmt.Errorf("generating a self-signed serving certificate: %w", err)
	}
	if err := os.MkdirAll(certDir, 0o755); err != nil {
		return "", "", fmt.Errorf("creating --cert-dir: %w", err)
	}
	if err := certutil.WriteCert(certFile, cert); err != nil {
		return "", "", err
	}
	if err := keyutil.WriteKey(keyFile, key); err != nil {
		return "", "", err
	}
	klog.InfoS("Generated a self-signed serving certificate", "cert", certFile, "host", host)
	return certFile, keyFile, nil
}
