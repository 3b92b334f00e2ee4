package images

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/distribution/reference"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/clock"

	"github.com/gokubelet/kubelet/pkg/runtime/backoff"
	"github.com/gokubelet/kubelet/pkg/runtime/credentials"
	"github.com/gokubelet/kubelet/pkg/runtime/images/pullrecords"
	"github.com/gokubelet/kubelet/pkg/runtime/images/pullverify"
)

// Reasons a container waits with when its image is not ready. They are the
// upstream kubelet's words, which users and tools match on.
const (
	ReasonErrImagePull      = "ErrImagePull"
	ReasonImagePullBackOff  = "ImagePullBackOff"
	ReasonErrImageNeverPull = "ErrImageNeverPull"
	ReasonInvalidImageName  = "InvalidImageName"
	ReasonImageInspectError = "ImageInspectError"
)

// Event reasons.
const (
	EventPulling       = "Pulling"
	EventPulled        = "Pulled"
	EventFailed        = "Failed"
	EventBackOff       = "BackOff"
	EventInspectFailed = "InspectFailed"
)

// Error is a failed EnsureImage: Reason is one of the Reason* constants,
// Message says what happened in words for the pod status.
type Error struct {
	Reason  string
	Message string
	Err     error
	// RetryAfter is how long until the pull back-off lets the next attempt
	// through (ErrImagePull, ImagePullBackOff); 0 otherwise.
	RetryAfter time.Duration
}

func (e *Error) Error() string { return e.Message }
func (e *Error) Unwrap() error { return e.Err }

// AsError returns the *Error inside err, if any.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// Credentials returns the registry logins to try for image, in order,
// each with its source (a pull secret, or the node's own). Anonymous pull
// is tried when it returns none. It is called at most once per
// EnsureImage, and only when a pull happens or a present image's pull
// records need the pod's credentials.
type Credentials func(ctx context.Context, pod *v1.Pod, image string) []credentials.Login

// Options configure a Puller.
type Options struct {
	Service  cri.ImageManagerService
	Recorder record.EventRecorder
	Clock    clock.Clock
	// Serialize pulls one image at a time (the upstream default).
	Serialize bool
	// MaxParallel bounds parallel pulls when not serialized; 0 = no bound.
	MaxParallel int
	// Credentials may be nil.
	Credentials Credentials
	// Records, when set, keeps what pulled each image and decides whether
	// a pod may use an image already present without pulling it
	// (KubeletEnsureSecretPulledImages; packages pullrecords and
	// pullverify). Nil: any pod uses a present image, as before the
	// feature.
	Records *pullrecords.Manager
}

// Puller ensures images. Safe for concurrent use.
type Puller struct {
	svc      cri.ImageManagerService
	recorder record.EventRecorder
	clock    clock.Clock
	backoff  *flowcontrol.Backoff
	slots    chan struct{} // nil = unbounded
	creds    Credentials
	records  *pullrecords.Manager
}

// NewPuller returns a Puller.
func NewPuller(o Options) *Puller {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Recorder == nil {
		o.Recorder = &record.FakeRecorder{}
	}
	p := &Puller{svc: o.Service, recorder: o.Recorder, clock: o.Clock, creds: o.Credentials, records: o.Records,
		backoff: backoff.New(backoff.ImagePull, o.Clock)}
	n := o.MaxParallel
	if o.Serialize {
		n = 1
	}
	if n > 0 {
		p.slots = make(chan struct{}, n)
	}
	return p
}

// ApplyDefaultTag checks that image is a valid reference and appends
// ":latest" when it has neither tag nor digest.
func ApplyDefaultTag(image string) (string, error) {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return "", fmt.Errorf("couldn't parse image name %q: %w", image, err)
	}
	_, isTagged := named.(reference.Tagged)
	_, isDigested := named.(reference.Digested)
	if !isTagged && !isDigested {
		return image + ":latest", nil
	}
	return image, nil
}

// PullPolicy returns the container's pull policy, defaulting an empty one as
// the API server does: Always for ":latest" or untagged images, else
// IfNotPresent.
func PullPolicy(c *v1.Container) v1.PullPolicy {
	return EffectivePullPolicy(c.ImagePullPolicy, c.Image)
}

// EffectivePullPolicy is policy, or for an empty one the API server's
// default for image: Always for ":latest" or untagged images, else
// IfNotPresent. Containers and image volumes default alike.
func EffectivePullPolicy(policy v1.PullPolicy, image string) v1.PullPolicy {
	if policy != "" {
		return policy
	}
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return v1.PullIfNotPresent
	}
	if t, ok := named.(reference.Tagged); ok && t.Tag() != "latest" {
		return v1.PullIfNotPresent
	}
	if _, ok := named.(reference.Digested); ok {
		return v1.PullIfNotPresent
	}
	return v1.PullAlways
}

// ContainerRef is the event target for a container of pod: the pod with a
// field path naming the container.
func ContainerRef(pod *v1.Pod, c *v1.Container) *v1.ObjectReference {
	ref := &v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID, ResourceVersion: pod.ResourceVersion}
	if c == nil {
		return ref
	}
	field := "spec.containers"
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == c.Name {
			field = "spec.initContainers"
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == c.Name {
			field = "spec.ephemeralContainers"
		}
	}
	ref.FieldPath = fmt.Sprintf("%s{%s}", field, c.Name)
	return ref
}

// EnsureImage makes sure c's image is present per its pull policy and
// returns the image reference (ID) to create the container with. Failures
// are *Error values carrying the upstream reason.
func (p *Puller) EnsureImage(ctx context.Context, pod *v1.Pod, c *v1.Container, sandbox *runtimeapi.PodSandboxConfig) (string, error) {
	return p.ensure(ctx, pod, ContainerRef(pod, c), c.Image, PullPolicy(c), sandbox)
}

// EnsureVolumeImage does the same for an image volume's reference and
// pullPolicy ("" for the default, as a container's): the same pull
// records, credentials, back-off and events, recorded on the pod, as
// upstream does for image volumes.
func (p *Puller) EnsureVolumeImage(ctx context.Context, pod *v1.Pod, image string, policy v1.PullPolicy, sandbox *runtimeapi.PodSandboxConfig) (string, error) {
	return p.ensure(ctx, pod, ContainerRef(pod, nil), image, EffectivePullPolicy(policy, image), sandbox)
}

// ensure makes userImage (as the pod spec writes it) present per policy,
// with events on ref, and returns the image reference (ID).
func (p *Puller) ensure(ctx context.Context, pod *v1.Pod, ref *v1.ObjectReference, userImage string, policy v1.PullPolicy, sandbox *runtimeapi.PodSandboxConfig) (string, error) {
	logger := klog.FromContext(ctx)
	image, err := ApplyDefaultTag(userImage)
	if err != nil {
		msg := fmt.Sprintf("Failed to apply default image tag %q: %v", userImage, err)
		p.recorder.Event(ref, v1.EventTypeWarning, EventInspectFailed, msg)
		return "", &Error{Reason: ReasonInvalidImageName, Message: msg, Err: err}
	}
	spec := &runtimeapi.ImageSpec{Image: image}
	logins := sync.OnceValue(func() []credentials.Login {
		if p.creds == nil {
			return nil
		}
		return p.creds(ctx, pod, image)
	})

	present := ""
	if policy != v1.PullAlways {
		st, err := p.svc.ImageStatus(ctx, spec, false)
		if err != nil {
			msg := fmt.Sprintf("Failed to inspect image %q: %v", userImage, err)
			p.recorder.Event(ref, v1.EventTypeWarning, EventFailed, msg)
			return "", &Error{Reason: ReasonImageInspectError, Message: msg, Err: err}
		}
		if st.GetImage() != nil {
			present = st.GetImage().GetId()
		}
		if present != "" {
			if p.records == nil {
				p.recorder.Eventf(ref, v1.EventTypeNormal, EventPulled, "Container image %q already present on machine", userImage)
				return present, nil
			}
			if !p.records.MustPull(ctx, userImage, present, func() pullverify.PodCredentials { return podCredentials(logins()) }) {
				p.recorder.Eventf(ref, v1.EventTypeNormal, EventPulled, "Container image %q already present on machine and can be accessed by the pod", userImage)
				return present, nil
			}
			// The pod must show credentials that pulled the image: it
			// pulls with its own (IfNotPresent). With Never it fails as
			// if the image were absent, which does not reveal that
			// another pod's credentials brought it (upstream's rule).
			logger.V(2).Info("Image present, but no recorded pull of it used credentials the pod has; the pod must pull it itself", "pod", klog.KObj(pod), "image", userImage, "pullPolicy", policy)
		}
		if policy == v1.PullNever {
			msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", userImage)
			p.recorder.Event(ref, v1.EventTypeWarning, ReasonErrImageNeverPull, msg)
			return "", &Error{Reason: ReasonErrImageNeverPull, Message: msg}
		}
	}

	key := string(pod.UID) + "_" + image
	if p.backoff.IsInBackOffSinceUpdate(key, p.clock.Now()) {
		msg := fmt.Sprintf("Back-off pulling image %q", userImage)
		p.recorder.Event(ref, v1.EventTypeNormal, EventBackOff, msg)
		p.recorder.Eventf(ref, v1.EventTypeWarning, EventFailed, "Error: %s", ReasonImagePullBackOff)
		// flowcontrol does not tell how much of the delay is left; the
		// whole delay is an upper bound (the failed pull itself returned
		// the exact one).
		return "", &Error{Reason: ReasonImagePullBackOff, Message: msg, RetryAfter: p.backoff.Get(key)}
	}

	if p.records != nil {
		if err := p.records.RecordPullIntent(ctx, userImage); err != nil {
			msg := fmt.Sprintf("Failed to record image pull intent for container image %q: %v", userImage, err)
			p.recorder.Event(ref, v1.EventTypeWarning, EventFailed, msg)
			return "", &Error{Reason: ReasonErrImagePull, Message: msg, Err: err}
		}
	}
	p.recorder.Eventf(ref, v1.EventTypeNormal, EventPulling, "Pulling image %q", userImage)
	waitStart := p.clock.Now()
	if p.slots != nil {
		select {
		case p.slots <- struct{}{}:
		case <-ctx.Done():
			if p.records != nil {
				p.records.RecordPullFailed(ctx, userImage)
			}
			return "", &Error{Reason: ReasonErrImagePull, Message: ctx.Err().Error(), Err: ctx.Err()}
		}
	}
	pullStart := p.clock.Now()
	imageRef, used, err := p.pull(ctx, spec, sandbox, logins())
	if p.slots != nil {
		<-p.slots
	}
	if p.records != nil {
		if err != nil {
			p.records.RecordPullFailed(ctx, userImage)
		} else {
			var secret *kubeletv1beta1.ImagePullSecret
			if used != nil {
				secret = used.Secret
			}
			p.records.RecordPulled(ctx, userImage, imageRef, pullverify.PulledWith(secret))
		}
	}
	done := p.clock.Now()
	if err != nil {
		p.backoff.Next(key, done)
		delay := p.backoff.Get(key)
		logger.V(2).Info("Image pull failed", "pod", klog.KObj(pod), "image", userImage, "err", err)
		msg := fmt.Sprintf("Failed to pull image %q: %v", userImage, err)
		p.recorder.Event(ref, v1.EventTypeWarning, EventFailed, msg)
		p.recorder.Eventf(ref, v1.EventTypeWarning, EventFailed, "Error: %s", ReasonErrImagePull)
		return "", &Error{Reason: ReasonErrImagePull, Message: msg, Err: err, RetryAfter: delay}
	}
	p.backoff.Reset(key)
	p.backoff.GC()
	p.recorder.Eventf(ref, v1.EventTypeNormal, EventPulled, "Successfully pulled image %q in %v (%v including waiting)",
		userImage, done.Sub(pullStart).Round(time.Millisecond), done.Sub(waitStart).Round(time.Millisecond))
	return imageRef, nil
}

// pull tries each login in turn, or pulls anonymously when there is none,
// and returns the image ref and the login that succeeded (nil when
// anonymous).
func (p *Puller) pull(ctx context.Context, spec *runtimeapi.ImageSpec, sandbox *runtimeapi.PodSandboxConfig, logins []credentials.Login) (string, *credentials.Login, error) {
	if len(logins) == 0 {
		ref, err := p.svc.PullImage(ctx, spec, nil, sandbox)
		return ref, nil, err
	}
	var errs []string
	for i := range logins {
		ref, err := p.svc.PullImage(ctx, spec, logins[i].Auth, sandbox)
		if err == nil {
			return ref, &logins[i], nil
		}
		errs = append(errs, err.Error())
	}
	return "", nil, errors.New(strings.Join(errs, "; "))
}

// podCredentials are the pod's pull secrets' logins for the image, as the
// pull records compare them (the node's own logins prove nothing about
// the pod).
func podCredentials(logins []credentials.Login) pullverify.PodCredentials {
	var out pullverify.PodCredentials
	for _, l := range logins {
		if l.Secret != nil {
			out.Secrets = append(out.Secrets, *l.Secret)
		}
	}
	return out
}
