package kubelet

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"

	"github.com/gokubelet/kubelet/pkg/config/kubeletconfig"
)

// The kubelet API is assembled from the configuration: off with
// enableServer false; a port in use fails the start with the API named.
func TestNewKubeletAPI(t *testing.T) {
	settings := func(mut func(c *kubeletv1beta1.KubeletConfiguration)) *kubeletconfig.Settings {
		c := kubeletconfig.NewDefaultConfig()
		c.Address = "127.0.0.1"
		c.Authorization.Mode = kubeletv1beta1.KubeletAuthorizationModeAlwaysAllow
		c.Authentication.Webhook.Enabled = ptr.To(false)
		mut(c)
		return &kubeletconfig.Settings{Config: c, NodeName: "n1", CertDir: t.TempDir()}
	}
	ctx := context.Background()
	events := record.NewFakeRecorder(10)
	parts := apiParts{recorder: events, nodeRef: &v1.ObjectReference{Kind: "Node", Name: "n1"}}

	out, err := newKubeletAPI(ctx, settings(func(c *kubeletv1beta1.KubeletConfiguration) { c.EnableServer = ptr.To(false) }), parts)
	if err != nil || len(out) != 0 {
		t.Fatalf("enableServer false: %v, %v", out, err)
	}

	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	port := int32(taken.Addr().(*net.TCPAddr).Port)
	_, err = newKubeletAPI(ctx, settings(func(c *kubeletv1beta1.KubeletConfiguration) { c.Port = port }), parts)
	if err == nil || !strings.Contains(err.Error(), "kubelet API") {
		t.Fatalf("port in use: err = %v, want the kubelet API named", err)
	}

	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port = int32(free.Addr().(*net.TCPAddr).Port)
	free.Close()
	out, err = newKubeletAPI(ctx, settings(func(c *kubeletv1beta1.KubeletConfiguration) { c.Port = port }), parts)
	if err != nil || len(out) != 1 || out[0].name != "kubelet-api" {
		t.Fatalf("got %v, %v; want the kubelet API alone", out, err)
	}
	closeServers(out)
	// Standalone with webhook authentication off and no client CA: the
	// setting that cannot work is reported as an event on the node.
	select {
	case e := <-events.Events:
		if !strings.Contains(e, "KubeletAPISecurity") {
			t.Errorf("event = %q", e)
		}
	default:
		t.Error("no event for a security setting that cannot take effect")
	}
	// Released: the port can be bound again.
	l, err := net.Listen("tcp", taken.Addr().String()[:strings.LastIndex(taken.Addr().String(), ":")]+":"+strconv.Itoa(int(port)))
	if err != nil {
		t.Fatalf("the kubelet API's port was not released: %v", err)
	}
	l.Close()
}

// /configz carries the configuration's apiVersion and kind, as upstream's
// (its node e2e spec "should return APIVersion and Kind fields in
// /configz"), even for a kubelet configured on flags alone.
func TestConfigzTypeMeta(t *testing.T) {
	c := kubeletconfig.NewDefaultConfig()
	c.APIVersion, c.Kind = "", ""
	got, ok := configz(c).(*kubeletv1beta1.KubeletConfiguration)
	if !ok {
		t.Fatalf("configz = %T", configz(c))
	}
	if got.APIVersion != "kubelet.config.k8s.io/v1beta1" || got.Kind != "KubeletConfiguration" {
		t.Errorf("apiVersion %q kind %q", got.APIVersion, got.Kind)
	}
	if c.APIVersion != "" {
		t.Error("configz changed the kubelet's own configuration")
	}
}
