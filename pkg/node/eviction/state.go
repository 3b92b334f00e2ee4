package eviction

import (
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
)

// Observation is one signal's available amount against its capacity.
type Observation struct {
	Available int64
	Capacity  int64
	// Time is when it was measured; a threshold acts on an observation
	// only once (a newer one is needed to evict again).
	Time time.Time
}

// Observations are the signals observed in one pass.
type Observations map[Signal]Observation

// Met returns the thresholds whose signal's available amount is below the
// threshold (plus its minimum reclaim when withMinReclaim).
func Met(thresholds []Threshold, obs Observations, withMinReclaim bool) []Threshold {
	var out []Threshold
	for _, t := range thresholds {
		o, ok := obs[t.Signal]
		if !ok {
			continue
		}
		q := t.Value.Amount(o.Capacity)
		if withMinReclaim && t.MinReclaim != nil {
			q += t.MinReclaim.Amount(o.Capacity)
		}
		if q > o.Available {
			out = append(out, t)
		}
	}
	return out
}

// State is what the eviction manager remembers between passes: when each
// threshold was first met, when each pressure condition was last seen, the
// thresholds still being reclaimed, the last observations.
type State struct {
	firstMet  map[string]time.Time
	lastSeen  map[v1.NodeConditionType]time.Time
	reclaim   []Threshold
	lastObs   Observations
	condition []v1.NodeConditionType
}

// Step is the outcome of one pass.
type Step struct {
	// Conditions are the node's pressure conditions: seen within the
	// pressure transition period.
	Conditions []v1.NodeConditionType
	// Act are the thresholds to reclaim for now (grace period over, new
	// observation), most urgent first: memory before anything else.
	Act []Threshold
}

// Update runs one pass of upstream's eviction decision on fresh
// observations at now:
//
//  1. the thresholds met now, plus those met before whose minimum
//     reclaim is not yet satisfied;
//  2. when each was first met (a threshold no longer met forgets it);
//  3. the conditions they raise, held for transition after last seen,
//     so a node does not flap in and out of pressure;
//  4. those whose grace period is over act, once per new observation.
func (s *State) Update(thresholds []Threshold, obs Observations, now time.Time, transition time.Duration) Step {
	met := Met(thresholds, obs, false)
	if len(s.reclaim) > 0 {
		met = merge(met, Met(s.reclaim, obs, true))
	}
	first := map[string]time.Time{}
	for _, t := range met {
		at, ok := s.firstMet[t.key()]
		if !ok {
			at = now
		}
		first[t.key()] = at
	}
	if s.lastSeen == nil {
		s.lastSeen = map[v1.NodeConditionType]time.Time{}
	}
	for _, t := range met {
		if c := t.Signal.Condition(); c != "" {
			s.lastSeen[c] = now
		}
	}
	var conds []v1.NodeConditionType
	for c, at := range s.lastSeen {
		if now.Sub(at) < transition {
			conds = append(conds, c)
		} else {
			delete(s.lastSeen, c)
		}
	}
	sort.Slice(conds, func(i, j int) bool { return conds[i] < conds[j] })

	var act []Threshold
	for _, t := range met {
		if now.Sub(first[t.key()]) >= t.GracePeriod {
			act = append(act, t)
		}
	}
	s.firstMet = first
	s.reclaim = act
	s.condition = conds

	var fresh []Threshold
	for _, t := range act {
		o := obs[t.Signal]
		last, ok := s.lastObs[t.Signal]
		if !ok || o.Time.IsZero() || o.Time.After(last.Time) {
			fresh = append(fresh, t)
		}
	}
	s.lastObs = obs
	sort.SliceStable(fresh, func(i, j int) bool { return priority(fresh[i].Signal) < priority(fresh[j].Signal) })
	return Step{Conditions: conds, Act: fresh}
}

// Conditions are the pressure conditions of the last pass.
func (s *State) Conditions() []v1.NodeConditionType { return s.condition }

// priority orders signals for reclaim: memory first, as upstream.
func priority(s Signal) int {
	switch s {
	case MemoryAvailable, AllocatableMemoryAvailable:
		return 0
	case "":
		return 2
	}
	return 1
}

func merge(a, b []Threshold) []Threshold {
	out := append([]Threshold(nil), a...)
	for _, t := range b {
		dup := false
		for _, o := range out {
			if o.key() == t.key() {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, t)
		}
	}
	return out
}

// Has reports whether conds holds c.
func Has(conds []v1.NodeConditionType, c v1.NodeConditionType) bool {
	for _, x := range conds {
		if x == c {
			return true
		}
	}
	return false
}
