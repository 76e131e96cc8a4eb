// Package templates embeds kgen's output templates so that the kgen binary
// works outside this repository (go run github.com/kgen-dev/kgen/cmd/kgen@v…).
//
// cfam/ holds the frame of every Metal and CUDA kernel file; msl/ and
// cuda/ hold each dialect's prose (notes.tmpl) and fixed blocks (prelude,
// vector loads, team reductions), all plain text/template. Generated Go is
// written with jennifer, and the Objective-C of the Metal path is the same
// for every kernel, so it lives once in package kgenrt rather than in
// templates here.
package templates

import "embed"

// FS holds every template, addressed as "cfam/<name>", "msl/<name>", "cuda/<name>" or "hip/<name>".
//
//go:embed cfam msl cuda hip
var FS embed.FS
