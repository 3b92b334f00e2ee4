package podconfig

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)

func pod(uid, name string, edits ...func(*v1.Pod)) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: name, Namespace: "ns"},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "img:1"}}},
	}
	for _, e := range edits {
		e(p)
	}
	return p
}

func withImage(image string) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Spec.Containers[0].Image = image }
}
func withLabel(k, v string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[k] = v
	}
}
func withAnnotation(k, v string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[k] = v
	}
}
func withPhase(phase v1.PodPhase) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Status.Phase = phase }
}
func withDeletion(p *v1.Pod) {
	ts := metav1.NewTime(t0)
	p.DeletionTimestamp = &ts
}
func withResourceVersion(rv string) func(*v1.Pod) {
	return func(p *v1.Pod) { p.ResourceVersion = rv }
}

// known runs a diff from nothing, as the merger would have, so old pods
// carry the merger's annotations.
func known(t *testing.T, pods ...*v1.Pod) podSet {
	t.Helper()
	next, _, rejected := diff("src", nil, pods, nil, t0)
	if len(rejected) > 0 {
		t.Fatalf("rejected %v", rejected)
	}
	return next
}

// summary renders updates as "OP:uid,uid OP:uid".
func summary(updates []PodUpdate) string {
	var parts []string
	for _, u := range updates {
		var uids []string
		for _, p := range u.Pods {
			uids = append(uids, string(p.UID))
		}
		parts = append(parts, fmt.Sprintf("%s:%s", u.Op, strings.Join(uids, ",")))
	}
	return strings.Join(parts, " ")
}

func TestDiff(t *testing.T) {
	tests := []struct {
		name     string
		old      []*v1.Pod
		incoming []*v1.Pod
		want     string
		rejected int
	}{
		{"empty to empty", nil, nil, "", 0},
		{"new pods are added in source order", nil, []*v1.Pod{pod("b", "b"), pod("a", "a")}, "ADD:b,a", 0},
		{"unchanged pod gives nothing", []*v1.Pod{pod("a", "a")}, []*v1.Pod{pod("a", "a")}, "", 0},
		{"resourceVersion alone gives nothing", []*v1.Pod{pod("a", "a")}, []*v1.Pod{pod("a", "a", withResourceVersion("7"))}, "", 0},
		{"spec change is an update", []*v1.Pod{pod("a", "a")}, []*v1.Pod{pod("a", "a", withImage("img:2"))}, "UPDATE:a", 0},
		{"label change is an update", []*v1.Pod{pod("a", "a")}, []*v1.Pod{pod("a", "a", withLabel("k", "v"))}, "UPDATE:a", 0},
		{"annotation change is an update", []*v1.Pod{pod("a", "a")}, []*v1.Pod{pod("a", "a", withAnnotation("k", "v"))}, "UPDATE:a", 0},
		{"config.seen from the source is ignored", []*v1.Pod{pod("a", "a")}, []*v1.Pod{pod("a", "a", withAnnotation(podspec.ConfigSeenAnnotation, "later"))}, "", 0},
		{"status only is a reconcile", []*v1.Pod{pod("a", "a")}, []*v1.Pod{pod("a", "a", withPhase(v1.PodRunning))}, "RECONCILE:a", 0},
		{"deletion timestamp is a delete", []*v1.Pod{pod("a", "a")}, []*v1.Pod{pod("a", "a", withDeletion)}, "DELETE:a", 0},
		{"still deleting, nothing new", []*v1.Pod{pod("a", "a", withDeletion)}, []*v1.Pod{pod("a", "a", withDeletion)}, "", 0},
		{"gone pods are removed, sorted", []*v1.Pod{pod("z", "z"), pod("y", "y"), pod("k", "k")}, []*v1.Pod{pod("k", "k")}, "REMOVE:y,z", 0},
		{"all kinds in order",
			[]*v1.Pod{pod("gone", "gone"), pod("upd", "upd"), pod("del", "del"), pod("rec", "rec"), pod("same", "same")},
			[]*v1.Pod{pod("same", "same"), pod("rec", "rec", withPhase(v1.PodFailed)), pod("del", "del", withDeletion),
				pod("upd", "upd", withImage("img:9")), pod("new", "new")},
			"REMOVE:gone ADD:new UPDATE:upd DELETE:del RECONCILE:rec", 0},
		{"edited static pod: new UID replaces old", []*v1.Pod{pod("uid1", "web")}, []*v1.Pod{pod("uid2", "web", withImage("img:2"))}, "REMOVE:uid1 ADD:uid2", 0},
		{"no UID is rejected", nil, []*v1.Pod{pod("", "a"), pod("b", "b")}, "ADD:b", 1},
		{"duplicate UID is rejected", nil, []*v1.Pod{pod("a", "a"), pod("a", "a2")}, "ADD:a", 1},
		{"duplicate name is rejected", nil, []*v1.Pod{pod("a", "x"), pod("b", "x")}, "ADD:a", 1},
		{"nil pods are skipped", nil, []*v1.Pod{nil, pod("a", "a")}, "ADD:a", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := known(t, tt.old...)
			_, updates, rejected := diff("src", old, tt.incoming, nil, t0.Add(time.Hour))
			if got := summary(updates); got != tt.want {
				t.Errorf("updates = %q, want %q", got, tt.want)
			}
			if len(rejected) != tt.rejected {
				t.Errorf("rejected %d pods (%v), want %d", len(rejected), rejected, tt.rejected)
			}
			for _, u := range updates {
				if u.Source != "src" {
					t.Errorf("update %s has source %q", u.Op, u.Source)
				}
			}
		})
	}
}

func TestDiffAnnotations(t *testing.T) {
	in := pod("a", "a")
	next, _, _ := diff("file", nil, []*v1.Pod{in}, nil, t0)
	got := next["a"]
	if got.Annotations[podspec.ConfigSourceAnnotation] != "file" {
		t.Errorf("config.source = %q, want file", got.Annotations[podspec.ConfigSourceAnnotation])
	}
	wantSeen := t0.Format(time.RFC3339Nano)
	if got.Annotations[podspec.ConfigSeenAnnotation] != wantSeen {
		t.Errorf("config.seen = %q, want %q", got.Annotations[podspec.ConfigSeenAnnotation], wantSeen)
	}
	if in.Annotations != nil {
		t.Errorf("diff modified the incoming pod: %v", in.Annotations)
	}

	// Later sets, even with changes, keep the first seen time.
	next2, updates, _ := diff("file", next, []*v1.Pod{pod("a", "a", withImage("img:2"))}, nil, t0.Add(time.Hour))
	if summary(updates) != "UPDATE:a" {
		t.Fatalf("updates = %s", summary(updates))
	}
	if s := next2["a"].Annotations[podspec.ConfigSeenAnnotation]; s != wantSeen {
		t.Errorf("config.seen changed to %q, want %q kept", s, wantSeen)
	}
	if next["a"].Spec.Containers[0].Image != "img:1" {
		t.Errorf("diff modified the old set")
	}
}

// An API pod at the known resourceVersion is taken as unchanged without a
// comparison; a new resourceVersion is compared as usual, and a file's
// resourceVersion (from its manifest) is never trusted.
func TestDiffResourceVersionShortcut(t *testing.T) {
	tests := []struct {
		name   string
		source string
		in     *v1.Pod
		want   string
	}{
		{"api, same resourceVersion", podspec.SourceAPI, pod("a", "a", withResourceVersion("7"), withPhase(v1.PodRunning)), ""},
		{"api, new resourceVersion, status changed", podspec.SourceAPI, pod("a", "a", withResourceVersion("8"), withPhase(v1.PodRunning)), "RECONCILE:a"},
		{"api, new resourceVersion, spec changed", podspec.SourceAPI, pod("a", "a", withResourceVersion("8"), withImage("img:2")), "UPDATE:a"},
		{"api, no resourceVersion, compared", podspec.SourceAPI, pod("a", "a", withImage("img:2")), "UPDATE:a"},
		{"file, same resourceVersion, compared", podspec.SourceFile, pod("a", "a", withResourceVersion("7"), withImage("img:2")), "UPDATE:a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old, _, _ := diff(tt.source, nil, []*v1.Pod{pod("a", "a", withResourceVersion("7"))}, nil, t0)
			next, updates, _ := diff(tt.source, old, []*v1.Pod{tt.in}, nil, t0.Add(time.Hour))
			if got := summary(updates); got != tt.want {
				t.Errorf("updates = %q, want %q", got, tt.want)
			}
			if tt.want == "" && next["a"] != old["a"] {
				t.Errorf("an unchanged pod was not kept as known")
			}
			if got := next["a"].Annotations[podspec.ConfigSourceAnnotation]; got != tt.source {
				t.Errorf("config.source = %q, want %q", got, tt.source)
			}
		})
	}
}

// A pod the source dropped in a set the consumer never saw is removed and,
// if back, added anew with a new config.seen, whatever its content.
func TestDiffDropped(t *testing.T) {
	tests := []struct {
		name     string
		old      []*v1.Pod
		incoming []*v1.Pod
		dropped  []types.UID
		want     string
	}{
		{"back unchanged", []*v1.Pod{pod("a", "a")}, []*v1.Pod{pod("a", "a")}, []types.UID{"a"}, "REMOVE:a ADD:a"},
		{"back changed", []*v1.Pod{pod("a", "a")}, []*v1.Pod{pod("a", "a", withImage("img:2"))}, []types.UID{"a"}, "REMOVE:a ADD:a"},
		{"still gone", []*v1.Pod{pod("a", "a"), pod("b", "b")}, []*v1.Pod{pod("b", "b")}, []types.UID{"a"}, "REMOVE:a"},
		{"others untouched", []*v1.Pod{pod("a", "a"), pod("b", "b")}, []*v1.Pod{pod("a", "a"), pod("b", "b", withImage("img:2"))}, []types.UID{"a"}, "REMOVE:a ADD:a UPDATE:b"},
		{"api pod at the same resourceVersion", []*v1.Pod{pod("a", "a", withResourceVersion("7"))}, []*v1.Pod{pod("a", "a", withResourceVersion("7"))}, []types.UID{"a"}, "REMOVE:a ADD:a"},
		{"dropped but never known", nil, []*v1.Pod{pod("a", "a")}, []types.UID{"a"}, "ADD:a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old, _, _ := diff(podspec.SourceAPI, nil, tt.old, nil, t0)
			dropped := map[types.UID]bool{}
			for _, uid := range tt.dropped {
				dropped[uid] = true
			}
			next, updates, _ := diff(podspec.SourceAPI, old, tt.incoming, dropped, t0.Add(time.Hour))
			if got := summary(updates); got != tt.want {
				t.Errorf("updates = %q, want %q", got, tt.want)
			}
			if p := next["a"]; p != nil && dropped["a"] {
				if seen := p.Annotations[podspec.ConfigSeenAnnotation]; seen != t0.Add(time.Hour).Format(time.RFC3339Nano) {
					t.Errorf("config.seen of the re-added pod = %q, want the new time", seen)
				}
			}
		})
	}
}
