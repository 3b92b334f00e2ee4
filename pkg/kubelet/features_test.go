package kubelet

import (
	"context"
	"reflect"
	"testing"

	"github.com/gokubelet/kubelet/pkg/config/features"
	"github.com/gokubelet/kubelet/pkg/config/kubeletconfig"
	"github.com/gokubelet/kubelet/pkg/server"
)

// InPlacePodVerticalScaling off: no allocation is kept, so the engine and
// the runtime resize nothing in place; on (the default), both get it.
func TestInPlacePodVerticalScalingGate(t *testing.T) {
	ctx := context.Background()
	s := &kubeletconfig.Settings{RootDir: t.TempDir()}
	alloc, actuated, err := newAllocation(ctx, s)
	if err != nil || alloc == nil || actuated == nil {
		t.Fatalf("default: %v %v %v", alloc, actuated, err)
	}
	s.Features = s.Features.With(features.InPlacePodVerticalScaling, false)
	alloc, actuated, err = newAllocation(ctx, s)
	if err != nil || alloc != nil || actuated != nil {
		t.Fatalf("gate off: allocation %v, actuated %v (a typed nil in the interface would still resize), err %v", alloc, actuated, err)
	}
}

// KubeletFineGrainedAuthz off: /pods, /healthz and /configz are
// authorized as nodes/proxy alone.
func TestKubeletFineGrainedAuthzGate(t *testing.T) {
	s := &kubeletconfig.Settings{Config: kubeletconfig.NewDefaultConfig(), NodeName: "n1"}
	for _, tc := range []struct {
		gates features.Gates
		want  []string
	}{
		{features.Gates{}, []string{"pods", "proxy"}},
		{features.Gates{}.With(features.KubeletFineGrainedAuthz, false), []string{"proxy"}},
	} {
		s.Features = tc.gates
		cfg := handlerConfig(s, apiParts{}, nil)
		if got := server.Subresources("/pods", cfg.Routes, cfg.FineGrainedAuthz); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("gate %v: /pods authorized as %v, want %v", tc.gates.Enabled(features.KubeletFineGrainedAuthz), got, tc.want)
		}
	}
}

// ReloadKubeletServerCertificateFile off: the serving pair is read once
// (server.TLSOptions.StaticCertFile; pkg/server tests what that does).
func TestReloadKubeletServerCertificateFileGate(t *testing.T) {
	s := &kubeletconfig.Settings{Config: kubeletconfig.NewDefaultConfig(), NodeName: "n1"}
	if servingTLSOptions(s).StaticCertFile {
		t.Error("default: the certificate files are not reloaded")
	}
	s.Features = s.Features.With(features.ReloadKubeletServerCertificateFile, false)
	if !servingTLSOptions(s).StaticCertFile {
		t.Error("gate off: the certificate files are still reloaded")
	}
}
