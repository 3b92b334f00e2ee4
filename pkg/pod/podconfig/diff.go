package podconfig

import (
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

// podSet is one source's pods keyed by UID.
type podSet map[types.UID]*v1.Pod

// rejectedPod is a pod of an incoming set that the diff dropped, and why.
type rejectedPod struct {
	Pod    *v1.Pod
	Reason string
}

// diff compares a source's new set of pods with the set the consumer knows
// (old) and returns the new known set and the updates that take the
// consumer from old to it, in the order REMOVE, ADD, UPDATE, DELETE,
// RECONCILE, leaving out empty ones. It never modifies old or incoming:
// next holds copies carrying the config.source and config.seen
// annotations. now stamps config.seen on pods seen for the first time.
//
// A pod is:
//   - ADD when its UID is new;
//   - DELETE when anything but its status changed and it has a
//     deletionTimestamp (the API server is gracefully deleting it);
//   - UPDATE when its spec, labels, annotations (but config.seen), owner
//     references or deletion grace period changed;
//   - RECONCILE when only its status changed;
//   - REMOVE when its UID is gone from the set, or is in dropped: the
//     source left it out of a set the consumer never saw (the merger
//     coalesced that set away). Such a pod, when back in incoming, is
//     removed and then added anew, so the consumer sees it leave as the
//     source said (a static pod's manifest removed and written back
//     restarts it, as upstream's incremental sources do).
//
// An API server pod whose resourceVersion is the known one's is unchanged
// and is not compared at all: the API server gives every write a new
// resourceVersion, and the API source sends the whole set on every event,
// so comparing each pod each time made the diff quadratic in a batch. Other
// sources' resourceVersions come from their manifests and are not trusted.
//
// Pods without a UID, and later pods repeating a UID or a namespace/name of
// the set, are dropped and returned in rejected.
func diff(source string, old podSet, incoming []*v1.Pod, dropped map[types.UID]bool, now time.Time) (next podSet, updates []PodUpdate, rejected []rejectedPod) {
	next = make(podSet, len(incoming))
	seenAt := now.UTC().Format(time.RFC3339Nano)
	names := make(map[string]bool, len(incoming))
	var adds, upds, dels, recs []*v1.Pod
	for _, in := range incoming {
		if in == nil {
			continue
		}
		fullName := in.Namespace + "/" + in.Name
		switch {
		case in.UID == "":
			rejected = append(rejected, rejectedPod{in, "pod has no UID"})
			continue
		case next[in.UID] != nil:
			rejected = append(rejected, rejectedPod{in, "duplicate UID in the source"})
			continue
		case names[fullName]:
			rejected = append(rejected, rejectedPod{in, "duplicate namespace/name in the source"})
			continue
		}
		names[fullName] = true
		prev := old[in.UID]
		if dropped[in.UID] {
			prev = nil
		}
		if sameAPIVersion(source, prev, in) {
			next[in.UID] = prev
			continue
		}

		pod := in.DeepCopy()
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[podspec.ConfigSourceAnnotation] = source
		switch {
		case prev != nil && prev.Annotations[podspec.ConfigSeenAnnotation] != "":
			pod.Annotations[podspec.ConfigSeenAnnotation] = prev.Annotations[podspec.ConfigSeenAnnotation]
		case pod.Annotations[podspec.ConfigSeenAnnotation] == "":
			pod.Annotations[podspec.ConfigSeenAnnotation] = seenAt
		}
		next[pod.UID] = pod

		switch {
		case prev == nil:
			adds = append(adds, pod)
		case differsSemantically(prev, pod):
			if pod.DeletionTimestamp != nil {
				dels = append(dels, pod)
			} else {
				upds = append(upds, pod)
			}
		case !equality.Semantic.DeepEqual(prev.Status, pod.Status):
			recs = append(recs, pod)
		}
	}

	var removes []*v1.Pod
	for uid, pod := range old {
		if next[uid] == nil || dropped[uid] {
			removes = append(removes, pod)
		}
	}
	sort.Slice(removes, func(i, j int) bool {
		a, b := removes[i], removes[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.UID < b.UID
	})

	for _, u := range []PodUpdate{
		{Op: REMOVE, Pods: removes},
		{Op: ADD, Pods: adds},
		{Op: UPDATE, Pods: upds},
		{Op: DELETE, Pods: dels},
		{Op: RECONCILE, Pods: recs},
	} {
		if len(u.Pods) > 0 {
			u.Source = source
			updates = append(updates, u)
		}
	}
	return next, updates, rejected
}

// sameAPIVersion reports whether in is the API server's same version of
// the known pod prev.
func sameAPIVersion(source string, prev, in *v1.Pod) bool {
	return source == podspec.SourceAPI && prev != nil && in.ResourceVersion != "" &&
		in.ResourceVersion == prev.ResourceVersion
}

// differsSemantically reports whether anything the kubelet acts on changed
// between two versions of a pod: everything but the status, the config.seen
// annotation and bookkeeping such as resourceVersion or managedFields.
func differsSemantically(a, b *v1.Pod) bool {
	if a.Name != b.Name || a.Namespace != b.Namespace {
		return true
	}
	if !equality.Semantic.DeepEqual(a.Spec, b.Spec) ||
		!equality.Semantic.DeepEqual(a.Labels, b.Labels) ||
		!equality.Semantic.DeepEqual(a.OwnerReferences, b.OwnerReferences) ||
		!equality.Semantic.DeepEqual(a.DeletionTimestamp, b.DeletionTimestamp) ||
		!equality.Semantic.DeepEqual(a.DeletionGracePeriodSeconds, b.DeletionGracePeriodSeconds) {
		return true
	}
	return !annotationsEqualIgnoringSeen(a.Annotations, b.Annotations)
}

func annotationsEqualIgnoringSeen(a, b map[string]string) bool {
	count := func(m map[string]string) int {
		n := len(m)
		if _, ok := m[podspec.ConfigSeenAnnotation]; ok {
			n--
		}
		return n
	}
	if count(a) != count(b) {
		return false
	}
	for k, v := range a {
		if k == podspec.ConfigSeenAnnotation {
			continue
		}
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}
