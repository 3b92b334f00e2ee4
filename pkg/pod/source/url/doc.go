// Package url is the static pod source that polls staticPodURL.
//
// Every httpCheckFrequency it GETs the URL (with the staticPodURLHeader
// headers) and parses the body with pkg/pod/staticpod as source "http": a Pod,
// a v1 PodList, or several YAML documents. When the body differs from the
// last one it sends PodUpdate{Op: SET, Source: "http"} with all its pods.
//
// Failures (transport errors, non-2xx statuses, invalid manifests) are
// reported through OnError and logged, once per distinct failure, and the
// pods of the last valid body stay in force: a flaky server never tears
// down running pods. Only a valid answer counts: until the first one the
// source sends nothing and so is not "seen" by the merger, as upstream. An
// empty body is a valid answer meaning "no pods".
package url
