package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"net"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/certificate"
)

// ServingOptions configure the serving certificate of serverTLSBootstrap.
type ServingOptions struct {
	CertDir  string
	NodeName string
	// Client is the kubelet's own API client: the node asks for its
	// serving certificate itself.
	Client kubernetes.Interface
	// Addresses returns the names and IPs the certificate must cover
	// (the node's addresses, see ServingAddresses); none means no request
	// yet.
	Addresses func() (dnsNames []string, ips []net.IP)
}

// Serving is the kubelet's serving certificate of serverTLSBootstrap: a
// runnable that requests and renews it, and its current pair.
type Serving struct {
	m certificate.Manager
}

// NewServing returns the kubelet's serving certificate: requested through
// a CSR for kubernetes.io/kubelet-serving (subject system:node:<name>,
// organisation system:nodes, SANs from Addresses), stored as
// kubelet-server-current.pem in CertDir and renewed before it expires.
// Such CSRs are not approved automatically by the controller manager: a
// cluster administrator (or an approver of their choice) approves them.
// Nothing is requested until Start; Current is nil until one is issued.
func NewServing(o ServingOptions) (*Serving, error) {
	store, err := certificate.NewFileStore(ServerPairName, o.CertDir, o.CertDir, "", "")
	if err != nil {
		return nil, fmt.Errorf("serving certificate store in %s: %w", o.CertDir, err)
	}
	m, err := certificate.NewManager(&certificate.Config{
		ClientsetFn: func(*tls.Certificate) (kubernetes.Interface, error) { return o.Client, nil },
		GetTemplate: func() *x509.CertificateRequest {
			names, ips := o.Addresses()
			if len(names) == 0 && len(ips) == 0 {
				return nil
			}
			return &x509.CertificateRequest{
				Subject:     pkix.Name{CommonName: "system:node:" + o.NodeName, Organization: []string{"system:nodes"}},
				DNSNames:    names,
				IPAddresses: ips,
			}
		},
		SignerName:       certificatesv1.KubeletServingSignerName,
		GetUsages:        certificate.DefaultKubeletServingGetUsages,
		CertificateStore: store,
		Name:             ServerPairName,
	})
	if err != nil {
		return nil, err
	}
	return &Serving{m: m}, nil
}

// Current is the serving certificate to present (nil until one is issued).
func (s *Serving) Current() *tls.Certificate { return s.m.Current() }

// Start requests and renews the certificate until ctx ends.
func (s *Serving) Start(ctx context.Context) error {
	s.m.Start()
	<-ctx.Done()
	s.m.Stop()
	return nil
}

// ServingAddresses are the names and IPs a serving certificate covers: the
// node name, the hostname when it differs, and the node's IPs (unspecified
// and unparsable ones left out).
func ServingAddresses(nodeName, hostname string, hostIPs []string) ([]string, []net.IP) {
	names := []string{nodeName}
	if hostname != "" && hostname != nodeName {
		names = append(names, hostname)
	}
	var ips []net.IP
	for _, s := range hostIPs {
		if ip := net.ParseIP(s); ip != nil && !ip.IsUnspecified() {
			ips = append(ips, ip)
		}
	}
	return names, ips
}
