package podcerts

import (
	"errors"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestNext(t *testing.T) {
	issuedEntry := func() *entry {
		return &entry{keyPEM: []byte("k"), chainPEM: []byte("c"), refreshAt: t0.Add(time.Hour)}
	}
	waiting := &inflight{name: "req-1", uid: "u1", abandonAt: t0.Add(abandonAfter)}
	for _, tc := range []struct {
		name string
		e    *entry
		now  time.Time
		seen bool
		want action
	}{
		{"new source", &entry{}, t0, false, request},
		{"creating already", &entry{creating: true}, t0, false, none},
		{"request in flight", &entry{inflight: waiting}, t0, false, none},
		{"request in flight, not seen, not yet abandoned", &entry{inflight: waiting}, t0.Add(abandonAfter - time.Second), false, none},
		{"request in flight, not seen for too long", &entry{inflight: waiting}, t0.Add(abandonAfter), false, abandon},
		{"request in flight, seen, old", &entry{inflight: waiting}, t0.Add(2 * abandonAfter), true, none},
		{"retry not due", &entry{lastErr: errors.New("x"), retryAt: t0.Add(time.Second)}, t0, false, none},
		{"retry due", &entry{lastErr: errors.New("x"), retryAt: t0}, t0, false, request},
		{"issued, before refresh", issuedEntry(), t0.Add(59 * time.Minute), false, none},
		{"issued, refresh due", issuedEntry(), t0.Add(time.Hour), false, request},
		{"denied", &entry{final: errors.New("denied")}, t0.Add(24 * time.Hour), false, none},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := next(tc.e, tc.now, tc.seen); got != tc.want {
				t.Fatalf("next = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSettle(t *testing.T) {
	src := v1.PodCertificateProjection{SignerName: "example.com/s"}
	newEntry := func() *entry {
		return &entry{
			pod: podRef{namespace: "ns"}, src: src,
			keyPEM: []byte("old-key"), chainPEM: []byte("old-chain"),
			inflight: &inflight{name: "req-2", uid: "u2", keyPEM: []byte("new-key")},
		}
	}

	e := newEntry()
	if e.settle(outcome{verdict: pending}, 0) || e.inflight == nil || string(e.keyPEM) != "old-key" {
		t.Fatal("pending changed the entry")
	}

	e = newEntry()
	if !e.settle(outcome{verdict: issued, chain: []byte("new-chain"), beginRefreshAt: t0, notAfter: t0.Add(time.Hour)}, 3*time.Minute) {
		t.Fatal("issued: not reported as a change")
	}
	if string(e.keyPEM) != "new-key" || string(e.chainPEM) != "new-chain" || e.inflight != nil ||
		!e.refreshAt.Equal(t0.Add(3*time.Minute)) || !e.notAfter.Equal(t0.Add(time.Hour)) {
		t.Fatalf("issued: entry = %+v", e)
	}

	for _, v := range []verdict{denied, failed} {
		e = newEntry()
		if e.settle(outcome{verdict: v, reason: "NoWay", message: "not for you"}, 0) {
			t.Fatal("refusal reported as a new credential")
		}
		_, _, err := e.bundle(entryKey{})
		for _, want := range []string{"ns/req-2", "example.com/s", `reason="NoWay"`, `message="not for you"`} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("verdict %v: err = %v, want it to name %s", v, err, want)
			}
		}
		if errors.Is(err, ErrNotIssued) || e.keyPEM != nil || next(e, t0.Add(48*time.Hour), false) != none {
			t.Fatalf("verdict %v: refusal is not final: %+v", v, e)
		}
	}

	e = &entry{}
	if e.settle(outcome{verdict: issued, chain: []byte("c")}, 0) {
		t.Fatal("an outcome without a request in flight was applied")
	}
}

func TestCreatedBacksOff(t *testing.T) {
	e := &entry{creating: true}
	var waits []time.Duration
	for range 10 {
		e.created(nil, errors.New("forbidden"), t0)
		waits = append(waits, e.retryAt.Sub(t0))
	}
	want := []time.Duration{1, 2, 4, 8, 16, 32, 64, 120, 120, 120}
	for i := range want {
		if waits[i] != want[i]*time.Second {
			t.Fatalf("waits = %v", waits)
		}
	}
	if e.creating || e.failures != 10 {
		t.Fatalf("entry = %+v", e)
	}
	e.created(&inflight{name: "req-1"}, nil, t0)
	if e.failures != 0 || e.lastErr != nil || !e.retryAt.IsZero() || e.inflight == nil {
		t.Fatalf("success did not reset: %+v", e)
	}
}

func TestBundle(t *testing.T) {
	k := entryKey{pod: "p", volume: "certs", source: 1}
	_, _, err := (&entry{}).bundle(k)
	if !errors.Is(err, ErrNotIssued) {
		t.Fatalf("new: %v", err)
	}
	_, _, err = (&entry{pod: podRef{namespace: "ns"}, inflight: &inflight{name: "req-7"}}).bundle(k)
	if !errors.Is(err, ErrNotIssued) || !strings.Contains(err.Error(), "ns/req-7 is pending") || !strings.Contains(err.Error(), `volume "certs" source 1`) {
		t.Fatalf("pending: %v", err)
	}
	_, _, err = (&entry{lastErr: errors.New(`serviceaccounts "web" is forbidden`)}).bundle(k)
	if !errors.Is(err, ErrNotIssued) || !strings.Contains(err.Error(), "forbidden") {
		t.Fatalf("create failed: %v", err)
	}
	e := &entry{keyPEM: []byte("k"), chainPEM: []byte("c"), inflight: &inflight{name: "refresh"}}
	key, chain, err := e.bundle(k)
	if err != nil || string(key) != "k" || string(chain) != "c" {
		t.Fatalf("issued, refreshing: %q %q %v", key, chain, err)
	}
	key[0] = 'x'
	if string(e.keyPEM) != "k" {
		t.Fatal("bundle returned the entry's own bytes")
	}
}
