// Package file is the static pod source that reads staticPodPath: a
// directory of manifests, or one manifest file.
//
// Every read is a full scan that ends in one PodUpdate{Op: SET,
// Source: "file"} with all pods, sent only when the set differs from the
// last one sent (the first scan is always sent, even when empty or when the
// path does not exist, so the merger counts the source as seen). Scans are
// triggered by fsnotify events, coalesced (all events already queued are
// drained before one scan, so an editor's burst of writes costs one or two
// scans, never a fixed sleep), and by a periodic recheck every
// CheckFrequency as a safety net for what inotify misses (symlinked files,
// a directory created or recreated later, watch limits).
//
// Rules, chosen to match what users of the upstream kubelet expect:
//   - every regular file in the directory is a manifest, whatever its
//     extension, except dotfiles (editors' and tools' temporary files) and
//     well-known backup leftovers (name~, *.swp, *.bak, *.dpkg-old, ...);
//     subdirectories are not read;
//   - a missing path is not an error: it is logged and holds no pods, and
//     the next scan looks again;
//   - an invalid manifest is reported through OnError (path and reason) and
//     logged once per distinct content, and the other files' pods are still
//     sent. If that file held valid pods before, those are kept: a manifest
//     caught half-written, or a typo, does not tear down a running static
//     pod (deleting the file does);
//   - two files defining the same namespace/name: the file that sorts first
//     wins and the other is reported.
package file
