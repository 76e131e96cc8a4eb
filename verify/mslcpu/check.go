package mslcpu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// CheckSyntax compiles every instantiation in the source with -fsyntax-only
// in a strict mode (device/constant/threadgroup as clang address_space
// attributes so that address-space mistakes are rejected, `#pragma GCC
// poison` for libc names MSL lacks like erf, erff, log1p, expm1, printf and
// for `double`), and returns the compiler's diagnostics as an error
// (a *CompileError; file names in it are kernel.metal).
//
// Strict mode also rejects implicit double promotion (an unsuffixed literal
// such as 0.5 mixed with float) and implicit float narrowing, including
// float -> half, which MSL itself accepts: kgen always casts explicitly.
// Results, failures included, are cached like builds.
func CheckSyntax(ctx context.Context, source []byte) error {
	text, err := within(ctx, "reading the source", func() ([]byte, error) {
		text, err := prepass(source)
		if err != nil {
			return nil, fmt.Errorf("mslcpu: %s: %w", kernelFile, err)
		}
		return text, nil
	})
	if err != nil {
		return err
	}
	tc, err := newToolchain()
	if err != nil {
		return err
	}
	tu := []byte(fmt.Sprintf("#line 1 %q\n%s", kernelFile, text))
	flags := append(append([]string{}, baseFlags...), strictFlags...)
	base := filepath.Join(tc.cache, "s-"+tc.key("syntax", flags, string(tu)))
	if diag, err := os.ReadFile(base + ".err"); err == nil {
		return &CompileError{Diagnostics: string(diag)}
	}
	_, err = cached(base+".ok", func(tmp string) error {
		args := append(append([]string{}, flags...), "-I", tc.shim, "-x", "c++", "-")
		err := tc.compile(ctx, args, tu)
		var ce *CompileError
		if errors.As(err, &ce) {
			if werr := writeAtomic(base+".err", []byte(ce.Diagnostics), 0o644); werr != nil {
				return werr
			}
		}
		if err != nil {
			return err
		}
		return os.WriteFile(tmp, nil, 0o644)
	})
	return err
}
