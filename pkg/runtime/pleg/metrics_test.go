package pleg

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/gokubelet/kubelet/pkg/metrics"
	"github.com/gokubelet/kubelet/pkg/metrics/metricstest"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
)

func TestEventLatency(t *testing.T) {
	now := time.Unix(1000, 0)
	for _, tc := range []struct {
		name    string
		created int64
		want    time.Duration
		ok      bool
	}{
		{"unstamped", 0, 0, false},
		{"negative stamp", -5, 0, false},
		{"a quarter second ago", now.Add(-250 * time.Millisecond).UnixNano(), 250 * time.Millisecond, true},
		{"created now", now.UnixNano(), 0, true},
		{"runtime clock ahead", now.Add(time.Second).UnixNano(), 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := eventLatency(now, &runtimeapi.ContainerEventResponse{CreatedAt: tc.created})
			if got != tc.want || ok != tc.ok {
				t.Errorf("eventLatency = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestStreamMetrics: upstream's evented PLEG series count each stream
// established and each failure to follow it, and observe the latency of
// stamped events.
func TestStreamMetrics(t *testing.T) {
	reg := metrics.NewKubeletRegistry(metrics.KubeletOptions{})
	read := func() (conn, errs float64, latencies uint64) {
		f := metricstest.ScrapeRegistry(t, reg)
		latencies, _ = f.Observed("kubelet_evented_pleg_connection_latency_seconds", nil)
		return f.Sum("kubelet_evented_pleg_connection_success_count", nil), f.Sum("kubelet_evented_pleg_connection_error_count", nil), latencies
	}
	conn0, errs0, lat0 := read()

	// One refused connection, one stream that breaks after three
	// (unstamped) events, one that stays up.
	rt := &truthRuntime{state: map[string]container.State{}}
	src := &script{sessions: []session{
		{refuse: errors.New("connection refused")},
		{events: []runtimeapi.ContainerEventType{created, started, stopped}, end: errors.New("stream reset")},
		{},
	}}
	p, _ := startPLEG(t, rt, src)
	eventually(t, "the third connection", func() bool {
		conn, _, _ := read()
		return conn-conn0 == 2 && p.Streaming()
	})
	conn, errs, lat := read()
	if conn-conn0 != 2 || errs-errs0 != 2 {
		t.Errorf("connections +%v, errors +%v; want +2, +2", conn-conn0, errs-errs0)
	}
	if lat != lat0 {
		t.Errorf("unstamped events observed %d latencies", lat-lat0)
	}

	// A stamped event is observed once.
	p.onEvent(&runtimeapi.ContainerEventResponse{ContainerId: "a", ContainerEventType: started,
		CreatedAt: time.Now().Add(-20 * time.Millisecond).UnixNano()})
	if _, _, l := read(); l-lat != 1 {
		t.Errorf("a stamped event observed %d latencies, want 1", l-lat)
	}

	// A runtime without the stream counts one error, and a shutdown none.
	q := New(rt, time.Hour, time.Hour, 10, clock.RealClock{})
	_, errs, _ = read()
	unimpl := &script{sessions: []session{{refuse: grpcstatus.Error(codes.Unimplemented, "no events")}}}
	if err := q.WatchEvents(context.Background(), unimpl); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := q.WatchEvents(ctx, &script{}); err != nil {
		t.Fatal(err)
	}
	if _, e, _ := read(); e-errs != 1 {
		t.Errorf("errors +%v after Unimplemented and a shutdown, want +1", e-errs)
	}
}
