package nodestatus

import (
	"errors"

	"k8s.io/apimachinery/pkg/runtime"
)

type runtimeObject = runtime.Object

var errTransient = errors.New("connection refused")
