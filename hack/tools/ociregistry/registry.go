package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/distribution/reference"
)

// Media types this server understands. Docker's schema 2 types are accepted
// alongside OCI's because the two are structurally the same for a reader.
const (
	mediaTypeOCIManifest    = "application/vnd.oci.image.manifest.v1+json"
	mediaTypeOCIIndex       = "application/vnd.oci.image.index.v1+json"
	mediaTypeDockerManifest = "application/vnd.docker.distribution.manifest.v2+json"
	mediaTypeDockerList     = "application/vnd.docker.distribution.manifest.list.v2+json"

	// annotationRefName is the index.json annotation naming a manifest's tag
	// (OCI image-spec, annotations.md).
	annotationRefName = "org.opencontainers.image.ref.name"

	// maxDocumentSize bounds the JSON documents read into memory (index.json,
	// manifests); distribution's registry uses the same limit for manifests.
	maxDocumentSize = 4 << 20
	// maxIndexDepth bounds nested image indexes.
	maxIndexDepth = 4
)

var (
	// The grammars of the OCI distribution spec (spec.md, "Pulling manifests").
	nameRE = regexp.MustCompile(`^[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*(/[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*)*$`)
	tagRE  = regexp.MustCompile(`^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$`)
	// The only digests served: sha256 with its 64 lowercase hex characters
	// (OCI image-spec, descriptor.md, "Registered algorithms").
	sha256RE = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)
)

// validDigest reports whether d is a sha256 digest in canonical form.
func validDigest(d string) bool { return sha256RE.MatchString(d) }

// ImageSpec is one image to serve: a reference and the OCI image layout
// (directory, or tar of one) holding it.
type ImageSpec struct {
	Ref  string
	Path string
}

// LoadOptions tune Load.
type LoadOptions struct {
	// VerifyBlobs hashes every config and layer at load time. Manifests and
	// indexes are always hashed (they are read into memory anyway); the
	// sizes of all blobs are always checked.
	VerifyBlobs bool
	// Warnf, if set, receives non-fatal findings (e.g. a platform manifest
	// an index names but the layout lacks).
	Warnf func(format string, args ...any)
}

// Registry is the loaded, immutable set of repositories. It is an
// http.Handler (ServeHTTP, in main.go) and safe for concurrent use.
type Registry struct {
	repos   map[string]*repository   // key: host + "/" + name
	byName  map[string][]*repository // key: name
	served  []ServedImage
	closers []io.Closer
}

// ServedImage describes one loaded reference, for the start-up log.
type ServedImage struct {
	Ref       string
	Digest    string
	MediaType string
	Blobs     int
	Path      string
}

type repository struct {
	host, name string
	tags       map[string]string    // tag -> manifest digest
	manifests  map[string]*manifest // digest -> manifest or index
	blobs      map[string]*blob     // digest -> content (configs, layers, manifests)
}

type manifest struct {
	mediaType string
	data      []byte
}

// blob is servable content, located once at load time: request text never
// takes part in locating it.
type blob struct {
	size int64
	// One of these:
	data   []byte   // manifests, kept in memory
	path   string   // a file of a directory layout
	tarf   *os.File // the tar file of a tar layout ...
	offset int64    // ... and the member's data offset in it
}

// open returns a reader over the blob's content and a function that
// releases it.
func (b *blob) open() (io.ReadSeeker, func(), error) {
	switch {
	case b.data != nil:
		return bytes.NewReader(b.data), func() {}, nil
	case b.tarf != nil:
		return io.NewSectionReader(b.tarf, b.offset, b.size), func() {}, nil
	default:
		f, err := os.Open(b.path)
		if err != nil {
			return nil, nil, err
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, nil, err
		}
		if st.Size() != b.size {
			f.Close()
			return nil, nil, fmt.Errorf("%s changed size since start-up (%d, was %d)", b.path, st.Size(), b.size)
		}
		return io.NewSectionReader(f, 0, b.size), func() { f.Close() }, nil
	}
}

// Close releases the files the registry keeps open (tar layouts).
func (r *Registry) Close() error {
	var errs []error
	for _, c := range r.closers {
		errs = append(errs, c.Close())
	}
	r.closers = nil
	return errors.Join(errs...)
}

// Served lists the loaded references in the order given.
func (r *Registry) Served() []ServedImage { return r.served }

// lookup finds the repository for a request: by ns (the upstream registry
// host containerd appends when it uses a mirror) and name, or, without ns,
// by the name alone when exactly one host has it.
func (r *Registry) lookup(ns, name string) (*repository, string) {
	if ns != "" {
		if repo := r.repos[strings.ToLower(ns)+"/"+name]; repo != nil {
			return repo, ""
		}
		return nil, fmt.Sprintf("repository %s is not served for registry %s", name, ns)
	}
	switch cands := r.byName[name]; len(cands) {
	case 0:
		return nil, fmt.Sprintf("repository %s is not served", name)
	case 1:
		return cands[0], ""
	default:
		hosts := make([]string, len(cands))
		for i, c := range cands {
			hosts[i] = c.host
		}
		sort.Strings(hosts)
		return nil, fmt.Sprintf("repository %s is served for several registries (%s): add ?ns=<registry>", name, strings.Join(hosts, ", "))
	}
}

// parsedRef is an image reference split as the server needs it.
type parsedRef struct {
	host, name, tag, digest string
}

func parseRef(s string) (parsedRef, error) {
	named, err := reference.ParseNormalizedNamed(s)
	if err != nil {
		return parsedRef{}, fmt.Errorf("invalid reference %q: %w", s, err)
	}
	tagged, ok := named.(reference.Tagged)
	if !ok {
		return parsedRef{}, fmt.Errorf("reference %q has no tag", s)
	}
	p := parsedRef{
		host: strings.ToLower(reference.Domain(named)),
		name: reference.Path(named),
		tag:  tagged.Tag(),
	}
	if d, ok := named.(reference.Digested); ok {
		p.digest = d.Digest().String()
		if !validDigest(p.digest) {
			return parsedRef{}, fmt.Errorf("reference %q: only sha256 digests are supported", s)
		}
	}
	return p, nil
}

// Load reads every image's layout and builds the registry. Any image that
// cannot be loaded fails the whole load.
func Load(specs []ImageSpec, opts LoadOptions) (_ *Registry, err error) {
	if len(specs) == 0 {
		return nil, errors.New("no images to serve")
	}
	reg := &Registry{repos: map[string]*repository{}, byName: map[string][]*repository{}}
	defer func() {
		if err != nil {
			reg.Close()
		}
	}()
	seen := map[string]string{}
	for _, spec := range specs {
		ref, err := parseRef(spec.Ref)
		if err != nil {
			return nil, err
		}
		full := ref.host + "/" + ref.name + ":" + ref.tag
		if prev, dup := seen[full]; dup {
			return nil, fmt.Errorf("%s is given twice (%s and %s)", full, prev, spec.Path)
		}
		seen[full] = spec.Path
		served, err := reg.add(ref, spec, opts)
		if err != nil {
			return nil, fmt.Errorf("image %s from %s: %w", spec.Ref, spec.Path, err)
		}
		reg.served = append(reg.served, served)
	}
	return reg, nil
}

func (r *Registry) add(ref parsedRef, spec ImageSpec, opts LoadOptions) (ServedImage, error) {
	lay, err := openLayout(spec.Path)
	if err != nil {
		return ServedImage{}, err
	}
	if lay.closer != nil {
		r.closers = append(r.closers, lay.closer)
	}
	if err := lay.checkVersion(); err != nil {
		return ServedImage{}, err
	}
	desc, err := lay.selectManifest(ref.tag, ref.host+"/"+ref.name+":"+ref.tag)
	if err != nil {
		return ServedImage{}, err
	}
	if ref.digest != "" && desc.Digest != ref.digest {
		return ServedImage{}, fmt.Errorf("layout's manifest for tag %s is %s, the reference names %s", ref.tag, desc.Digest, ref.digest)
	}

	key := ref.host + "/" + ref.name
	repo := r.repos[key]
	if repo == nil {
		repo = &repository{
			host: ref.host, name: ref.name,
			tags:      map[string]string{},
			manifests: map[string]*manifest{},
			blobs:     map[string]*blob{},
		}
	}
	// Collect into a scratch repository first so that a failure leaves
	// nothing half-added.
	scratch := &repository{manifests: map[string]*manifest{}, blobs: map[string]*blob{}}
	mediaType, err := lay.addManifest(scratch, desc, 0, opts)
	if err != nil {
		return ServedImage{}, err
	}
	for d, m := range scratch.manifests {
		if _, ok := repo.manifests[d]; !ok {
			repo.manifests[d] = m
		}
	}
	for d, b := range scratch.blobs {
		if _, ok := repo.blobs[d]; !ok {
			repo.blobs[d] = b
		}
	}
	repo.tags[ref.tag] = desc.Digest
	if r.repos[key] == nil {
		r.repos[key] = repo
		r.byName[ref.name] = append(r.byName[ref.name], repo)
	}
	return ServedImage{
		Ref:       ref.host + "/" + ref.name + ":" + ref.tag,
		Digest:    desc.Digest,
		MediaType: mediaType,
		Blobs:     len(scratch.blobs),
		Path:      spec.Path,
	}, nil
}

// descriptor is the OCI content descriptor, as much of it as needed here.
type descriptor struct {
	MediaType   string            `json:"mediaType,omitempty"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// document covers both an image manifest and an image index.
type document struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType,omitempty"`
	Config        *descriptor  `json:"config,omitempty"`
	Layers        []descriptor `json:"layers,omitempty"`
	Manifests     []descriptor `json:"manifests,omitempty"`
}

// layout is an OCI image layout, either a directory or a tar of one.
type layout struct {
	src    string
	dir    string // directory layout: its root
	tarf   *os.File
	files  map[string]tarMember // tar layout: regular members by clean name
	closer io.Closer
}

type tarMember struct{ offset, size int64 }

func openLayout(p string) (*layout, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return &layout{src: p, dir: p}, nil
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is neither a directory nor a regular file", p)
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	lay := &layout{src: p, tarf: f, closer: f, files: map[string]tarMember{}}
	if err := lay.indexTar(st.Size()); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return lay, nil
}

// indexTar records where each regular member's data lies in the tar file.
// Tar stores members uncompressed and contiguous, so a member can later be
// served by a SectionReader over the file, without extracting it.
func (l *layout) indexTar(fileSize int64) error {
	var magic [2]byte
	if n, _ := l.tarf.ReadAt(magic[:], 0); n == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		return errors.New("a gzip-compressed file; only uncompressed tars of an OCI layout are supported")
	}
	sr := io.NewSectionReader(l.tarf, 0, fileSize)
	tr := tar.NewReader(sr)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil && !errors.Is(err, tar.ErrInsecurePath) {
			return fmt.Errorf("not a readable tar: %w", err)
		}
		name, ok := cleanMemberName(hdr.Name)
		if !ok {
			continue // outside the layout ("../x", "/"): never served
		}
		switch {
		case hdr.Typeflag == tar.TypeLink:
			// A hard link to an earlier member: the same data.
			if target, ok := cleanMemberName(hdr.Linkname); ok {
				if m, ok := l.files[target]; ok {
					l.files[name] = m
				}
			}
		case hdr.FileInfo().Mode().IsRegular():
			if hdr.Typeflag == tar.TypeGNUSparse || hasSparseRecords(hdr) {
				return fmt.Errorf("member %s is a sparse file, which is not supported", hdr.Name)
			}
			off, err := sr.Seek(0, io.SeekCurrent)
			if err != nil {
				return err
			}
			if hdr.Size < 0 || off+hdr.Size > fileSize {
				return fmt.Errorf("member %s is truncated", hdr.Name)
			}
			l.files[name] = tarMember{offset: off, size: hdr.Size}
		}
	}
	if len(l.files) == 0 {
		return errors.New("an empty tar")
	}
	return nil
}

func hasSparseRecords(hdr *tar.Header) bool {
	for k := range hdr.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return true
		}
	}
	return false
}

// cleanMemberName turns a tar member name ("./blobs/sha256/…") into a path
// relative to the layout root, refusing anything that leaves it.
func cleanMemberName(n string) (string, bool) {
	n = path.Clean("/" + n)[1:]
	if n == "" || strings.HasPrefix(n, "../") || n == ".." {
		return "", false
	}
	return n, true
}

// readSmall reads a small file of the layout into memory.
func (l *layout) readSmall(name string, limit int64) ([]byte, error) {
	var r io.Reader
	if l.tarf != nil {
		m, ok := l.files[name]
		if !ok {
			return nil, fmt.Errorf("no %s in the tar: not an OCI image layout", name)
		}
		if m.size > limit {
			return nil, fmt.Errorf("%s is larger than %d bytes", name, limit)
		}
		r = io.NewSectionReader(l.tarf, m.offset, m.size)
	} else {
		f, err := os.Open(filepath.Join(l.dir, filepath.FromSlash(name)))
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("no %s: not an OCI image layout", name)
			}
			return nil, err
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", name, limit)
	}
	return data, nil
}

func (l *layout) checkVersion() error {
	data, err := l.readSmall("oci-layout", 4096)
	if err != nil {
		return err
	}
	var v struct {
		ImageLayoutVersion string `json:"imageLayoutVersion"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return fmt.Errorf("oci-layout: %w", err)
	}
	if v.ImageLayoutVersion != "1.0.0" {
		return fmt.Errorf("oci-layout: unsupported imageLayoutVersion %q", v.ImageLayoutVersion)
	}
	return nil
}

// selectManifest picks the index.json entry for tag: the one whose
// ref.name annotation is the tag (or the full reference), or the only
// entry if there is exactly one.
func (l *layout) selectManifest(tag, full string) (descriptor, error) {
	data, err := l.readSmall("index.json", maxDocumentSize)
	if err != nil {
		return descriptor{}, err
	}
	var idx document
	if err := json.Unmarshal(data, &idx); err != nil {
		return descriptor{}, fmt.Errorf("index.json: %w", err)
	}
	var match []descriptor
	var names []string
	for _, d := range idx.Manifests {
		n := d.Annotations[annotationRefName]
		names = append(names, n)
		if n == tag || n == full {
			match = append(match, d)
		}
	}
	switch {
	case len(match) == 1:
		return match[0], nil
	case len(match) > 1:
		return descriptor{}, fmt.Errorf("index.json names tag %s %d times", tag, len(match))
	case len(idx.Manifests) == 1:
		return idx.Manifests[0], nil
	case len(idx.Manifests) == 0:
		return descriptor{}, errors.New("index.json lists no manifests")
	default:
		return descriptor{}, fmt.Errorf("index.json has %d manifests and none is tagged %s (tags: %q)", len(idx.Manifests), tag, names)
	}
}

// locate finds the blob with digest d (validated by the caller) in the
// layout, at blobs/sha256/<hex>.
func (l *layout) locate(d string) (*blob, error) {
	hexPart := strings.TrimPrefix(d, "sha256:")
	if l.tarf != nil {
		m, ok := l.files["blobs/sha256/"+hexPart]
		if !ok {
			return nil, fmt.Errorf("blob %s: %w", d, os.ErrNotExist)
		}
		return &blob{size: m.size, tarf: l.tarf, offset: m.offset}, nil
	}
	p := filepath.Join(l.dir, "blobs", "sha256", hexPart)
	st, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("blob %s: %w", d, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("blob %s: %s is not a regular file", d, p)
	}
	return &blob{size: st.Size(), path: p}, nil
}

// blobFor locates and checks one descriptor's blob.
func (l *layout) blobFor(d descriptor, what string) (*blob, error) {
	if !validDigest(d.Digest) {
		return nil, fmt.Errorf("%s has digest %q: only sha256 digests are supported", what, d.Digest)
	}
	b, err := l.locate(d.Digest)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if b.size != d.Size {
		return nil, fmt.Errorf("%s %s: the layout's blob has %d bytes, the descriptor says %d", what, d.Digest, b.size, d.Size)
	}
	return b, nil
}

func isIndexType(mt string) bool {
	return mt == mediaTypeOCIIndex || mt == mediaTypeDockerList
}

func isManifestType(mt string) bool {
	return mt == mediaTypeOCIManifest || mt == mediaTypeDockerManifest
}

// addManifest loads the manifest or index desc names, and everything it
// references, into repo; it returns the document's media type.
func (l *layout) addManifest(repo *repository, desc descriptor, depth int, opts LoadOptions) (string, error) {
	if depth > maxIndexDepth {
		return "", errors.New("image indexes nested too deeply")
	}
	b, err := l.blobFor(desc, "manifest")
	if err != nil {
		return "", err
	}
	if b.size > maxDocumentSize {
		return "", fmt.Errorf("manifest %s is larger than %d bytes", desc.Digest, maxDocumentSize)
	}
	data, err := readBlob(b)
	if err != nil {
		return "", fmt.Errorf("manifest %s: %w", desc.Digest, err)
	}
	if got := digestOf(data); got != desc.Digest {
		return "", fmt.Errorf("manifest %s: content hashes to %s", desc.Digest, got)
	}
	var doc document
	if err := json.Unmarshal(data, &doc); err != nil {
		return "", fmt.Errorf("manifest %s: %w", desc.Digest, err)
	}
	// The Content-Type served: the descriptor's media type (umoci's
	// manifests carry none of their own), else the document's; they must
	// agree when both are given.
	mt := desc.MediaType
	switch {
	case mt == "":
		mt = doc.MediaType
	case doc.MediaType != "" && doc.MediaType != mt:
		return "", fmt.Errorf("manifest %s: index.json says media type %s, the manifest says %s", desc.Digest, mt, doc.MediaType)
	}
	if mt == "" {
		if doc.Manifests != nil {
			mt = mediaTypeOCIIndex
		} else {
			mt = mediaTypeOCIManifest
		}
	}
	switch {
	case isIndexType(mt):
		present := 0
		for _, child := range doc.Manifests {
			if _, err := l.addManifest(repo, child, depth+1, opts); err != nil {
				if errors.Is(err, os.ErrNotExist) {
					// Layouts often hold only this machine's platform.
					if opts.Warnf != nil {
						opts.Warnf("%s: index %s names %s, which the layout lacks: not served", l.src, desc.Digest, child.Digest)
					}
					continue
				}
				return "", err
			}
			present++
		}
		if present == 0 {
			return "", fmt.Errorf("index %s: the layout holds none of its manifests", desc.Digest)
		}
	case isManifestType(mt):
		if doc.Config == nil {
			return "", fmt.Errorf("manifest %s has no config", desc.Digest)
		}
		refs := append([]descriptor{*doc.Config}, doc.Layers...)
		for i, d := range refs {
			what := "layer"
			if i == 0 {
				what = "config"
			}
			cb, err := l.blobFor(d, what)
			if err != nil {
				// A missing blob of a present manifest is fatal, not a
				// skippable platform.
				return "", fmt.Errorf("manifest %s: %s", desc.Digest, err.Error())
			}
			if opts.VerifyBlobs {
				if err := verifyBlob(cb, d.Digest); err != nil {
					return "", fmt.Errorf("manifest %s: %s %w", desc.Digest, what, err)
				}
			}
			repo.blobs[d.Digest] = cb
		}
	default:
		return "", fmt.Errorf("manifest %s has unsupported media type %q", desc.Digest, mt)
	}
	repo.manifests[desc.Digest] = &manifest{mediaType: mt, data: data}
	repo.blobs[desc.Digest] = &blob{size: int64(len(data)), data: data}
	return mt, nil
}

func readBlob(b *blob) ([]byte, error) {
	r, done, err := b.open()
	if err != nil {
		return nil, err
	}
	defer done()
	return io.ReadAll(r)
}

func verifyBlob(b *blob, want string) error {
	r, done, err := b.open()
	if err != nil {
		return err
	}
	defer done()
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return err
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != want {
		return fmt.Errorf("%s: content hashes to %s", want, got)
	}
	return nil
}

func digestOf(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}
