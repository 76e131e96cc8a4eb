// Package templates embeds kgen's output templates so that the kgen binary
// works outside this repository (go run github.com/kgen-dev/kgen/cmd/kgen@v…).
//
// msl/ holds the Metal Shading Language kernel templates (text/template with
// sprig's hermetic functions). Generated Go is written with jennifer, and the
// Objective-C of the Metal path is the same for every kernel, so it lives
// once in package kgenrt rather than in templates here.
package templates

import "embed"

// FS holds every template, addressed as "msl/<name>" or "cuda/<name>".
//
//go:embed msl cuda
var FS embed.FS
