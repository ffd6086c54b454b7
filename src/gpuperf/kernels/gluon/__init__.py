"""Kernels written in Gluon (``triton.experimental.gluon``), the language beneath Triton.

Gluon exposes what Triton's compiler decides for you: layouts, shared-memory
allocations, TMA copies, ``mbarrier`` waits, asynchronous ``wgmma`` and warp
specialization. These kernels run on Hopper (compute capability 9.x) only, never in the
interpreter: elsewhere they raise ``RuntimeError`` and tutorial 08 shows their
committed records.

* :func:`matmul_fp8_promoted`: FP8 matmul whose float32 promotion overlaps the next MMA.
* :func:`attention_fa3`: attention forward in the FlashAttention-3 way (a producer warp,
  two consumer warpgroups, the softmax beside the tensor cores).
"""

from gpuperf.kernels.gluon.attention import FA3Config, attention_fa3
from gpuperf.kernels.gluon.matmul_fp8 import (
    DEFAULT_CONFIG,
    SCHEDULES,
    GluonFP8Config,
    matmul_fp8_promoted,
)

__all__ = [
    "DEFAULT_CONFIG",
    "SCHEDULES",
    "FA3Config",
    "GluonFP8Config",
    "attention_fa3",
    "matmul_fp8_promoted",
]
