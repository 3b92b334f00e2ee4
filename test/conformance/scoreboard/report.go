package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// Kubelets in report column order.
var kubelets = []string{"ours", "upstream"}

func columnTitle(k string, r *Results) string {
	if k == "upstream" {
		v := ""
		if r != nil {
			v = " " + r.KubeVersion
		}
		return "upstream kubelet" + v
	}
	return "our kubelet"
}

// WriteReport renders a set's page, docs/conformance-<set>.md, from the last
// results of each kubelet (either may be nil: its column then says "not run").
func WriteReport(w io.Writer, set string, runs map[string]*Results, setDoc string) error {
	var first *Results
	for _, k := range kubelets {
		if runs[k] != nil {
			first = runs[k]
			break
		}
	}
	if first == nil {
		return fmt.Errorf("no results for set %q", set)
	}
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }

	p("# Conformance scoreboard\n\n")
	p("Written by `make conformance` (hack/conformance.sh) from the results in\n")
	p("`test/conformance/results/`; do not edit. Every set at a glance:\n")
	p("[conformance.md](conformance.md). How to run it, what the run\n")
	p("needs and how the figures are counted: [conformance-run.md](conformance-run.md).\n\n")
	if first.SuiteDescription() == nodeSuiteDescription {
		p("Upstream's node end-to-end suite (`e2e_node.test`) %s, set `%s`: %s\n", first.KubeVersion, set, setDoc)
		p("(focus `%s`, skip `%s`). The suite runs its own API server and starts the\n", mdCode(first.Focus), mdCode(first.Skip))
		p("kubelet binary itself: our kubelet and, for comparison, the upstream kubelet of\n")
		p("the same version, on the same machine and containerd (hack/node-e2e.sh).\n\n")
	} else {
		p("The upstream end-to-end suite %s, set `%s`: %s\n", first.KubeVersion, set, setDoc)
		p("(focus `%s`, skip `%s`), run against the local cluster with our kubelet\n", mdCode(first.Focus), mdCode(first.Skip))
		p("and, for comparison, with the upstream kubelet of the same version on the\n")
		p("same cluster, machine and containerd.\n\n")
	}

	// Totals.
	p("| | %s | %s |\n|---|---|---|\n", columnTitle("ours", runs["ours"]), columnTitle("upstream", runs["upstream"]))
	row := func(label string, f func(r *Results) string) {
		p("| %s |", label)
		for _, k := range kubelets {
			if r := runs[k]; r != nil {
				p(" %s |", f(r))
			} else {
				p(" not run |")
			}
		}
		p("\n")
	}
	row("date (UTC)", func(r *Results) string { return r.Date })
	row("commit", func(r *Results) string { return "`" + r.Commit + "`" })
	row("specs selected", func(r *Results) string { return fmt.Sprint(len(r.Specs)) })
	for _, st := range []string{Passed, Failed, Skipped, Excluded} {
		st := st
		row("**"+st+"**", func(r *Results) string { return fmt.Sprint(r.Totals()[st]) })
	}
	row("wall time", wallTime)
	row("spec order (Ginkgo seed)", seedText)
	p("\n")
	if runs["ours"] != nil && runs["upstream"] != nil {
		if n := orderNote(runs["ours"], runs["upstream"]); n != "" {
			p("%s\n\n", n)
		}
	}

	// Failures of ours by category.
	if runs["ours"] != nil {
		if causes := failureCauses(runs["ours"], runs["upstream"]); len(causes) > 0 {
			p("## Our failures by cause\n\n")
			p("Grouped by what the failure message points at (rules in\n")
			p("`test/conformance/scoreboard/cause.go`).\n\n")
			writeCauses(w, causes, runs["upstream"] != nil)
			p("\n")
		}
	}

	// Every spec that is not a pass in some column.
	names := map[string]bool{}
	for _, k := range kubelets {
		if r := runs[k]; r != nil {
			for _, s := range r.Specs {
				if s.State == Failed || s.State == Skipped {
					names[s.Name] = true
				}
			}
		}
	}
	if len(names) > 0 {
		p("## Specs that do not pass\n\n")
		p("Each with its one-line cause, from the JUnit failure message (unique\n")
		p("names, addresses and durations replaced by `<n>`, `<ip>`, `<t>`). A\n")
		p("failure with our kubelet alone is ours to fix; one in both columns points\n")
		p("at the environment or the suite.\n\n")
		p("| spec | %s | %s |\n|---|---|---|\n", columnTitle("ours", runs["ours"]), columnTitle("upstream", runs["upstream"]))
		sorted := make([]string, 0, len(names))
		for n := range names {
			sorted = append(sorted, n)
		}
		sort.Strings(sorted)
		idx := map[string]map[string]Spec{}
		for _, k := range kubelets {
			idx[k] = index(runs[k])
		}
		for _, n := range sorted {
			p("| %s |", mdCell(n))
			for _, k := range kubelets {
				if runs[k] == nil {
					p(" not run |")
					continue
				}
				s, ok := idx[k][n]
				switch {
				case !ok:
					p(" not selected |")
				case s.State == Passed:
					p(" pass |")
				case s.State == Failed && s.Evidence != "":
					p(" **FAIL**: %s — %s |", mdCell(s.Cause), mdCell(s.Evidence))
				case s.State == Failed:
					p(" **FAIL**: %s |", mdCell(s.Cause))
				case s.State == Skipped:
					p(" skipped: %s |", mdCell(s.Cause))
				case s.State == Excluded:
					p(" excluded |")
				}
			}
			p("\n")
		}
		p("\n")
	}

	// Exclusions (the same list applies to both kubelets).
	if excl := exclusionsOf(runs); len(excl) > 0 {
		p("## Excluded by name\n\n")
		p("Specs that need something this machine cannot have; listed with the reason in\n")
		p("`test/conformance/%s` and skipped by exact name for both kubelets.\n\n", exclusionsFile(first))
		writeExclusions(w, excl)
		p("\n")
	}
	return nil
}

// seedText is a run's Ginkgo seed, or that the run did not record one.
func seedText(r *Results) string {
	if r.Seed == 0 {
		return "random, not recorded"
	}
	return fmt.Sprint(r.Seed)
}

func wallTime(r *Results) string {
	procs := "processes"
	if r.Procs == 1 {
		procs = "process"
	}
	return fmt.Sprintf("%s (%d ginkgo %s)", (time.Duration(r.WallSeconds) * time.Second).String(), r.Procs, procs)
}

// causeCount is one failure category of our kubelet's run: how many specs
// fail with it, and how many of those the upstream kubelet passes.
type causeCount struct {
	Category     string
	Specs        int
	UpstreamPass int
}

// failureCauses groups the failures of ours by category, most specs first
// (upstream may be nil).
func failureCauses(ours, upstream *Results) []causeCount {
	counts := map[string]*causeCount{}
	up := index(upstream)
	for _, s := range ours.Specs {
		if s.State != Failed {
			continue
		}
		c := counts[s.Category]
		if c == nil {
			c = &causeCount{Category: s.Category}
			counts[s.Category] = c
		}
		c.Specs++
		if u, ok := up[s.Name]; ok && u.State == Passed {
			c.UpstreamPass++
		}
	}
	out := make([]causeCount, 0, len(counts))
	for _, c := range counts {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Specs != out[j].Specs {
			return out[i].Specs > out[j].Specs
		}
		return out[i].Category < out[j].Category
	})
	return out
}

// writeCauses writes the "Our failures by cause" table; the upstream column
// says "–" when the upstream kubelet has not run.
func writeCauses(w io.Writer, causes []causeCount, upstreamRan bool) {
	fmt.Fprintf(w, "| cause | specs | of which the upstream kubelet passes |\n|---|---|---|\n")
	for _, c := range causes {
		up := "–"
		if upstreamRan {
			up = fmt.Sprint(c.UpstreamPass)
		}
		fmt.Fprintf(w, "| %s | %d | %s |\n", mdCell(c.Category), c.Specs, up)
	}
}

// exclusionsOf returns the excluded specs of the runs, each once, by name.
func exclusionsOf(runs map[string]*Results) []Spec {
	var excl []Spec
	seen := map[string]bool{}
	for _, k := range kubelets {
		if r := runs[k]; r != nil {
			for _, s := range r.Specs {
				if s.State == Excluded && !seen[s.Name] {
					seen[s.Name] = true
					excl = append(excl, s)
				}
			}
		}
	}
	sort.Slice(excl, func(i, j int) bool { return excl[i].Name < excl[j].Name })
	return excl
}

func writeExclusions(w io.Writer, excl []Spec) {
	fmt.Fprintf(w, "| spec | reason |\n|---|---|\n")
	for _, s := range excl {
		fmt.Fprintf(w, "| %s | %s |\n", mdCell(s.Name), mdCell(s.Cause))
	}
}

func index(r *Results) map[string]Spec {
	m := map[string]Spec{}
	if r != nil {
		for _, s := range r.Specs {
			m[s.Name] = s
		}
	}
	return m
}

// mdCell escapes text for a Markdown table cell.
func mdCell(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	s = strings.ReplaceAll(s, "|", `\|`)
	s = strings.ReplaceAll(s, "<", "&lt;")
	s = strings.ReplaceAll(s, ">", "&gt;")
	return s
}

// mdCode makes text safe inside a `code span` in a table or paragraph.
func mdCode(s string) string {
	return strings.ReplaceAll(s, "`", "'")
}

// exclusionsFile names the exclusions list of the run's suite (the
// harnesses read exclusions.txt for e2e.test, exclusions-node-e2e.txt for
// e2e_node.test).
func exclusionsFile(r *Results) string {
	if r.SuiteDescription() == nodeSuiteDescription {
		return "exclusions-node-e2e.txt"
	}
	return "exclusions.txt"
}
