package pullverify

import (
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// Result is why a pod may or may not use a present image: the result
// label of kubelet_imagemanager_image_mustpull_checks_total (upstream's
// values).
type Result string

const (
	// ResultPolicyAllowed: the policy needs no verification.
	ResultPolicyAllowed Result = "credentialPolicyAllowed"
	// ResultRecordFound: the record holds credentials the pod has, or
	// says any pod may use the image.
	ResultRecordFound Result = "credentialRecordFound"
	// ResultMustAuthenticate: the pod must pull with its credentials.
	ResultMustAuthenticate Result = "mustAuthenticate"
	// ResultError: the records could not be read or the image name not
	// parsed; the pod must pull.
	ResultError Result = "error"
)

// PodCredentials are the credentials a pod presents for an image: the
// logins of its pull secrets that match the image's registry (each with
// its secret's coordinates and hash), and the service account an image
// credential provider plugin would use (always nil on this kubelet).
type PodCredentials struct {
	Secrets        []kubeletv1beta1.ImagePullSecret
	ServiceAccount *kubeletv1beta1.ImagePullServiceAccount
}

// Verdict is the decision for one pod and one present image.
type Verdict struct {
	// Pull: the pod may not use the present image without pulling it with
	// its own credentials.
	Pull   bool
	Result Result
	// Learn is a pod secret that matched a recorded one by hash under
	// other coordinates, or by coordinates with another hash: the caller
	// adds it to the record so that it matches directly next time.
	Learn *kubeletv1beta1.ImagePullSecret
}

// learnLimit: a record naming this many secrets for an image learns no
// more secrets from checks (upstream's bound on writes under namespace
// churn); a same-secret match with a different hash then does not count.
const learnLimit = 100

// Decide is the whole decision (see the package doc) for a pod asking for
// image (its container's image field) present on the node. pulledByKubelet
// says whether the kubelet has a pulled record of the image or a pull
// intent for it; rec is that record (nil when there is none). pod is
// called at most once, and only when the pod's credentials matter.
func Decide(p Policy, image string, pulledByKubelet bool, rec *kubeletv1beta1.ImagePulledRecord, pod func() PodCredentials) Verdict {
	if !p.RequiresVerification(image, pulledByKubelet) {
		return Verdict{Result: ResultPolicyAllowed}
	}
	if rec == nil {
		return Verdict{Pull: true, Result: ResultMustAuthenticate}
	}
	name, err := TrimTagDigest(image)
	if err != nil {
		return Verdict{Pull: true, Result: ResultError}
	}
	cached, ok := rec.CredentialMapping[name]
	switch {
	case !ok:
		return Verdict{Pull: true, Result: ResultMustAuthenticate}
	case cached.NodePodsAccessible:
		return Verdict{Result: ResultRecordFound}
	case len(cached.KubernetesSecrets) == 0 && len(cached.KubernetesServiceAccounts) == 0:
		return Verdict{Pull: true, Result: ResultMustAuthenticate}
	}
	creds := pod()
	canLearn := len(cached.KubernetesSecrets) < learnLimit
	for _, ps := range creds.Secrets {
		for _, cs := range cached.KubernetesSecrets {
			sameHash := cs.CredentialHash != "" && ps.CredentialHash == cs.CredentialHash
			sameSecret := ps.UID == cs.UID && ps.Namespace == cs.Namespace && ps.Name == cs.Name
			switch {
			case sameHash:
				v := Verdict{Result: ResultRecordFound}
				if !sameSecret && canLearn {
					v.Learn = &ps
				}
				return v
			case sameSecret && canLearn:
				return Verdict{Result: ResultRecordFound, Learn: &ps}
			}
		}
	}
	if sa := creds.ServiceAccount; sa != nil && slices.Contains(cached.KubernetesServiceAccounts, *sa) {
		return Verdict{Result: ResultRecordFound}
	}
	return Verdict{Pull: true, Result: ResultMustAuthenticate}
}

// PulledWith is what a pull record keeps of the login that pulled an
// image: its secret (namespace, name, UID, hash), or, for the node's own
// login or an anonymous pull (secret nil), that every pod may use it.
func PulledWith(secret *kubeletv1beta1.ImagePullSecret) *kubeletv1beta1.ImagePullCredentials {
	if secret == nil {
		return &kubeletv1beta1.ImagePullCredentials{NodePodsAccessible: true}
	}
	return &kubeletv1beta1.ImagePullCredentials{KubernetesSecrets: []kubeletv1beta1.ImagePullSecret{*secret}}
}

// NewRecord is the pulled record of imageRef written when there is none:
// with creds under name, or with no credentials at all when creds is nil
// (an image whose pull was under way when the kubelet stopped: every pod
// must then show its credentials, whatever pulled it).
func NewRecord(imageRef, name string, creds *kubeletv1beta1.ImagePullCredentials, now time.Time) *kubeletv1beta1.ImagePulledRecord {
	rec := &kubeletv1beta1.ImagePulledRecord{
		LastUpdatedTime:   metav1.NewTime(now),
		ImageRef:          imageRef,
		CredentialMapping: map[string]kubeletv1beta1.ImagePullCredentials{},
	}
	if creds != nil {
		rec.CredentialMapping[name] = *creds
	}
	return rec
}

// Merge adds creds, under the image name name (without tag or digest), to
// rec, and returns the record to write and whether it changed (the
// original is never modified):
//   - nil or empty creds change nothing;
//   - a name without credentials gets creds;
//   - once every pod may use the image (nodePodsAccessible), nothing more
//     is kept for the name; creds saying so replace its secrets and
//     service accounts;
//   - secrets are merged by namespace, name and UID, the newer hash
//     winning, and kept sorted by namespace, name, UID; otherwise service
//     accounts are added, sorted the same way.
//
// A changed record gets now as its lastUpdatedTime.
func Merge(rec *kubeletv1beta1.ImagePulledRecord, name string, creds *kubeletv1beta1.ImagePullCredentials, now time.Time) (*kubeletv1beta1.ImagePulledRecord, bool) {
	if creds == nil || (!creds.NodePodsAccessible && len(creds.KubernetesSecrets) == 0 && len(creds.KubernetesServiceAccounts) == 0) {
		return rec, false
	}
	cur, found := rec.CredentialMapping[name]
	var next kubeletv1beta1.ImagePullCredentials
	switch {
	case !found:
		next = *creds.DeepCopy()
	case cur.NodePodsAccessible:
		return rec, false
	case creds.NodePodsAccessible:
		next = kubeletv1beta1.ImagePullCredentials{NodePodsAccessible: true}
	case len(creds.KubernetesSecrets) > 0:
		merged, changed := mergeSecrets(cur.KubernetesSecrets, creds.KubernetesSecrets)
		if !changed {
			return rec, false
		}
		next = *cur.DeepCopy()
		next.KubernetesSecrets = merged
	default:
		merged, changed := mergeServiceAccounts(cur.KubernetesServiceAccounts, creds.KubernetesServiceAccounts)
		if !changed {
			return rec, false
		}
		next = *cur.DeepCopy()
		next.KubernetesServiceAccounts = merged
	}
	out := rec.DeepCopy()
	if out.CredentialMapping == nil {
		out.CredentialMapping = map[string]kubeletv1beta1.ImagePullCredentials{}
	}
	out.CredentialMapping[name] = next
	out.LastUpdatedTime = metav1.NewTime(now)
	return out, true
}

type secretKey struct{ namespace, name, uid string }

func mergeSecrets(cur, add []kubeletv1beta1.ImagePullSecret) ([]kubeletv1beta1.ImagePullSecret, bool) {
	hashes := map[secretKey]string{}
	for _, s := range cur {
		hashes[secretKey{s.Namespace, s.Name, s.UID}] = s.CredentialHash
	}
	changed := false
	for _, s := range add {
		k := secretKey{s.Namespace, s.Name, s.UID}
		if h, ok := hashes[k]; !ok || h != s.CredentialHash {
			hashes[k] = s.CredentialHash
			changed = true
		}
	}
	if !changed {
		return cur, false
	}
	out := make([]kubeletv1beta1.ImagePullSecret, 0, len(hashes))
	for k, h := range hashes {
		out = append(out, kubeletv1beta1.ImagePullSecret{Namespace: k.namespace, Name: k.name, UID: k.uid, CredentialHash: h})
	}
	slices.SortFunc(out, func(a, b kubeletv1beta1.ImagePullSecret) int {
		return compareCoordinates(a.Namespace, a.Name, a.UID, b.Namespace, b.Name, b.UID)
	})
	return out, true
}

func mergeServiceAccounts(cur, add []kubeletv1beta1.ImagePullServiceAccount) ([]kubeletv1beta1.ImagePullServiceAccount, bool) {
	out := slices.Clone(cur)
	changed := false
	for _, s := range add {
		if !slices.Contains(out, s) {
			out = append(out, s)
			changed = true
		}
	}
	if !changed {
		return cur, false
	}
	slices.SortFunc(out, func(a, b kubeletv1beta1.ImagePullServiceAccount) int {
		return compareCoordinates(a.Namespace, a.Name, a.UID, b.Namespace, b.Name, b.UID)
	})
	return out, true
}

func compareCoordinates(ans, aname, auid, bns, bname, buid string) int {
	if c := strings.Compare(ans, bns); c != 0 {
		return c
	}
	if c := strings.Compare(aname, bname); c != 0 {
		return c
	}
	return strings.Compare(auid, buid)
}
