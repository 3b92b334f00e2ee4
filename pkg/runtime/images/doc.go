// Package images makes sure a container's image is present before the
// container is created: it applies the imagePullPolicy, pulls through the CRI
// image service, backs off per (pod, image) after failures, bounds the number
// of parallel pulls, and reports each outcome with the reason the upstream
// kubelet uses (ErrImagePull, ImagePullBackOff, ErrImageNeverPull,
// InvalidImageName, ImageInspectError) plus an event on the pod.
//
// It never creates containers. Whether an image is present is always asked
// of the runtime. Its own memory is the back-off; with
// KubeletEnsureSecretPulledImages on (Options.Records), what pulled each
// image is kept on disk by package pullrecords, and an image already
// present is used by a pod only when package pullverify's rules let it
// (the verification policy, and credentials of the pod that pulled the
// image before, or a pull that needed none); otherwise the pod pulls with
// its own credentials (IfNotPresent: the pull tells whether they are
// good) or fails as if the image were absent (Never: ErrImageNeverPull).
// Around each pull it writes an intent, then a record of the login that
// succeeded: a pull secret's coordinates and credential hash, or
// "every pod may use it" for the node's own login or an anonymous pull.
package images
