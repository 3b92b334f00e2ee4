package mock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gokubelet/kubelet/internal/testing/eventually"
	"github.com/gokubelet/kubelet/pkg/errdefs"
	"github.com/gokubelet/kubelet/pkg/provider"
	"github.com/gokubelet/kubelet/pkg/provider/providertest"
)

func fast() Config {
	return Config{StartDelay: metav1.Duration{Duration: 10 * time.Millisecond}, StopDelay: metav1.Duration{Duration: 20 * time.Millisecond}}
}

func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Harness{
		New:     func(t *testing.T, node string) provider.Provider { return NewWithConfig(node, fast()) },
		Timeout: 10 * time.Second,
	})
}

// The polled variant passes the suite too, and offers no notifier.
func TestConformancePolled(t *testing.T) {
	p, err := New(context.Background(), provider.InitConfig{NodeName: "n", Config: []byte(`{"notifier": false, "startDelay": "10ms"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.(provider.PodNotifier); ok {
		t.Fatal("notifier: false must give a provider without NotifyPods")
	}
	providertest.Run(t, providertest.Harness{
		New: func(t *testing.T, node string) provider.Provider {
			p, _ := New(context.Background(), provider.InitConfig{NodeName: node, Config: []byte(`{"notifier": false, "startDelay": "10ms"}`)})
			return p
		},
		Timeout: 10 * time.Second,
	})
}

func TestParseConfig(t *testing.T) {
	for name, tc := range map[string]struct {
		raw  string
		want string
	}{
		"unknown field":  {`{"startDelay": "1s", "bogus": 1}`, "bogus"},
		"bad rate":       {`{"failureRate": {"create": 1.5}}`, "failureRate.create"},
		"bad class":      {`{"failureClass": "sometimes"}`, "failureClass"},
		"bad capacity":   {`{"capacity": {"cpu": "lots"}}`, "capacity[cpu]"},
		"negative delay": {`{"stopDelay": "-1s"}`, "stopDelay"},
		"bad usage":      {`{"usage": {"memory": "-1Mi"}}`, "usage.memory"},
	} {
		_, err := ParseConfig([]byte(tc.raw))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %q", name, err, tc.want)
		}
	}
	c, err := ParseConfig(nil)
	if err != nil || c.FailureClass != ClassRetryable {
		t.Errorf("defaults: %+v %v", c, err)
	}
}

// Injected failures carry the configured class and keep their cause.
func TestInjectedFailureClasses(t *testing.T) {
	for class, is := range map[string]func(error) bool{ClassRetryable: errdefs.IsRetryable, ClassInvalid: errdefs.IsInvalid, ClassTerminal: errdefs.IsTerminal} {
		c := fast()
		c.FailureRate.Create, c.FailureClass = 1, class
		p := NewWithConfig("n", c)
		err := p.CreatePod(context.Background(), &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "d", UID: "u"}})
		if !is(err) || !errors.Is(err, ErrInjected) {
			t.Errorf("class %s: %v", class, err)
		}
	}
}

// A pod that exits acts out its restart policy.
func TestExitAnnotations(t *testing.T) {
	p := NewWithConfig("n", fast())
	mk := func(name string, policy v1.RestartPolicy, code string) *v1.Pod {
		return &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "d", UID: types.UID("uid-" + name),
				Annotations: map[string]string{AnnotationExitAfter: "20ms", AnnotationExitCode: code}},
			Spec: v1.PodSpec{RestartPolicy: policy, Containers: []v1.Container{{Name: "c", Image: "i"}}},
		}
	}
	ctx := context.Background()
	for _, pod := range []*v1.Pod{mk("never-ok", v1.RestartPolicyNever, "0"), mk("never-bad", v1.RestartPolicyNever, "2"), mk("always", v1.RestartPolicyAlways, "1")} {
		if err := p.CreatePod(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	wait := func(name string, ok func(*v1.Pod) bool) {
		t.Helper()
		eventually.Seen(t, name+" in the state the test wants", func() (bool, string) {
			got, err := p.GetPod(ctx, "d", name)
			return err == nil && ok(got), fmt.Sprintf("%+v %v", got, err)
		})
	}
	wait("never-ok", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodSucceeded })
	wait("never-bad", func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodFailed && p.Status.ContainerStatuses[0].State.Terminated.ExitCode == 2
	})
	wait("always", func(p *v1.Pod) bool {
		cs := p.Status.ContainerStatuses[0]
		return p.Status.Phase == v1.PodRunning && cs.RestartCount >= 1 && cs.LastTerminationState.Terminated != nil
	})
	bad := mk("bad", v1.RestartPolicyNever, "x")
	if err := p.CreatePod(ctx, bad); !errdefs.IsInvalid(err) {
		t.Errorf("a bad exit-code annotation: %v, want invalid", err)
	}
}

// Without a start delay a pod is Running when CreatePod returns, told in
// one notification (not a Pending one followed at once by a Running one,
// which a kubelet would write as two status updates); with one, Pending is
// told first. The suite passes with no delay too.
func TestStartWithoutDelay(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		delay  time.Duration
		phases []v1.PodPhase
	}{
		{0, []v1.PodPhase{v1.PodRunning}},
		{20 * time.Millisecond, []v1.PodPhase{v1.PodPending, v1.PodRunning}},
	} {
		p := NewWithConfig("n", Config{StartDelay: metav1.Duration{Duration: c.delay}})
		got := make(chan *v1.Pod, 10)
		p.NotifyPods(ctx, func(pod *v1.Pod) { got <- pod })
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "d", UID: "uid-a"},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "i"}}}}
		if err := p.CreatePod(ctx, pod); err != nil {
			t.Fatal(err)
		}
		if c.delay == 0 {
			now, err := p.GetPod(ctx, "d", "a")
			if err != nil || now.Status.Phase != v1.PodRunning || now.Status.PodIP == "" || now.Status.ContainerStatuses[0].State.Running == nil {
				t.Fatalf("delay 0: not Running when CreatePod returned: %+v %v", now, err)
			}
		}
		for i, want := range c.phases {
			select {
			case n := <-got:
				if n.Status.Phase != want || n.UID != "uid-a" {
					t.Fatalf("delay %v: notification %d: phase %s uid %s, want %s", c.delay, i, n.Status.Phase, n.UID, want)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("delay %v: notification %d (%s) never came", c.delay, i, want)
			}
		}
		select {
		case n := <-got:
			t.Errorf("delay %v: one notification too many: %s", c.delay, n.Status.Phase)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func TestConformanceNoStartDelay(t *testing.T) {
	providertest.Run(t, providertest.Harness{
		New: func(t *testing.T, node string) provider.Provider {
			return NewWithConfig(node, Config{StopDelay: metav1.Duration{Duration: 20 * time.Millisecond}})
		},
		Timeout: 10 * time.Second,
	})
}

// The stats summary reports the configured usage of each running
// container, summed for the pod and the node; without a configured usage
// it reports no CPU or memory figures (no zeros that look measured).
func TestStatsSummaryReportsConfiguredUsage(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-p"},
		Spec: v1.PodSpec{NodeName: "n", Containers: []v1.Container{{Name: "a", Image: "i"}, {Name: "b", Image: "i"}}}}
	for _, tc := range []struct {
		name  string
		usage *Usage
	}{{"configured", &Usage{CPU: "100m", Memory: "64Mi"}}, {"none", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewWithConfig("n", Config{Usage: tc.usage})
			if err := p.CreatePod(context.Background(), pod.DeepCopy()); err != nil {
				t.Fatal(err)
			}
			eventually.Seen(t, "running", func() (bool, string) {
				got, err := p.GetPod(context.Background(), "ns", "p")
				return err == nil && got.Status.Phase == v1.PodRunning, fmt.Sprint(err)
			})
			s, err := p.GetStatsSummary(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Pods) != 1 || len(s.Pods[0].Containers) != 2 || s.Pods[0].PodRef.UID != "uid-p" {
				t.Fatalf("summary pods = %+v", s.Pods)
			}
			c := s.Pods[0].Containers[0]
			if tc.usage == nil {
				if c.CPU != nil || c.Memory != nil || s.Pods[0].CPU != nil || s.Node.CPU != nil {
					t.Errorf("no usage configured, yet figures: container %+v pod %+v node %+v", c.CPU, s.Pods[0].CPU, s.Node.CPU)
				}
				return
			}
			if *c.CPU.UsageNanoCores != 100_000_000 || *c.Memory.WorkingSetBytes != 64<<20 {
				t.Errorf("container usage %d nanocores, %d bytes", *c.CPU.UsageNanoCores, *c.Memory.WorkingSetBytes)
			}
			if *s.Pods[0].CPU.UsageNanoCores != 200_000_000 || *s.Node.Memory.WorkingSetBytes != 128<<20 {
				t.Errorf("pod cpu %d, node memory %d: want the sums", *s.Pods[0].CPU.UsageNanoCores, *s.Node.Memory.WorkingSetBytes)
			}
		})
	}
}
