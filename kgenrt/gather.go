package kgenrt

// GatherAt is the flat index of coordinates at in a row-major tensor of
// shape dims, and true; or false when any coordinate is outside [0, dim)
// (negative included): an indexed read there yields 0 and a positioned
// write is not performed (docs/indexing.md). It is the one bounds rule the
// generated kernels mirror.
func GatherAt(dims []int, at ...int32) (int, bool) {
	if len(at) != len(dims) {
		return 0, false
	}
	flat := 0
	for i, c := range at {
		if c < 0 || int(c) >= dims[i] {
			return 0, false
		}
		flat = flat*dims[i] + int(c)
	}
	return flat, true
}
