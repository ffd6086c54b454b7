"""Fused ``relu(x + y) * z`` in one pass over memory.

Three elementwise operations that eager PyTorch runs as three kernels, each
writing its result to memory for the next to read back: 8 tensors' worth of
traffic (:func:`gpuperf.bench.metrics.add_relu_mul_eager_bytes`) where the fused
kernel moves 4 (three inputs read, one output written). The gated activations of
transformer MLPs (``act(x W) * (x V)``, Shazeer, "GLU Variants Improve
Transformer", arXiv:2002.05202) have this shape after their matmuls.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from gpuperf.kernels import _elementwise_configs
from gpuperf.kernels._grid import cdiv
from gpuperf.kernels._validation import check_same_shape, check_tensors
from gpuperf.kernels.launch import Launch, Launches, op


@triton.jit
def _add_relu_mul_kernel(x_ptr, y_ptr, z_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    # int64 before the multiply: pid * BLOCK_SIZE passes 2**31 on tensors of 8 GB of fp32.
    offsets = pid.to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    y = tl.load(y_ptr + offsets, mask=mask).to(tl.float32)
    z = tl.load(z_ptr + offsets, mask=mask).to(tl.float32)
    s = x + y
    # where(s < 0, 0, s) rather than maximum(s, 0): NaN stays NaN, as torch.relu keeps it.
    out = tl.where(s < 0.0, 0.0, s) * z
    tl.store(out_ptr + offsets, out.to(out_ptr.dtype.element_ty), mask=mask)


@op("gpuperf::add_relu_mul", tensors=3)
def add_relu_mul(
    x: torch.Tensor,
    y: torch.Tensor,
    z: torch.Tensor,
    *,
    block_size: int = _elementwise_configs.BLOCK_SIZE,
    num_warps: int = _elementwise_configs.NUM_WARPS,
) -> tuple[torch.Tensor, Launches]:
    """Return ``relu(x + y) * z`` computed by one Triton kernel.

    Args:
        x, y, z: tensors of one shape (any), dtype (float32, float16 or bfloat16)
            and device (CUDA, or the CPU when ``TRITON_INTERPRET=1``). No broadcasting.
        block_size: elements per program, a power of two (default 1024).
        num_warps: warps per program, a power of two (default 4).

    Returns:
        A new contiguous tensor of the inputs' shape and dtype, computed in float32
        and rounded once. NaN propagates as in ``torch.relu(x + y) * z``.
        Non-contiguous inputs are copied to contiguous memory first. Empty inputs
        return an empty tensor without launching a kernel.

    Raises:
        TypeError: an input is not a tensor, has an unsupported dtype, or the
            dtypes differ; ``block_size`` or ``num_warps`` is not an int.
        ValueError: the shapes or devices differ, the tensors are on the CPU while
            the interpreter is off, or ``block_size`` or ``num_warps`` is not a
            power of two.

    Also registered as ``torch.ops.gpuperf.add_relu_mul`` (``torch.library.triton_op``).

    Memory traffic: reads ``3 * N`` and writes ``N`` elements, three FLOPs per
    element (:func:`gpuperf.bench.metrics.add_relu_mul_flops`): bandwidth-bound.
    """
    names, tensors = ("x", "y", "z"), (x, y, z)
    check_tensors(names, tensors)
    check_same_shape(names, tensors)
    _elementwise_configs.check_launch(block_size, num_warps)
    x, y, z = x.contiguous(), y.contiguous(), z.contiguous()
    out = torch.empty_like(x)
    n_elements = out.numel()
    if n_elements == 0:
        return out, ()
    grid = (cdiv(n_elements, block_size),)
    return out, (Launch(_add_relu_mul_kernel, grid, (x, y, z, out, n_elements), (block_size,), num_warps),)
