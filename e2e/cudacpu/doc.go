// Package cudacpu runs the plain-CUDA kernels of kgen's generated CUDA
// libraries on the CPU, so their numbers are checked without a GPU: the
// SIMT GEMM (f32 storage, and the 16-bit fallback for what TMA cannot
// load), the split's row kernels and gated epilogue, and the epilogue
// stages they call; and the generated tensor-core kernels (the quantized
// matmul's tiled and skinny kernels, the attention chain), whose mma.sync,
// ldmatrix and cp.async testdata/shim_mma.h emulates warp by warp from the
// PTX fragment layouts (mma_test.go). The test compiles the .cu exactly as kgen writes it,
// as host C++, with testdata/shim.h standing in for the CUDA runtime and
// the device built-ins (one std::thread per CUDA thread, std::barrier for
// __syncthreads and the warp shuffles), and judges the outputs with
// verify/parity, as e2e/cudagpu judges the GPU's. Opt-in: it runs where
// $KGEN_NVCC names an nvcc whose ../include holds the CUDA headers and a
// host C++20 compiler exists ($CXX, g++ or clang++). See docs/cuda.md,
// "CUDA kernels on the CPU".
package cudacpu
