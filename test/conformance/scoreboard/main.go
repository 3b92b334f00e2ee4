// Command scoreboard turns upstream e2e runs into the conformance scoreboard:
// a page per spec set (docs/conformance-<set>.md) and the overview of every
// set (docs/conformance.md). hack/conformance.sh and hack/node-e2e.sh drive it:
//
//	scoreboard record  -junit junit_01.xml -set node -kubelet ours ... -out results.json
//	scoreboard report  -set node -results-dir test/conformance/results -out docs/conformance-node.md
//	scoreboard index   -results-dir test/conformance/results -out docs/conformance.md
//	scoreboard regexp  -names FILE | -exclusions FILE   (focus / skip regular expressions)
//	scoreboard check   -results results.json -names FILE (every listed spec passed)
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "record":
		err = cmdRecord(os.Args[2:])
	case "report":
		err = cmdReport(os.Args[2:])
	case "index":
		err = cmdIndex(os.Args[2:])
	case "regexp":
		err = cmdRegexp(os.Args[2:])
	case "check":
		err = cmdCheck(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "scoreboard %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: scoreboard record|report|index|regexp|check [flags] (see -h of each)")
	os.Exit(2)
}

func cmdRecord(args []string) error {
	fs := flag.NewFlagSet("record", flag.ExitOnError)
	junit := fs.String("junit", "", "the run's JUnit report (junit_01.xml)")
	set := fs.String("set", "node", "spec set name")
	suite := fs.String("suite", suiteDescription, "the suite's description, which Ginkgo prefixes to spec texts (e2e_node.test: "+nodeSuiteDescription+")")
	kubelet := fs.String("kubelet", "ours", "ours or upstream")
	focus := fs.String("focus", "", "the set's focus regular expression")
	skip := fs.String("skip", "", "the set's skip regular expression (without the exclusions)")
	exclusions := fs.String("exclusions", "", "exclusions file (test/conformance/exclusions.txt)")
	commit := fs.String("commit", "", "commit of this repository the run tested")
	kubeVersion := fs.String("kube-version", "", "version of the upstream suite")
	wall := fs.Float64("wall", 0, "wall time of the run, seconds")
	procs := fs.Int("procs", 0, "ginkgo processes")
	seed := fs.Int64("seed", 0, "ginkgo's random seed (the order of the specs)")
	out := fs.String("out", "", "results file to write")
	_ = fs.Parse(args)
	if *junit == "" || *out == "" {
		return fmt.Errorf("-junit and -out are required")
	}
	f, err := os.Open(*junit)
	if err != nil {
		return err
	}
	defer f.Close()
	ran, start, err := parseJUnit(f)
	if err != nil {
		return err
	}
	var excl []Exclusion
	if *exclusions != "" {
		b, err := os.ReadFile(*exclusions)
		if err != nil {
			return err
		}
		if excl, err = readExclusions(bytes.NewReader(b)); err != nil {
			return fmt.Errorf("%s: %w", *exclusions, err)
		}
	}
	res, err := Record(ran, *suite, *focus, *skip, excl)
	if err != nil {
		return err
	}
	if len(res.Specs) == 0 {
		return fmt.Errorf("%s: no spec of the set ran (%d specs in the report)", *junit, len(ran))
	}
	res.Set, res.Kubelet, res.Commit, res.KubeVersion = *set, *kubelet, *commit, *kubeVersion
	res.WallSeconds, res.Procs, res.Seed = *wall, *procs, *seed
	// The run's start as the JUnit report has it (the runner's clock, UTC
	// on these machines), so recording again later keeps the run's date.
	res.Date = time.Now().UTC().Format(dateLayout)
	if t, err := time.Parse("2006-01-02T15:04:05", start); err == nil {
		res.Date = t.Format(dateLayout)
	}
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		return err
	}
	if err := writeJSON(*out, res); err != nil {
		return err
	}
	t := res.Totals()
	fmt.Printf("%s kubelet, set %s: %d specs: %d passed, %d failed, %d skipped, %d excluded\n",
		*kubelet, *set, len(res.Specs), t[Passed], t[Failed], t[Skipped], t[Excluded])
	return nil
}

func cmdReport(args []string) error {
	fs := flag.NewFlagSet("report", flag.ExitOnError)
	set := fs.String("set", "node", "spec set name")
	setDoc := fs.String("set-doc", "", "one sentence describing the set")
	dir := fs.String("results-dir", "test/conformance/results", "where <set>.<kubelet>.json live")
	out := fs.String("out", "", "report to write (default docs/conformance-<set>.md)")
	_ = fs.Parse(args)
	if *out == "" {
		*out = "docs/conformance-" + *set + ".md"
	}
	runs := map[string]*Results{}
	for _, k := range kubelets {
		p := filepath.Join(*dir, *set+"."+k+".json")
		r, err := readResults(p)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return err
		}
		runs[k] = r
	}
	var buf bytes.Buffer
	if err := WriteReport(&buf, *set, runs, *setDoc); err != nil {
		return err
	}
	return os.WriteFile(*out, buf.Bytes(), 0o644)
}

func cmdRegexp(args []string) error {
	fs := flag.NewFlagSet("regexp", flag.ExitOnError)
	names := fs.String("names", "", "file of spec names: print one regular expression matching exactly them")
	exclusions := fs.String("exclusions", "", "exclusions file: print one regular expression a line, one per excluded spec")
	suite := fs.String("suite", suiteDescription, "the suite's description, which Ginkgo prefixes to spec texts (e2e_node.test: "+nodeSuiteDescription+")")
	_ = fs.Parse(args)
	switch {
	case *names != "":
		f, err := os.Open(*names)
		if err != nil {
			return err
		}
		defer f.Close()
		list, err := readNames(f)
		if err != nil {
			return err
		}
		if len(list) == 0 {
			return fmt.Errorf("%s lists no spec", *names)
		}
		res := make([]string, len(list))
		for i, n := range list {
			res[i] = exactRegexp(*suite, n)
		}
		fmt.Println(strings.Join(res, "|"))
	case *exclusions != "":
		f, err := os.Open(*exclusions)
		if err != nil {
			return err
		}
		defer f.Close()
		excl, err := readExclusions(f)
		if err != nil {
			return err
		}
		for _, e := range excl {
			fmt.Println(exactRegexp(*suite, e.Name))
		}
	default:
		return fmt.Errorf("-names or -exclusions is required")
	}
	return nil
}

func cmdCheck(args []string) error {
	fs := flag.NewFlagSet("check", flag.ExitOnError)
	results := fs.String("results", "", "results file of the run")
	names := fs.String("names", "", "file of the spec names that must have passed")
	_ = fs.Parse(args)
	r, err := readResults(*results)
	if err != nil {
		return err
	}
	f, err := os.Open(*names)
	if err != nil {
		return err
	}
	defer f.Close()
	want, err := readNames(f)
	if err != nil {
		return err
	}
	bad := Check(r, want)
	fmt.Printf("%d of %d listed specs passed\n", len(want)-len(bad), len(want))
	if len(bad) > 0 {
		for _, b := range bad {
			fmt.Println("  " + b)
		}
		return fmt.Errorf("%d listed specs did not pass", len(bad))
	}
	return nil
}

// Check returns, for each wanted spec that did not pass, a line saying what
// happened instead.
func Check(r *Results, want []string) []string {
	got := index(r)
	var bad []string
	for _, n := range want {
		s, ok := got[n]
		switch {
		case !ok:
			bad = append(bad, "NOT RUN "+n+" (renamed upstream, or filtered out)")
		case s.State != Passed:
			bad = append(bad, strings.ToUpper(s.State)+" "+n+": "+s.Cause)
		}
	}
	return bad
}
