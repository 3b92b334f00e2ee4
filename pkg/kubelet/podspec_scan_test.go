package kubelet

import (
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gokubelet/kubelet/internal/testing/typecheck"
)

const (
	modulePath = "github.com/gokubelet/kubelet"
	coreV1     = "k8s.io/api/core/v1"
)

// The scan of the kubelet's own code behind podspec_fields_test.go.

// productReads is what the kubelet's own non-test code does with the
// core/v1 types, found by type-checking every package of the module
// (go/types, with the compiler's export data for dependencies).
type productReads struct {
	// fields: "Type.Field" (the struct that declares the field, so a
	// promoted field counts for its embedded type) -> the packages (module
	// paths, e.g. "pkg/volume") that read it. Assignments to a field are
	// not reads.
	fields map[string]map[string]bool
	// conversions: "From->To" for each conversion between core/v1 types
	// (v1.Container(ec.EphemeralContainerCommon)) -> packages.
	conversions map[string]map[string]bool
	// uses: each package-level object used (named other than in its
	// declaration) -> the packages that use it. Objects of the module are
	// "pkg/path.Name", others "import/path.Name".
	uses map[string]map[string]bool
	// scope: "pkg/path.Name" of every package-level object of the module.
	scope map[string]bool
}

func scanProduct(t *testing.T) *productReads {
	t.Helper()
	_, pkgs := typecheck.Load(t, filepath.Join("..", ".."), func(path string) bool {
		return strings.HasPrefix(path, modulePath+"/") && !strings.HasPrefix(path, modulePath+"/internal/testing")
	}, "./cmd/...", "./pkg/...", "./internal/...")
	r := &productReads{fields: map[string]map[string]bool{}, conversions: map[string]map[string]bool{}, uses: map[string]map[string]bool{}, scope: map[string]bool{}}
	add := func(m map[string]map[string]bool, k, pkg string) {
		if m[k] == nil {
			m[k] = map[string]bool{}
		}
		m[k][pkg] = true
	}
	for _, p := range pkgs {
		rel := strings.TrimPrefix(p.ImportPath, modulePath+"/")
		files, info, pkg := p.Files, p.Info, p.Types
		for _, n := range pkg.Scope().Names() {
			r.scope[rel+"."+n] = true
		}
		written := map[*ast.SelectorExpr]bool{}
		for _, f := range files {
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.AssignStmt:
					if n.Tok == token.ASSIGN || n.Tok == token.DEFINE {
						for _, l := range n.Lhs {
							if s, ok := l.(*ast.SelectorExpr); ok {
								written[s] = true
							}
						}
					}
				case *ast.CallExpr:
					if len(n.Args) != 1 {
						break
					}
					tv, ok := info.Types[n.Fun]
					if !ok || !tv.IsType() {
						break
					}
					from, to := coreName(info.Types[n.Args[0]].Type), coreName(tv.Type)
					if from != "" && to != "" && from != to {
						add(r.conversions, from+"->"+to, rel)
					}
				}
				return true
			})
		}
		for sel, s := range info.Selections {
			if s.Kind() != types.FieldVal || written[sel] {
				continue
			}
			owner := fieldOwner(s)
			if owner != "" {
				add(r.fields, owner+"."+s.Obj().Name(), rel)
			}
		}
		for _, obj := range info.Uses {
			if obj.Pkg() == nil || obj.Parent() != obj.Pkg().Scope() {
				continue
			}
			add(r.uses, strings.TrimPrefix(obj.Pkg().Path(), modulePath+"/")+"."+obj.Name(), rel)
		}
	}
	if len(r.fields["PodSpec.Containers"]) == 0 {
		t.Fatal("found no read of PodSpec.Containers: the scan itself is broken")
	}
	return r
}

// coreName is "Container" for k8s.io/api/core/v1.Container (or a pointer to
// it), else "".
func coreName(t types.Type) string {
	if t == nil {
		return ""
	}
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := t.(*types.Named)
	if !ok || n.Obj().Pkg() == nil || n.Obj().Pkg().Path() != coreV1 {
		return ""
	}
	return n.Obj().Name()
}

// fieldOwner names the core/v1 struct that declares the selected field
// (following embedded fields), or "".
func fieldOwner(s *types.Selection) string {
	t := s.Recv()
	idx := s.Index()
	for _, i := range idx[:len(idx)-1] {
		st, ok := derefType(t).Underlying().(*types.Struct)
		if !ok {
			return ""
		}
		t = st.Field(i).Type()
	}
	return coreName(derefType(t))
}

func derefType(t types.Type) types.Type {
	if p, ok := t.(*types.Pointer); ok {
		return p.Elem()
	}
	return t
}
