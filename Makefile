# See README.md. Every target installs what it needs, idempotently.
SHELL := /bin/bash
GO ?= go
OUT := _output

.PHONY: all build run stop down test unit integration images containerd deps clean

all: build

build:
	$(GO) build -o $(OUT)/bin/kubelet ./cmd/kubelet

# README command 1: a standalone node running examples/static-pods.
run:
	hack/node.sh up

stop:
	hack/node.sh stop

down:
	hack/node.sh down

# README command 2.
test:
	hack/test.sh

deps:
	hack/install-deps.sh

clean:
	rm -rf $(OUT)
