package provider

import (
	"context"
	"encoding/json"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
)

// InitConfig is what a provider is built from.
type InitConfig struct {
	// NodeName is the virtual node's name.
	NodeName string
	// Config is the node's providerConfig from the configuration file, as
	// JSON (nil when absent). A provider decodes it strictly and names the
	// field in its errors.
	Config json.RawMessage
	// ConfigDir is the folder of the configuration file: relative paths in
	// Config start there.
	ConfigDir string
	// Client reaches the cluster the node belongs to, with the node's
	// identity (for providers that copy ConfigMaps and Secrets or request
	// service account tokens for their pods).
	Client kubernetes.Interface
	// Objects reads the ConfigMaps and Secrets pods reference (a cache may
	// stand behind it).
	Objects ObjectGetter
	// StateDir is a directory of this node's own under the kubelet's root
	// dir, written by this process only: where a provider keeps the records
	// of what it created, so a restarted kubelet adopts exactly that (and
	// not what someone else made to look like it). "" when there is none
	// (the provider then keeps its records in memory).
	StateDir string
}

// ObjectGetter reads ConfigMaps and Secrets of the node's cluster. Errors
// are classified (errdefs.NotFound for a missing object).
type ObjectGetter interface {
	GetConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error)
	GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error)
}

// Factory builds a provider. It must not block on the backend (a provider
// whose backend is unreachable still starts and reports the node NotReady).
type Factory func(ctx context.Context, cfg InitConfig) (Provider, error)
