package volume

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Plugin directory names under pods/<uid>/volumes, upstream's.
const (
	dirEmptyDir    = "kubernetes.io~empty-dir"
	dirConfigMap   = "kubernetes.io~configmap"
	dirSecret      = "kubernetes.io~secret"
	dirDownwardAPI = "kubernetes.io~downward-api"
	dirProjected   = "kubernetes.io~projected"
)

// source is one volume type's behaviour.
type source interface {
	// kind names the type as the pod spec does ("configMap").
	kind() string
	// describe names the volume's source for messages
	// (configMap "app-config").
	describe() string
	// pluginDir is the directory under pods/<uid>/volumes the volume
	// lives in, or "" for volumes used where they are (hostPath, PVCs).
	pluginDir() string
	// setUp prepares the volume and returns its host path. It runs on
	// every pod sync (and, for refreshed types, every refresh), so it must
	// be idempotent and cheap when nothing changed.
	setUp(ctx context.Context, s *setup) (string, error)
	// readOnly forces the volume read-only in every container.
	readOnly() bool
	// refreshed types are set up again periodically and when an object
	// they show changes.
	refreshed() bool
}

// newSource returns the source of a pod volume, or an error naming its
// type when this node cannot provide it.
func newSource(pod *v1.Pod, v *v1.Volume) (source, error) {
	switch s := &v.VolumeSource; {
	case s.EmptyDir != nil:
		return &emptyDir{src: s.EmptyDir}, nil
	case s.HostPath != nil:
		return &hostPath{src: s.HostPath}, nil
	case s.ConfigMap != nil:
		return &configMap{src: s.ConfigMap}, nil
	case s.Secret != nil:
		return &secret{src: s.Secret}, nil
	case s.DownwardAPI != nil:
		return &downwardAPI{src: s.DownwardAPI}, nil
	case s.Projected != nil:
		return &projected{src: s.Projected}, nil
	case s.PersistentVolumeClaim != nil:
		return &claim{name: s.PersistentVolumeClaim.ClaimName, ro: s.PersistentVolumeClaim.ReadOnly}, nil
	case s.Ephemeral != nil:
		return &claim{name: pod.Name + "-" + v.Name, ephemeral: true}, nil
	case s.CSI != nil:
		return &csiInline{vol: v}, nil
	case s.Image != nil:
		return &imageVolume{src: s.Image}, nil
	}
	return nil, &UnsupportedError{Volume: v.Name, Type: TypeOf(v)}
}

// TypeOf names a volume's type as the pod spec spells it
// ("awsElasticBlockStore"), or "unknown".
func TypeOf(v *v1.Volume) string { return setField(v.VolumeSource) }

// setField names (by its JSON name) the one pointer field set in a
// VolumeSource or PersistentVolumeSource.
func setField(src any) string {
	rv := reflect.ValueOf(src)
	rt := rv.Type()
	for i := 0; i < rt.NumField(); i++ {
		f := rv.Field(i)
		if f.Kind() == reflect.Pointer && !f.IsNil() {
			name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
			return name
		}
	}
	return "unknown"
}

// UnsupportedError is a volume type this node cannot provide.
type UnsupportedError struct {
	Volume, Type string
	// Detail says more where there is more to say ("" for none).
	Detail string
}

func (e *UnsupportedError) Error() string {
	msg := fmt.Sprintf("volume %q has type %s, which this node cannot provide", e.Volume, e.Type)
	if e.Detail != "" {
		msg += " (" + e.Detail + ")"
	}
	return msg
}

func defaultMode(m *int32) int32 {
	if m == nil {
		return 0o644
	}
	return *m
}
