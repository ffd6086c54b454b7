"""Checks every public kernel wrapper runs on its inputs before launching.

Each failure names the argument and states what was expected and what was given.
The checks read only cheap tensor attributes (type, dtype, ``is_cuda``, device,
shape): a wrapper's whole host time per call is measured against PyTorch's op
(tutorial 03), and these run on every call.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from gpuperf._runtime import check_kernel_device

FLOAT_DTYPES: tuple[torch.dtype, ...] = (torch.float32, torch.float16, torch.bfloat16)
HALF_DTYPES: tuple[torch.dtype, ...] = (torch.float16, torch.bfloat16)


def check_launch_config(
    config,
    tiles: Sequence[str],
    counts: Sequence[str] = ("num_warps", "num_stages"),
    flags: Sequence[str] = (),
) -> None:
    """Check a launch-configuration dataclass's fields where it is made (its ``__post_init__``):
    each of ``tiles`` a power of two of at least 16 (a ``tl.dot`` operand's smallest side),
    each of ``counts`` a positive int, ``num_warps`` a power of two, each of ``flags`` a bool.

    Raises:
        ValueError: a tile or count out of range, naming ``Class.field`` and the value.
        TypeError: a flag that is not a bool.
    """
    kind = type(config).__name__
    for name in tiles:
        value = getattr(config, name)
        if type(value) is not int or value < 16 or value & (value - 1):
            raise ValueError(f"{kind}.{name} must be a power of two >= 16, got {value!r}")
    for name in counts:
        value = getattr(config, name)
        if type(value) is not int or value < 1:
            raise ValueError(f"{kind}.{name} must be a positive int, got {value!r}")
    if config.num_warps & (config.num_warps - 1):
        raise ValueError(f"{kind}.num_warps must be a power of two, got {config.num_warps}")
    for name in flags:
        if type(getattr(config, name)) is not bool:
            raise TypeError(f"{kind}.{name} must be a bool, got {getattr(config, name)!r}")


def dtype_names(dtypes: Sequence[torch.dtype]) -> str:
    return ", ".join(str(d).removeprefix("torch.") for d in dtypes)


def check_tensor(name: str, value, dtypes: Sequence[torch.dtype] = FLOAT_DTYPES) -> None:
    """Raise ``TypeError`` unless ``value`` is a tensor of one of ``dtypes``."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    if value.dtype not in dtypes:
        raise TypeError(
            f"{name} has dtype {str(value.dtype).removeprefix('torch.')}; "
            f"supported dtypes are {dtype_names(dtypes)}"
        )


def check_tensors(
    names: Sequence[str], tensors: Sequence, dtypes: Sequence[torch.dtype] = FLOAT_DTYPES
) -> None:
    """Check the tensor inputs of one kernel call together.

    Raises:
        TypeError: an input is not a tensor, its dtype is not in ``dtypes``, or
            the inputs' dtypes differ.
        ValueError: the inputs are on different devices, or on a device the kernel
            cannot run on (the CPU while Triton's interpreter is off).
    """
    # The common case in a few attribute reads: CUDA tensors of one supported
    # dtype on one device. Anything else takes the checks below, which say what is wrong.
    first = tensors[0]
    if isinstance(first, torch.Tensor) and first.is_cuda and first.dtype in dtypes:
        dtype, device = first.dtype, first.get_device()
        for value in tensors[1:]:
            if not (
                isinstance(value, torch.Tensor) and value.dtype is dtype and value.get_device() == device
            ):
                break
        else:
            return
    for name, value in zip(names, tensors, strict=True):
        check_tensor(name, value, dtypes)
    for value in tensors[1:]:
        if value.dtype != first.dtype:
            listed = ", ".join(f"{n} {dtype_names([t.dtype])}" for n, t in zip(names, tensors, strict=True))
            raise TypeError(f"tensors must have the same dtype, got {listed}")
        if value.device != first.device:
            listed = ", ".join(f"{n} on {t.device}" for n, t in zip(names, tensors, strict=True))
            raise ValueError(f"tensors must be on the same device, got {listed}")
    if not first.is_cuda:
        check_kernel_device(names[0], first)


def check_same_shape(names: Sequence[str], tensors: Sequence[torch.Tensor]) -> None:
    """Raise ``ValueError`` unless all tensors have one shape."""
    first = tensors[0].shape
    if any(t.shape != first for t in tensors[1:]):
        listed = ", ".join(f"{n} {tuple(t.shape)}" for n, t in zip(names, tensors, strict=True))
        raise ValueError(f"tensors must have the same shape, got {listed}")
