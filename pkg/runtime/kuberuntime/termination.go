package kuberuntime

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Termination message limits (upstream's).
const (
	// MaxTerminationMessageBytes is the most of a termination message file
	// read: its last 4096 bytes.
	MaxTerminationMessageBytes = 4096
	// MaxTerminationLogLines and MaxTerminationLogBytes bound the log tail
	// used with FallbackToLogsOnError.
	MaxTerminationLogLines = 80
	MaxTerminationLogBytes = 2048
)

// terminationMessage returns the termination message of an exited
// container: the last 4 KiB of the file mounted at its
// terminationMessagePath; with FallbackToLogsOnError, when that is empty
// and the container failed, the tail of its log (80 lines, 2 KiB).
func terminationMessage(st *runtimeapi.ContainerStatus) string {
	ann := st.GetAnnotations()
	path := ann[AnnotationTerminationMessagePath]
	fallback := ann[AnnotationTerminationMessagePolicy] == string(v1.TerminationMessageFallbackToLogsOnError) &&
		st.GetExitCode() != 0 && st.GetReason() != "ContainerCannotRun"
	msg, checkLogs := "", fallback
	if path != "" {
		for _, mnt := range st.GetMounts() {
			if mnt.GetContainerPath() != path {
				continue
			}
			data, err := readTail(mnt.GetHostPath(), MaxTerminationMessageBytes)
			switch {
			case os.IsNotExist(err):
			case err != nil:
				msg, checkLogs = fmt.Sprintf("Error on reading termination log %s: %v", mnt.GetHostPath(), err), false
			default:
				msg, checkLogs = string(data), fallback && len(data) == 0
			}
			break
		}
	}
	if checkLogs && st.GetLogPath() != "" {
		msg = logTail(st.GetLogPath(), MaxTerminationLogLines, MaxTerminationLogBytes)
	}
	return msg
}

// readTail returns the last max bytes of a file.
func readTail(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > max {
		if _, err := f.Seek(-max, io.SeekEnd); err != nil {
			return nil, err
		}
	}
	return io.ReadAll(io.LimitReader(f, max))
}

// logTail returns the content of the last lines of a CRI log file
// ("<time> <stream> <P|F> <content>" per line; partial lines joined), at
// most maxBytes of it (the end).
func logTail(path string, lines int, maxBytes int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("Error on reading termination message from logs: %v", err)
	}
	defer f.Close()
	// Read a bounded window from the end: each CRI line carries at most
	// a few dozen bytes of prefix, and 16 KiB per wanted line is plenty.
	const perLine = 16 << 10
	skipFirst := false
	if fi, err := f.Stat(); err == nil && fi.Size() > int64(lines*perLine) {
		_, err = f.Seek(-int64(lines*perLine), io.SeekEnd)
		skipFirst = err == nil // it starts mid-line
	}
	var entries [][]byte
	var partial []byte
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if skipFirst {
			skipFirst = false
			continue
		}
		content, full, ok := parseCRILine(sc.Bytes())
		if !ok {
			continue
		}
		partial = append(partial, content...)
		if full {
			entries = append(entries, append(partial, '\n'))
			partial = nil
		}
	}
	if len(partial) > 0 {
		entries = append(entries, partial)
	}
	if len(entries) > lines {
		entries = entries[len(entries)-lines:]
	}
	out := bytes.Join(entries, nil)
	if len(out) > maxBytes {
		out = out[len(out)-maxBytes:]
	}
	return string(out)
}

// parseCRILine splits one CRI log line into its content and whether it
// ends a log entry (F) or continues (P).
func parseCRILine(line []byte) ([]byte, bool, bool) {
	fields := bytes.SplitN(line, []byte(" "), 4)
	if len(fields) < 3 {
		return nil, false, false
	}
	content := []byte{}
	if len(fields) == 4 {
		content = fields[3]
	}
	switch string(fields[2]) {
	case "P":
		return content, false, true
	case "F":
		return content, true, true
	}
	// Old format without a tag: the rest is content.
	return bytes.Join(fields[2:], []byte(" ")), true, true
}
