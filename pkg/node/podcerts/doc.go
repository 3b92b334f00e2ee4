// Package podcerts obtains the credentials of podCertificate projected
// volume sources (core/v1 PodCertificateProjection): for each source of
// each pod it generates a private key, asks the source's signer for a
// certificate through a certificates.k8s.io/v1 PodCertificateRequest, and
// hands the key and the issued chain to the projected volume, which writes
// them as credentialBundlePath (key, then chain), keyPath and
// certificateChainPath.
//
// Behaviour follows upstream's kubelet (pkg/kubelet/podcertificate):
//   - one request per (pod UID, volume name, source index); a new key and
//     request when the issued request's status.beginRefreshAt has passed
//     (plus up to five minutes of jitter, so that many pods do not refresh
//     at once); the old credential is served until the new one is issued;
//   - Denied and Failed are final for the source; its bundle is an error
//     naming the condition's reason and message from then on;
//   - the request's spec copies the projection (signer, key type,
//     maxExpirationSeconds, userAnnotations) verbatim, so that the API
//     server's default (24h) applies to an unset maxExpirationSeconds;
//   - nothing is kept across restarts: a restarted kubelet requests anew.
//
// The kubelet acts with the node's identity, so every call is one the Node
// authorizer and the NodeRestriction admission plugin allow: create of
// PodCertificateRequests (for the node's own pods, naming the node and the
// pod's service account by name and UID), list/watch of them only with the
// field selector spec.nodeName=<this node>, and get of the pod's service
// account (to learn its UID). A node may not update, patch or delete
// requests; the ones it creates are owned by their pod, so the garbage
// collector removes them with it.
//
// Only requests this manager created are acted on, recognised by the UID
// the API server gave them on create: anyone able to create a request for
// the node's pods (or to set a name or label) cannot feed a certificate to
// a pod through this package.
package podcerts
