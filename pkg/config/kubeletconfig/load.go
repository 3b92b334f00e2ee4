package kubeletconfig

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
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

// LoadConfigFile reads, strictly decodes and defaults the KubeletConfiguration
// in path (YAML or JSON). Relative paths inside the file are resolved
// against the file's directory. Every error names the file.
func LoadConfigFile(path string) (*kubeletv1beta1.KubeletConfiguration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	cfg, err := DecodeConfig(data)
	if err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	resolveRelativePaths(cfg, filepath.Dir(abs))
	SetDefaults(cfg)
	return cfg, nil
}

// DecodeConfig strictly decodes a KubeletConfiguration from YAML or JSON
// without applying defaults. apiVersion and kind must be
// kubelet.config.k8s.io/v1beta1 KubeletConfiguration; unknown fields,
// duplicated fields and fields spelled with the wrong case are errors that
// list every offending field.
func DecodeConfig(data []byte) (*kubeletv1beta1.KubeletConfiguration, error) {
	if len(strings.TrimSpace(string(data))) == 0 {
		return nil, errors.New("the file is empty")
	}
	// YAMLToJSONStrict rejects duplicate keys; JSON is valid YAML, so both
	// formats go through it.
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("cannot parse: %w", err)
	}
	if strings.TrimSpace(string(js)) == "null" {
		return nil, errors.New("the file is empty")
	}
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(js, &meta); err != nil {
		return nil, fmt.Errorf("cannot parse: %w", err)
	}
	if meta.APIVersion != GroupVersion || meta.Kind != Kind {
		return nil, fmt.Errorf("apiVersion %q, kind %q: want apiVersion %q and kind %q",
			meta.APIVersion, meta.Kind, GroupVersion, Kind)
	}
	cfg := &kubeletv1beta1.KubeletConfiguration{}
	strictErrs, err := sigsjson.UnmarshalStrict(js, cfg, sigsjson.DisallowUnknownFields, sigsjson.DisallowDuplicateFields)
	if err != nil {
		return nil, fmt.Errorf("cannot decode: %w", err)
	}
	if len(strictErrs) > 0 {
		msgs := make([]string, 0, len(strictErrs))
		for _, e := range strictErrs {
			msgs = append(msgs, e.Error())
		}
		return nil, fmt.Errorf("strict decoding failed: %s", strings.Join(msgs, "; "))
	}
	return cfg, nil
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
