package main

import (
	"regexp"
	"strings"
)

// maxCause bounds a cause's length in the report.
const maxCause = 180

var (
	reSpace = regexp.MustCompile(`\s+`)
	reUUID  = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	// Names the framework makes unique: namespaces "<base>-<4 digits>" and
	// generated suffixes ("-abcde", "-x7k2p").
	reNamespace = regexp.MustCompile(`\b([a-z][a-z0-9-]*?)-[0-9]{3,5}\b`)
	reIPPort    = regexp.MustCompile(`\b\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}(:\d+)?\b`)
	reDuration  = regexp.MustCompile(`\b\d+(\.\d+)?(ms|s|m)\b`)
	reGoStruct  = regexp.MustCompile(`<\*?[a-zA-Z0-9_.]+ \| 0x[0-9a-f]+>`)
	// The wrappers a runtime error collects on its way through CRI; the
	// innermost message is the one that says what went wrong.
	reRuntimeWrap = regexp.MustCompile(`(rpc error: code = \w+ desc = |failed to create containerd task: |failed to create shim task: |OCI runtime (create|start|exec) failed: |runc (create|exec) failed: |unable to start container process: |error during container init: )`)
)

// Cause derives a failure's one-line cause from its message: the first line
// that says something (Gomega's "Expected"/"Unexpected error:" lead-ins are
// joined with what follows), with unique names, addresses and durations
// replaced by placeholders so equal causes read equal, shortened to maxCause.
func Cause(msg string) string {
	var lines []string
	for _, l := range strings.Split(msg, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return "(no message)"
	}
	line := lines[0]
	// Gomega's multi-line forms: "Unexpected error:" / "Expected" then the
	// value, often as "<*T | 0xc0...>: " followed by the error text on the
	// next line; the value's text carries the information.
	lead := strings.TrimSuffix(line, ":")
	if (lead == "Unexpected error" || lead == "Expected" || strings.HasSuffix(line, ":")) && len(lines) > 1 {
		rest, i := lines[1], 1
		if h := reGoStruct.FindStringIndex(rest); h != nil && h[0] == 0 {
			rest = strings.TrimSpace(strings.TrimPrefix(rest[h[1]:], ":"))
			if rest == "" && i+1 < len(lines) {
				rest = lines[i+1]
			}
		}
		line = lead + ": " + rest
	}
	line = reGoStruct.ReplaceAllString(line, "")
	line = reRuntimeWrap.ReplaceAllString(line, "")
	line = strings.TrimSuffix(line, ": unknown")
	line = reUUID.ReplaceAllString(line, "<uid>")
	line = reIPPort.ReplaceAllStringFunc(line, func(s string) string {
		if i := strings.LastIndex(s, ":"); i >= 0 {
			return "<ip>" + s[i:]
		}
		return "<ip>"
	})
	line = reNamespace.ReplaceAllString(line, "$1-<n>")
	line = reDuration.ReplaceAllString(line, "<t>")
	line = reSpace.ReplaceAllString(line, " ")
	line = strings.TrimSpace(line)
	if len(line) > maxCause {
		line = strings.TrimSpace(line[:maxCause-1]) + "…"
	}
	return line
}

// A category groups failures by the missing capability they point at. The
// rules look at the whole failure message; the first match wins.
type category struct {
	Name string
	re   *regexp.Regexp
}

var categories = []category{
	{"kubelet: ConfigMap/Secret access not wired (envFrom, configMapKeyRef, secretKeyRef)", regexp.MustCompile(`needs ConfigMap/Secret access`)},
	{"kubelet: env value source not supported (resourceFieldRef, ...)", regexp.MustCompile(`needs a value source that is not configured`)},
	{"kubelet API (10250): exec not served", regexp.MustCompile(`(?i)(kubelet API /exec|/exec/|/exec\?|pods/exec|unable to upgrade connection|error executing command)`)},
	{"kubelet API (10250): attach not served", regexp.MustCompile(`kubelet API /attach`)},
	{"kubelet API (10250): port-forward not served", regexp.MustCompile(`(?i)(kubelet API /portForward|portforward|port-forward)`)},
	{"kubelet API (10250): container logs not served", regexp.MustCompile(`(?i)(containerLogs|failed to get logs|failed to get output for container|has prevented the request from succeeding \(get pods|pods/log|/log\?)`)},
	// The suite reads some outputs with errors discarded (kubelet.go's
	// "print the output to logs"): it sees an empty string until it gives up.
	{"container output never seen (read through pods/log, errors discarded by the suite)", regexp.MustCompile(`(?s)^Timed out after [^\n]*\nExpected\n\s*<string>: \n`)},
	{"sysctl refused by the kernel or runtime", regexp.MustCompile(`(?i)write /proc/sys/[^:]*: invalid argument`)},
	{"image pull", regexp.MustCompile(`(ErrImagePull|ImagePullBackOff|[Ff]ailed to pull image|pull access denied)`)},
	{"container exited with an error (its output needs pods/log)", regexp.MustCompile(`(?s)expected pod .* success: .*failed with status`)},
	{"DNS", regexp.MustCompile(`(?i)(\bdns\b|nslookup|resolv\.conf|dig )`)},
	{"timed out waiting for a pod state", regexp.MustCompile(`(?i)(timed out|timeout|deadline exceeded|Told to stop trying)`)},
}

// Category returns the category of a failure message, or "other".
func Category(msg string) string {
	for _, c := range categories {
		if c.re.MatchString(msg) {
			return c.Name
		}
	}
	return "other"
}
