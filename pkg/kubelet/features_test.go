package kubelet

import (
	"context"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

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

// The configuration's start warnings (e.g. the gates on whose feature this
// kubelet lacks) are Warning events on the node, not only log lines.
func TestConfigWarningsAreNodeEvents(t *testing.T) {
	rec := record.NewFakeRecorder(4)
	reportConfigWarnings(rec, &v1.ObjectReference{Kind: "Node", Name: "n1"}, []string{"feature gates on whose feature this kubelet lacks: A", "flag --x is ignored"})
	for _, want := range []string{"lacks: A", "--x"} {
		select {
		case e := <-rec.Events:
			if !strings.HasPrefix(e, "Warning "+EventConfigurationWarning+" ") || !strings.Contains(e, want) {
				t.Errorf("event %q, want a %s warning with %q", e, EventConfigurationWarning, want)
			}
		default:
			t.Fatalf("no event for %q", want)
		}
	}
}
