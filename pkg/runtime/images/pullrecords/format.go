package pullrecords

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletv1alpha1 "k8s.io/kubelet/config/v1alpha1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	sigsjson "sigs.k8s.io/json"
)

// The kinds of the two record types, and the versions written and read.
const (
	KindIntent = "ImagePullIntent"
	KindPulled = "ImagePulledRecord"
)

var (
	writeVersion = kubeletv1beta1.SchemeGroupVersion.String()
	readVersions = map[string]bool{writeVersion: true, kubeletv1alpha1.SchemeGroupVersion.String(): true}
)

// File names: "sha256-" and the hex SHA-256 of the intent's image or the
// record's image ref; temporary files end in ".tmp".
const (
	filePrefix = "sha256-"
	tmpSuffix  = ".tmp"
)

// FileName is the file of the intent for image, or of the pulled record of
// the image ref.
func FileName(key string) string {
	return fmt.Sprintf("%s%x", filePrefix, sha256.Sum256([]byte(key)))
}

// EncodeIntent is the file content of the intent to pull image.
func EncodeIntent(image string) ([]byte, error) {
	return encode(&kubeletv1beta1.ImagePullIntent{
		TypeMeta: metav1.TypeMeta{Kind: KindIntent, APIVersion: writeVersion},
		Image:    image,
	})
}

// EncodePulled is the file content of rec, as the current version.
func EncodePulled(rec *kubeletv1beta1.ImagePulledRecord) ([]byte, error) {
	out := rec.DeepCopy()
	out.TypeMeta = metav1.TypeMeta{Kind: KindPulled, APIVersion: writeVersion}
	return encode(out)
}

// encode is compact JSON and a newline, as upstream's serializer writes.
func encode(obj any) ([]byte, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// DecodeIntent reads an intent file. current says whether it is in the
// version written today (else it is rewritten when the store opens).
func DecodeIntent(data []byte) (intent *kubeletv1beta1.ImagePullIntent, current bool, err error) {
	intent = &kubeletv1beta1.ImagePullIntent{}
	current, err = decode(data, KindIntent, intent)
	if err != nil {
		return nil, false, err
	}
	return intent, current, nil
}

// DecodePulled reads a pulled record file.
func DecodePulled(data []byte) (rec *kubeletv1beta1.ImagePulledRecord, current bool, err error) {
	rec = &kubeletv1beta1.ImagePulledRecord{}
	current, err = decode(data, KindPulled, rec)
	if err != nil {
		return nil, false, err
	}
	return rec, current, nil
}

// decode reads data into obj as upstream's strict decoder does: apiVersion
// and kind must be there and right, field names are case-sensitive, and an
// unknown or duplicated field is an error.
func decode(data []byte, kind string, obj any) (bool, error) {
	var tm metav1.TypeMeta
	if err := json.Unmarshal(data, &tm); err != nil {
		return false, fmt.Errorf("not a JSON object: %w", err)
	}
	switch {
	case tm.APIVersion == "" || tm.Kind == "":
		return false, errors.New("no apiVersion or kind")
	case !readVersions[tm.APIVersion]:
		return false, fmt.Errorf("unknown apiVersion %q", tm.APIVersion)
	case tm.Kind != kind:
		return false, fmt.Errorf("kind %q, want %q", tm.Kind, kind)
	}
	strict, err := sigsjson.UnmarshalStrict(data, obj, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return false, err
	}
	if len(strict) > 0 {
		return false, errors.Join(strict...)
	}
	return tm.APIVersion == writeVersion, nil
}
