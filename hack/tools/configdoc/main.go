// Command configdoc regenerates the tables of docs/configuration.md that
// the code can tell: the kubelet's flags, the upstream flags accepted only
// for compatibility, the upstream config fields this kubelet does not
// implement, and the feature gate table (pkg/config/features). Each sits
// between "<!-- configdoc:NAME:begin -->" and "<!-- configdoc:NAME:end -->"
// markers; the text around them is written by hand.
//
//	go run ./hack/tools/configdoc          rewrite docs/configuration.md
//	go run ./hack/tools/configdoc -check   fail when it is out of date
//
// TestDocIsCurrent runs the check in the unit tier.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/component-base/featuregate"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/gokubelet/kubelet/pkg/config/features"
	"github.com/gokubelet/kubelet/pkg/config/kubeletconfig"
)

func main() {
	check := flag.Bool("check", false, "fail when the doc is out of date instead of rewriting it")
	doc := flag.String("doc", "docs/configuration.md", "the file holding the tables")
	flag.Parse()
	old, err := os.ReadFile(*doc)
	if err != nil {
		fail(err)
	}
	updated, err := Update(old)
	if err != nil {
		fail(err)
	}
	if bytes.Equal(old, updated) {
		return
	}
	if *check {
		fail(fmt.Errorf("%s is out of date: run go run ./hack/tools/configdoc", *doc))
	}
	if err := os.WriteFile(*doc, updated, 0o644); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "configdoc:", err)
	os.Exit(1)
}

// Update returns doc with every generated section replaced.
func Update(doc []byte) ([]byte, error) {
	sections := map[string]string{
		"flags":         flagsTable(),
		"compat-flags":  compatFlags(),
		"unimplemented": unimplementedFields(),
		"feature-gates": gateTable(),
		"gate-summary":  gateSummary(),
	}
	out := string(doc)
	names := make([]string, 0, len(sections))
	for n := range sections {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		begin := "<!-- configdoc:" + name + ":begin -->\n"
		end := "<!-- configdoc:" + name + ":end -->"
		i := strings.Index(out, begin)
		j := strings.Index(out, end)
		if i < 0 || j < i {
			return nil, fmt.Errorf("no %q ... %q markers", strings.TrimSpace(begin), end)
		}
		out = out[:i+len(begin)] + sections[name] + out[j:]
	}
	return []byte(out), nil
}

func options() (*kubeletconfig.Options, *pflag.FlagSet) {
	fs := pflag.NewFlagSet("kubelet", pflag.ContinueOnError)
	o := kubeletconfig.NewOptions()
	o.AddFlags(fs)
	return o, fs
}

func cell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ")
}

// flagsTable lists the flags of --help: name, the config field it sets,
// the default and the help text.
func flagsTable() string {
	_, fs := options()
	var b strings.Builder
	b.WriteString("| Flag | Config field | Default | Meaning |\n| --- | --- | --- | --- |\n")
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		field := "–"
		if j, ok := kubeletconfig.ConfigFlagNames[f.Name]; ok {
			field = "`" + j + "`"
		}
		def := f.DefValue
		switch def {
		case "", "[]", "map[]":
			def = "none"
		default:
			def = "`" + def + "`"
		}
		name := "`--" + f.Name + "`"
		if f.Shorthand != "" {
			name = "`-" + f.Shorthand + "`, " + name
		}
		usage := f.Usage
		if f.Deprecated != "" {
			usage += " (deprecated: " + f.Deprecated + ")"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", name, field, cell(def), cell(usage))
	})
	return b.String()
}

// compatFlags lists the upstream flags accepted without being implemented.
func compatFlags() string {
	o, _ := options()
	names := o.CompatFlagNames()
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = "`--" + n + "`"
		if field, ok := kubeletconfig.CompatFlagFields[n]; ok {
			quoted[i] += " (`" + field + "`)"
		}
	}
	return fmt.Sprintf("%d flags: %s.\n", len(names), strings.Join(quoted, ", "))
}

// unimplementedFields lists the top-level upstream config fields outside
// ImplementedFields.
func unimplementedFields() string {
	t := reflect.TypeOf(kubeletv1beta1.KubeletConfiguration{})
	var out []string
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name == "" || name == "-" || kubeletconfig.IsImplemented(name) {
			continue
		}
		out = append(out, name)
	}
	sort.Strings(out)
	for i := range out {
		out[i] = "`" + out[i] + "`"
	}
	return fmt.Sprintf("%d fields: %s.\n", len(out), strings.Join(out, ", "))
}

// gateTable is features.Table with upstream's default, stage and lock.
func gateTable() string {
	specs := kubeletconfig.UpstreamFeatureGates()
	var b strings.Builder
	b.WriteString("| Gate | Upstream default | Here | Where | What |\n| --- | --- | --- | --- | --- |\n")
	for _, row := range features.Table {
		def := "not a gate of this upstream version (counts as on)"
		if spec, ok := specs[featuregate.Feature(row.Name)]; ok {
			def = fmt.Sprintf("%t (%s", spec.Default, spec.PreRelease)
			if spec.PreRelease == "" {
				def = fmt.Sprintf("%t (GA", spec.Default)
			}
			if spec.LockToDefault {
				def += ", locked"
			}
			def += ")"
		}
		where := row.Where
		if where == "" {
			where = "–"
		} else {
			where = "`" + where + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", row.Name, def, row.Status, cell(where), cell(row.What))
	}
	return b.String()
}

// gateSummary counts the table's rows by status.
func gateSummary() string {
	n := map[features.Status]int{}
	for _, row := range features.Table {
		n[row.Status]++
	}
	others := 0
	for name := range kubeletconfig.UpstreamFeatureGates() {
		if _, ok := features.Lookup(string(name)); !ok {
			others++
		}
	}
	return fmt.Sprintf("%d gates wired, %d lacking, %d locked on upstream; the other %d gates of the upstream kubelet touch no kubelet feature this kubelet behaves differently on.\n",
		n[features.Wired], n[features.Lacking], n[features.Locked], others)
}
