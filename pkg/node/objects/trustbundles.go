package objects

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/pem"
	"fmt"
	"sort"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	certinformers "k8s.io/client-go/informers/certificates/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// TrustBundleGetter serves clusterTrustBundle projections: the trust
// anchors of ClusterTrustBundles (certificates.k8s.io/v1) as one PEM file.
type TrustBundleGetter interface {
	// ByName returns the anchors of the named bundle. optional: a bundle
	// that does not exist gives an empty file instead of an error.
	ByName(ctx context.Context, name string, optional bool) ([]byte, error)
	// BySigner returns the anchors of every bundle of signerName whose
	// labels match sel, merged and without duplicates. A nil selector
	// matches nothing and an empty one everything, as the API documents.
	// optional: matching no bundle gives an empty file instead of an
	// error.
	BySigner(ctx context.Context, signerName string, sel *metav1.LabelSelector, optional bool) ([]byte, error)
}

// maxTrustBundleSelector bounds the length of a projection's label
// selector: a pod's spec decides how much work a read is, so that work is
// bounded (upstream's bound).
const maxTrustBundleSelector = 100 * 1024

// TrustBundles implements TrustBundleGetter with one informer over all
// ClusterTrustBundles. They are cluster-scoped, and every node may read
// them (the Node authorizer's static rules give nodes get, list and watch),
// so one watch serves every pod. It starts on the first read: a node none
// of whose pods projects a trust bundle never pays for it.
type TrustBundles struct {
	client      kubernetes.Interface
	onChange    func(name string)
	syncTimeout time.Duration
	// salt orders the anchors of a file: the same order for as long as
	// the process lives (a refresh rewrites nothing when no bundle
	// changed), a different one after a restart, so nobody comes to
	// depend on an order the API does not promise (upstream shuffles
	// once per process too).
	salt []byte

	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	informer cache.SharedIndexInformer

	errMu   sync.Mutex
	lastErr error
}

var _ TrustBundleGetter = (*TrustBundles)(nil)

// NewTrustBundles returns a TrustBundles reading through client (nil:
// standalone, every read fails with ErrStandalone). onChange, when set, is
// called with a bundle's name after the bundle was created, changed or
// deleted.
func NewTrustBundles(client kubernetes.Interface, onChange func(name string)) *TrustBundles {
	salt := make([]byte, 16)
	_, _ = rand.Read(salt)
	ctx, cancel := context.WithCancel(context.Background())
	return &TrustBundles{client: client, onChange: onChange, syncTimeout: 10 * time.Second, salt: salt, ctx: ctx, cancel: cancel}
}

// Start blocks until ctx ends, then stops the informer if it runs.
func (t *TrustBundles) Start(ctx context.Context) error {
	<-ctx.Done()
	t.cancel()
	return nil
}

// ByName implements TrustBundleGetter.
func (t *TrustBundles) ByName(ctx context.Context, name string, optional bool) ([]byte, error) {
	inf, err := t.synced(ctx)
	if err != nil {
		return nil, err
	}
	obj, ok, err := inf.GetStore().GetByKey(name)
	if err != nil {
		return nil, err
	}
	if !ok {
		if optional {
			return []byte{}, nil
		}
		return nil, apierrors.NewNotFound(certificatesv1.Resource("clustertrustbundles"), name)
	}
	return MergeTrustAnchors([]string{obj.(*certificatesv1.ClusterTrustBundle).Spec.TrustBundle}, t.salt), nil
}

// BySigner implements TrustBundleGetter.
func (t *TrustBundles) BySigner(ctx context.Context, signerName string, sel *metav1.LabelSelector, optional bool) ([]byte, error) {
	selector, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return nil, fmt.Errorf("label selector of ClusterTrustBundles: %w", err)
	}
	if n := len(selector.String()); n > maxTrustBundleSelector {
		return nil, fmt.Errorf("label selector of ClusterTrustBundles is %d bytes long; at most %d are read", n, maxTrustBundleSelector)
	}
	inf, err := t.synced(ctx)
	if err != nil {
		return nil, err
	}
	var pems []string
	for _, obj := range inf.GetStore().List() {
		b := obj.(*certificatesv1.ClusterTrustBundle)
		if b.Spec.SignerName == signerName && selector.Matches(labels.Set(b.Labels)) {
			pems = append(pems, b.Spec.TrustBundle)
		}
	}
	if len(pems) == 0 {
		if optional {
			return []byte{}, nil
		}
		return nil, fmt.Errorf("no ClusterTrustBundle of signer %q matches label selector %q", signerName, selector.String())
	}
	return MergeTrustAnchors(pems, t.salt), nil
}

// synced starts the informer on first use and waits (at most syncTimeout)
// for its first list.
func (t *TrustBundles) synced(ctx context.Context) (cache.SharedIndexInformer, error) {
	if t.client == nil {
		return nil, fmt.Errorf("cannot read ClusterTrustBundles: %w", ErrStandalone)
	}
	t.mu.Lock()
	if t.informer == nil {
		t.informer = t.newInformer()
		go t.informer.RunWithContext(t.ctx)
	}
	inf := t.informer
	t.mu.Unlock()
	if inf.HasSynced() {
		return inf, nil
	}
	ctx, cancel := context.WithTimeout(ctx, t.syncTimeout)
	defer cancel()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.errMu.Lock()
		last := t.lastErr
		t.errMu.Unlock()
		if last != nil {
			return nil, fmt.Errorf("reading ClusterTrustBundles: %w", last)
		}
		return nil, fmt.Errorf("reading ClusterTrustBundles: no answer from the API server within %v", t.syncTimeout)
	}
	return inf, nil
}

func (t *TrustBundles) newInformer() cache.SharedIndexInformer {
	inf := certinformers.NewClusterTrustBundleInformer(t.client, 0, cache.Indexers{})
	_ = inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, _ *cache.Reflector, err error) {
		t.errMu.Lock()
		t.lastErr = err
		t.errMu.Unlock()
		klog.FromContext(ctx).V(2).Info("Watch of ClusterTrustBundles failed; retrying", "err", err)
	})
	if t.onChange == nil {
		return inf
	}
	notify := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if b, ok := obj.(*certificatesv1.ClusterTrustBundle); ok {
			t.onChange(b.Name)
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if !initial {
				notify(obj)
			}
		},
		UpdateFunc: func(old, cur any) {
			if old.(*certificatesv1.ClusterTrustBundle).ResourceVersion != cur.(*certificatesv1.ClusterTrustBundle).ResourceVersion {
				notify(cur)
			}
		},
		DeleteFunc: notify,
	})
	return inf
}

// MergeTrustAnchors turns the PEM bundles into one: each certificate once,
// however many bundles hold it, re-encoded as a CERTIFICATE block, in an
// order that depends only on the certificates and salt. Non-PEM text
// between blocks is dropped, as the API server validated the blocks.
func MergeTrustAnchors(bundles []string, salt []byte) []byte {
	type anchor struct {
		der []byte
		key [sha256.Size]byte
	}
	seen := map[string]bool{}
	var anchors []anchor
	for _, b := range bundles {
		rest := []byte(b)
		for {
			var blk *pem.Block
			blk, rest = pem.Decode(rest)
			if blk == nil {
				break
			}
			if seen[string(blk.Bytes)] {
				continue
			}
			seen[string(blk.Bytes)] = true
			anchors = append(anchors, anchor{der: blk.Bytes, key: sha256.Sum256(append(append([]byte{}, salt...), blk.Bytes...))})
		}
	}
	sort.Slice(anchors, func(i, j int) bool { return bytes.Compare(anchors[i].key[:], anchors[j].key[:]) < 0 })
	var out bytes.Buffer
	for _, a := range anchors {
		_ = pem.Encode(&out, &pem.Block{Type: "CERTIFICATE", Bytes: a.der})
	}
	return out.Bytes()
}
