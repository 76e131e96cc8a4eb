// Package app refuses in its own words around launches (mlxcel's second
// rule: hand-written guards drifted, cited predicates that did not exist and
// named the wrong entry point).
package app

import (
	"errors"
	"fmt"

	"example.com/fixture/gen/kernels"
	"github.com/kgen-dev/kgen/kgenrt"
)

// Gelu guards the launch with Available and its own error.
func Gelu(b kgenrt.Backend, x, y *kgenrt.Tensor) error {
	if !kernels.Gelu.Available(b) {
		return fmt.Errorf("gelu: backend %v unavailable", b)
	}
	return kernels.Gelu.Run(b, x, y)
}

// Twice rebuilds Select's refusal by hand.
func Twice(b kgenrt.Backend, x, y *kgenrt.Tensor) error {
	if _, err := kernels.Twice.Select(b); err != nil {
		return &kgenrt.PortError{Kernel: "twice", Backend: b}
	}
	return kernels.Twice.Run(b, x, y)
}

// Sentinel returns the sentinel itself.
func Sentinel(b kgenrt.Backend, x, y *kgenrt.Tensor) error {
	if kernels.Gelu.Available(b) {
		return kernels.Gelu.Run(b, x, y)
	}
	return kgenrt.ErrNoPort
}

// Message replaces the launch's error with a message of its own.
func Message(x, y *kgenrt.Tensor) error {
	if err := kernels.Gelu.Run(kgenrt.Metal, x, y); err != nil {
		return errors.New("no metal port for gelu")
	}
	return nil
}
