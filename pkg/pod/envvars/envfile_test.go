package envvars

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gokubelet/kubelet/pkg/errdefs"
)

func TestParseEnvFile(t *testing.T) {
	for _, tc := range []struct {
		name, file, key string
		want            string
		found           bool
		err             string
	}{
		{name: "a value", file: "A='1'\nB='two'\n", key: "B", want: "two", found: true},
		{name: "not there", file: "A='1'\n", key: "B"},
		{name: "empty file", file: "", key: "A"},
		{name: "comments, blank lines, leading blanks", file: "# c\n\n   \t A='x'\n", key: "A", want: "x", found: true},
		{name: "a comment after the quote", file: "A='x'   # why\n", key: "A", want: "x", found: true},
		{name: "first definition wins", file: "A='1'\nA='2'\n", key: "A", want: "1", found: true},
		{name: "multi-line value", file: "M='one\ntwo\nthree'\nN='n'\n", key: "M", want: "one\ntwo\nthree", found: true},
		{name: "after a multi-line value", file: "M='one\ntwo'\nN='n'\n", key: "N", want: "n", found: true},
		{name: "= and # inside quotes", file: "A='a=b # c'\n", key: "A", want: "a=b # c", found: true},
		{name: "empty quotes count as not defined", file: "A=''\n", key: "A"},
		{name: "a blank after = makes it empty", file: "A= 'x'\nB='b'\n", key: "A"},
		{name: "a blank after = of another key is skipped", file: "A= 'x'\nB='b'\n", key: "B", want: "b", found: true},
		{name: "names may hold any printable character but =", file: "my.var-1='v'\n", key: "my.var-1", want: "v", found: true},
		{name: "no =", file: "A\n", key: "A", err: "line 1: no '='"},
		{name: "empty name", file: "='x'\n", key: "A", err: "line 1: empty variable name"},
		{name: "blank before =", file: "A ='x'\n", key: "A", err: "line 1: blank before '='"},
		{name: "unquoted value", file: "A=x\n", key: "A", err: "line 1: the value is not in single quotes"},
		{name: "double quotes", file: "A=\"x\"\n", key: "A", err: "not in single quotes"},
		{name: "no value", file: "A=\n", key: "A", err: "not in single quotes"},
		{name: "text after the quote", file: "A='x' y\n", key: "A", err: "line 1: text after the closing quote"},
		{name: "never closed", file: "A='x\ny\n", key: "A", err: "line 1: the quote is never closed"},
		{name: "an error before the key is found", file: "bad\nA='x'\n", key: "A", err: "line 1"},
		{name: "a line over the limit", file: "A='" + strings.Repeat("x", maxEnvFileLine+1) + "'\n", key: "A", err: "too long"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, found, err := ParseEnvFile(strings.NewReader(tc.file), tc.key)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, errEnvFile) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want || found != tc.found {
				t.Errorf("= %q, %v, %v; want %q, %v", got, found, err, tc.want, tc.found)
			}
		})
	}
}

// The path is resolved inside the volume: no way out by "..", an absolute
// path or a symbolic link the pod wrote.
func TestFileKeyValue(t *testing.T) {
	root := t.TempDir()
	vol := filepath.Join(root, "vol")
	outside := filepath.Join(root, "outside.env")
	for p, content := range map[string]string{
		filepath.Join(vol, "config.env"):     "K='inside'\n",
		filepath.Join(vol, "sub/nested.env"): "K='nested'\n",
		outside:                              "K='outside'\n",
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(vol, "escape.env")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("config.env", filepath.Join(vol, "alias.env")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, want string
		fails      bool
	}{
		{path: "config.env", want: "inside"},
		{path: "sub/nested.env", want: "nested"},
		{path: "alias.env", want: "inside"},
		{path: "escape.env", fails: true},
		{path: "../outside.env", fails: true},
		{path: outside, fails: true},
		{path: "", fails: true},
		{path: "missing.env", fails: true},
	} {
		got, found, err := FileKeyValue(vol, &v1.FileKeySelector{VolumeName: "v", Path: tc.path, Key: "K"})
		if tc.fails {
			if err == nil {
				t.Errorf("path %q: got %q, want an error", tc.path, got)
			}
			continue
		}
		if err != nil || !found || got != tc.want {
			t.Errorf("path %q: = %q, %v, %v; want %q", tc.path, got, found, err, tc.want)
		}
	}
}

func TestResolveFileKeyRef(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	files := map[string]string{"config.env": "DB='postgres'\nEMPTY=''\n"}
	in := Inputs{FileKey: func(ref *v1.FileKeySelector) (string, bool, error) {
		content, ok := files[ref.Path]
		if !ok {
			return "", false, errors.New("no such file")
		}
		return ParseEnvFile(strings.NewReader(content), ref.Key)
	}}
	env := func(path, key string, optional *bool) *v1.Container {
		return &v1.Container{Name: "c", Env: []v1.EnvVar{
			{Name: "FIRST", Value: "1"},
			{Name: "FROM_FILE", ValueFrom: &v1.EnvVarSource{FileKeyRef: &v1.FileKeySelector{VolumeName: "v", Path: path, Key: key, Optional: optional}}},
			{Name: "REF", Value: "$(FROM_FILE)"},
		}}
	}
	got, err := Resolve(pod, env("config.env", "DB", nil), in)
	if err != nil {
		t.Fatal(err)
	}
	want := []v1.EnvVar{{Name: "FIRST", Value: "1"}, {Name: "FROM_FILE", Value: "postgres"}, {Name: "REF", Value: "postgres"}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("env = %v, want %v", got, want)
	}

	// A key that is missing (or empty) is an error unless optional, which
	// leaves the variable out.
	for _, key := range []string{"NOPE", "EMPTY"} {
		if _, err := Resolve(pod, env("config.env", key, nil), in); err == nil || !errdefs.IsNotFound(err) || !strings.Contains(err.Error(), `key "`+key+`" not found`) {
			t.Errorf("key %s: error %v, want a NotFound naming the key", key, err)
		}
		got, err := Resolve(pod, env("config.env", key, ptr.To(true)), in)
		if err != nil || len(got) != 2 || got[1].Name != "REF" || got[1].Value != "$(FROM_FILE)" {
			t.Errorf("optional key %s: = %v, %v; want FROM_FILE left out", key, got, err)
		}
	}
	// A file not there yet is an error, optional or not: it is retried.
	for _, optional := range []*bool{nil, ptr.To(true)} {
		if _, err := Resolve(pod, env("later.env", "DB", optional), in); err == nil || !errdefs.IsNotFound(err) {
			t.Errorf("missing file (optional %v): error %v, want NotFound", optional, err)
		}
	}
}
