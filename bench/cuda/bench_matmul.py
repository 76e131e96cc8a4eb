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


def kgen_fn(kernel, tensors, m, n, k, params=()):
    fn = getattr(libs[kernel], kernel + "_bf16")
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]  # args by pointer
    ptrs = (ctypes.c_void_p * len(tensors))(*[t.data_ptr() for t in tensors])
    # The args struct: m, n, k (u32) then the f32 params, in spec order.
    fields = [(c, ctypes.c_uint32) for c in "mnk"] + [(f"p{i}", ctypes.c_float) for i in range(len(params))]
    args = type("Args", (ctypes.Structure,), {"_fields_": fields})(m, n, k, *params)
    argp = ctypes.cast(ctypes.pointer(args), ctypes.c_void_p)
    err = ctypes.create_string_buffer(512)

    def run():
        rc = fn(torch.cuda.current_stream().cuda_stream, ptrs, argp, err, 512)
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
EPS = 1e-5


def rms(h, g):
    hf = h.float()
    return hf * torch.rsqrt(hf.pow(2).mean(-1, keepdim=True) + EPS) * g.float()


def operands(kernel, m, n, k):
    """The library's tensors in binding order (output last), its params, and
    the named tensors the torch arms use."""
    r = lambda *s: (torch.randn(*s, device=dev) / 8).to(torch.bfloat16)
    x = r(m, k)
    t = {"x": x}
    if kernel == "matmul_silu_mul":  # Bs stored [n, k] (x @ w.T), as the spec says
        t["wg"], t["wu"] = r(n, k), r(n, k)
        t["wgu"] = torch.cat([t["wg"], t["wu"]])  # the stacked weight torch's best arm uses
        order = ["x", "wg", "wu"]
    else:
        t["w"] = r(k, n)
        order = ["x", "w"]
    extra = {"matmul_bias": ["bias"], "matmul_bias_gelu": ["bias"], "matmul_bias_residual": ["bias", "res"],
             "matmul_rms_norm": ["g"], "matmul_layer_norm": ["gw", "gb"]}.get(kernel, [])
    for e in extra:
        t[e] = (torch.randn(m, n, device=dev) if e == "res" else torch.randn(n, device=dev)).to(torch.bfloat16)
    t["y"] = torch.full((m, n), float("nan"), device=dev, dtype=torch.bfloat16)
    params = [EPS] if kernel in ("matmul_rms_norm", "matmul_layer_norm") else []
    return [t[o] for o in order + extra + ["y"]], params, t


def torch_fns(kernel, t):
    """The torch arms of one epilogue (name → callable), the f32 reference of
    kgen's output, and the function torch.compile takes (or None)."""
    x, y = t["x"], t["y"]
    f32 = lambda v: v.float()
    if kernel == "matmul_silu_mul":
        wg, wu, wgu = t["wg"], t["wu"], t["wgu"]
        n = wg.shape[0]

        def stacked(x, wgu):
            h = x @ wgu.t()
            return F.silu(h[:, :n]) * h[:, n:]
        eager = lambda: F.silu(x @ wg.t()) * (x @ wu.t())
        ref = lambda: F.silu(f32(x) @ f32(wg).t()) * (f32(x) @ f32(wu).t())
        return {"eager": eager, "stacked": lambda: stacked(x, wgu)}, ref, (stacked, (x, wgu))
    w = t["w"]
    wt = w.t()  # F.linear takes [n, k]; a transposed view, no copy
    n = w.shape[1]
    if kernel == "matmul":
        return {}, lambda: x @ w, None
    if kernel == "matmul_bias":
        eager = lambda: x @ w + t["bias"]
        return {"eager": eager, "F.linear": lambda: F.linear(x, wt, t["bias"])}, eager, None
    if kernel == "matmul_bias_gelu":
        b = t["bias"]
        fn = lambda x, w, b: F.gelu(x @ w + b, approximate="tanh")
        return {"eager": lambda: fn(x, w, b),
                "F.linear": lambda: F.gelu(F.linear(x, wt, b), approximate="tanh"),
                "addmm_act": lambda: torch._addmm_activation(b, x, w, use_gelu=True)}, \
            lambda: gelu(f32(x) @ f32(w) + f32(b)), (fn, (x, w, b))
    if kernel == "matmul_bias_residual":
        b, res = t["bias"], t["res"]
        fn = lambda x, w, b, r: x @ w + b + r
        return {"eager": lambda: fn(x, w, b, res), "F.linear": lambda: F.linear(x, wt, b) + res}, \
            lambda: fn(x, w, b, res), (fn, (x, w, b, res))
    if kernel == "matmul_rms_norm":
        g = t["g"]
        fn = lambda x, w, g: F.rms_norm(x @ w, (n,), g, EPS)
        return {"eager": lambda: fn(x, w, g)}, lambda: rms(f32(x) @ f32(w), g), (fn, (x, w, g))
    if kernel == "matmul_layer_norm":
        gw, gb = t["gw"], t["gb"]
        fn = lambda x, w, gw, gb: F.layer_norm(x @ w, (n,), gw, gb, EPS)
        return {"eager": lambda: fn(x, w, gw, gb)}, \
            lambda: F.layer_norm(f32(x) @ f32(w), (n,), f32(gw), f32(gb), EPS), (fn, (x, w, gw, gb))
    if kernel == "matmul_softmax":
        fn = lambda x, w: torch.softmax(x @ w, -1)
        return {"eager": lambda: fn(x, w)}, lambda: torch.softmax(f32(x) @ f32(w), -1), (fn, (x, w))
    raise KeyError(kernel)


def compiled(spec, mode=None):
    if spec is None:
        return None
    torch._dynamo.reset()
    fn, args = spec
    f = torch.compile(fn, dynamic=False, mode=mode)
    return lambda: f(*args)


def bench_one(lib, kernel, m, n, k):
    tensors, params, t = operands(kernel, m, n, k)
    y = t["y"]
    arms, ref, spec = torch_fns(kernel, t)
    arms = {"kgen": kgen_fn(lib, tensors, m, n, k, params), **arms}
    modes = ([("compile", None)] if a.compile else []) + ([("autotune", "max-autotune-no-cudagraphs")] if a.autotune else [])
    for arm, mode in modes:
        if time.time() - t_start > a.budget:
            break
        c = compiled(spec, mode)
        if c is not None:
            try:
                c(); arms[arm] = c
            except Exception as ex:
                print(f"{arm} {kernel} {m}x{n}x{k}: {ex}", file=sys.stderr)
    x = t["x"]
    w = t.get("w", t.get("wgu"))
    cublas = (lambda: x @ w) if "w" in t else (lambda: x @ w.t())  # the GEMM alone (silu_mul: both Bs stacked)
    # Correctness of the kgen arm: no NaN left, close to torch's f32-accumulated result.
    arms["kgen"](); torch.cuda.synchronize()
    want = ref().float()
    err = ((y.float() - want).abs() / (1 + want.abs())).max().item()
    nan = torch.isnan(y).any().item()
    graph = m <= 128
    gs = {arm: capture(arm, f) if graph else None for arm, f in [("cublas", cublas)] + list(arms.items())}
    for arm, f in [("cublas", cublas)] + list(arms.items()):
        for _ in range(3):
            f()
    torch.cuda.synchronize()
    rounds = {arm: [] for arm in arms}
    base, clk = [], []
    for r in range(a.rounds):
        for arm, f in arms.items():
            cb = measure(cublas, gs["cublas"])
            tm = measure(f, gs[arm])
            base.append(cb)
            rounds[arm].append((tm, tm / cb))
        clk.append(clocks())
    row = {"kernel": lib, "m": m, "n": n, "k": k,
           "timing": ("graph" if all(g is not None for g in gs.values()) else "graph*") if graph else "back-to-back",
           "cublas_us": statistics.median(base), "max_rel_err": err, "nan": nan,
           "sm_mhz": [min(c[0] for c in clk), max(c[0] for c in clk)], "watts_max": max(c[1] for c in clk)}
    for arm, v in rounds.items():
        row[arm + "_us"] = statistics.median(tm for tm, _ in v)
        row[arm + "_ratio"] = statistics.median(q for _, q in v)
    results.append(row)
    print(json.dumps(row), flush=True)
    if a.out:  # after every row: a run cut short keeps what it measured
        json.dump(results, open(a.out, "w"), indent=1)


if a.ms:
    SHAPES = [s for s in SHAPES if str(s[0]) in a.ms.split(",")]
alias = dict(x.split("=") for x in a.alias.split(",") if x)
for lib in a.kernels.split(","):
    kernel = alias.get(lib, lib)  # the epilogue; lib: the library
    if lib not in libs:
        print(f"no library for {lib}", file=sys.stderr)
        continue
    for (m, n, k) in SHAPES:
        if time.time() - t_start > a.total:
            print(f"skipped {lib} {m}x{n}x{k}: past --total", file=sys.stderr)
            continue
        try:
            bench_one(lib, kernel, m, n, k)
        except Exception as ex:  # one failing arm or shape must not lose the rest of the run
            print(f"FAILED {lib} {m}x{n}x{k}: {ex!r}", file=sys.stderr, flush=True)
        torch.cuda.empty_cache()

if a.out:
    json.dump(results, open(a.out, "w"), indent=1)
# The short table last: µs (ratio to cuBLAS in the same rounds).
names = ["kgen", "eager", "F.linear", "addmm_act", "stacked", "compile", "autotune"]
print("\n| kernel | M×N×K | timing | cuBLAS µs | " + " | ".join(names) + " | kgen vs best torch | SM MHz | kgen err |")
print("|---|---|---|---|" + "---|" * len(names) + "---|---|---|")
for r in results:
    cells = [f"{r[n + '_us']:.2f} ({r[n + '_ratio']:.3f})" if n + "_us" in r else "–" for n in names]
    torch_us = [r[n + "_us"] for n in names[1:] if n + "_us" in r]
    best = f"{min(torch_us) / r['kgen_us']:.3f}×" if torch_us else "–"
    print(f"| {r['kernel']} | {r['m']}×{r['n']}×{r['k']} | {r['timing']} | {r['cublas_us']:.2f} | " + " | ".join(cells) +
          f" | {best} | {r['sm_mhz'][0]}–{r['sm_mhz'][1]} | {r['max_rel_err']:.2g}{' NaN!' if r['nan'] else ''} |")
print(f"total {time.time() - t_start:.0f} s")
