"""PyTorch baselines for rms_norm_backward (docs/colwise.md), to read beside e2e/cudagpu
TestColTimes on the same GPU: the backward formulas in eager PyTorch and under torch.compile
(Inductor/Triton), bf16 in, f32 compute, the same shapes. GB/s counts dy, x read and dx written.
Not yet run: this branch's session reached no GPU with its own tree.
"""
import time, torch
torch.manual_seed(0)
def bwd(dy, x, w, eps: float = 1e-6):
    xf, dyf, wf = x.float(), dy.float(), w.float()
    inv = torch.rsqrt((xf * xf).mean(-1, keepdim=True) + eps)
    g = dyf * wf
    c = (g * xf).mean(-1, keepdim=True) * inv * inv
    dx = (inv * (g - xf * c)).to(x.dtype)
    dw = (dyf * xf * inv).sum(0).to(w.dtype)
    return dx, dw
cbwd = torch.compile(bwd)
def timeit(f, *a):
    for _ in range(5): f(*a)
    torch.cuda.synchronize()
    s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(50): f(*a)
    e.record(); torch.cuda.synchronize()
    return s.elapsed_time(e) / 50 * 1e3
for rows, cols in [(4096, 4096), (16384, 4096), (4096, 8192), (32768, 1024), (8192, 14336)]:
    dy = torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(cols, device="cuda", dtype=torch.bfloat16)
    te = timeit(bwd, dy, x, w)
    tc = timeit(cbwd, dy, x, w)
    b = 3 * rows * cols * 2
    print(f"torch bf16 [{rows}, {cols}]: eager {te:.1f} us ({b/te/1e3:.0f} GB/s), compiled {tc:.1f} us ({b/tc/1e3:.0f} GB/s)", flush=True)
