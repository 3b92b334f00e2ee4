package images

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	critest "k8s.io/cri-api/pkg/apis/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

func pod() *v1.Pod {
	p := &v1.Pod{}
	p.Name, p.Namespace, p.UID = "web", "default", "uid-1"
	return p
}

func TestEnsureImage(t *testing.T) {
	cases := []struct {
		name       string
		image      string
		policy     v1.PullPolicy
		present    []string
		pullErr    error
		wantReason string
		wantPull   bool
		wantEvent  string
	}{
		{name: "IfNotPresent and present: no pull", image: "registry.k8s.io/pause:3.10.2", policy: v1.PullIfNotPresent, present: []string{"registry.k8s.io/pause:3.10.2"}, wantEvent: "Normal Pulled Container image"},
		{name: "IfNotPresent and absent: pull", image: "example.com/a:1", policy: v1.PullIfNotPresent, wantPull: true, wantEvent: "Normal Pulled Successfully pulled"},
		{name: "Always pulls even when present", image: "example.com/a:1", policy: v1.PullAlways, present: []string{"example.com/a:1"}, wantPull: true},
		{name: "Never and absent", image: "example.com/a:1", policy: v1.PullNever, wantReason: ReasonErrImageNeverPull, wantEvent: "Warning ErrImageNeverPull"},
		{name: "Never and present", image: "example.com/a:1", policy: v1.PullNever, present: []string{"example.com/a:1"}},
		{name: "invalid name", image: "UPPER/Case:x", policy: v1.PullIfNotPresent, wantReason: ReasonInvalidImageName, wantEvent: "Warning InspectFailed"},
		{name: "pull fails", image: "example.com/a:1", policy: v1.PullIfNotPresent, pullErr: errors.New("not found"), wantPull: true, wantReason: ReasonErrImagePull, wantEvent: "Warning Failed Failed to pull image"},
		{name: "untagged defaults to Always and :latest", image: "example.com/a", wantPull: true, present: []string{"example.com/a:latest"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			svc := critest.NewFakeImageService()
			svc.SetFakeImages(tc.present)
			if tc.pullErr != nil {
				svc.InjectError("PullImage", tc.pullErr)
			}
			rec := record.NewFakeRecorder(20)
			p := NewPuller(Options{Service: svc, Recorder: rec, Serialize: true})
			c := &v1.Container{Name: "c", Image: tc.image, ImagePullPolicy: tc.policy}
			ref, err := p.EnsureImage(context.Background(), pod(), c, nil)
			gotReason := ""
			if e, ok := AsError(err); ok {
				gotReason = e.Reason
			} else if err != nil {
				t.Fatalf("unexpected error type %v", err)
			}
			if gotReason != tc.wantReason {
				t.Fatalf("reason %q, want %q (err %v)", gotReason, tc.wantReason, err)
			}
			if err == nil && ref == "" {
				t.Fatalf("empty image ref")
			}
			pulled := strings.Contains(strings.Join(svc.Called, ","), "PullImage")
			if pulled != tc.wantPull {
				t.Fatalf("pulled=%v want %v; calls %v", pulled, tc.wantPull, svc.Called)
			}
			if tc.wantEvent != "" {
				var all []string
				for len(rec.Events) > 0 {
					all = append(all, <-rec.Events)
				}
				found := false
				for _, e := range all {
					if strings.HasPrefix(e, tc.wantEvent) {
						found = true
					}
				}
				if !found {
					t.Fatalf("no event %q in %q", tc.wantEvent, all)
				}
			}
		})
	}
}

func TestPullBackOff(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	svc := critest.NewFakeImageService()
	p := NewPuller(Options{Service: svc, Clock: clk})
	c := &v1.Container{Name: "c", Image: "example.com/a:1", ImagePullPolicy: v1.PullIfNotPresent}
	reason := func() string {
		_, err := p.EnsureImage(context.Background(), pod(), c, nil)
		if e, ok := AsError(err); ok {
			return e.Reason
		}
		return ""
	}
	svc.InjectError("PullImage", errors.New("boom"))
	if r := reason(); r != ReasonErrImagePull {
		t.Fatalf("first: %q", r)
	}
	clk.Step(5 * time.Second)
	if r := reason(); r != ReasonImagePullBackOff {
		t.Fatalf("within 10s: %q", r)
	}
	clk.Step(5 * time.Second)
	svc.InjectError("PullImage", errors.New("boom"))
	if r := reason(); r != ReasonErrImagePull {
		t.Fatalf("after 10s: %q", r)
	}
	clk.Step(15 * time.Second)
	if r := reason(); r != ReasonImagePullBackOff {
		t.Fatalf("second delay is 20s: %q", r)
	}
	clk.Step(5 * time.Second)
	if r := reason(); r != "" {
		t.Fatalf("after 20s the pull succeeds: %q", r)
	}
}
