"""A look at configurations of tutorial 08's Gluon FP8 matmul beyond its benchmark's rungs, on
a Hopper GPU (not a benchmark: no records).

Usage: ``python scripts/gluon_explore.py``. At the issue's shapes with per-tensor scales,
prints every provider of the ``gluon_fp8`` benchmark (the Gluon rungs, Triton's tuned
``matmul_fp8``, cuBLASLt) and the variants below in one run: TFLOP/s from
``gpuperf.bench.timing.time_ms``, the ratio to cuBLASLt, and each result's error against
the float64 product beside cuBLASLt's.
"""

import torch

from gpuperf.bench.catalog import GLUON_FP8, GLUON_FP8_SHAPES
from gpuperf.bench.timing import time_ms
from gpuperf.kernels.gluon import GluonFP8Config, matmul_fp8_promoted
from gpuperf.reference import matmul_fp8_ref

#: Configurations the benchmark does not measure: Triton's schedule made persistent, other
#: ring depths and tile groups.
VARIANTS = {
    "drain_persist": GluonFP8Config(schedule="drain"),
    "persist_s3": GluonFP8Config(num_stages=3),
    "persist_s5": GluonFP8Config(num_stages=5),
    "persist_g16": GluonFP8Config(group_m=16),
}


def relative_error(out, ref) -> float:
    return ((out.double() - ref).norm() / ref.norm()).item()


def main():
    print(torch.cuda.get_device_name(), torch.__version__, flush=True)
    for shape in GLUON_FP8_SHAPES:
        a, b, sa, sb = GLUON_FP8.make_inputs(shape, torch.device("cuda"), scaling="tensor")
        ref = matmul_fp8_ref(a, b, sa, sb)
        calls = {p.key: p.make(a, b, sa, sb) for p in GLUON_FP8.providers}
        for key, config in VARIANTS.items():
            calls[key] = lambda c=config: matmul_fp8_promoted(a, b, sa, sb, config=c)
        flops = GLUON_FP8.flops(shape, scaling="tensor")
        base = time_ms(calls["scaled_mm"]).ms
        for key, fn in calls.items():
            err = relative_error(fn(), ref)
            ms = time_ms(fn).ms
            print(
                f"{shape} {key:16} {flops / ms / 1e9:7.1f} TFLOP/s  {base / ms:5.2f}x cuBLASLt"
                f"  rel. error {err:.3e}",
                flush=True,
            )


if __name__ == "__main__":
    main()
