"""Runtime probes: interpreter mode, CUDA presence and device checks.

Every probe is a function, evaluated when called, so that importing this module
costs nothing and a test can change the environment between calls.
"""

from __future__ import annotations

import functools
import os
import re

INTERPRET_VAR = "TRITON_INTERPRET"


def is_interpreter() -> bool:
    """True when Triton runs kernels through its CPU interpreter (``TRITON_INTERPRET=1``)."""
    return os.environ.get(INTERPRET_VAR, "0") == "1"


@functools.cache
def has_cuda() -> bool:
    """True when PyTorch sees a CUDA device."""
    import torch

    return torch.cuda.is_available()


def enable_interpreter_without_gpu() -> bool:
    """Set ``TRITON_INTERPRET=1`` when no CUDA device is present; return whether it is on.

    ``@triton.jit`` decides at decoration time whether a kernel is compiled or
    interpreted, so this must run before any module that defines a kernel is
    imported. An explicit ``TRITON_INTERPRET`` set by the user is left as it is.
    """
    if INTERPRET_VAR not in os.environ and not has_cuda():
        os.environ[INTERPRET_VAR] = "1"
    return is_interpreter()


def check_kernel_device(name: str, tensor) -> None:
    """Raise ``ValueError`` unless ``tensor`` sits where a Triton kernel can run.

    A kernel runs on a CUDA tensor, or on a CPU tensor when the interpreter is on.
    """
    kind = tensor.device.type
    if kind == "cuda":
        return
    if kind == "cpu" and is_interpreter():
        return
    expected = "a CUDA device" + (" or the CPU" if is_interpreter() else "")
    hint = (
        ""
        if is_interpreter()
        else " (set TRITON_INTERPRET=1 before importing gpuperf.kernels to run on the CPU)"
    )
    raise ValueError(f"{name} must be on {expected}, got a tensor on {tensor.device}{hint}")


def gpu_slug(name: str) -> str:
    """Folder name for a GPU: ``'NVIDIA H100 80GB HBM3'`` -> ``'nvidia-h100-80gb-hbm3'``."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
