package staticpod

import (
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"io"
	"reflect"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

// uidFor derives a static pod's UID exactly as the upstream kubelet (v1.37)
// does, so that a node handed from one kubelet to the other finds its
// static pods under the same UID (same containers, same pod directory,
// same mirror pod) and restarts nothing.
//
// Upstream decodes the manifest into the API server's internal Pod type,
// applies the v1 defaults, and hashes with FNV-128a (v1.34 used MD5) the
// spew dump (k8s.io/apimachinery/pkg/util/dump.ForHash, i.e. "%#v" with
// sorted map keys) of that internal object, followed by "host:<node>" and
// "file:<path>" for a file, or "url:<url>" for a URL. The internal type
// lives in k8s.io/kubernetes, which this kubelet does not import. In
// v1.37 every struct a pod is made of has, internally, the fields of its v1
// twin in the same order with the same types (the conversion is a memory
// copy), so its dump is the dump of the v1 object with package core's type
// names (writeInternalPod). In v1.34 the internal PodSpec, PodStatus,
// PodSecurityContext and VolumeSource still had other layouts. pod must be the
// decoded, defaulted pod before the kubelet names it; namespace is the
// namespace as the manifest wrote it (upstream hashes before defaulting
// it).
//
// The same bytes from the same place thus always give the same UID, and
// any edit gives a new one (an edited static pod is replaced, not updated
// in place).
func uidFor(pod *v1.Pod, namespace, source, origin, nodeName string) types.UID {
	h := fnv.New128a()
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
	if g := cp.Spec.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		one := int64(1) // upstream's v1 defaulting of a Pod
		cp.Spec.TerminationGracePeriodSeconds = &one
	}
	p.str("(*core.Pod)")
	p.value(reflect.ValueOf(cp), false)
}

const corePkg = "k8s.io/api/core/v1"

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
