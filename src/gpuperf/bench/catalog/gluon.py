"""Tutorial 08's benchmarks: Gluon kernels on Hopper against Triton's and the vendor's.

* :data:`GLUON_FP8`: the FP8 matmul with float32 promotion every 128 products, the
  ladder in one run: Gluon with Triton's schedule, a program per tile
  (``gluon_drain``); the promotion overlapped with the next MMA (``gluon_pingpong``);
  persistent, one program per SM (``gluon_persistent``); and output tiles stored by TMA
  while the next is computed (``gluon``); against Triton's tuned
  ``matmul_fp8`` and cuBLASLt (``torch._scaled_mm``, default accumulation, the baseline).
* :data:`GLUON_ATTENTION`: attention forward in the FlashAttention-3 way, the ladder in
  one run: a producer warp and two consumer warpgroups in FlashAttention-2's order
  (``gluon_ws``); the softmax beside the next GEMM (``gluon_overlap``); the consumers
  taking turns (``gluon_pingpong``); and the default, persistent when not causal
  (``gluon``); against tutorial 04's Triton kernel, SDPA's FlashAttention-2 backend and
  SDPA's cuDNN backend (the baseline).
"""

from __future__ import annotations

import torch

from gpuperf import reference
from gpuperf.bench import metrics
from gpuperf.bench.catalog.attention import (
    ATTENTION_TOKENS,
    ATTENTION_WIDTH,
    attention_inputs,
    attention_shape,
    forward_provider,
)
from gpuperf.bench.catalog.benchmark import TFLOPS_CEILING, Benchmark, Provider, call, kernels
from gpuperf.bench.catalog.matmul import fp8_check_k, fp8_operands

#: The issue's shapes (M, N, K): square 4096 and 8192, and 8192 x 8192 over K = 4096.
GLUON_FP8_SHAPES = ((4096, 4096, 4096), (8192, 8192, 4096), (8192, 8192, 8192))

#: The sources the record hashes: the Gluon kernel and the Triton kernel it is measured against.
GLUON_FP8_SOURCES = ("kernels/gluon/matmul_fp8.py", "kernels/matmul_fp8.py")


def _gluon(kernel: str, config_class: str, keywords: tuple[str, ...] = (), **fields):
    """A provider's ``make`` and ``config`` for the Gluon kernel ``gpuperf.kernels.gluon.<kernel>``
    called with ``config=<config_class>(**fields)``; the last inputs, named by ``keywords``,
    go by keyword (``causal``). The Gluon module is imported when a provider is made, not
    when the catalog is."""

    def config(*inputs):
        from dataclasses import asdict

        from gpuperf.kernels import gluon

        return asdict(getattr(gluon, config_class)(**fields))

    def make(*inputs):
        from gpuperf.kernels import gluon

        fn, chosen = getattr(gluon, kernel), getattr(gluon, config_class)(**fields)
        split = len(inputs) - len(keywords)
        by_name = dict(zip(keywords, inputs[split:], strict=True))
        return lambda: fn(*inputs[:split], **by_name, config=chosen)

    return {"make": make, "config": config}


def _gluon_fp8(**fields):
    return _gluon("matmul_fp8_promoted", "GluonFP8Config", **fields)


def _inputs(shape, device, scaling):
    a, b, scale_a, scale_b, _fast = fp8_operands(shape, device, scaling)
    return a, b, scale_a, scale_b


GLUON_FP8 = Benchmark(
    name="gluon_fp8",
    title="FP8 (e4m3) matmul, float32 promotion every 128 products, bfloat16 output",
    x_name="shape",
    x_label="shape (M×N×K)",
    x_values=GLUON_FP8_SHAPES,
    make_inputs=_inputs,
    reference=lambda a, b, scale_a, scale_b: reference.matmul_fp8_ref(a, b, scale_a, scale_b),
    providers=(
        Provider("gluon", "Gluon: + TMA store (gluon.matmul_fp8_promoted)", **_gluon_fp8()),
        Provider("gluon_persistent", "Gluon: + persistent", **_gluon_fp8(tma_store=False)),
        Provider(
            "gluon_pingpong",
            "Gluon: + promotion beside the next MMA",
            **_gluon_fp8(persistent=False, tma_store=False),
        ),
        Provider(
            "gluon_drain",
            "Gluon: Triton's schedule, a program per tile",
            **_gluon_fp8(schedule="drain", persistent=False, tma_store=False),
        ),
        Provider(
            "triton",
            "Triton, tuned (gpuperf.kernels.matmul_fp8)",
            call(lambda a, b, scale_a, scale_b: kernels().matmul_fp8(a, b, scale_a, scale_b)),
        ),
        Provider(
            "scaled_mm",
            "cuBLASLt (torch._scaled_mm)",
            call(
                lambda a, b, scale_a, scale_b: torch._scaled_mm(
                    a, b, scale_a=scale_a, scale_b=scale_b, out_dtype=torch.bfloat16
                )
            ),
        ),
    ),
    baseline="scaled_mm",
    metric="TFLOP/s",
    bytes=lambda shape, scaling: metrics.matmul_bytes(*shape, 1),
    flops=lambda shape, scaling: metrics.matmul_flops(*shape),
    ceiling="fp8_tflops",
    sources=GLUON_FP8_SOURCES,
    axes=(("scaling", ("tensor", "row")),),
    reduction=lambda shape, scaling: fp8_check_k(shape[2], "float32"),
    runs_on=lambda capability: capability[0] == 9,  # Gluon's wgmma kernels: Hopper only
)


#: Sequence lengths of the attention ladder (B·S = 16384 tokens, H·D = 2048, as tutorial 04).
GLUON_ATTENTION_SEQ_LENS = (1024, 2048, 4096, 8192, 16384)

#: The sources the attention record hashes: the Gluon kernel (and the helpers it imports) and
#: the Triton kernel it is measured against.
GLUON_ATTENTION_SOURCES = ("kernels/gluon/attention.py", "kernels/attention.py")


def _gluon_attention(**fields):
    return _gluon("attention_fa3", "FA3Config", ("causal",), **fields)


GLUON_ATTENTION = Benchmark(
    name="gluon_attention",
    title=f"Attention forward, float16, B·S = {ATTENTION_TOKENS}, H·D = {ATTENTION_WIDTH}",
    x_name="seq_len",
    x_label="sequence length S",
    x_values=GLUON_ATTENTION_SEQ_LENS,
    make_inputs=lambda s, device, head_dim, causal: attention_inputs(s, device, "float16", head_dim, causal),
    reference=lambda q, k, v, causal: reference.attention_ref(q, k, v, causal),
    providers=(
        Provider("gluon", "Gluon: + persistent when not causal (gluon.attention_fa3)", **_gluon_attention()),
        Provider(
            "gluon_pingpong",
            "Gluon: + consumers take turns (ping-pong)",
            **_gluon_attention(pingpong=True, persistent=False),
        ),
        Provider(
            "gluon_overlap", "Gluon: + softmax beside the next GEMM", **_gluon_attention(persistent=False)
        ),
        Provider(
            "gluon_ws",
            "Gluon: producer warp + 2 consumers, FlashAttention-2's order",
            **_gluon_attention(overlap=False, persistent=False),
        ),
        forward_provider("triton"),
        forward_provider("flash"),
        forward_provider("cudnn"),
    ),
    baseline="cudnn",
    metric="TFLOP/s",
    bytes=lambda s, head_dim, causal: metrics.attention_bytes(*attention_shape(s, head_dim), element_size=2),
    flops=lambda s, head_dim, causal: metrics.attention_flops(*attention_shape(s, head_dim), causal=causal),
    ceiling=lambda head_dim, causal: TFLOPS_CEILING["float16"],
    sources=GLUON_ATTENTION_SOURCES,
    axes=(("head_dim", (128, 64)), ("causal", (False, True))),
    # A quick live build: the shortest and longest of the sequences the page reads (S >= 4096).
    quick=(("seq_len", (4096, 16384)),),
    reduction=lambda seq_len, **axes: seq_len,
    runs_on=lambda capability: capability[0] == 9,  # Gluon's wgmma kernels: Hopper only
)
