package kgenrt

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinels for errors.Is; the typed errors below carry the details.
var (
	// ErrNoPort: the kernel has no usable port for the backend; take the
	// fallback path (the kernel's CPU reference, or your own).
	ErrNoPort = errors.New("kgenrt: no port")
	// ErrDType: a tensor's dtype is not one the kernel was generated for.
	ErrDType = errors.New("kgenrt: unsupported dtype")
	// ErrTensor: a tensor is nil, mis-shaped, too large or overlaps another.
	ErrTensor = errors.New("kgenrt: bad tensor")
)

// noMetalError is why Metal itself (a command buffer, a Metal tensor)
// cannot be had here. errors.Is(err, ErrNoPort) holds, so the fallback that
// covers K.Run covers K.Encode and the command buffer it needs.
type noMetalError struct{ why error }

func (e noMetalError) Error() string        { return "kgenrt: no Metal here: " + e.why.Error() }
func (e noMetalError) Unwrap() error        { return e.why }
func (e noMetalError) Is(target error) bool { return target == ErrNoPort }

// noGPUError is why CUDA or ROCm memory cannot be had here (no driver, no
// device); errors.Is(err, ErrNoPort) holds, as for noMetalError.
type noGPUError struct {
	backend Backend
	why     error
}

func (e noGPUError) Error() string {
	return "kgenrt: no " + e.backend.title() + " here: " + e.why.Error()
}
func (e noGPUError) Unwrap() error        { return e.why }
func (e noGPUError) Is(target error) bool { return target == ErrNoPort }

// PortError is Select's refusal, the only one: the kernel has no port for
// the backend (the slot is nil because the spec says null), or has one that
// cannot run here (Unavailable says why: not darwin, no cgo, no device).
type PortError struct {
	Kernel      string
	Backend     Backend
	Fallback    string // the CPU reference to use instead, when known
	Unavailable error  // nil when the port table has no port at all
}

func (e *PortError) Error() string {
	var b strings.Builder
	if e.Unavailable == nil {
		fmt.Fprintf(&b, "kgen: kernel %s has no %s port (its spec sets %s: null)", e.Kernel, e.Backend, e.Backend)
	} else {
		fmt.Fprintf(&b, "kgen: kernel %s: its %s port cannot run here: %v", e.Kernel, e.Backend, e.Unavailable)
	}
	b.WriteString("; the caller should take its fallback path")
	if e.Fallback != "" {
		fmt.Fprintf(&b, " (e.g. %s)", e.Fallback)
	}
	return b.String()
}

// Is makes errors.Is(err, ErrNoPort) true.
func (e *PortError) Is(target error) bool { return target == ErrNoPort }

// Unwrap returns why the port is unavailable, if it exists.
func (e *PortError) Unwrap() error { return e.Unavailable }

// DTypeError reports a tensor whose dtype the kernel cannot take: not in the
// dtype-key table (Want is T), or not the dtype its binding requires.
type DTypeError struct {
	Kernel string
	Tensor string  // the binding, when the dtype came from a tensor
	DType  DType   // what was passed
	Want   DType   // what the binding requires; T when the table has no such variant
	Pinned bool    // Want is the binding's fixed dtype, not the variant's
	Have   []DType // the dtype-key table's dtypes, when DType is not in it
}

func (e *DTypeError) Error() string {
	if e.Want == T {
		names := make([]string, len(e.Have))
		for i, d := range e.Have {
			names[i] = d.String()
		}
		what := ""
		if e.Tensor != "" {
			what = fmt.Sprintf(" (tensor %s)", e.Tensor)
		}
		return fmt.Sprintf("kgen: kernel %s has no %v variant%s; its dtype-key table has %s", e.Kernel, e.DType, what, strings.Join(names, ", "))
	}
	why := "the variant's dtype"
	if e.Pinned {
		why = "its fixed dtype"
	}
	return fmt.Sprintf("kgen: kernel %s: tensor %s is %v, want %v (%s)", e.Kernel, e.Tensor, e.DType, e.Want, why)
}

// Is makes errors.Is(err, ErrDType) true.
func (e *DTypeError) Is(target error) bool { return target == ErrDType }

// TensorError reports a tensor a launch cannot take.
type TensorError struct {
	Kernel string
	Tensor string
	Role   Role
	Reason string
}

func (e *TensorError) Error() string {
	return fmt.Sprintf("kgen: kernel %s: %s %s %s", e.Kernel, e.Role, e.Tensor, e.Reason)
}

// Is makes errors.Is(err, ErrTensor) true.
func (e *TensorError) Is(target error) bool { return target == ErrTensor }
