package kubeletconfig

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

const modulePath = "github.com/gokubelet/kubelet"

// TestImplementedFieldsAreRead keeps ImplementedFields honest: every field
// it lists must be read, as a field of a KubeletConfiguration value, by
// code outside this package (cmd/ and the rest of pkg/). The check
// type-checks the kubelet's packages (go/types, with the compiler's export
// data for dependencies) and collects every selector whose receiver is
// k8s.io/kubelet/config/v1beta1.KubeletConfiguration; this package's own
// reads (defaults, validation, warnings) do not count.
func TestImplementedFieldsAreRead(t *testing.T) {
	read := configFieldsRead(t)
	goName := jsonToGoNames()
	var unread []string
	for _, f := range ImplementedFields {
		if f == "apiVersion" || f == "kind" || honouredInThisPackage[f] {
			continue
		}
		g, ok := goName[f]
		if !ok {
			t.Errorf("ImplementedFields lists %q, which is not a KubeletConfiguration field", f)
			continue
		}
		if !read[g] {
			unread = append(unread, f)
		}
	}
	if len(unread) > 0 {
		t.Errorf("ImplementedFields lists fields that nothing outside pkg/config/kubeletconfig reads (remove them, or make the kubelet honour them): %v", unread)
	}
	var extra []string
	for g := range read {
		if j := goToJSON(goName, g); j != "" && !IsImplemented(j) {
			extra = append(extra, j)
		}
	}
	sort.Strings(extra)
	t.Logf("read but not listed as implemented (reading is not honouring; listed for review): %v", extra)
}

func jsonToGoNames() map[string]string {
	out := map[string]string{}
	t := reflect.TypeOf(kubeletv1beta1.KubeletConfiguration{})
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out[name] = f.Name
		}
	}
	return out
}

func goToJSON(m map[string]string, g string) string {
	for j, n := range m {
		if n == g {
			return j
		}
	}
	return ""
}

type listedPackage struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Export     string
}

// configFieldsRead returns the Go names of the KubeletConfiguration fields
// selected anywhere in cmd/ and pkg/ outside this package.
func configFieldsRead(t *testing.T) map[string]bool {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-export", "-deps", "-json=ImportPath,Dir,GoFiles,Export", "./cmd/...", "./pkg/...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	exports := map[string]string{}
	var ours []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		exports[p.ImportPath] = p.Export
		if strings.HasPrefix(p.ImportPath, modulePath+"/") && !strings.HasPrefix(p.ImportPath, modulePath+"/pkg/config/") {
			ours = append(ours, p)
		}
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, os.ErrNotExist
		}
		return os.Open(f)
	})
	read := map[string]bool{}
	for _, p := range ours {
		var files []*ast.File
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		info := &types.Info{Selections: map[*ast.SelectorExpr]*types.Selection{}}
		conf := types.Config{Importer: imp.(types.ImporterFrom)}
		if _, err := conf.Check(p.ImportPath, fset, files, info); err != nil {
			t.Fatalf("type-checking %s: %v", p.ImportPath, err)
		}
		for _, sel := range info.Selections {
			if sel.Kind() != types.FieldVal {
				continue
			}
			recv := sel.Recv()
			if ptr, ok := recv.(*types.Pointer); ok {
				recv = ptr.Elem()
			}
			named, ok := recv.(*types.Named)
			if !ok || named.Obj().Pkg() == nil {
				continue
			}
			if named.Obj().Pkg().Path() == "k8s.io/kubelet/config/v1beta1" && named.Obj().Name() == "KubeletConfiguration" {
				read[sel.Obj().Name()] = true
			}
		}
	}
	if len(read) == 0 {
		t.Fatal("found no read of any KubeletConfiguration field: the check itself is broken")
	}
	return read
}
