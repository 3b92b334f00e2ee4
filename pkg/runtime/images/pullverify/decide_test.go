package pullverify

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

type secret = kubeletv1beta1.ImagePullSecret
type sa = kubeletv1beta1.ImagePullServiceAccount

func record(name string, creds kubeletv1beta1.ImagePullCredentials) *kubeletv1beta1.ImagePulledRecord {
	return &kubeletv1beta1.ImagePulledRecord{ImageRef: "sha256:1", CredentialMapping: map[string]kubeletv1beta1.ImagePullCredentials{name: creds}}
}

func secrets(s ...secret) kubeletv1beta1.ImagePullCredentials {
	return kubeletv1beta1.ImagePullCredentials{KubernetesSecrets: s}
}

func manySecrets(n int, last secret) kubeletv1beta1.ImagePullCredentials {
	var out []secret
	for i := 0; i < n-1; i++ {
		out = append(out, secret{Namespace: "ns", Name: fmt.Sprintf("s%d", i), UID: fmt.Sprintf("u%d", i), CredentialHash: fmt.Sprintf("h%d", i)})
	}
	return secrets(append(out, last)...)
}

func TestDecide(t *testing.T) {
	const image = "registry.example/app:1.0"
	a := secret{Namespace: "ns", Name: "a", UID: "uid-a", CredentialHash: "hash-a"}
	aRotated := secret{Namespace: "ns", Name: "a", UID: "uid-a", CredentialHash: "hash-a2"}
	aRecreated := secret{Namespace: "ns", Name: "a", UID: "uid-a-new", CredentialHash: "hash-a"}
	aRecreatedOther := secret{Namespace: "ns", Name: "a", UID: "uid-a-new", CredentialHash: "hash-a2"}
	bSameLogin := secret{Namespace: "other", Name: "b", UID: "uid-b", CredentialHash: "hash-a"}
	c := secret{Namespace: "ns", Name: "c", UID: "uid-c", CredentialHash: "hash-c"}
	noHash := secret{Namespace: "ns", Name: "a", UID: "uid-a", CredentialHash: ""}
	preloaded, _ := NewPolicy(kubeletv1beta1.NeverVerifyPreloadedImages, nil)
	never, _ := NewPolicy(kubeletv1beta1.NeverVerify, nil)
	always, _ := NewPolicy(kubeletv1beta1.AlwaysVerify, nil)
	allow, _ := NewPolicy(kubeletv1beta1.NeverVerifyAllowlistedImages, []string{"registry.example/*"})

	for _, tc := range []struct {
		name     string
		policy   Policy
		image    string
		pulled   bool
		rec      *kubeletv1beta1.ImagePulledRecord
		pod      PodCredentials
		want     Verdict
		askedPod bool
	}{
		{name: "NeverVerify: anyone", policy: never, pulled: true, rec: record("registry.example/app", secrets(a)),
			want: Verdict{Result: ResultPolicyAllowed}},
		{name: "preloaded image: anyone", policy: preloaded, pulled: false,
			want: Verdict{Result: ResultPolicyAllowed}},
		{name: "pulled by the kubelet, pull under way (intent, no record): pull", policy: preloaded, pulled: true,
			want: Verdict{Pull: true, Result: ResultMustAuthenticate}},
		{name: "AlwaysVerify, preloaded (no record): pull", policy: always, pulled: false,
			want: Verdict{Pull: true, Result: ResultMustAuthenticate}},
		{name: "allowlisted: anyone, even when pulled with a secret", policy: allow, pulled: true, rec: record("registry.example/app", secrets(a)),
			want: Verdict{Result: ResultPolicyAllowed}},
		{name: "record without credentials (recovered intent): pull", policy: preloaded, pulled: true,
			rec:  &kubeletv1beta1.ImagePulledRecord{ImageRef: "sha256:1"},
			want: Verdict{Pull: true, Result: ResultMustAuthenticate}},
		{name: "record for another spelling of the image: pull", policy: preloaded, pulled: true,
			image: "registry.example/app:2.0", rec: record("registry.example/other", secrets(a)),
			want: Verdict{Pull: true, Result: ResultMustAuthenticate}},
		{name: "pulled anonymously or with the node's login: anyone", policy: always, pulled: true,
			rec:  record("registry.example/app", kubeletv1beta1.ImagePullCredentials{NodePodsAccessible: true}),
			want: Verdict{Result: ResultRecordFound}},
		{name: "empty credentials for the name: pull", policy: preloaded, pulled: true,
			rec:  record("registry.example/app", kubeletv1beta1.ImagePullCredentials{}),
			want: Verdict{Pull: true, Result: ResultMustAuthenticate}},
		{name: "same secret, same hash", policy: preloaded, pulled: true, rec: record("registry.example/app", secrets(a)),
			pod: PodCredentials{Secrets: []secret{a}}, askedPod: true,
			want: Verdict{Result: ResultRecordFound}},
		{name: "a tag or digest does not matter", policy: preloaded, pulled: true, image: "registry.example/app@sha256:0123456789012345678901234567890123456789012345678901234567890123",
			rec: record("registry.example/app", secrets(a)), pod: PodCredentials{Secrets: []secret{a}}, askedPod: true,
			want: Verdict{Result: ResultRecordFound}},
		{name: "no pull secret: pull", policy: preloaded, pulled: true, rec: record("registry.example/app", secrets(a)),
			askedPod: true, want: Verdict{Pull: true, Result: ResultMustAuthenticate}},
		{name: "another secret, other login: pull", policy: preloaded, pulled: true, rec: record("registry.example/app", secrets(a)),
			pod: PodCredentials{Secrets: []secret{c}}, askedPod: true,
			want: Verdict{Pull: true, Result: ResultMustAuthenticate}},
		{name: "another secret holding the same login: allowed, learned", policy: preloaded, pulled: true, rec: record("registry.example/app", secrets(a)),
			pod: PodCredentials{Secrets: []secret{c, bSameLogin}}, askedPod: true,
			want: Verdict{Result: ResultRecordFound, Learn: &bSameLogin}},
		{name: "the same secret rotated (same UID, new hash): allowed, learned", policy: preloaded, pulled: true, rec: record("registry.example/app", secrets(a)),
			pod: PodCredentials{Secrets: []secret{aRotated}}, askedPod: true,
			want: Verdict{Result: ResultRecordFound, Learn: &aRotated}},
		{name: "secret recreated (new UID) with the same login: allowed by hash, learned", policy: preloaded, pulled: true, rec: record("registry.example/app", secrets(a)),
			pod: PodCredentials{Secrets: []secret{aRecreated}}, askedPod: true,
			want: Verdict{Result: ResultRecordFound, Learn: &aRecreated}},
		{name: "secret recreated (new UID) with another login: pull", policy: preloaded, pulled: true, rec: record("registry.example/app", secrets(a)),
			pod: PodCredentials{Secrets: []secret{aRecreatedOther}}, askedPod: true,
			want: Verdict{Pull: true, Result: ResultMustAuthenticate}},
		{name: "recorded without a hash: the same secret matches, an empty pod hash does not match by hash", policy: preloaded, pulled: true,
			rec: record("registry.example/app", secrets(noHash)), pod: PodCredentials{Secrets: []secret{{Namespace: "x", Name: "y", UID: "z"}, a}}, askedPod: true,
			want: Verdict{Result: ResultRecordFound, Learn: &a}},
		{name: "100 secrets recorded: a hash match is allowed but not learned", policy: preloaded, pulled: true,
			rec: record("registry.example/app", manySecrets(100, a)), pod: PodCredentials{Secrets: []secret{bSameLogin}}, askedPod: true,
			want: Verdict{Result: ResultRecordFound}},
		{name: "100 secrets recorded: a rotated secret no longer counts", policy: preloaded, pulled: true,
			rec: record("registry.example/app", manySecrets(100, a)), pod: PodCredentials{Secrets: []secret{aRotated}}, askedPod: true,
			want: Verdict{Pull: true, Result: ResultMustAuthenticate}},
		{name: "99 secrets recorded: a rotated secret is learned", policy: preloaded, pulled: true,
			rec: record("registry.example/app", manySecrets(99, a)), pod: PodCredentials{Secrets: []secret{aRotated}}, askedPod: true,
			want: Verdict{Result: ResultRecordFound, Learn: &aRotated}},
		{name: "service account recorded (credential provider plugin), same one", policy: preloaded, pulled: true,
			rec: record("registry.example/app", kubeletv1beta1.ImagePullCredentials{KubernetesServiceAccounts: []sa{{Namespace: "ns", Name: "default", UID: "sa-1"}}}),
			pod: PodCredentials{ServiceAccount: &sa{Namespace: "ns", Name: "default", UID: "sa-1"}}, askedPod: true,
			want: Verdict{Result: ResultRecordFound}},
		{name: "service account recorded, recreated (new UID): pull", policy: preloaded, pulled: true,
			rec: record("registry.example/app", kubeletv1beta1.ImagePullCredentials{KubernetesServiceAccounts: []sa{{Namespace: "ns", Name: "default", UID: "sa-1"}}}),
			pod: PodCredentials{ServiceAccount: &sa{Namespace: "ns", Name: "default", UID: "sa-2"}}, askedPod: true,
			want: Verdict{Pull: true, Result: ResultMustAuthenticate}},
		{name: "an image name that does not parse: pull", policy: always, pulled: true, image: "UPPER/Case:x",
			rec: record("UPPER/Case", secrets(a)), want: Verdict{Pull: true, Result: ResultError}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := tc.image
			if img == "" {
				img = image
			}
			asked := 0
			got := Decide(tc.policy, img, tc.pulled, tc.rec, func() PodCredentials { asked++; return tc.pod })
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v (learn %v), want %+v (learn %v)", got, got.Learn, tc.want, tc.want.Learn)
			}
			if asked > 1 || (asked == 1) != tc.askedPod {
				t.Errorf("pod credentials asked %d times, want asked=%v", asked, tc.askedPod)
			}
		})
	}
}

func TestMerge(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0.Add(time.Hour)
	a := secret{Namespace: "ns", Name: "a", UID: "uid-a", CredentialHash: "h1"}
	a2 := secret{Namespace: "ns", Name: "a", UID: "uid-a", CredentialHash: "h2"}
	b := secret{Namespace: "ab", Name: "b", UID: "uid-b", CredentialHash: "hb"}
	saA := sa{Namespace: "ns", Name: "z", UID: "1"}
	saB := sa{Namespace: "ns", Name: "a", UID: "2"}
	node := &kubeletv1beta1.ImagePullCredentials{NodePodsAccessible: true}
	base := func(c kubeletv1beta1.ImagePullCredentials) *kubeletv1beta1.ImagePulledRecord {
		r := record("app", c)
		r.LastUpdatedTime = metav1.NewTime(t0)
		return r
	}
	for _, tc := range []struct {
		name    string
		rec     *kubeletv1beta1.ImagePulledRecord
		image   string
		creds   *kubeletv1beta1.ImagePullCredentials
		want    kubeletv1beta1.ImagePullCredentials
		changed bool
	}{
		{"nil credentials", base(secrets(a)), "app", nil, secrets(a), false},
		{"empty credentials", base(secrets(a)), "app", &kubeletv1beta1.ImagePullCredentials{}, secrets(a), false},
		{"new image name", base(secrets(a)), "other", PulledWith(&b), secrets(b), true},
		{"the same secret again", base(secrets(a)), "app", PulledWith(&a), secrets(a), false},
		{"the same secret rotated: the new hash wins", base(secrets(a)), "app", PulledWith(&a2), secrets(a2), true},
		{"another secret: added, sorted by namespace, name, UID", base(secrets(a)), "app", PulledWith(&b), secrets(b, a), true},
		{"node-wide: replaces the secrets", base(secrets(a, b)), "app", node, *node, true},
		{"node-wide already: nothing more kept", base(*node), "app", PulledWith(&a), *node, false},
		{"service accounts: added and sorted", base(kubeletv1beta1.ImagePullCredentials{KubernetesServiceAccounts: []sa{saA}}), "app",
			&kubeletv1beta1.ImagePullCredentials{KubernetesServiceAccounts: []sa{saB}},
			kubeletv1beta1.ImagePullCredentials{KubernetesServiceAccounts: []sa{saB, saA}}, true},
		{"the same service account", base(kubeletv1beta1.ImagePullCredentials{KubernetesServiceAccounts: []sa{saA}}), "app",
			&kubeletv1beta1.ImagePullCredentials{KubernetesServiceAccounts: []sa{saA}},
			kubeletv1beta1.ImagePullCredentials{KubernetesServiceAccounts: []sa{saA}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			orig := tc.rec.DeepCopy()
			got, changed := Merge(tc.rec, tc.image, tc.creds, now)
			if changed != tc.changed {
				t.Errorf("changed %v, want %v", changed, tc.changed)
			}
			if !reflect.DeepEqual(got.CredentialMapping[tc.image], tc.want) {
				t.Errorf("%s: %+v, want %+v", tc.image, got.CredentialMapping[tc.image], tc.want)
			}
			if !reflect.DeepEqual(tc.rec, orig) {
				t.Errorf("the original record was modified: %+v", tc.rec)
			}
			wantTime := t0
			if changed {
				wantTime = now
			}
			if !got.LastUpdatedTime.Time.Equal(wantTime) {
				t.Errorf("lastUpdatedTime %v, want %v", got.LastUpdatedTime, wantTime)
			}
		})
	}
	if r := NewRecord("sha256:1", "app", nil, now); len(r.CredentialMapping) != 0 || r.ImageRef != "sha256:1" {
		t.Errorf("a record of an interrupted pull holds credentials: %+v", r)
	}
	if r := NewRecord("sha256:1", "app", PulledWith(nil), now); !r.CredentialMapping["app"].NodePodsAccessible {
		t.Errorf("an anonymous pull's record: %+v", r)
	}
}
