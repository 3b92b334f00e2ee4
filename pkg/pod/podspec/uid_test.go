package podspec

import (
	"strings"
	"testing"
)

func TestUIDPathElement(t *testing.T) {
	for uid, ok := range map[string]bool{
		"9b2e1d0c-6c2a-4b8e-9f0e-2f1d3c4b5a69": true,
		"0123456789abcdef0123456789abcdef":     true,
		"a.b":                                  true,
		"..a":                                  true,
		"":                                     false,
		".":                                    false,
		"..":                                   false,
		"../../victim":                         false,
		"a/b":                                  false,
		"/abs":                                 false,
		`a\b`:                                  false,
		"a\x00b":                               false,
		strings.Repeat("x", MaxUIDLength):      true,
		strings.Repeat("x", MaxUIDLength+1):    false,
	} {
		if err := UIDPathElement(uid); (err == nil) != ok {
			t.Errorf("%q: err %v, want ok=%v", uid, err, ok)
		}
	}
}
