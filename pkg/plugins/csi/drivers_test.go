package csi

import (
	"context"
	"errors"
	"net"
	"net/url"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// nodeServer answers NodeGetInfo as a driver's node plugin does.
type nodeServer struct {
	csipb.UnimplementedNodeServer
	resp *csipb.NodeGetInfoResponse
	hang bool
}

func (s *nodeServer) NodeGetInfo(ctx context.Context, _ *csipb.NodeGetInfoRequest) (*csipb.NodeGetInfoResponse, error) {
	if s.hang {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return s.resp, nil
}

func serveDriver(t *testing.T, s *nodeServer) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "csi.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	csipb.RegisterNodeServer(srv, s)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return path
}

func TestDriversPublishAndWithdrawTheNodesFacts(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "node-uid", Labels: map[string]string{"kubernetes.io/hostname": "n1"}}})
	d := New(Options{NodeName: "n1", Client: client, CallTimeout: 5 * time.Second})
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	cn, err := client.StorageV1().CSINodes().Get(ctx, "n1", metav1.GetOptions{})
	if err != nil || len(cn.OwnerReferences) != 1 || cn.OwnerReferences[0].UID != "node-uid" || len(cn.Spec.Drivers) != 0 {
		t.Fatalf("CSINode at start: %+v, %v", cn, err)
	}

	a := serveDriver(t, &nodeServer{resp: &csipb.NodeGetInfoResponse{NodeId: "a-n1", MaxVolumesPerNode: 8,
		AccessibleTopology: &csipb.Topology{Segments: map[string]string{"topology.a.csi/zone": "z1", "shared/rack": "r1"}}}})
	b := serveDriver(t, &nodeServer{resp: &csipb.NodeGetInfoResponse{NodeId: "b-n1",
		AccessibleTopology: &csipb.Topology{Segments: map[string]string{"shared/rack": "r1"}}}})
	if err := d.ValidatePlugin("a.csi", a, []string{"1.0.0"}); err != nil {
		t.Fatal(err)
	}
	if err := d.RegisterPlugin(ctx, "a.csi", a, []string{"1.0.0"}); err != nil {
		t.Fatal(err)
	}
	if err := d.RegisterPlugin(ctx, "b.csi", b, []string{"1.5.0", "1.0.0"}); err != nil {
		t.Fatal(err)
	}
	if drv, ok := d.Get("b.csi"); !ok || drv.Version != "1.5.0" || drv.Info.NodeID != "b-n1" {
		t.Errorf("b.csi registered as %+v", drv)
	}
	node, _ := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if got := node.Annotations[AnnotationNodeID]; got != `{"a.csi":"a-n1","b.csi":"b-n1"}` {
		t.Errorf("node ID annotation %q", got)
	}
	if node.Labels["topology.a.csi/zone"] != "z1" || node.Labels["shared/rack"] != "r1" {
		t.Errorf("labels %v", node.Labels)
	}
	cn, _ = client.StorageV1().CSINodes().Get(ctx, "n1", metav1.GetOptions{})
	if len(cn.Spec.Drivers) != 2 || cn.Spec.Drivers[0].Name != "a.csi" || *cn.Spec.Drivers[0].Allocatable.Count != 8 ||
		!reflect.DeepEqual(cn.Spec.Drivers[0].TopologyKeys, []string{"shared/rack", "topology.a.csi/zone"}) {
		t.Errorf("CSINode drivers %+v", cn.Spec.Drivers)
	}

	// A deregistration for an endpoint the driver no longer has is stale.
	d.DeRegisterPlugin(ctx, "a.csi", "/elsewhere.sock")
	if _, ok := d.Get("a.csi"); !ok {
		t.Fatal("a stale deregistration removed the driver")
	}
	d.DeRegisterPlugin(ctx, "a.csi", a)
	if _, ok := d.Get("a.csi"); ok || !reflect.DeepEqual(d.Names(), []string{"b.csi"}) {
		t.Errorf("drivers after deregistration: %v", d.Names())
	}
	node, _ = client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if got := node.Annotations[AnnotationNodeID]; got != `{"b.csi":"b-n1"}` {
		t.Errorf("node ID annotation after deregistration %q", got)
	}
	if _, ok := node.Labels["topology.a.csi/zone"]; ok || node.Labels["shared/rack"] != "r1" || node.Labels["kubernetes.io/hostname"] != "n1" {
		t.Errorf("labels after deregistration %v (b.csi still uses shared/rack)", node.Labels)
	}
	cn, _ = client.StorageV1().CSINodes().Get(ctx, "n1", metav1.GetOptions{})
	if len(cn.Spec.Drivers) != 1 || cn.Spec.Drivers[0].Name != "b.csi" {
		t.Errorf("CSINode drivers after deregistration %+v", cn.Spec.Drivers)
	}
}

// The kubelet rotates its client certificate and closes its API
// connections while a registration writes the Node and the CSINode: each
// write cut that way is made again, and the driver is registered, not
// refused (a refusal makes node-driver-registrar exit). A write that
// fails otherwise still refuses it.
func TestDriversWriteAgainWhenTheirConnectionIsClosed(t *testing.T) {
	ctx := context.Background()
	closed := &url.Error{Op: "Put", URL: "https://127.0.0.1:6443/", Err: &net.OpError{Op: "read", Net: "tcp", Err: net.ErrClosed}}
	client := fake.NewClientset(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "node-uid"}})
	cut := map[string]int{}
	for _, resource := range []string{"nodes", "csinodes"} {
		client.PrependReactor("update", resource, func(a k8stesting.Action) (bool, runtime.Object, error) {
			if cut[resource] < 1 {
				cut[resource]++
				return true, nil, closed
			}
			return false, nil, nil
		})
	}
	d := New(Options{NodeName: "n1", Client: client, CallTimeout: 5 * time.Second})
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	a := serveDriver(t, &nodeServer{resp: &csipb.NodeGetInfoResponse{NodeId: "a-n1"}})
	if err := d.RegisterPlugin(ctx, "a.csi", a, []string{"1.0.0"}); err != nil {
		t.Fatalf("RegisterPlugin = %v, want the cut writes made again", err)
	}
	if cut["nodes"] != 1 || cut["csinodes"] != 1 {
		t.Errorf("writes cut: %v, want one of each", cut)
	}
	node, _ := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	cn, _ := client.StorageV1().CSINodes().Get(ctx, "n1", metav1.GetOptions{})
	if node.Annotations[AnnotationNodeID] != `{"a.csi":"a-n1"}` || len(cn.Spec.Drivers) != 1 {
		t.Errorf("after registration: node annotations %v, CSINode drivers %+v", node.Annotations, cn.Spec.Drivers)
	}

	client.PrependReactor("update", "csinodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("etcdserver: request timed out")
	})
	b := serveDriver(t, &nodeServer{resp: &csipb.NodeGetInfoResponse{NodeId: "b-n1"}})
	if err := d.RegisterPlugin(ctx, "b.csi", b, []string{"1.0.0"}); err == nil || !strings.Contains(err.Error(), "request timed out") {
		t.Errorf("RegisterPlugin with a failing CSINode write = %v, want that failure", err)
	}
}

func TestDriversRefuse(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"topology.kubernetes.io/zone": "z9"}}})
	d := New(Options{NodeName: "n1", Client: client, CallTimeout: 300 * time.Millisecond})
	for _, tc := range []struct {
		name, endpoint string
		versions       []string
		err            string
	}{
		{"", "/x.sock", []string{"1.0.0"}, "needs a name"},
		{"a.csi", "/x.sock", []string{"0.3.0"}, "none of the CSI versions [0.3.0] is 1.x"},
	} {
		if err := d.ValidatePlugin(tc.name, tc.endpoint, tc.versions); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("ValidatePlugin(%q, %v) = %v, want %q", tc.name, tc.versions, err, tc.err)
		}
	}
	for _, tc := range []struct {
		name string
		srv  *nodeServer
		err  string
	}{
		{"no node ID", &nodeServer{resp: &csipb.NodeGetInfoResponse{}}, "NodeGetInfo returned no node ID"},
		{"never answers", &nodeServer{hang: true}, "NodeGetInfo: rpc error: code = DeadlineExceeded"},
		{"topology against the node's own label", &nodeServer{resp: &csipb.NodeGetInfoResponse{NodeId: "x",
			AccessibleTopology: &csipb.Topology{Segments: map[string]string{"topology.kubernetes.io/zone": "z1"}}}}, "conflicts with the node's topology.kubernetes.io/zone=z9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := d.RegisterPlugin(ctx, "a.csi", serveDriver(t, tc.srv), []string{"1.0.0"})
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "a.csi") {
				t.Errorf("RegisterPlugin = %v, want an error naming the driver and %q", err, tc.err)
			}
			if len(d.Names()) != 0 {
				t.Errorf("registered after a failure: %v", d.Names())
			}
		})
	}
	node, _ := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if _, ok := node.Annotations[AnnotationNodeID]; ok {
		t.Errorf("a refused driver left its annotation: %v", node.Annotations)
	}
}
