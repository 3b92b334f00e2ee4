package kubelet

import (
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"testing"
)

// The kubelet lowers its own OOM score as upstream does; where the kernel
// refuses (negative values on these machines), it logs why and starts.
func TestOOMScoreAdjRefusal(t *testing.T) {
	pathErr := func(errno syscall.Errno) error {
		return &fs.PathError{Op: "write", Path: selfOOMScoreAdjPath, Err: errno}
	}
	for _, tc := range []struct {
		name  string
		value int32
		err   error
		want  string // substring of the cause; "" means no refusal
	}{
		{"set", -999, nil, ""},
		{"negative refused (EACCES), as on these machines", -999, pathErr(syscall.EACCES), "negative OOM score"},
		{"negative refused (EPERM)", -999, pathErr(syscall.EPERM), "negative OOM score"},
		{"positive refused: a privilege problem, not the negative-score rule", 500, pathErr(syscall.EACCES), "lacks the privilege"},
		{"no procfs", -999, pathErr(syscall.ENOENT), "no procfs"},
		{"anything else names the error", -999, fmt.Errorf("disk on fire"), "disk on fire"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := oomScoreAdjRefusal(tc.value, tc.err)
			if tc.want == "" {
				if got != "" {
					t.Errorf("no error, yet a refusal: %q", got)
				}
				return
			}
			if !strings.Contains(got, tc.want) || !strings.Contains(got, fmt.Sprint(tc.value)) {
				t.Errorf("cause %q: want it to contain %q and the value %d", got, tc.want, tc.value)
			}
		})
	}
}
