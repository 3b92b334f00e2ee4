package kubelet

// No silent pod fields, by construction: every field of the pod spec types
// the kubelet is handed is classified below, and the classification is
// checked against the code. A new field (an upgrade of k8s.io/api) fails
// TestPodSpecFieldsAreClassified until someone decides what this kubelet
// does with it.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gokubelet/kubelet/pkg/volume"
)

// statusKind is what this kubelet does with a pod spec field.
type statusKind string

const (
	// kindImplemented: read and honoured by the package named in where
	// (a path in the module, e.g. "pkg/pod/dns"), directly or through the
	// library functions in via.
	kindImplemented statusKind = "implemented"
	// kindRefused: a pod that sets it is refused (or the part that uses it
	// fails) with a reason, an event and a log line. where names the
	// package-level identifier (usually a constant holding the message)
	// that produces the refusal: "pkg/runtime/kuberuntime.RefusedStopSignal".
	// The field must be read in the reason's package, or in the package
	// given with readBy when the decision is made there.
	kindRefused statusKind = "refused"
	// kindRefusedVolume: a volume type the volume manager does not know;
	// it is refused generically (volume.UnsupportedError), so the field is
	// never read by name. Checked by behaviour.
	kindRefusedVolume statusKind = "refused volume type"
	// kindAPIOnly: the kubelet never reads it, by design (upstream's does
	// not either): the API server or the scheduler acts on it. where says
	// who.
	kindAPIOnly statusKind = "api-only"
	// kindInert: upstream's kubelet reads it, but on this node it changes
	// nothing; where says why.
	kindInert statusKind = "no effect here"
)

type fieldStatus struct {
	kind  statusKind
	where string
	via   []string
	// readBy, for a refused field, is the package that reads it when it
	// is not the reason's.
	readBy string
}

func (s fieldStatus) readIn(pkg string) fieldStatus { s.readBy = pkg; return s }

func implemented(where string, via ...string) fieldStatus {
	return fieldStatus{kind: kindImplemented, where: where, via: via}
}
func refused(reason string) fieldStatus { return fieldStatus{kind: kindRefused, where: reason} }
func refusedVolume() fieldStatus {
	return fieldStatus{kind: kindRefusedVolume, where: "pkg/volume.UnsupportedError"}
}
func apiOnly(why string) fieldStatus { return fieldStatus{kind: kindAPIOnly, where: why} }
func inert(why string) fieldStatus   { return fieldStatus{kind: kindInert, where: why} }

// Where the libraries that read fields for us are.
const (
	viaNodeAffinity = "k8s.io/component-helpers/scheduling/corev1/nodeaffinity.GetRequiredNodeAffinity"
	viaPodRequests  = "k8s.io/component-helpers/resource.PodRequests"
	viaPodLimits    = "k8s.io/component-helpers/resource.PodLimits"
	viaTolerations  = "k8s.io/component-helpers/scheduling/corev1.FindMatchingUntoleratedTaint"
	viaClaimName    = "k8s.io/dynamic-resource-allocation/resourceclaim.Name"
)

// podSpecFields classifies every field of the walked types (walkedTypes),
// by "Type.Field" of its declaring struct. The fields of
// EphemeralContainerCommon are those of Container (ephemeral containers
// run as containers, see ephemeralAsContainer) and are not listed.
var podSpecFields = map[string]fieldStatus{
	// PodSpec
	"PodSpec.Volumes":                       implemented("pkg/volume"),
	"PodSpec.InitContainers":                implemented("pkg/runtime/kuberuntime"),
	"PodSpec.Containers":                    implemented("pkg/runtime/kuberuntime"),
	"PodSpec.EphemeralContainers":           implemented("pkg/runtime/kuberuntime"),
	"PodSpec.RestartPolicy":                 implemented("pkg/pod/podspec"),
	"PodSpec.TerminationGracePeriodSeconds": implemented("pkg/runtime/kuberuntime"),
	"PodSpec.ActiveDeadlineSeconds":         implemented("pkg/engine/cri"),
	"PodSpec.DNSPolicy":                     implemented("pkg/pod/dns"),
	"PodSpec.NodeSelector":                  implemented("pkg/pod/admission", viaNodeAffinity),
	"PodSpec.ServiceAccountName":            implemented("pkg/pod/fieldpath"),
	"PodSpec.DeprecatedServiceAccount":      apiOnly("deprecated alias of serviceAccountName, which the API server keeps equal to it"),
	"PodSpec.AutomountServiceAccountToken":  apiOnly("the API server's ServiceAccount admission decides whether to add the token volume; the kubelet mounts the volumes the spec lists"),
	"PodSpec.NodeName":                      implemented("pkg/pod/admission"),
	"PodSpec.HostNetwork":                   implemented("pkg/pod/securitycontext"),
	"PodSpec.HostPID":                       implemented("pkg/pod/securitycontext"),
	"PodSpec.HostIPC":                       implemented("pkg/pod/securitycontext"),
	"PodSpec.ShareProcessNamespace":         implemented("pkg/pod/securitycontext"),
	"PodSpec.SecurityContext":               implemented("pkg/pod/securitycontext"),
	"PodSpec.ImagePullSecrets":              implemented("pkg/runtime/credentials"),
	"PodSpec.Hostname":                      implemented("pkg/pod/dns"),
	"PodSpec.Subdomain":                     implemented("pkg/pod/dns"),
	"PodSpec.Affinity":                      implemented("pkg/pod/admission", viaNodeAffinity),
	"PodSpec.SchedulerName":                 apiOnly("the scheduler that takes the pod"),
	"PodSpec.Tolerations":                   implemented("pkg/pod/admission"),
	"PodSpec.HostAliases":                   implemented("pkg/pod/dns"),
	"PodSpec.PriorityClassName":             implemented("pkg/runtime/kuberuntime"),
	"PodSpec.Priority":                      implemented("pkg/pod/podspec"),
	"PodSpec.DNSConfig":                     implemented("pkg/pod/dns"),
	"PodSpec.ReadinessGates":                implemented("pkg/pod/podstatus"),
	"PodSpec.RuntimeClassName":              implemented("pkg/runtime/kuberuntime"),
	"PodSpec.EnableServiceLinks":            implemented("pkg/kubelet"),
	"PodSpec.PreemptionPolicy":              apiOnly("the scheduler's preemption"),
	"PodSpec.Overhead":                      implemented("pkg/runtime/cgroups", viaPodRequests, viaPodLimits),
	"PodSpec.TopologySpreadConstraints":     apiOnly("the scheduler"),
	"PodSpec.SetHostnameAsFQDN":             implemented("pkg/pod/dns"),
	"PodSpec.OS":                            implemented("pkg/pod/admission"),
	"PodSpec.HostUsers":                     refused("pkg/runtime/kuberuntime.RefusedUserNamespacesNotImplemented").readIn("pkg/pod/securitycontext"),
	"PodSpec.SchedulingGates":               apiOnly("the scheduler does not bind a pod until its gates are removed"),
	"PodSpec.SchedulingGroup":               apiOnly("the scheduler's gang and workload scheduling (1.36+)"),
	"PodSpec.EvictionResponders":            apiOnly("the Eviction request API's responders (alpha, 1.37); the upstream kubelet reads none of it"),
	"PodSpec.ResourceClaims":                implemented("pkg/plugins/dra"),
	"PodSpec.Resources":                     implemented("pkg/runtime/cgroups"),
	"PodSpec.HostnameOverride":              implemented("pkg/pod/dns"),

	// Container (and, through ephemeralAsContainer, EphemeralContainerCommon)
	"Container.Name":                     implemented("pkg/runtime/kuberuntime"),
	"Container.Image":                    implemented("pkg/runtime/images"),
	"Container.Command":                  implemented("pkg/runtime/kuberuntime"),
	"Container.Args":                     implemented("pkg/runtime/kuberuntime"),
	"Container.WorkingDir":               implemented("pkg/runtime/kuberuntime"),
	"Container.Ports":                    implemented("pkg/runtime/kuberuntime"),
	"Container.EnvFrom":                  implemented("pkg/pod/envvars"),
	"Container.Env":                      implemented("pkg/pod/envvars"),
	"Container.Resources":                implemented("pkg/runtime/kuberuntime"),
	"Container.ResizePolicy":             implemented("pkg/runtime/kuberuntime"),
	"Container.RestartPolicy":            implemented("pkg/pod/podspec"),
	"Container.RestartPolicyRules":       implemented("pkg/pod/podspec"),
	"Container.VolumeMounts":             implemented("pkg/volume"),
	"Container.VolumeDevices":            refused("pkg/volume.RefusedVolumeDevices"),
	"Container.LivenessProbe":            implemented("pkg/pod/prober"),
	"Container.ReadinessProbe":           implemented("pkg/pod/prober"),
	"Container.StartupProbe":             implemented("pkg/pod/prober"),
	"Container.Lifecycle":                implemented("pkg/runtime/kuberuntime"),
	"Container.TerminationMessagePath":   implemented("pkg/runtime/kuberuntime"),
	"Container.TerminationMessagePolicy": implemented("pkg/runtime/kuberuntime"),
	"Container.ImagePullPolicy":          implemented("pkg/runtime/images"),
	"Container.SecurityContext":          implemented("pkg/pod/securitycontext"),
	"Container.Stdin":                    implemented("pkg/runtime/kuberuntime"),
	"Container.StdinOnce":                implemented("pkg/runtime/kuberuntime"),
	"Container.TTY":                      implemented("pkg/runtime/kuberuntime"),

	"EphemeralContainer.TargetContainerName": implemented("pkg/runtime/kuberuntime"),

	// PodSecurityContext
	"PodSecurityContext.SELinuxOptions":           implemented("pkg/pod/securitycontext"),
	"PodSecurityContext.WindowsOptions":           inert("Windows options; a Linux node ignores them, as upstream's"),
	"PodSecurityContext.RunAsUser":                implemented("pkg/pod/securitycontext"),
	"PodSecurityContext.RunAsGroup":               implemented("pkg/pod/securitycontext"),
	"PodSecurityContext.RunAsNonRoot":             implemented("pkg/pod/securitycontext"),
	"PodSecurityContext.SupplementalGroups":       implemented("pkg/pod/securitycontext"),
	"PodSecurityContext.SupplementalGroupsPolicy": implemented("pkg/pod/securitycontext"),
	"PodSecurityContext.FSGroup":                  implemented("pkg/volume"),
	"PodSecurityContext.Sysctls":                  implemented("pkg/pod/securitycontext"),
	"PodSecurityContext.FSGroupChangePolicy":      implemented("pkg/volume"),
	"PodSecurityContext.SeccompProfile":           implemented("pkg/pod/securitycontext"),
	"PodSecurityContext.AppArmorProfile":          implemented("pkg/pod/securitycontext"),
	"PodSecurityContext.SELinuxChangePolicy":      inert("it only chooses how CSI volumes that support SELinux mount options are labelled; this node never passes an SELinux mount option to a CSI driver, and the runtime relabels the volumes it has recursively, as with Recursive"),

	// SecurityContext
	"SecurityContext.Capabilities":             implemented("pkg/pod/securitycontext"),
	"SecurityContext.Privileged":               implemented("pkg/pod/securitycontext"),
	"SecurityContext.SELinuxOptions":           implemented("pkg/pod/securitycontext"),
	"SecurityContext.WindowsOptions":           inert("Windows options; a Linux node ignores them, as upstream's"),
	"SecurityContext.RunAsUser":                implemented("pkg/pod/securitycontext"),
	"SecurityContext.RunAsGroup":               implemented("pkg/pod/securitycontext"),
	"SecurityContext.RunAsNonRoot":             implemented("pkg/pod/securitycontext"),
	"SecurityContext.ReadOnlyRootFilesystem":   implemented("pkg/pod/securitycontext"),
	"SecurityContext.AllowPrivilegeEscalation": implemented("pkg/pod/securitycontext"),
	"SecurityContext.ProcMount":                implemented("pkg/pod/securitycontext"),
	"SecurityContext.SeccompProfile":           implemented("pkg/pod/securitycontext"),
	"SecurityContext.AppArmorProfile":          implemented("pkg/pod/securitycontext"),

	// Probe, ProbeHandler
	"Probe.InitialDelaySeconds":           implemented("pkg/pod/prober"),
	"Probe.TimeoutSeconds":                implemented("pkg/pod/prober"),
	"Probe.PeriodSeconds":                 implemented("pkg/pod/prober"),
	"Probe.SuccessThreshold":              implemented("pkg/pod/prober"),
	"Probe.FailureThreshold":              implemented("pkg/pod/prober"),
	"Probe.TerminationGracePeriodSeconds": implemented("pkg/runtime/kuberuntime"),
	"ProbeHandler.Exec":                   implemented("pkg/pod/prober"),
	"ProbeHandler.HTTPGet":                implemented("pkg/pod/prober"),
	"ProbeHandler.TCPSocket":              implemented("pkg/pod/prober"),
	"ProbeHandler.GRPC":                   implemented("pkg/pod/prober"),

	// Lifecycle, LifecycleHandler
	"Lifecycle.PostStart":        implemented("pkg/runtime/kuberuntime"),
	"Lifecycle.PreStop":          implemented("pkg/runtime/kuberuntime"),
	"Lifecycle.StopSignal":       refused("pkg/runtime/kuberuntime.RefusedStopSignal"),
	"LifecycleHandler.Exec":      implemented("pkg/pod/hooks"),
	"LifecycleHandler.HTTPGet":   implemented("pkg/pod/hooks"),
	"LifecycleHandler.TCPSocket": refused("pkg/pod/hooks.RefusedInvalidHandler"),
	"LifecycleHandler.Sleep":     implemented("pkg/pod/hooks"),

	// VolumeMount
	"VolumeMount.Name":              implemented("pkg/volume"),
	"VolumeMount.ReadOnly":          implemented("pkg/volume"),
	"VolumeMount.RecursiveReadOnly": implemented("pkg/pod/podspec"),
	"VolumeMount.MountPath":         implemented("pkg/volume"),
	"VolumeMount.SubPath":           implemented("pkg/volume"),
	"VolumeMount.MountPropagation":  implemented("pkg/volume"),
	"VolumeMount.SubPathExpr":       implemented("pkg/volume"),
	"VolumeMount.BindMountOptions":  refused("pkg/runtime/kuberuntime.RefusedBindMountOptions"),

	// Volume, VolumeSource
	"Volume.Name":                        implemented("pkg/volume"),
	"VolumeSource.HostPath":              implemented("pkg/volume"),
	"VolumeSource.EmptyDir":              implemented("pkg/volume"),
	"VolumeSource.Secret":                implemented("pkg/volume"),
	"VolumeSource.PersistentVolumeClaim": implemented("pkg/volume"),
	"VolumeSource.DownwardAPI":           implemented("pkg/volume"),
	"VolumeSource.ConfigMap":             implemented("pkg/volume"),
	"VolumeSource.Projected":             implemented("pkg/volume"),
	"VolumeSource.Ephemeral":             implemented("pkg/volume"),
	"VolumeSource.GCEPersistentDisk":     refusedVolume(),
	"VolumeSource.AWSElasticBlockStore":  refusedVolume(),
	"VolumeSource.GitRepo":               refusedVolume(),
	"VolumeSource.NFS":                   refusedVolume(),
	"VolumeSource.ISCSI":                 refusedVolume(),
	"VolumeSource.Glusterfs":             refusedVolume(),
	"VolumeSource.RBD":                   refusedVolume(),
	"VolumeSource.FlexVolume":            refusedVolume(),
	"VolumeSource.Cinder":                refusedVolume(),
	"VolumeSource.CephFS":                refusedVolume(),
	"VolumeSource.Flocker":               refusedVolume(),
	"VolumeSource.FC":                    refusedVolume(),
	"VolumeSource.AzureFile":             refusedVolume(),
	"VolumeSource.VsphereVolume":         refusedVolume(),
	"VolumeSource.Quobyte":               refusedVolume(),
	"VolumeSource.AzureDisk":             refusedVolume(),
	"VolumeSource.PhotonPersistentDisk":  refusedVolume(),
	"VolumeSource.PortworxVolume":        refusedVolume(),
	"VolumeSource.ScaleIO":               refusedVolume(),
	"VolumeSource.StorageOS":             refusedVolume(),
	"VolumeSource.CSI":                   implemented("pkg/volume"),
	"VolumeSource.Image":                 implemented("pkg/volume"),

	// The sources of the volume types this node provides. The alpha
	// fields (user, defaultUser, an emptyDir's mode) are honoured with
	// their gate on and named in a VolumeFieldsIgnored warning with it
	// off (pkg/volume.EventFieldsIgnored), as upstream ignores them.
	"HostPathVolumeSource.Path":                       implemented("pkg/volume"),
	"HostPathVolumeSource.Type":                       implemented("pkg/volume"),
	"EmptyDirVolumeSource.Medium":                     implemented("pkg/volume"),
	"EmptyDirVolumeSource.SizeLimit":                  implemented("pkg/volume"),
	"EmptyDirVolumeSource.Mode":                       implemented("pkg/volume"),
	"SecretVolumeSource.SecretName":                   implemented("pkg/volume"),
	"SecretVolumeSource.Items":                        implemented("pkg/volume"),
	"SecretVolumeSource.DefaultMode":                  implemented("pkg/volume"),
	"SecretVolumeSource.Optional":                     implemented("pkg/volume"),
	"SecretVolumeSource.DefaultUser":                  implemented("pkg/volume"),
	"KeyToPath.Key":                                   implemented("pkg/volume"),
	"KeyToPath.Path":                                  implemented("pkg/volume"),
	"KeyToPath.Mode":                                  implemented("pkg/volume"),
	"KeyToPath.User":                                  implemented("pkg/volume"),
	"PersistentVolumeClaimVolumeSource.ClaimName":     implemented("pkg/volume"),
	"PersistentVolumeClaimVolumeSource.ReadOnly":      implemented("pkg/volume"),
	"DownwardAPIVolumeSource.Items":                   implemented("pkg/volume"),
	"DownwardAPIVolumeSource.DefaultMode":             implemented("pkg/volume"),
	"DownwardAPIVolumeSource.DefaultUser":             implemented("pkg/volume"),
	"DownwardAPIVolumeFile.Path":                      implemented("pkg/volume"),
	"DownwardAPIVolumeFile.FieldRef":                  implemented("pkg/volume"),
	"DownwardAPIVolumeFile.ResourceFieldRef":          implemented("pkg/volume"),
	"DownwardAPIVolumeFile.Mode":                      implemented("pkg/volume"),
	"DownwardAPIVolumeFile.User":                      implemented("pkg/volume"),
	"ConfigMapVolumeSource.Items":                     implemented("pkg/volume"),
	"ConfigMapVolumeSource.DefaultMode":               implemented("pkg/volume"),
	"ConfigMapVolumeSource.Optional":                  implemented("pkg/volume"),
	"ConfigMapVolumeSource.DefaultUser":               implemented("pkg/volume"),
	"LocalObjectReference.Name":                       implemented("pkg/volume"),
	"ProjectedVolumeSource.Sources":                   implemented("pkg/volume"),
	"ProjectedVolumeSource.DefaultMode":               implemented("pkg/volume"),
	"ProjectedVolumeSource.DefaultUser":               implemented("pkg/volume"),
	"VolumeProjection.Secret":                         implemented("pkg/volume"),
	"VolumeProjection.DownwardAPI":                    implemented("pkg/volume"),
	"VolumeProjection.ConfigMap":                      implemented("pkg/volume"),
	"VolumeProjection.ServiceAccountToken":            implemented("pkg/volume"),
	"VolumeProjection.ClusterTrustBundle":             implemented("pkg/volume"),
	"VolumeProjection.PodCertificate":                 implemented("pkg/volume"),
	"SecretProjection.Items":                          implemented("pkg/volume"),
	"SecretProjection.Optional":                       implemented("pkg/volume"),
	"DownwardAPIProjection.Items":                     implemented("pkg/volume"),
	"ConfigMapProjection.Items":                       implemented("pkg/volume"),
	"ConfigMapProjection.Optional":                    implemented("pkg/volume"),
	"ServiceAccountTokenProjection.Audience":          implemented("pkg/volume"),
	"ServiceAccountTokenProjection.ExpirationSeconds": implemented("pkg/volume"),
	"ServiceAccountTokenProjection.Path":              implemented("pkg/volume"),
	"ServiceAccountTokenProjection.User":              implemented("pkg/volume"),
	"ClusterTrustBundleProjection.Name":               implemented("pkg/volume"),
	"ClusterTrustBundleProjection.SignerName":         implemented("pkg/volume"),
	"ClusterTrustBundleProjection.LabelSelector":      implemented("pkg/volume"),
	"ClusterTrustBundleProjection.Optional":           implemented("pkg/volume"),
	"ClusterTrustBundleProjection.Path":               implemented("pkg/volume"),
	"ClusterTrustBundleProjection.User":               implemented("pkg/volume"),
	"PodCertificateProjection.SignerName":             implemented("pkg/node/podcerts"),
	"PodCertificateProjection.KeyType":                implemented("pkg/node/podcerts"),
	"PodCertificateProjection.MaxExpirationSeconds":   implemented("pkg/node/podcerts"),
	"PodCertificateProjection.CredentialBundlePath":   implemented("pkg/volume"),
	"PodCertificateProjection.KeyPath":                implemented("pkg/volume"),
	"PodCertificateProjection.CertificateChainPath":   implemented("pkg/volume"),
	"PodCertificateProjection.UserAnnotations":        implemented("pkg/node/podcerts"),
	"PodCertificateProjection.User":                   implemented("pkg/volume"),
	"ImageVolumeSource.Reference":                     implemented("pkg/volume"),
	"ImageVolumeSource.PullPolicy":                    implemented("pkg/volume"),
	"CSIVolumeSource.Driver":                          implemented("pkg/volume"),
	"CSIVolumeSource.ReadOnly":                        implemented("pkg/volume"),
	"CSIVolumeSource.FSType":                          implemented("pkg/volume"),
	"CSIVolumeSource.VolumeAttributes":                implemented("pkg/volume"),
	"CSIVolumeSource.NodePublishSecretRef":            implemented("pkg/volume"),
	"EphemeralVolumeSource.VolumeClaimTemplate":       apiOnly("the ephemeral volume controller creates the claim <pod>-<volume> from it; the kubelet mounts that claim, as upstream's"),

	"ObjectFieldSelector.APIVersion":      apiOnly("the API server defaults it and converts the field path to v1; the kubelet reads fieldPath, as upstream's"),
	"ObjectFieldSelector.FieldPath":       implemented("pkg/pod/envvars"),
	"ResourceFieldSelector.ContainerName": implemented("pkg/pod/fieldpath"),
	"ResourceFieldSelector.Resource":      implemented("pkg/pod/fieldpath"),
	"ResourceFieldSelector.Divisor":       implemented("pkg/pod/fieldpath"),

	// The parts of a container.
	"ContainerPort.Name":                       implemented("pkg/pod/prober"),
	"ContainerPort.HostPort":                   implemented("pkg/runtime/kuberuntime"),
	"ContainerPort.ContainerPort":              implemented("pkg/runtime/kuberuntime"),
	"ContainerPort.Protocol":                   implemented("pkg/runtime/kuberuntime"),
	"ContainerPort.HostIP":                     implemented("pkg/runtime/kuberuntime"),
	"EnvFromSource.Prefix":                     implemented("pkg/pod/envvars"),
	"EnvFromSource.ConfigMapRef":               implemented("pkg/pod/envvars"),
	"EnvFromSource.SecretRef":                  implemented("pkg/pod/envvars"),
	"ConfigMapEnvSource.Optional":              implemented("pkg/pod/envvars"),
	"SecretEnvSource.Optional":                 implemented("pkg/pod/envvars"),
	"EnvVar.Name":                              implemented("pkg/pod/envvars"),
	"EnvVar.Value":                             implemented("pkg/pod/envvars"),
	"EnvVar.ValueFrom":                         implemented("pkg/pod/envvars"),
	"EnvVarSource.FieldRef":                    implemented("pkg/pod/envvars"),
	"EnvVarSource.ResourceFieldRef":            implemented("pkg/pod/envvars"),
	"EnvVarSource.ConfigMapKeyRef":             implemented("pkg/pod/envvars"),
	"EnvVarSource.SecretKeyRef":                implemented("pkg/pod/envvars"),
	"EnvVarSource.FileKeyRef":                  implemented("pkg/pod/envvars"),
	"ConfigMapKeySelector.Key":                 implemented("pkg/pod/envvars"),
	"ConfigMapKeySelector.Optional":            implemented("pkg/pod/envvars"),
	"SecretKeySelector.Key":                    implemented("pkg/pod/envvars"),
	"SecretKeySelector.Optional":               implemented("pkg/pod/envvars"),
	"FileKeySelector.VolumeName":               implemented("pkg/pod/envvars"),
	"FileKeySelector.Path":                     implemented("pkg/pod/envvars"),
	"FileKeySelector.Key":                      implemented("pkg/pod/envvars"),
	"FileKeySelector.Optional":                 implemented("pkg/pod/envvars"),
	"ResourceRequirements.Limits":              implemented("pkg/runtime/cgroups", viaPodLimits),
	"ResourceRequirements.Requests":            implemented("pkg/runtime/cgroups", viaPodRequests),
	"ResourceRequirements.Claims":              implemented("pkg/plugins/dra"),
	"ResourceClaim.Name":                       implemented("pkg/plugins/dra"),
	"ResourceClaim.Request":                    implemented("pkg/plugins/dra"),
	"ContainerResizePolicy.ResourceName":       implemented("pkg/runtime/kuberuntime"),
	"ContainerResizePolicy.RestartPolicy":      implemented("pkg/runtime/kuberuntime"),
	"ContainerRestartRule.Action":              implemented("pkg/pod/podspec"),
	"ContainerRestartRule.ExitCodes":           implemented("pkg/pod/podspec"),
	"ContainerRestartRuleOnExitCodes.Operator": implemented("pkg/pod/podspec"),
	"ContainerRestartRuleOnExitCodes.Values":   implemented("pkg/pod/podspec"),
	"VolumeDevice.Name":                        implemented("pkg/volume"),
	"VolumeDevice.DevicePath":                  inert("a volumeDevices entry is refused as a whole, by its name (pkg/volume.RefusedVolumeDevices)"),
	"ExecAction.Command":                       implemented("pkg/pod/prober"),
	"HTTPGetAction.Path":                       implemented("pkg/pod/prober"),
	"HTTPGetAction.Port":                       implemented("pkg/pod/prober"),
	"HTTPGetAction.Host":                       implemented("pkg/pod/prober"),
	"HTTPGetAction.Scheme":                     implemented("pkg/pod/prober"),
	"HTTPGetAction.HTTPHeaders":                implemented("pkg/pod/prober"),
	"HTTPGetAction.Protocol":                   implemented("pkg/pod/prober"),
	"HTTPHeader.Name":                          implemented("pkg/pod/prober"),
	"HTTPHeader.Value":                         implemented("pkg/pod/prober"),
	"TCPSocketAction.Port":                     implemented("pkg/pod/prober"),
	"TCPSocketAction.Host":                     implemented("pkg/pod/prober"),
	"GRPCAction.Port":                          implemented("pkg/pod/prober"),
	"GRPCAction.Service":                       implemented("pkg/pod/prober"),
	"GRPCAction.Mode":                          implemented("pkg/pod/prober"),
	"SleepAction.Seconds":                      implemented("pkg/pod/hooks"),
	"Capabilities.Add":                         implemented("pkg/pod/securitycontext"),
	"Capabilities.Drop":                        implemented("pkg/pod/securitycontext"),
	"SELinuxOptions.User":                      implemented("pkg/pod/securitycontext"),
	"SELinuxOptions.Role":                      implemented("pkg/pod/securitycontext"),
	"SELinuxOptions.Type":                      implemented("pkg/pod/securitycontext"),
	"SELinuxOptions.Level":                     implemented("pkg/pod/securitycontext"),
	"SeccompProfile.Type":                      implemented("pkg/pod/securitycontext"),
	"SeccompProfile.LocalhostProfile":          implemented("pkg/pod/securitycontext"),
	"AppArmorProfile.Type":                     implemented("pkg/pod/securitycontext"),
	"AppArmorProfile.LocalhostProfile":         implemented("pkg/pod/securitycontext"),

	// The parts of the pod the kubelet acts on.
	"Sysctl.Name":                                implemented("pkg/pod/securitycontext"),
	"Sysctl.Value":                               implemented("pkg/pod/securitycontext"),
	"Toleration.Key":                             implemented("pkg/pod/admission", viaTolerations),
	"Toleration.Operator":                        implemented("pkg/pod/admission", viaTolerations),
	"Toleration.Value":                           implemented("pkg/pod/admission", viaTolerations),
	"Toleration.Effect":                          implemented("pkg/pod/admission", viaTolerations),
	"Toleration.TolerationSeconds":               apiOnly("the taint manager evicts a pod once the tolerationSeconds of a NoExecute taint ran out; the kubelet admits on the toleration alone, as upstream's"),
	"HostAlias.IP":                               implemented("pkg/pod/dns"),
	"HostAlias.Hostnames":                        implemented("pkg/pod/dns"),
	"PodDNSConfig.Nameservers":                   implemented("pkg/pod/dns"),
	"PodDNSConfig.Searches":                      implemented("pkg/pod/dns"),
	"PodDNSConfig.Options":                       implemented("pkg/pod/dns"),
	"PodDNSConfigOption.Name":                    implemented("pkg/pod/dns"),
	"PodDNSConfigOption.Value":                   implemented("pkg/pod/dns"),
	"PodReadinessGate.ConditionType":             implemented("pkg/pod/podstatus"),
	"PodOS.Name":                                 implemented("pkg/pod/admission"),
	"PodResourceClaim.Name":                      implemented("pkg/plugins/dra"),
	"PodResourceClaim.ResourceClaimName":         implemented("pkg/plugins/dra", viaClaimName),
	"PodResourceClaim.ResourceClaimTemplateName": implemented("pkg/plugins/dra", viaClaimName),
}

// walkedTypes are the core/v1 types whose fields are classified; the walk
// starts at PodSpec and follows fields (pointers, slices) into them.
var walkedTypes = map[reflect.Type]bool{
	reflect.TypeOf(v1.PodSpec{}):                  true,
	reflect.TypeOf(v1.Container{}):                true,
	reflect.TypeOf(v1.EphemeralContainer{}):       true,
	reflect.TypeOf(v1.EphemeralContainerCommon{}): true,
	reflect.TypeOf(v1.PodSecurityContext{}):       true,
	reflect.TypeOf(v1.SecurityContext{}):          true,
	reflect.TypeOf(v1.Probe{}):                    true,
	reflect.TypeOf(v1.ProbeHandler{}):             true,
	reflect.TypeOf(v1.Lifecycle{}):                true,
	reflect.TypeOf(v1.LifecycleHandler{}):         true,
	reflect.TypeOf(v1.VolumeMount{}):              true,
	reflect.TypeOf(v1.Volume{}):                   true,
	reflect.TypeOf(v1.VolumeSource{}):             true,
	// The sources of the volume types this node provides, down to their
	// items.
	reflect.TypeOf(v1.HostPathVolumeSource{}):              true,
	reflect.TypeOf(v1.EmptyDirVolumeSource{}):              true,
	reflect.TypeOf(v1.SecretVolumeSource{}):                true,
	reflect.TypeOf(v1.ConfigMapVolumeSource{}):             true,
	reflect.TypeOf(v1.DownwardAPIVolumeSource{}):           true,
	reflect.TypeOf(v1.ProjectedVolumeSource{}):             true,
	reflect.TypeOf(v1.PersistentVolumeClaimVolumeSource{}): true,
	reflect.TypeOf(v1.EphemeralVolumeSource{}):             true,
	reflect.TypeOf(v1.CSIVolumeSource{}):                   true,
	reflect.TypeOf(v1.ImageVolumeSource{}):                 true,
	reflect.TypeOf(v1.VolumeProjection{}):                  true,
	reflect.TypeOf(v1.SecretProjection{}):                  true,
	reflect.TypeOf(v1.ConfigMapProjection{}):               true,
	reflect.TypeOf(v1.DownwardAPIProjection{}):             true,
	reflect.TypeOf(v1.ServiceAccountTokenProjection{}):     true,
	reflect.TypeOf(v1.ClusterTrustBundleProjection{}):      true,
	reflect.TypeOf(v1.PodCertificateProjection{}):          true,
	reflect.TypeOf(v1.KeyToPath{}):                         true,
	reflect.TypeOf(v1.DownwardAPIVolumeFile{}):             true,
	reflect.TypeOf(v1.LocalObjectReference{}):              true,
	reflect.TypeOf(v1.ObjectFieldSelector{}):               true,
	reflect.TypeOf(v1.ResourceFieldSelector{}):             true,
	// The parts of a container, down to their leaves.
	reflect.TypeOf(v1.ContainerPort{}):                   true,
	reflect.TypeOf(v1.EnvFromSource{}):                   true,
	reflect.TypeOf(v1.ConfigMapEnvSource{}):              true,
	reflect.TypeOf(v1.SecretEnvSource{}):                 true,
	reflect.TypeOf(v1.EnvVar{}):                          true,
	reflect.TypeOf(v1.EnvVarSource{}):                    true,
	reflect.TypeOf(v1.ConfigMapKeySelector{}):            true,
	reflect.TypeOf(v1.SecretKeySelector{}):               true,
	reflect.TypeOf(v1.FileKeySelector{}):                 true,
	reflect.TypeOf(v1.ResourceRequirements{}):            true,
	reflect.TypeOf(v1.ResourceClaim{}):                   true,
	reflect.TypeOf(v1.ContainerResizePolicy{}):           true,
	reflect.TypeOf(v1.ContainerRestartRule{}):            true,
	reflect.TypeOf(v1.ContainerRestartRuleOnExitCodes{}): true,
	reflect.TypeOf(v1.VolumeDevice{}):                    true,
	reflect.TypeOf(v1.ExecAction{}):                      true,
	reflect.TypeOf(v1.HTTPGetAction{}):                   true,
	reflect.TypeOf(v1.HTTPHeader{}):                      true,
	reflect.TypeOf(v1.TCPSocketAction{}):                 true,
	reflect.TypeOf(v1.GRPCAction{}):                      true,
	reflect.TypeOf(v1.SleepAction{}):                     true,
	reflect.TypeOf(v1.Capabilities{}):                    true,
	reflect.TypeOf(v1.SELinuxOptions{}):                  true,
	reflect.TypeOf(v1.SeccompProfile{}):                  true,
	reflect.TypeOf(v1.AppArmorProfile{}):                 true,
	// The parts of the pod the kubelet acts on.
	reflect.TypeOf(v1.Sysctl{}):             true,
	reflect.TypeOf(v1.Toleration{}):         true,
	reflect.TypeOf(v1.HostAlias{}):          true,
	reflect.TypeOf(v1.PodDNSConfig{}):       true,
	reflect.TypeOf(v1.PodDNSConfigOption{}): true,
	reflect.TypeOf(v1.PodReadinessGate{}):   true,
	reflect.TypeOf(v1.PodOS{}):              true,
	reflect.TypeOf(v1.PodResourceClaim{}):   true,
}

// ephemeralAsContainer: ephemeral containers run as containers
// (v1.Container(ec.EphemeralContainerCommon)) in this package, so each
// field of EphemeralContainerCommon has the status of Container's.
const ephemeralAsContainer = "pkg/runtime/kuberuntime"

// specField is one field found by the walk.
type specField struct {
	key      string // "Container.Image"
	typeName string // "Container"
	json     string // "image"
}

// walkPodSpec returns every (non-embedded) field of the walked types, in
// declaration order, types in the order the walk reaches them.
func walkPodSpec(t *testing.T) []specField {
	var out []specField
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(rt reflect.Type) {
		if seen[rt] {
			return
		}
		seen[rt] = true
		var nested []reflect.Type
		for i := 0; i < rt.NumField(); i++ {
			f := rt.Field(i)
			ft := f.Type
			for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
				ft = ft.Elem()
			}
			if f.Anonymous {
				if !walkedTypes[ft] {
					t.Errorf("%s embeds %s, which the walk does not cover: add it to walkedTypes", rt.Name(), ft.Name())
				}
				nested = append([]reflect.Type{ft}, nested...)
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			out = append(out, specField{key: rt.Name() + "." + f.Name, typeName: rt.Name(), json: name})
			if walkedTypes[ft] {
				nested = append(nested, ft)
			}
		}
		for _, n := range nested {
			walk(n)
		}
	}
	walk(reflect.TypeOf(v1.PodSpec{}))
	for wt := range walkedTypes {
		if !seen[wt] {
			t.Errorf("walkedTypes lists %s, which the walk from PodSpec never reaches", wt.Name())
		}
	}
	return out
}

// statusOf is a field's classification; ok is false for an unclassified
// field.
func statusOf(f specField) (fieldStatus, bool) {
	if f.typeName == "EphemeralContainerCommon" {
		st, ok := podSpecFields["Container."+strings.TrimPrefix(f.key, "EphemeralContainerCommon.")]
		return st, ok
	}
	st, ok := podSpecFields[f.key]
	return st, ok
}

// TestPodSpecFieldsAreClassified fails for a pod spec field nobody decided
// about, and for a classification that names no field.
func TestPodSpecFieldsAreClassified(t *testing.T) {
	fields := walkPodSpec(t)
	found := map[string]bool{}
	var missing []string
	for _, f := range fields {
		found[f.key] = true
		if _, ok := statusOf(f); !ok {
			missing = append(missing, f.key)
		}
	}
	if len(missing) > 0 {
		t.Errorf("pod spec fields without a classification: %v\n"+
			"Decide what this kubelet does with each and add it to podSpecFields in pkg/kubelet/podspec_fields_test.go: "+
			"implemented(<package that honours it>), refused(<the reason constant of the refusal>; a pod asking for it must get a reason, an event and a log line, "+
			"see pkg/runtime/kuberuntime/unsupported.go), apiOnly(<who acts on it instead>) or inert(<why it changes nothing here>). "+
			"Then regenerate docs/podspec.md (go test ./pkg/kubelet -run TestPodSpecFieldsDoc -update-docs).", missing)
	}
	var stale []string
	for k := range podSpecFields {
		if !found[k] {
			stale = append(stale, k)
		}
	}
	sort.Strings(stale)
	if len(stale) > 0 {
		t.Errorf("podSpecFields classifies fields that k8s.io/api/core/v1 does not have (any more): %v", stale)
	}
	for k, st := range podSpecFields {
		if strings.TrimSpace(st.where) == "" {
			t.Errorf("%s: %s without saying where or why", k, st.kind)
		}
	}
}

// TestPodSpecFieldClassificationsHold checks each classification against
// the code: an implemented field is read by the package named (or the
// library functions it reads it through are called there); a refused field
// is read by some package and its reason is used; a refused volume type is
// refused by the volume manager.
func TestPodSpecFieldClassificationsHold(t *testing.T) {
	r := scanProduct(t)
	under := func(pkgs map[string]bool, where string) bool {
		for p := range pkgs {
			if p == where || strings.HasPrefix(p, where+"/") {
				return true
			}
		}
		return false
	}
	if !under(r.conversions["EphemeralContainerCommon->Container"], ephemeralAsContainer) {
		t.Errorf("%s no longer converts ephemeral containers to v1.Container: the fields of EphemeralContainerCommon need their own classification", ephemeralAsContainer)
	}
	for _, f := range walkPodSpec(t) {
		if f.typeName == "EphemeralContainerCommon" {
			continue // as Container's, checked there
		}
		st, ok := podSpecFields[f.key]
		if !ok {
			continue // TestPodSpecFieldsAreClassified says so
		}
		switch st.kind {
		case kindImplemented:
			if len(st.via) == 0 {
				if !under(r.fields[f.key], st.where) {
					t.Errorf("%s is classified as implemented in %s, but nothing there reads it (read by: %v)", f.key, st.where, sortedKeys(r.fields[f.key]))
				}
				continue
			}
			for _, fn := range st.via {
				if !under(r.uses[fn], st.where) {
					t.Errorf("%s is classified as implemented in %s through %s, which nothing there calls", f.key, st.where, fn)
				}
			}
		case kindRefused:
			reader := st.readBy
			if reader == "" {
				reader = st.where[:strings.LastIndex(st.where, ".")]
			}
			if !r.fields[f.key][reader] {
				t.Errorf("%s is classified as refused by %s, but %s does not read it, so it cannot refuse it (read by: %v)", f.key, st.where, reader, sortedKeys(r.fields[f.key]))
			}
			if !r.scope[st.where] {
				t.Errorf("%s: the reason %s does not exist", f.key, st.where)
			} else if len(r.uses[st.where]) == 0 {
				t.Errorf("%s: the reason %s is never used", f.key, st.where)
			}
		case kindRefusedVolume:
			checkVolumeRefused(t, f)
		case kindAPIOnly, kindInert:
		default:
			t.Errorf("%s: unknown kind %q", f.key, st.kind)
		}
	}
}

// checkVolumeRefused sets the volume type in a pod and asks the volume
// manager to set it up: it must refuse it by its type name.
func checkVolumeRefused(t *testing.T, f specField) {
	t.Helper()
	src := v1.VolumeSource{}
	fv := reflect.ValueOf(&src).Elem().FieldByName(strings.TrimPrefix(f.key, "VolumeSource."))
	if fv.Kind() != reflect.Pointer {
		t.Errorf("%s: a volume type is a pointer field", f.key)
		return
	}
	fv.Set(reflect.New(fv.Type().Elem()))
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-volume-refusal"},
		Spec: v1.PodSpec{
			Containers: []v1.Container{{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "v", MountPath: "/v"}}}},
			Volumes:    []v1.Volume{{Name: "v", VolumeSource: src}},
		},
	}
	m := volume.New(volume.Options{RootDir: t.TempDir()})
	err := m.SetUpPod(context.Background(), pod)
	var nr *volume.NotReadyError
	var ue *volume.UnsupportedError
	if !errors.As(err, &nr) || len(nr.Volumes) != 1 || !errors.As(nr.Volumes[0].Err, &ue) || ue.Type != f.json {
		t.Errorf("%s is classified as a refused volume type, but the volume manager says %v", f.key, err)
	}
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

var updateDocs = flag.Bool("update-docs", false, "rewrite the generated table of docs/podspec.md")

const (
	docPath  = "../../docs/podspec.md"
	docBegin = "<!-- BEGIN GENERATED: pod spec fields; go test ./pkg/kubelet -run TestPodSpecFieldsDoc -update-docs -->"
	docEnd   = "<!-- END GENERATED: pod spec fields -->"
)

// TestPodSpecFieldsDoc keeps the table of docs/podspec.md equal to the
// classification.
func TestPodSpecFieldsDoc(t *testing.T) {
	want := renderFieldTable(walkPodSpec(t))
	b, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, docBegin), strings.Index(doc, docEnd)
	if i < 0 || j < i {
		t.Fatalf("%s has no %q ... %q section", docPath, docBegin, docEnd)
	}
	got := doc[i+len(docBegin) : j]
	if got == want {
		return
	}
	if *updateDocs {
		if err := os.WriteFile(docPath, []byte(doc[:i+len(docBegin)]+want+doc[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote %s", filepath.Clean(docPath))
		return
	}
	t.Errorf("the pod spec field table in docs/podspec.md is stale; regenerate it: go test ./pkg/kubelet -run TestPodSpecFieldsDoc -update-docs")
}

// docSections names the walked types as the doc does, in the doc's order.
var docSections = []struct{ typeName, title string }{
	{"PodSpec", "`spec`"},
	{"Container", "containers (`containers[]`, `initContainers[]`, and `ephemeralContainers[]`, which run as containers)"},
	{"EphemeralContainer", "`ephemeralContainers[]` (beyond a container's fields)"},
	{"PodSecurityContext", "`spec.securityContext`"},
	{"SecurityContext", "`containers[].securityContext`"},
	{"Probe", "probes (`livenessProbe`, `readinessProbe`, `startupProbe`)"},
	{"ProbeHandler", "probe handlers"},
	{"Lifecycle", "`lifecycle`"},
	{"LifecycleHandler", "lifecycle handlers (`postStart`, `preStop`)"},
	{"VolumeMount", "`volumeMounts[]`"},
	{"Volume", "`volumes[]`"},
	{"VolumeSource", "volume types (`volumes[].<type>`)"},
	{"HostPathVolumeSource", "`volumes[].hostPath`"},
	{"EmptyDirVolumeSource", "`volumes[].emptyDir`"},
	{"SecretVolumeSource", "`volumes[].secret`"},
	{"ConfigMapVolumeSource", "`volumes[].configMap`"},
	{"KeyToPath", "`items[]` of configMap and secret volumes and projections"},
	{"DownwardAPIVolumeSource", "`volumes[].downwardAPI`"},
	{"DownwardAPIVolumeFile", "`items[]` of downwardAPI volumes and projections"},
	{"ProjectedVolumeSource", "`volumes[].projected`"},
	{"VolumeProjection", "`volumes[].projected.sources[]`"},
	{"SecretProjection", "`sources[].secret`"},
	{"ConfigMapProjection", "`sources[].configMap`"},
	{"DownwardAPIProjection", "`sources[].downwardAPI`"},
	{"ServiceAccountTokenProjection", "`sources[].serviceAccountToken`"},
	{"ClusterTrustBundleProjection", "`sources[].clusterTrustBundle`"},
	{"PodCertificateProjection", "`sources[].podCertificate`"},
	{"PersistentVolumeClaimVolumeSource", "`volumes[].persistentVolumeClaim`"},
	{"EphemeralVolumeSource", "`volumes[].ephemeral`"},
	{"CSIVolumeSource", "`volumes[].csi`"},
	{"ImageVolumeSource", "`volumes[].image`"},
	{"LocalObjectReference", "object references (`imagePullSecrets[]`, a configMap's or secret's name, `nodePublishSecretRef`)"},
	{"EphemeralContainerCommon", ""}, // as Container
}

// renderFieldTable renders the sections of docSections, then every other
// walked type under its name, in the walk's order.
func renderFieldTable(fields []specField) string {
	byType := map[string][]specField{}
	for _, f := range fields {
		byType[f.typeName] = append(byType[f.typeName], f)
	}
	var b strings.Builder
	b.WriteString("\n")
	section := func(typeName, title string) {
		list := byType[typeName]
		delete(byType, typeName)
		if title == "" || len(list) == 0 {
			return
		}
		fmt.Fprintf(&b, "\n%s:\n\n| field | status | where / why |\n| --- | --- | --- |\n", title)
		for _, f := range list {
			renderField(&b, f)
		}
	}
	for _, sec := range docSections {
		section(sec.typeName, sec.title)
	}
	for _, f := range fields {
		section(f.typeName, "`"+f.typeName+"`")
	}
	b.WriteString("\n")
	return b.String()
}

func renderField(b *strings.Builder, f specField) {
	st, ok := statusOf(f)
	if !ok {
		fmt.Fprintf(b, "| `%s` | unclassified | |\n", f.json)
		return
	}
	where := st.where
	switch st.kind {
	case kindImplemented:
		where = "`" + st.where + "`"
		if len(st.via) > 0 {
			var vs []string
			for _, v := range st.via {
				vs = append(vs, "`"+v[strings.LastIndex(v, "/")+1:]+"`")
			}
			where += ", through " + strings.Join(vs, ", ")
		}
	case kindRefused, kindRefusedVolume:
		where = "`" + st.where + "`"
	}
	fmt.Fprintf(b, "| `%s` | %s | %s |\n", f.json, st.kind, where)
}
