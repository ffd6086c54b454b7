"""Where Gluon's Hopper kernels run: a GPU of compute capability 9.x, never the interpreter."""

from __future__ import annotations

import torch

from gpuperf._runtime import is_interpreter


def require_gluon_hopper(name: str, t: torch.Tensor) -> None:
    """``RuntimeError`` unless ``t`` is on a Hopper GPU (compute capability 9.x) and Triton's
    interpreter is off: Gluon compiles for the hardware (``wgmma``, TMA, ``mbarrier``), and
    neither the interpreter nor another architecture runs that code."""
    if is_interpreter():
        raise RuntimeError(
            f"{name} is a Gluon kernel, which Triton's interpreter (TRITON_INTERPRET=1) cannot "
            "run; on a machine without a Hopper GPU the pages show its committed records"
        )
    if t.is_cuda:
        major, minor = torch.cuda.get_device_capability(t.device)
        if major != 9:
            raise RuntimeError(
                f"{name} is written for Hopper (wgmma, compute capability 9.x); "
                f"{torch.cuda.get_device_name(t.device)} has {major}.{minor}"
            )
