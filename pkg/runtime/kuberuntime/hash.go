package kuberuntime

import (
	"encoding/json"
	"hash/fnv"

	v1 "k8s.io/api/core/v1"
)

// HashContainer returns the hash of the parts of a container spec whose
// change requires a new container instance. Resources and resize policy are
// left out so that an in-place resize does not count as a spec change. The
// hash is stored on each CRI container (annotation) so that a restarted
// kubelet can tell whether a running container still matches its spec.
func HashContainer(c *v1.Container) uint64 {
	cp := c.DeepCopy()
	cp.Resources = v1.ResourceRequirements{}
	cp.ResizePolicy = nil
	b, _ := json.Marshal(cp)
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}
