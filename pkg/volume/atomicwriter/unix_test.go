package atomicwriter

import (
	"os"
	"syscall"
	"testing"
)

func syscallUmask(m int) int { return syscall.Umask(m) }

func ownerUID(t *testing.T, p string) int {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return int(st.Sys().(*syscall.Stat_t).Uid)
}
