// harness.h: the CPU run of one entry point of a generated HIP source
// (e2e/hipcpu), included after the kernel and its wrappers. Usage: run FN
// BLOCKS THREADS DIR [ORDER], where DIR holds the launch's buffers b0, b1, … in
// binding order, the args struct last; FN runs over BLOCKS blocks of
// THREADS threads with the tensors as its device pointers, and every
// buffer is written back as o0, o1, …; ORDER is the order the threads
// of a block run in between waits (kgen_cpu::order: 0 forward, the default,
// 1 reverse, 2 shuffled).
#include <fstream>
#include <iterator>
#include <string>

// kgen_cpu_entry launches one entry point with its typed parameters.
typedef void (*kgen_cpu_entry)(unsigned blocks, unsigned threads, void* const* ptrs, const void* args);
kgen_cpu_entry kgen_cpu_find(const std::string& name); // defined by the test, after

int main(int argc, char** argv) {
    if (argc != 5 && argc != 6) kgen_cpu::die("usage: run FN BLOCKS THREADS DIR [ORDER]");
    if (argc == 6) kgen_cpu::order = unsigned(std::stoul(argv[5]));
    const std::string dir = argv[4];
    kgen_cpu_entry fn = kgen_cpu_find(argv[1]);
    if (fn == nullptr) kgen_cpu::die((std::string("no entry ") + argv[1]).c_str());
    std::vector<std::string> bytes;
    for (int i = 0;; ++i) {
        std::ifstream f(dir + "/b" + std::to_string(i), std::ios::binary);
        if (!f) break;
        bytes.push_back(std::string(std::istreambuf_iterator<char>(f), {}));
    }
    if (bytes.empty()) kgen_cpu::die("no buffers");
    // Device memory: 256-byte aligned and sized exactly, so the address
    // sanitizer sees any access past a tensor.
    std::vector<void*> mem;
    for (auto& b : bytes) {
        void* p = nullptr;
        if (posix_memalign(&p, 256, b.size() ? b.size() : 1) != 0) kgen_cpu::die("out of memory");
        std::memcpy(p, b.data(), b.size());
        mem.push_back(p);
    }
    const unsigned blocks = unsigned(std::stoul(argv[2])), threads = unsigned(std::stoul(argv[3]));
    if (blocks > 0) fn(blocks, threads, mem.data(), mem.back());
    for (size_t i = 0; i < bytes.size(); ++i) {
        std::ofstream f(dir + "/o" + std::to_string(i), std::ios::binary);
        f.write(static_cast<const char*>(mem[i]), std::streamsize(bytes[i].size()));
    }
    for (void* p : mem) std::free(p);
    return 0;
}
