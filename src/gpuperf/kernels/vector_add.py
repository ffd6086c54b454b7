"""Elementwise addition: the smallest complete Triton kernel.

Each program loads one block of ``BLOCK_SIZE`` elements of ``x`` and ``y``, adds
them and stores the block of the output; a mask guards the last, partial block.
Algorithm: Triton's tutorial 01 (https://triton-lang.org/main/getting-started/tutorials/01-vector-add.html).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from gpuperf.kernels import _configs
from gpuperf.kernels._grid import cdiv
from gpuperf.kernels._validation import check_same_shape, check_tensors
from gpuperf.kernels.launch import Launch, Launches, op


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    """out = x + y over n_elements contiguous elements, one BLOCK_SIZE block per program."""
    pid = tl.program_id(axis=0)
    # int64 before the multiply: pid * BLOCK_SIZE passes 2**31 on tensors of 8 GB of fp32.
    block_start = pid.to(tl.int64) * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements  # the last block may run past the end
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


@op("gpuperf::vector_add", tensors=2)
def vector_add(
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    block_size: int = _configs.VECTOR_ADD_BLOCK_SIZE,
    num_warps: int = _configs.VECTOR_ADD_NUM_WARPS,
) -> tuple[torch.Tensor, Launches]:
    """Return ``x + y`` computed by a Triton kernel.

    Args:
        x: tensor of any shape; dtype float32, float16 or bfloat16; on a CUDA
            device (or on the CPU when ``TRITON_INTERPRET=1``).
        y: tensor of the same shape, dtype and device as ``x``.
        block_size: elements per program, a power of two (default 1024).
        num_warps: warps per program (default 8).

    Returns:
        A new contiguous tensor of ``x``'s shape and dtype. Non-contiguous inputs
        are copied to contiguous memory first (one extra pass over them).
        Empty inputs return an empty tensor without launching a kernel.

    Raises:
        TypeError: ``x`` or ``y`` is not a tensor, has an unsupported dtype, or
            the dtypes differ; ``block_size`` is not an int.
        ValueError: the shapes or devices differ, a tensor is on the CPU while the
            interpreter is off, or ``block_size`` or ``num_warps`` is not a power of two.

    Also registered as ``torch.ops.gpuperf.vector_add`` (``torch.library.triton_op``):
    inside ``torch.compile`` this function calls that op, so a compiled model
    keeps one graph and Inductor sees the kernel.

    Memory traffic: reads ``2 * N`` and writes ``N`` elements, so the kernel is
    bandwidth-bound at every size; its ceiling is the device's copy bandwidth.
    """
    check_tensors(("x", "y"), (x, y))
    if x.shape != y.shape:
        check_same_shape(("x", "y"), (x, y))
    if type(block_size) is not int:
        raise TypeError(f"block_size must be an int, got {type(block_size).__name__}")
    if block_size < 1 or block_size & (block_size - 1):
        raise ValueError(f"block_size must be a power of two, got {block_size}")
    if type(num_warps) is not int or num_warps < 1 or num_warps & (num_warps - 1):
        raise ValueError(f"num_warps must be a power of two, got {num_warps!r}")
    x = x.contiguous()
    y = y.contiguous()
    out = torch.empty_like(x)
    n_elements = out.numel()
    if n_elements == 0:
        return out, ()
    grid = (cdiv(n_elements, block_size),)
    return out, (Launch(add_kernel, grid, (x, y, out, n_elements), (block_size,), num_warps),)
