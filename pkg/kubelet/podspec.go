package kubelet

// The assembly of the rest of the pod spec (environment, DNS and hosts,
// security contexts, hooks, ephemeral containers, pull credentials,
// RuntimeClass): what the runtime needs from the API server comes through
// small interfaces (envvars.Objects, a Service lister, a RuntimeClass
// lookup), built here from the node core.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	coreinformers "k8s.io/client-go/informers/core/v1"
	nodeinformers "k8s.io/client-go/informers/node/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	nodelisters "k8s.io/client-go/listers/node/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/gokubelet/kubelet/pkg/engine/cri"
	"github.com/gokubelet/kubelet/pkg/node"
	"github.com/gokubelet/kubelet/pkg/pod/admission"
	"github.com/gokubelet/kubelet/pkg/pod/envvars"
	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/pod/securitycontext"
	"github.com/gokubelet/kubelet/pkg/runnable"
	"github.com/gokubelet/kubelet/pkg/runtime/credentials"
	"github.com/gokubelet/kubelet/pkg/runtime/images"
	"github.com/gokubelet/kubelet/pkg/runtime/kuberuntime"
)

// podSpecParts are the assembled pieces of the pod spec features.
type podSpecParts struct {
	// Deps go to kuberuntime.Options.PodSpec; Credentials to
	// kuberuntime.Options.PullCredentials.
	Deps        kuberuntime.PodSpecDeps
	Credentials images.Credentials
	// Security feeds the engine's admission (sysctls, AppArmor).
	Security cri.SecurityAdmission
	// services is the Service informer of service link variables (joined
	// only): a runnable.
	services runnable.Runnable
}

// newPodSpecParts builds the pod spec parts. Joined (clients != nil), env
// and pull secrets read objects through the core (per-object watches of
// what the node's pods reference), service links come from a Service
// informer, RuntimeClasses from an informer started on the first pod that
// names one (stopped with ctx). An invalid allowedUnsafeSysctls is a
// start-up error.
func newPodSpecParts(ctx context.Context, cfg *kubeletv1beta1.KubeletConfiguration, rootDir string, hostIPs []string,
	core *node.Core, clients *node.Clients) (*podSpecParts, error) {
	allow, err := admission.NewSysctlAllowlist(cfg.AllowedUnsafeSysctls)
	if err != nil {
		return nil, fmt.Errorf("allowedUnsafeSysctls: %w", err)
	}
	p := &podSpecParts{Security: cri.SecurityAdmission{Sysctls: allow}}
	if ok, why := securitycontext.AppArmorEnabled(); !ok {
		p.Security.AppArmorError = why
		klog.FromContext(ctx).V(2).Info("AppArmor is not available; pods asking for an AppArmor profile are rejected", "reason", why)
	}
	p.Deps = kuberuntime.PodSpecDeps{
		HostIPs:         hostIPs,
		SeccompDefault:  cfg.SeccompDefault != nil && *cfg.SeccompDefault,
		NodeHostsFile:   "/etc/hosts",
		NodeAllocatable: func() v1.ResourceList { return core.Node().Status.Allocatable },
	}
	var secrets credentials.SecretGetter
	if clients != nil {
		p.Deps.Objects = core.Objects()
		secrets = core.Objects()
		se := newServiceEnv(clients.Kube)
		p.services = se
		p.Deps.ServiceEnv = se.env
		p.Deps.RuntimeHandler = (&runtimeClasses{client: clients.Kube, stop: ctx.Done()}).handler
	}
	p.Credentials = credentials.ForPull(secrets, credentials.NewNodeKeyring(rootDir), core.Recorder())
	return p, nil
}

// serviceEnv gives pods their service link variables from a Service
// informer. Until its first list completes, API pods wait
// (CreateContainerConfigError), as upstream: KUBERNETES_SERVICE_HOST must
// not be missing; static pods do not wait.
type serviceEnv struct {
	informer cache.SharedIndexInformer
	lister   corelisters.ServiceLister
	synced   cache.InformerSynced
}

// newServiceEnv builds the Service informer from its own group's package,
// not the shared informer factory, which links every API group's informers
// and listers into the binary.
func newServiceEnv(kube kubernetes.Interface) *serviceEnv {
	inf := coreinformers.NewServiceInformer(kube, metav1.NamespaceAll, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	return &serviceEnv{informer: inf, lister: corelisters.NewServiceLister(inf.GetIndexer()), synced: inf.HasSynced}
}

// Start runs the informer until ctx ends.
func (s *serviceEnv) Start(ctx context.Context) error {
	s.informer.RunWithContext(ctx)
	return nil
}

func (s *serviceEnv) env(pod *v1.Pod) ([]v1.EnvVar, error) {
	if !podspec.IsStatic(pod) && !s.synced() {
		return nil, errors.New("services have not yet been read at least once, cannot construct envvars")
	}
	list, err := s.lister.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("failed to list services when setting up env vars: %w", err)
	}
	links := pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks
	return envvars.ServiceEnv(list, pod.Namespace, links), nil
}

// runtimeClasses looks RuntimeClasses up through an informer started on
// first use, so pods without a runtimeClassName never cost an API call.
type runtimeClasses struct {
	client kubernetes.Interface
	stop   <-chan struct{}

	once   sync.Once
	lister nodelisters.RuntimeClassLister
	synced cache.InformerSynced
}

// runtimeClassSyncWait bounds how long a pod waits for the first list of
// RuntimeClasses; after it the pod fails this round and is retried.
const runtimeClassSyncWait = 30 * time.Second

func (r *runtimeClasses) handler(ctx context.Context, name string) (string, error) {
	r.once.Do(func() {
		inf := nodeinformers.NewRuntimeClassInformer(r.client, 0, cache.Indexers{})
		r.lister, r.synced = nodelisters.NewRuntimeClassLister(inf.GetIndexer()), inf.HasSynced
		go inf.Run(r.stop)
	})
	wctx, cancel := context.WithTimeout(ctx, runtimeClassSyncWait)
	defer cancel()
	if !cache.WaitForCacheSync(wctx.Done(), r.synced) {
		return "", fmt.Errorf("RuntimeClass %q: RuntimeClasses could not be read from the API server yet", name)
	}
	rc, err := r.lister.Get(name)
	if apierrors.IsNotFound(err) {
		return "", fmt.Errorf("RuntimeClass %q not found", name)
	}
	if err != nil {
		return "", fmt.Errorf("failed to lookup RuntimeClass %s: %w", name, err)
	}
	return rc.Handler, nil
}
