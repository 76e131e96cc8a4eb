// shim.h: the CUDA that kgen's plain-CUDA kernels use, for a host C++
// compiler, so those kernels run on the CPU (e2e/cudacpu). Included
// before the generated .cu, whose `K<<<grid, block, smem, stream>>>(args)`
// launches the test rewrites to kgen_cpu_launch(grid, block, smem,
// stream)(K, args). Every CUDA thread of a block is a std::thread; the
// blocks of a grid run one after another, so a `__shared__` variable (a
// function static here) is the memory of the block that runs; __syncthreads is a
// std::barrier over the block's threads, and each warp of 32 has its own
// barrier and exchange slots for the shuffles. A thread that returns drops
// out of both barriers (as an exited thread stops counting on the GPU); a
// shuffle that reads a lane which has left, or runs with a partial mask,
// aborts the run.
#pragma once
#include <cuda_fp16.h> // host implementations of the 16-bit conversions
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>
#include <barrier>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#undef __shared__
#define __shared__ static
#undef __launch_bounds__
#define __launch_bounds__(...)
#undef __restrict__
#define __restrict__ __restrict

// The device math the kernels call that the host library lacks: CUDA's
// rsqrtf is within 2 ulp, the host's is correctly rounded before the
// division (the judge's bound holds either way); __frcp_rn is IEEE 1/x.
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __int_as_float(int i) {
    float f;
    std::memcpy(&f, &i, sizeof f);
    return f;
}

inline thread_local uint3 threadIdx, blockIdx;
inline thread_local dim3 blockDim, gridDim;

namespace kgen_cpu {

// warp is one warp's rendezvous: a barrier of its live lanes, the values
// a shuffle publishes and which lanes have returned.
struct warp {
    explicit warp(int lanes) : bar(lanes) {}
    std::barrier<> bar;
    unsigned long long slot[32] = {};
    unsigned wide[32][8] = {}; // the registers a warp-wide matrix operation publishes (shim_mma.h)
    bool gone[32] = {};
};

// The block and warp of the calling CUDA thread.
inline thread_local std::barrier<>* block_bar = nullptr;
inline thread_local warp* my_warp = nullptr;

[[noreturn]] inline void die(const char* what) {
    std::fprintf(stderr, "kgen_cpu: %s (block %u,%u,%u thread %u,%u,%u)\n", what, blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z);
    std::fflush(stderr);
    std::abort();
}

} // namespace kgen_cpu

inline void __syncthreads() { kgen_cpu::block_bar->arrive_and_wait(); }

inline unsigned kgen_cpu_lane() {
    return (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) % 32;
}

// __shfl_xor_sync: every lane publishes v, waits for the warp, reads lane
// ^ o's value and waits again (so the slot is not overwritten by the next
// shuffle before every lane has read it).
template <typename T>
T __shfl_xor_sync(unsigned mask, T v, int o, int width = 32) {
    static_assert(sizeof(T) <= sizeof(unsigned long long), "a shuffled value fits a slot");
    if (mask != 0xffffffffu || width != 32) kgen_cpu::die("__shfl_xor_sync with a partial mask or width");
    kgen_cpu::warp& w = *kgen_cpu::my_warp;
    const unsigned lane = kgen_cpu_lane(), src = (lane ^ unsigned(o)) % 32;
    std::memcpy(&w.slot[lane], &v, sizeof(T));
    w.bar.arrive_and_wait();
    if (w.gone[src]) kgen_cpu::die("__shfl_xor_sync reads a lane that has returned");
    T r;
    std::memcpy(&r, &w.slot[src], sizeof(T));
    w.bar.arrive_and_wait();
    return r;
}

namespace kgen_cpu {

// launcher runs a kernel over its grid, one block after another, on one
// std::thread per CUDA thread of a block: the same threads run every
// block, meeting at a barrier between blocks whose completion step gives
// the next block fresh barriers (a thread that returned has dropped out
// of the last block's).
struct launcher {
    dim3 grid, block;
    template <typename K, typename... A>
    void operator()(K kernel, A... args) const {
        const unsigned nt = block.x * block.y * block.z;
        if (nt == 0 || nt % 32 != 0 || nt > 1024) die("a block of threads that is not a whole number of warps up to 1024");
        if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.y > 65535 || grid.z > 65535) die("a grid the GPU refuses (cudaErrorInvalidConfiguration)");
        const unsigned long long blocks = 1ull * grid.x * grid.y * grid.z;
        unsigned long long b = 0; // the block that runs
        std::unique_ptr<std::barrier<>> bar;
        std::vector<std::unique_ptr<warp>> warps(nt / 32);
        auto fresh = [&] {
            bar = std::make_unique<std::barrier<>>(nt);
            for (auto& w : warps) w = std::make_unique<warp>(32);
        };
        fresh();
        auto next_block = [&]() noexcept { ++b, fresh(); };
        std::barrier<decltype(next_block)> between(nt, next_block);
        std::vector<std::thread> threads;
        threads.reserve(nt);
        for (unsigned t = 0; t < nt; ++t)
            threads.emplace_back([&, t] {
                threadIdx = uint3{t % block.x, (t / block.x) % block.y, t / (block.x * block.y)};
                blockDim = block;
                gridDim = grid;
                while (b < blocks) {
                    blockIdx = uint3{unsigned(b % grid.x), unsigned(b / grid.x % grid.y), unsigned(b / (1ull * grid.x * grid.y))};
                    block_bar = bar.get();
                    my_warp = warps[t / 32].get();
                    kernel(args...);
                    my_warp->gone[t % 32] = true;
                    my_warp->bar.arrive_and_drop();
                    block_bar->arrive_and_drop();
                    between.arrive_and_wait();
                }
            });
        for (auto& th : threads) th.join();
    }
};

} // namespace kgen_cpu

inline kgen_cpu::launcher kgen_cpu_launch(dim3 grid, dim3 block, size_t smem = 0, cudaStream_t = nullptr) {
    if (smem != 0) kgen_cpu::die("dynamic shared memory");
    return kgen_cpu::launcher{grid, block};
}

// The runtime calls of the entry points: memory of the exact size (for
// the address sanitizer), no errors.
extern "C" {
inline cudaError_t cudaGetLastError(void) { return cudaSuccess; }
inline const char* cudaGetErrorString(cudaError_t) { return "no error (kgen_cpu)"; }
inline cudaError_t cudaGetDevice(int* d) { *d = 0; return cudaSuccess; }
inline cudaError_t cudaMemPoolCreate(cudaMemPool_t* p, const struct cudaMemPoolProps*) {
    static int pool;
    *p = reinterpret_cast<cudaMemPool_t>(&pool);
    return cudaSuccess;
}
inline cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t, enum cudaMemPoolAttr, void*) { return cudaSuccess; }
inline cudaError_t cudaMallocFromPoolAsync(void** p, size_t n, cudaMemPool_t, cudaStream_t) {
    return posix_memalign(p, 256, n ? n : 1) == 0 ? cudaSuccess : cudaErrorMemoryAllocation;
}
inline cudaError_t cudaFreeAsync(void* p, cudaStream_t) {
    std::free(p);
    return cudaSuccess;
}
}
