package kubelet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckSwap(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	header := "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"
	none := write("none", header)
	on := write("on", header+"/swapfile                               file\t\t1048572\t\t0\t\t-2\n")
	if err := checkSwap(true, none); err != nil {
		t.Errorf("no swap: %v", err)
	}
	if err := checkSwap(true, on); err == nil || !strings.Contains(err.Error(), "/swapfile") || !strings.Contains(err.Error(), "failSwapOn") {
		t.Errorf("swap on, failSwapOn true: %v, want an error naming the device and the setting", err)
	}
	if err := checkSwap(false, on); err != nil {
		t.Errorf("swap on, failSwapOn false: %v", err)
	}
	if err := checkSwap(true, filepath.Join(dir, "missing")); err != nil {
		t.Errorf("no swaps file: %v", err)
	}
}
