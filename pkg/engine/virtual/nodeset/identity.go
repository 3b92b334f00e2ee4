package nodeset

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/gokubelet/kubelet/pkg/config/virtualnodes"
	"github.com/gokubelet/kubelet/pkg/node"
	"github.com/gokubelet/kubelet/pkg/node/certs"
	"github.com/gokubelet/kubelet/pkg/runnable"
)

// nodeIdentity is a virtual node's own identity system:node:<name>
// (identity: bootstrap): a client certificate requested by a CSR to the
// kube-apiserver-client-kubelet signer with the file's identity as the
// bootstrap credentials, and renewed by the node itself before it
// expires — the real node's TLS bootstrap and rotation (pkg/node/certs),
// with the node's files under <root-dir>/virtual-nodes/nodes/<name>/
// identity. With it the API server's Node authorizer and NodeRestriction
// confine the node to its own Node and Lease, the pods bound to it and the
// ConfigMaps, Secrets and service account tokens those pods use.
//
// It is ready once a certificate is there; it fails (and the node is
// restarted) when none is valid for five minutes while the API server
// answers.
type nodeIdentity struct {
	cert    *certs.Client
	clients *node.Clients
	ready   runnable.ReadyOnce
}

// newNodeIdentity prepares def's identity (it does not wait for the
// certificate).
func (v *Set) newNodeIdentity(ctx context.Context, def virtualnodes.Node) (*nodeIdentity, error) {
	if v.stateDir() == "" {
		return nil, errors.New("identity: bootstrap needs --root-dir (the node's certificate lives there)")
	}
	dir := filepath.Join(v.stateDir(), "nodes", def.Name, "identity")
	c, err := certs.NewClient(ctx, certs.ClientOptions{
		KubeconfigPath:          filepath.Join(dir, "kubeconfig"),
		BootstrapKubeconfigPath: v.fileKubeconfig(),
		CertDir:                 filepath.Join(dir, "pki"),
		NodeName:                def.Name,
		Rotate:                  true,
	})
	if err != nil {
		return nil, fmt.Errorf("virtual node %s identity: %w", def.Name, err)
	}
	clients, err := node.NewClients(node.ClientConfig{
		REST:        c.Config,
		UserAgent:   "kubelet/" + v.version + " (virtual node " + def.Name + ")",
		ContentType: v.kc.Config.ContentType,
		QPS:         v.cfg.QPS(),
		Burst:       v.cfg.Burst(),
		EventQPS:    float32(ptr.Deref(v.kc.Config.EventRecordQPS, 0)),
		EventBurst:  int(v.kc.Config.EventBurst),
	})
	if err != nil {
		return nil, fmt.Errorf("virtual node %s identity: %w", def.Name, err)
	}
	return &nodeIdentity{cert: c, clients: clients}, nil
}

func (n *nodeIdentity) Ready() <-chan struct{} { return n.ready.Ready() }

// Start runs the certificate's bootstrap and rotation.
func (n *nodeIdentity) Start(ctx context.Context) error {
	go func() {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		waited := time.Now()
		for {
			if n.cert.Manager().Current() != nil {
				klog.FromContext(ctx).Info("Virtual node has its own client certificate", "waited", time.Since(waited).Round(time.Millisecond))
				n.ready.MarkReady()
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return n.cert.Run(ctx)
}

// fileKubeconfig is the file's identity: its kubeconfig, else --kubeconfig.
func (v *Set) fileKubeconfig() string {
	if v.cfg.Kubeconfig != "" {
		return v.cfg.Kubeconfig
	}
	return v.defaultKubeconfig
}
