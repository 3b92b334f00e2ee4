// Package pullrecords keeps the kubelet's records of image pulls
// (KubeletEnsureSecretPulledImages, KEP-2535) and answers, through package
// pullverify's rules, whether a pod may use an image already on the node.
//
// It owns <root-dir>/image_manager and nothing else there. The layout and
// the format are the upstream kubelet's, so that a node can be taken over
// from upstream 1.37 and handed back with its records:
//
//	<root-dir>/image_manager/pulling/sha256-<hex sha256 of the image>
//	    an ImagePullIntent: a pull of the container image field "image" is
//	    under way (written before the pull, removed when it ends)
//	<root-dir>/image_manager/pulled/sha256-<hex sha256 of the image ref>
//	    an ImagePulledRecord: the image (the runtime's image ID) was pulled
//	    by the kubelet, and with which credentials, by image name
//
// Each file is one JSON object of apiVersion kubelet.config.k8s.io/v1beta1
// (v1alpha1 is read too, and rewritten as v1beta1 when the store opens),
// written to a temporary file (suffix .tmp) and renamed into place.
// Directories are 0700, files 0600. Files not named sha256-*, temporary
// files and subdirectories are ignored.
//
// A record that cannot be read is never fatal: it is logged, the image is
// treated as needing its credentials verified (the pod pulls), and a
// successful pull writes a good record over it. Listing skips bad files
// and reports them.
//
// After a restart (Recover), an intent left by a pull that was under way
// becomes, if the runtime has the image, a pulled record without
// credentials, so every pod must then show its own; an intent whose image
// is not there stays, and keeps the image "pulled by the kubelet" until a
// pull of it succeeds. Images present without any record are preloaded
// (see package pullverify). The image collector prunes the pulled records
// of images no longer on the node (Prune).
//
// It never pulls, never talks to the runtime, and never decides the pull
// policy: package images does, and calls it at the edges of a pull.
package pullrecords
