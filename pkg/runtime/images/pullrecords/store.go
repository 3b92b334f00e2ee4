package pullrecords

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/klog/v2"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// DirName is the store's directory under the kubelet's root directory.
const DirName = "image_manager"

// Store reads and writes the record files. It does no locking: the
// Manager serialises its calls.
type Store struct {
	pulling string
	pulled  string
}

// Open makes <rootDir>/image_manager/{pulling,pulled} (0700) when they are
// missing, removes temporary files a crash left, and rewrites records of
// an older version in the current one (a record that cannot be read is
// logged and left as it is).
func Open(logger klog.Logger, rootDir string) (*Store, error) {
	dir := filepath.Join(rootDir, DirName)
	s := &Store{pulling: filepath.Join(dir, "pulling"), pulled: filepath.Join(dir, "pulled")}
	for _, d := range []string{s.pulling, s.pulled} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("image pull records: %w", err)
		}
		removeTemps(logger, d)
	}
	s.migrate(logger)
	return s, nil
}

// Dir is <root-dir>/image_manager.
func (s *Store) Dir() string { return filepath.Dir(s.pulling) }

// WriteIntent records that image (a container's image field) is being
// pulled.
func (s *Store) WriteIntent(image string) error {
	b, err := EncodeIntent(image)
	if err != nil {
		return err
	}
	return writeAtomic(s.pulling, FileName(image), b)
}

// IntentExists reports whether there is an intent for image. An intent
// file that cannot be read is an error; one naming another image (a file
// put in the wrong place) is not an intent for image.
func (s *Store) IntentExists(image string) (bool, error) {
	b, err := os.ReadFile(filepath.Join(s.pulling, FileName(image)))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	intent, _, err := DecodeIntent(b)
	if err != nil {
		return false, fmt.Errorf("image pull intent for %q: %w", image, err)
	}
	return intent.Image == image, nil
}

// DeleteIntent removes the intent for image; a missing one is not an
// error.
func (s *Store) DeleteIntent(image string) error {
	return removeMissingOK(filepath.Join(s.pulling, FileName(image)))
}

// ListIntents returns every intent that can be read, and an error naming
// each file that cannot.
func (s *Store) ListIntents() ([]*kubeletv1beta1.ImagePullIntent, error) {
	var out []*kubeletv1beta1.ImagePullIntent
	err := eachFile(s.pulling, func(path string, b []byte) error {
		intent, _, err := DecodeIntent(b)
		if err != nil {
			return err
		}
		out = append(out, intent)
		return nil
	})
	return out, err
}

// GetPulled returns the pulled record of imageRef. exists is true with an
// error when the file is there but cannot be read; a record naming another
// image ref does not exist for imageRef.
func (s *Store) GetPulled(imageRef string) (rec *kubeletv1beta1.ImagePulledRecord, exists bool, err error) {
	b, err := os.ReadFile(filepath.Join(s.pulled, FileName(imageRef)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	rec, _, err = DecodePulled(b)
	if err != nil {
		return nil, true, fmt.Errorf("image pulled record of %q: %w", imageRef, err)
	}
	if rec.ImageRef != imageRef {
		return nil, false, nil
	}
	return rec, true, nil
}

// WritePulled writes rec (replacing the record of its image ref).
func (s *Store) WritePulled(rec *kubeletv1beta1.ImagePulledRecord) error {
	b, err := EncodePulled(rec)
	if err != nil {
		return err
	}
	return writeAtomic(s.pulled, FileName(rec.ImageRef), b)
}

// DeletePulled removes the record of imageRef; a missing one is not an
// error.
func (s *Store) DeletePulled(imageRef string) error {
	return removeMissingOK(filepath.Join(s.pulled, FileName(imageRef)))
}

// ListPulled returns every pulled record that can be read, and an error
// naming each file that cannot.
func (s *Store) ListPulled() ([]*kubeletv1beta1.ImagePulledRecord, error) {
	var out []*kubeletv1beta1.ImagePulledRecord
	err := eachFile(s.pulled, func(path string, b []byte) error {
		rec, _, err := DecodePulled(b)
		if err != nil {
			return err
		}
		out = append(out, rec)
		return nil
	})
	return out, err
}

// Count returns the number of intent and pulled record files (read or
// not).
func (s *Store) Count() (intents, pulled int, err error) {
	intents, err1 := countFiles(s.pulling)
	pulled, err2 := countFiles(s.pulled)
	return intents, pulled, errors.Join(err1, err2)
}

// migrate rewrites the records of an older version (v1alpha1) as the
// current one, as upstream does when it starts.
func (s *Store) migrate(logger klog.Logger) {
	err := eachFile(s.pulling, func(path string, b []byte) error {
		intent, current, err := DecodeIntent(b)
		if err != nil || current {
			return err
		}
		return s.WriteIntent(intent.Image)
	})
	if err != nil {
		logger.Error(err, "Some image pull intents could not be read or rewritten in the current version; they are treated as unreadable", "dir", s.pulling)
	}
	err = eachFile(s.pulled, func(path string, b []byte) error {
		rec, current, err := DecodePulled(b)
		if err != nil || current {
			return err
		}
		return s.WritePulled(rec)
	})
	if err != nil {
		logger.Error(err, "Some image pulled records could not be read or rewritten in the current version; they are treated as unreadable", "dir", s.pulled)
	}
}

// isRecordFile: a record file of this store, not a temporary file.
func isRecordFile(d fs.DirEntry) bool {
	return !d.IsDir() && strings.HasPrefix(d.Name(), filePrefix) && !strings.HasSuffix(d.Name(), tmpSuffix)
}

// eachFile calls f with the content of each record file of dir, and
// returns every error (reading, or f's), each naming its file.
func eachFile(dir string, f func(path string, b []byte) error) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, d := range entries {
		if !isRecordFile(d) {
			continue
		}
		path := filepath.Join(dir, d.Name())
		b, err := os.ReadFile(path)
		if err == nil {
			err = f(path, b)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", path, err))
		}
	}
	return errors.Join(errs...)
}

func countFiles(dir string) (int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, d := range entries {
		if isRecordFile(d) {
			n++
		}
	}
	return n, nil
}

// writeAtomic writes b to dir/name through a temporary file in dir, so a
// reader sees the old content or the new, never a part.
func writeAtomic(dir, name string, b []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, name+".*"+tmpSuffix)
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, name))
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", filepath.Join(dir, name), err)
	}
	return nil
}

func removeMissingOK(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// removeTemps removes the temporary files a write interrupted by a crash
// left in dir.
func removeTemps(logger klog.Logger, dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, d := range entries {
		if !d.IsDir() && strings.HasPrefix(d.Name(), filePrefix) && strings.HasSuffix(d.Name(), tmpSuffix) {
			if err := os.Remove(filepath.Join(dir, d.Name())); err != nil {
				logger.V(2).Info("Could not remove a temporary image pull record file", "file", filepath.Join(dir, d.Name()), "err", err)
			}
		}
	}
}
