// Package e2e holds kgen's end-to-end tests of the generated Go package and
// its runtime: the MSL signatures against the Go binding tables and the
// inventory, the CPU reference's numbers, cross-compilation, and a
// downstream module that runs `go generate` with `go tool kgen`.
package e2e
