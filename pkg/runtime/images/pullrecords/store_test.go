package pullrecords

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

const upstreamData = "testdata/upstream-1.37.2"

// The records of testdata/upstream-1.37.2, as upstream wrote them.
var (
	upstreamTime    = metav1.NewTime(time.Date(2026, 11, 30, 10, 20, 30, 0, time.UTC))
	upstreamIntents = []string{"busybox", "registry.example/team/app:1.0"}
	upstreamRecords = []*kubeletv1beta1.ImagePulledRecord{
		{LastUpdatedTime: upstreamTime, ImageRef: "sha256:aaaa", CredentialMapping: map[string]kubeletv1beta1.ImagePullCredentials{
			"registry.example/team/app": {KubernetesSecrets: []kubeletv1beta1.ImagePullSecret{
				{UID: "uid-1", Namespace: "ns", Name: "pull", CredentialHash: "abc"},
				{UID: "uid-2", Namespace: "ns2", Name: "pull2", CredentialHash: "def"}}},
			"registry.example/other": {NodePodsAccessible: true},
			"registry.example/sa":    {KubernetesServiceAccounts: []kubeletv1beta1.ImagePullServiceAccount{{UID: "sa-uid", Namespace: "ns", Name: "default"}}},
		}},
		{LastUpdatedTime: upstreamTime, ImageRef: "sha256:bbbb"},
	}
)

// copyTree copies src into a new root directory and returns it.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	root := t.TempDir()
	err := filepath.Walk(src, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		dst := filepath.Join(root, rel)
		if info.IsDir() {
			return os.MkdirAll(dst, 0o700)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func open(t *testing.T, root string) *Store {
	t.Helper()
	s, err := Open(klog.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func clean(rec *kubeletv1beta1.ImagePulledRecord) *kubeletv1beta1.ImagePulledRecord {
	out := rec.DeepCopy()
	out.TypeMeta = metav1.TypeMeta{}
	out.LastUpdatedTime = metav1.NewTime(out.LastUpdatedTime.UTC())
	if len(out.CredentialMapping) == 0 {
		out.CredentialMapping = nil
	}
	return out
}

// A node taken over from upstream: its records read as they were written.
func TestReadsUpstreamRecords(t *testing.T) {
	s := open(t, copyTree(t, upstreamData))
	intents, err := s.ListIntents()
	if err != nil {
		t.Fatal(err)
	}
	var images []string
	for _, in := range intents {
		images = append(images, in.Image)
	}
	sort.Strings(images)
	if !reflect.DeepEqual(images, upstreamIntents) {
		t.Errorf("intents %v, want %v", images, upstreamIntents)
	}
	for _, img := range upstreamIntents {
		if ok, err := s.IntentExists(img); !ok || err != nil {
			t.Errorf("IntentExists(%s) = %v, %v", img, ok, err)
		}
	}
	for _, want := range upstreamRecords {
		got, exists, err := s.GetPulled(want.ImageRef)
		if err != nil || !exists {
			t.Fatalf("GetPulled(%s): %v %v", want.ImageRef, exists, err)
		}
		if !reflect.DeepEqual(clean(got), clean(want)) {
			t.Errorf("%s:\n got %+v\nwant %+v", want.ImageRef, clean(got), clean(want))
		}
	}
	recs, err := s.ListPulled()
	if err != nil || len(recs) != len(upstreamRecords) {
		t.Errorf("ListPulled: %d records, %v", len(recs), err)
	}
}

// Handed back to upstream: this kubelet writes, for the same records,
// exactly the bytes upstream writes, under the same names, with the same
// permissions.
func TestWritesUpstreamBytes(t *testing.T) {
	root := t.TempDir()
	s := open(t, root)
	for _, img := range upstreamIntents {
		if err := s.WriteIntent(img); err != nil {
			t.Fatal(err)
		}
	}
	for _, rec := range upstreamRecords {
		if err := s.WritePulled(rec); err != nil {
			t.Fatal(err)
		}
	}
	for _, sub := range []string{"pulling", "pulled"} {
		want, err := os.ReadDir(filepath.Join(upstreamData, DirName, sub))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadDir(filepath.Join(root, DirName, sub))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Errorf("%s: %d files, want %d", sub, len(got), len(want))
		}
		for _, w := range want {
			wb, _ := os.ReadFile(filepath.Join(upstreamData, DirName, sub, w.Name()))
			path := filepath.Join(root, DirName, sub, w.Name())
			gb, err := os.ReadFile(path)
			if err != nil {
				t.Errorf("%s/%s not written: %v", sub, w.Name(), err)
				continue
			}
			if !bytes.Equal(gb, wb) {
				t.Errorf("%s/%s:\n got %s\nwant %s", sub, w.Name(), gb, wb)
			}
			if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
				t.Errorf("%s mode %v, want 0600", path, fi.Mode().Perm())
			}
		}
	}
	for _, d := range []string{DirName, DirName + "/pulling", DirName + "/pulled"} {
		if fi, err := os.Stat(filepath.Join(root, d)); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v, want a 0700 directory", d, fi, err)
		}
	}
}

func TestWriteReadDelete(t *testing.T) {
	s := open(t, t.TempDir())
	if ok, err := s.IntentExists("a:1"); ok || err != nil {
		t.Errorf("empty store has an intent: %v %v", ok, err)
	}
	if _, exists, err := s.GetPulled("sha256:x"); exists || err != nil {
		t.Errorf("empty store has a record: %v %v", exists, err)
	}
	must(t, s.WriteIntent("a:1"))
	must(t, s.WriteIntent("a:1")) // idempotent
	must(t, s.WritePulled(&kubeletv1beta1.ImagePulledRecord{ImageRef: "sha256:x", LastUpdatedTime: upstreamTime}))
	if n, p, err := s.Count(); n != 1 || p != 1 || err != nil {
		t.Errorf("Count: %d %d %v", n, p, err)
	}
	if ok, _ := s.IntentExists("a:1"); !ok {
		t.Errorf("intent not found")
	}
	must(t, s.DeleteIntent("a:1"))
	must(t, s.DeleteIntent("a:1")) // missing is fine
	must(t, s.DeletePulled("sha256:x"))
	must(t, s.DeletePulled("sha256:x"))
	if n, p, _ := s.Count(); n != 0 || p != 0 {
		t.Errorf("after deleting: %d %d", n, p)
	}
	entries, _ := os.ReadDir(filepath.Join(s.Dir(), "pulled"))
	if len(entries) != 0 {
		t.Errorf("left files (temporary?) behind: %v", entries)
	}
}

// Bad files never stop the store: each is reported by name and skipped by
// listings; a bad record reads as present but unreadable (so the image is
// re-verified).
func TestCorruptRecords(t *testing.T) {
	root := t.TempDir()
	s := open(t, root)
	pulled := filepath.Join(root, DirName, "pulled")
	pulling := filepath.Join(root, DirName, "pulling")
	must(t, s.WritePulled(&kubeletv1beta1.ImagePulledRecord{ImageRef: "sha256:good", LastUpdatedTime: upstreamTime}))
	must(t, s.WriteIntent("good:1"))
	bad := map[string]string{
		"sha256:truncated": `{"kind":"ImagePulledRecord","apiVersion":"kubelet.config.k8s.io/v1beta1","imageRef":"sha256:trunc`,
		"sha256:empty":     ``,
		"sha256:nokind":    `{"imageRef":"sha256:nokind","lastUpdatedTime":"2026-01-01T00:00:00Z"}`,
		"sha256:wrongkind": `{"kind":"ImagePullIntent","apiVersion":"kubelet.config.k8s.io/v1beta1","image":"x"}`,
		"sha256:version":   `{"kind":"ImagePulledRecord","apiVersion":"kubelet.config.k8s.io/v2","imageRef":"sha256:version","lastUpdatedTime":"2026-01-01T00:00:00Z"}`,
		"sha256:unknown":   `{"kind":"ImagePulledRecord","apiVersion":"kubelet.config.k8s.io/v1beta1","imageRef":"sha256:unknown","lastUpdatedTime":"2026-01-01T00:00:00Z","extra":1}`,
		"sha256:dup":       `{"kind":"ImagePulledRecord","apiVersion":"kubelet.config.k8s.io/v1beta1","imageRef":"sha256:dup","imageRef":"sha256:dup","lastUpdatedTime":"2026-01-01T00:00:00Z"}`,
		"sha256:case":      `{"kind":"ImagePulledRecord","apiVersion":"kubelet.config.k8s.io/v1beta1","ImageRef":"sha256:case","lastUpdatedTime":"2026-01-01T00:00:00Z"}`,
		"sha256:type":      `{"kind":"ImagePulledRecord","apiVersion":"kubelet.config.k8s.io/v1beta1","imageRef":7,"lastUpdatedTime":"2026-01-01T00:00:00Z"}`,
	}
	for ref, content := range bad {
		must(t, os.WriteFile(filepath.Join(pulled, FileName(ref)), []byte(content), 0o600))
	}
	// Not records: ignored by listings and left alone.
	must(t, os.WriteFile(filepath.Join(pulled, "notes.txt"), []byte("x"), 0o600))
	must(t, os.MkdirAll(filepath.Join(pulled, "sha256-dir"), 0o700))
	// A record under another ref's name does not exist for that ref.
	must(t, os.WriteFile(filepath.Join(pulled, FileName("sha256:elsewhere")), []byte(`{"kind":"ImagePulledRecord","apiVersion":"kubelet.config.k8s.io/v1beta1","lastUpdatedTime":"2026-01-01T00:00:00Z","imageRef":"sha256:other"}`+"\n"), 0o600))
	must(t, os.WriteFile(filepath.Join(pulling, FileName("bad:1")), []byte(`{"kind":"ImagePullIntent"`), 0o600))

	for ref := range bad {
		rec, exists, err := s.GetPulled(ref)
		if rec != nil || !exists || err == nil {
			t.Errorf("GetPulled(%s) = %v, %v, %v: want exists with an error", ref, rec, exists, err)
		}
	}
	if rec, exists, err := s.GetPulled("sha256:elsewhere"); rec != nil || exists || err != nil {
		t.Errorf("a record naming another ref: %v %v %v", rec, exists, err)
	}
	recs, err := s.ListPulled()
	if len(recs) != 2 { // good and elsewhere's
		t.Errorf("ListPulled read %d records, want 2", len(recs))
	}
	if err == nil {
		t.Fatal("ListPulled reported no bad file")
	}
	for ref := range bad {
		if !strings.Contains(err.Error(), FileName(ref)) {
			t.Errorf("the error does not name %s's file: %v", ref, err)
		}
	}
	if strings.Contains(err.Error(), "notes.txt") || strings.Contains(err.Error(), "sha256-dir") {
		t.Errorf("a file that is not a record was read: %v", err)
	}
	if ok, err := s.IntentExists("bad:1"); err == nil {
		t.Errorf("an unreadable intent: %v %v", ok, err)
	}
	if intents, err := s.ListIntents(); len(intents) != 1 || err == nil {
		t.Errorf("ListIntents: %v %v", intents, err)
	}
	// Opening again (a restart) neither fails nor touches them.
	s2 := open(t, root)
	if _, exists, err := s2.GetPulled("sha256:truncated"); !exists || err == nil {
		t.Errorf("after reopening: %v %v", exists, err)
	}
	if _, err := os.Stat(filepath.Join(pulled, "notes.txt")); err != nil {
		t.Errorf("a foreign file was removed: %v", err)
	}
}

// Records of v1alpha1 (1.33's) are read, and rewritten as v1beta1 when the
// store opens, as upstream does; temporary files of an interrupted write
// are removed.
func TestOpenMigratesAndCleans(t *testing.T) {
	root := t.TempDir()
	pulled := filepath.Join(root, DirName, "pulled")
	pulling := filepath.Join(root, DirName, "pulling")
	must(t, os.MkdirAll(pulled, 0o700))
	must(t, os.MkdirAll(pulling, 0o700))
	alpha := `{"kind":"ImagePulledRecord","apiVersion":"kubelet.config.k8s.io/v1alpha1","lastUpdatedTime":"2025-06-21T12:26:40Z","imageRef":"sha256:alpha","credentialMapping":{"docker.io/testing/test":{"nodePodsAccessible":true}}}`
	must(t, os.WriteFile(filepath.Join(pulled, FileName("sha256:alpha")), []byte(alpha), 0o600))
	must(t, os.WriteFile(filepath.Join(pulling, FileName("alpha:1")), []byte(`{"kind":"ImagePullIntent","apiVersion":"kubelet.config.k8s.io/v1alpha1","image":"alpha:1"}`), 0o600))
	tmp := filepath.Join(pulled, FileName("sha256:x")+".123"+tmpSuffix)
	must(t, os.WriteFile(tmp, []byte(`{"kind":`), 0o600))

	s := open(t, root)
	b, _ := os.ReadFile(filepath.Join(pulled, FileName("sha256:alpha")))
	want := `{"kind":"ImagePulledRecord","apiVersion":"kubelet.config.k8s.io/v1beta1","lastUpdatedTime":"2025-06-21T12:26:40Z","imageRef":"sha256:alpha","credentialMapping":{"docker.io/testing/test":{"nodePodsAccessible":true}}}` + "\n"
	if string(b) != want {
		t.Errorf("migrated record:\n got %s\nwant %s", b, want)
	}
	b, _ = os.ReadFile(filepath.Join(pulling, FileName("alpha:1")))
	if !strings.Contains(string(b), `"apiVersion":"kubelet.config.k8s.io/v1beta1"`) {
		t.Errorf("migrated intent: %s", b)
	}
	if rec, _, err := s.GetPulled("sha256:alpha"); err != nil || !rec.CredentialMapping["docker.io/testing/test"].NodePodsAccessible {
		t.Errorf("migrated record reads %v %v", rec, err)
	}
	if _, err := os.Stat(tmp); err == nil {
		t.Errorf("temporary file left")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
