// Package app launches kgen kernels the way the rules want: through the
// generated kernels' Run and Encode, falling back on ErrNoPort.
package app

import (
	"errors"
	"fmt"

	"example.com/fixture/gen/kernels"
	"github.com/kgen-dev/kgen/kgenrt"
)

// Gelu runs GELU on b, or on the CPU when Select refuses.
func Gelu(b kgenrt.Backend, x, y *kgenrt.Tensor) error {
	err := kernels.Gelu.Run(b, x, y)
	if errors.Is(err, kgenrt.ErrNoPort) {
		return kernels.Gelu.Reference(x, y)
	}
	if err != nil {
		return fmt.Errorf("gelu: %w", err)
	}
	return nil
}

// unary is what both kernels offer.
type unary interface {
	Run(b kgenrt.Backend, x, y *kgenrt.Tensor) error
	Reference(x, y *kgenrt.Tensor) error
}

// Apply runs any unary kernel, with the same fallback.
func Apply(k unary, b kgenrt.Backend, x, y *kgenrt.Tensor) error {
	if err := k.Run(b, x, y); !errors.Is(err, kgenrt.ErrNoPort) {
		return err
	}
	return k.Reference(x, y)
}

// Batch encodes both kernels into one command buffer.
func Batch(cb *kgenrt.CommandBuffer, x, y, z *kgenrt.Tensor) error {
	if err := kernels.Gelu.Encode(cb, x, y); err != nil {
		return fmt.Errorf("batch: gelu: %w", err)
	}
	return kernels.Twice.Encode(cb, y, z)
}

// Pipeline asks the kernel about the backend it will launch on, and
// chains launches; a port-less backend takes the CPU path.
func Pipeline(b kgenrt.Backend, x, y, z *kgenrt.Tensor) error {
	if kernels.Gelu.Available(b) && kernels.Twice.Available(b) {
		if err := kernels.Gelu.Run(b, x, y); err != nil {
			return err
		}
		return kernels.Twice.Run(b, y, z)
	}
	if err := Apply(kernels.Gelu, b, x, y); err != nil {
		return err
	}
	return Apply(kernels.Twice, b, y, z)
}

// Label names a backend for logs: it compares backends, but launches
// nothing, so it is not dispatch code.
func Label(b kgenrt.Backend) string {
	if b == kgenrt.Metal {
		return "Apple GPU"
	}
	switch b {
	case kgenrt.CUDA:
		return "NVIDIA GPU"
	}
	return b.String()
}

// Check reports a missing device for a diagnostic command; it launches
// nothing, so its own message is its business.
func Check(gpus int) error {
	if gpus == 0 {
		return errors.New("no gpu: metal not available")
	}
	return nil
}

// Run reports whether a launch failed for lack of a port, and says which.
func Run(b kgenrt.Backend, x, y *kgenrt.Tensor) (string, error) {
	err := kernels.Gelu.Run(b, x, y)
	var pe *kgenrt.PortError
	switch {
	case errors.As(err, &pe):
		return "cpu: " + pe.Error(), kernels.Gelu.Reference(x, y)
	case err == kgenrt.ErrNoPort:
		return "unreachable", err
	}
	return Label(b), err
}
