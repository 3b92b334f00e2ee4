package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	agnhostRef = "registry.k8s.io/e2e-test-images/agnhost:2.66.1"
	agnhostMfs = "/v2/e2e-test-images/agnhost/manifests/"
	agnhostBlb = "/v2/e2e-test-images/agnhost/blobs/"
)

// testImage is a hand-built one-layer image in an OCI layout directory.
type testImage struct {
	dir                                       string
	manifest, config, layer                   []byte
	manifestDigest, configDigest, layerDigest string
}

type layoutOpts struct {
	// manifestMediaType writes a mediaType field into the manifest itself
	// (umoci's manifests have none; then only index.json names it).
	manifestMediaType bool
	// refName is the ref.name annotation in index.json ("" for none).
	refName string
}

// writeBlob stores data under dir/blobs/sha256/<hex> and returns its digest.
func writeBlob(t *testing.T, dir string, data []byte) string {
	t.Helper()
	d := digestOf(data)
	p := filepath.Join(dir, "blobs", "sha256", strings.TrimPrefix(d, "sha256:"))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return d
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// gzipTar is a gzip-compressed tar with one file, as a layer.
func gzipTar(t *testing.T, name, content string) (compressed, uncompressed []byte) {
	t.Helper()
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(tw, content); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(raw.Bytes())
	zw.Close()
	return gz.Bytes(), raw.Bytes()
}

// writeImageBlobs writes a layer, config and manifest for seed into dir and
// returns the image and the manifest's index.json descriptor.
func writeImageBlobs(t *testing.T, dir, seed string, opts layoutOpts) (testImage, map[string]any) {
	t.Helper()
	img := testImage{dir: dir}
	var raw []byte
	img.layer, raw = gzipTar(t, "hello.txt", "hello from "+seed+"\n")
	img.layerDigest = writeBlob(t, dir, img.layer)
	img.config = mustJSON(t, map[string]any{
		"architecture": "amd64", "os": "linux",
		"config": map[string]any{"Cmd": []string{"sh"}, "Env": []string{"SEED=" + seed}},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{digestOf(raw)}},
	})
	img.configDigest = writeBlob(t, dir, img.config)
	m := map[string]any{
		"schemaVersion": 2,
		"config":        map[string]any{"mediaType": "application/vnd.oci.image.config.v1+json", "digest": img.configDigest, "size": len(img.config)},
		"layers":        []any{map[string]any{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": img.layerDigest, "size": len(img.layer)}},
	}
	if opts.manifestMediaType {
		m["mediaType"] = mediaTypeOCIManifest
	}
	img.manifest = mustJSON(t, m)
	img.manifestDigest = writeBlob(t, dir, img.manifest)
	desc := map[string]any{"mediaType": mediaTypeOCIManifest, "digest": img.manifestDigest, "size": len(img.manifest)}
	if opts.refName != "" {
		desc["annotations"] = map[string]string{annotationRefName: opts.refName}
	}
	return img, desc
}

func writeIndex(t *testing.T, dir string, descs ...map[string]any) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "oci-layout"), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	idx := mustJSON(t, map[string]any{"schemaVersion": 2, "manifests": descs})
	if err := os.WriteFile(filepath.Join(dir, "index.json"), idx, 0o644); err != nil {
		t.Fatal(err)
	}
}

// makeLayout builds a complete one-image layout in a new directory.
func makeLayout(t *testing.T, seed string, opts layoutOpts) testImage {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "layout")
	img, desc := writeImageBlobs(t, dir, seed, opts)
	writeIndex(t, dir, desc)
	return img
}

// tarLayout writes the layout dir as a tar the way `tar -C dir -cf out .`
// does: "./" first, then "./"-prefixed members, directories with a slash.
func tarLayout(t *testing.T, dir string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "layout.tar")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		hdr, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		hdr.Name = "./" + filepath.ToSlash(rel)
		if rel == "." {
			hdr.Name = "./"
		} else if d.IsDir() {
			hdr.Name += "/"
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if d.Type().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			_, err = tw.Write(data)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

// layoutSources returns the layout as a directory, as a tar written with
// archive/tar, and (when the tar command exists) as a tar written by it,
// as hack/e2e-images.sh does.
func layoutSources(t *testing.T, img testImage) map[string]string {
	t.Helper()
	srcs := map[string]string{"dir": img.dir, "tar": tarLayout(t, img.dir)}
	tarBin := lookPath(t, "tar")
	out := filepath.Join(t.TempDir(), "cli.tar")
	if b, err := exec.Command(tarBin, "-C", img.dir, "-cf", out, ".").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v: %s", err, b)
	}
	srcs["tar-command"] = out
	return srcs
}

func newServer(t *testing.T, specs ...ImageSpec) (*httptest.Server, *Registry) {
	t.Helper()
	reg, err := Load(specs, LoadOptions{})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	srv := httptest.NewServer(reg)
	t.Cleanup(func() {
		srv.Close()
		reg.Close()
	})
	return srv, reg
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func do(t *testing.T, method, url string, hdr ...string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{resp.StatusCode, resp.Header, body}
}

// rawDo sends target exactly as given on the request line, so that no
// client-side cleaning hides what the server does with it.
func rawDo(t *testing.T, addr, method, target string) response {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", method, target, addr)
	resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: method})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{resp.StatusCode, resp.Header, body}
}

func errCode(t *testing.T, r response) string {
	t.Helper()
	var e struct {
		Errors []ociError `json:"errors"`
	}
	if err := json.Unmarshal(r.body, &e); err != nil || len(e.Errors) == 0 {
		t.Fatalf("status %d: body %q is not an OCI error", r.status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("error Content-Type = %q, want application/json", ct)
	}
	return e.Errors[0].Code
}

func expectError(t *testing.T, r response, status int, code string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status = %d, want %d (body %q)", r.status, status, r.body)
	}
	if got := errCode(t, r); got != code {
		t.Fatalf("error code = %s, want %s", got, code)
	}
}

func TestAPIVersion(t *testing.T) {
	img := makeLayout(t, "a", layoutOpts{refName: "2.66.1"})
	srv, _ := newServer(t, ImageSpec{agnhostRef, img.dir})
	for _, p := range []string{"/v2/", "/v2"} {
		r := do(t, "GET", srv.URL+p)
		if r.status != 200 || string(r.body) != "{}" {
			t.Errorf("GET %s = %d %q, want 200 {}", p, r.status, r.body)
		}
		if v := r.header.Get("Docker-Distribution-API-Version"); v != "registry/2.0" {
			t.Errorf("GET %s: Docker-Distribution-API-Version = %q", p, v)
		}
	}
	r := do(t, "HEAD", srv.URL+"/v2/")
	if r.status != 200 || len(r.body) != 0 {
		t.Errorf("HEAD /v2/ = %d with %d bytes, want 200 and no body", r.status, len(r.body))
	}
}

func TestManifest(t *testing.T) {
	for _, withMT := range []bool{false, true} {
		img := makeLayout(t, "a", layoutOpts{refName: "2.66.1", manifestMediaType: withMT})
		for src, p := range layoutSources(t, img) {
			t.Run(fmt.Sprintf("%s/mediaTypeField=%v", src, withMT), func(t *testing.T) {
				srv, _ := newServer(t, ImageSpec{agnhostRef, p})
				for _, ref := range []string{"2.66.1", img.manifestDigest} {
					for _, q := range []string{"", "?ns=registry.k8s.io"} {
						for _, method := range []string{"GET", "HEAD"} {
							url := srv.URL + agnhostMfs + ref + q
							r := do(t, method, url, "Accept", mediaTypeOCIManifest+", "+mediaTypeOCIIndex)
							if r.status != 200 {
								t.Fatalf("%s %s = %d %q", method, url, r.status, r.body)
							}
							if ct := r.header.Get("Content-Type"); ct != mediaTypeOCIManifest {
								t.Errorf("%s %s: Content-Type = %q", method, url, ct)
							}
							if d := r.header.Get("Docker-Content-Digest"); d != img.manifestDigest {
								t.Errorf("%s %s: Docker-Content-Digest = %q, want %s", method, url, d, img.manifestDigest)
							}
							if cl := r.header.Get("Content-Length"); cl != strconv.Itoa(len(img.manifest)) {
								t.Errorf("%s %s: Content-Length = %q, want %d", method, url, cl, len(img.manifest))
							}
							if method == "HEAD" {
								if len(r.body) != 0 {
									t.Errorf("HEAD %s has a body of %d bytes", url, len(r.body))
								}
								continue
							}
							if !bytes.Equal(r.body, img.manifest) {
								t.Errorf("GET %s body = %q, want %q", url, r.body, img.manifest)
							}
							if digestOf(r.body) != img.manifestDigest {
								t.Errorf("GET %s: body hashes to %s", url, digestOf(r.body))
							}
						}
					}
				}
			})
		}
	}
}

func TestBlob(t *testing.T) {
	img := makeLayout(t, "a", layoutOpts{refName: "2.66.1"})
	for src, p := range layoutSources(t, img) {
		t.Run(src, func(t *testing.T) {
			srv, _ := newServer(t, ImageSpec{agnhostRef, p})
			blobs := map[string][]byte{img.configDigest: img.config, img.layerDigest: img.layer, img.manifestDigest: img.manifest}
			for d, want := range blobs {
				url := srv.URL + agnhostBlb + d + "?ns=registry.k8s.io"
				r := do(t, "GET", url)
				if r.status != 200 {
					t.Fatalf("GET %s = %d %q", url, r.status, r.body)
				}
				if !bytes.Equal(r.body, want) || digestOf(r.body) != d {
					t.Errorf("GET %s: body hashes to %s, want %s", url, digestOf(r.body), d)
				}
				if got := r.header.Get("Docker-Content-Digest"); got != d {
					t.Errorf("GET %s: Docker-Content-Digest = %q", url, got)
				}
				if got := r.header.Get("Content-Length"); got != strconv.Itoa(len(want)) {
					t.Errorf("GET %s: Content-Length = %q, want %d", url, got, len(want))
				}
				if got := r.header.Get("Content-Type"); got != "application/octet-stream" {
					t.Errorf("GET %s: Content-Type = %q", url, got)
				}
				h := do(t, "HEAD", url)
				if h.status != 200 || len(h.body) != 0 || h.header.Get("Content-Length") != strconv.Itoa(len(want)) || h.header.Get("Docker-Content-Digest") != d {
					t.Errorf("HEAD %s = %d, %d body bytes, Content-Length %q, digest %q", url, h.status, len(h.body),
						h.header.Get("Content-Length"), h.header.Get("Docker-Content-Digest"))
				}
			}
			// Range requests (containerd resumes interrupted fetches with them).
			r := do(t, "GET", srv.URL+agnhostBlb+img.layerDigest, "Range", "bytes=2-9")
			if r.status != http.StatusPartialContent || !bytes.Equal(r.body, img.layer[2:10]) {
				t.Errorf("ranged GET = %d %x, want 206 %x", r.status, r.body, img.layer[2:10])
			}
		})
	}
}

// A blob is served only under a repository whose images reference it.
func TestBlobOfOtherRepository(t *testing.T) {
	a := makeLayout(t, "agnhost", layoutOpts{refName: "2.66.1"})
	b := makeLayout(t, "busybox", layoutOpts{refName: "1.37.0-2"})
	// A blob that is in the agnhost layout but referenced by nothing.
	orphan := writeBlob(t, a.dir, []byte("orphan blob: present on disk, part of no image\n"))
	for src, p := range layoutSources(t, a) {
		t.Run(src, func(t *testing.T) {
			srv, _ := newServer(t,
				ImageSpec{agnhostRef, p},
				ImageSpec{"registry.k8s.io/e2e-test-images/busybox:1.37.0-2", b.dir})
			// Sanity: each repository serves its own layer.
			if r := do(t, "GET", srv.URL+"/v2/e2e-test-images/busybox/blobs/"+b.layerDigest); r.status != 200 || !bytes.Equal(r.body, b.layer) {
				t.Fatalf("busybox's own layer: %d", r.status)
			}
			for _, d := range []string{b.layerDigest, b.configDigest, b.manifestDigest, orphan} {
				for _, method := range []string{"GET", "HEAD"} {
					r := do(t, method, srv.URL+agnhostBlb+d)
					if r.status != 404 {
						t.Fatalf("%s agnhost blob %s = %d, want 404", method, d, r.status)
					}
					if method == "GET" {
						expectError(t, r, 404, "BLOB_UNKNOWN")
					} else if len(r.body) != 0 {
						t.Errorf("HEAD 404 has a body")
					}
				}
			}
			// Nor is another repository's manifest served by digest.
			expectError(t, do(t, "GET", srv.URL+agnhostMfs+b.manifestDigest), 404, "MANIFEST_UNKNOWN")
			expectError(t, do(t, "GET", srv.URL+"/v2/e2e-test-images/busybox/manifests/2.66.1"), 404, "MANIFEST_UNKNOWN")
		})
	}
}

// Only what the images reference is servable, and for a directory layout
// only at the path the layout spec gives each digest.
func TestServableSetIsExactlyTheImage(t *testing.T) {
	img := makeLayout(t, "a", layoutOpts{refName: "2.66.1"})
	writeBlob(t, img.dir, []byte("unreferenced"))
	for src, p := range layoutSources(t, img) {
		t.Run(src, func(t *testing.T) {
			reg, err := Load([]ImageSpec{{agnhostRef, p}}, LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer reg.Close()
			repo := reg.repos["registry.k8s.io/e2e-test-images/agnhost"]
			if repo == nil {
				t.Fatalf("no repository; have %v", reg.repos)
			}
			want := map[string][]byte{img.manifestDigest: img.manifest, img.configDigest: img.config, img.layerDigest: img.layer}
			if len(repo.blobs) != len(want) {
				t.Errorf("%d servable blobs, want %d", len(repo.blobs), len(want))
			}
			for d, b := range repo.blobs {
				content, ok := want[d]
				if !ok {
					t.Errorf("servable blob %s is not part of the image", d)
					continue
				}
				if b.path != "" && b.path != filepath.Join(img.dir, "blobs", "sha256", strings.TrimPrefix(d, "sha256:")) {
					t.Errorf("blob %s is read from %s", d, b.path)
				}
				got, err := readBlob(b)
				if err != nil || !bytes.Equal(got, content) {
					t.Errorf("blob %s: %v, content %q", d, err, got)
				}
			}
		})
	}
}

func TestMalformedDigestsAndTraversal(t *testing.T) {
	root := t.TempDir()
	secret := []byte("TOP-SECRET content outside the layout\n")
	if err := os.WriteFile(filepath.Join(root, "secret.txt"), secret, 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "layout")
	img, desc := writeImageBlobs(t, dir, "a", layoutOpts{refName: "2.66.1"})
	writeIndex(t, dir, desc)
	// The same secret, as an unreferenced blob of the layout.
	secretDigest := writeBlob(t, dir, secret)
	secretHex := strings.TrimPrefix(secretDigest, "sha256:")
	layerHex := strings.TrimPrefix(img.layerDigest, "sha256:")
	index, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}

	for src, p := range layoutSources(t, img) {
		t.Run(src, func(t *testing.T) {
			srv, _ := newServer(t, ImageSpec{agnhostRef, p})
			addr := srv.Listener.Addr().String()
			// Positive control: the raw client does reach content.
			if r := rawDo(t, addr, "GET", agnhostBlb+img.layerDigest); r.status != 200 || !bytes.Equal(r.body, img.layer) {
				t.Fatalf("control request = %d", r.status)
			}
			cases := []struct {
				target string
				status int
				code   string
			}{
				{agnhostBlb + "sha256:abc", 400, "DIGEST_INVALID"},
				{agnhostBlb + "sha256:" + strings.ToUpper(layerHex), 400, "DIGEST_INVALID"},
				{agnhostBlb + "sha256:" + layerHex + "0", 400, "DIGEST_INVALID"},
				{agnhostBlb + "sha512:" + layerHex + layerHex, 400, "DIGEST_INVALID"},
				{agnhostBlb + layerHex, 400, "DIGEST_INVALID"},
				{agnhostBlb + "sha256:" + secretHex, 404, "BLOB_UNKNOWN"},
				// An encoded slash separates segments like a plain one.
				{agnhostBlb + "sha256:..%2f..%2f..%2fsecret.txt", 404, "NAME_UNKNOWN"},
				{agnhostBlb + "sha256%3a..%2f..%2findex.json", 404, "NAME_UNKNOWN"},
				{agnhostBlb + "..%2f..%2fsecret.txt", 404, "NAME_UNKNOWN"},
				{agnhostBlb + "%2e%2e%2f%2e%2e%2fsecret.txt", 404, "NAME_UNKNOWN"},
				{agnhostBlb + "sha256%3a%2e%2e", 400, "DIGEST_INVALID"},
				{agnhostBlb + img.layerDigest + "?ns=..%2f..%2f", 404, "NAME_UNKNOWN"},
				{agnhostBlb + "../../../secret.txt", 404, "NAME_UNKNOWN"},
				{agnhostBlb + "sha256:" + layerHex + "/../../../../secret.txt", 404, "NAME_UNKNOWN"},
				{agnhostMfs + "..%2f..%2findex.json", 404, "NAME_UNKNOWN"},
				{agnhostMfs + "%2e%2e", 404, "MANIFEST_UNKNOWN"},
				{agnhostMfs + "../index.json", 404, "NAME_UNKNOWN"},
				{"/v2/../../secret.txt", 404, "NAME_UNKNOWN"},
				{"/v2/e2e-test-images/../blobs/" + img.layerDigest, 400, "NAME_INVALID"},
				{"/v2/%2e%2e/%2e%2e/blobs/sha256:" + secretHex, 400, "NAME_INVALID"},
				{"/v2/e2e-test-images%2f..%2f..%2fagnhost/blobs/" + img.layerDigest, 400, "NAME_INVALID"},
				{"/v2//e2e-test-images/agnhost/blobs/" + img.layerDigest, 400, "NAME_INVALID"},
				{"/v2/E2E-test-images/agnhost/blobs/" + img.layerDigest, 400, "NAME_INVALID"},
				{"/../secret.txt", 404, "NAME_UNKNOWN"},
			}
			for _, c := range cases {
				r := rawDo(t, addr, "GET", c.target)
				if bytes.Contains(r.body, secret[:10]) || bytes.Contains(r.body, index) || bytes.Contains(r.body, img.layer) {
					t.Errorf("GET %s leaked content: %q", c.target, r.body)
				}
				if r.status != c.status {
					t.Errorf("GET %s = %d %q, want %d", c.target, r.status, r.body, c.status)
					continue
				}
				if code := errCode(t, r); code != c.code {
					t.Errorf("GET %s: code %s, want %s", c.target, code, c.code)
				}
			}
		})
	}
}

func TestNamespace(t *testing.T) {
	a := makeLayout(t, "k8s", layoutOpts{refName: "2.66.1"})
	b := makeLayout(t, "mirror", layoutOpts{refName: "2.66.1"})

	t.Run("single host", func(t *testing.T) {
		srv, _ := newServer(t, ImageSpec{agnhostRef, a.dir})
		for _, q := range []string{"", "?ns=registry.k8s.io", "?ns=Registry.K8s.IO"} {
			r := do(t, "GET", srv.URL+agnhostMfs+"2.66.1"+q)
			if r.status != 200 || r.header.Get("Docker-Content-Digest") != a.manifestDigest {
				t.Errorf("query %q: %d %s", q, r.status, r.header.Get("Docker-Content-Digest"))
			}
		}
		for _, q := range []string{"?ns=docker.io", "?ns=registry.k8s.io:443", "?ns=k8s.io"} {
			expectError(t, do(t, "GET", srv.URL+agnhostMfs+"2.66.1"+q), 404, "NAME_UNKNOWN")
			expectError(t, do(t, "GET", srv.URL+agnhostBlb+a.layerDigest+q), 404, "NAME_UNKNOWN")
		}
	})

	t.Run("two hosts", func(t *testing.T) {
		srv, _ := newServer(t,
			ImageSpec{agnhostRef, a.dir},
			ImageSpec{"mirror.example.com:5000/e2e-test-images/agnhost:2.66.1", b.dir})
		for ns, want := range map[string]testImage{"registry.k8s.io": a, "mirror.example.com:5000": b} {
			r := do(t, "GET", srv.URL+agnhostMfs+"2.66.1?ns="+ns)
			if r.status != 200 || !bytes.Equal(r.body, want.manifest) {
				t.Errorf("ns=%s: %d, digest %s, want %s", ns, r.status, r.header.Get("Docker-Content-Digest"), want.manifestDigest)
			}
			if r := do(t, "GET", srv.URL+agnhostBlb+want.layerDigest+"?ns="+ns); r.status != 200 {
				t.Errorf("ns=%s: own layer: %d", ns, r.status)
			}
		}
		// The other host's layer is not this host's repository's.
		expectError(t, do(t, "GET", srv.URL+agnhostBlb+b.layerDigest+"?ns=registry.k8s.io"), 404, "BLOB_UNKNOWN")
		// Without ns the name is ambiguous.
		r := do(t, "GET", srv.URL+agnhostMfs+"2.66.1")
		expectError(t, r, 404, "NAME_UNKNOWN")
		if !bytes.Contains(r.body, []byte("ns=")) {
			t.Errorf("ambiguity error does not mention ns: %s", r.body)
		}
	})
}

func TestUnknown(t *testing.T) {
	img := makeLayout(t, "a", layoutOpts{refName: "2.66.1"})
	srv, _ := newServer(t, ImageSpec{agnhostRef, img.dir})
	unknown := "sha256:" + strings.Repeat("ab", 32)
	for _, c := range []struct {
		path   string
		status int
		code   string
	}{
		{agnhostMfs + "2.66.2", 404, "MANIFEST_UNKNOWN"},
		{agnhostMfs + "latest?ns=registry.k8s.io", 404, "MANIFEST_UNKNOWN"},
		{agnhostMfs + unknown, 404, "MANIFEST_UNKNOWN"},
		{agnhostMfs + img.layerDigest, 404, "MANIFEST_UNKNOWN"}, // a blob, not a manifest
		{agnhostMfs + "-bad-tag", 404, "MANIFEST_UNKNOWN"},
		{agnhostBlb + unknown, 404, "BLOB_UNKNOWN"},
		{agnhostBlb + "2.66.1", 400, "DIGEST_INVALID"},
		{"/v2/e2e-test-images/busybox/manifests/2.66.1", 404, "NAME_UNKNOWN"},
		{"/v2/agnhost/manifests/2.66.1", 404, "NAME_UNKNOWN"},
		{"/v2/e2e-test-images/agnhost/tags/list", 404, "NAME_UNKNOWN"},
		{"/", 404, "NAME_UNKNOWN"},
	} {
		r := do(t, "GET", srv.URL+c.path)
		if r.status != c.status {
			t.Errorf("GET %s = %d %q, want %d", c.path, r.status, r.body, c.status)
			continue
		}
		if code := errCode(t, r); code != c.code {
			t.Errorf("GET %s: code %s, want %s", c.path, code, c.code)
		}
		h := do(t, "HEAD", srv.URL+c.path)
		if h.status != c.status || len(h.body) != 0 {
			t.Errorf("HEAD %s = %d with %d body bytes, want %d and none", c.path, h.status, len(h.body), c.status)
		}
	}
}

func TestOtherMethods(t *testing.T) {
	img := makeLayout(t, "a", layoutOpts{refName: "2.66.1"})
	srv, _ := newServer(t, ImageSpec{agnhostRef, img.dir})
	for _, method := range []string{"POST", "PUT", "PATCH", "DELETE", "OPTIONS"} {
		for _, p := range []string{"/v2/", agnhostMfs + "2.66.1", agnhostBlb + img.layerDigest, agnhostBlb + "uploads/"} {
			r := do(t, method, srv.URL+p)
			expectError(t, r, http.StatusMethodNotAllowed, "UNSUPPORTED")
			if a := r.header.Get("Allow"); a != "GET, HEAD" {
				t.Errorf("%s %s: Allow = %q", method, p, a)
			}
		}
	}
	// Nothing changed.
	if r := do(t, "GET", srv.URL+agnhostMfs+"2.66.1"); r.status != 200 || !bytes.Equal(r.body, img.manifest) {
		t.Errorf("manifest after write attempts: %d", r.status)
	}
}

func TestTagSelection(t *testing.T) {
	t.Run("single manifest serves any tag", func(t *testing.T) {
		for _, refName := range []string{"", "latest"} {
			img := makeLayout(t, "a", layoutOpts{refName: refName})
			srv, _ := newServer(t, ImageSpec{agnhostRef, img.dir})
			if r := do(t, "GET", srv.URL+agnhostMfs+"2.66.1"); r.status != 200 || !bytes.Equal(r.body, img.manifest) {
				t.Errorf("ref.name %q: %d", refName, r.status)
			}
			// Only the REF's tag is served, not the layout's own name.
			if refName != "" {
				expectError(t, do(t, "GET", srv.URL+agnhostMfs+refName), 404, "MANIFEST_UNKNOWN")
			}
		}
	})
	t.Run("several manifests", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "layout")
		imgA, descA := writeImageBlobs(t, dir, "a", layoutOpts{refName: "a"})
		imgB, descB := writeImageBlobs(t, dir, "b", layoutOpts{refName: agnhostRef}) // a full reference
		writeIndex(t, dir, descA, descB)
		srv, _ := newServer(t,
			ImageSpec{agnhostRef, dir},
			ImageSpec{"registry.k8s.io/e2e-test-images/agnhost:a", dir})
		for tag, want := range map[string]testImage{"2.66.1": imgB, "a": imgA} {
			if r := do(t, "GET", srv.URL+agnhostMfs+tag); r.status != 200 || !bytes.Equal(r.body, want.manifest) {
				t.Errorf("tag %s: %d, digest %s, want %s", tag, r.status, r.header.Get("Docker-Content-Digest"), want.manifestDigest)
			}
		}
		_, err := Load([]ImageSpec{{"registry.k8s.io/e2e-test-images/agnhost:c", dir}}, LoadOptions{})
		if err == nil || !strings.Contains(err.Error(), "none is tagged c") {
			t.Errorf("untagged c: err = %v", err)
		}
	})
}

// An index.json entry that is itself an image index (multi-platform):
// served as the index, its present platform manifest by digest, and the
// missing one reported, not served.
func TestIndexOfManifests(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "layout")
	img, desc := writeImageBlobs(t, dir, "amd64", layoutOpts{})
	desc["platform"] = map[string]string{"os": "linux", "architecture": "amd64"}
	missing := map[string]any{"mediaType": mediaTypeOCIManifest, "digest": digestOf([]byte("arm64 manifest, not in the layout")), "size": 33,
		"platform": map[string]string{"os": "linux", "architecture": "arm64"}}
	index := mustJSON(t, map[string]any{"schemaVersion": 2, "mediaType": mediaTypeOCIIndex, "manifests": []any{desc, missing}})
	indexDigest := writeBlob(t, dir, index)
	writeIndex(t, dir, map[string]any{"mediaType": mediaTypeOCIIndex, "digest": indexDigest, "size": len(index),
		"annotations": map[string]string{annotationRefName: "2.66.1"}})

	var warnings []string
	reg, err := Load([]ImageSpec{{agnhostRef, dir}}, LoadOptions{Warnf: func(f string, a ...any) { warnings = append(warnings, fmt.Sprintf(f, a...)) }})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	if len(warnings) != 1 || !strings.Contains(warnings[0], missing["digest"].(string)) {
		t.Errorf("warnings = %q, want one about %s", warnings, missing["digest"])
	}
	srv := httptest.NewServer(reg)
	defer srv.Close()
	r := do(t, "GET", srv.URL+agnhostMfs+"2.66.1")
	if r.status != 200 || r.header.Get("Content-Type") != mediaTypeOCIIndex || !bytes.Equal(r.body, index) || r.header.Get("Docker-Content-Digest") != indexDigest {
		t.Errorf("tag: %d %s %s", r.status, r.header.Get("Content-Type"), r.header.Get("Docker-Content-Digest"))
	}
	r = do(t, "GET", srv.URL+agnhostMfs+img.manifestDigest)
	if r.status != 200 || r.header.Get("Content-Type") != mediaTypeOCIManifest || !bytes.Equal(r.body, img.manifest) {
		t.Errorf("platform manifest: %d %s", r.status, r.header.Get("Content-Type"))
	}
	if r := do(t, "GET", srv.URL+agnhostBlb+img.layerDigest); r.status != 200 || !bytes.Equal(r.body, img.layer) {
		t.Errorf("platform layer: %d", r.status)
	}
	expectError(t, do(t, "GET", srv.URL+agnhostMfs+missing["digest"].(string)), 404, "MANIFEST_UNKNOWN")
}

func TestLoadErrors(t *testing.T) {
	good := makeLayout(t, "good", layoutOpts{refName: "2.66.1"})
	blobPath := func(img testImage, d string) string {
		return filepath.Join(img.dir, "blobs", "sha256", strings.TrimPrefix(d, "sha256:"))
	}
	cases := []struct {
		name  string
		setup func(t *testing.T) []ImageSpec
		opts  LoadOptions
		want  string
	}{
		{"missing path", func(t *testing.T) []ImageSpec {
			return []ImageSpec{{agnhostRef, filepath.Join(t.TempDir(), "nope.tar")}}
		}, LoadOptions{}, "nope.tar"},
		{"no oci-layout", func(t *testing.T) []ImageSpec {
			img := makeLayout(t, "x", layoutOpts{refName: "2.66.1"})
			os.Remove(filepath.Join(img.dir, "oci-layout"))
			return []ImageSpec{{agnhostRef, img.dir}}
		}, LoadOptions{}, "not an OCI image layout"},
		{"gzip tar", func(t *testing.T) []ImageSpec {
			p := filepath.Join(t.TempDir(), "x.tar.gz")
			gz, _ := gzipTar(t, "index.json", "{}")
			os.WriteFile(p, gz, 0o644)
			return []ImageSpec{{agnhostRef, p}}
		}, LoadOptions{}, "gzip"},
		{"not a tar", func(t *testing.T) []ImageSpec {
			p := filepath.Join(t.TempDir(), "x.tar")
			os.WriteFile(p, bytes.Repeat([]byte("not a tar "), 100), 0o644)
			return []ImageSpec{{agnhostRef, p}}
		}, LoadOptions{}, "tar"},
		{"tar without index.json", func(t *testing.T) []ImageSpec {
			img := makeLayout(t, "x", layoutOpts{refName: "2.66.1"})
			os.Remove(filepath.Join(img.dir, "index.json"))
			return []ImageSpec{{agnhostRef, tarLayout(t, img.dir)}}
		}, LoadOptions{}, "no index.json"},
		{"missing layer", func(t *testing.T) []ImageSpec {
			img := makeLayout(t, "x", layoutOpts{refName: "2.66.1"})
			os.Remove(blobPath(img, img.layerDigest))
			return []ImageSpec{{agnhostRef, img.dir}}
		}, LoadOptions{}, "layer: blob " + "sha256:"},
		{"manifest does not hash to its digest", func(t *testing.T) []ImageSpec {
			img := makeLayout(t, "x", layoutOpts{refName: "2.66.1"})
			os.WriteFile(blobPath(img, img.manifestDigest), bytes.ReplaceAll(img.manifest, []byte(`"schemaVersion":2`), []byte(`"schemaVersion":3`)), 0o600)
			return []ImageSpec{{agnhostRef, img.dir}}
		}, LoadOptions{}, "hashes to"},
		{"layer size differs", func(t *testing.T) []ImageSpec {
			img := makeLayout(t, "x", layoutOpts{refName: "2.66.1"})
			os.WriteFile(blobPath(img, img.layerDigest), append(img.layer, 0), 0o600)
			return []ImageSpec{{agnhostRef, tarLayout(t, img.dir)}}
		}, LoadOptions{}, "descriptor says"},
		{"layer content differs, verified", func(t *testing.T) []ImageSpec {
			img := makeLayout(t, "x", layoutOpts{refName: "2.66.1"})
			bad := bytes.Clone(img.layer)
			bad[len(bad)-1] ^= 0xff
			os.WriteFile(blobPath(img, img.layerDigest), bad, 0o600)
			return []ImageSpec{{agnhostRef, img.dir}}
		}, LoadOptions{VerifyBlobs: true}, "hashes to"},
		{"media types disagree", func(t *testing.T) []ImageSpec {
			dir := filepath.Join(t.TempDir(), "layout")
			_, desc := writeImageBlobs(t, dir, "x", layoutOpts{manifestMediaType: true})
			desc["mediaType"] = mediaTypeDockerManifest
			writeIndex(t, dir, desc)
			return []ImageSpec{{agnhostRef, dir}}
		}, LoadOptions{}, "media type"},
		{"reference without tag", func(t *testing.T) []ImageSpec {
			return []ImageSpec{{"registry.k8s.io/e2e-test-images/agnhost", good.dir}}
		}, LoadOptions{}, "no tag"},
		{"reference pins another digest", func(t *testing.T) []ImageSpec {
			return []ImageSpec{{agnhostRef + "@sha256:" + strings.Repeat("0", 64), good.dir}}
		}, LoadOptions{}, "the reference names"},
		{"duplicate reference", func(t *testing.T) []ImageSpec {
			return []ImageSpec{{agnhostRef, good.dir}, {agnhostRef, good.dir}}
		}, LoadOptions{}, "twice"},
		{"one bad image among good ones", func(t *testing.T) []ImageSpec {
			return []ImageSpec{{agnhostRef, good.dir}, {"registry.k8s.io/pause:3.10", filepath.Join(t.TempDir(), "missing")}}
		}, LoadOptions{}, "registry.k8s.io/pause:3.10"},
		{"no images", func(t *testing.T) []ImageSpec { return nil }, LoadOptions{}, "no images"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reg, err := Load(c.setup(t), c.opts)
			if err == nil {
				reg.Close()
				t.Fatalf("Load succeeded, want an error containing %q", c.want)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not contain %q", err, c.want)
			}
		})
	}

	// Without -verify a same-size corrupted layer loads (only sizes are
	// checked); with it, as above, it does not.
	img := makeLayout(t, "x", layoutOpts{refName: "2.66.1"})
	bad := bytes.Clone(img.layer)
	bad[len(bad)-1] ^= 0xff
	os.WriteFile(blobPath(img, img.layerDigest), bad, 0o600)
	reg, err := Load([]ImageSpec{{agnhostRef, img.dir}}, LoadOptions{})
	if err != nil {
		t.Fatalf("unverified load: %v", err)
	}
	reg.Close()
}

// The exact steps of hack/e2e-images.sh's oci_image (umoci init, new,
// insert, config, gc; tar -C layout -cf out .).
func TestUmociLayout(t *testing.T) {
	umoci, tarBin := lookPath(t, "umoci"), lookPath(t, "tar")
	work := t.TempDir()
	rootfs := filepath.Join(work, "rootfs")
	os.MkdirAll(filepath.Join(rootfs, "bin"), 0o755)
	os.WriteFile(filepath.Join(rootfs, "bin", "hello"), []byte("#!/bin/sh\necho hello\n"), 0o755)
	layoutDir := filepath.Join(work, "busybox-1.37.0-2.oci")
	out := filepath.Join(work, "busybox-1.37.0-2.tar")
	var rootless []string
	if os.Geteuid() != 0 {
		rootless = []string{"--rootless"}
	}
	for _, args := range [][]string{
		{"init", "--layout", layoutDir},
		{"new", "--image", layoutDir + ":1.37.0-2"},
		append(append([]string{"insert"}, rootless...), "--image", layoutDir+":1.37.0-2", rootfs, "/"),
		{"config", "--image", layoutDir + ":1.37.0-2", "--os", "linux", "--architecture", "amd64", "--config.cmd", "sh"},
		{"gc", "--layout", layoutDir},
	} {
		if b, err := exec.Command(umoci, args...).CombinedOutput(); err != nil {
			t.Fatalf("umoci %v: %v: %s", args, err, b)
		}
	}
	if b, err := exec.Command(tarBin, "-C", layoutDir, "-cf", out, ".").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v: %s", err, b)
	}
	srv, _ := newServer(t, ImageSpec{"registry.k8s.io/e2e-test-images/busybox:1.37.0-2", out})
	base := srv.URL + "/v2/e2e-test-images/busybox/"
	r := do(t, "GET", base+"manifests/1.37.0-2?ns=registry.k8s.io")
	if r.status != 200 || r.header.Get("Content-Type") != mediaTypeOCIManifest || r.header.Get("Docker-Content-Digest") != digestOf(r.body) {
		t.Fatalf("manifest: %d %s %s", r.status, r.header.Get("Content-Type"), r.header.Get("Docker-Content-Digest"))
	}
	var m document
	if err := json.Unmarshal(r.body, &m); err != nil || m.Config == nil || len(m.Layers) != 1 {
		t.Fatalf("manifest %s: %v", r.body, err)
	}
	for _, d := range append([]descriptor{*m.Config}, m.Layers...) {
		b := do(t, "GET", base+"blobs/"+d.Digest+"?ns=registry.k8s.io")
		if b.status != 200 || digestOf(b.body) != d.Digest || int64(len(b.body)) != d.Size {
			t.Errorf("blob %s: %d, %d bytes hashing to %s", d.Digest, b.status, len(b.body), digestOf(b.body))
		}
	}
}

// lookPath finds a tool the harness installs (hack/install-deps.sh); a
// missing one fails the test instead of skipping it.
func lookPath(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found: run hack/install-deps.sh", name)
	}
	return p
}
