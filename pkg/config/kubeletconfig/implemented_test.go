package kubeletconfig

import (
	"go/types"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/gokubelet/kubelet/internal/testing/typecheck"
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

// configFieldsRead returns the Go names of the KubeletConfiguration fields
// selected anywhere in cmd/ and pkg/ outside this package.
func configFieldsRead(t *testing.T) map[string]bool {
	t.Helper()
	_, pkgs := typecheck.Load(t, filepath.Join("..", "..", ".."), func(path string) bool {
		return strings.HasPrefix(path, modulePath+"/") && !strings.HasPrefix(path, modulePath+"/pkg/config/")
	}, "./cmd/...", "./pkg/...")
	read := map[string]bool{}
	for _, p := range pkgs {
		info := p.Info
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
