"""Copy every ``stride``-th element: the counter-example to coalesced access.

Tutorial 01's kernels read consecutive addresses: the 32 threads of a warp ask
for one contiguous run of bytes, which the memory system serves in whole 32-byte
sectors, every byte of them used. This kernel is the same streaming copy with one
change: output element ``i`` comes from input element ``i * stride``. Once
``stride * element_size`` reaches 32 bytes, each useful 4-byte element costs a
whole sector, so at most an eighth (float32) of the bytes moved are useful
(CUDA C++ Best Practices Guide, "Coalesced Access to Global Memory", strided accesses).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from gpuperf.kernels import _elementwise_configs
from gpuperf.kernels._grid import cdiv
from gpuperf.kernels._validation import check_tensors
from gpuperf.kernels.launch import Launch, Launches, op


@triton.jit
def _strided_copy_kernel(x_ptr, out_ptr, n_out, stride_x, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    # int64: offsets * stride_x passes 2**31 long before the output does.
    offsets = pid.to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_out
    values = tl.load(x_ptr + offsets * stride_x, mask=mask)
    tl.store(out_ptr + offsets, values, mask=mask)


@op("gpuperf::strided_copy")
def strided_copy(x: torch.Tensor, stride: int) -> tuple[torch.Tensor, Launches]:
    """Return ``x[::stride]`` as a new contiguous tensor, read by a Triton kernel.

    Args:
        x: 1-D contiguous tensor; dtype float32, float16 or bfloat16; on a CUDA
            device (or on the CPU when ``TRITON_INTERPRET=1``).
        stride: distance in elements between the elements read, an int >= 1.

    Returns:
        A 1-D tensor of ``ceil(len(x) / stride)`` elements of ``x``'s dtype.

    Raises:
        TypeError: ``x`` is not a tensor or has an unsupported dtype; ``stride`` is not an int.
        ValueError: ``x`` is not 1-D or not contiguous, is on the CPU while the
            interpreter is off, or ``stride`` is below 1.

    Also registered as ``torch.ops.gpuperf.strided_copy`` (``torch.library.triton_op``), so a
    compiled model that calls it keeps one graph.

    Memory traffic: the useful bytes are one read and one write of the output's
    size (:func:`gpuperf.bench.metrics.copy_bytes`); what the memory system moves
    grows with ``stride`` up to a 32-byte sector per element read.
    """
    check_tensors(("x",), (x,))
    if type(stride) is not int:
        raise TypeError(f"stride must be an int, got {type(stride).__name__}")
    if stride < 1:
        raise ValueError(f"stride must be at least 1, got {stride}")
    if x.dim() != 1 or not x.is_contiguous():
        raise ValueError(
            f"x must be a 1-D contiguous tensor, got shape {tuple(x.shape)}, strides {x.stride()}"
        )
    n_out = cdiv(x.numel(), stride)
    out = torch.empty(n_out, dtype=x.dtype, device=x.device)
    if n_out == 0:
        return out, ()
    block_size = _elementwise_configs.BLOCK_SIZE
    grid = (cdiv(n_out, block_size),)
    runtime = (x, out, n_out, stride)
    return out, (Launch(_strided_copy_kernel, grid, runtime, (block_size,), _elementwise_configs.NUM_WARPS),)
