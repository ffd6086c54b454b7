"""Host time per call of this site's newer ops against the PyTorch ops they replace, the GPU
kept busy (a log, not a record): attention and attention_decode against SDPA, rope against
the rotate-half formula, swiglu against two matmuls and silu, matmul_splitk against
torch.matmul, and on Hopper the Gluon FP8 matmul against torch._scaled_mm.

Usage (a CUDA GPU): ``python scripts/host_times.py``. On the H100, 2026-11-25 (ours vs
PyTorch's, us a call): attention 91-122 vs 22-30 (the torch.library path; branch
``attention-host-path``, fb72558, measured 18-19 vs 18-20); attention_decode 28.5 vs 26.4;
rope 32.8 vs 171.5 (twelve eager kernels); swiglu 29.0 vs 80.9; matmul_splitk 15.6 vs
27.7; the Gluon FP8 matmul 152 vs 32 (``kernel[grid]`` with new descriptors every call:
no plan cache yet).
"""

import torch
import torch.nn.functional as F

from gpuperf import reference
from gpuperf.bench.timing import host_time_ms
from gpuperf.kernels import attention, attention_decode, matmul_splitk, rope, rope_cos_sin, swiglu, to_fp8


def us(fn, calls: int = 100) -> float:
    return host_time_ms(fn, calls=calls).ms * 1e3


def show(name: str, ours, theirs, kernels: int = 1) -> None:
    """``kernels``: launches per call of the PyTorch side; the calls timed stay below the
    driver's queue of about a thousand launches, or the host would wait for the GPU."""
    a, b = us(ours), us(theirs, calls=min(100, 600 // kernels))
    print(f"{name:<34} ours {a:6.1f} us   PyTorch {b:6.1f} us   ratio {a / b:.2f}", flush=True)


bf16 = dict(device="cuda", dtype=torch.bfloat16)
q = torch.randn(1, 32, 128, 128, **bf16)
k = torch.randn(1, 8, 128, 128, **bf16)
for causal in (False, True):
    show(
        f"attention causal={causal}",
        lambda: attention(q, k, k, causal=causal),
        lambda: F.scaled_dot_product_attention(q, k, k, is_causal=causal, enable_gqa=True),
    )
with_grad = q.clone().requires_grad_()
print(f"attention with gradients, causal: ours {us(lambda: attention(with_grad, k, k, causal=True)):.1f} us")

qd = torch.randn(8, 32, 1, 128, **bf16)
kc = torch.randn(8, 8, 1024, 128, **bf16)
lengths = torch.full((8,), 1024, device="cuda", dtype=torch.int32)
show(
    "attention_decode (8 x 1024 cached)",
    lambda: attention_decode(qd, kc, kc, lengths),
    lambda: F.scaled_dot_product_attention(qd, kc, kc, enable_gqa=True),
)

positions = torch.arange(16, device="cuda").expand(1, 16)
cos, sin = rope_cos_sin(positions, 128)
qr, kr = torch.randn(1, 32, 16, 128, **bf16), torch.randn(1, 8, 16, 128, **bf16)
show("rope (16 tokens)", lambda: rope(qr, kr, cos, sin), lambda: reference.rope_eager(qr, kr, cos, sin), 12)

x = torch.randn(16, 4096, **bf16)
w = torch.randn(2 * 1024, 4096, **bf16).t()
show(
    "swiglu (16 x 1024 x 4096)",
    lambda: swiglu(x, w),
    lambda: reference.swiglu_eager(x, w[:, :1024], w[:, 1024:]),
    4,
)

wt = torch.randn(4096, 4096, **bf16).t()
show("matmul_splitk (1 x 4096 x 4096)", lambda: matmul_splitk(x[:1], wt), lambda: torch.matmul(x[:1], wt))

if torch.cuda.get_device_capability()[0] == 9:
    from gpuperf.kernels.gluon import matmul_fp8_promoted

    a8, sa = to_fp8(torch.randn(256, 512, device="cuda"))
    b8, sb = to_fp8(torch.randn(256, 512, device="cuda"))
    show(
        "gluon matmul_fp8_promoted (256^2 x 512)",
        lambda: matmul_fp8_promoted(a8, b8.t(), sa, sb.t()),
        lambda: torch._scaled_mm(a8, b8.t(), scale_a=sa, scale_b=sb.t(), out_dtype=torch.bfloat16),
    )
