package envvars

import (
	"strings"
	"unicode/utf8"
)

// Expand replaces $(VAR) references in s using lookup, with the semantics
// of the Kubernetes API (and the upstream kubelet's expansion):
//   - "$(NAME)" becomes the value of NAME when lookup knows it, and stays
//     "$(NAME)" verbatim when it does not;
//   - "$$" is an escaped "$": "$$(NAME)" becomes "$(NAME)";
//   - a "$" followed by anything else, or an unterminated "$(", is kept as
//     written (scanning goes on after it).
func Expand(s string, lookup func(string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	out := make([]byte, 0, len(s))
	last := 0
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			continue
		}
		out = append(out, s[last:i]...)
		rest := s[i+1:]
		r, size := utf8.DecodeRuneInString(rest)
		switch r {
		case '$':
			out = append(out, '$')
			i += size
		case '(':
			end := -1
			for j := 1; j < len(rest); j++ {
				if rest[j] == ')' {
					end = j
					break
				}
			}
			if end < 0 {
				// Incomplete reference: keep "$(" and scan on.
				out = append(out, '$', '(')
				i++
			} else {
				name := rest[1:end]
				if v, ok := lookup(name); ok {
					out = append(out, v...)
				} else {
					out = append(out, "$("+name+")"...)
				}
				i += end + 1
			}
		default:
			out = append(out, '$')
			out = append(out, rest[:size]...)
			i += size
		}
		last = i + 1
	}
	return string(append(out, s[last:]...))
}

// Lookup returns a lookup function over maps tried in order.
func Lookup(maps ...map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		for _, m := range maps {
			if v, ok := m[name]; ok {
				return v, true
			}
		}
		return "", false
	}
}
