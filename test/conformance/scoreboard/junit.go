package main

import (
	"encoding/xml"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// The JUnit XML that the upstream e2e framework writes with --report-dir
// (junit_01.xml, Ginkgo's reporter with the failure message attribute
// omitted: the message is the first part of the failure's text).
type junitSuites struct {
	Suites []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name  string      `xml:"name,attr"`
	Cases []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name    string       `xml:"name,attr"`
	Status  string       `xml:"status,attr"`
	Time    float64      `xml:"time,attr"`
	Skipped *junitSkip   `xml:"skipped"`
	Failure *junitResult `xml:"failure"`
	Error   *junitResult `xml:"error"`
}

type junitSkip struct {
	Message string `xml:"message,attr"`
}

type junitResult struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// Outcome of one spec as the scoreboard counts it.
const (
	Passed   = "passed"
	Failed   = "failed"
	Skipped  = "skipped"
	Excluded = "excluded"
)

// ranSpec is one [It] case of a JUnit report.
type ranSpec struct {
	Name    string // the spec's full text, without the "[It] " prefix
	State   string // Passed, Failed, Skipped, or "" when ginkgo filtered it out
	Seconds float64
	Message string // failure message, or the reason of a skip at run time
}

// parseJUnit returns the [It] cases of a report; suite setup and report
// nodes ([SynchronizedBeforeSuite], [ReportAfterSuite], ...) are left out.
// Ginkgo reports specs that focus/skip filtered out as skipped without a
// reason; they get State "".
func parseJUnit(r io.Reader) ([]ranSpec, error) {
	var doc junitSuites
	dec := xml.NewDecoder(r)
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("decoding JUnit XML: %w", err)
	}
	var out []ranSpec
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			name, ok := strings.CutPrefix(c.Name, "[It] ")
			if !ok {
				continue
			}
			sp := ranSpec{Name: name, Seconds: c.Time}
			switch {
			case c.Failure != nil:
				sp.State, sp.Message = Failed, failureMessage(c.Failure)
			case c.Error != nil:
				sp.State, sp.Message = Failed, failureMessage(c.Error)
			case c.Skipped != nil:
				if reason, ok := strings.CutPrefix(c.Skipped.Message, "skipped - "); ok {
					sp.State, sp.Message = Skipped, reason
				}
			case c.Status == "passed":
				sp.State = Passed
			default:
				// Not run (e.g. the suite was interrupted before it).
				sp.State, sp.Message = Failed, "not run: "+c.Status
			}
			out = append(out, sp)
		}
	}
	return out, nil
}

// reStateTag is Ginkgo's "[FAILED] ", "[TIMEDOUT] ", ... in front of a failure.
var reStateTag = regexp.MustCompile(`^\[[A-Z]+\] `)

// failureMessage is the message of a failure: the message attribute when
// present, else the text up to Ginkgo's "In [It] at: file:line" location
// line, without the leading "[FAILED] " / "[TIMEDOUT] " tag.
func failureMessage(f *junitResult) string {
	if m := strings.TrimSpace(f.Message); m != "" {
		return m
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(f.Text), "\n") {
		if strings.HasPrefix(l, "In [") && strings.Contains(l, "] at: ") {
			break
		}
		lines = append(lines, l)
	}
	msg := strings.TrimSpace(strings.Join(lines, "\n"))
	msg = reStateTag.ReplaceAllString(msg, "")
	if msg == "" {
		msg = f.Type
	}
	return msg
}
