package certs

import (
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
	// (the node's addresses); none means no request yet.
	Addresses func() (dnsNames []string, ips []net.IP)
}

// NewServing returns the manager of the kubelet's serving certificate:
// requested through a CSR for kubernetes.io/kubelet-serving (subject
// system:node:<name>, organisation system:nodes, SANs from Addresses),
// stored as kubelet-server-current.pem in CertDir and renewed before it
// expires. Such CSRs are not approved automatically by the controller
// manager: a cluster administrator (or an approver of their choice)
// approves them. Start it with Start; Current is nil until one is issued.
func NewServing(o ServingOptions) (certificate.Manager, error) {
	store, err := certificate.NewFileStore(ServerPairName, o.CertDir, o.CertDir, "", "")
	if err != nil {
		return nil, fmt.Errorf("serving certificate store in %s: %w", o.CertDir, err)
	}
	return certificate.NewManager(&certificate.Config{
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
}
