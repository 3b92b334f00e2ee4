package kubelet

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// checkSwap refuses to start when swap is on and failSwapOn is true, as the
// upstream kubelet does: pods' memory limits and eviction assume no swap.
func checkSwap(failSwapOn bool, swapsFile string) error {
	if !failSwapOn {
		return nil
	}
	devices, err := swapDevices(swapsFile)
	if err != nil {
		// No /proc/swaps (not Linux, or a kernel without swap): no swap.
		return nil
	}
	if len(devices) > 0 {
		return fmt.Errorf("running with swap on is not supported, please disable swap or set failSwapOn to false (--fail-swap-on=false); swap devices: %s", strings.Join(devices, ", "))
	}
	return nil
}

// swapDevices lists the swap devices in a /proc/swaps file.
func swapDevices(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	first := true
	for sc.Scan() {
		if first { // the header line
			first = false
			continue
		}
		if fields := strings.Fields(sc.Text()); len(fields) > 0 {
			out = append(out, fields[0])
		}
	}
	return out, sc.Err()
}
