package metrics

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const thisPackage = "github.com/gokubelet/kubelet/pkg/metrics"

// feedMethods are the calls that give a metric a value.
var feedMethods = map[string]bool{
	"WithLabelValues": true, "With": true, "Inc": true, "Dec": true, "Add": true, "Sub": true,
	"Set": true, "SetToCurrentTime": true, "Observe": true,
}

// metricVars are the package-level metrics of this package: the variables
// initialised by a component-base constructor (metrics.NewCounterVec, ...).
func metricVars(t *testing.T) []string {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, pkg := range pkgs {
		for _, f := range pkg.Files {
			for _, decl := range f.Decls {
				gd, ok := decl.(*ast.GenDecl)
				if !ok || gd.Tok != token.VAR {
					continue
				}
				for _, spec := range gd.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, name := range vs.Names {
						if i >= len(vs.Values) || !name.IsExported() {
							continue
						}
						call, ok := vs.Values[i].(*ast.CallExpr)
						if !ok {
							continue
						}
						if sel, ok := call.Fun.(*ast.SelectorExpr); ok && strings.HasPrefix(sel.Sel.Name, "New") {
							if x, ok := sel.X.(*ast.Ident); ok && x.Name == "metrics" {
								out = append(out, name.Name)
							}
						}
					}
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// fedVars walks the kubelet's non-test Go files under root and returns the
// metrics of this package some code gives a value to
// (metrics.Evictions.WithLabelValues(...).Inc(), CgroupVersion.Set(...)).
func fedVars(t *testing.T, root string) map[string][]string {
	t.Helper()
	fed := map[string][]string{}
	fset := token.NewFileSet()
	for _, dir := range []string{"pkg", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			inPackage := filepath.Dir(path) == filepath.Join(root, "pkg", "metrics")
			local := ""
			for _, imp := range f.Imports {
				if p, _ := strconv.Unquote(imp.Path.Value); p == thisPackage {
					local = "metrics"
					if imp.Name != nil {
						local = imp.Name.Name
					}
				}
			}
			if !inPackage && local == "" {
				return nil
			}
			ast.Inspect(f, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok || !feedMethods[sel.Sel.Name] {
					return true
				}
				switch x := sel.X.(type) {
				case *ast.SelectorExpr: // metrics.Var.Method
					if id, ok := x.X.(*ast.Ident); ok && !inPackage && id.Name == local {
						fed[x.Sel.Name] = append(fed[x.Sel.Name], path)
					}
				case *ast.Ident: // Var.Method inside this package
					if inPackage {
						fed[x.Name] = append(fed[x.Name], path)
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return fed
}

// TestEveryMetricIsFed: a metric registered but given a value by no code
// is a dashboard that stays empty (kubelet_evictions was one); every
// package-level metric must be fed somewhere in the kubelet's own code,
// tests aside.
func TestEveryMetricIsFed(t *testing.T) {
	vars := metricVars(t)
	if len(vars) < 20 {
		t.Fatalf("found only %d metrics in the package: %v", len(vars), vars)
	}
	fed := fedVars(t, filepath.Join("..", ".."))
	for _, v := range vars {
		if len(fed[v]) == 0 {
			t.Errorf("metric %s is registered but nothing in cmd/ or pkg/ gives it a value", v)
		}
	}
}
