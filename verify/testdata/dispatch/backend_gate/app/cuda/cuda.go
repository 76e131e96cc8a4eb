// Package cuda stands for an application's own CUDA probe.
package cuda

// Available reports whether a CUDA device exists.
func Available() bool { return false }
