package framework

import (
	"strings"
	"syscall"
	"testing"
)

// A pinned kubelet refuses to be stopped or started until every test that
// pinned it has ended.
func TestPinnedKubeletRefusesStartAndStop(t *testing.T) {
	k := &Kubelet{Bin: "/bin/true"}
	t.Run("pinned", func(t *testing.T) {
		k.Pin(t)
		err := k.Signal(syscall.SIGTERM)
		if err == nil || !strings.Contains(err.Error(), "TestPinnedKubeletRefusesStartAndStop/pinned") {
			t.Errorf("Signal of a pinned kubelet: %v, want an error naming the test that pinned it", err)
		}
	})
	if err := k.Signal(syscall.SIGTERM); err != nil {
		t.Errorf("Signal once the pinning test ended: %v", err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := k.pinnedLocked("starting"); err != nil {
		t.Errorf("start once the pinning test ended: %v", err)
	}
}
