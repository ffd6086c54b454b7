"""What the kernels ask of the GPU they run on, asked once per device: its compute capability,
its streaming multiprocessors, the folder its tuning sweeps live in, and whether it has TMA
or runs Gluon's Hopper code.

A device index is PyTorch's (``tensor.get_device()``): ``-1`` is the CPU, where kernels run
only through Triton's interpreter. Every function here answers for the interpreter too, with
one stand-in (:data:`INTERPRETER_SMS` multiprocessors, no tuning sweep), so a kernel has one
code path whichever runs it.
"""

from __future__ import annotations

import functools

import torch

from gpuperf._runtime import gpu_slug, is_interpreter


class UnsupportedGPU(RuntimeError):
    """The GPU (or the interpreter) cannot run this kernel: an architecture feature it needs
    (TMA, Gluon's Hopper instructions) is missing. A ``RuntimeError``; a benchmark run
    records it for the row and goes on."""


#: Multiprocessors the interpreter stands in for: few, so that a persistent grid on the CPU
#: gives each program several tiles of a small test shape.
INTERPRETER_SMS = 4


@functools.cache
def capability(device_index: int) -> tuple[int, int]:
    """Compute capability ``(major, minor)`` of CUDA device ``device_index`` (``(9, 0)`` for an
    H100 or H200)."""
    return torch.cuda.get_device_capability(device_index)


@functools.cache
def num_sms(device_index: int, stand_in: int = INTERPRETER_SMS) -> int:
    """Streaming multiprocessors of CUDA device ``device_index`` (132 on an H100 SXM);
    ``stand_in`` (default :data:`INTERPRETER_SMS`) for the CPU or under the interpreter,
    where an op may want more or fewer programs to cover its code paths on small shapes."""
    if device_index < 0 or is_interpreter():
        return stand_in
    return torch.cuda.get_device_properties(device_index).multi_processor_count


@functools.cache
def tuned_folder(device_index: int) -> str | None:
    """The folder name of the device's tuning sweeps (``kernels/tuned/<folder>``, the GPU's
    name as :func:`gpuperf._runtime.gpu_slug` writes it), or None under the interpreter."""
    if device_index < 0 or is_interpreter():
        return None
    return gpu_slug(torch.cuda.get_device_name(device_index))


def has_tma(t: torch.Tensor) -> bool:
    """Whether kernels on ``t``'s device can load through TMA tensor descriptors: a GPU of compute
    capability 9.0 or newer, or Triton's interpreter (which runs descriptors on the CPU)."""
    if not t.is_cuda or is_interpreter():
        return True
    return capability(t.get_device())[0] >= 9


def require_tma(name: str, t: torch.Tensor) -> None:
    """:class:`UnsupportedGPU` (a ``RuntimeError``) unless ``t``'s GPU has TMA (compute
    capability 9.0 or newer) or the interpreter runs."""
    if not has_tma(t):
        major, minor = capability(t.get_device())
        raise UnsupportedGPU(
            f"{name} loads through TMA tensor descriptors, which need compute capability 9.0 "
            f"(Hopper) or newer; {torch.cuda.get_device_name(t.device)} has "
            f"{major}.{minor}. Use gpuperf.kernels.matmul instead."
        )


def require_gluon_hopper(name: str, t: torch.Tensor) -> None:
    """:class:`UnsupportedGPU` (a ``RuntimeError``) unless ``t`` is on a Hopper GPU (compute
    capability 9.x) and Triton's interpreter is off: Gluon compiles for the hardware
    (``wgmma``, TMA, ``mbarrier``), and neither the interpreter nor another architecture
    runs that code."""
    if is_interpreter():
        raise UnsupportedGPU(
            f"{name} is a Gluon kernel, which Triton's interpreter (TRITON_INTERPRET=1) cannot "
            "run; on a machine without a Hopper GPU the pages show its committed records"
        )
    if t.is_cuda:
        major, minor = capability(t.get_device())
        if major != 9:
            raise UnsupportedGPU(
                f"{name} is written for Hopper (wgmma, compute capability 9.x); "
                f"{torch.cuda.get_device_name(t.device)} has {major}.{minor}"
            )


def forget() -> None:
    """Drop what was asked of the devices (a test that changes what a device reports)."""
    capability.cache_clear()
    num_sms.cache_clear()
    tuned_folder.cache_clear()


__all__ = [
    "INTERPRETER_SMS",
    "UnsupportedGPU",
    "capability",
    "forget",
    "has_tma",
    "num_sms",
    "require_gluon_hopper",
    "require_tma",
    "tuned_folder",
]
