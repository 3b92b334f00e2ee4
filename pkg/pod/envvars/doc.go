// Package envvars computes a container's environment as the upstream
// kubelet does: envFrom (ConfigMaps and Secrets, with prefix and
// optional), env with $(VAR) expansion, the downward API (fieldRef and
// resourceFieldRef, whose values pkg/pod/fieldpath gives, as it does for
// downwardAPI volumes) and the service link variables. Both engines use
// it: the CRI engine when a container starts, the virtual engine before a
// provider gets a pod.
//
// The decision is pure: Resolve takes the pod, the container and every
// fact it needs (the ConfigMaps and Secrets already read, pod and host IPs,
// node allocatable, the service variables) and returns the variables in a
// stable order, or an error naming what is missing. The reads happen at the
// edge: Fetch gets the referenced ConfigMaps and Secrets through the small
// Objects interface, so the kubelet can plug in whatever cache it has.
package envvars
