"""The quantized matmul benchmark (issue 24 item 3): kgen's CUDA port of
qmatmul_mlx4 (MLX affine 4-bit, group 64, bf16) against cuBLAS bf16 on the
dequantized weights (F.linear), torch's int4 kernel (tinygemm:
torch.ops.aten._weight_int4pack_mm, weights packed by
_convert_weight_to_int4pack, the same codes, scales and zero points) and a
device-to-device copy of the same bytes (the ceiling), at M = 1, 4, 16, 128,
4096 for weights (N×K) 4096×4096, 4096×14336 and 14336×4096; plus kgen's
Q4_0 and Q8_0 ports at the decode M.

Run by bench/cuda/quant_h200.sh (needs torch; `kgen cuda`'s binaries,
copy.cubin and geometry.json built before it). The kgen arm calls what the
Go port calls for the form it picks by m (geometry.json's entry,
ir.Kernel.CUDAForms): a library's host function (the kernels with a dense
form: int f(stream, ptrs, args, err, errlen)) or a fatbin's entry point
through cuLaunchKernel with the port's geometry. At M >= 128 it also runs
the dense form itself (dequantization + CUTLASS, the kernel's own host
function) and the 64x64 tiled kernel, to place the threshold.

Timing, per arm and shape, over buffer sets rotated so no call finds its
data in L2 (sets cover >= --rotate-mb): back-to-back = --calls calls in one
CUDA graph replayed between two events, time / calls, median of --reps;
single = events around one call, median of --reps. Every output is checked
against the f32 product of x and the exactly dequantized weights before it
is timed. Bytes counted: the packed weights with their scales (the bytes
the kernel must read) plus x and y; the copy moves as many (half read, half
written).
"""
import argparse, ctypes, json, os, statistics, struct, subprocess, sys, time

import torch
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--fatbins", required=True)
p.add_argument("--geometry", required=True)
p.add_argument("--copy", required=True)
p.add_argument("--calls", type=int, default=20)
p.add_argument("--reps", type=int, default=15)
p.add_argument("--rotate-mb", type=int, default=512)
p.add_argument("--ms", default="1,4,16,128,4096")
p.add_argument("--weights", default="4096x4096,4096x14336,14336x4096", help="N x K")
p.add_argument("--ggml-ms", default="1,16")
p.add_argument("--variants", default="", help="folder of variant fatbins (quant_prepare.sh): skinny16.fatbin")
p.add_argument("--out", default="")
a = p.parse_args()
T0 = time.time()
dev = torch.device("cuda")
torch.manual_seed(0)
BF = torch.bfloat16

cu = ctypes.CDLL("libcuda.so.1")
cu.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 6 + [ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
torch.zeros(1, device=dev)
_mods = {}


def function(path, name):
    if path not in _mods:
        m = ctypes.c_void_p()
        assert cu.cuModuleLoad(ctypes.byref(m), path.encode()) == 0, "cuModuleLoad " + path
        _mods[path] = m
    f = ctypes.c_void_p()
    assert cu.cuModuleGetFunction(ctypes.byref(f), _mods[path], name.encode()) == 0, "cuModuleGetFunction " + name
    return f.value


def binary(kernel, ext):
    for f in os.listdir(a.fatbins):
        if f.rsplit("-", 1)[0] == kernel and f.endswith(ext):
            return os.path.join(a.fatbins, f)
    return None


def fatbin(kernel):
    f = binary(kernel, ".fatbin")
    if f is None:
        raise FileNotFoundError(kernel)
    return f


_libs = {}


class LibCall:
    """One prepared call of a kgen CUDA library's host function: the stream,
    the device pointers in binding order, the args struct's bytes."""
    def __init__(self, path, host, tensors, words):
        if path not in _libs:
            _libs[path] = ctypes.CDLL(path)
        self.fn = getattr(_libs[path], host)
        self.fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
        self.fn.restype = ctypes.c_int
        self.ptrs = (ctypes.c_void_p * len(tensors))(*[t.data_ptr() for t in tensors])
        self.args = (ctypes.c_uint32 * len(words))(*words)
        self.err = ctypes.create_string_buffer(512)
        self.host = host

    def __call__(self):
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        r = self.fn(stream, ctypes.addressof(self.ptrs), ctypes.addressof(self.args), self.err, 512)
        assert r == 0, f"{self.host}: {r}: {self.err.value.decode()}"


class Launch:
    """One prepared cuLaunchKernel: device pointers, then the args struct (u32 words) by value."""
    def __init__(self, fn, blocks, threads, tensors, words):
        self.fn, self.blocks, self.threads = fn, blocks, threads
        self.ptrs = [ctypes.c_uint64(t.data_ptr()) for t in tensors]
        blob = b"".join(struct.pack("<I", w) for w in words)
        self.args = (ctypes.c_uint32 * len(words)).from_buffer_copy(blob)
        self.kp = (ctypes.c_void_p * (len(self.ptrs) + 1))(*[ctypes.addressof(x) for x in self.ptrs], ctypes.addressof(self.args))

    def __call__(self):
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        r = cu.cuLaunchKernel(ctypes.c_void_p(self.fn), self.blocks, 1, 1, self.threads, 1, 1, 0, stream, self.kp, None)
        assert r == 0, f"cuLaunchKernel: CUresult {r}"


def timing(calls):
    """(back-to-back ms, single-call ms) over the rotated call list."""
    k = len(calls)
    for i in range(max(3, k)):
        calls[i % k]()
    torch.cuda.synchronize()
    window = lambda: [calls[i % k]() for i in range(a.calls)]
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        window()
    g.replay(); torch.cuda.synchronize()
    b2b, single = [], []
    for _ in range(a.reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); g.replay(); e.record(); e.synchronize()
        b2b.append(s.elapsed_time(e) / a.calls)
    for j in range(a.reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); calls[j % k](); e.record(); e.synchronize()
        single.append(s.elapsed_time(e))
    return statistics.median(b2b), statistics.median(single)


def nsets(call_bytes):
    return max(1, -(-a.rotate_mb * 2**20 // max(1, call_bytes)))


GEOM = {}
for g in json.load(open(a.geometry)):
    GEOM[(g["kernel"], g["dtype"], g["sizes"]["m"], g["sizes"]["n"], g["sizes"]["k"])] = g


def kgen_launch(kernel, m, n, k, tensors):
    g = GEOM[(kernel, "bf16", m, n, k)]
    lib = binary(kernel, ".so")
    if lib:
        return LibCall(lib, g["entry"], tensors, [m, n, k])
    return Launch(function(fatbin(kernel), g["entry"]), g["blocks"], g["threads"], tensors, [m, n, k])


copyfn = function(a.copy, "kgen_copy16")
_ceil = {}


def copy_arm(moved):
    if moved not in _ceil:
        n16 = max(1, moved // 2 // 16)
        sets = [(torch.empty(n16 * 8, dtype=torch.int16, device=dev).random_(), torch.empty(n16 * 8, dtype=torch.int16, device=dev)) for _ in range(nsets(moved))]
        calls = []
        for x, y in sets:
            l = Launch(copyfn, (n16 + 255) // 256, 256, [x, y], [0])
            l.ptrs.append(ctypes.c_uint64(n16))
            l.kp = (ctypes.c_void_p * 3)(*[ctypes.addressof(q) for q in l.ptrs])
            calls.append(l)
        calls[0](); torch.cuda.synchronize()
        assert torch.equal(sets[0][0], sets[0][1])
        _ceil[moved] = timing(calls)
        del sets
    return _ceil[moved]


def mlx_quantize(n, k, group=64):
    """Random weights through MLX's affine rule (mx.quantize, kgenrt.Quantize):
    packed u32 [n, k/8] codes LSB first, bf16 scales and biases [n, k/64], the
    codes [n, k] and the exact dequantization in f32."""
    w = torch.randn(n, k, device=dev) / 8
    gr = w.view(n, k // group, group)
    lo, hi = gr.amin(-1), gr.amax(-1)
    scale, bias = ((hi - lo) / 15).to(BF), lo.to(BF)
    s, b = scale.float()[..., None], bias.float()[..., None]
    q = torch.where(s != 0, torch.round((gr - b) / s), torch.zeros_like(gr)).clamp(0, 15).to(torch.int64)
    wdq = torch.addcmul(b, s, q.float()).view(n, k)  # s·q + b in f32
    q = q.view(n, k)
    packed = (q.view(n, k // 8, 8) << (4 * torch.arange(8, device=dev))).sum(-1)
    packed = torch.where(packed >= 2**31, packed - 2**32, packed).to(torch.int32)
    return packed, scale, bias, q, wdq


def ggml_blocks(n, k, fmt):
    """Random ggml Q4_0 / Q8_0 blocks [n, k/32·(18|34)] as uint8 and their exact dequantization."""
    nb = k // 32
    d = (torch.rand(n, nb, device=dev) * 0.01 + 0.001).half()
    if fmt == "q4_0":
        q = torch.randint(0, 16, (n, nb, 32), device=dev)
        codes = (q[..., :16] | (q[..., 16:] << 4)).to(torch.uint8)
        wdq = d.float()[..., None] * (q.float() - 8)
    else:
        q = torch.randint(-128, 128, (n, nb, 32), device=dev)
        codes = q.to(torch.int8).view(torch.uint8)
        wdq = d.float()[..., None] * q.float()
    blocks = torch.cat([d.view(torch.uint8).view(n, nb, 2), codes], -1).reshape(n, -1).contiguous()
    return blocks, wdq.view(n, k)


def tinygemm_pack(q, scale, bias, n, k):
    """The same codes for torch's int4 kernel: w = (q − 8)·scale + zero, zero = bias + 8·scale."""
    u8 = (q[:, ::2] << 4 | q[:, 1::2]).to(torch.uint8)
    wt = torch.ops.aten._convert_weight_to_int4pack(u8, 8)
    sz = torch.stack([scale.t(), (bias.float() + 8 * scale.float()).to(BF).t()], -1).contiguous()
    return wt, sz


RESULTS, FAILURES = [], []


def record(shape, m, arm, moved, t, ceil, err):
    b2b, single = t
    r = dict(weights=shape, m=m, arm=arm, bytes=moved, b2b_us=b2b * 1e3, single_us=single * 1e3, gbs=moved / b2b / 1e6,
             single_gbs=moved / single / 1e6, err=err)
    r["pct"], r["single_pct"] = 100 * r["gbs"] / ceil[0], 100 * r["single_gbs"] / ceil[1]
    RESULTS.append(r)
    print(f"{shape:>10s} M={m:5d} {arm:26s} b2b {r['b2b_us']:9.1f} us {r['gbs']:6.0f} GB/s {r['pct']:5.1f}% of copy | single {r['single_us']:8.1f} us | err {err:.2g}", flush=True)


def relerr(y, ref):
    return ((y.float() - ref).abs().max() / ref.abs().max().clamp_min(1e-30)).item()


def bench(shape, m):
    n, k = map(int, shape.split("x"))
    packed, scale, bias, q, wdq = mlx_quantize(n, k)
    wbytes = packed.numel() * 4 + 2 * scale.numel() * 2
    moved = wbytes + 2 * m * k + 2 * m * n
    per = nsets(moved)
    xs = [torch.randn(m, k, device=dev).to(BF) for _ in range(min(per, 4))]
    ref = xs[0].float() @ wdq.t()
    ct = copy_arm(moved)
    ceil = (moved / ct[0] / 1e6, moved / ct[1] / 1e6)
    record(shape, m, "copy (ceiling)", moved, ct, ceil, 0.0)
    # kgen: one packed set per call, rotated.
    sets = [(packed, scale, bias)] + [(packed.clone(), scale.clone(), bias.clone()) for _ in range(per - 1)]
    ys = [torch.full((m, n), float("nan"), device=dev, dtype=BF) for _ in sets]
    def arm(label, launch):
        """One kgen launch form over the rotated sets, checked, then timed."""
        for y in ys:
            y.fill_(float("nan"))
        calls = [launch([xs[i % len(xs)], s[0], s[1], s[2], y]) for i, (s, y) in enumerate(zip(sets, ys))]
        calls[0](); torch.cuda.synchronize()
        nan = torch.isnan(ys[0]).sum().item()
        e = relerr(ys[0], ref)
        if nan or e >= 2e-2:
            print(f"FAILED {label} {shape} M={m}: {nan} NaN, relative error {e}", flush=True)
            FAILURES.append(f"{label} {shape} M={m}")
            return
        record(shape, m, label, moved, timing(calls), ceil, e)
    arm("kgen qmatmul_mlx4", lambda ts: kgen_launch("qmatmul_mlx4", m, n, k, ts))
    # The other forms at this m, to place the port's thresholds (the same library's host functions).
    lib = binary("qmatmul_mlx4", ".so")
    if m >= 64 and lib:
        arm("kgen dense (dequant + CUTLASS)", lambda ts: LibCall(lib, "qmatmul_mlx4_bf16", ts, [m, n, k]))
        arm("kgen tiled 64x64 (mid)", lambda ts: LibCall(lib, "qmatmul_mlx4_mid_bf16", ts, [m, n, k]))
    del sets, ys
    # cuBLAS bf16 on the dequantized weights (bytes as the packed ones: the same work).
    wd = wdq.to(BF)
    wsets = [wd] + [wd.clone() for _ in range(max(0, nsets(wd.numel() * 2) - 1))]
    out = F.linear(xs[0], wsets[0]); e = relerr(out, ref)
    record(shape, m, "cuBLAS bf16 (F.linear)", moved, timing([lambda w=w, i=i: F.linear(xs[i % len(xs)], w) for i, w in enumerate(wsets)]), ceil, e)
    del wsets, wd
    # tinygemm
    try:
        wt, sz = tinygemm_pack(q, scale, bias, n, k)
        out = torch.ops.aten._weight_int4pack_mm(xs[0], wt, 64, sz)
        e = relerr(out, ref)
        tsets = [(wt, sz)] + [(wt.clone(), sz.clone()) for _ in range(per - 1)]
        record(shape, m, "tinygemm int4", moved, timing([lambda t=t, i=i: torch.ops.aten._weight_int4pack_mm(xs[i % len(xs)], t[0], 64, t[1]) for i, t in enumerate(tsets)]), ceil, e)
        del tsets
    except Exception as ex:
        print(f"tinygemm {shape} M={m}: {str(ex).splitlines()[0][:160]}", flush=True)
        FAILURES.append(f"tinygemm {shape} M={m}")


def bench_ggml(shape, m, fmt):
    n, k = map(int, shape.split("x"))
    blocks, wdq = ggml_blocks(n, k, fmt)
    moved = blocks.numel() + 2 * m * k + 2 * m * n
    per = nsets(moved)
    x = torch.randn(m, k, device=dev).to(BF)
    ref = x.float() @ wdq.t()
    ct = copy_arm(moved)
    ceil = (moved / ct[0] / 1e6, moved / ct[1] / 1e6)
    record(shape, m, f"copy (ceiling, {fmt})", moved, ct, ceil, 0.0)
    sets = [blocks] + [blocks.clone() for _ in range(per - 1)]
    ys = [torch.full((m, n), float("nan"), device=dev, dtype=BF) for _ in sets]
    kernel = "qmatmul_" + fmt
    calls = [kgen_launch(kernel, m, n, k, [x, s, y]) for s, y in zip(sets, ys)]
    calls[0](); torch.cuda.synchronize()
    assert not torch.isnan(ys[0]).any().item(), f"kgen {kernel}: unwritten (NaN) elements"
    e = relerr(ys[0], ref)
    assert e < 2e-2, f"kgen {kernel} {shape} M={m}: relative error {e}"
    record(shape, m, "kgen " + kernel, moved, timing(calls), ceil, e)


for shape in a.weights.split(","):
    for m in [int(x) for x in a.ms.split(",")]:
        try:
            bench(shape, m)
        except Exception:
            import traceback
            print(f"FAILED {shape} M={m}:\n{traceback.format_exc()}", flush=True)
            FAILURES.append(f"{shape} M={m}")
        torch.cuda.empty_cache()
for shape in a.weights.split(","):
    for m in [int(x) for x in a.ggml_ms.split(",") if x]:
        for fmt in ("q4_0", "q8_0"):
            try:
                bench_ggml(shape, m, fmt)
            except Exception:
                import traceback
                print(f"FAILED ggml {fmt} {shape} M={m}:\n{traceback.format_exc()}", flush=True)
                FAILURES.append(f"{fmt} {shape} M={m}")
            torch.cuda.empty_cache()

clk = subprocess.run(["nvidia-smi", "--query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,power.draw", "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
if a.out:
    json.dump(dict(device=torch.cuda.get_device_name(), torch=torch.__version__, clocks_after=clk, method=vars(a), rows=RESULTS), open(a.out, "w"), indent=1)
print(f"\nGPU after the run: {clk}; {time.time() - T0:.0f} s; failed: {FAILURES or 'none'}\n")
print("| weights N×K | M | copy GB/s | kgen µs b2b / single (% of copy) | cuBLAS bf16 µs (kgen ×) | tinygemm µs (kgen ×) | dense µs b2b / single | mid µs b2b / single |")
print("|---|---|---|---|---|---|---|---|")
for shape in a.weights.split(","):
    for m in [int(x) for x in a.ms.split(",")]:
        arms = {r["arm"]: r for r in RESULTS if r["weights"] == shape and r["m"] == m}
        c, kg, cb, tg = arms.get("copy (ceiling)"), arms.get("kgen qmatmul_mlx4"), arms.get("cuBLAS bf16 (F.linear)"), arms.get("tinygemm int4")
        if not (c and kg):
            continue
        f = lambda r: f"{r['b2b_us']:.1f} ({r['b2b_us'] / kg['b2b_us']:.2f})" if r else "-"
        d, mid = arms.get("kgen dense (dequant + CUTLASS)"), arms.get("kgen tiled 64x64 (mid)")
        g = lambda r: f"{r['b2b_us']:.1f} / {r['single_us']:.1f}" if r else "-"
        print(f"| {shape} | {m} | {c['gbs']:.0f} | {kg['b2b_us']:.1f} / {kg['single_us']:.1f} ({kg['pct']:.0f}%) | {f(cb)} | {f(tg)} | {g(d)} | {g(mid)} |")
