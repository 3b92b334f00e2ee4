package podspec

import (
	"fmt"
	"strings"
)

// MaxUIDLength bounds a UID used as a directory name (a file name is at
// most 255 bytes; the pod log directory adds namespace and name to it).
const MaxUIDLength = 128

// UIDPathElement returns why uid cannot name a directory of its own under
// the kubelet's root dir ("pods/<uid>") and the pod log dir, or nil: it must
// be one clean path element: not empty, not "." or "..", without "/", "\"
// or NUL, at most MaxUIDLength bytes.
func UIDPathElement(uid string) error {
	switch {
	case uid == "":
		return fmt.Errorf("is empty")
	case uid == "." || uid == "..":
		return fmt.Errorf("is %q, which names a directory, not one of its own", uid)
	case strings.ContainsAny(uid, "/\\\x00"):
		return fmt.Errorf("contains a path separator or NUL")
	case len(uid) > MaxUIDLength:
		return fmt.Errorf("is %d bytes long, more than %d", len(uid), MaxUIDLength)
	}
	return nil
}
