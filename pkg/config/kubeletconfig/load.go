package kubeletconfig

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

const (
	// GroupVersion is the only accepted apiVersion of a config file.
	GroupVersion = "kubelet.config.k8s.io/v1beta1"
	// Kind is the only accepted kind of a config file.
	Kind = "KubeletConfiguration"
)

// LoadConfigFile reads, decodes (DecodeConfig) and defaults the
// KubeletConfiguration in path (YAML or JSON). Relative paths inside the
// file are resolved against the file's directory. Every error names the
// file; so does the warning returned when the file decoded only leniently.
func LoadConfigFile(path string) (*kubeletv1beta1.KubeletConfiguration, []string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("config file %s: %w", path, err)
	}
	cfg, problems, err := DecodeConfig(data)
	if err != nil {
		return nil, nil, fmt.Errorf("config file %s: %w", path, err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, nil, fmt.Errorf("config file %s: %w", path, err)
	}
	resolveRelativePaths(cfg, filepath.Dir(abs))
	SetDefaults(cfg)
	var warnings []string
	if len(problems) > 0 {
		warnings = append(warnings, LenientDecodingWarning("config file "+path, problems))
	}
	return cfg, warnings, nil
}

// LenientDecodingWarning is the warning for a file that strict decoding
// refused and lenient decoding accepted: it names the source and every
// strict decoding problem (each naming its field).
func LenientDecodingWarning(source string, problems []string) string {
	return fmt.Sprintf("%s: strict decoding failed (%s); decoded leniently, as the upstream kubelet does for v1beta1: unknown fields are ignored and of a duplicated field the last value is used",
		source, strings.Join(problems, ", "))
}

// DecodeConfig decodes a KubeletConfiguration from YAML or JSON without
// applying defaults, by the rules of the upstream kubelet v1.37
// (pkg/kubelet/kubeletconfig/util/codec): apiVersion and kind must be
// kubelet.config.k8s.io/v1beta1 KubeletConfiguration, and decoding is
// strict first. When the only problems are strict ones (an unknown field,
// a field spelled with the wrong case, a duplicated field), the data is
// decoded again leniently (case-sensitive, unknown fields ignored, the last
// of duplicated fields used) and those problems are returned, each naming
// its field, for the caller to warn about. Anything else (unparseable
// data, a value of the wrong type, another apiVersion or kind, an empty
// document) is an error.
func DecodeConfig(data []byte) (*kubeletv1beta1.KubeletConfiguration, []string, error) {
	if len(strings.TrimSpace(string(data))) == 0 {
		return nil, nil, errors.New("the file is empty")
	}
	// JSON is valid YAML, so both formats go through the YAML converter.
	// Duplicated keys are kept apart from parse errors, as upstream's
	// serializer does: they are strict errors only.
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot parse: %w", err)
	}
	if strings.TrimSpace(string(js)) == "null" {
		return nil, nil, errors.New("the file is empty")
	}
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(js, &meta); err != nil {
		return nil, nil, fmt.Errorf("cannot parse: %w", err)
	}
	if meta.APIVersion != GroupVersion || meta.Kind != Kind {
		return nil, nil, fmt.Errorf("apiVersion %q, kind %q: want apiVersion %q and kind %q",
			meta.APIVersion, meta.Kind, GroupVersion, Kind)
	}
	var problems []string
	if _, err := yaml.YAMLToJSONStrict(data); err != nil {
		problems = append(problems, duplicateKeyProblems(err)...)
	}
	cfg := &kubeletv1beta1.KubeletConfiguration{}
	strictErrs, err := sigsjson.UnmarshalStrict(js, cfg, sigsjson.DisallowUnknownFields, sigsjson.DisallowDuplicateFields)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot decode: %w", err)
	}
	for _, e := range strictErrs {
		problems = append(problems, e.Error())
	}
	if len(problems) == 0 {
		return cfg, nil, nil
	}
	cfg = &kubeletv1beta1.KubeletConfiguration{}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(js, cfg); err != nil {
		return nil, nil, fmt.Errorf("cannot decode: %w", err)
	}
	return cfg, problems, nil
}

// duplicateKeyRE matches one duplicated key in the YAML parser's error.
var duplicateKeyRE = regexp.MustCompile(`line (\d+): key "((?:[^"\\]|\\.)*)" already set in map`)

// duplicateKeyProblems turns the YAML converter's strict error into one
// problem per duplicated key, named like the JSON decoder names them.
func duplicateKeyProblems(err error) []string {
	var out []string
	for _, m := range duplicateKeyRE.FindAllStringSubmatch(err.Error(), -1) {
		out = append(out, fmt.Sprintf("duplicate field %q (line %s)", m[2], m[1]))
	}
	if len(out) == 0 {
		out = append(out, err.Error())
	}
	return out
}

// resolveRelativePaths makes the path fields of a file's configuration
// absolute, relative to the file's directory, as upstream does.
func resolveRelativePaths(cfg *kubeletv1beta1.KubeletConfiguration, dir string) {
	refs := []*string{
		&cfg.StaticPodPath,
		&cfg.Authentication.X509.ClientCAFile,
		&cfg.TLSCertFile,
		&cfg.TLSPrivateKeyFile,
		&cfg.VolumePluginDir,
		&cfg.PodLogsDir,
		cfg.ResolverConfig,
	}
	for _, p := range refs {
		if p == nil || *p == "" || filepath.IsAbs(*p) {
			continue
		}
		*p = filepath.Join(dir, *p)
	}
}
