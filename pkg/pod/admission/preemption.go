package admission

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

// Upstream's words for a pod preempted to admit a critical pod.
const (
	ReasonPreempting          = "Preempting"
	MessagePreempted          = "Preempted in order to admit critical pod"
	MessagePreemptedCondition = "Pod was preempted by Kubelet to accommodate a critical pod."
	// ReasonUnexpectedAdmissionError rejects a critical pod no set of
	// pods can make room for.
	ReasonUnexpectedAdmissionError = "UnexpectedAdmissionError"
)

// Shortage is how much of a resource a pod lacks to be admitted, in the
// admission messages' units (millicores, bytes, counts; one per pod for
// pods).
type Shortage struct {
	Resource v1.ResourceName
	Amount   int64
}

func (s Shortage) String() string { return fmt.Sprintf("%s: %d", s.Resource, s.Amount) }

// Preemption chooses the pods to stop so that a critical pod admitted
// with shortages fits, as upstream's kubelet does: only pods the
// preemptor may preempt (not critical, or of lower priority); best-effort
// pods before burstable ones before guaranteed ones, a class being touched
// only for what the classes before it cannot cover; within a class, one
// pod at a time, the one that leaves the least of the remaining shortages
// (each weighed as a fraction of itself), the smaller request on a tie.
// It fails when even all candidates together cannot cover the shortages.
// pods are the node's other active pods, at their allocated resources.
func Preemption(preemptor *v1.Pod, pods []*v1.Pod, short []Shortage) ([]*v1.Pod, error) {
	var classes [3][]*v1.Pod // best effort, burstable, guaranteed
	for _, p := range pods {
		if p.UID == preemptor.UID || !preemptable(preemptor, p) {
			continue
		}
		switch podspec.QOSClass(p) {
		case v1.PodQOSBestEffort:
			classes[0] = append(classes[0], p)
		case v1.PodQOSBurstable:
			classes[1] = append(classes[1], p)
		case v1.PodQOSGuaranteed:
			classes[2] = append(classes[2], p)
		}
	}
	all := append(append(append([]*v1.Pod(nil), classes[0]...), classes[1]...), classes[2]...)
	if left := remaining(short, all); len(left) > 0 {
		return nil, fmt.Errorf("no set of running pods found to reclaim resources: %s", describeShortages(left))
	}
	// The most valued class first: what it must give even if every pod
	// of the classes before it went.
	var chosen [3][]*v1.Pod
	for c := 2; c >= 0; c-- {
		var others []*v1.Pod
		for o := 0; o < 3; o++ {
			switch {
			case o < c:
				others = append(others, classes[o]...)
			case o > c:
				others = append(others, chosen[o]...)
			}
		}
		picked, err := closest(classes[c], remaining(short, others))
		if err != nil {
			return nil, err
		}
		chosen[c] = picked
	}
	return append(append(chosen[0], chosen[1]...), chosen[2]...), nil
}

// preemptable: a critical pod may preempt any pod that is not critical,
// and any pod may preempt one of lower priority.
func preemptable(preemptor, p *v1.Pod) bool {
	if podspec.IsCritical(preemptor) && !podspec.IsCritical(p) {
		return true
	}
	return preemptor.Spec.Priority != nil && p.Spec.Priority != nil && *preemptor.Spec.Priority > *p.Spec.Priority
}

// closest picks pods from candidates, one at a time, until short is
// covered.
func closest(candidates []*v1.Pod, short []Shortage) ([]*v1.Pod, error) {
	left := append([]*v1.Pod(nil), candidates...)
	var picked []*v1.Pod
	for len(short) > 0 {
		if len(left) == 0 {
			return nil, fmt.Errorf("no set of running pods found to reclaim resources: %s", describeShortages(short))
		}
		best := 0
		bestGap := gap(short, left[0])
		for i := 1; i < len(left); i++ {
			g := gap(short, left[i])
			if g < bestGap || (g == bestGap && smallerRequest(left[i], left[best])) {
				best, bestGap = i, g
			}
		}
		picked = append(picked, left[best])
		short = remaining(short, left[best:best+1])
		left = append(left[:best], left[best+1:]...)
	}
	return picked, nil
}

// gap is how far stopping p leaves short from covered: the sum over the
// shortages of the squared fraction still missing.
func gap(short []Shortage, p *v1.Pod) float64 {
	total := 0.0
	for _, s := range short {
		if missing := s.Amount - request(p, s.Resource); missing > 0 {
			f := float64(missing) / float64(s.Amount)
			total += f * f
		}
	}
	return total
}

// remaining is what of short the pods' requests do not cover.
func remaining(short []Shortage, pods []*v1.Pod) []Shortage {
	var out []Shortage
	for _, s := range short {
		left := s.Amount
		for _, p := range pods {
			if left <= 0 {
				break
			}
			left -= request(p, s.Resource)
		}
		if left > 0 {
			out = append(out, Shortage{Resource: s.Resource, Amount: left})
		}
	}
	return out
}

// smallerRequest: a's memory request is below b's, or equal with a cpu
// request not above b's.
func smallerRequest(a, b *v1.Pod) bool {
	for _, r := range []v1.ResourceName{v1.ResourceMemory, v1.ResourceCPU} {
		if x, y := request(a, r), request(b, r); x != y {
			return x < y
		}
	}
	return true
}

// request is the pod's effective request of r in the shortages' units: 1
// for pods.
func request(p *v1.Pod, r v1.ResourceName) int64 {
	if r == v1.ResourcePods {
		return 1
	}
	q, ok := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})[r]
	if !ok {
		return 0
	}
	if r == v1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

func describeShortages(short []Shortage) string {
	parts := make([]string, len(short))
	for i, s := range short {
		parts[i] = s.String()
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
