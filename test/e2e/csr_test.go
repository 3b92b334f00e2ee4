package e2e

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// approveServingCSRs approves, until ctx ends, the kubernetes.io/
// kubelet-serving CSRs that accept takes: what a cluster administrator (or
// an approver of theirs) does, since the controller manager approves no
// serving CSR. accept gets the node name of the CSR's subject
// (system:node:<name>) and the requesting user.
func approveServingCSRs(ctx context.Context, accept func(node, user string) bool) {
	for ctx.Err() == nil {
		l, err := client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
		if err == nil {
			for i := range l.Items {
				r := &l.Items[i]
				if r.Spec.SignerName != certificatesv1.KubeletServingSignerName || approved(r) {
					continue
				}
				node, ok := csrNode(r.Spec.Request)
				if !ok || !accept(node, r.Spec.Username) {
					continue
				}
				r.Status.Conditions = append(r.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
					Type: certificatesv1.CertificateApproved, Status: v1.ConditionTrue, Reason: "E2EApproved", Message: "approved by the e2e test",
				})
				_, _ = client.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, r.Name, r, metav1.UpdateOptions{})
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// csrNode is the node name of a CSR whose subject is system:node:<name>.
func csrNode(request []byte) (string, bool) {
	b, _ := pem.Decode(request)
	if b == nil {
		return "", false
	}
	cr, err := x509.ParseCertificateRequest(b.Bytes)
	if err != nil {
		return "", false
	}
	return strings.CutPrefix(cr.Subject.CommonName, "system:node:")
}

// virtualServingCSR accepts the serving CSRs of the e2e virtual nodes
// (vk-*): made by the node itself or by the virtual nodes' identity it
// acts as (identity: shared).
func virtualServingCSR(node, user string) bool {
	return strings.HasPrefix(node, "vk-") && (user == "system:node:"+node || user == virtualNodesUser)
}
