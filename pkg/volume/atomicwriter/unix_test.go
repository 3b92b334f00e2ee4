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

func linkOwnerUID(t *testing.T, p string) int {
	t.Helper()
	st, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("%s is not a link", p)
	}
	return int(st.Sys().(*syscall.Stat_t).Uid)
}
