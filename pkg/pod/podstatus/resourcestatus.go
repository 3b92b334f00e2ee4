package podstatus

import v1 "k8s.io/api/core/v1"

// MergeResourceStatus sets entries of a container's
// allocatedResourcesStatus: an entry of the same name in have is replaced,
// others are added. Each resource manager (device plugins, DRA) sets its
// own names and leaves the others' alone.
func MergeResourceStatus(have, set []v1.ResourceStatus) []v1.ResourceStatus {
	for _, s := range set {
		found := false
		for i := range have {
			if have[i].Name == s.Name {
				have[i], found = s, true
			}
		}
		if !found {
			have = append(have, s)
		}
	}
	return have
}
