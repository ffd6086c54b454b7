"""Checks every public kernel wrapper runs on its inputs before launching.

Each failure names the argument and states what was expected and what was given.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from gpuperf._runtime import check_kernel_device

FLOAT_DTYPES: tuple[torch.dtype, ...] = (torch.float32, torch.float16, torch.bfloat16)


def _dtype_names(dtypes: Sequence[torch.dtype]) -> str:
    return ", ".join(str(d).removeprefix("torch.") for d in dtypes)


def check_tensor(name: str, value, dtypes: Sequence[torch.dtype] = FLOAT_DTYPES) -> None:
    """Raise ``TypeError`` unless ``value`` is a tensor of one of ``dtypes``."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    if value.dtype not in dtypes:
        raise TypeError(
            f"{name} has dtype {str(value.dtype).removeprefix('torch.')}; "
            f"supported dtypes are {_dtype_names(dtypes)}"
        )


def check_device(names: Sequence[str], tensors: Sequence[torch.Tensor]) -> None:
    """Raise ``ValueError`` unless all tensors share one device a kernel can run on."""
    devices = [t.device for t in tensors]
    if any(d != devices[0] for d in devices):
        listed = ", ".join(f"{n} on {d}" for n, d in zip(names, devices, strict=True))
        raise ValueError(f"tensors must be on the same device, got {listed}")
    check_kernel_device(names[0], tensors[0])


def check_same_dtype(names: Sequence[str], tensors: Sequence[torch.Tensor]) -> None:
    dtypes = [t.dtype for t in tensors]
    if any(d != dtypes[0] for d in dtypes):
        listed = ", ".join(f"{n} {_dtype_names([d])}" for n, d in zip(names, dtypes, strict=True))
        raise TypeError(f"tensors must have the same dtype, got {listed}")


def check_same_shape(names: Sequence[str], tensors: Sequence[torch.Tensor]) -> None:
    shapes = [tuple(t.shape) for t in tensors]
    if any(s != shapes[0] for s in shapes):
        listed = ", ".join(f"{n} {s}" for n, s in zip(names, shapes, strict=True))
        raise ValueError(f"tensors must have the same shape, got {listed}")
