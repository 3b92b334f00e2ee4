package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A report in the shape the e2e framework writes (Ginkgo's JUnit reporter,
// failure message attribute omitted).
const sampleJUnit = `<?xml version="1.0" encoding="UTF-8"?>
  <testsuites tests="7" disabled="3" errors="0" failures="2" time="100">
      <testsuite name="Kubernetes e2e suite" package="/e2e" tests="7" disabled="0" skipped="3" errors="0" failures="2" time="100" timestamp="2025-01-01T00:00:00">
          <testcase name="[SynchronizedBeforeSuite]" classname="Kubernetes e2e suite" status="passed" time="1"></testcase>
          <testcase name="[It] [sig-node] Pods should get a host IP [NodeConformance] [Conformance]" classname="Kubernetes e2e suite" status="passed" time="4.5"></testcase>
          <testcase name="[It] [sig-node] Downward API should provide pod name [NodeConformance] [Conformance]" classname="Kubernetes e2e suite" status="failed" time="12">
              <failure message="" type="failed">[FAILED] failed to get logs from downward-api-4a2b for dapi-container: Get &#34;https://10.0.2.15:10250/containerLogs/downward-api-1234/downward-api-4a2b/dapi-container&#34;: dial tcp 10.0.2.15:10250: connect: connection refused&#xA;In [It] at: k8s.io/kubernetes/test/e2e/framework/pod/output/output.go:263 @ 01/01/25 00:00:10.000&#xA;</failure>
          </testcase>
          <testcase name="[It] [sig-node] Probing container should be restarted [NodeConformance]" classname="Kubernetes e2e suite" status="timedout" time="300">
              <failure message="" type="timedout">[TIMEDOUT] A suite timeout occurred&#xA;In [It] at: k8s.io/kubernetes/test/e2e/common/node/container_probe.go:100 @ 01/01/25 00:05:00.000&#xA;</failure>
          </testcase>
          <testcase name="[It] [sig-node] Sysctls should support sysctls [NodeConformance]" classname="Kubernetes e2e suite" status="skipped" time="0.1">
              <skipped message="skipped - Only supported for node OS distro [gci ubuntu] (not debian)"></skipped>
          </testcase>
          <testcase name="[It] [sig-apps] Deployment should run [Conformance]" classname="Kubernetes e2e suite" status="skipped" time="0">
              <skipped message="skipped"></skipped>
          </testcase>
          <testcase name="[It] [sig-node] Container Runtime should be able to pull image [NodeConformance]" classname="Kubernetes e2e suite" status="skipped" time="0">
              <skipped message="skipped"></skipped>
          </testcase>
          <testcase name="[It] [sig-node] Pods should be slow [NodeConformance] [Slow]" classname="Kubernetes e2e suite" status="skipped" time="0">
              <skipped message="skipped"></skipped>
          </testcase>
          <testcase name="[ReportAfterSuite] Kubernetes e2e JUnit report" classname="Kubernetes e2e suite" status="passed" time="0"></testcase>
      </testsuite>
  </testsuites>`

func TestParseJUnitKeepsOnlyItCases(t *testing.T) {
	ran, start, err := parseJUnit(strings.NewReader(sampleJUnit))
	if err != nil {
		t.Fatal(err)
	}
	if start != "2025-01-01T00:00:00" {
		t.Errorf("start = %q", start)
	}
	if len(ran) != 7 {
		t.Fatalf("got %d [It] cases, want 7: %+v", len(ran), ran)
	}
	want := map[string]string{
		"[sig-node] Pods should get a host IP [NodeConformance] [Conformance]":            Passed,
		"[sig-node] Downward API should provide pod name [NodeConformance] [Conformance]": Failed,
		"[sig-node] Probing container should be restarted [NodeConformance]":              Failed,
		"[sig-node] Sysctls should support sysctls [NodeConformance]":                     Skipped,
		"[sig-apps] Deployment should run [Conformance]":                                  "", // filtered out
	}
	for _, r := range ran {
		if w, ok := want[r.Name]; ok && r.State != w {
			t.Errorf("%s: state %q, want %q", r.Name, r.State, w)
		}
	}
}

func TestFailureMessage(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"[FAILED] boom\nIn [It] at: x.go:1 @ now\n", "boom"},
		{"[FAILED] line one\nline two\nIn [BeforeEach] at: x.go:1 @ now\n\nThere were additional failures", "line one\nline two"},
		{"[TIMEDOUT] A suite timeout occurred\nIn [It] at: x.go:1 @ now", "A suite timeout occurred"},
		{"[sig-node] not a tag\nIn [It] at: x.go:1", "[sig-node] not a tag"},
		{"", "failed"},
	} {
		if got := failureMessage(&junitResult{Type: "failed", Text: tc.text}); got != tc.want {
			t.Errorf("failureMessage(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
	if got := failureMessage(&junitResult{Message: "attr wins", Text: "[FAILED] text"}); got != "attr wins" {
		t.Errorf("message attribute not preferred: %q", got)
	}
}

func TestCause(t *testing.T) {
	for _, tc := range []struct{ msg, want string }{
		{
			`failed to get logs from downward-api-4a2b for dapi-container: Get "https://10.0.2.15:10250/containerLogs/downward-api-1234/x": dial tcp 10.0.2.15:10250: connect: connection refused`,
			`failed to get logs from downward-api-4a2b for dapi-container: Get "https://<ip>:10250/containerLogs/downward-api-<n>/x": dial tcp <ip>:10250: connect: connection refused`,
		},
		{"Timed out after 300.001s.\nExpected pod to be running", "Timed out after <t>."},
		{"Unexpected error:\n    <*errors.errorString | 0xc000123>: \n    pod \"x\" not found\n    {s: \"pod \\\"x\\\" not found\"}", `Unexpected error: pod "x" not found`},
		{"pod 6c1b2d3e-aaaa-bbbb-cccc-0123456789ab gone", "pod <uid> gone"},
		{"\n\n", "(no message)"},
		{"FailedCreatePodSandBox: Failed to create pod sandbox: rpc error: code = Unknown desc = failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to set hostname without a private UTS namespace: unknown",
			"FailedCreatePodSandBox: Failed to create pod sandbox: unable to set hostname without a private UTS namespace"},
		{strings.Repeat("x", 400), strings.Repeat("x", maxCause-1) + "…"},
	} {
		if got := Cause(tc.msg); got != tc.want {
			t.Errorf("Cause(%q)\n got %q\nwant %q", tc.msg, got, tc.want)
		}
	}
}

func TestCategory(t *testing.T) {
	for _, tc := range []struct{ msg, want string }{
		{`failed to get logs from p for c: dial tcp 1.2.3.4:10250: connect: connection refused`, "kubelet API (10250): container logs not served"},
		{`error dialing backend: dial tcp 1.2.3.4:10250: connect: connection refused` + "\n" + `failed to execute command in pod p, container c: unable to upgrade connection`, "kubelet API (10250): exec not served"},
		{`Timed out after 300s waiting for pod to be running`, "timed out waiting for a pod state"},
		{"expected pod \"p\" success: Told to stop trying after 2.0s.\npod \"p\" failed with status: ...", "container exited with an error (its output needs pods/log)"},
		{`an error on the server ("unknown") has prevented the request from succeeding (get pods sysctl-1)`, "kubelet API (10250): container logs not served"},
		{"Timed out after 300s.\nFailed: Error: envFrom in container \"c\" needs ConfigMap/Secret access, which is not configured", "kubelet: ConfigMap/Secret access not wired (envFrom, configMapKeyRef, secretKeyRef)"},
		{"failed,  1 out of 1 connections failed\nkubelet API /exec: dial tcp 1.2.3.4:10250: connect: connection refused", "kubelet API (10250): exec not served"},
		{"Failed to open websocket to wss://1.2.3.4:6443/api/v1/namespaces/pods-1/pods/pod-exec-websocket-x/exec?command=echo&container=main: bad status", "kubelet API (10250): exec not served"},
		{"Failed to open websocket to wss://1.2.3.4:6443/api/v1/namespaces/pods-1/pods/pod-logs-websocket-x/log?container=main: bad status", "kubelet API (10250): container logs not served"},
		{"Timed out after 60.000s.\nExpected\n    <string>: \nto equal\n    <string>: Hello World\\n", "container output never seen (read through pods/log, errors discarded by the suite)"},
		{"Timed out after 60.000s.\nExpected\n    <string>: 3\nto equal\n    <string>: 4", "timed out waiting for a pod state"},
		{`expected 3, got 4`, "other"},
	} {
		if got := Category(tc.msg); got != tc.want {
			t.Errorf("Category(%q) = %q, want %q", tc.msg, got, tc.want)
		}
	}
}

const focus = `\[NodeConformance\]`
const skip = `\[Serial\]|\[Slow\]`

func TestRecordCountsTheSelectionOnly(t *testing.T) {
	ran, _, err := parseJUnit(strings.NewReader(sampleJUnit))
	if err != nil {
		t.Fatal(err)
	}
	excl := []Exclusion{{Name: "[sig-node] Container Runtime should be able to pull image [NodeConformance]", Reason: "no registry"}}
	res, err := Record(ran, suiteDescription, focus, skip, excl)
	if err != nil {
		t.Fatal(err)
	}
	got := res.Totals()
	want := map[string]int{Passed: 1, Failed: 2, Skipped: 1, Excluded: 1}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %d, want %d (all: %v)", k, got[k], v, got)
		}
	}
	if len(res.Specs) != 5 {
		t.Errorf("selected %d specs, want 5 (the [Slow] and the non-node spec are not in the set)", len(res.Specs))
	}
	for _, s := range res.Specs {
		if s.State == Failed && (s.Cause == "" || s.Category == "") {
			t.Errorf("failure without cause or category: %+v", s)
		}
		if s.State == Excluded && s.Cause != "no registry" {
			t.Errorf("exclusion reason lost: %+v", s)
		}
	}
}

func TestRecordFailsASelectedSpecThatDidNotRun(t *testing.T) {
	// Filtered out although the set selects it and no exclusion names it.
	ran := []ranSpec{{Name: "[sig-node] X [NodeConformance]", State: ""}}
	res, err := Record(ran, suiteDescription, focus, skip, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Specs) != 1 || res.Specs[0].State != Failed {
		t.Fatalf("want one failed spec, got %+v", res.Specs)
	}
}

func TestReadExclusions(t *testing.T) {
	in := "# comment\nreason: no registry\nspec: A [NodeConformance]\nspec: B\n\nreason: no kernel\nspec: C\n"
	got, err := readExclusions(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []Exclusion{{"A [NodeConformance]", "no registry"}, {"B", "no registry"}, {"C", "no kernel"}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%d: got %v, want %v", i, got[i], want[i])
		}
	}
	for _, bad := range []string{"spec: A\n", "reason: r\nfoo\n"} {
		if _, err := readExclusions(strings.NewReader(bad)); err == nil {
			t.Errorf("readExclusions(%q): no error", bad)
		}
	}
}

func TestExactRegexpMatchesOnlyThatSpec(t *testing.T) {
	name := "[sig-node] Pods should get a host IP [NodeConformance] [Conformance]"
	re := regexp.MustCompile(exactRegexp(suiteDescription, name))
	if !re.MatchString(suiteDescription + " " + name) {
		t.Error("does not match its spec")
	}
	if re.MatchString(nodeSuiteDescription + " " + name) {
		t.Error("matches the spec of the same name in the node suite")
	}
	for _, other := range []string{
		name + " extra",
		"[sig-node] Foo " + name,
		"[sig-node] Pods should get a host IP [NodeConformance]",
	} {
		if re.MatchString(suiteDescription + " " + other) {
			t.Errorf("matches %q", other)
		}
	}

	// A container without text: two spaces in the JUnit name, one in the
	// text Ginkgo matches.
	junitName := "[sig-node] ImageGCNoEviction when we run containers that should cause DiskPressure  should evict [Serial]"
	re = regexp.MustCompile(exactRegexp(nodeSuiteDescription, junitName))
	for _, text := range []string{
		"[sig-node] ImageGCNoEviction when we run containers that should cause DiskPressure should evict [Serial]",
		junitName,
	} {
		if !re.MatchString(nodeSuiteDescription + " " + text) {
			t.Errorf("does not match %q", text)
		}
	}
	if re.MatchString(nodeSuiteDescription + " [sig-node] ImageGCNoEviction when we run containers that should cause DiskPressureshould evict [Serial]") {
		t.Error("matches the name without the space")
	}
}

func TestCheck(t *testing.T) {
	r := &Results{Specs: []Spec{{Name: "a", State: Passed}, {Name: "b", State: Failed, Cause: "boom"}, {Name: "c", State: Skipped, Cause: "why"}}}
	bad := Check(r, []string{"a", "b", "c", "d"})
	if len(bad) != 3 || !strings.Contains(bad[0], "boom") || !strings.HasPrefix(bad[2], "NOT RUN d") {
		t.Errorf("Check = %q", bad)
	}
	if bad := Check(r, []string{"a"}); len(bad) != 0 {
		t.Errorf("Check of a passed spec = %q", bad)
	}
}

func TestReportShowsBothColumnsAndEveryNonPass(t *testing.T) {
	ours := &Results{KubeVersion: "v1.37.2", Focus: focus, Skip: skip, Seed: 11, Specs: []Spec{
		{Name: "a", State: Passed},
		{Name: "b", State: Failed, Cause: "logs <ip>:10250 | refused", Category: "kubelet API (10250): container logs not served"},
		{Name: "e", State: Excluded, Cause: "no registry"},
	}}
	upstream := &Results{KubeVersion: "v1.37.2", Focus: focus, Skip: skip, Seed: 12, Specs: []Spec{
		{Name: "a", State: Passed},
		{Name: "b", State: Passed},
		{Name: "e", State: Excluded, Cause: "no registry"},
	}}
	var buf bytes.Buffer
	if err := WriteReport(&buf, "node", map[string]*Results{"ours": ours, "upstream": upstream}, "doc"); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"| **passed** | 1 | 2 |",
		"| **failed** | 1 | 0 |",
		"| **excluded** | 1 | 1 |",
		"| b | **FAIL**: logs &lt;ip&gt;:10250 \\| refused | pass |",
		"| kubelet API (10250): container logs not served | 1 | 1 |",
		"| e | no registry |",
		"| spec order (Ginkgo seed) | 11 | 12 |",
		"**Spec order differs**: Ginkgo seed 11 (ours) against 12 (upstream).",
		"[conformance.md](conformance.md)", // the overview of every set
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "| a |") {
		t.Error("a spec both kubelets pass is listed")
	}
	upstream.Seed = ours.Seed
	buf.Reset()
	if err := WriteReport(&buf, "node", map[string]*Results{"ours": ours, "upstream": upstream}, "doc"); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "Spec order") {
		t.Errorf("one seed, yet an order note:\n%s", buf.String())
	}
	buf.Reset()
	if err := WriteReport(&buf, "node", map[string]*Results{"ours": ours}, "doc"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "not run") {
		t.Error("missing upstream column not marked 'not run'")
	}
}

func TestKubeletEvidenceFromTheTimeline(t *testing.T) {
	timeline := `STEP: Creating a pod @ now
  I1123 13:00:46.399459 28374 exec_util.go:201] unexpected error trying to use websockets for pod exec: Internal error occurred: error sending request: Post "https://192.0.2.2:10250/exec/ns-1/p/c?command=%2Fbin%2Fsh&command=-c": dial tcp 192.0.2.2:10250: connect: connection refused
  I1123 13:01:50.879896 28379 dump.go:53] At 2026-11-23 12:56:51 +0000 UTC - event for p: {kubelet vm} Pulled: Container image already present
  I1123 13:01:50.879896 28379 dump.go:53] At 2026-11-23 12:56:51 +0000 UTC - event for p: {kubelet vm} FailedCreatePodSandBox: Failed to create pod sandbox: write /proc/sys/kernel/msgmax: invalid argument
  I1123 13:01:50.879896 28379 output.go:196] Failed to get logs: error sending request: Get "https://192.0.2.2:10250/containerLogs/ns/p/c": dial tcp 192.0.2.2:10250: connect: connection refused`
	if got, want := kubeletEvent(timeline), "FailedCreatePodSandBox: Failed to create pod sandbox: write /proc/sys/kernel/msgmax: invalid argument"; got != want {
		t.Errorf("kubeletEvent = %q, want %q", got, want)
	}
	if got, want := kubeletAPICall(timeline), "kubelet API /exec: dial tcp 192.0.2.2:10250: connect: connection refused"; got != want {
		t.Errorf("kubeletAPICall = %q, want %q", got, want)
	}
	// Log fetches are the framework's own diagnostics: not evidence.
	if got := kubeletAPICall(`error sending request: Get "https://1.2.3.4:10250/containerLogs/a/b/c": refused`); got != "" {
		t.Errorf("kubeletAPICall counted a log fetch: %q", got)
	}
	if got := kubeletEvent("event for p: {kubelet vm} Started: Started container c"); got != "" {
		t.Errorf("kubeletEvent counted a normal event: %q", got)
	}
}

func TestRecordKeepsTheKubeletsEvidence(t *testing.T) {
	ran := []ranSpec{{Name: "[sig-node] X [NodeConformance]", State: Failed, Message: "Timed out after 300.0s.",
		Event: `Failed: Error: envFrom in container "c" needs ConfigMap/Secret access, which is not configured`}}
	res, err := Record(ran, suiteDescription, focus, skip, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := res.Specs[0]
	if s.Cause != "Timed out after <t>." || !strings.Contains(s.Evidence, "needs ConfigMap/Secret access") ||
		!strings.HasPrefix(s.Category, "kubelet: ConfigMap/Secret access") {
		t.Errorf("got %+v", s)
	}
}

// writeResults writes r as dir/<set>.<kubelet>.json, as record does.
func writeResults(t *testing.T, dir string, r *Results) {
	t.Helper()
	if err := writeJSON(filepath.Join(dir, r.Set+"."+r.Kubelet+".json"), r); err != nil {
		t.Fatal(err)
	}
}

func TestSortSets(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{[]string{"zeta", "node-e2e", "full", "alpha", "serial", "node"}, []string{"node", "full", "serial", "node-e2e", "alpha", "zeta"}},
		{[]string{"node-e2e", "node"}, []string{"node", "node-e2e"}},
		{[]string{"b", "a"}, []string{"a", "b"}},
	} {
		got := append([]string(nil), tc.in...)
		sortSets(got)
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("sortSets(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestFailureSplitAndSessionNote(t *testing.T) {
	ours := &Results{Date: "2026-11-24 21:48", Specs: []Spec{
		{Name: "both", State: Failed}, {Name: "ours", State: Failed}, {Name: "up", State: Passed},
		{Name: "ours-only-selected", State: Failed}, {Name: "up-skipped", State: Failed},
	}}
	upstream := &Results{Date: "2026-11-24 22:23", Specs: []Spec{
		{Name: "both", State: Failed}, {Name: "ours", State: Passed}, {Name: "up", State: Failed},
		{Name: "up-skipped", State: Skipped}, {Name: "up-only-selected", State: Failed},
	}}
	if b, o, u := failureSplit(ours, upstream); b != 1 || o != 3 || u != 2 {
		t.Errorf("failureSplit = both %d, ours alone %d, upstream alone %d; want 1, 3, 2", b, o, u)
	}
	for _, tc := range []struct{ ours, up, want string }{
		{"2026-11-24 21:48", "2026-11-24 22:23", "Both runs from one session, 35 min apart."},
		{"2026-11-28 19:12", "2026-11-27 19:12", "Both runs from one session, 1 day apart."},
		{"2026-11-28 19:12", "2026-11-24 22:23", "**Not from one session**: our kubelet ran on 2026-11-28 19:12, the upstream kubelet on 2026-11-24 22:23 (UTC), 3 days 20 h 49 min apart."},
		{"2026-11-25 19:13", "2026-11-24 19:12", "**Not from one session**: our kubelet ran on 2026-11-25 19:13, the upstream kubelet on 2026-11-24 19:12 (UTC), 1 day 1 min apart."},
		{"yesterday", "2026-11-24 19:12", "Run dates: our kubelet yesterday, the upstream kubelet 2026-11-24 19:12 (UTC)."},
	} {
		if got := sessionNote(&Results{Date: tc.ours}, &Results{Date: tc.up}); got != tc.want {
			t.Errorf("sessionNote(%s, %s)\n got %q\nwant %q", tc.ours, tc.up, got, tc.want)
		}
	}
	if got := sessionNote(ours, nil); got != "" {
		t.Errorf("sessionNote with one run = %q", got)
	}
}

func TestSuiteDescriptionOfOldResults(t *testing.T) {
	for _, tc := range []struct {
		r         Results
		desc, bin string
	}{
		{Results{Set: "node"}, suiteDescription, "e2e.test"},
		{Results{Set: "full"}, suiteDescription, "e2e.test"},
		{Results{Set: "node-e2e"}, nodeSuiteDescription, "e2e_node.test"},
		{Results{Set: "x", Suite: nodeSuiteDescription}, nodeSuiteDescription, "e2e_node.test"},
		{Results{Set: "y", Suite: "Other suite"}, "Other suite", "Other suite"},
	} {
		if got := tc.r.SuiteDescription(); got != tc.desc || suiteBinary(got) != tc.bin {
			t.Errorf("set %q suite %q: %q (%s), want %q (%s)", tc.r.Set, tc.r.Suite, got, suiteBinary(got), tc.desc, tc.bin)
		}
	}
	ran := []ranSpec{{Name: "[sig-node] X [NodeConformance]", State: Passed}}
	res, err := Record(ran, nodeSuiteDescription, focus, skip, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Suite != nodeSuiteDescription {
		t.Errorf("Record keeps suite %q, want %q", res.Suite, nodeSuiteDescription)
	}
}

// The overview of a results directory: a set both kubelets ran more than a
// day apart, a node-e2e set only ours ran, files that are not results.
func TestIndex(t *testing.T) {
	dir := t.TempDir()
	excl := Spec{Name: "[sig-node] needs a registry [Conformance]", State: Excluded, Cause: "no registry | here"}
	writeResults(t, dir, &Results{Set: "full", Kubelet: "ours", KubeVersion: "v1.37.2", Commit: "aaa", Date: "2026-11-28 19:12",
		WallSeconds: 2441, Procs: 6, Seed: 7, Focus: `\[Conformance\]`, Skip: `\[Serial\]`, Specs: []Spec{
			{Name: "p", State: Passed},
			{Name: "both", State: Failed, Category: "image pull"},
			{Name: "ours1", State: Failed, Category: "image pull"},
			{Name: "ours2", State: Failed, Category: "other"},
			{Name: "up1", State: Passed},
			excl,
		}})
	writeResults(t, dir, &Results{Set: "full", Kubelet: "upstream", KubeVersion: "v1.37.2", Commit: "bbb", Date: "2026-11-25 18:26",
		WallSeconds: 2457, Procs: 6, Focus: `\[Conformance\]`, Skip: `\[Serial\]`, Specs: []Spec{
			{Name: "p", State: Passed},
			{Name: "both", State: Failed, Category: "image pull"},
			{Name: "ours1", State: Passed},
			{Name: "ours2", State: Skipped},
			{Name: "up1", State: Failed},
			excl,
		}})
	writeResults(t, dir, &Results{Set: "node-e2e", Kubelet: "ours", Suite: nodeSuiteDescription, KubeVersion: "v1.37.2", Commit: "ccc",
		Date: "2026-11-29 10:00", WallSeconds: 600, Procs: 4, Focus: `\[NodeConformance\]`, Specs: []Spec{
			{Name: "n1", State: Passed}, {Name: "n2", State: Passed},
		}})
	for _, junk := range []string{"notes.txt", "full.ours.json.tmp", "full.other.json"} {
		if err := os.WriteFile(filepath.Join(dir, junk), []byte("not results"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sets, err := readSets(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(sets) != 2 || sets[0].Set != "full" || sets[1].Set != "node-e2e" {
		t.Fatalf("readSets: %+v", sets)
	}
	var buf bytes.Buffer
	if err := WriteIndex(&buf, sets); err != nil {
		t.Fatal(err)
	}
	out := buf.String()

	full := strings.Index(out, "## `full`: e2e.test\n")
	nodeE2E := strings.Index(out, "## `node-e2e`: e2e_node.test\n")
	if full < 0 || nodeE2E < full {
		t.Fatalf("want the full section, then node-e2e's:\n%s", out)
	}
	fullSec, nodeSec := out[full:nodeE2E], out[nodeE2E:]
	for _, tc := range []struct {
		section, name string
		want          []string
	}{
		{out[:full], "summary", []string{
			"| `full` | e2e.test v1.37.2 | 2 / 6 | 2 / 6 | [conformance-full.md](conformance-full.md) |",
			"| `node-e2e` | e2e_node.test v1.37.2 | 2 / 2 | not run | [conformance-node-e2e.md](conformance-node-e2e.md) |",
			"[conformance-run.md](conformance-run.md)",
		}},
		{fullSec, "full", []string{
			"Upstream's `e2e.test` (\"Kubernetes e2e suite\") v1.37.2, focus `\\[Conformance\\]`, skip `\\[Serial\\]`.",
			"| date (UTC) | 2026-11-28 19:12 | 2026-11-25 18:26 |",
			"| commit | `aaa` | `bbb` |",
			"| selected | 6 | 6 |",
			"| failed | 3 | 2 |",
			"| excluded | 1 | 1 |",
			"| wall time | 40m41s (6 ginkgo processes) | 40m57s (6 ginkgo processes) |",
			"| spec order (Ginkgo seed) | 7 | random, not recorded |",
			"**Spec order may differ**: a run did not record its Ginkgo seed.",
			"**Not from one session**: our kubelet ran on 2026-11-28 19:12, the upstream kubelet on 2026-11-25 18:26 (UTC), 3 days 46 min apart.",
			"Failing with both kubelets: 1; with our kubelet alone: 2; with the upstream kubelet alone: 1.",
			"| image pull | 2 | 1 |\n| other | 1 | 0 |\n",
			"| [sig-node] needs a registry [Conformance] | no registry \\| here |",
			"[conformance-full.md](conformance-full.md)",
		}},
		{nodeSec, "node-e2e", []string{
			"Upstream's `e2e_node.test` (\"E2eNode Suite\") v1.37.2",
			"| date (UTC) | 2026-11-29 10:00 | not run |",
			"The upstream kubelet has not run this set: no comparison. Failing with our kubelet: 0.",
			"Our failures by cause: none.",
			"Excluded by name: none.",
			"[conformance-node-e2e.md](conformance-node-e2e.md)",
		}},
	} {
		for _, w := range tc.want {
			if !strings.Contains(tc.section, w) {
				t.Errorf("%s section lacks %q:\n%s", tc.name, w, tc.section)
			}
		}
	}
	if strings.Contains(nodeSec, "session") {
		t.Errorf("a set with one run speaks of sessions:\n%s", nodeSec)
	}

	// Only the upstream kubelet ran: no cause table (it is ours), the
	// upstream failures counted.
	buf.Reset()
	up := sets[0].Runs["upstream"]
	if err := WriteIndex(&buf, []SetRuns{{Set: "full", Runs: map[string]*Results{"upstream": up}}}); err != nil {
		t.Fatal(err)
	}
	if out := buf.String(); !strings.Contains(out, "Our kubelet has not run this set. Failing with the upstream kubelet: 2.") ||
		strings.Contains(out, "by cause") || !strings.Contains(out, "| `full` | e2e.test v1.37.2 | not run | 2 / 6 |") {
		t.Errorf("upstream-only overview:\n%s", out)
	}
	if err := WriteIndex(&buf, nil); err == nil {
		t.Error("WriteIndex of no sets: no error")
	}
}

func TestOrderNote(t *testing.T) {
	for _, tc := range []struct {
		ours, upstream int64
		want           string
	}{
		{5, 5, ""},
		{5, 6, "**Spec order differs**: Ginkgo seed 5 (ours) against 6 (upstream)."},
		{0, 6, "**Spec order may differ**: a run did not record its Ginkgo seed."},
		{5, 0, "**Spec order may differ**: a run did not record its Ginkgo seed."},
		{0, 0, "**Spec order may differ**: a run did not record its Ginkgo seed."},
	} {
		if got := orderNote(&Results{Seed: tc.ours}, &Results{Seed: tc.upstream}); got != tc.want {
			t.Errorf("orderNote(%d, %d) = %q, want %q", tc.ours, tc.upstream, got, tc.want)
		}
	}
}

func TestWallTime(t *testing.T) {
	for _, tc := range []struct {
		r    Results
		want string
	}{
		{Results{WallSeconds: 1138, Procs: 1}, "18m58s (1 ginkgo process)"},
		{Results{WallSeconds: 2441, Procs: 6}, "40m41s (6 ginkgo processes)"},
	} {
		if got := wallTime(&tc.r); got != tc.want {
			t.Errorf("wallTime(%v s, %d procs) = %q, want %q", tc.r.WallSeconds, tc.r.Procs, got, tc.want)
		}
	}
}
