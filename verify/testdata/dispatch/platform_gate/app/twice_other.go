//go:build !ios

package app

import "github.com/kgen-dev/kgen/kgenrt"

// Twice is the reference elsewhere.
func Twice(x, y *kgenrt.Tensor) error { return twiceRef(x, y) }

func twiceRef(x, y *kgenrt.Tensor) error { _, _ = x, y; return nil }
