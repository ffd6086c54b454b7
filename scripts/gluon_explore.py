"""A first look at tutorial 08's Gluon kernels on a Hopper GPU (not a benchmark: no records).

Usage: ``python scripts/gluon_explore.py``. For the FP8 matmul with float32 promotion,
at the issue's shapes and both scalings, prints the ladder in one run: cuBLASLt
(``torch._scaled_mm``, default accumulation), Triton's ``matmul_fp8`` (tuned, promoted),
and the Gluon kernel with Triton's schedule (``drain``) and with pingponged promotion,
at a few ring depths; each result's error against the float64 product beside
cuBLASLt's, and TFLOP/s from ``gpuperf.bench.timing.time_ms``.
"""

import sys

import torch

from gpuperf.bench.catalog.matmul import fp8_operands
from gpuperf.bench.timing import time_ms
from gpuperf.kernels import matmul_fp8
from gpuperf.kernels.gluon import GluonFP8Config, matmul_fp8_promoted
from gpuperf.reference import matmul_fp8_ref

SHAPES = ((4096, 4096, 4096), (8192, 8192, 4096), (8192, 8192, 8192))
GLUON = {
    "drain": GluonFP8Config(schedule="drain", persistent=False),
    "pingpong_regstore": GluonFP8Config(persistent=False, tma_store=False),
    "persist_regstore": GluonFP8Config(tma_store=False),
    "pingpong": GluonFP8Config(persistent=False),
    "drain_persist": GluonFP8Config(schedule="drain"),
    "persistent": GluonFP8Config(),
    "persist_s3": GluonFP8Config(num_stages=3),
    "persist_s5": GluonFP8Config(num_stages=5),
    "persist_g16": GluonFP8Config(group_m=16),
}
SCALINGS = ("tensor",)


def relative_error(out, ref) -> float:
    return ((out.double() - ref).norm() / ref.norm()).item()


def main(argv):
    print(torch.cuda.get_device_name(), torch.__version__, flush=True)
    for shape in SHAPES:
        for scaling in SCALINGS:
            a, b, sa, sb, _ = fp8_operands(shape, "cuda", scaling)
            ref = matmul_fp8_ref(a, b, sa, sb)
            calls = {
                "scaled_mm": lambda: torch._scaled_mm(a, b, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16),
                "triton": lambda: matmul_fp8(a, b, sa, sb),
                **{
                    key: (lambda c=c: matmul_fp8_promoted(a, b, sa, sb, config=c)) for key, c in GLUON.items()
                },
            }
            flops = 2 * shape[0] * shape[1] * shape[2]
            base = None
            for key, fn in calls.items():
                try:
                    err = relative_error(fn(), ref)
                    ms = time_ms(fn).ms
                except Exception as e:  # a config that does not fit is reported, not fatal
                    print(f"{shape} {scaling:6} {key:12} failed: {type(e).__name__}: {str(e)[:200]}")
                    continue
                base = base or ms
                print(
                    f"{shape} {scaling:6} {key:12} {flops / ms / 1e9:7.1f} TFLOP/s"
                    f"  {base / ms:5.2f}x cuBLASLt  rel. error {err:.3e}",
                    flush=True,
                )


if __name__ == "__main__":
    main(sys.argv[1:])
