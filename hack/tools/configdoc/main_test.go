package main

import (
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/gokubelet/kubelet/pkg/config/kubeletconfig"
)

const docPath = "../../../docs/configuration.md"

// The generated tables of docs/configuration.md match the code (run
// go run ./hack/tools/configdoc after changing flags, ImplementedFields or
// the gate table).
func TestDocIsCurrent(t *testing.T) {
	doc, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	updated, err := Update(doc)
	if err != nil {
		t.Fatal(err)
	}
	if string(updated) != string(doc) {
		t.Errorf("docs/configuration.md is out of date: run go run ./hack/tools/configdoc")
	}
}

// The hand-written table "Implemented config fields and their defaults"
// names exactly the fields of ImplementedFields (its rows carry the
// defaults and validation written by hand, so it is checked, not
// generated).
func TestImplementedFieldsTable(t *testing.T) {
	doc, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	i := strings.Index(s, "## Implemented config fields and their defaults")
	if i < 0 {
		t.Fatal("no implemented fields section")
	}
	s = s[i:]
	if j := strings.Index(s[3:], "\n## "); j >= 0 {
		s = s[:j+3]
	}
	inDoc := map[string]bool{}
	name := regexp.MustCompile("`([a-zA-Z0-9.]+)`")
	for _, line := range strings.Split(s, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		first := strings.Split(line, "|")[1]
		for _, m := range name.FindAllStringSubmatch(first, -1) {
			top, _, _ := strings.Cut(m[1], ".")
			inDoc[top] = true
		}
	}
	var missing, extra []string
	for _, f := range kubeletconfig.ImplementedFields {
		if f == "apiVersion" || f == "kind" {
			continue
		}
		if !inDoc[f] {
			missing = append(missing, f)
		}
		delete(inDoc, f)
	}
	for f := range inDoc {
		extra = append(extra, f)
	}
	sort.Strings(extra)
	if len(missing) > 0 || len(extra) > 0 {
		t.Errorf("the implemented fields table lacks %v and lists fields that are not implemented %v", missing, extra)
	}
}
