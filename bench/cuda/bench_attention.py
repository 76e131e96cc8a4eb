"""kgen's CUDA attention chain (attention_prefill, the golden project
testdata/golden/cuda_attention) against F.scaled_dot_product_attention and
torch.compile(flex_attention) with the same score function, in one run.

bf16, b = 1, 32 query heads, 8 KV heads (GQA), head_dim 128; prefill
(causal: key col visible when col <= row) at --seqs, decode (one query row
against a cache of n keys, all visible) at --decode. kgen: its fatbin
through cuLaunchKernel, the args struct by value as the Go port passes it
(strides of contiguous [b, h, s, d] tensors, the derived fields by the
CUDA launch's rules), grid (ceildiv(m, 64), 1, b·h) of 128 threads; or,
where the flash-decoding split is taken (kgen_splits > 1), the part and the
combine as the Go port launches them, the f32 workspaces allocated once
(the Go port takes them from the stream-ordered allocator per call). Times:
back-to-back (a CUDA graph of --calls calls replayed between two events,
per call) and single call (one call between events), medians of --reps.
Each kgen output is compared with SDPA's. Decode also times the copy
ceiling: a device-to-device copy of the K and V bytes (rate counting the
bytes read and written)."""
import argparse, ctypes, math, os, statistics, struct, sys, time
import torch
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--fatbins", required=True)
p.add_argument("--seqs", default="4096,8192,16384")
p.add_argument("--decode", default="4096,16384")
p.add_argument("--calls", type=int, default=20)
p.add_argument("--reps", type=int, default=10)
p.add_argument("--budget-s", type=float, default=420)
p.add_argument("--fatbin", default="", help="this attention_prefill fatbin instead of the one in --fatbins")
p.add_argument("--chunk", type=int, default=0, help="decode: keys per split instead of the launch's rule (a tuning sweep)")
p.add_argument("--only-kgen", action="store_true", help="time kgen alone (a tuning sweep)")
a = p.parse_args()
T0 = time.time()
dev = torch.device("cuda")
torch.manual_seed(0)
cu = ctypes.CDLL("libcuda.so.1")
cu.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 6 + [ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
torch.zeros(1, device=dev)
fb = a.fatbin or os.path.join(a.fatbins, [f for f in os.listdir(a.fatbins) if f.startswith("attention_prefill-") and f.endswith(".fatbin")][0])
mod = ctypes.c_void_p()
assert cu.cuModuleLoad(ctypes.byref(mod), fb.encode()) == 0
def function(name):
    f = ctypes.c_void_p()
    assert cu.cuModuleGetFunction(ctypes.byref(f), mod, name) == 0, name
    return f
fn, fn_part, fn_comb = (function(x) for x in (b"attention_prefill_bf16", b"attention_prefill_part_bf16", b"attention_prefill_combine_bf16"))

def cdiv(x, y):
    return -(-x // y)

def decode_split(m, n, b, h, group):
    """kgen_chunk, kgen_splits: the CUDA launch's derived fields, as
    ir.ChainCUDA.DecodeTuning writes them (part blocks of 16 packed rows,
    about 512 of them, chunks of at least 128 keys in 64-key blocks)."""
    blocks = cdiv(group * m, 16) * b * (h // group)
    s0 = max(1, min(cdiv(512, max(blocks, 1)), cdiv(n, 128)))
    chunk = max(64, cdiv(cdiv(n, s0), 64) * 64)
    if a.chunk:  # a sweep's chunk (decode runs only)
        chunk = a.chunk
    return chunk, max(1, cdiv(n, chunk))

class KgenCall:
    def __init__(self, q, k, v, o, scale, offset):
        b, h, m, d = q.shape
        n, hk = k.shape[2], k.shape[1]
        g = h // hk
        chunk, self.splits = decode_split(m, n, b, h, g)
        words = [m, n, d, d, b, h, g, chunk, self.splits, b * h * self.splits * m] + [("f", scale), ("i", offset)]
        for t in (q, k, v, o):
            words += list(t.stride())
        blob = b"".join(struct.pack("<f", w[1]) if isinstance(w, tuple) and w[0] == "f" else
                        struct.pack("<i", w[1]) if isinstance(w, tuple) else struct.pack("<I", w) for w in words)
        self.args = (ctypes.c_uint32 * (len(blob) // 4)).from_buffer_copy(blob)
        rows = b * h * self.splits * m if self.splits > 1 else 1  # no workspace for the one launch
        self.ws = [torch.empty(rows * d, device=q.device, dtype=torch.float32), torch.empty(rows, device=q.device, dtype=torch.float32),
                   torch.empty(rows, device=q.device, dtype=torch.float32)]
        params = lambda ts: (ctypes.c_void_p * (len(ts) + 1))(*[ctypes.addressof(x) for x in ts], ctypes.addressof(self.args))
        ptr = lambda ts: [ctypes.c_uint64(t.data_ptr()) for t in ts]
        self.ptrs, self.pptrs, self.cptrs = ptr((q, k, v, o)), ptr((q, k, v, *self.ws)), ptr((*self.ws, o))
        self.kp, self.pp, self.cp = params(self.ptrs), params(self.pptrs), params(self.cptrs)
        self.grid = ((m + 63) // 64, b * h)
        self.pgrid = (cdiv(g * m, 16) * self.splits, b * hk)
        self.cgrid = (cdiv(m * d, 256), b * h)
    def __call__(self):
        s = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        if self.splits > 1:
            r = cu.cuLaunchKernel(fn_part, self.pgrid[0], 1, self.pgrid[1], 128, 1, 1, 0, s, self.pp, None)
            assert r == 0, f"cuLaunchKernel part {r}"
            r = cu.cuLaunchKernel(fn_comb, self.cgrid[0], 1, self.cgrid[1], 256, 1, 1, 0, s, self.cp, None)
            assert r == 0, f"cuLaunchKernel combine {r}"
            return
        r = cu.cuLaunchKernel(fn, self.grid[0], 1, self.grid[1], 128, 1, 1, 0, s, self.kp, None)
        assert r == 0, f"cuLaunchKernel {r}"

def timing(call):
    for _ in range(3):
        call()
    torch.cuda.synchronize()
    window = lambda: [call() for _ in range(a.calls)]
    try:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            window()
        g.replay(); torch.cuda.synchronize()
        window = g.replay
    except Exception as ex:
        print(f"  (graph capture failed: {str(ex).splitlines()[0][:100]})", flush=True)
        torch.cuda.synchronize()
    b2b, single = [], []
    for _ in range(a.reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); window(); e.record(); e.synchronize()
        b2b.append(s.elapsed_time(e) / a.calls)
    for _ in range(a.reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); call(); e.record(); e.synchronize()
        single.append(s.elapsed_time(e))
    return statistics.median(b2b), statistics.median(single)

flex = None
try:
    if not a.only_kgen:
        from torch.nn.attention.flex_attention import flex_attention, create_block_mask
        flex = torch.compile(flex_attention)
except Exception as ex:
    print("no flex_attention:", ex)

H, HK, D = 32, 8, 128
scale = 1 / math.sqrt(D)
rows = []
def run(mode, m, n):
    q = torch.randn(1, H, m, D, device=dev, dtype=torch.bfloat16)
    k = torch.randn(1, HK, n, D, device=dev, dtype=torch.bfloat16)
    v = torch.randn(1, HK, n, D, device=dev, dtype=torch.bfloat16)
    o = torch.full((1, H, m, D), float("nan"), device=dev, dtype=torch.bfloat16)
    causal = mode == "prefill"
    offset = n - m  # row r sees keys col <= r + offset: causal prefill (0), or the whole cache (decode)
    kg = KgenCall(q, k, v, o, scale, offset)
    sdpa = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale, enable_gqa=True)
    kg(); torch.cuda.synchronize()
    ref = sdpa()
    err = (o.float() - ref.float()).abs().max().item()
    if causal:
        flops = 4 * H * D * (m * (m + 1) / 2)
        unit = lambda ms: f"{flops / ms / 1e9:.0f} TFLOP/s"
    else:
        kv = 2 * HK * n * D * 2
        unit = lambda ms: f"{kv / ms / 1e6:.0f} GB/s of KV"
    arms = [("kgen", kg)] if a.only_kgen else [("kgen", kg), ("sdpa", sdpa)]
    if not causal:
        print(f"  kgen: {kg.splits} splits", flush=True)
    if not causal and not a.only_kgen:
        kd, vd = torch.empty_like(k), torch.empty_like(v)
        arms.append(("copy", lambda: (kd.copy_(k), vd.copy_(v))))
    if flex is not None and time.time() - T0 < a.budget_s:
        def mask(b, h, qi, ki):
            return ki <= qi + offset
        bm = create_block_mask(mask, 1, 1, m, n, device="cuda")
        fl = lambda: flex(q, k, v, block_mask=bm, scale=scale, enable_gqa=True)
        try:
            ferr = (fl().float() - ref.float()).abs().max().item()
            print(f"  flex vs sdpa max |diff| {ferr:.3g}", flush=True)
            arms.append(("flex", fl))
        except Exception as ex:
            print("  flex failed:", str(ex).splitlines()[0][:200], flush=True)
    for name, f in arms:
        b2b, single = timing(f)
        rate = f"{2 * kv / b2b / 1e6:.0f} GB/s read+written" if name == "copy" else unit(b2b)
        rows.append((mode, m, n, name, b2b, single, rate, err if name == "kgen" else None))
        print(f"{mode} m={m} n={n} {name}: b2b {b2b*1e3:.1f} us, single {single*1e3:.1f} us, {rate}" +
              (f", max |kgen - sdpa| {err:.3g}" if name == "kgen" else ""), flush=True)

for s in [int(x) for x in a.seqs.split(",") if x]:
    run("prefill", s, s)
for n in [int(x) for x in a.decode.split(",") if x]:
    run("decode", 1, n)
print(f"\ntorch {torch.__version__}, {torch.cuda.get_device_name()}, {time.time() - T0:.0f} s")
print("| mode | m | n | arm | back-to-back µs | single µs | rate | max abs vs SDPA |")
print("|---|---|---|---|---|---|---|---|")
for r in rows:
    print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]*1e3:.1f} | {r[5]*1e3:.1f} | {r[6]} | {'' if r[7] is None else f'{r[7]:.3g}'} |")
