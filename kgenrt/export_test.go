package kgenrt

import "unsafe"

// PrepareCUDA exposes the CUDA port's launch preparation to the external
// tests (which may import generated packages): the blocks, and the args
// struct as the kernel receives it.
func PrepareCUDA(c *Call, ptrs []DevicePtr) (uint32, []byte, error) {
	var buf launchBuf
	blocks, err := newCUDAGeom(c.Kernel).prepare(c, ptrs, &buf)
	if err != nil {
		return 0, nil, err
	}
	args := unsafe.Slice((*byte)(buf.params[len(ptrs)]), len(c.Args))
	return blocks, append([]byte(nil), args...), nil
}
