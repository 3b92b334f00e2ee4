package podconfig

import (
	v1 "k8s.io/api/core/v1"
)

// SourceAll is used by the merger for updates that span sources. The
// sources themselves are named by podspec.SourceFile, SourceHTTP and
// SourceAPI.
const SourceAll = "*"

// Op is the kind of change a PodUpdate carries.
type Op int

const (
	// SET is what a source sends: its complete current set of pods. Only
	// sources send it; the merger turns it into the ops below.
	SET Op = iota
	// ADD: pods new to the kubelet.
	ADD
	// UPDATE: pods whose spec or metadata changed.
	UPDATE
	// DELETE: pods being gracefully deleted (deletionTimestamp set).
	DELETE
	// REMOVE: pods gone from their source; they must be torn down.
	REMOVE
	// RECONCILE: pods whose status alone changed in the source.
	RECONCILE
)

func (o Op) String() string {
	switch o {
	case SET:
		return "SET"
	case ADD:
		return "ADD"
	case UPDATE:
		return "UPDATE"
	case DELETE:
		return "DELETE"
	case REMOVE:
		return "REMOVE"
	case RECONCILE:
		return "RECONCILE"
	}
	return "UNKNOWN"
}

// PodUpdate is one message from a source to the merger (Op SET, the full set
// of that source's pods) or from the merger to the sync loop (any other Op,
// only the pods concerned).
type PodUpdate struct {
	Pods   []*v1.Pod
	Op     Op
	Source string
}
