package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryLinksNoForbiddenPackage keeps out of the kubelet binary what it
// must not link: k8s.io/kubernetes (never imported into the product) and
// client-go's shared informer factory, which links every API group's
// informers and listers (9 MB of the stripped binary); informers come from
// their own group's package (k8s.io/client-go/informers/core/v1, ...).
func TestBinaryLinksNoForbiddenPackage(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	forbidden := func(p string) bool {
		return p == "k8s.io/kubernetes" || strings.HasPrefix(p, "k8s.io/kubernetes/") || p == "k8s.io/client-go/informers"
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		n++
		for _, imp := range fields[1:] {
			if forbidden(imp) {
				t.Errorf("%s imports %s, which the kubelet binary must not link", fields[0], imp)
			}
		}
	}
	if n < 100 {
		t.Fatalf("go list gave %d packages: not the kubelet's dependencies", n)
	}
}
