package kgenrt

import "testing"

func TestCUDARowsPerGroup(t *testing.T) {
	for _, c := range []struct{ cols, esz, lanes int }{
		{1, 2, 32}, {128, 2, 32}, {512, 2, 32}, {513, 2, 64}, {1024, 2, 64}, {4096, 2, 256}, {16384, 2, 256},
		{256, 4, 32}, {1024, 4, 128}, {8192, 4, 256},
	} {
		if got := CUDALanesPerRow(c.cols, 256, c.esz); got != c.lanes {
			t.Errorf("CUDALanesPerRow(%d, 256, %d) = %d, want %d", c.cols, c.esz, got, c.lanes)
		}
		if got := CUDARowsPerGroup(c.cols, 256, c.esz); got != 256/c.lanes {
			t.Errorf("CUDARowsPerGroup(%d, 256, %d) = %d", c.cols, c.esz, got)
		}
		if CUDALanesPerRow(c.cols, 256, c.esz) > LanesPerRow(c.cols, 256) {
			t.Errorf("cols %d: the CUDA team is wider than the Metal one", c.cols)
		}
	}
}
