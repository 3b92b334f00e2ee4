// Package typecheck type-checks this module's own packages for the tests
// that hold a list against what the product code really reads (the
// KubeletConfiguration ImplementedFields check, the pod spec field walker).
// Dependencies come from the compiler's export data (go list -export), so
// only the module's packages are parsed and checked here.
package typecheck

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
	"testing"
)

// Package is one type-checked package.
type Package struct {
	ImportPath string
	Types      *types.Package
	Files      []*ast.File
	// Info has Selections, Types and Uses filled in.
	Info *types.Info
}

type listed struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Export     string
}

// Load lists patterns (e.g. "./pkg/...") in the module rooted at root,
// with their dependencies, and type-checks the non-test files of each
// listed package whose import path keep accepts. It fails t on any error:
// a check built on a partial load would pass for the wrong reason.
func Load(t testing.TB, root string, keep func(importPath string) bool, patterns ...string) (*token.FileSet, []Package) {
	t.Helper()
	root, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"list", "-export", "-deps", "-json=ImportPath,Dir,GoFiles,Export"}, patterns...)
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	exports := map[string]string{}
	var ours []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		exports[p.ImportPath] = p.Export
		if keep(p.ImportPath) {
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
	var pkgs []Package
	for _, p := range ours {
		var files []*ast.File
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		info := &types.Info{
			Selections: map[*ast.SelectorExpr]*types.Selection{},
			Types:      map[ast.Expr]types.TypeAndValue{},
			Uses:       map[*ast.Ident]types.Object{},
		}
		conf := types.Config{Importer: imp.(types.ImporterFrom)}
		tp, err := conf.Check(p.ImportPath, fset, files, info)
		if err != nil {
			t.Fatalf("type-checking %s: %v", p.ImportPath, err)
		}
		pkgs = append(pkgs, Package{ImportPath: p.ImportPath, Types: tp, Files: files, Info: info})
	}
	return fset, pkgs
}
