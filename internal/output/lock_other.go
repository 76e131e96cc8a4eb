//go:build !unix

package output

// Lock is a no-op where flock does not exist; concurrent gens there are
// still all-or-nothing per file set, but not serialized.
func Lock(root string, exclusive bool) (unlock func(), err error) { return func() {}, nil }
