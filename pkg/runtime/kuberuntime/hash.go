package kuberuntime

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/dump"
)

// HashContainer returns the hash the upstream kubelet (v1.34 to v1.37) stores in a
// container's io.kubernetes.container.hash annotation, byte for byte: FNV-32a
// over the spew dump (dump.ForHash) of the JSON object {"image","name"}.
//
// Only the name and the image enter it, because they are the only fields of
// an API pod's container that can change while the pod exists (resources
// change through in-place resize, which is not a spec change). So a field
// the API server starts defaulting after a control-plane upgrade never
// counts as "spec changed", and a node taken over from the upstream kubelet
// (or handed back to it) keeps every container: both kubelets compute the
// same value.
//
// The dump costs microseconds and every sync of every pod asks for it, so
// results are cached by (name, image).
func HashContainer(c *v1.Container) uint64 {
	key := hashKey{c.Name, c.Image}
	hashCache.mu.RLock()
	h, ok := hashCache.m[key]
	hashCache.mu.RUnlock()
	if ok {
		return h
	}
	h = computeHash(c.Name, c.Image)
	hashCache.mu.Lock()
	if len(hashCache.m) >= hashCacheSize {
		// Crude but bounded: a node sees far fewer distinct containers.
		hashCache.m = make(map[hashKey]uint64, hashCacheSize)
	}
	hashCache.m[key] = h
	hashCache.mu.Unlock()
	return h
}

const hashCacheSize = 4096

type hashKey struct{ name, image string }

var hashCache = struct {
	mu sync.RWMutex
	m  map[hashKey]uint64
}{m: make(map[hashKey]uint64)}

func computeHash(name, image string) uint64 {
	// encoding/json sorts map keys, as upstream's marshalling does.
	b, _ := json.Marshal(map[string]string{"name": name, "image": image})
	h := fnv.New32a()
	fmt.Fprintf(h, "%v", dump.ForHash(b))
	return uint64(h.Sum32())
}

// legacyHashContainer is the hash this kubelet wrote before it followed
// upstream (FNV-64a over the JSON of the whole container without resources
// and resize policy). Containers created by that version are adopted, not
// restarted: see containerChanged.
func legacyHashContainer(c *v1.Container) uint64 {
	cp := c.DeepCopy()
	cp.Resources = v1.ResourceRequirements{}
	cp.ResizePolicy = nil
	b, _ := json.Marshal(cp)
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}

// containerChanged reports whether a running instance recorded with hash
// must be replaced to match spec c. The hash of an earlier version of this
// kubelet counts as a match when it equals that version's hash of c (it is
// only computed when the current one does not match, so the common path
// costs one 32-bit hash).
func containerChanged(c *v1.Container, hash uint64) bool {
	if hash == HashContainer(c) {
		return false
	}
	if hash > 0xffffffff && hash == legacyHashContainer(c) {
		return false
	}
	return true
}
