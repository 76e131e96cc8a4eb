"""Benchmark kgen's generated rowwise CUDA kernels on one GPU against PyTorch.

Run by bench/cuda/run_h200.sh after the fatbins are built (needs torch, cupy).
The launch geometry is the Go CUDA port's (kgenrt.CUDARowsPerGroup): 256-thread
blocks, lanes per row = the smallest power of two >= 32 with at most two 16-byte
vectors per lane (capped at the block), rows_per_group = 256 / lanes,
ceildiv(rows, rows_per_group) blocks;
the args struct is passed as its 4-byte fields (rows, cols, rows_per_group,
params). Each [rows, cols] tensor is --n elements (2^27 bf16 = 256 MiB); GB/s
counts x read once and y written once (row vectors once); % is of copy.cu
moving the same bytes in the same run. CUDA events, median of --iters calls.
"""
import argparse, ctypes, glob, json, os, statistics, struct, sys

import cupy as cp
import numpy as np
import torch
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--fatbins", required=True)
p.add_argument("--copy", required=True)
p.add_argument("--n", type=int, default=1 << 27)
p.add_argument("--iters", type=int, default=50)
p.add_argument("--compile", type=int, default=1)
p.add_argument("--cols", default="128,1024,4096,16384")
p.add_argument("--dtypes", default="bf16")
p.add_argument("--out", default="")
a = p.parse_args()

dev = torch.device("cuda")
torch.manual_seed(0)
TG = 256

def timeit(fn, iters=a.iters, warm=5):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(iters):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e))
    return statistics.median(ts)

mods = {}
for f in glob.glob(os.path.join(a.fatbins, "*.fatbin")):
    mods[os.path.basename(f).rsplit("-", 1)[0]] = cp.RawModule(path=f)
copyk = cp.RawModule(path=a.copy).get_function("kgen_copy16")

def ptr(t):
    return np.uint64(t.data_ptr())

def lanes_per_row(cols, esz, tg=TG):
    # kgenrt.CUDALanesPerRow: at most two 16-byte vectors per lane, 32 to tg lanes.
    l = 32
    while l < tg and l * 2 * (16 // esz) < cols:
        l *= 2
    return l

def copy_ceiling(nbytes_one_way):
    x = torch.empty(nbytes_one_way // 2, dtype=torch.int16, device=dev).random_()
    y = torch.empty_like(x)
    n16 = nbytes_one_way // 16
    f = lambda: copyk(((n16 + 255) // 256,), (256,), (ptr(x), ptr(y), np.uint64(n16)))
    ms = timeit(f)
    assert torch.equal(x, y)
    return 2 * nbytes_one_way / ms / 1e6

_cuda = ctypes.CDLL("libcuda.so.1")
_cuda.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3

_cumods = {}

def cufunc(kernel, name):
    """The CUfunction of an entry point: CuPy's, else loaded through the driver."""
    try:
        return mods[kernel].get_function(name).kernel.ptr
    except Exception:
        pass
    if kernel not in _cumods:
        m = ctypes.c_void_p()
        path = glob.glob(os.path.join(a.fatbins, kernel + "-*.fatbin"))[0]
        assert _cuda.cuModuleLoad(ctypes.byref(m), path.encode()) == 0, "cuModuleLoad " + path
        _cumods[kernel] = m
    f = ctypes.c_void_p()
    assert _cuda.cuModuleGetFunction(ctypes.byref(f), _cumods[kernel], name.encode()) == 0, "cuModuleGetFunction " + name
    return f.value

def kgen_launch(kernel, dt, tensors, rows, cols, params):
    # The args struct travels by value as one kernel parameter (its bytes), as
    # the Go port passes it; CuPy's argument list would split it into scalars.
    fn = cufunc(kernel, f"{kernel}_{dt}")
    rpg = TG // lanes_per_row(cols, tensors[0].element_size())
    grid = (rows + rpg - 1) // rpg
    ptrs = [ctypes.c_uint64(t.data_ptr()) for t in tensors]
    blob = struct.pack("<III", rows, cols, rpg) + b"".join(struct.pack("<f", float(x)) for x in params)
    argbuf = (ctypes.c_uint32 * (len(blob) // 4)).from_buffer_copy(blob)
    kp = (ctypes.c_void_p * (len(ptrs) + 1))(*[ctypes.addressof(x) for x in ptrs], ctypes.addressof(argbuf))
    keep = (ptrs, argbuf, kp)
    def f():
        r = _cuda.cuLaunchKernel(ctypes.c_void_p(fn), grid, 1, 1, TG, 1, 1, 0, None, kp, None)
        assert r == 0 and keep, f"cuLaunchKernel {kernel}_{dt}: CUresult {r}"
    return f

TD = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
EPS = 1e-5

def rms(x, w):
    return F.rms_norm(x, (x.shape[-1],), w, EPS)

def sm(x):
    return torch.softmax(x, -1)

def ln(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b, EPS)

def rms_ref(x, w):
    xf = x.float()
    return (xf * torch.rsqrt((xf * xf).mean(-1, keepdim=True) + EPS) * w.float()).to(x.dtype)

rows_out = []
ceil_cache = {}
for dt in a.dtypes.split(","):
    tdt = TD[dt]
    esz = torch.finfo(tdt).bits // 8
    for cols in [int(c) for c in a.cols.split(",")]:
        rows = a.n // cols
        x = (torch.rand(rows, cols, device=dev, dtype=torch.float32) * 16 - 8).to(tdt)
        w = (torch.rand(cols, device=dev, dtype=torch.float32) + 0.5).to(tdt)
        b = (torch.rand(cols, device=dev, dtype=torch.float32) - 0.5).to(tdt)
        moved = 2 * rows * cols * esz
        if moved not in ceil_cache:
            ceil_cache[moved] = copy_ceiling(moved // 2)
        ceil = ceil_cache[moved]
        cases = [
            ("rms_norm", [x, w], (np.float32(EPS),), rms, lambda x, w: rms_ref(x, w), F"F.rms_norm", cols * esz),
            ("softmax", [x], (), sm, lambda x: torch.softmax(x.float(), -1).to(x.dtype), "torch.softmax", 0),
            ("layer_norm", [x, w, b], (np.float32(EPS),), ln, lambda x, w, b: F.layer_norm(x.float(), (cols,), w.float(), b.float(), EPS).to(x.dtype), "F.layer_norm", 2 * cols * esz),
        ]
        for kern, ins, params, tfunc, ref, tname, extra in cases:
            if kern not in mods:
                print(f"skip {kern}: no fatbin", file=sys.stderr)
                continue
            y = torch.full((rows, cols), float("nan"), device=dev, dtype=tdt)
            launch = kgen_launch(kern, dt, ins + [y], rows, cols, params)
            launch(); torch.cuda.synchronize()
            assert not torch.isnan(y).any().item(), f"{kern}_{dt} cols={cols}: unwritten (NaN) elements"
            err = (y.float() - ref(*ins).float()).abs().max().item()
            arms = [("kgen", launch), (tname, lambda: tfunc(*ins))]
            if a.compile:
                torch._dynamo.reset()
                cf = torch.compile(tfunc, dynamic=False)
                cf(*ins)
                arms.append(("torch.compile static", lambda: cf(*ins)))
            for arm, f in arms:
                ms = timeit(f)
                gbs = (moved + extra) / ms / 1e6
                rows_out.append(dict(kernel=kern, dtype=dt, cols=cols, rows=rows, arm=arm, ms=ms, gbs=gbs,
                                     pct=100 * gbs / ceil, ceiling=ceil, maxerr=err if arm == "kgen" else None))
                print(f"{kern:11s} {dt:5s} {cols:6d} {arm:22s} {ms*1e3:9.1f} us {gbs:7.0f} GB/s {100*gbs/ceil:5.1f}% (copy {ceil:.0f}){'  maxerr %.3g' % err if arm == 'kgen' else ''}", flush=True)
            del y

if a.out:
    with open(a.out, "w") as fh:
        json.dump(dict(device=torch.cuda.get_device_name(), torch=torch.__version__, rows=rows_out), fh, indent=1)
print("\n| kernel | dtype | cols | arm | GB/s | % of copy |\n|---|---|---|---|---|---|")
for r in rows_out:
    print(f"| {r['kernel']} | {r['dtype']} | {r['cols']} | {r['arm']} | {r['gbs']:.0f} | {r['pct']:.1f} |")
