// Package metal stands for an application's own Metal probe.
package metal

// Available reports whether a Metal device exists.
func Available() bool { return false }
