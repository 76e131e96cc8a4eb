"""Runs two builds of one rowwise kernel on the same inputs and counts the
output elements whose bits differ: the check that a change meant to leave
the arithmetic alone (the let cache, ir.Rows.LetCache) does. Shapes cover
the vector cache path (cols a multiple of the vector), the strided vector
path (rows wider than the cache) and the scalar path (odd widths).

  python3 same_bits.py OLD.fatbin NEW.fatbin KERNEL [PARAM ...]

The launch is the CUDA rule of the kernel's IR with --vectors 16-byte
vectors per lane (ir.Rows.CUDAVectors), 256 threads; params follow the
three size fields, f32 unless they parse as int (i32).
"""
import argparse, ctypes, struct, sys

import torch

p = argparse.ArgumentParser()
p.add_argument("old"); p.add_argument("new"); p.add_argument("kernel"); p.add_argument("params", nargs="*")
p.add_argument("--vectors", type=int, default=4)
p.add_argument("--shapes", default="4096x128,1024x1024,256x4096,64x8192,32x16384,777x1000,300x1001,129x40")
a = p.parse_args()
dev = torch.device("cuda")
torch.zeros(1, device=dev)
cu = ctypes.CDLL("libcuda.so.1")
cu.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 6 + [ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]

def function(path, name):
    m, f = ctypes.c_void_p(), ctypes.c_void_p()
    assert cu.cuModuleLoad(ctypes.byref(m), path.encode()) == 0, path
    assert cu.cuModuleGetFunction(ctypes.byref(f), m, name.encode()) == 0, name
    return f.value

def launch(fn, blocks, tensors, words):
    ptrs = [ctypes.c_uint64(t.data_ptr()) for t in tensors]
    blob = b"".join(struct.pack("<i", w) if isinstance(w, int) else struct.pack("<f", w) for w in words)
    args = (ctypes.c_uint32 * (len(blob) // 4)).from_buffer_copy(blob)
    kp = (ctypes.c_void_p * (len(ptrs) + 1))(*[ctypes.addressof(x) for x in ptrs], ctypes.addressof(args))
    assert cu.cuLaunchKernel(ctypes.c_void_p(fn), blocks, 1, 1, 256, 1, 1, 0, None, kp, None) == 0

params = [int(x) if x.lstrip("-").isdigit() else float(x) for x in a.params]
bad = 0
for dt, td in (("f32", torch.float32), ("f16", torch.float16), ("bf16", torch.bfloat16)):
    fns = [function(f, f"{a.kernel}_{dt}") for f in (a.old, a.new)]
    esz = torch.finfo(td).bits // 8
    for shape in a.shapes.split(","):
        rows, cols = map(int, shape.split("x"))
        lanes = 1
        while lanes < 256 and 16 * a.vectors // esz * lanes < cols:
            lanes *= 2
        rpg = 256 // lanes
        x = ((torch.rand(rows, cols, device=dev) * 16 - 8)).to(td)
        ys = []
        for fn in fns:
            y = torch.full((rows, cols), float("nan"), device=dev, dtype=td)
            launch(fn, -(-rows // rpg), [x, y], [rows, cols, rpg] + params)
            ys.append(y)
        torch.cuda.synchronize()
        diff = (ys[0].view(torch.int16 if esz == 2 else torch.int32) != ys[1].view(torch.int16 if esz == 2 else torch.int32)).sum().item()
        nan = torch.isnan(ys[1]).sum().item()
        bad += diff + nan
        print(f"{a.kernel} {dt:4s} {shape:>10s} lanes {lanes:3d}: {diff} elements differ in bits, {nan} NaN", flush=True)
print(f"same_bits {a.kernel}: {'OK' if bad == 0 else 'DIFFER'} ({bad})")
sys.exit(1 if bad else 0)
