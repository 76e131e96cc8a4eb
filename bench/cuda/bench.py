"""Benchmark kgen's generated CUDA kernels on one GPU against PyTorch.

Run by bench/cuda/run_h200.sh after the fatbins are built (needs torch, cupy).
Each arm is timed with CUDA events around one call, median of --iters calls
after warm-up; GB/s counts each input read once and each output written once;
% is of the 16-byte copy kernel moving the same bytes (copy.cu). Data is
several times the L2 (H200: 50 MB) so every call streams from HBM.
"""
import argparse, glob, hashlib, json, math, os, statistics, sys

import cupy as cp
import numpy as np
import torch
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--fatbins", required=True)
p.add_argument("--extra", default="", help="folder of extra .fatbin (e.g. math: fast variants)")
p.add_argument("--copy", required=True, help="copy.cubin")
p.add_argument("--n", type=int, default=1 << 27, help="elements per tensor (1<<27 bf16 = 256 MiB)")
p.add_argument("--iters", type=int, default=100)
p.add_argument("--compile", type=int, default=1)
p.add_argument("--out", default="")
a = p.parse_args()

dev = torch.device("cuda")
torch.manual_seed(0)

def timeit(fn, iters=a.iters, warm=10):
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

def module(path):
    return cp.RawModule(path=path)

mods = {}
for f in glob.glob(os.path.join(a.fatbins, "*.fatbin")) + (glob.glob(os.path.join(a.extra, "*.fatbin")) if a.extra else []):
    name = os.path.basename(f).rsplit("-", 1)[0]
    mods[name] = module(f)
copymod = module(a.copy)
copyk = copymod.get_function("kgen_copy16")

def ptr(t):
    return np.uint64(t.data_ptr())

def kgen_launch(kernel, dt, tensors, n, params=(), ept=8, tg=256):
    fn = mods[kernel].get_function(f"{kernel}_{dt}")
    threads = (n + ept - 1) // ept
    grid = ((threads + tg - 1) // tg,)
    args = tuple(ptr(t) for t in tensors) + (np.uint32(n),) + tuple(params)
    return lambda: fn(grid, (tg,), args)

def copy_ceiling(nbytes_one_way):
    x = torch.empty(nbytes_one_way // 2, dtype=torch.int16, device=dev).random_()
    y = torch.empty_like(x)
    n16 = nbytes_one_way // 16
    grid = ((n16 + 255) // 256,)
    f = lambda: copyk(grid, (256,), (ptr(x), ptr(y), np.uint64(n16)))
    ms = timeit(f)
    assert torch.equal(x, y)
    return 2 * nbytes_one_way / ms / 1e6

TD = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
EPT = {"f32": 4, "f16": 8, "bf16": 8}
K0 = 0.7978845608028654

def gelu_tanh_eager(x):
    xf = x.float()
    return (0.5 * xf * (1 + torch.tanh(K0 * (xf + 0.044715 * xf * xf * xf)))).to(x.dtype)

def silu_eager(x):
    xf = x.float()
    return (xf * torch.sigmoid(xf)).to(x.dtype)

def swiglu_eager(g, u):
    gf = g.float()
    return (gf * torch.sigmoid(gf) * u.float()).to(g.dtype)

def gelu_erf_eager(x):
    xf = x.float()
    return (0.5 * xf * (1 + torch.erf(xf * 0.7071067811865476))).to(x.dtype)

CASES = [
    # (label, kgen kernel, dtype, n inputs, eager formula, torch function)
    ("gelu_tanh", "gelu_tanh", "bf16", 1, gelu_tanh_eager, lambda x: F.gelu(x, approximate="tanh")),
    ("gelu_tanh", "gelu_tanh", "f16", 1, gelu_tanh_eager, lambda x: F.gelu(x, approximate="tanh")),
    ("gelu_tanh", "gelu_tanh", "f32", 1, gelu_tanh_eager, lambda x: F.gelu(x, approximate="tanh")),
    ("gelu_tanh (math: fast)", "gelu_tanh_fast", "bf16", 1, gelu_tanh_eager, lambda x: F.gelu(x, approximate="tanh")),
    ("gelu_tanh (math: fast)", "gelu_tanh_fast", "f16", 1, gelu_tanh_eager, lambda x: F.gelu(x, approximate="tanh")),
    ("gelu_erf", "gelu_erf", "bf16", 1, gelu_erf_eager, lambda x: F.gelu(x)),
    ("silu", "silu", "bf16", 1, silu_eager, lambda x: F.silu(x)),
    ("swiglu", "swiglu", "bf16", 2, swiglu_eager, lambda g, u: F.silu(g) * u),
]

rows = []
ceil_cache = {}
for label, kern, dt, nin, eager, tfunc in CASES:
    if kern not in mods:
        print(f"skip {kern}: no fatbin", file=sys.stderr)
        continue
    n = a.n
    tdt = TD[dt]
    ins = [(torch.rand(n, device=dev, dtype=torch.float32) * 16 - 8).to(tdt) for _ in range(nin)]
    y = torch.full((n,), float("nan"), device=dev, dtype=tdt)
    esz = torch.finfo(tdt).bits // 8
    moved = (nin + 1) * n * esz
    if moved not in ceil_cache:
        ceil_cache[moved] = copy_ceiling(moved // 2)
    ceil = ceil_cache[moved]
    launch = kgen_launch(kern, dt, ins + [y], n, ept=EPT[dt])
    launch(); torch.cuda.synchronize()
    ref = eager(*ins)
    err = (y.float() - ref.float()).abs().max().item()
    assert not torch.isnan(y).any().item(), f"{kern}_{dt}: unwritten (NaN) elements"
    arms = [("kgen", launch), ("torch eager (formula)", lambda: eager(*ins)), ("torch function", lambda: tfunc(*ins))]
    if a.compile:
        cf = torch.compile(eager, dynamic=False)
        cf(*ins)
        arms.append(("torch.compile static", lambda: cf(*ins)))
    for arm, f in arms:
        ms = timeit(f)
        gbs = moved / ms / 1e6
        rows.append(dict(kernel=label, dtype=dt, arm=arm, n=n, mbytes=moved / 2**20, ms=ms, gbs=gbs,
                         pct=100 * gbs / ceil, ceiling=ceil, maxerr_vs_eager=err if arm == "kgen" else None))
        print(f"{label:24s} {dt:5s} {arm:24s} {ms*1e3:9.1f} us {gbs:7.0f} GB/s {100*gbs/ceil:5.1f}% (copy {ceil:.0f})", flush=True)

if a.out:
    with open(a.out, "w") as fh:
        json.dump(dict(device=torch.cuda.get_device_name(), torch=torch.__version__, cupy=cp.__version__, rows=rows), fh, indent=1)
print("\n| kernel | dtype | arm | GB/s | % of copy |\n|---|---|---|---|---|")
for r in rows:
    print(f"| {r['kernel']} | {r['dtype']} | {r['arm']} | {r['gbs']:.0f} | {r['pct']:.1f} |")
