// Package pullverify decides whether a pod may use an image that is already
// on the node without pulling it again (KubeletEnsureSecretPulledImages,
// KEP-2535), from what the kubelet recorded about earlier pulls of the
// image. It is pure: no files, no clock, no runtime; the records are read
// and written by package pullrecords.
//
// The decision, in the order it is taken (Decide):
//
//  1. The verification policy (imagePullCredentialsVerificationPolicy)
//     says whether the image needs its credentials verified at all:
//     NeverVerify: never; NeverVerifyPreloadedImages: only when the kubelet
//     pulled it (it has a pulled record of the image, or a pull intent
//     for it: a pull that was under way); an image present without either
//     is "preloaded" (put there by something else, or pulled before the
//     records were kept) and any pod may use it; NeverVerifyAllowlistedImages:
//     unless the image, without tag or digest, is on
//     preloadedImagesVerificationAllowlist (an exact name, or a prefix
//     ending in "/*"), whoever pulled it; AlwaysVerify: always.
//  2. With verification needed, the image's pulled record must hold
//     credentials for the pod's image name (without tag or digest, as the
//     pod spells it): none, and the pod must pull.
//  3. A record that says the image was pulled anonymously or with the
//     node's own credentials (nodePodsAccessible) lets every pod use it.
//  4. Else one of the pod's pull secrets must match a recorded one: the
//     same credential hash (under any secret's name: the record then
//     learns that secret too), or the same secret (namespace, name and
//     UID) whatever its hash (a rotated secret: the record learns the new
//     hash). A secret deleted and created again has a new UID, so it
//     matches only by its hash. A record that already names 100 secrets
//     for the image learns no more, and then a same-secret match with
//     another hash no longer counts. The pod's service account matches a
//     recorded one the same way (records of image credential provider
//     plugins, which this kubelet reads but does not write).
//  5. Otherwise the pod must pull with its own credentials: with
//     imagePullPolicy IfNotPresent the kubelet pulls, with Never the
//     container fails as if the image were absent.
//
// These are the upstream kubelet's rules (1.37), so records written by
// either kubelet mean the same to the other.
package pullverify
