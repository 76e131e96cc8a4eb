"""The CUDA benchmark: kgen's generated elementwise and rowwise kernels against
PyTorch and a copy ceiling, every arm timed two ways in one run.

Run by bench/cuda/run_h200.sh (needs torch; the fatbins and geometry.json are
built before it). Arms: kgen (its fatbin through cuLaunchKernel, the args
struct by value as the Go port passes it, with the Go port's launch geometry
from geometry.json, i.e. the IR's CUDA launch), the torch function, static
torch.compile (dynamic=False, Dynamo reset per shape), and a 16-byte copy
kernel moving the same bytes (the ceiling, measured per shape in this run).

Timing, per arm and shape, over buffer sets rotated so the data a call
touches is never in L2 (sets cover >= --rotate-mb; one set when a call's
bytes already exceed it):
  back-to-back: --calls calls (rotating the sets) captured in one CUDA
    graph, replayed between two CUDA events, time / calls; the median of
    --reps replays (no host launch time: what a kernel costs in a stream);
  single call: CUDA events around one call, median of --reps (includes the
    launch latency a lone call pays).
GB/s counts each input read once and each output written once (row vectors
once per call); % is of the copy arm's back-to-back GB/s at the same bytes.
Every kgen output is checked for unwritten (NaN) elements and against an f32
torch reference before it is timed.
"""
import argparse, ctypes, json, os, statistics, struct, subprocess, sys, time

import torch
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--fatbins", required=True, help="folder of <kernel>-<sha16>.fatbin")
p.add_argument("--geometry", required=True, help="geometry.json from bench/cuda/geometry")
p.add_argument("--copy", required=True, help="copy.cubin")
p.add_argument("--calls", type=int, default=20)
p.add_argument("--reps", type=int, default=15)
p.add_argument("--rotate-mb", type=int, default=512)
p.add_argument("--compile", type=int, default=1)
p.add_argument("--budget-s", type=float, default=400, help="skip torch.compile arms after this many seconds")
p.add_argument("--rows", default="128x1048576,1024x131072,4096x32768,16384x8192,1024x1024,4096x4096")
p.add_argument("--n", default="134217728,1048576,16777216")
p.add_argument("--row-dtypes", default="bf16,f16")
p.add_argument("--sweep", type=int, default=1, help="also time kgen rowwise at other team widths (same kernel)")
p.add_argument("--out", default="")
a = p.parse_args()
T0 = time.time()
dev = torch.device("cuda")
torch.manual_seed(0)
TD = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
GEOM = {(g["kernel"], g["dtype"], tuple(sorted((k, v) for k, v in g["sizes"].items() if k != "rows_per_group"))): g
        for g in json.load(open(a.geometry))}

cu = ctypes.CDLL("libcuda.so.1")
cu.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 6 + [ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
torch.zeros(1, device=dev)  # the primary context
_mods = {}

def function(module, name):
    if module not in _mods:
        m = ctypes.c_void_p()
        assert cu.cuModuleLoad(ctypes.byref(m), module.encode()) == 0, "cuModuleLoad " + module
        _mods[module] = m
    f = ctypes.c_void_p()
    assert cu.cuModuleGetFunction(ctypes.byref(f), _mods[module], name.encode()) == 0, "cuModuleGetFunction " + name
    return f.value

def fatbin(kernel):
    for f in os.listdir(a.fatbins):
        if f.rsplit("-", 1)[0] == kernel and f.endswith(".fatbin"):
            return os.path.join(a.fatbins, f)
    return None

class Launch:
    """One prepared cuLaunchKernel: pointers and the args bytes by value."""
    def __init__(self, fn, blocks, threads, tensors, words):
        self.fn, self.blocks, self.threads = fn, blocks, threads
        self.ptrs = [ctypes.c_uint64(t.data_ptr()) for t in tensors]
        blob = b"".join(struct.pack("<f", w) if isinstance(w, float) else struct.pack("<I", w) for w in words)
        self.args = (ctypes.c_uint32 * max(1, len(blob) // 4)).from_buffer_copy(blob or b"\0" * 4)
        self.kp = (ctypes.c_void_p * (len(self.ptrs) + 1))(*[ctypes.addressof(x) for x in self.ptrs], ctypes.addressof(self.args))
    def __call__(self):
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)  # a graph capture's stream while capturing
        r = cu.cuLaunchKernel(ctypes.c_void_p(self.fn), self.blocks, 1, 1, self.threads, 1, 1, 0, stream, self.kp, None)
        assert r == 0, f"cuLaunchKernel: CUresult {r}"

def timing(calls):
    """calls: one callable per buffer set. Returns (back-to-back ms, single
    ms). Back-to-back: --calls calls (rotating the sets) captured in a CUDA
    graph, so the host's launch time is not counted, replayed between two
    events; if capture fails, the calls are issued from the host instead."""
    k = len(calls)
    for i in range(max(3, k)):
        calls[i % k]()
    torch.cuda.synchronize()
    b2b, single, j = [], [], 0
    window = lambda: [calls[i % k]() for i in range(a.calls)]
    try:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            window()
        g.replay(); torch.cuda.synchronize()
        window = g.replay
    except Exception as ex:
        print(f"  (graph capture failed: {str(ex).splitlines()[0][:100]}; host-issued back-to-back)", flush=True)
        torch.cuda.synchronize()
    for _ in range(a.reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); window(); e.record(); e.synchronize()
        b2b.append(s.elapsed_time(e) / a.calls)
    for _ in range(a.reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); calls[j % k](); j += 1; e.record(); e.synchronize()
        single.append(s.elapsed_time(e))
    return statistics.median(b2b), statistics.median(single)

def nsets(call_bytes):
    return max(1, -(-a.rotate_mb * 2**20 // call_bytes))

copyfn = function(a.copy, "kgen_copy16")
_ceil = {}

def copy_arm(moved):
    """The copy kernel over moved bytes (half read, half written): its
    (back-to-back, single-call) time in ms."""
    if moved not in _ceil:
        n16 = moved // 2 // 16
        sets = [(torch.empty(n16 * 8, dtype=torch.int16, device=dev).random_(), torch.empty(n16 * 8, dtype=torch.int16, device=dev)) for _ in range(nsets(moved))]
        calls = []
        for x, y in sets:
            l = Launch(copyfn, (n16 + 255) // 256, 256, [x, y], [])
            l.ptrs.append(ctypes.c_uint64(n16))  # copy16's third parameter is a u64, not a struct
            l.kp = (ctypes.c_void_p * 3)(*[ctypes.addressof(q) for q in l.ptrs])
            calls.append(l)
        calls[0](); torch.cuda.synchronize()
        assert torch.equal(sets[0][0], sets[0][1])
        _ceil[moved] = timing(calls)
        del sets
    return _ceil[moved]

RESULTS = []

def record(kind, kernel, dt, shape, arm, moved, t, ceil):
    """ceil: the copy arm's (back-to-back, single) GB/s."""
    b2b, single = t
    r = dict(kind=kind, kernel=kernel, dtype=dt, shape=shape, arm=arm, bytes=moved, b2b_us=b2b * 1e3, single_us=single * 1e3,
             gbs=moved / b2b / 1e6, single_gbs=moved / single / 1e6)
    r["pct"], r["single_pct"] = 100 * r["gbs"] / ceil[0], 100 * r["single_gbs"] / ceil[1]
    RESULTS.append(r)
    print(f"{kind:11s} {kernel:22s} {dt:5s} {shape:>12s} {arm:26s} b2b {r['b2b_us']:9.1f} us {r['gbs']:6.0f} GB/s {r['pct']:5.1f}% | single {r['single_us']:8.1f} us {r['single_pct']:5.1f}%", flush=True)

def run_arms(kind, kernel, dt, shape, moved, kgen_calls, torch_fn, torch_name, sets, tensor_bytes):
    """tensor_bytes: the bytes of the per-element tensors (the copy's size;
    row vectors are a rounding error on it)."""
    ct = copy_arm(tensor_bytes)
    ceil = (tensor_bytes / ct[0] / 1e6, tensor_bytes / ct[1] / 1e6)
    record(kind, kernel, dt, shape, "copy (ceiling)", tensor_bytes, ct, ceil)
    if kgen_calls:
        record(kind, kernel, dt, shape, "kgen", moved, timing(kgen_calls), ceil)
    if torch_fn is not None:
        record(kind, kernel, dt, shape, torch_name, moved, timing([lambda s=s: torch_fn(*s) for s in sets]), ceil)
        if a.compile and time.time() - T0 < a.budget_s:
            torch._dynamo.reset()
            cf = torch.compile(torch_fn, dynamic=False)
            cf(*sets[0])
            record(kind, kernel, dt, shape, "torch.compile static", moved, timing([lambda s=s: cf(*s) for s in sets]), ceil)

EPS = 1e-5

def rand(shape, dt, lo=-8.0, hi=8.0):
    return (torch.rand(*shape, device=dev, dtype=torch.float32) * (hi - lo) + lo).to(TD[dt])

# Rowwise: (kernel, inputs(rows, cols, dt) -> (tensors, row-vector bytes), params, torch function, f32 reference).
ROWS = [
    ("rms_norm", lambda r, c, d: [rand((r, c), d), rand((c,), d, 0.5, 1.5)], [EPS],
     lambda x, w: F.rms_norm(x, (x.shape[-1],), w, EPS), "F.rms_norm",
     lambda x, w: (x.float() * torch.rsqrt((x.float() ** 2).mean(-1, keepdim=True) + EPS) * w.float())),
    ("softmax", lambda r, c, d: [rand((r, c), d)], [], lambda x: torch.softmax(x, -1), "torch.softmax",
     lambda x: torch.softmax(x.float(), -1)),
    ("layer_norm", lambda r, c, d: [rand((r, c), d), rand((c,), d, 0.5, 1.5), rand((c,), d, -0.5, 0.5)], [EPS],
     lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b, EPS), "F.layer_norm",
     lambda x, w, b: F.layer_norm(x.float(), (x.shape[-1],), w.float(), b.float(), EPS)),
]

def row_launch(kernel, dt, rows, cols, tensors, params, rpg=None):
    g = GEOM[(kernel, dt, tuple(sorted({"rows": rows, "cols": cols}.items())))]
    rpg = rpg or g["sizes"]["rows_per_group"]
    blocks = g["blocks"] if rpg == g["sizes"]["rows_per_group"] else -(-rows // rpg)
    return Launch(function(fatbin(kernel), f"{kernel}_{dt}"), blocks, g["threads"], tensors, [rows, cols, rpg] + [float(x) for x in params])

def bench_rows(shape):
    cols, rows = map(int, shape.split("x"))
    for dt in a.row_dtypes.split(","):
        esz = torch.finfo(TD[dt]).bits // 8
        for kernel, make, params, tfn, tname, ref in ROWS:
            try:
                if not fatbin(kernel):
                    print(f"skip {kernel}: no fatbin", file=sys.stderr); continue
                ins0 = make(rows, cols, dt)
                moved = 2 * rows * cols * esz + sum(t.numel() * esz for t in ins0[1:])
                sets = [ins0] + [[ins0[0].clone()] + ins0[1:] for _ in range(nsets(moved) - 1)]
                outs = [torch.full((rows, cols), float("nan"), device=dev, dtype=TD[dt]) for _ in sets]
                calls = [row_launch(kernel, dt, rows, cols, s + [y], params) for s, y in zip(sets, outs)]
                calls[0](); torch.cuda.synchronize()
                y = outs[0]
                assert not torch.isnan(y).any().item(), f"{kernel}_{dt} {shape}: unwritten (NaN) elements"
                err = (y.float() - ref(*ins0)).abs().max().item()
                tol = 2.0 ** -7 * 8 if dt == "bf16" else 2.0 ** -10 * 8
                assert err <= tol, f"{kernel}_{dt} {shape}: max error {err} > {tol}"
                run_arms("rowwise", kernel, dt, f"{rows}x{cols}", moved, calls, tfn, tname, sets, 2 * rows * cols * esz)
                if a.sweep:
                    base = calls[0].blocks
                    for lanes in (4, 8, 16, 32, 64, 128, 256):
                        if lanes * 16 // esz * 8 < cols or lanes * 16 // esz > 4 * cols:  # at most 8 vectors, at least a quarter row
                            continue
                        rpg = 256 // lanes
                        sw = [row_launch(kernel, dt, rows, cols, s + [y], params, rpg) for s, y in zip(sets, outs)]
                        sw[0](); torch.cuda.synchronize()
                        e2 = (outs[0].float() - ref(*ins0)).abs().max().item()
                        b2b, _ = timing(sw)
                        cb = 2 * rows * cols * esz / _ceil[2 * rows * cols * esz][0] / 1e6
                        print(f"  sweep {kernel} {dt} {rows}x{cols} lanes {lanes:3d} (rpg {rpg:3d}): {moved / b2b / 1e6:6.0f} GB/s {100 * moved / b2b / 1e6 / cb:5.1f}% err {e2:.3g}", flush=True)
                del sets, outs, calls

            except Exception:
                report(f"rows {kernel} {dt} {shape}")
# Elementwise: (label, kgen kernel, dtype, inputs, torch function, eager formula in f32).
K0 = 0.7978845608028654
def gelu_tanh_f(x): return F.gelu(x, approximate="tanh")
def gelu_tanh_ref(x): xf = x.float(); return 0.5 * xf * (1 + torch.tanh(K0 * (xf + 0.044715 * xf ** 3)))
ELEMS = [
    ("gelu_tanh", "gelu_tanh", "bf16", 1, gelu_tanh_f, gelu_tanh_ref),
    ("gelu_tanh", "gelu_tanh", "f16", 1, gelu_tanh_f, gelu_tanh_ref),
    ("gelu_tanh", "gelu_tanh", "f32", 1, gelu_tanh_f, gelu_tanh_ref),
    ("gelu_tanh (math: fast)", "gelu_tanh_fast", "bf16", 1, gelu_tanh_f, gelu_tanh_ref),
    ("gelu_tanh (math: fast)", "gelu_tanh_fast", "f16", 1, gelu_tanh_f, gelu_tanh_ref),
    ("gelu_tanh (math: fast)", "gelu_tanh_fast", "f32", 1, gelu_tanh_f, gelu_tanh_ref),
    ("gelu_erf", "gelu_erf", "bf16", 1, lambda x: F.gelu(x), lambda x: F.gelu(x.float())),
    ("silu", "silu", "bf16", 1, lambda x: F.silu(x), lambda x: F.silu(x.float())),
    ("swiglu", "swiglu", "bf16", 2, lambda g, u: F.silu(g) * u, lambda g, u: F.silu(g.float()) * u.float()),
]
def bench_elems(n):
    for label, kernel, dt, nin, tfn, ref in ELEMS:
        try:
            if not fatbin(kernel):
                print(f"skip {kernel}: no fatbin", file=sys.stderr); continue
            esz = torch.finfo(TD[dt]).bits // 8
            moved = (nin + 1) * n * esz
            sets = [[rand((n,), dt) for _ in range(nin)] for _ in range(nsets(moved))]
            outs = [torch.full((n,), float("nan"), device=dev, dtype=TD[dt]) for _ in sets]
            g = GEOM[(kernel, dt, (("n", n),))]
            fn = function(fatbin(kernel), f"{kernel}_{dt}")
            calls = [Launch(fn, g["blocks"], g["threads"], s + [y], [n]) for s, y in zip(sets, outs)]
            calls[0](); torch.cuda.synchronize()
            assert not torch.isnan(outs[0]).any().item(), f"{kernel}_{dt}: unwritten (NaN) elements"
            r = ref(*sets[0])
            bad = ((outs[0].float() - r).abs() > 1e-2 + 2e-2 * r.abs()).sum().item()
            assert bad == 0, f"{kernel}_{dt} n={n}: {bad} elements off the f32 reference by more than 1e-2 + 2e-2 |ref|"
            run_arms("elementwise", label, dt, str(n), moved, calls, tfn, "torch function", sets, moved)
            del sets, outs, calls

        except Exception:
            report(f"elementwise {kernel} {dt} {n}")
# The shapes first (2^27 elements), then the small ones, so a short
# budget drops the compile arms of the small shapes first.
def report(what):
    import traceback
    print(f"FAILED {what}:\n{traceback.format_exc()}", flush=True)
    FAILURES.append(what)
    torch.cuda.synchronize()

def guarded(f, arg):
    """One shape's arms; a failure is reported and the run goes on."""
    try:
        f(arg)
    except Exception:
        import traceback
        print(f"FAILED {f.__name__}({arg}):\n{traceback.format_exc()}", flush=True)
        FAILURES.append(f"{f.__name__}({arg})")
        torch.cuda.synchronize()

FAILURES = []
rows_shapes, ns = a.rows.split(","), [int(n) for n in a.n.split(",")]
big = lambda shape: eval(shape.replace("x", "*")) == 1 << 27
for shape in [s for s in rows_shapes if big(s)]:
    guarded(bench_rows, shape)
for n in [n for n in ns if n == 1 << 27]:
    guarded(bench_elems, n)
for shape in [s for s in rows_shapes if not big(s)]:
    guarded(bench_rows, shape)
for n in [n for n in ns if n != 1 << 27]:
    guarded(bench_elems, n)

clk = subprocess.run(["nvidia-smi", "--query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,power.draw", "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
if a.out:
    json.dump(dict(device=torch.cuda.get_device_name(), torch=torch.__version__, clocks_after=clk, method=vars(a), rows=RESULTS), open(a.out, "w"), indent=1)

# The table for docs/cuda.md: per shape, kgen / torch function / compile as % of copy, back-to-back (single call).
print(f"\nGPU after the run: {clk}; {time.time() - T0:.0f} s; failed: {FAILURES or 'none'}\n")
print("| kind | kernel | dtype | shape | copy GB/s | kgen % | torch fn % | compile % | kgen single-call µs (% of copy's) |")
print("|---|---|---|---|---|---|---|---|---|")
keys = []
for r in RESULTS:
    k = (r["kind"], r["kernel"], r["dtype"], r["shape"])
    if k not in keys:
        keys.append(k)
for k in keys:
    arms = {r["arm"]: r for r in RESULTS if (r["kind"], r["kernel"], r["dtype"], r["shape"]) == k}
    tf = next((r for n, r in arms.items() if n not in ("kgen", "copy (ceiling)", "torch.compile static")), None)
    f = lambda r: f"{r['pct']:.1f}" if r else "-"
    kg = arms.get("kgen")
    print(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {arms['copy (ceiling)']['gbs']:.0f} | {f(kg)} | {f(tf)} | {f(arms.get('torch.compile static'))} | "
          f"{kg['single_us']:.1f} ({kg['single_pct']:.0f}%) |" if kg else "|")
