package staticpod

import (
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

// Parse decodes, defaults, validates and names the pods of one manifest.
//
// source is podspec.SourceFile or podspec.SourceHTTP; origin is the
// file path or the URL the bytes came from; nodeName is this node's name.
// All three enter the pods' identity (see StaticPodName and the UID rule in
// identity.go).
//
// The manifest is one Pod, a v1 PodList, or several YAML documents of
// either. On any error no pods are returned, and the error names the
// document or the pod, and the field (`document 1: kind: Unsupported
// value ...`, `pod 0 ("web"): spec.containers[0].image: Required value:
// ...`). An empty manifest returns ErrEmpty.
func Parse(data []byte, source, origin, nodeName string) ([]*v1.Pod, error) {
	if source != podspec.SourceFile && source != podspec.SourceHTTP {
		return nil, fmt.Errorf("unknown static pod source %q", source)
	}
	if nodeName == "" {
		return nil, errors.New("node name is empty")
	}
	pods, err := decode(data)
	if err != nil {
		return nil, err
	}
	var errs []error
	names := map[string]int{}
	for i, pod := range pods {
		namespace := pod.Namespace
		applyDefaults(pod)
		if fieldErrs := validatePod(pod); len(fieldErrs) > 0 {
			errs = append(errs, fmt.Errorf("pod %d (%q): %w", i, pod.Name, fieldErrs.ToAggregate()))
			continue
		}
		key := pod.Namespace + "/" + pod.Name
		if first, dup := names[key]; dup {
			errs = append(errs, fmt.Errorf("pod %d (%q): metadata.name: Duplicate value: %q is also pod %d", i, pod.Name, key, first))
			continue
		}
		names[key] = i
		if fieldErrs := applyIdentity(pod, namespace, source, origin, nodeName); len(fieldErrs) > 0 {
			errs = append(errs, fmt.Errorf("pod %d (%q): %w", i, pod.Name, fieldErrs.ToAggregate()))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return pods, nil
}
