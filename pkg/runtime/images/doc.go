// Package images makes sure a container's image is present before the
// container is created: it applies the imagePullPolicy, pulls through the CRI
// image service, backs off per (pod, image) after failures, bounds the number
// of parallel pulls, and reports each outcome with the reason the upstream
// kubelet uses (ErrImagePull, ImagePullBackOff, ErrImageNeverPull,
// InvalidImageName, ImageInspectError) plus an event on the pod.
//
// It never creates containers and keeps no state beyond the back-off memory:
// whether an image is present is always asked of the runtime.
package images
