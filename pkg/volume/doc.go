// Package volume is the kubelet's volume manager: for each pod it prepares
// on the host every volume its containers mount, keeps the contents of
// configMap, secret, downwardAPI and projected volumes current, gives the
// runtime each container's mounts (subPaths resolved safely) and tears
// everything down when the pod is gone.
//
// Volumes live where the upstream kubelet keeps them, so a node taken over
// from it finds its volumes:
//
//	<root>/pods/<uid>/volumes/kubernetes.io~empty-dir/<volume>
//	<root>/pods/<uid>/volumes/kubernetes.io~configmap/<volume>
//	<root>/pods/<uid>/volumes/kubernetes.io~secret/<volume>        (tmpfs)
//	<root>/pods/<uid>/volumes/kubernetes.io~downward-api/<volume>  (tmpfs)
//	<root>/pods/<uid>/volumes/kubernetes.io~projected/<volume>     (tmpfs)
//	<root>/pods/<uid>/volume-subpaths/<volume>/<container>/<index> (subPath bind mounts)
//	<root>/pods/<uid>/plugins/kubernetes.io~empty-dir/<volume>/ready
//	<root>/pods/<uid>/volumes/kubernetes.io~csi/<volume or PV>/mount     (CSI, see pkg/volume/csi)
//
// hostPath volumes and PersistentVolumes backed by a local or hostPath
// PersistentVolume are used where they are. CSI volumes, inline or backed
// by a CSI PersistentVolume, are published to the pod by their registered
// driver (pkg/volume/csi: attach wait, stage, publish, and back). Every
// other volume type is refused with a reason naming the volume and its
// type: the pod waits, an event and a log line say why.
//
// Each volume type has its own file: emptydir.go, hostpath.go,
// configmap.go, secret.go, downwardapi.go, projected.go, claim.go
// (persistentVolumeClaim and ephemeral), csi.go (inline CSI). ClaimVolumes (claimstats.go)
// tells the stats which set-up claims have usage to report.
package volume
