package envvars

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gokubelet/kubelet/pkg/errdefs"
)

// Objects reads the ConfigMaps and Secrets pods refer to. A missing object
// is an error for which apierrors.IsNotFound or errdefs.IsNotFound holds.
// Implementations must be safe for concurrent use; they may cache. (It is
// the method set of provider.ObjectGetter: one serves as the other.)
type Objects interface {
	GetConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error)
	GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error)
}

// ClientObjects reads straight from the API server, one GET per object
// (the Node authorizer allows a node exactly the objects its pods refer
// to). It is the simple implementation; a watch-based cache can replace it.
// Errors are classified with errdefs.FromAPI (the API status stays
// reachable, so apierrors.IsNotFound holds as well), except Forbidden (see
// objectError).
type ClientObjects struct {
	Client kubernetes.Interface
}

// GetConfigMap implements Objects.
func (c ClientObjects) GetConfigMap(ctx context.Context, ns, name string) (*v1.ConfigMap, error) {
	cm, err := c.Client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	return cm, objectError(err)
}

// GetSecret implements Objects.
func (c ClientObjects) GetSecret(ctx context.Context, ns, name string) (*v1.Secret, error) {
	s, err := c.Client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	return s, objectError(err)
}

// objectError classifies a read of an object a pod refers to. Forbidden
// is retryable: under a node identity the Node authorizer allows the read
// only once its graph has the pod bound to the node, which lags the
// binding, and a pod waits (CreateContainerConfigError) rather than fails
// while it may still be allowed, as upstream's kubelet retries it.
func objectError(err error) error {
	if apierrors.IsForbidden(err) {
		return errdefs.Retryable(err)
	}
	return errdefs.FromAPI(err)
}

func isNotFound(err error) bool { return apierrors.IsNotFound(err) || errdefs.IsNotFound(err) }

// NeedsObjects reports whether container c refers to any ConfigMap or
// Secret, that is whether Fetch has anything to read.
func NeedsObjects(c *v1.Container) bool {
	if len(c.EnvFrom) > 0 {
		return true
	}
	for _, e := range c.Env {
		if e.ValueFrom != nil && (e.ValueFrom.ConfigMapKeyRef != nil || e.ValueFrom.SecretKeyRef != nil) {
			return true
		}
	}
	return false
}

// Fetch reads the ConfigMaps and Secrets the containers of pod refer to,
// each once (one container when a container starts; all of a pod's when
// its whole spec is resolved at once). A missing object is recorded as
// absent (Resolve decides whether that matters); any other failure is an
// error. Without objs (no API server) a reference is an error, as
// upstream.
func Fetch(ctx context.Context, objs Objects, pod *v1.Pod, containers ...*v1.Container) (Sources, error) {
	src := Sources{ConfigMaps: map[string]*v1.ConfigMap{}, Secrets: map[string]*v1.Secret{}}
	cm := func(name string) error {
		if _, done := src.ConfigMaps[name]; done {
			return nil
		}
		if objs == nil {
			return fmt.Errorf("couldn't get configMap %s/%s: this kubelet has no API server connection", pod.Namespace, name)
		}
		o, err := objs.GetConfigMap(ctx, pod.Namespace, name)
		switch {
		case isNotFound(err):
			src.ConfigMaps[name] = nil
		case err != nil:
			return fmt.Errorf("couldn't get configMap %s/%s: %w", pod.Namespace, name, err)
		default:
			src.ConfigMaps[name] = o
		}
		return nil
	}
	secret := func(name string) error {
		if _, done := src.Secrets[name]; done {
			return nil
		}
		if objs == nil {
			return fmt.Errorf("couldn't get secret %s/%s: this kubelet has no API server connection", pod.Namespace, name)
		}
		o, err := objs.GetSecret(ctx, pod.Namespace, name)
		switch {
		case isNotFound(err):
			src.Secrets[name] = nil
		case err != nil:
			return fmt.Errorf("couldn't get secret %s/%s: %w", pod.Namespace, name, err)
		default:
			src.Secrets[name] = o
		}
		return nil
	}
	for _, c := range containers {
		for _, f := range c.EnvFrom {
			var err error
			switch {
			case f.ConfigMapRef != nil:
				err = cm(f.ConfigMapRef.Name)
			case f.SecretRef != nil:
				err = secret(f.SecretRef.Name)
			}
			if err != nil {
				return src, err
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			var err error
			switch {
			case e.ValueFrom.ConfigMapKeyRef != nil:
				err = cm(e.ValueFrom.ConfigMapKeyRef.Name)
			case e.ValueFrom.SecretKeyRef != nil:
				err = secret(e.ValueFrom.SecretKeyRef.Name)
			}
			if err != nil {
				return src, err
			}
		}
	}
	return src, nil
}
