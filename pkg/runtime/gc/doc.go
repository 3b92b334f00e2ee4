// Package gc collects what a long-running node accumulates in its
// runtime: dead containers and sandboxes, and unused images, with
// upstream's policies.
//
// Containers (every minute): exited containers are grouped by pod and
// container name; each group keeps its newest MaxPerPodContainer (1: what
// restart counts, back-off and `kubectl logs --previous` need); groups of
// pods that are gone lose everything, and so do those of terminated pods
// when the eviction manager asks (DeleteAllUnusedContainers); with
// MaxContainers >= 0 the oldest go until the total fits. Containers younger
// than MinAge stay, and so does a container's newest instance while it is
// created and not yet started (its pod worker is about to start it; taken
// for dead, it would push out the instance that just exited). A sandbox goes when it is not ready, holds no
// container, and is not its live pod's newest; the log directories of pods
// that are gone go too.
//
// Images (every five minutes): when the image filesystem's usage reaches
// imageGCHighThresholdPercent, unused images go, least recently used
// first, until usage is down to imageGCLowThresholdPercent; images unused
// for longer than imageMaximumGCAge go regardless (once the kubelet has run
// that long). An image is used while any container, running or not,
// refers to it; images first seen less than imageMinimumGCAge ago, pinned
// images and the sandbox (pause) image are never removed. With
// imageGCHighThresholdPercent 100 and no imageMaximumGCAge the periodic
// collection is off (Disabled), as upstream documents it. After each
// collection AfterCollect hears which images are left, so the image pull
// records of images gone from the node are pruned.
//
// The policies are pure functions (SelectContainers, SelectSandboxes,
// SelectImages) with table tests; the collectors around them make the CRI
// calls.
package gc
