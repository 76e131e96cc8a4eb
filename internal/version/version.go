// Package version holds kgen's version. It is a constant, not read from the
// build, so that generated headers are byte-identical whichever way kgen was
// built (go run, go install, go tool) from the same source.
package version

// Version is kgen's release version.
const Version = "v0.1.0"
