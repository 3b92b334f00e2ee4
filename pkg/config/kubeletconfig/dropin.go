package kubeletconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// DropInExtension is the extension of the files --config-dir applies.
const DropInExtension = ".conf"

// MergeDropIns applies the drop-in files of dir onto cfg (the defaulted
// --config file, or the defaults) as the upstream kubelet v1.37 does
// (cmd/kubelet/app/server.go, mergeKubeletConfigurations):
//
//   - the files are those ending in ".conf" anywhere under dir
//     (subdirectories included), taken in the lexical order of their paths
//     (filepath.WalkDir); other files are ignored;
//   - each is a KubeletConfiguration (apiVersion
//     kubelet.config.k8s.io/v1beta1, kind KubeletConfiguration, YAML or
//     JSON) applied as a JSON merge patch (RFC 7386) onto the JSON of the
//     configuration so far: a field it sets replaces the value, lists are
//     replaced whole, maps (evictionHard, featureGates, kubeReserved...)
//     are merged key by key, and null removes a key;
//   - the result is defaulted again. Flags given on the command line are
//     applied afterwards (Options.Settings) and so win over drop-ins.
//
// Relative paths in a drop-in are not resolved against its directory
// (upstream leaves them relative to the kubelet's working directory).
// A duplicated field in a drop-in is an error, as upstream. Upstream
// silently ignores fields it does not know in a drop-in; this kubelet
// accepts them too but returns a warning naming each. It returns the files
// applied, in order.
func MergeDropIns(cfg *kubeletv1beta1.KubeletConfiguration, dir string) (*kubeletv1beta1.KubeletConfiguration, []string, []string, error) {
	base, err := json.Marshal(cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	var applied, warnings []string
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || filepath.Ext(d.Name()) != DropInExtension {
			return nil
		}
		patch, warns, err := loadDropIn(path)
		if err != nil {
			return fmt.Errorf("drop-in config file %s: %w", path, err)
		}
		merged, err := jsonpatch.MergePatch(base, patch)
		if err != nil {
			return fmt.Errorf("drop-in config file %s: merging: %w", path, err)
		}
		base = merged
		applied = append(applied, path)
		warnings = append(warnings, warns...)
		return nil
	})
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && !strings.Contains(err.Error(), "drop-in config file") {
			return nil, nil, nil, fmt.Errorf("--config-dir %s: %w", dir, err)
		}
		return nil, nil, nil, err
	}
	out := &kubeletv1beta1.KubeletConfiguration{}
	if err := json.Unmarshal(base, out); err != nil {
		return nil, nil, nil, fmt.Errorf("--config-dir %s: the merged configuration does not decode: %w", dir, err)
	}
	SetDefaults(out)
	return out, applied, warnings, nil
}

// loadDropIn reads one drop-in as JSON, checking its apiVersion and kind
// and reporting fields the schema does not have.
func loadDropIn(path string) ([]byte, []string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		return nil, nil, errors.New("the file is empty")
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot parse: %w", err)
	}
	// Upstream decodes a drop-in strictly into an unstructured object:
	// a duplicated field is an error there (no lenient fallback), an
	// unknown one is not.
	if _, err := yaml.YAMLToJSONStrict(data); err != nil {
		return nil, nil, fmt.Errorf("strict decoding failed: %s (the upstream kubelet refuses a drop-in with a duplicated field too)", strings.Join(duplicateKeyProblems(err), ", "))
	}
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := json.Unmarshal(js, &meta); err != nil {
		return nil, nil, fmt.Errorf("cannot parse: %w", err)
	}
	if meta.APIVersion == "" || meta.Kind == "" {
		return nil, nil, errors.New("no apiVersion/kind")
	}
	if meta.APIVersion != GroupVersion || meta.Kind != Kind {
		return nil, nil, fmt.Errorf("apiVersion %q, kind %q: want apiVersion %q and kind %q", meta.APIVersion, meta.Kind, GroupVersion, Kind)
	}
	var probe kubeletv1beta1.KubeletConfiguration
	strictErrs, err := sigsjson.UnmarshalStrict(js, &probe, sigsjson.DisallowUnknownFields)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot decode: %w", err)
	}
	var warnings []string
	for _, e := range strictErrs {
		warnings = append(warnings, fmt.Sprintf("drop-in config file %s: %v; it is ignored (as the upstream kubelet ignores it)", path, e))
	}
	return js, warnings, nil
}
