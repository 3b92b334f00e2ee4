package staticpod

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

// uidFor derives a static pod's UID exactly as the upstream kubelet (v1.34)
// does, so that a node handed from one kubelet to the other finds its
// static pods under the same UID (same containers, same pod directory,
// same mirror pod) and restarts nothing.
//
// Upstream decodes the manifest into the API server's internal Pod type,
// applies the v1 defaults, and hashes with MD5 the spew dump
// (k8s.io/apimachinery/pkg/util/dump.ForHash, i.e. "%#v" with sorted map
// keys) of that internal object, followed by "host:<node>" and
// "file:<path>" for a file, or "url:<url>" for a URL. The internal type
// lives in k8s.io/kubernetes, which this kubelet does not import; its dump
// is the dump of the v1 object with the type names of package core and a
// handful of layout differences (writeInternalPod). pod must be the
// decoded, defaulted pod before the kubelet names it; namespace is the
// namespace as the manifest wrote it (upstream hashes before defaulting
// it).
//
// The same bytes from the same place thus always give the same UID, and
// any edit gives a new one (an edited static pod is replaced, not updated
// in place).
func uidFor(pod *v1.Pod, namespace, source, origin, nodeName string) types.UID {
	h := md5.New()
	writeInternalPod(h, pod, namespace)
	switch source {
	case podspec.SourceFile:
		fmt.Fprintf(h, "host:%s", nodeName)
		fmt.Fprintf(h, "file:%s", origin)
	default:
		fmt.Fprintf(h, "url:%s", origin)
	}
	return types.UID(hex.EncodeToString(h.Sum(nil)))
}

// writeInternalPod writes the upstream hash input of pod: the spew "%#v"
// dump of the internal core.Pod that upstream's decoder produces from the
// same manifest.
func writeInternalPod(w io.Writer, pod *v1.Pod, namespace string) {
	p := &dumper{w: w}
	cp := *pod
	cp.TypeMeta.Kind, cp.TypeMeta.APIVersion = "", "" // internal objects carry no type meta
	cp.Namespace = namespace
	cp.Annotations = dropInitContainerAnnotations(cp.Annotations)
	if g := cp.Spec.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		one := int64(1)
		cp.Spec.TerminationGracePeriodSeconds = &one
	}
	p.str("(*core.Pod)")
	p.value(reflect.ValueOf(cp), false)
}

// The annotations upstream's v1-to-internal conversion drops.
var initContainerAnnotations = map[string]bool{
	"pod.beta.kubernetes.io/init-containers":          true,
	"pod.alpha.kubernetes.io/init-containers":         true,
	"pod.beta.kubernetes.io/init-container-statuses":  true,
	"pod.alpha.kubernetes.io/init-container-statuses": true,
}

func dropInitContainerAnnotations(in map[string]string) map[string]string {
	found := false
	for k := range in {
		if initContainerAnnotations[k] {
			found = true
			break
		}
	}
	if !found {
		return in
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		if !initContainerAnnotations[k] {
			out[k] = v
		}
	}
	return out
}

const corePkg = "k8s.io/api/core/v1"

// Where the internal types' fields differ in order or place from v1's
// (checked against k8s.io/kubernetes v1.34.4 pkg/apis/core; every other
// struct of a pod has the same fields in the same order). internalHost
// names the fields that move from PodSpec into PodSecurityContext.
var (
	internalPodSpec = []string{"Volumes", "InitContainers", "Containers", "EphemeralContainers", "RestartPolicy",
		"TerminationGracePeriodSeconds", "ActiveDeadlineSeconds", "DNSPolicy", "NodeSelector", "ServiceAccountName",
		"AutomountServiceAccountToken", "NodeName", "SecurityContext", "ImagePullSecrets", "Hostname", "Subdomain",
		"SetHostnameAsFQDN", "Affinity", "SchedulerName", "Tolerations", "HostAliases", "PriorityClassName", "Priority",
		"PreemptionPolicy", "DNSConfig", "ReadinessGates", "RuntimeClassName", "Overhead", "EnableServiceLinks",
		"TopologySpreadConstraints", "OS", "SchedulingGates", "ResourceClaims", "Resources", "HostnameOverride"}
	internalHost               = []string{"HostNetwork", "HostPID", "HostIPC", "ShareProcessNamespace", "HostUsers"}
	internalPodSecurityContext = []string{"SELinuxOptions", "WindowsOptions", "RunAsUser", "RunAsGroup", "RunAsNonRoot",
		"SupplementalGroups", "SupplementalGroupsPolicy", "FSGroup", "FSGroupChangePolicy", "Sysctls", "SeccompProfile",
		"AppArmorProfile", "SELinuxChangePolicy"}
	internalPodStatus = []string{"ObservedGeneration", "Phase", "Conditions", "Message", "Reason", "NominatedNodeName",
		"HostIP", "HostIPs", "PodIPs", "StartTime", "QOSClass", "InitContainerStatuses", "ContainerStatuses",
		"EphemeralContainerStatuses", "Resize", "ResourceClaimStatuses", "ExtendedResourceClaimStatus"}
	internalVolumeSource = []string{"HostPath", "EmptyDir", "GCEPersistentDisk", "AWSElasticBlockStore", "GitRepo",
		"Secret", "NFS", "ISCSI", "Glusterfs", "PersistentVolumeClaim", "RBD", "Quobyte", "FlexVolume", "Cinder",
		"CephFS", "Flocker", "DownwardAPI", "FC", "AzureFile", "ConfigMap", "VsphereVolume", "AzureDisk",
		"PhotonPersistentDisk", "Projected", "PortworxVolume", "ScaleIO", "StorageOS", "CSI", "Ephemeral", "Image"}
)

var (
	typePodSpec      = reflect.TypeOf(v1.PodSpec{})
	typePodStatus    = reflect.TypeOf(v1.PodStatus{})
	typeVolumeSource = reflect.TypeOf(v1.VolumeSource{})
	typeTokenProj    = reflect.TypeOf(v1.ServiceAccountTokenProjection{})
)

// dumper writes values in the format of go-spew's "%#v" with the settings
// of dump.ForHash (methods disabled, no pointer addresses, sorted map
// keys), naming the types of k8s.io/api/core/v1 as package core's.
type dumper struct{ w io.Writer }

func (p *dumper) str(s string) { io.WriteString(p.w, s) }

func (p *dumper) typ(t reflect.Type) { p.str("(" + typeName(t) + ")") }

func typeName(t reflect.Type) string {
	if t.Name() != "" {
		if t.PkgPath() == corePkg {
			return "core." + t.Name()
		}
		return t.String()
	}
	switch t.Kind() {
	case reflect.Ptr:
		return "*" + typeName(t.Elem())
	case reflect.Slice:
		return "[]" + typeName(t.Elem())
	case reflect.Array:
		return "[" + strconv.Itoa(t.Len()) + "]" + typeName(t.Elem())
	case reflect.Map:
		return "map[" + typeName(t.Key()) + "]" + typeName(t.Elem())
	}
	return t.String()
}

// value writes v; showType says whether its type is written first (struct
// fields: yes; slice and map elements and pointer targets: no).
func (p *dumper) value(v reflect.Value, showType bool) {
	if v.Kind() == reflect.Interface {
		if v.IsNil() {
			if showType {
				p.typ(v.Type())
			}
			p.str("<nil>")
			return
		}
		v, showType = v.Elem(), true
	}
	if v.Kind() == reflect.Ptr {
		p.pointer(v, showType)
		return
	}
	if showType {
		p.typ(v.Type())
	}
	switch v.Kind() {
	case reflect.Bool:
		p.str(strconv.FormatBool(v.Bool()))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		p.str(strconv.FormatInt(v.Int(), 10))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		p.str(strconv.FormatUint(v.Uint(), 10))
	case reflect.Uintptr:
		p.str("0x" + strconv.FormatUint(v.Uint(), 16))
	case reflect.Float32:
		p.str(strconv.FormatFloat(v.Float(), 'g', -1, 32))
	case reflect.Float64:
		p.str(strconv.FormatFloat(v.Float(), 'g', -1, 64))
	case reflect.String:
		p.str(v.String())
	case reflect.Slice:
		if v.IsNil() {
			p.str("<nil>")
			return
		}
		p.list(v)
	case reflect.Array:
		p.list(v)
	case reflect.Map:
		p.mapValue(v)
	case reflect.Struct:
		p.structValue(v)
	default:
		// Channels, functions: not part of any API object.
		p.str(fmt.Sprintf("%v", v.Kind()))
	}
}

func (p *dumper) pointer(v reflect.Value, showType bool) {
	if v.IsNil() {
		if showType {
			p.typ(v.Type())
		}
		p.str("<nil>")
		return
	}
	indirects := 0
	ve := v
	nilFound := false
	for ve.Kind() == reflect.Ptr {
		if ve.IsNil() {
			nilFound = true
			break
		}
		indirects++
		ve = ve.Elem()
	}
	if showType {
		p.str("(" + strings.Repeat("*", indirects) + typeName(ve.Type()) + ")")
	} else {
		p.str("<" + strings.Repeat("*", indirects) + ">")
	}
	if nilFound {
		p.str("<nil>")
		return
	}
	p.value(ve, false)
}

func (p *dumper) list(v reflect.Value) {
	p.str("[")
	for i := 0; i < v.Len(); i++ {
		if i > 0 {
			p.str(" ")
		}
		p.value(v.Index(i), false)
	}
	p.str("]")
}

func (p *dumper) mapValue(v reflect.Value) {
	if v.IsNil() {
		p.str("<nil>")
		return
	}
	keys := v.MapKeys()
	sort.Slice(keys, func(i, j int) bool { return lessKey(keys[i], keys[j]) })
	p.str("map[")
	for i, k := range keys {
		if i > 0 {
			p.str(" ")
		}
		p.value(k, false)
		p.str(":")
		p.value(v.MapIndex(k), false)
	}
	p.str("]")
}

func lessKey(a, b reflect.Value) bool {
	switch a.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() < b.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return a.Uint() < b.Uint()
	case reflect.Bool:
		return !a.Bool() && b.Bool()
	}
	// Every map key of a pod is a string kind.
	return a.String() < b.String()
}

func (p *dumper) field(name string, v reflect.Value) {
	p.str(name + ":")
	p.value(v, true)
}

func (p *dumper) structValue(v reflect.Value) {
	switch v.Type() {
	case typePodSpec:
		p.podSpec(v)
		return
	case typePodStatus:
		p.podStatus(v)
		return
	case typeVolumeSource:
		p.ordered(v, internalVolumeSource)
		return
	case typeTokenProj:
		// ExpirationSeconds is an int64 in the internal type (nil: 0).
		p.str("{")
		p.field("Audience", v.FieldByName("Audience"))
		p.str(" ExpirationSeconds:(int64)")
		var exp int64
		if e := v.FieldByName("ExpirationSeconds"); !e.IsNil() {
			exp = e.Elem().Int()
		}
		p.str(strconv.FormatInt(exp, 10))
		p.str(" ")
		p.field("Path", v.FieldByName("Path"))
		p.str("}")
		return
	}
	t := v.Type()
	p.str("{")
	for i := 0; i < v.NumField(); i++ {
		if i > 0 {
			p.str(" ")
		}
		p.field(t.Field(i).Name, v.Field(i))
	}
	p.str("}")
}

func (p *dumper) ordered(v reflect.Value, names []string) {
	p.str("{")
	for i, n := range names {
		if i > 0 {
			p.str(" ")
		}
		p.field(n, v.FieldByName(n))
	}
	p.str("}")
}

// podSpec writes the internal PodSpec: no DeprecatedServiceAccount (it
// fills an empty ServiceAccountName), and the host namespace fields inside
// an always present SecurityContext.
func (p *dumper) podSpec(v reflect.Value) {
	spec := v.Interface().(v1.PodSpec)
	p.str("{")
	for i, n := range internalPodSpec {
		if i > 0 {
			p.str(" ")
		}
		switch n {
		case "ServiceAccountName":
			sa := spec.ServiceAccountName
			if sa == "" {
				sa = spec.DeprecatedServiceAccount
			}
			p.str("ServiceAccountName:(string)" + sa)
		case "SecurityContext":
			p.str("SecurityContext:(*core.PodSecurityContext){")
			for j, h := range internalHost {
				if j > 0 {
					p.str(" ")
				}
				p.field(h, v.FieldByName(h))
			}
			sc := v.FieldByName("SecurityContext")
			var scv reflect.Value
			if sc.IsNil() {
				scv = reflect.ValueOf(v1.PodSecurityContext{})
			} else {
				scv = sc.Elem()
			}
			for _, f := range internalPodSecurityContext {
				p.str(" ")
				p.field(f, scv.FieldByName(f))
			}
			p.str("}")
		default:
			p.field(n, v.FieldByName(n))
		}
	}
	p.str("}")
}

// podStatus writes the internal PodStatus: no PodIP; it fills PodIPs (and
// wins over a differing first entry).
func (p *dumper) podStatus(v reflect.Value) {
	st := v.Interface().(v1.PodStatus)
	p.str("{")
	for i, n := range internalPodStatus {
		if i > 0 {
			p.str(" ")
		}
		if n == "PodIPs" && st.PodIP != "" && (len(st.PodIPs) == 0 || st.PodIPs[0].IP != st.PodIP) {
			p.field(n, reflect.ValueOf([]v1.PodIP{{IP: st.PodIP}}))
			continue
		}
		p.field(n, v.FieldByName(n))
	}
	p.str("}")
}
