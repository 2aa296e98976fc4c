//go:build tools

// Package tools records the commands built from other modules, so that go mod tidy keeps them.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
