package csi_test

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gokubelet/kubelet/pkg/plugins/csi"
	"github.com/gokubelet/kubelet/pkg/plugins/csi/csitest"
)

// The node client of a registered driver speaks to it over its socket:
// capabilities (asked once per registration), stage, publish and their
// reverses; failures name the driver and the call.
func TestNodeClientCallsTheRegisteredDriver(t *testing.T) {
	ctx := context.Background()
	fake := csitest.Start(t, "fake.csi.example.com")
	fake.SetCapabilities(csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME, csipb.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP)
	d := csi.New(csi.Options{NodeName: "n1"})

	var nr *csi.NotRegisteredError
	if _, err := d.NodeClient(fake.Name); !errors.As(err, &nr) || !strings.Contains(err.Error(), `CSI driver "fake.csi.example.com" is not registered on this node`) {
		t.Fatalf("before registration: %v", err)
	}
	if err := d.RegisterPlugin(ctx, fake.Name, fake.Endpoint, []string{"1.0.0"}); err != nil {
		t.Fatal(err)
	}
	c, err := d.NodeClient(fake.Name)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		caps, err := c.Capabilities(ctx)
		if err != nil || caps != (csi.NodeCaps{StageUnstage: true, VolumeMountGroup: true}) {
			t.Fatalf("capabilities %+v, %v", caps, err)
		}
	}
	// Another client of the same registration shares the answer.
	c2, _ := d.NodeClient(fake.Name)
	if _, err := c2.Capabilities(ctx); err != nil {
		t.Fatal(err)
	}

	staging := t.TempDir()
	target := filepath.Join(t.TempDir(), "mount")
	if err := c.StageVolume(ctx, &csipb.NodeStageVolumeRequest{VolumeId: "v1", StagingTargetPath: staging,
		VolumeCapability: &csipb.VolumeCapability{}}); err != nil {
		t.Fatal(err)
	}
	if err := c.PublishVolume(ctx, &csipb.NodePublishVolumeRequest{VolumeId: "v1", StagingTargetPath: staging, TargetPath: target,
		VolumeCapability: &csipb.VolumeCapability{}, VolumeContext: map[string]string{"k": "v"}}); err != nil {
		t.Fatal(err)
	}
	if got := fake.Last("NodePublishVolume").(*csipb.NodePublishVolumeRequest); got.GetVolumeContext()["k"] != "v" || got.GetTargetPath() != target {
		t.Errorf("publish request %v", got)
	}
	if err := c.UnpublishVolume(ctx, "v1", target); err != nil {
		t.Fatal(err)
	}
	if err := c.UnstageVolume(ctx, "v1", staging); err != nil {
		t.Fatal(err)
	}
	want := []string{"NodeGetInfo", "NodeGetCapabilities", "NodeStageVolume", "NodePublishVolume", "NodeUnpublishVolume", "NodeUnstageVolume"}
	if got := fake.Methods(); !reflect.DeepEqual(got, want) {
		t.Errorf("calls %v, want %v", got, want)
	}
	if u := fake.Last("NodeUnstageVolume").(*csipb.NodeUnstageVolumeRequest); u.GetVolumeId() != "v1" || u.GetStagingTargetPath() != staging {
		t.Errorf("unstage request %v", u)
	}

	fake.Fail("NodePublishVolume", status.Error(codes.NotFound, "no volume v9"))
	err = c.PublishVolume(ctx, &csipb.NodePublishVolumeRequest{VolumeId: "v9", TargetPath: target, VolumeCapability: &csipb.VolumeCapability{}})
	if err == nil || err.Error() != `CSI driver "fake.csi.example.com": NodePublishVolume failed: no volume v9 (NotFound)` || !csi.Final(err) {
		t.Errorf("refused publish: %v (final %v)", err, csi.Final(err))
	}

	// A registration that replaces the driver asks its capabilities again.
	fake.SetCapabilities()
	if err := d.RegisterPlugin(ctx, fake.Name, fake.Endpoint, []string{"1.0.0"}); err != nil {
		t.Fatal(err)
	}
	c3, _ := d.NodeClient(fake.Name)
	if caps, err := c3.Capabilities(ctx); err != nil || caps != (csi.NodeCaps{}) {
		t.Errorf("capabilities after registering again %+v, %v", caps, err)
	}
}

// A call the driver refused did nothing; one that timed out, was cut off
// or is still pending may have (upstream's final and uncertain errors).
func TestFinalErrors(t *testing.T) {
	for _, tc := range []struct {
		err   error
		final bool
	}{
		{nil, true},
		{status.Error(codes.NotFound, "x"), true},
		{status.Error(codes.InvalidArgument, "x"), true},
		{status.Error(codes.Internal, "x"), true},
		{status.Error(codes.FailedPrecondition, "x"), true},
		{status.Error(codes.DeadlineExceeded, "x"), false},
		{status.Error(codes.Unavailable, "x"), false},
		{status.Error(codes.Aborted, "x"), false},
		{status.Error(codes.ResourceExhausted, "x"), false},
		{status.Error(codes.Canceled, "x"), false},
		{&csi.CallError{Driver: "d", Call: "c", Err: status.Error(codes.NotFound, "x")}, true},
		{&csi.CallError{Driver: "d", Call: "c", Err: status.Error(codes.DeadlineExceeded, "x")}, false},
		{errors.New("not from the driver"), false},
	} {
		if got := csi.Final(tc.err); got != tc.final {
			t.Errorf("Final(%v) = %v, want %v", tc.err, got, tc.final)
		}
	}
}

// NodeGetVolumeStats and NodeExpandVolume: capabilities advertise them,
// the answers are read unit by unit, and an answer without bytes is an
// error naming the driver.
func TestNodeClientStatsAndExpand(t *testing.T) {
	ctx := context.Background()
	fake := csitest.Start(t, "stats.csi.example.com")
	fake.SetCapabilities(csipb.NodeServiceCapability_RPC_GET_VOLUME_STATS, csipb.NodeServiceCapability_RPC_EXPAND_VOLUME)
	d := csi.New(csi.Options{NodeName: "n1"})
	if err := d.RegisterPlugin(ctx, fake.Name, fake.Endpoint, []string{"1.0.0"}); err != nil {
		t.Fatal(err)
	}
	c, err := d.NodeClient(fake.Name)
	if err != nil {
		t.Fatal(err)
	}
	if caps, err := c.Capabilities(ctx); err != nil || caps != (csi.NodeCaps{GetVolumeStats: true, ExpandVolume: true}) {
		t.Fatalf("capabilities %+v, %v", caps, err)
	}

	for _, tc := range []struct {
		name  string
		usage []*csipb.VolumeUsage
		want  csi.VolumeUsage
		err   string
	}{
		{name: "bytes and inodes",
			usage: []*csipb.VolumeUsage{
				{Unit: csipb.VolumeUsage_BYTES, Total: 1000, Available: 600, Used: 400},
				{Unit: csipb.VolumeUsage_INODES, Total: 50, Available: 45, Used: 5}},
			want: csi.VolumeUsage{Bytes: &csi.Usage{Total: 1000, Available: 600, Used: 400}, Inodes: &csi.Usage{Total: 50, Available: 45, Used: 5}}},
		{name: "bytes only, as upstream's mock answers",
			usage: []*csipb.VolumeUsage{{Unit: csipb.VolumeUsage_BYTES, Total: 1 << 30}},
			want:  csi.VolumeUsage{Bytes: &csi.Usage{Total: 1 << 30}}},
		{name: "negative numbers count as zero",
			usage: []*csipb.VolumeUsage{{Unit: csipb.VolumeUsage_BYTES, Total: 10, Available: -1, Used: -2}},
			want:  csi.VolumeUsage{Bytes: &csi.Usage{Total: 10}}},
		{name: "no bytes",
			usage: []*csipb.VolumeUsage{{Unit: csipb.VolumeUsage_INODES, Total: 5}},
			err:   `CSI driver "stats.csi.example.com": NodeGetVolumeStats failed: NodeGetVolumeStats returned no usage in bytes`},
		{name: "nothing", err: "no usage in bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake.SetUsage(tc.usage...)
			got, err := c.VolumeStats(ctx, "v1", "/target")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("usage %+v %+v, %v; want %+v %+v", got.Bytes, got.Inodes, err, tc.want.Bytes, tc.want.Inodes)
			}
		})
	}
	if r := fake.Last("NodeGetVolumeStats").(*csipb.NodeGetVolumeStatsRequest); r.GetVolumeId() != "v1" || r.GetVolumePath() != "/target" {
		t.Errorf("stats request %v", r)
	}

	got, err := c.ExpandVolume(ctx, &csipb.NodeExpandVolumeRequest{VolumeId: "v1", VolumePath: "/target", CapacityRange: &csipb.CapacityRange{RequiredBytes: 2 << 30}})
	if err != nil || got != 2<<30 {
		t.Fatalf("expand: %d, %v", got, err)
	}
	fake.Fail("NodeExpandVolume", status.Error(codes.OutOfRange, "too big"))
	if _, err := c.ExpandVolume(ctx, &csipb.NodeExpandVolumeRequest{VolumeId: "v1", VolumePath: "/target"}); err == nil ||
		err.Error() != `CSI driver "stats.csi.example.com": NodeExpandVolume failed: too big (OutOfRange)` {
		t.Fatalf("refused expand: %v", err)
	}
}
