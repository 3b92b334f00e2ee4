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
	Name      string      `xml:"name,attr"`
	Timestamp string      `xml:"timestamp,attr"` // start of the run, "2006-01-02T15:04:05"
	Cases     []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name    string       `xml:"name,attr"`
	Status  string       `xml:"status,attr"`
	Time    float64      `xml:"time,attr"`
	Skipped *junitSkip   `xml:"skipped"`
	Failure *junitResult `xml:"failure"`
	Error   *junitResult `xml:"error"`
	// The spec's timeline (steps, logs, and on failure the namespace's
	// events); the framework keeps it for failed specs only.
	SystemErr string `xml:"system-err"`
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
	Event   string // failures: the first failure event the kubelet recorded, "Reason: message"
	API     string // failures: the first failed call of the kubelet API in the timeline
}

// parseJUnit returns the [It] cases of a report and the run's start time;
// suite setup and report nodes ([SynchronizedBeforeSuite],
// [ReportAfterSuite], ...) are left out. Ginkgo reports specs that
// focus/skip filtered out as skipped without a reason; they get State "".
func parseJUnit(r io.Reader) ([]ranSpec, string, error) {
	var doc junitSuites
	dec := xml.NewDecoder(r)
	if err := dec.Decode(&doc); err != nil {
		return nil, "", fmt.Errorf("decoding JUnit XML: %w", err)
	}
	var out []ranSpec
	start := ""
	for _, s := range doc.Suites {
		if start == "" {
			start = s.Timestamp
		}
		for _, c := range s.Cases {
			name, ok := strings.CutPrefix(c.Name, "[It] ")
			if !ok {
				continue
			}
			sp := ranSpec{Name: name, Seconds: c.Time}
			switch {
			case c.Failure != nil:
				sp.State, sp.Message = Failed, failureMessage(c.Failure)
				sp.Event, sp.API = kubeletEvent(c.SystemErr), kubeletAPICall(c.SystemErr)
			case c.Error != nil:
				sp.State, sp.Message = Failed, failureMessage(c.Error)
				sp.Event, sp.API = kubeletEvent(c.SystemErr), kubeletAPICall(c.SystemErr)
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
	return out, start, nil
}

// reKubeletEvent matches an event of the framework's namespace dump
// ("At <time> - event for <object>: {kubelet <node>} <Reason>: <message>")
// whose reason says something failed (FailedCreatePodSandBox, Failed,
// FailedMount, FailedPostStartHook, ...).
var reKubeletEvent = regexp.MustCompile(`event for [^:]+: \{kubelet [^}]*\} (Failed[A-Za-z]*): (.*)`)

// kubeletEvent returns the first failure event the kubelet recorded in a
// timeline, as "Reason: message", or "".
func kubeletEvent(timeline string) string {
	m := reKubeletEvent.FindStringSubmatch(timeline)
	if m == nil {
		return ""
	}
	return m[1] + ": " + strings.TrimSpace(m[2])
}

// reKubeletAPICall matches a call of the kubelet API (exec, attach,
// port-forward, container logs) that the apiserver could not make, as the
// framework logs it in the timeline ("error sending request: Post
// \"https://<node>:10250/exec/<ns>/<pod>/<container>?command=...\": dial tcp
// ...: connection refused"). The query is dropped.
var reKubeletAPICall = regexp.MustCompile(`error sending request: [A-Za-z]+ "https://[^/"]+:\d+/(exec|attach|portForward|containerLogs)/[^"?]*(?:\?[^"]*)?": ([^\n]*)`)

// kubeletAPICall returns the first failed kubelet API call of a timeline as
// "<endpoint>: <error>", or "". The framework's own diagnostics fetch
// container logs after a failure, so only exec, attach and port-forward
// calls (which only a spec makes) count.
func kubeletAPICall(timeline string) string {
	for _, m := range reKubeletAPICall.FindAllStringSubmatch(timeline, -1) {
		if m[1] != "containerLogs" {
			return "kubelet API /" + m[1] + ": " + strings.TrimSpace(m[2])
		}
	}
	return ""
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
