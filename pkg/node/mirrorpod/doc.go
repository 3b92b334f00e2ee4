// Package mirrorpod keeps, for every static pod, a mirror pod in the API
// server so the cluster can see it (kubectl get pods, status, events).
//
// A mirror pod is a copy of the static pod's metadata and spec with
//   - the annotation kubernetes.io/config.mirror set to the static pod's
//     kubernetes.io/config.hash, which is how everyone (this kubelet's
//     pod manager included) tells a mirror pod from a regular one and
//     whether it still matches its static pod;
//   - one owner reference to this Node (apiVersion v1, kind Node, name,
//     uid, controller true, blockOwnerDeletion unset), as upstream sets it
//     and the NodeRestriction admission plugin requires;
//   - spec.nodeName set to this node, and no status (the status manager
//     writes it later).
//
// NodeRestriction lets a node create only such pods, and forbids them to
// reference other API objects: service accounts, secrets, config maps,
// persistent volume claims (also through ephemeral volumes), resource
// claims, projected service account tokens and cluster trust bundles.
// Build reports such a reference by field before the API server would
// refuse it with a less precise 403.
//
// Needs is the pure decision (create, delete, both, or nothing); Manager
// performs it with a client. The caller, the sync loop, runs Needs for
// every static pod it syncs and deletes the mirror of a static pod that
// is gone, which keeps mirror pods level-triggered: a mirror deleted by a
// user is recreated, a stale one is replaced.
package mirrorpod
