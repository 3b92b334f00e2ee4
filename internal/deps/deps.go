//go:build tools

// Package deps pins the libraries the kubelet is built on, so that go.mod and
// go.sum carry them before every package uses them. Built only with -tags tools.
package deps

import (
	_ "github.com/distribution/reference"
	_ "github.com/fsnotify/fsnotify"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/spf13/cobra"
	_ "github.com/spf13/pflag"
	_ "google.golang.org/grpc"
	_ "k8s.io/api/coordination/v1"
	_ "k8s.io/api/core/v1"
	_ "k8s.io/apimachinery/pkg/util/validation"
	_ "k8s.io/client-go/informers"
	_ "k8s.io/client-go/kubernetes"
	_ "k8s.io/client-go/tools/clientcmd"
	_ "k8s.io/client-go/tools/record"
	_ "k8s.io/client-go/util/flowcontrol"
	_ "k8s.io/client-go/util/workqueue"
	_ "k8s.io/component-base/logs"
	_ "k8s.io/component-helpers/scheduling/corev1"
	_ "k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	_ "k8s.io/cri-api/pkg/apis/runtime/v1"
	_ "k8s.io/cri-client/pkg"
	_ "k8s.io/cri-streaming/pkg/streaming"
	_ "k8s.io/klog/v2"
	_ "k8s.io/kubelet/config/v1beta1"
	_ "k8s.io/utils/clock"
	_ "sigs.k8s.io/yaml"
)
