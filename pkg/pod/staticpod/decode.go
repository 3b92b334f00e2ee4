package staticpod

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// ErrEmpty is returned for a manifest with no documents in it (zero bytes,
// only whitespace, comments or "---" separators).
var ErrEmpty = errors.New("manifest is empty")

// decode splits data into YAML documents (JSON is a YAML document) and
// decodes each strictly into pods. Documents that are empty are skipped.
func decode(data []byte) ([]*v1.Pod, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var pods []*v1.Pod
	docs := 0
	for index := 0; ; index++ {
		doc, err := reader.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading document %d: %w", index, err)
		}
		jsonDoc, err := yaml.YAMLToJSONStrict(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", index, err)
		}
		jsonDoc = bytes.TrimSpace(jsonDoc)
		if len(jsonDoc) == 0 || bytes.Equal(jsonDoc, []byte("null")) {
			continue
		}
		docs++
		got, err := decodeDocument(jsonDoc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", index, err)
		}
		pods = append(pods, got...)
	}
	if docs == 0 {
		return nil, ErrEmpty
	}
	return pods, nil
}

func decodeDocument(jsonDoc []byte) ([]*v1.Pod, error) {
	var tm metav1.TypeMeta
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(jsonDoc, &tm); err != nil {
		return nil, fmt.Errorf("not a JSON or YAML object: %w", err)
	}
	if tm.APIVersion == "" {
		return nil, errors.New("apiVersion: Required value: must be \"v1\"")
	}
	if tm.APIVersion != "v1" {
		return nil, fmt.Errorf("apiVersion: Unsupported value: %q: supported values: \"v1\"", tm.APIVersion)
	}
	switch tm.Kind {
	case "Pod":
		pod := &v1.Pod{}
		if err := strictUnmarshal(jsonDoc, pod); err != nil {
			return nil, err
		}
		return []*v1.Pod{pod}, nil
	case "PodList":
		list := &v1.PodList{}
		if err := strictUnmarshal(jsonDoc, list); err != nil {
			return nil, err
		}
		pods := make([]*v1.Pod, 0, len(list.Items))
		for i := range list.Items {
			pod := list.Items[i]
			// Items of a list carry no TypeMeta of their own.
			pod.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
			pods = append(pods, &pod)
		}
		return pods, nil
	case "":
		return nil, errors.New("kind: Required value: must be \"Pod\" or \"PodList\"")
	default:
		return nil, fmt.Errorf("kind: Unsupported value: %q: supported values: \"Pod\", \"PodList\"", tm.Kind)
	}
}

// strictUnmarshal decodes case-sensitively and rejects unknown and duplicate
// fields, as the API server does with fieldValidation=Strict.
func strictUnmarshal(data []byte, into any) error {
	strictErrs, err := sigsjson.UnmarshalStrict(data, into,
		sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	if len(strictErrs) > 0 {
		return errors.Join(strictErrs...)
	}
	return nil
}
