// Package staticpod turns the bytes of a static pod manifest (from a file or
// an HTTP URL) into pods the kubelet can run.
//
// It owns four steps, in this order, each in its own file:
//
//  1. decode.go   strict decoding of YAML or JSON: one Pod, a v1 PodList, or
//     several YAML documents; unknown or duplicate fields are errors.
//  2. defaults.go the defaults the API server would have applied to a pod
//     created through it (we cannot import upstream's defaulting code).
//  3. validate.go validation with errors that name the field
//     (field.ErrorList paths such as spec.containers[0].image).
//  4. identity.go the static-pod identity rules: the name gets "-<node>",
//     spec.nodeName is set, the UID (when unset) is a hash of the defaulted
//     content and of where it came from, the config.hash/config.source
//     annotations, a toleration of every NoExecute taint, and the priority of
//     the two system priority classes.
//
// The package is pure: no I/O, no clock, no logging. Sources
// (pkg/pod/source/file, pkg/pod/source/url) read bytes and report errors.
//
// A manifest is all-or-nothing: if any document in it is invalid, Parse
// returns an error and no pods, so a half-valid file never starts half of its
// pods.
package staticpod
