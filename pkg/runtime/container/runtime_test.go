package container

import (
	"errors"
	"testing"
	"time"
)

func TestSyncResult(t *testing.T) {
	backoff := StepResult{Action: ActionStart, Container: "a", Err: errors.New("back-off"), Reason: "CrashLoopBackOff", RetryAfter: 20 * time.Second}
	pullBackoff := StepResult{Action: ActionPull, Container: "b", Err: errors.New("pull"), Reason: "ImagePullBackOff", RetryAfter: 5 * time.Second}
	started := StepResult{Action: ActionStart, Container: "c"}
	failed := StepResult{Action: ActionStart, Container: "d", Err: errors.New("boom"), Reason: "RunContainerError"}

	if (SyncResult{}).Changed() || (SyncResult{Steps: []StepResult{backoff, pullBackoff}}).Changed() {
		t.Errorf("back-off only counted as a change")
	}
	if !(SyncResult{Steps: []StepResult{backoff, started}}).Changed() || !(SyncResult{Steps: []StepResult{failed}}).Changed() {
		t.Errorf("a real step not counted as a change")
	}
	r := SyncResult{Steps: []StepResult{backoff, pullBackoff, started, failed}}
	if got := r.RetryAfter(); got != 5*time.Second {
		t.Errorf("RetryAfter = %v, want the earliest, 5s", got)
	}
	w := r.WaitingReasons()
	if w["a"].Reason != "CrashLoopBackOff" || w["d"].Reason != "RunContainerError" || w["c"] != (WaitingReason{}) {
		t.Errorf("waiting reasons: %+v", w)
	}
	if r.Error() == nil || (SyncResult{Steps: []StepResult{started}}).Error() != nil {
		t.Errorf("Error() wrong")
	}
}
