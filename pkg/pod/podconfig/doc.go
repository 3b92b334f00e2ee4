// Package podconfig merges the pods of every source (API server, static
// pod directory, manifest URL) into one stream of changes for the sync loop.
//
// Sources speak in whole sets: each sends PodUpdate{Op: SET} with all of
// its pods, every time anything changed, on its own channel
// (Merger.Channel). The merger remembers what it last told the consumer
// about each source and turns every new set into ADD, UPDATE, DELETE,
// REMOVE and RECONCILE updates on one output channel (Merger.Updates).
// Whole sets make the sources level-triggered: a source that missed an
// event just sends its current set again, and nothing is lost.
//
// The merger owns the kubernetes.io/config.source and config.seen
// annotations: config.source names the source, config.seen records when the
// kubelet first saw the pod and then stays fixed.
//
// A slow consumer never makes the merger lose a change and never blocks a
// source for longer than a map write: while the consumer is busy, the merger
// keeps only the newest set of each source and diffs it when the consumer is
// ready again, so intermediate sets are coalesced (a pod added and removed
// meanwhile is never announced) but the consumer always ends at the
// sources' current state. One thing is never coalesced away: a pod the
// consumer knows that any intermediate set left out is announced REMOVE,
// and then ADD if the newest set has it again. Removing a static pod's
// manifest and writing it back thus restarts the pod however quickly the
// two happen, as upstream's incremental sources do.
//
// SeenAllSources tells the kubelet when every source has been heard from
// and its pods delivered; until then the kubelet must not treat runtime pods
// it does not know as orphans (after a restart they are most likely pods a
// source has not reported yet).
//
// The diff itself (diff.go) is a pure function with table tests; the
// channel plumbing is in merger.go.
package podconfig
