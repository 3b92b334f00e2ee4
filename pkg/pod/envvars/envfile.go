package envvars

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// The env file format of valueFrom.fileKeyRef (the EnvFiles feature), as the
// upstream kubelet reads it:
//
//	# a comment; blank lines are skipped, leading blanks are ignored
//	NAME='value'            a value is single-quoted
//	MULTI='first line
//	second line'            and may span lines (joined with \n)
//	NAME='value'  # note    blanks and a comment may follow the quote
//	EMPTY= 'ignored'        a blank after '=' makes the value empty
//
// A line without '=', an empty name, a blank before '=', a value that does
// not start with a quote, text after the closing quote or a quote never
// closed is an error. The first definition of the key wins.

// maxEnvFileLine bounds one line of an env file (a longer one is an error,
// never a large allocation driven by the pod).
const maxEnvFileLine = 64 << 10

// errEnvFile is the class of a file that breaks the format.
var errEnvFile = errors.New("invalid env file")

// ParseEnvFile returns the value of key in the env file read from r, and
// whether the key was defined with a non-empty value (upstream treats an
// empty value as not defined).
func ParseEnvFile(r io.Reader, key string) (string, bool, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxEnvFileLine)
	n := 0
	bad := func(line int, what string) error { return fmt.Errorf("%w: line %d: %s", errEnvFile, line, what) }
	for sc.Scan() {
		n++
		line := strings.TrimLeft(sc.Text(), " \t")
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest, ok := strings.Cut(line, "=")
		switch {
		case !ok:
			return "", false, bad(n, "no '='")
		case strings.TrimRight(name, " \t") == "":
			return "", false, bad(n, "empty variable name")
		case strings.TrimRight(name, " \t") != name:
			return "", false, bad(n, "blank before '='")
		}
		if rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
			// NAME= 'x' defines NAME as empty, as a shell would.
			if name == key {
				return "", false, nil
			}
			continue
		}
		if rest == "" || rest[0] != '\'' {
			return "", false, bad(n, "the value is not in single quotes")
		}
		start := n
		var val strings.Builder
		rest = rest[1:]
		for {
			if i := strings.IndexByte(rest, '\''); i >= 0 {
				val.WriteString(rest[:i])
				if after := strings.TrimLeft(rest[i+1:], " \t"); after != "" && after[0] != '#' {
					return "", false, bad(n, "text after the closing quote")
				}
				break
			}
			val.WriteString(rest)
			val.WriteByte('\n')
			if !sc.Scan() {
				if err := sc.Err(); err != nil {
					return "", false, fmt.Errorf("%w: %v", errEnvFile, err)
				}
				return "", false, bad(start, "the quote is never closed")
			}
			n++
			rest = sc.Text()
		}
		if name == key {
			return val.String(), val.Len() > 0, nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", false, fmt.Errorf("%w: %v", errEnvFile, err)
	}
	return "", false, nil
}

// FileKeyValue reads ref's key from the env file at ref.Path inside the
// volume directory dir. The path is resolved inside dir (os.OpenInRoot):
// neither "..", an absolute path nor a symbolic link written by the pod
// leads out of the volume.
func FileKeyValue(dir string, ref *v1.FileKeySelector) (string, bool, error) {
	if ref.Path == "" || filepath.IsAbs(ref.Path) {
		return "", false, fmt.Errorf("fileKeyRef path %q must be relative", ref.Path)
	}
	f, err := os.OpenInRoot(dir, ref.Path)
	if err != nil {
		return "", false, fmt.Errorf("failed to open environment variable file %q in volume %q: %w", ref.Path, ref.VolumeName, err)
	}
	defer f.Close()
	return ParseEnvFile(f, ref.Key)
}
