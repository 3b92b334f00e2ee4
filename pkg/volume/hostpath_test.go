package volume

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestCheckHostPath(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "dir")
	os.Mkdir(dir, 0o755)
	file := filepath.Join(base, "file")
	os.WriteFile(file, nil, 0o644)
	sock := filepath.Join(base, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	missing := filepath.Join(base, "missing")
	for _, tc := range []struct {
		path string
		typ  v1.HostPathType
		err  string
	}{
		{missing, v1.HostPathUnset, ""},
		{dir, v1.HostPathDirectory, ""},
		{file, v1.HostPathDirectory, "is not a directory"},
		{missing, v1.HostPathDirectory, "does not exist"},
		{file, v1.HostPathFile, ""},
		{dir, v1.HostPathFile, "is not a file"},
		{sock, v1.HostPathSocket, ""},
		{file, v1.HostPathSocket, "is not a socket"},
		{"/dev/null", v1.HostPathCharDev, ""},
		{file, v1.HostPathCharDev, "is not a character device"},
		{"/dev/null", v1.HostPathBlockDev, "is not a block device"},
		{file, v1.HostPathDirectoryOrCreate, "is not a directory"},
		{dir, v1.HostPathFileOrCreate, "is a directory"},
		{file, "Bogus", "not a known type"},
		{"relative/path", v1.HostPathDirectory, "not an absolute path"},
	} {
		typ := tc.typ
		err := checkHostPath(tc.path, &typ)
		if (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s as %q: %v, want %q", tc.path, tc.typ, err, tc.err)
		}
	}
	// The OrCreate types create what is missing.
	d, f := filepath.Join(base, "new/dir"), filepath.Join(base, "new2/file")
	doc, foc := v1.HostPathDirectoryOrCreate, v1.HostPathFileOrCreate
	if err := checkHostPath(d, &doc); err != nil || !mode(t, d).IsDir() {
		t.Errorf("DirectoryOrCreate: %v", err)
	}
	if err := checkHostPath(f, &foc); err != nil || !mode(t, f).IsRegular() {
		t.Errorf("FileOrCreate: %v", err)
	}
}

func TestHostPathVolumeIsUsedInPlace(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	typ := v1.HostPathDirectory
	p := pod("u1", vol("h", v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: dir, Type: &typ}}))
	e.setUp(p)
	mnts, err := e.m.ContainerMounts(context.Background(), p, &p.Spec.Containers[0], nil)
	if err != nil || len(mnts) != 1 || mnts[0].HostPath != dir || mnts[0].ReadOnly {
		t.Fatalf("mounts %+v, %v", mnts, err)
	}
	os.WriteFile(filepath.Join(dir, "keep"), nil, 0o644)
	if err := e.m.TearDownPod(context.Background(), p.UID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "keep")); err != nil {
		t.Errorf("teardown touched the host path: %v", err)
	}
}
