package kubelet

// The wiring of the rest of the pod spec (environment, DNS and hosts,
// security contexts, hooks, ephemeral containers, pull credentials,
// RuntimeClass) into the runtime manager and admission. Everything the
// runtime needs from the API server comes through small interfaces
// (envvars.Objects, a Service lister, a RuntimeClass lookup), so caches can
// be swapped without touching pkg/runtime.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	nodelisters "k8s.io/client-go/listers/node/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/pkg/node/machineinfo"
	"github.com/gokubelet/kubelet/pkg/node/nodestatus"
	"github.com/gokubelet/kubelet/pkg/pod/admission"
	"github.com/gokubelet/kubelet/pkg/pod/envvars"
	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/pod/podstatus"
	"github.com/gokubelet/kubelet/pkg/pod/securitycontext"
	"github.com/gokubelet/kubelet/pkg/runtime/credentials"
	"github.com/gokubelet/kubelet/pkg/runtime/images"
	"github.com/gokubelet/kubelet/pkg/runtime/kuberuntime"
)

// podSpecParts are the kubelet-side pieces of the pod spec features.
type podSpecParts struct {
	// Deps go to kuberuntime.Options.PodSpec; Credentials to
	// kuberuntime.Options.PullCredentials.
	Deps        kuberuntime.PodSpecDeps
	Credentials images.Credentials

	// sysctls and appArmorErr feed admission (admitPodSpec).
	sysctls     *admission.SysctlAllowlist
	appArmorErr string

	// rejected remembers standalone pods already refused (one event each).
	mu       sync.Mutex
	rejected map[types.UID]bool
}

// wirePodSpec builds the pod spec parts. In cluster mode (cl != nil) it
// starts the Service informer (service link variables) under ctx; the
// RuntimeClass informer starts on the first pod that names a RuntimeClass.
// An invalid allowedUnsafeSysctls is a start-up error.
func (k *Kubelet) wirePodSpec(ctx context.Context, cl *clusterParts, machine machineinfo.Info) (*podSpecParts, error) {
	allow, err := admission.NewSysctlAllowlist(k.cfg.AllowedUnsafeSysctls)
	if err != nil {
		return nil, fmt.Errorf("allowedUnsafeSysctls: %w", err)
	}
	p := &podSpecParts{sysctls: allow, rejected: map[types.UID]bool{}}
	if ok, why := securitycontext.AppArmorEnabled(); !ok {
		p.appArmorErr = why
		klog.FromContext(ctx).V(2).Info("AppArmor is not available; pods asking for an AppArmor profile are rejected", "reason", why)
	}
	p.Deps = kuberuntime.PodSpecDeps{
		HostIPs:        k.hostIPs,
		SeccompDefault: k.cfg.SeccompDefault != nil && *k.cfg.SeccompDefault,
		NodeHostsFile:  "/etc/hosts",
	}
	var objs envvars.Objects
	if cl != nil {
		objs = envvars.ClientObjects{Client: cl.kube}
		p.Deps.Objects = objs
		p.Deps.ServiceEnv = startServiceEnv(ctx, cl.kube)
		p.Deps.RuntimeHandler = (&runtimeClasses{client: cl.kube, stop: ctx.Done()}).handler
		p.Deps.NodeAllocatable = func() v1.ResourceList { return cl.node().Status.Allocatable }
	} else {
		hostname, _ := os.Hostname()
		ncfg, err := nodestatus.ConfigFrom(k.cfg, k.settings.NodeName, strings.ToLower(hostname), k.settings.NodeIPs, k.settings.NodeLabels, Version)
		if err != nil {
			return nil, err
		}
		n := nodestatus.NewNode(&ncfg, machine)
		nodestatus.SetStatus(n, &ncfg, nodestatus.Inputs{Machine: machine}, metav1.Now())
		alloc := n.Status.Allocatable
		p.Deps.NodeAllocatable = func() v1.ResourceList { return alloc }
	}
	var secrets credentials.SecretGetter
	if objs != nil {
		secrets = objs
	}
	p.Credentials = credentials.ForPull(secrets, credentials.NewNodeKeyring(k.settings.RootDir), k.recorder)
	return p, nil
}

// startServiceEnv starts a Service informer and returns the function that
// gives a pod its service link variables from it. Until the first list
// completes, API pods wait (CreateContainerConfigError), as upstream:
// KUBERNETES_SERVICE_HOST must not be missing; static pods do not wait.
func startServiceEnv(ctx context.Context, kube kubernetes.Interface) func(*v1.Pod) ([]v1.EnvVar, error) {
	f := informers.NewSharedInformerFactory(kube, 0)
	inf := f.Core().V1().Services()
	lister := inf.Lister()
	synced := inf.Informer().HasSynced
	f.Start(ctx.Done())
	return func(pod *v1.Pod) ([]v1.EnvVar, error) {
		return serviceEnv(lister, synced, pod)
	}
}

func serviceEnv(lister corelisters.ServiceLister, synced func() bool, pod *v1.Pod) ([]v1.EnvVar, error) {
	if !podspec.IsStatic(pod) && !synced() {
		return nil, errors.New("services have not yet been read at least once, cannot construct envvars")
	}
	list, err := lister.List(labels.Everything())
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
		f := informers.NewSharedInformerFactory(r.client, 0)
		inf := f.Node().V1().RuntimeClasses()
		r.lister, r.synced = inf.Lister(), inf.Informer().HasSynced
		f.Start(r.stop)
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

// startupSucceeded tells the runtime manager whether a running instance's
// startup probe has succeeded (kuberuntime.Options.Started).
func (k *Kubelet) startupSucceeded(uid types.UID, name, containerID string) bool {
	if k.probes == nil {
		return true
	}
	r := k.probes.Result(uid)
	if r == nil {
		return true
	}
	ok, known := r(podstatus.StartupProbe, name, containerID)
	return known && ok
}

// admitPodSpec runs the node-security admission checks (sysctls,
// supplementalGroupsPolicy, AppArmor) for a new pod; node may be nil
// standalone.
func (k *Kubelet) admitPodSpec(pod *v1.Pod, node *v1.Node) admission.Result {
	if k.podSpec == nil {
		return admission.Result{Admit: true}
	}
	return admission.Security(pod, node, k.podSpec.sysctls, k.podSpec.appArmorErr)
}

// admitStandalone applies the node-security checks to pods of a kubelet
// without an API server (static pods), as upstream admits them too. A
// refused pod ends Failed with the reason; the event is recorded once.
func (k *Kubelet) admitStandalone(ctx context.Context, p *v1.Pod) bool {
	if k.podSpec == nil {
		return true
	}
	if _, running := k.workers.Get(p.UID); running {
		return true
	}
	res := k.admitPodSpec(p, nil)
	if res.Admit {
		return true
	}
	k.podSpec.mu.Lock()
	first := !k.podSpec.rejected[p.UID]
	k.podSpec.rejected[p.UID] = true
	k.podSpec.mu.Unlock()
	if first {
		klog.FromContext(ctx).Info("Pod rejected by admission", "pod", klog.KObj(p), "reason", res.Reason, "message", res.Message)
		k.recorder.Event(p, v1.EventTypeWarning, res.Reason, res.Message)
	}
	k.status.SetPodStatus(p, k.computeStatus(p, nil, podstatus.Options{FailReason: res.Reason, FailMessage: res.Message}))
	return false
}
