"""PyTorch's autograd for the forwards whose backward kgen derives (docs/backward.md), to read
beside e2e/cudagpu TestBackwardTimes (swiglu_backward) and TestColTimes (rms_norm_backward) on
the same GPU: the backward pass only (torch.autograd.grad of the eager forward, and of the
torch.compile'd forward: AOTAutograd's generated backward), bf16, and a copy of the same bytes
as the ceiling, all in this run. Time: CUDA events around 50 back-to-back calls after 5 warm-ups.
"""
import torch
import torch.nn.functional as F
torch.manual_seed(0)
dev = "cuda"
# The timing loop calls one graph's backward again and again (retain_graph),
# which a compiled backward with donated buffers refuses.
import torch._functorch.config
torch._functorch.config.donated_buffer = False

def timeit(f):
    for _ in range(5): f()
    torch.cuda.synchronize()
    s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(50): f()
    e.record(); torch.cuda.synchronize()
    return s.elapsed_time(e) / 50 * 1e3

def copy_us(nbytes):
    # nbytes moved in all: half read, half written.
    src = torch.empty(nbytes // 4, device=dev, dtype=torch.bfloat16); dst = torch.empty_like(src)
    return timeit(lambda: dst.copy_(src))

def rms(x, w): return F.rms_norm(x, (x.shape[-1],), w, 1e-6)
def swiglu(g, u): return F.silu(g) * u
crms, cswiglu = torch.compile(rms), torch.compile(swiglu)

for rows, cols in [(4096, 4096), (16384, 4096), (4096, 8192), (32768, 1024), (8192, 14336)]:
    x = torch.randn(rows, cols, device=dev, dtype=torch.bfloat16, requires_grad=True)
    w = torch.randn(cols, device=dev, dtype=torch.bfloat16, requires_grad=True)
    dy = torch.randn(rows, cols, device=dev, dtype=torch.bfloat16)
    row = []
    for name, f in (("eager", rms), ("compiled", crms)):
        y = f(x, w)
        row.append((name, timeit(lambda: torch.autograd.grad(y, (x, w), dy, retain_graph=True))))
    b = 3 * rows * cols * 2  # dy, x read; dx written
    c = copy_us(b)
    print(f"rms_norm backward bf16 [{rows}, {cols}]: " + ", ".join(f"{n} {t:.1f} us ({b/t/1e3:.0f} GB/s)" for n, t in row)
          + f"; copy of the same bytes {c:.1f} us ({b/c/1e3:.0f} GB/s)", flush=True)

for n in [1 << 20, 1 << 24, 1 << 27]:
    g = torch.randn(n, device=dev, dtype=torch.bfloat16, requires_grad=True)
    u = torch.randn(n, device=dev, dtype=torch.bfloat16, requires_grad=True)
    dy = torch.randn(n, device=dev, dtype=torch.bfloat16)
    row = []
    for name, f in (("eager", swiglu), ("compiled", cswiglu)):
        y = f(g, u)
        row.append((name, timeit(lambda: torch.autograd.grad(y, (g, u), dy, retain_graph=True))))
    b = 5 * n * 2
    c = copy_us(b)
    print(f"swiglu backward bf16 n={n}: " + ", ".join(f"{nm} {t:.1f} us ({b/t/1e3:.0f} GB/s)" for nm, t in row)
          + f"; copy of the same bytes {c:.1f} us ({b/c/1e3:.0f} GB/s)", flush=True)
