// Package templates embeds kgen's output templates so that the kgen binary
// works outside this repository (go run github.com/kgen-dev/kgen/cmd/kgen@v…).
//
// msl/ holds the Metal Shading Language kernel templates (text/template with
// sprig's hermetic functions); go/ holds the C and Objective-C halves of the
// cgo launchers, the only generated code that jennifer cannot write.
package templates

import "embed"

// FS holds every template, addressed as "msl/<name>" and "go/<name>".
//
//go:embed msl
var FS embed.FS
