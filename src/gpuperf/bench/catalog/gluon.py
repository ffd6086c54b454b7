"""Tutorial 08's benchmarks: Gluon kernels on Hopper against Triton's and the vendor's.

* :data:`GLUON_FP8`: the FP8 matmul with float32 promotion every 128 products, the
  ladder in one run: Gluon with Triton's schedule, a program per tile
  (``gluon_drain``); the promotion overlapped with the next MMA (``gluon_pingpong``);
  persistent, one program per SM (``gluon_persistent``); and output tiles stored by TMA
  while the next is computed (``gluon``); against Triton's tuned
  ``matmul_fp8`` and cuBLASLt (``torch._scaled_mm``, default accumulation, the baseline).
"""

from __future__ import annotations

import torch

from gpuperf import reference
from gpuperf.bench import metrics
from gpuperf.bench.catalog.benchmark import Benchmark, Provider, call, kernels
from gpuperf.bench.catalog.matmul import PERSISTENT_SOURCES, fp8_check_k, fp8_operands

#: The issue's shapes (M, N, K): square 4096 and 8192, and 8192 x 8192 over K = 4096.
GLUON_FP8_SHAPES = ((4096, 4096, 4096), (8192, 8192, 4096), (8192, 8192, 8192))

#: The sources the record hashes: the Gluon kernel and the Triton kernel it is measured against.
GLUON_FP8_SOURCES = (
    "kernels/gluon/matmul_fp8.py",
    "kernels/gluon/_device.py",
    "kernels/matmul_fp8.py",
    *PERSISTENT_SOURCES,
)


def _gluon(**fields):
    """A provider's ``make`` and ``config`` for the Gluon kernel with these config fields."""

    def config(*inputs):
        from dataclasses import asdict

        from gpuperf.kernels.gluon import GluonFP8Config

        return asdict(GluonFP8Config(**fields))

    def make(a, b, scale_a, scale_b):
        from gpuperf.kernels.gluon import GluonFP8Config, matmul_fp8_promoted

        chosen = GluonFP8Config(**fields)
        return lambda: matmul_fp8_promoted(a, b, scale_a, scale_b, config=chosen)

    return {"make": make, "config": config}


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
        Provider("gluon", "Gluon: + TMA store (gluon.matmul_fp8_promoted)", **_gluon()),
        Provider("gluon_persistent", "Gluon: + persistent", **_gluon(tma_store=False)),
        Provider(
            "gluon_pingpong",
            "Gluon: + promotion beside the next MMA",
            **_gluon(persistent=False, tma_store=False),
        ),
        Provider(
            "gluon_drain",
            "Gluon: Triton's schedule, a program per tile",
            **_gluon(schedule="drain", persistent=False, tma_store=False),
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
