"""Memory-bound benchmarks: vector add and softmax (tutorials 01 and 02), the row mean
(the profiling guide), RMSNorm and RoPE (tutorial 07's decoder layer), and the scale and
shift of the guide on benchmarking your own kernel. Each is read in GB/s against the
measured copy bandwidth."""

from __future__ import annotations

import torch

from gpuperf import reference
from gpuperf.bench import metrics
from gpuperf.bench.catalog.benchmark import Benchmark, Provider, call, compiled, kernels, liger


def _vector_add(x, y):
    return kernels().vector_add(x, y)


def _softmax(x):
    return kernels().softmax(x)


def random_pair(n: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """Two random float32 tensors of ``n`` elements on ``device``."""
    return (torch.randn(n, device=device), torch.randn(n, device=device))


VECTOR_ADD = Benchmark(
    name="vector_add",
    title="Vector add, float32",
    x_name="n_elements",
    x_label="elements per tensor",
    x_values=tuple(2**p for p in range(12, 29)),
    make_inputs=random_pair,
    reference=reference.vector_add_ref,
    providers=(
        Provider("triton", "Triton (gpuperf.kernels.vector_add)", call(_vector_add)),
        Provider("torch", "PyTorch x + y", call(torch.add)),
    ),
    baseline="torch",
    metric="GB/s",
    bytes=lambda n: metrics.elementwise_bytes(n, element_size=4),
    flops=metrics.vector_add_flops,
    ceiling="stream_gbps",
    sources=("kernels/vector_add.py",),
)

SOFTMAX_ROWS = 4096
SOFTMAX_LONG_ROWS = 1024

_SOFTMAX_PROVIDERS = (
    Provider("triton", "Triton (gpuperf.kernels.softmax)", call(_softmax)),
    Provider("torch", "torch.softmax", call(lambda x: torch.softmax(x, dim=-1))),
    Provider("compile", "torch.compile(naive)", compiled(reference.softmax_naive)),
    Provider("naive", "naive eager PyTorch", call(reference.softmax_naive)),
)

SOFTMAX = Benchmark(
    name="softmax",
    title=f"Softmax, float32, {SOFTMAX_ROWS} rows",
    x_name="n_cols",
    x_label="row length (columns)",
    x_values=tuple(2**p for p in range(8, 16)),
    make_inputs=lambda n, device: (torch.randn(SOFTMAX_ROWS, n, device=device),),
    reference=reference.softmax_ref,
    providers=_SOFTMAX_PROVIDERS,
    baseline="torch",
    metric="GB/s",
    bytes=lambda n: metrics.softmax_bytes(SOFTMAX_ROWS, n, element_size=4),
    flops=lambda n: metrics.softmax_flops(SOFTMAX_ROWS, n),
    ceiling="stream_gbps",
    sources=("kernels/softmax.py",),
)

SOFTMAX_LONG = Benchmark(
    name="softmax_long_rows",
    title=f"Softmax on long rows, float32, {SOFTMAX_LONG_ROWS} rows",
    x_name="n_cols",
    x_label="row length (columns)",
    x_values=(65536, 131072, 262144),
    make_inputs=lambda n, device: (torch.randn(SOFTMAX_LONG_ROWS, n, device=device),),
    reference=reference.softmax_ref,
    providers=_SOFTMAX_PROVIDERS,
    baseline="torch",
    metric="GB/s",
    bytes=lambda n: metrics.softmax_bytes(SOFTMAX_LONG_ROWS, n, element_size=4),
    flops=lambda n: metrics.softmax_flops(SOFTMAX_LONG_ROWS, n),
    ceiling="stream_gbps",
    sources=("kernels/softmax.py",),
)

# --- row mean (the profiling guide) ------------------------------------------------

ROW_MEAN_ROWS = 4096


def _row_mean(x):
    return kernels().row_mean(x)


def _row_mean_cuda(x):
    from gpuperf.kernels.row_mean_cuda import row_mean_cuda

    return row_mean_cuda(x)


ROW_MEAN = Benchmark(
    name="row_mean",
    title=f"Row mean, float32, {ROW_MEAN_ROWS} rows",
    x_name="n_cols",
    x_label="row length (columns)",
    x_values=tuple(2**p for p in range(8, 16)),
    make_inputs=lambda n, device: (torch.randn(ROW_MEAN_ROWS, n, device=device),),
    reference=reference.row_mean_ref,
    providers=(
        Provider("triton", "Triton (gpuperf.kernels.row_mean)", call(_row_mean)),
        Provider("cuda", "CUDA C++ via load_inline (row_mean_cuda)", call(_row_mean_cuda)),
        Provider("torch", "x.mean(dim=-1)", call(lambda x: x.mean(dim=-1))),
    ),
    baseline="torch",
    metric="GB/s",
    bytes=lambda n: metrics.row_mean_bytes(ROW_MEAN_ROWS, n, element_size=4),
    flops=lambda n: metrics.row_mean_flops(ROW_MEAN_ROWS, n),
    ceiling="stream_gbps",
    sources=("kernels/row_mean.py", "kernels/row_mean_cuda.py"),
)

# --- RMSNorm (tutorial 07's decoder layer) -------------------------------------------

RMS_NORM_ROWS = 8192


def _rms_norm(x, weight):
    return kernels().rms_norm(x, weight)


def _rms_norm_inputs(n: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """``x`` (RMS_NORM_ROWS, n) and a weight near 1, bfloat16, as in a model."""
    x = torch.randn(RMS_NORM_ROWS, n, device=device, dtype=torch.bfloat16)
    weight = (1 + 0.1 * torch.randn(n, device=device)).to(torch.bfloat16)
    return x, weight


def _liger_rms_norm(x, weight):
    # Llama's casting (the row's statistics in float32, the weight applied in the input's
    # dtype), as the model's RMSNorm computes it; eps as the reference's.
    function = liger("rms_norm").LigerRMSNormFunction
    return lambda: function.apply(x, weight, 1e-6, 0.0, "llama")


RMS_NORM = Benchmark(
    name="rms_norm",
    title=f"RMSNorm, bfloat16, {RMS_NORM_ROWS} rows",
    x_name="n_cols",
    x_label="row length (hidden size)",
    x_values=(1024, 2048, 4096, 5120, 8192, 16384, 32768),
    make_inputs=_rms_norm_inputs,
    reference=reference.rms_norm_ref,
    providers=(
        Provider("triton", "Triton (gpuperf.kernels.rms_norm)", call(_rms_norm)),
        Provider("eager", "eager formula (Llama's RMSNorm)", call(reference.rms_norm_eager)),
        Provider("compile", "torch.compile(eager formula)", compiled(reference.rms_norm_eager)),
        Provider(
            "torch",
            "torch.nn.functional.rms_norm",
            call(lambda x, w: torch.nn.functional.rms_norm(x, w.shape, w, eps=1e-6)),
        ),
        Provider("liger", "Liger-Kernel (LigerRMSNormFunction)", _liger_rms_norm),
    ),
    baseline="eager",
    metric="GB/s",
    bytes=lambda n: metrics.rms_norm_bytes(RMS_NORM_ROWS, n, element_size=2),
    flops=lambda n: metrics.rms_norm_flops(RMS_NORM_ROWS, n),
    ceiling="stream_gbps",
    sources=("kernels/rms_norm.py",),
)

# --- RoPE (tutorial 07's decoder layer) ---------------------------------------------

#: Llama 3 8B's attention heads: 32 query heads and 8 key/value heads of 128.
ROPE_HEADS = (32, 8, 128)
#: Llama 3's RoPE base.
ROPE_BASE = 500000.0


def _rope(q, k, cos, sin):
    return kernels().rope(q, k, cos, sin)


def _rope_inputs(seq_len: int, device) -> tuple[torch.Tensor, ...]:
    """``(q, k, cos, sin)`` as the decoder layer passes them, batch 1: ``q`` and ``k`` are
    transposed views of one fused QKV projection output ``(1, S, H + 2 H_kv, D)``
    (bfloat16), the tables float32 at positions ``0 .. S - 1``."""
    n_heads, n_kv_heads, head_dim = ROPE_HEADS
    qkv = torch.randn(1, seq_len, n_heads + 2 * n_kv_heads, head_dim, device=device, dtype=torch.bfloat16)
    q, k, _v = qkv.split([n_heads, n_kv_heads, n_kv_heads], dim=2)
    positions = torch.arange(seq_len, device=device)[None]
    cos, sin = kernels().rope_cos_sin(positions, head_dim, base=ROPE_BASE)
    return q.transpose(1, 2), k.transpose(1, 2), cos, sin


def _liger_rope(q, k, cos, sin):
    # The tables as gpuperf's (one cos and one sin per pair, float32): Liger rotates the
    # first rotary_dim entries of each head with tables of half that width. Liger's kernel
    # rotates contiguous (batch, seq, heads, dim) copies of q and k in place.
    function = liger("rope").LigerRopeFunction
    head_dim = q.shape[-1]
    return lambda: function.apply(q, k, cos, sin, None, 1, head_dim)


ROPE = Benchmark(
    name="rope",
    title="RoPE of q and k, bfloat16, Llama 3 8B heads, batch 1",
    x_name="seq_len",
    x_label="tokens",
    x_values=(1024, 4096, 16384, 65536),
    make_inputs=_rope_inputs,
    reference=reference.rope_ref,
    providers=(
        Provider("triton", "Triton (gpuperf.kernels.rope)", call(_rope)),
        Provider("eager", "eager formula (Llama's RoPE)", call(reference.rope_eager)),
        Provider("compile", "torch.compile(eager formula)", compiled(reference.rope_eager)),
        Provider("liger", "Liger-Kernel (LigerRopeFunction)", _liger_rope),
    ),
    baseline="eager",
    metric="GB/s",
    bytes=lambda s: metrics.rope_bytes(1, s, *ROPE_HEADS, element_size=2),
    flops=lambda s: metrics.rope_flops(1, s, *ROPE_HEADS),
    ceiling="stream_gbps",
    sources=("kernels/rope.py",),
    # Not a reduction: the absolute tolerance that lets the baselines' roundings through.
    # An output sums two products of inputs up to ~5 in size (random normal), and the
    # eager formula rounds the tables, both products and the sum to bfloat16: where
    # the products cancel, it is off by more than the relative tolerance allows (up to
    # 0.022 at 65,536 tokens, simulated on the CPU; compile's fp32 math, 0.012).
    # bfloat16's eps * sqrt(32) = 0.044. The kernel, rounding once, is checked tightly
    # in tests/test_rope.py.
    reduction=lambda s: 32,
)

# --- scale and shift (the guide on benchmarking your own kernel) ----------------------

#: Columns of every scale-and-shift input: a model's hidden size.
SCALE_SHIFT_COLS = 4096


def _scale_shift(x, scale, shift):
    return kernels().scale_shift(x, scale, shift)


def _scale_shift_inputs(n_rows: int, device) -> tuple[torch.Tensor, ...]:
    """``x`` (n_rows, SCALE_SHIFT_COLS), ``scale`` and ``shift`` (SCALE_SHIFT_COLS,), float32."""
    x = torch.randn(n_rows, SCALE_SHIFT_COLS, device=device)
    scale = torch.randn(SCALE_SHIFT_COLS, device=device)
    shift = torch.randn(SCALE_SHIFT_COLS, device=device)
    return x, scale, shift


SCALE_SHIFT = Benchmark(
    name="scale_shift",
    title=f"Scale and shift y = x * scale + shift, float32, {SCALE_SHIFT_COLS} columns",
    x_name="n_rows",
    x_label=f"rows of {SCALE_SHIFT_COLS} columns",
    x_values=(512, 2048, 8192, 32768),
    make_inputs=_scale_shift_inputs,
    reference=reference.scale_shift_ref,
    providers=(
        Provider("triton", "Triton (gpuperf.kernels.scale_shift)", call(_scale_shift)),
        Provider("eager", "eager x * scale + shift (2 kernels)", call(reference.scale_shift_eager)),
        Provider("compile", "torch.compile(eager)", compiled(reference.scale_shift_eager)),
    ),
    baseline="eager",
    metric="GB/s",
    # The least one call must move: x read and y written, scale and shift read once.
    bytes=lambda rows: (2 * rows * SCALE_SHIFT_COLS + 2 * SCALE_SHIFT_COLS) * 4,
    # A multiply and an add per element of y.
    flops=lambda rows: 2 * rows * SCALE_SHIFT_COLS,
    ceiling="stream_gbps",
    sources=("kernels/scale_shift.py",),
)
# (the guide on benchmarking your own kernel shows SCALE_SHIFT's declaration down to here)
