package main

import (
	"math"
	"os"
	"testing"
	"time"
)

func TestSecondsSince(t *testing.T) {
	start := time.Unix(100, 0)
	if got := secondsSince(start, time.Unix(101, 500_000_000)); got != 1.5 {
		t.Errorf("secondsSince = %v, want 1.5", got)
	}
	if got := secondsSince(start, time.Time{}); !math.IsNaN(got) {
		t.Errorf("secondsSince(unset) = %v, want NaN", got)
	}
}

// The test binary itself is an ELF file: its loaded image is positive and
// smaller than the file, which also holds symbols and DWARF.
func TestLoadedImageMB(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	mb, err := loadedImageMB(exe)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(exe)
	if err != nil {
		t.Fatal(err)
	}
	if mb <= 0 || mb*1e6 >= float64(fi.Size()) {
		t.Errorf("loaded image %.1f MB of a %d-byte file", mb, fi.Size())
	}
	if _, err := loadedImageMB("/proc/self/status"); err == nil {
		t.Error("a text file has no loaded image")
	}
}
