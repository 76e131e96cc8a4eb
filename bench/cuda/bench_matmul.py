"""Benchmark kgen's CUDA matmuls (CUTLASS libraries built by `kgen cuda`) on
one GPU against cuBLAS and the torch arms, bf16.

Paired rounds: in every round each arm is measured right after cuBLAS alone
(same shape, same round), the GPU idle --idle seconds before each
measurement so the clocks are back at full speed; the SM clock and power are
read after each measurement (nvidia-smi). A measurement is --reps launches
back to back between two CUDA events (large M), or the replay of a CUDA
graph holding --reps launches (M <= 128, where eager timing measures Python's
launch overhead); the result is the time per launch. Reported: the median
over rounds of each arm's time and of its ratio to cuBLAS in the same round.

The kgen arm calls the library's host function (the same one the Go port
calls) through ctypes on torch's current stream.
"""
import argparse, ctypes, glob, json, os, statistics, subprocess, sys, time

import torch
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--libs", required=True, help="folder of <kernel>-<hash>.so")
p.add_argument("--rounds", type=int, default=3)
p.add_argument("--reps", type=int, default=20)
p.add_argument("--idle", type=float, default=0.3)
p.add_argument("--compile", type=int, default=1, help="torch.compile arms (static shapes)")
p.add_argument("--autotune", type=int, default=0,
               help="also torch.compile(mode='max-autotune-no-cudagraphs') (minutes of Inductor autotuning per shape)")
p.add_argument("--budget", type=float, default=300, help="seconds; later compile arms are skipped past it")
p.add_argument("--total", type=float, default=240, help="seconds; later kernels are skipped past it")
p.add_argument("--ms", default="", help="only these M (comma-separated)")
p.add_argument("--kernels", default="matmul_bias_gelu,matmul_bias_residual,matmul,matmul_bias")
p.add_argument("--alias", default="", help="NAME=KERNEL,...: libraries NAME measured as built-in KERNEL's epilogue (e.g. a spec with its own cuda_tiles)")
p.add_argument("--out", default="")
a = p.parse_args()
t_start = time.time()
dev = torch.device("cuda")
torch.manual_seed(0)
K0 = 0.7978845608028654

libs = {}
for f in glob.glob(os.path.join(a.libs, "*.so")):
    libs[os.path.basename(f).rsplit("-", 1)[0]] = ctypes.CDLL(f)


def kgen_fn(kernel, tensors, m, n, k):
    fn = getattr(libs[kernel], kernel + "_bf16")
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
    ptrs = (ctypes.c_void_p * len(tensors))(*[t.data_ptr() for t in tensors])
    args = (ctypes.c_uint32 * 3)(m, n, k)
    err = ctypes.create_string_buffer(512)

    def run():
        rc = fn(torch.cuda.current_stream().cuda_stream, ptrs, args, err, 512)
        if rc != 0:
            raise RuntimeError(f"{kernel}: {err.value.decode()}")
    return run


def clocks():
    try:
        q = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits"],
                           capture_output=True, text=True, timeout=10).stdout.strip().split(",")
        return int(float(q[0])), float(q[1])
    except Exception:
        return 0, 0.0


def measure(fn, graph):
    """Time per launch (µs) of reps launches after an idle pause."""
    time.sleep(a.idle)
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    if graph is not None:
        s.record(); graph.replay(); e.record()
    else:
        s.record()
        for _ in range(a.reps):
            fn()
        e.record()
    e.synchronize()
    return s.elapsed_time(e) * 1000 / a.reps


def capture(name, fn):
    """A CUDA graph of reps launches, or None (then timed back to back)."""
    try:
        fn(); torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, capture_error_mode="relaxed"):
            for _ in range(a.reps):
                fn()
        torch.cuda.synchronize()
        return g
    except Exception as ex:
        print(f"graph capture of {name} failed, timed back to back: {ex}", file=sys.stderr)
        torch.cuda.synchronize()
        return None


def gelu(h):
    return 0.5 * h * (1 + torch.tanh(K0 * (h + 0.044715 * h * h * h)))


SHAPES = [(16, 4096, 4096), (128, 4096, 4096), (4096, 4096, 4096), (2048, 14336, 4096), (8192, 8192, 8192)]
results = []


def arms_for(kernel, x, w, bias, res, y):
    """The torch arms of one epilogue: name → (callable, reference output)."""
    wt = w.t()  # F.linear takes [n, k]; a transposed view, no copy
    if kernel == "matmul":
        return {}, lambda: x @ w
    if kernel == "matmul_bias":
        eager = lambda: x @ w + bias
        return {"eager": eager, "F.linear": lambda: F.linear(x, wt, bias)}, eager
    if kernel == "matmul_bias_gelu":
        eager = lambda: F.gelu(x @ w + bias, approximate="tanh")
        return {"eager": eager,
                "F.linear+gelu": lambda: F.gelu(F.linear(x, wt, bias), approximate="tanh"),
                "addmm_act": lambda: torch._addmm_activation(bias, x, w, use_gelu=True)}, \
            lambda: gelu(x.float() @ w.float() + bias.float())
    if kernel == "matmul_bias_residual":
        eager = lambda: x @ w + bias + res
        return {"eager": eager, "F.linear+res": lambda: F.linear(x, wt, bias) + res}, eager
    raise KeyError(kernel)


def compiled(kernel, x, w, bias, res, mode=None):
    torch._dynamo.reset()
    if kernel == "matmul_bias_gelu":
        f = torch.compile(lambda x, w, b: F.gelu(x @ w + b, approximate="tanh"), dynamic=False, mode=mode)
        return lambda: f(x, w, bias)
    if kernel == "matmul_bias_residual":
        f = torch.compile(lambda x, w, b, r: x @ w + b + r, dynamic=False, mode=mode)
        return lambda: f(x, w, bias, res)
    return None


if a.ms:
    SHAPES = [s for s in SHAPES if str(s[0]) in a.ms.split(",")]
alias = dict(x.split("=") for x in a.alias.split(",") if x)
for name in a.kernels.split(","):
    kernel = alias.get(name, name)  # the epilogue; name: the library
    if name not in libs:
        print(f"no library for {name}", file=sys.stderr)
        continue
    for (m, n, k) in SHAPES:
        if time.time() - t_start > a.total:
            print(f"skipped {name} {m}x{n}x{k}: past --total", file=sys.stderr)
            continue
        x = (torch.randn(m, k, device=dev) / 8).to(torch.bfloat16)
        w = (torch.randn(k, n, device=dev) / 8).to(torch.bfloat16)
        bias = torch.randn(n, device=dev).to(torch.bfloat16)
        res = torch.randn(m, n, device=dev).to(torch.bfloat16)
        y = torch.full((m, n), float("nan"), device=dev, dtype=torch.bfloat16)
        tensors = [x, w] + ([bias] if kernel != "matmul" else []) + ([res] if kernel == "matmul_bias_residual" else []) + [y]
        arms, ref = arms_for(kernel, x, w, bias, res, y)
        arms = {"kgen": kgen_fn(name, tensors, m, n, k), **arms}
        modes = ([("compile", None)] if a.compile else []) + ([("autotune", "max-autotune-no-cudagraphs")] if a.autotune else [])
        for arm, mode in modes:
            if time.time() - t_start > a.budget:
                break
            c = compiled(kernel, x, w, bias, res, mode)
            if c is not None:
                try:
                    c(); arms[arm] = c
                except Exception as ex:
                    print(f"{arm} {kernel} {m}x{n}x{k}: {ex}", file=sys.stderr)
        cublas = lambda: x @ w
        # Correctness of the kgen arm: no NaN left, close to torch's f32-accumulated result.
        arms["kgen"](); torch.cuda.synchronize()
        want = ref().float()
        err = ((y.float() - want).abs() / (1 + want.abs())).max().item()
        nan = torch.isnan(y).any().item()
        graph = m <= 128
        gs = {name: capture(name, f) if graph else None for name, f in [("cublas", cublas)] + list(arms.items())}
        for name, f in [("cublas", cublas)] + list(arms.items()):
            for _ in range(3):
                f()
        torch.cuda.synchronize()
        rounds = {name: [] for name in arms}
        base, clk = [], []
        for r in range(a.rounds):
            for name, f in arms.items():
                cb = measure(cublas, gs["cublas"])
                t = measure(f, gs[name])
                base.append(cb)
                rounds[name].append((t, t / cb))
            clk.append(clocks())
        row = {"kernel": name, "m": m, "n": n, "k": k,
               "timing": ("graph" if all(g is not None for g in gs.values()) else "graph*") if graph else "back-to-back",
               "cublas_us": statistics.median(base), "max_rel_err": err, "nan": nan,
               "sm_mhz": [min(c[0] for c in clk), max(c[0] for c in clk)], "watts_max": max(c[1] for c in clk)}
        for name, v in rounds.items():
            row[name + "_us"] = statistics.median(t for t, _ in v)
            row[name + "_ratio"] = statistics.median(q for _, q in v)
        results.append(row)
        print(json.dumps(row), flush=True)
        del gs

if a.out:
    json.dump(results, open(a.out, "w"), indent=1)
# The short table last: µs (ratio to cuBLAS in the same rounds).
names = ["kgen", "eager", "F.linear", "F.linear+gelu", "addmm_act", "F.linear+res", "compile", "autotune"]
print("\n| kernel | M×N×K | timing | cuBLAS µs | " + " | ".join(names) + " | SM MHz | kgen err |")
print("|---|---|---|---|" + "---|" * len(names) + "---|---|")
for r in results:
    cells = [f"{r[n + '_us']:.2f} ({r[n + '_ratio']:.3f})" if n + "_us" in r else "–" for n in names]
    print(f"| {r['kernel']} | {r['m']}×{r['n']}×{r['k']} | {r['timing']} | {r['cublas_us']:.2f} | " + " | ".join(cells) +
          f" | {r['sm_mhz'][0]}–{r['sm_mhz'][1]} | {r['max_rel_err']:.2g}{' NaN!' if r['nan'] else ''} |")
print(f"total {time.time() - t_start:.0f} s")
