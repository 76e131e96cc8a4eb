package kgenrt

import (
	"runtime"
	"sync"
)

// MatMulF32 returns A·B as m×n float32 values, row-major, accumulated in
// float32: the accumulators of a matmul kernel's CPU reference. A is
// logically [m, k] (stored [k, m] when aColMajor), B [k, n] (stored [n, k]
// when bColMajor); elements are widened to float32 on load. The product is
// blocked (2×2 outputs per inner loop, columns in cache-sized panels) and
// spread over GOMAXPROCS goroutines; each output is one float32 sum over k
// in order, two products at a time.
func MatMulF32(a *Tensor, aColMajor bool, b *Tensor, bColMajor bool, m, n, k int) []float32 {
	ar := make([]float32, m*k) // A, row-major
	bt := make([]float32, n*k) // B transposed: column j of B is row j here
	for i := range m {
		for p := range k {
			ar[i*k+p] = a.Float32At(at(i, p, m, k, aColMajor))
		}
	}
	for p := range k {
		for j := range n {
			bt[j*k+p] = b.Float32At(at(p, j, k, n, bColMajor))
		}
	}
	c := make([]float32, m*n)
	parallelRows(m, func(i0, i1 int) {
		const panel = 64
		for j0 := 0; j0 < n; j0 += panel {
			j1 := min(j0+panel, n)
			for i := i0; i < i1; i += 2 {
				for j := j0; j < j1; j += 2 {
					block2x2(ar, bt, c, i, j, i1, j1, n, k)
				}
			}
		}
	})
	return c
}

// at is the storage index of logical element (r, c) of a rows×cols matrix.
func at(r, c, rows, cols int, colMajor bool) int {
	if colMajor {
		return c*rows + r
	}
	return r*cols + c
}

// block2x2 computes outputs (i, j), (i, j+1), (i+1, j), (i+1, j+1) where
// they are below (iEnd, jEnd).
func block2x2(ar, bt, c []float32, i, j, iEnd, jEnd, n, k int) {
	i2, j2 := min(i+1, iEnd-1), min(j+1, jEnd-1) // a tail repeats the last row or column
	a0, a1 := ar[i*k:(i+1)*k], ar[i2*k:(i2+1)*k]
	b0, b1 := bt[j*k:(j+1)*k], bt[j2*k:(j2+1)*k]
	var c00, c01, c10, c11 float32
	for p := range a0 {
		x0, x1, y0, y1 := a0[p], a1[p], b0[p], b1[p]
		c00 += x0 * y0
		c01 += x0 * y1
		c10 += x1 * y0
		c11 += x1 * y1
	}
	c[i*n+j], c[i*n+j2], c[i2*n+j], c[i2*n+j2] = c00, c01, c10, c11
}

// parallelRows splits rows [0, m) into even chunks over GOMAXPROCS
// goroutines.
func parallelRows(m int, f func(i0, i1 int)) {
	workers := min(runtime.GOMAXPROCS(0), max(1, m/16))
	chunk := (m + workers - 1) / workers
	chunk += chunk % 2 // whole 2-row blocks per worker
	var wg sync.WaitGroup
	for i0 := 0; i0 < m; i0 += chunk {
		wg.Add(1)
		go func(i0 int) {
			defer wg.Done()
			f(i0, min(i0+chunk, m))
		}(i0)
	}
	wg.Wait()
}

// MatMul64 returns A·B as m×n float64 values, row-major, with A and B as in
// MatMulF32 but given as float64 slices: the accumulators of a matmul
// kernel's Reference64 (each product of two float32 values is exact in
// float64; the sums round at 2^-53).
func MatMul64(a []float64, aColMajor bool, b []float64, bColMajor bool, m, n, k int) []float64 {
	c := make([]float64, m*n)
	bt := make([]float64, n*k)
	for p := range k {
		for j := range n {
			bt[j*k+p] = b[at(p, j, k, n, bColMajor)]
		}
	}
	parallelRows(m, func(i0, i1 int) {
		row := make([]float64, k)
		for i := i0; i < i1; i++ {
			for p := range k {
				row[p] = a[at(i, p, m, k, aColMajor)]
			}
			for j := range n {
				var s float64
				for p, x := range row {
					s += x * bt[j*k+p]
				}
				c[i*n+j] = s
			}
		}
	})
	return c
}
