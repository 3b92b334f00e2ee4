package kubernetes

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Config is the kubernetes provider's providerConfig.
//
//	providerConfig:
//	  kubeconfig: target.kubeconfig   # the target cluster (required; relative to the config file)
//	  namespacePrefix: "vk-"          # target namespace = prefix + origin namespace (default "")
//	  namespaces: {team-a: burst-a}   # explicit mapping, before the prefix
//	  createNamespaces: true          # create missing target namespaces (default true)
//	  kubeAPIQPS: 100                 # the target client (default 100)
//	  kubeAPIBurst: 200               # (default 200)
type Config struct {
	Kubeconfig       string            `json:"kubeconfig"`
	NamespacePrefix  string            `json:"namespacePrefix,omitempty"`
	Namespaces       map[string]string `json:"namespaces,omitempty"`
	CreateNamespaces *bool             `json:"createNamespaces,omitempty"`
	KubeAPIQPS       float32           `json:"kubeAPIQPS,omitempty"`
	KubeAPIBurst     int               `json:"kubeAPIBurst,omitempty"`
}

// ParseConfig decodes and checks a providerConfig; relative paths start
// at dir.
func ParseConfig(raw []byte, dir string) (Config, error) {
	var c Config
	if len(bytes.TrimSpace(raw)) == 0 {
		return c, fmt.Errorf("kubernetes providerConfig: kubeconfig (of the target cluster) is required")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("kubernetes providerConfig: %w", err)
	}
	if c.Kubeconfig == "" {
		return c, fmt.Errorf("kubernetes providerConfig: kubeconfig (of the target cluster) is required")
	}
	if !filepath.IsAbs(c.Kubeconfig) && dir != "" {
		c.Kubeconfig = filepath.Join(dir, c.Kubeconfig)
	}
	if c.NamespacePrefix != "" {
		if errs := validation.IsDNS1123Label(c.NamespacePrefix + "x"); len(errs) > 0 {
			return c, fmt.Errorf("kubernetes providerConfig: namespacePrefix %q: %v", c.NamespacePrefix, errs)
		}
	}
	for from, to := range c.Namespaces {
		if errs := validation.IsDNS1123Label(to); len(errs) > 0 {
			return c, fmt.Errorf("kubernetes providerConfig: namespaces[%s]: %q: %v", from, to, errs)
		}
	}
	if c.KubeAPIQPS < 0 || c.KubeAPIBurst < 0 {
		return c, fmt.Errorf("kubernetes providerConfig: kubeAPIQPS and kubeAPIBurst must not be negative")
	}
	if c.KubeAPIQPS == 0 {
		c.KubeAPIQPS = 100
	}
	if c.KubeAPIBurst == 0 {
		c.KubeAPIBurst = 200
	}
	return c, nil
}

// targetNamespace maps an origin namespace.
func (c *Config) targetNamespace(origin string) (string, error) {
	ns, ok := c.Namespaces[origin]
	if !ok {
		ns = c.NamespacePrefix + origin
	}
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return "", fmt.Errorf("target namespace %q for namespace %q: %v", ns, origin, errs)
	}
	return ns, nil
}

func (c *Config) createNamespaces() bool { return c.CreateNamespaces == nil || *c.CreateNamespaces }
