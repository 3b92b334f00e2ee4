package cgroups

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// PSIData is one line of a pressure file: the share of wall time, in
// percent, that tasks were stalled over the last 10, 60 and 300 seconds,
// and the total stall time in microseconds.
type PSIData struct {
	Total                uint64
	Avg10, Avg60, Avg300 float64
}

// PSI is one pressure file (cpu.pressure, memory.pressure, io.pressure).
// Some is the time at least one task was stalled, Full the time all
// non-idle tasks were stalled at once. Full is nil when the kernel wrote no
// full line: cpu.pressure had none before Linux 5.13.
type PSI struct {
	Some PSIData
	Full *PSIData
}

// Pressure is a cgroup's pressure stall information; a nil part could not
// be read (no pressure file: a kernel without PSI or booted with psi=0, a
// v1 host without a cgroup2 mount, a cgroup runc did not put there).
type Pressure struct {
	CPU, Memory, IO *PSI
}

// ParsePSI parses a pressure file:
//
//	some avg10=0.00 avg60=0.00 avg300=0.00 total=123
//	full avg10=0.00 avg60=0.00 avg300=0.00 total=45
//
// A some line is required, a full line optional. A some or full line
// lacking one of the four values, or with one that does not parse, makes
// the whole file an error: a part is never reported as zero. Lines of other
// kinds and keys other than the four are ignored.
func ParsePSI(content string) (PSI, error) {
	var out PSI
	haveSome := false
	for _, line := range strings.Split(content, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || (f[0] != "some" && f[0] != "full") {
			continue
		}
		d, err := parsePSILine(f[1:])
		if err != nil {
			return PSI{}, fmt.Errorf("%s line: %w", f[0], err)
		}
		if f[0] == "some" {
			out.Some, haveSome = d, true
		} else {
			out.Full = &d
		}
	}
	if !haveSome {
		return PSI{}, fmt.Errorf("no some line")
	}
	return out, nil
}

func parsePSILine(fields []string) (PSIData, error) {
	var d PSIData
	const avg10, avg60, avg300, total = 1, 2, 4, 8
	seen := 0
	for _, kv := range fields {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return d, fmt.Errorf("%q is not key=value", kv)
		}
		var avg *float64
		switch k {
		case "avg10":
			avg, seen = &d.Avg10, seen|avg10
		case "avg60":
			avg, seen = &d.Avg60, seen|avg60
		case "avg300":
			avg, seen = &d.Avg300, seen|avg300
		case "total":
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return d, fmt.Errorf("total: %w", err)
			}
			d.Total, seen = n, seen|total
		}
		if avg != nil {
			x, err := strconv.ParseFloat(v, 64)
			if err != nil || math.IsNaN(x) || x < 0 || x > 100 {
				return d, fmt.Errorf("%s=%s is not a percentage", k, v)
			}
			*avg = x
		}
	}
	if seen != avg10|avg60|avg300|total {
		return d, fmt.Errorf("avg10, avg60, avg300 and total are not all there")
	}
	return d, nil
}

// psiDir is the directory holding the cgroup's pressure files: its own on
// v2, the same path under the cgroup2 mount on a v1 hybrid host, "" on a v1
// host without one.
func (r *Reader) psiDir(cgPath string) string {
	if r.h.Version == 2 {
		return r.dir("", cgPath)
	}
	if r.h.PSIRoot == "" {
		return ""
	}
	return filepath.Join(r.root, r.h.PSIRoot, cgPath)
}

// ReadPSI reads the cgroup's cpu, memory and io pressure. The root cgroup
// ("/") falls back to the system-wide /proc/pressure files for a part its
// own files do not give.
func (r *Reader) ReadPSI(cgPath string) Pressure {
	dir := r.psiDir(cgPath)
	isRoot := cgPath == "/" || cgPath == ""
	read := func(res string) *PSI {
		if dir != "" {
			if p := readPSIFile(filepath.Join(dir, res+".pressure")); p != nil {
				return p
			}
		}
		if isRoot {
			return readPSIFile(filepath.Join(r.root, "/proc/pressure", res))
		}
		return nil
	}
	return Pressure{CPU: read("cpu"), Memory: read("memory"), IO: read("io")}
}

// readPSIFile is nil when the file cannot be read (absent, or EOPNOTSUPP
// from a kernel whose PSI is off) or does not parse.
func readPSIFile(path string) *PSI {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	p, err := ParsePSI(string(b))
	if err != nil {
		return nil
	}
	return &p
}
