package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
)

// Results is one kubelet's last run of one spec set, as kept in
// test/conformance/results/<set>.<kubelet>.json.
type Results struct {
	Set         string  `json:"set"`
	Kubelet     string  `json:"kubelet"`         // "ours" or "upstream"
	Suite       string  `json:"suite,omitempty"` // the suite's description (suiteDescription, nodeSuiteDescription); see SuiteDescription
	KubeVersion string  `json:"kubeVersion"`
	Commit      string  `json:"commit"`
	Date        string  `json:"date"` // UTC, "2006-01-02 15:04" (dateLayout)
	WallSeconds float64 `json:"wallSeconds"`
	Procs       int     `json:"procs"`
	// Seed is Ginkgo's random seed, which sets the order of the specs; two
	// kubelets run with one seed met the specs in the same order. Zero:
	// not recorded (runs before the harness fixed it).
	Seed  int64  `json:"seed,omitempty"`
	Focus string `json:"focus"`
	Skip  string `json:"skip"`
	Specs []Spec `json:"specs"`
}

// dateLayout is the layout of Results.Date.
const dateLayout = "2006-01-02 15:04"

// Spec is one selected spec's outcome.
type Spec struct {
	Name     string  `json:"name"`
	State    string  `json:"state"` // Passed, Failed, Skipped, Excluded
	Seconds  float64 `json:"seconds,omitempty"`
	Cause    string  `json:"cause,omitempty"`    // one line: failure cause, skip or exclusion reason
	Category string  `json:"category,omitempty"` // failures only
	Message  string  `json:"message,omitempty"`  // failures: the message, first lines
	Evidence string  `json:"evidence,omitempty"` // failures: the kubelet's first failure event, or a failed call of its API
}

// Totals counts specs by state.
func (r *Results) Totals() map[string]int {
	t := map[string]int{}
	for _, s := range r.Specs {
		t[s.State]++
	}
	return t
}

// Exclusion is a spec left out of every run by name, with the reason.
type Exclusion struct {
	Name   string
	Reason string
}

// readExclusions reads test/conformance/exclusions.txt: "reason: TEXT" lines
// set the reason for the "spec: FULL NAME" lines that follow; '#' starts a
// comment line.
func readExclusions(r io.Reader) ([]Exclusion, error) {
	var out []Exclusion
	reason := ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		l := strings.TrimSpace(sc.Text())
		switch {
		case l == "" || strings.HasPrefix(l, "#"):
		case strings.HasPrefix(l, "reason:"):
			reason = strings.TrimSpace(strings.TrimPrefix(l, "reason:"))
		case strings.HasPrefix(l, "spec:"):
			if reason == "" {
				return nil, fmt.Errorf("line %d: spec without a reason before it", n)
			}
			out = append(out, Exclusion{Name: strings.TrimSpace(strings.TrimPrefix(l, "spec:")), Reason: reason})
		default:
			return nil, fmt.Errorf("line %d: want 'reason: ...' or 'spec: ...', got %q", n, l)
		}
	}
	return out, sc.Err()
}

// readNames reads a list of spec names, one a line; '#' starts a comment line.
func readNames(r io.Reader) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out, sc.Err()
}

// A suite's description prefixes every spec text Ginkgo matches focus and
// skip against ("<suite description> <spec text>"): e2e.test's and
// e2e_node.test's.
const (
	suiteDescription     = "Kubernetes e2e suite"
	nodeSuiteDescription = "E2eNode Suite"
)

// SuiteDescription is the description of the suite the run ran. Results
// recorded before they named it say nothing: those of the set node-e2e come
// from e2e_node.test (hack/node-e2e.sh is the only script that records it),
// every other set's from e2e.test.
func (r *Results) SuiteDescription() string {
	switch {
	case r.Suite != "":
		return r.Suite
	case r.Set == "node-e2e":
		return nodeSuiteDescription
	}
	return suiteDescription
}

// suiteBinary names the upstream test binary of a suite description.
func suiteBinary(desc string) string {
	switch desc {
	case suiteDescription:
		return "e2e.test"
	case nodeSuiteDescription:
		return "e2e_node.test"
	}
	return desc
}

// exactRegexp matches exactly the spec of the suite with the given full name.
//
// The name is the JUnit report's, which joins every container's text with a
// space, an empty one too ("... DiskPressure  should ..." where a Context
// has no text); Ginkgo matches focus and skip against the texts that are
// not empty, joined the same way ("... DiskPressure should ..."). So a run
// of spaces in the name matches one or more.
func exactRegexp(suite, name string) string {
	return "^" + spaceRuns.ReplaceAllString(regexp.QuoteMeta(suite+" "+name), " +") + "$"
}

var spaceRuns = regexp.MustCompile(` {2,}`)

// selected reports whether Ginkgo's focus and skip select name in suite.
func selected(suite, name string, focus, skip *regexp.Regexp) bool {
	text := suite + " " + name
	return (focus == nil || focus.MatchString(text)) && (skip == nil || !skip.MatchString(text))
}

// Record turns a run's JUnit specs into Results: the specs the set's focus
// and skip select, each passed, failed, skipped at run time (with Ginkgo's
// reason) or excluded (with the exclusion's reason). A selected spec missing
// from the report counts as failed: nothing silently disappears.
func Record(ran []ranSpec, suite, focus, skip string, excl []Exclusion) (*Results, error) {
	var fre, sre *regexp.Regexp
	var err error
	if focus != "" {
		if fre, err = regexp.Compile(focus); err != nil {
			return nil, fmt.Errorf("focus: %w", err)
		}
	}
	if skip != "" {
		if sre, err = regexp.Compile(skip); err != nil {
			return nil, fmt.Errorf("skip: %w", err)
		}
	}
	excluded := map[string]string{}
	for _, e := range excl {
		excluded[e.Name] = e.Reason
	}
	res := &Results{Suite: suite, Focus: focus, Skip: skip}
	seen := map[string]bool{}
	for _, r := range ran {
		if !selected(suite, r.Name, fre, sre) || seen[r.Name] {
			continue
		}
		seen[r.Name] = true
		s := Spec{Name: r.Name, Seconds: r.Seconds}
		if reason, ok := excluded[r.Name]; ok {
			s.State, s.Cause, s.Seconds = Excluded, reason, 0
			res.Specs = append(res.Specs, s)
			continue
		}
		switch r.State {
		case Passed:
			s.State = Passed
		case Skipped:
			s.State, s.Cause = Skipped, Cause(r.Message)
		case Failed:
			// What the kubelet said (a failure event) or a failed call of
			// its API explains a generic message ("Timed out ...") best.
			hint := r.Event
			if hint == "" {
				hint = r.API
			}
			s.State, s.Cause, s.Category, s.Message = Failed, Cause(r.Message), Category(r.Message+"\n"+hint), firstLines(r.Message, 12)
			if hint != "" {
				s.Evidence = Cause(hint)
			}
		default:
			s.State, s.Cause, s.Category = Failed, "selected but not run (missing from the report)", "not run"
		}
		res.Specs = append(res.Specs, s)
	}
	sort.Slice(res.Specs, func(i, j int) bool { return res.Specs[i].Name < res.Specs[j].Name })
	return res, nil
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = append(lines[:n], "…")
	}
	return strings.Join(lines, "\n")
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func readResults(path string) (*Results, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Results
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}
