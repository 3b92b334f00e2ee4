package file

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/pkg/pod/podconfig"
	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/pod/staticpod"
)

// DefaultCheckFrequency is upstream's default fileCheckFrequency.
const DefaultCheckFrequency = 20 * time.Second

// maxManifestSize bounds what is read from one file.
const maxManifestSize = 10 << 20

// ErrorFunc receives a manifest that cannot be used: the file's path and
// why. It is called from the source's goroutine and must not block.
type ErrorFunc func(path string, err error)

// Config configures a Source.
type Config struct {
	// Path is staticPodPath: a directory of manifests or a single file.
	Path string
	// NodeName names this node; it enters the pods' names and UIDs.
	NodeName string
	// CheckFrequency is fileCheckFrequency; DefaultCheckFrequency when 0.
	CheckFrequency time.Duration
	// OnError, if set, is told about every invalid manifest.
	OnError ErrorFunc
}

// Source watches Config.Path and sends its pods.
type Source struct {
	cfg     Config
	path    string
	updates chan<- podconfig.PodUpdate

	// disableWatch makes Run rely on the periodic recheck alone (tests).
	disableWatch bool

	files    map[string]*fileState
	lastSent []*v1.Pod
	sent     bool
	missing  bool
}

// fileState remembers one file's last content and what came of it.
type fileState struct {
	data     []byte
	pods     []*v1.Pod // pods of data, or the last good pods when data is invalid
	err      error     // why data is invalid, nil when it is valid
	dupeWith string    // the earlier file whose pod names this one repeats
}

// New returns a source that sends on updates. Run starts it.
func New(cfg Config, updates chan<- podconfig.PodUpdate) *Source {
	if cfg.CheckFrequency <= 0 {
		cfg.CheckFrequency = DefaultCheckFrequency
	}
	return &Source{
		cfg:     cfg,
		path:    filepath.Clean(cfg.Path),
		updates: updates,
		files:   map[string]*fileState{},
	}
}

// Start scans at once, then on every change and every CheckFrequency, until
// ctx ends; it then returns nil. It returns an error only for a
// configuration that can never work (empty path or node name).
func (s *Source) Start(ctx context.Context) error {
	if s.cfg.Path == "" {
		return errors.New("static pod path is empty")
	}
	if s.cfg.NodeName == "" {
		return errors.New("node name is empty")
	}
	logger := klog.FromContext(ctx).WithName("file-source").WithValues("path", s.path)
	ctx = klog.NewContext(ctx, logger)

	var events <-chan fsnotify.Event
	var watchErrs <-chan error
	var watcher *fsnotify.Watcher
	if !s.disableWatch {
		w, err := fsnotify.NewWatcher()
		if err != nil {
			logger.Error(err, "Cannot watch static pod path; relying on the periodic recheck",
				"checkFrequency", s.cfg.CheckFrequency)
		} else {
			watcher = w
			defer watcher.Close()
			events, watchErrs = watcher.Events, watcher.Errors
		}
	}

	ticker := time.NewTicker(s.cfg.CheckFrequency)
	defer ticker.Stop()
	var removed map[string]bool
	for {
		if watcher != nil {
			s.ensureWatch(logger, watcher)
		}
		if !s.scanAndSend(ctx, removed) {
			return nil
		}
		removed = nil
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			logger.V(4).Info("Static pod path changed", "event", ev.String())
			removed = drain(events, ev)
		case err, ok := <-watchErrs:
			if !ok {
				watchErrs = nil
				continue
			}
			logger.Error(err, "Watching static pod path failed; rescanning")
		}
	}
}

// drain takes the events already queued after first (one scan covers them
// all) and returns the paths among them that were removed or renamed away.
func drain(events <-chan fsnotify.Event, first fsnotify.Event) map[string]bool {
	removed := map[string]bool{}
	note := func(ev fsnotify.Event) {
		if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
			removed[filepath.Clean(ev.Name)] = true
		}
	}
	note(first)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return removed
			}
			note(ev)
		default:
			return removed
		}
	}
}

// ensureWatch (re)adds the watch: on the directory itself, or for a single
// file on its directory, so files replaced by rename are seen. Adding an
// existing watch is harmless; a path that does not exist yet is retried on
// the next scan.
func (s *Source) ensureWatch(logger klog.Logger, w *fsnotify.Watcher) {
	dir := s.path
	if info, err := os.Stat(s.path); err != nil || !info.IsDir() {
		dir = filepath.Dir(s.path)
	}
	if err := w.Add(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		logger.V(2).Info("Cannot watch static pod directory; relying on the periodic recheck", "dir", dir, "err", err)
	}
}

// scanAndSend reads the path and sends the pods if they changed. removed
// are the manifests the watch saw removed since the last scan: their pods
// are sent as gone first, even when the file is back by now with the same
// content, so removing and re-adding a manifest restarts its pods, as
// upstream's source (which acts on each inotify event) does. It returns
// false when ctx ended while sending.
func (s *Source) scanAndSend(ctx context.Context, removed map[string]bool) bool {
	if s.sent && len(removed) > 0 {
		if without := s.withoutFiles(removed); len(without) < len(s.lastSent) && !s.send(ctx, without) {
			return false
		}
	}
	pods := s.scan(klog.FromContext(ctx))
	if s.sent && equality.Semantic.DeepEqual(pods, s.lastSent) {
		return true
	}
	return s.send(ctx, pods)
}

// withoutFiles is the last sent set less the pods of the given manifests,
// which are forgotten (so they are read again).
func (s *Source) withoutFiles(paths map[string]bool) []*v1.Pod {
	gone := map[types.UID]bool{}
	for path := range paths {
		if st := s.files[path]; st != nil {
			for _, p := range st.pods {
				gone[p.UID] = true
			}
			delete(s.files, path)
		}
	}
	out := []*v1.Pod{}
	for _, p := range s.lastSent {
		if !gone[p.UID] {
			out = append(out, p)
		}
	}
	return out
}

func (s *Source) send(ctx context.Context, pods []*v1.Pod) bool {
	select {
	case s.updates <- podconfig.PodUpdate{Op: podconfig.SET, Source: podspec.SourceFile, Pods: pods}:
		klog.FromContext(ctx).V(2).Info("Sent static pods", "count", len(pods))
		s.lastSent = pods
		s.sent = true
		return true
	case <-ctx.Done():
		return false
	}
}

// scan reads every manifest and returns all usable pods, in file order.
func (s *Source) scan(logger klog.Logger) []*v1.Pod {
	paths, err := s.manifestPaths()
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if !s.missing {
			logger.Info("Static pod path does not exist; will look again", "checkFrequency", s.cfg.CheckFrequency)
		}
		s.missing = true
		paths = nil
	case err != nil:
		logger.Error(err, "Cannot read static pod path; keeping the pods read before")
		return s.lastSent
	default:
		if s.missing {
			logger.Info("Static pod path appeared")
		}
		s.missing = false
	}

	current := make(map[string]bool, len(paths))
	owner := map[string]string{} // namespace/name -> path of the file defining it
	pods := []*v1.Pod{}
	for _, path := range paths {
		current[path] = true
		st := s.read(logger, path)
		if st == nil || len(st.pods) == 0 {
			continue
		}
		if other := clash(st.pods, owner); other != "" {
			if st.dupeWith != other {
				st.dupeWith = other
				s.report(logger, path, fmt.Errorf("defines a pod that %s already defines; ignoring this file", other))
			}
			continue
		}
		st.dupeWith = ""
		for _, p := range st.pods {
			owner[p.Namespace+"/"+p.Name] = path
			pods = append(pods, p)
		}
	}
	for path := range s.files {
		if !current[path] {
			delete(s.files, path)
		}
	}
	return pods
}

func clash(pods []*v1.Pod, owner map[string]string) string {
	for _, p := range pods {
		if other, ok := owner[p.Namespace+"/"+p.Name]; ok {
			return other
		}
	}
	return ""
}

// read parses one file, reusing the last result when its content did not
// change, and reports a new invalid content once.
func (s *Source) read(logger klog.Logger, path string) *fileState {
	st := s.files[path]
	data, err := readLimited(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			// Removed between listing and reading.
			delete(s.files, path)
			return nil
		}
		if st == nil || st.err == nil || st.err.Error() != err.Error() {
			s.report(logger, path, err)
		}
		if st == nil {
			st = &fileState{}
			s.files[path] = st
		}
		st.err = err
		st.data = nil // parse again once it can be read
		return st
	}
	if st != nil && st.err == nil && string(st.data) == string(data) {
		return st
	}
	if st != nil && st.err != nil && st.data != nil && string(st.data) == string(data) {
		return st // same invalid content: already reported
	}
	pods, err := staticpod.Parse(data, podspec.SourceFile, path, s.cfg.NodeName)
	if st == nil {
		st = &fileState{}
		s.files[path] = st
	}
	st.data = data
	if err != nil {
		st.err = err
		if len(st.pods) > 0 {
			err = fmt.Errorf("%w (keeping the pods of the last valid version)", err)
		}
		s.report(logger, path, err)
		return st
	}
	st.err = nil
	st.pods = pods
	logger.V(4).Info("Read static pod manifest", "file", path, "pods", len(pods))
	return st
}

func (s *Source) report(logger klog.Logger, path string, err error) {
	logger.Error(err, "Invalid static pod manifest", "file", path)
	if s.cfg.OnError != nil {
		s.cfg.OnError(path, err)
	}
}

// manifestPaths lists the files to read, sorted.
func (s *Source) manifestPaths() ([]string, error) {
	info, err := os.Stat(s.path)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return []string{s.path}, nil
	}
	entries, err := os.ReadDir(s.path)
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, e := range entries {
		if ignored(e.Name()) {
			continue
		}
		path := filepath.Join(s.path, e.Name())
		// Stat, not the entry's type, so symlinks to files count.
		fi, err := os.Stat(path)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		paths = append(paths, path)
	}
	sort.Strings(paths)
	return paths, nil
}

var ignoredSuffixes = []string{
	"~", ".swp", ".swo", ".swx", ".tmp", ".bak", ".orig", ".rej",
	".dpkg-old", ".dpkg-new", ".dpkg-dist", ".dpkg-tmp", ".rpmnew", ".rpmsave", ".rpmorig",
}

// ignored reports whether a directory entry is not a manifest: a dotfile
// or an editor's or package manager's leftover.
func ignored(name string) bool {
	if strings.HasPrefix(name, ".") {
		return true
	}
	for _, suffix := range ignoredSuffixes {
		if strings.HasSuffix(name, suffix) {
			return true
		}
	}
	return false
}

func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxManifestSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxManifestSize {
		return nil, fmt.Errorf("manifest is larger than the %d bytes allowed", maxManifestSize)
	}
	return data, nil
}
