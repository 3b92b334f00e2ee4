package checkpoint

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// The files in testdata were written by upstream kubelet 1.37.2's
// device manager checkpoint code (checkpoint.New(...).MarshalCheckpoint()),
// run from the module proxy's k8s.io/kubernetes v1.37.2: one with two
// entries (with and without NUMA nodes) and two resources, one as a fresh
// kubelet writes it.
func TestReadsAndWritesUpstreamFiles(t *testing.T) {
	for _, name := range []string{"upstream-1.37.2.json", "upstream-1.37.2-empty.json"} {
		t.Run(name, func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join("testdata", name))
			if err != nil {
				t.Fatal(err)
			}
			entries, registered, err := Decode(want)
			if err != nil {
				t.Fatalf("upstream's file does not verify: %v", err)
			}
			got, err := Encode(entries, registered)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("re-encoded file differs from upstream's:\n got %s\nwant %s", got, want)
			}
		})
	}
}

func TestDecodeRefusesATamperedFile(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "upstream-1.37.2.json"))
	if err != nil {
		t.Fatal(err)
	}
	tampered := bytes.Replace(b, []byte(`"Dev-1"]},"AllocResp"`), []byte(`"Dev-9"]},"AllocResp"`), 1)
	if bytes.Equal(tampered, b) {
		t.Fatal("test fixture changed: nothing replaced")
	}
	if _, _, err := Decode(tampered); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Decode = %v, want ErrCorrupt", err)
	}
	if _, _, err := Decode([]byte("{")); err == nil {
		t.Fatal("Decode accepted broken JSON")
	}
}

func TestWriteThenRead(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := Read(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Read of a missing file = %v, want ErrNotExist", err)
	}
	entries := []PodDevicesEntry{{PodUID: "u", ContainerName: "c", ResourceName: "example.com/r", DeviceIDs: DevicesPerNUMA{NoTopology: {"a", "b"}}, AllocResp: []byte{1, 2}}}
	reg := map[string][]string{"example.com/r": {"a", "b", "c"}}
	if err := Write(dir, entries, reg); err != nil {
		t.Fatal(err)
	}
	gotE, gotR, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(gotE) != 1 || gotE[0].PodUID != "u" || len(gotE[0].DeviceIDs[NoTopology]) != 2 || len(gotR["example.com/r"]) != 3 {
		t.Fatalf("read back %+v %v", gotE, gotR)
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".*"))
	if len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}
