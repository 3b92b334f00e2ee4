package mirrorpod

import (
	"context"
	"errors"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

// ErrNodeDeleting is returned by CreateMirror when the Node is being
// deleted: a mirror pod owned by it would be garbage collected at once,
// so upstream does not create one either.
var ErrNodeDeleting = errors.New("node is being deleted; not creating a mirror pod")

// Needs decides what to do about the mirror of static: create one when
// there is none; delete the existing one (and then create a new one) when
// it is being deleted or does not match static (other name, no or another
// config.mirror hash). A matching mirror needs nothing. mirror may be nil.
func Needs(static, mirror *v1.Pod) (create, delete bool) {
	if mirror == nil {
		return true, false
	}
	if mirror.DeletionTimestamp != nil || !IsMirrorOf(mirror, static) {
		return true, true
	}
	return false, false
}

// IsMirrorOf reports whether mirror is the mirror of static as it is now:
// same namespace and name, and config.mirror equal to static's
// config.hash.
func IsMirrorOf(mirror, static *v1.Pod) bool {
	if mirror.Namespace != static.Namespace || mirror.Name != static.Name {
		return false
	}
	hash, ok := mirror.Annotations[podspec.ConfigMirrorAnnotation]
	return ok && hash == static.Annotations[podspec.ConfigHashAnnotation]
}

// Build returns the mirror pod of static for node. It is pure; it fails
// when static has no config hash or references objects NodeRestriction
// forbids a node to reference.
func Build(static *v1.Pod, node *v1.Node) (*v1.Pod, error) {
	hash := static.Annotations[podspec.ConfigHashAnnotation]
	if hash == "" {
		return nil, fmt.Errorf("pod %s/%s has no %s annotation; only static pods get mirror pods",
			static.Namespace, static.Name, podspec.ConfigHashAnnotation)
	}
	if node == nil || node.Name == "" || node.UID == "" {
		return nil, errors.New("the Node object (name and uid) is needed for the mirror pod's owner reference")
	}
	if field := forbiddenReference(static); field != "" {
		return nil, fmt.Errorf("static pod %s/%s references %s; NodeRestriction forbids a node to create such a mirror pod",
			static.Namespace, static.Name, field)
	}
	m := &v1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        static.Name,
			Namespace:   static.Namespace,
			Labels:      static.Labels,
			Annotations: map[string]string{},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1",
				Kind:       "Node",
				Name:       node.Name,
				UID:        node.UID,
				Controller: ptr.To(true),
			}},
		},
		Spec: static.Spec,
	}
	m = m.DeepCopy() // labels and spec are shared with static until here
	for k, v := range static.Annotations {
		m.Annotations[k] = v
	}
	m.Annotations[podspec.ConfigMirrorAnnotation] = hash
	m.Spec.NodeName = node.Name
	return m, nil
}

// Manager creates and deletes mirror pods through the API server.
type Manager struct {
	client kubernetes.Interface
}

// New returns a manager using client (the node's own credentials).
func New(client kubernetes.Interface) *Manager {
	return &Manager{client: client}
}

// CreateMirror creates the mirror pod of static. A mirror that already
// exists with the same hash counts as success; one with another hash is
// an error (delete it first, as Needs says). It returns ErrNodeDeleting
// when node is being deleted.
func (m *Manager) CreateMirror(ctx context.Context, static *v1.Pod, node *v1.Node) error {
	if node != nil && node.DeletionTimestamp != nil {
		return ErrNodeDeleting
	}
	mirror, err := Build(static, node)
	if err != nil {
		return err
	}
	logger := klog.FromContext(ctx)
	_, err = m.client.CoreV1().Pods(mirror.Namespace).Create(ctx, mirror, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		existing, getErr := m.client.CoreV1().Pods(mirror.Namespace).Get(ctx, mirror.Name, metav1.GetOptions{})
		if getErr == nil && IsMirrorOf(existing, static) && existing.DeletionTimestamp == nil {
			return nil
		}
		return fmt.Errorf("creating mirror pod %s/%s: a different pod with that name exists: %w",
			mirror.Namespace, mirror.Name, err)
	}
	if err != nil {
		return fmt.Errorf("creating mirror pod %s/%s: %w", mirror.Namespace, mirror.Name, err)
	}
	logger.V(2).Info("Created mirror pod", "pod", klog.KObj(mirror), "hash", mirror.Annotations[podspec.ConfigMirrorAnnotation])
	return nil
}

// DeleteMirror deletes the mirror pod named fullName ("namespace/name")
// at once (grace period 0: a mirror runs nothing), only if its UID is
// *uid when uid is not nil. It reports whether a pod was deleted; a pod
// that is gone or has another UID is not an error.
func (m *Manager) DeleteMirror(ctx context.Context, fullName string, uid *types.UID) (bool, error) {
	ns, name, ok := strings.Cut(fullName, "/")
	if !ok || ns == "" || name == "" {
		return false, fmt.Errorf("mirror pod name %q is not namespace/name", fullName)
	}
	opts := metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}
	if uid != nil {
		opts.Preconditions = &metav1.Preconditions{UID: uid}
	}
	err := m.client.CoreV1().Pods(ns).Delete(ctx, name, opts)
	switch {
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		// Gone already, or replaced by another pod (precondition failed).
		return false, nil
	case err != nil:
		return false, fmt.Errorf("deleting mirror pod %s: %w", fullName, err)
	}
	klog.FromContext(ctx).V(2).Info("Deleted mirror pod", "pod", fullName, "podUID", ptr.Deref(uid, ""))
	return true, nil
}
