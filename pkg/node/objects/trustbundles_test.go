package objects

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"slices"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/gokubelet/kubelet/internal/testing/testca"
)

// certsOf parses a PEM file into its certificates' common names.
func certsOf(t *testing.T, data []byte) []string {
	t.Helper()
	var out []string
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c.Subject.CommonName)
	}
	return out
}

func TestMergeTrustAnchors(t *testing.T) {
	a, b, c := testca.PEM(t, "a"), testca.PEM(t, "b"), testca.PEM(t, "c")
	salt := []byte("salt")
	one := MergeTrustAnchors([]string{a + b, "comment between bundles\n" + c, b}, salt)
	if got := certsOf(t, one); len(got) != 3 {
		t.Fatalf("anchors %v, want a, b and c once each", got)
	}
	// The order depends on the certificates and the salt only.
	if two := MergeTrustAnchors([]string{c, b + a}, salt); !bytes.Equal(one, two) {
		t.Errorf("the same anchors in another order give another file:\n%s\n%s", one, two)
	}
	if got := MergeTrustAnchors(nil, salt); len(got) != 0 {
		t.Errorf("no bundle gives %q", got)
	}
	// Across salts (processes) the order is not fixed: with three anchors,
	// some salt among many gives another order.
	differs := false
	for i := 0; i < 50 && !differs; i++ {
		differs = !bytes.Equal(one, MergeTrustAnchors([]string{a, b, c}, []byte{byte(i)}))
	}
	if !differs {
		t.Error("50 salts all give the same order")
	}
}

func ctb(name, signer, pemData string, labels map[string]string) *certificatesv1.ClusterTrustBundle {
	return &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: pemData}}
}

func TestTrustBundles(t *testing.T) {
	ctx := context.Background()
	a, b, c, d := testca.PEM(t, "a"), testca.PEM(t, "b"), testca.PEM(t, "c"), testca.PEM(t, "d")
	client := fake.NewClientset(
		ctb("plain", "", a, nil),
		ctb("example.com:s:1", "example.com/s", b, map[string]string{"alive": "true"}),
		ctb("example.com:s:2", "example.com/s", c, map[string]string{"alive": "false"}),
		ctb("example.com:other:1", "example.com/other", d, map[string]string{"alive": "true"}),
	)
	changed := make(chan string, 10)
	tb := NewTrustBundles(client, func(name string) { changed <- name })
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { _ = tb.Start(runCtx) }()

	alive := &metav1.LabelSelector{MatchLabels: map[string]string{"alive": "true"}}
	for _, tc := range []struct {
		name     string
		read     func() ([]byte, error)
		want     []string
		notFound bool
		errHas   string
	}{
		{name: "by name", read: func() ([]byte, error) { return tb.ByName(ctx, "plain", false) }, want: []string{"a"}},
		{name: "missing name", read: func() ([]byte, error) { return tb.ByName(ctx, "nope", false) }, notFound: true},
		{name: "missing name, optional", read: func() ([]byte, error) { return tb.ByName(ctx, "nope", true) }, want: nil},
		{name: "signer and labels", read: func() ([]byte, error) { return tb.BySigner(ctx, "example.com/s", alive, false) }, want: []string{"b"}},
		{name: "signer, empty selector matches all its bundles", read: func() ([]byte, error) {
			return tb.BySigner(ctx, "example.com/s", &metav1.LabelSelector{}, false)
		}, want: []string{"b", "c"}},
		{name: "signer, nil selector matches nothing", read: func() ([]byte, error) { return tb.BySigner(ctx, "example.com/s", nil, false) }, errHas: "no ClusterTrustBundle"},
		{name: "signer, nil selector, optional", read: func() ([]byte, error) { return tb.BySigner(ctx, "example.com/s", nil, true) }, want: nil},
		{name: "unknown signer", read: func() ([]byte, error) { return tb.BySigner(ctx, "example.com/none", alive, false) }, errHas: `"example.com/none"`},
		{name: "bad selector", read: func() ([]byte, error) {
			return tb.BySigner(ctx, "example.com/s", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Bogus"}}}, false)
		}, errHas: "label selector"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.read()
			switch {
			case tc.notFound:
				if !apierrors.IsNotFound(err) {
					t.Fatalf("err %v, want NotFound", err)
				}
				return
			case tc.errHas != "":
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("err %v, want one containing %q", err, tc.errHas)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			names := certsOf(t, got)
			if strings.Join(sortedCopy(names), ",") != strings.Join(tc.want, ",") {
				t.Errorf("anchors %v, want %v", names, tc.want)
			}
			if tc.want == nil && got == nil {
				t.Error("an empty file is nil, not empty")
			}
		})
	}

	// A change is told by name; the next read sees it.
	e := testca.PEM(t, "e")
	if _, err := client.CertificatesV1().ClusterTrustBundles().Create(ctx, ctb("example.com:s:3", "example.com/s", e, map[string]string{"alive": "true"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-changed:
		if n != "example.com:s:3" {
			t.Errorf("change told for %q", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no change told for a created bundle")
	}
	got, err := tb.BySigner(ctx, "example.com/s", alive, false)
	if err != nil || strings.Join(sortedCopy(certsOf(t, got)), ",") != "b,e" {
		t.Errorf("after the create: %v %v, want b and e", certsOf(t, got), err)
	}
}

func TestTrustBundlesStandalone(t *testing.T) {
	tb := NewTrustBundles(nil, nil)
	if _, err := tb.ByName(context.Background(), "x", true); err == nil || !strings.Contains(err.Error(), ErrStandalone.Error()) {
		t.Errorf("err %v, want the standalone error even for an optional bundle", err)
	}
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
