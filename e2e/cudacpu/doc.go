// Package cudacpu runs the plain-CUDA kernels of kgen's generated CUDA
// libraries on the CPU, so their numbers are checked without a GPU: the
// SIMT GEMM (f32 storage, and the 16-bit fallback for what TMA cannot
// load), the split's row kernels and gated epilogue, and the epilogue
// stages they call; and the generated tensor-core kernels (the quantized
// matmul's tiled and skinny kernels, the attention chain), whose mma.sync,
// ldmatrix and cp.async testdata/shim_mma.h emulates warp by warp from the
// PTX fragment layouts (mma_test.go). The test compiles the .cu exactly as kgen writes it,
// as host C++, with testdata/shim.h standing in for the CUDA runtime and
// the device built-ins (each CUDA thread a fiber on the launching host
// thread, switching only at __syncthreads and the warp shuffles, so a run
// costs one core whatever the block size), and judges the outputs with
// verify/parity, as e2e/cudagpu judges the GPU's. The tests' builds and
// runs are parallel subtests, one core each. Opt-in: it runs where
// $KGEN_NVCC names an nvcc whose ../include holds the CUDA headers and a
// host C++20 compiler exists ($CXX, g++ or clang++). See docs/cuda.md,
// "CUDA kernels on the CPU".
package cudacpu
