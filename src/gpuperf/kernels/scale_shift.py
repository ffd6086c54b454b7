"""Fused scale and shift over the last dimension, ``y = x * scale + shift``, in one pass.

The per-feature affine map that ends LayerNorm, that applies a folded BatchNorm at
inference, or that modulates features in FiLM (Perez et al., arXiv:1709.07871):
``scale`` and ``shift`` hold one value per column and are broadcast over the rows.

Written in eager PyTorch, ``x * scale + shift`` is two kernels: the product is
written to memory and read back by the addition, four passes over a tensor of ``x``'s
size (:func:`gpuperf.reference.scale_shift_eager`). This kernel reads ``x`` once and
writes ``y`` once. Each program owns a tile of ``BLOCK_M`` rows by ``BLOCK_N``
columns: it loads its ``BLOCK_N`` values of ``scale`` and ``shift`` once and uses
them for every row of the tile. The arithmetic is one multiply-add per element, in
float32, rounded once: a memory-bound kernel whose ceiling is the copy bandwidth.

It is the kernel of the guide on benchmarking your own kernel, which declares its
benchmark, times it every way and autotunes its tile.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from gpuperf.kernels._grid import cdiv
from gpuperf.kernels._validation import check_tensors
from gpuperf.kernels.launch import Launch, Launches, op

#: Rows and columns of a program's tile: 8 x 256 = 2048 elements, 16 per thread at 4
#: warps (four 16-byte loads of float32), and 256 columns of scale and shift reused
#: over 8 rows.
BLOCK_M = 8
BLOCK_N = 256
NUM_WARPS = 4
#: The most programs a launch grid may have along its second axis (CUDA's limit on
#: ``gridDim.y``): the column tiles.
MAX_COLUMN_TILES = 65535


@triton.jit
def _scale_shift_kernel(
    x_ptr, scale_ptr, shift_ptr, y_ptr, n_rows, n_cols, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr
):
    pid_m = tl.program_id(axis=0)
    pid_n = tl.program_id(axis=1)
    # int64 rows: rows * n_cols passes 2**31 on tensors of 8 GB of fp32.
    rows = pid_m.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < n_cols
    mask = (rows < n_rows)[:, None] & col_mask[None, :]
    # One load of this tile's scale and shift, reused for its BLOCK_M rows.
    scale = tl.load(scale_ptr + cols, mask=col_mask).to(tl.float32)
    shift = tl.load(shift_ptr + cols, mask=col_mask).to(tl.float32)
    offsets = rows[:, None] * n_cols + cols[None, :]
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    y = x * scale[None, :] + shift[None, :]
    tl.store(y_ptr + offsets, y.to(y_ptr.dtype.element_ty), mask=mask)


def _check(x, scale, shift, block_m, block_n, num_warps) -> None:
    """Every check of :func:`scale_shift`'s arguments."""
    check_tensors(("x", "scale", "shift"), (x, scale, shift))
    if x.dim() == 0:
        raise ValueError("x must have at least 1 dimension (scale and shift run along the last), got 0-d")
    n_cols = x.shape[-1]
    for name, t in (("scale", scale), ("shift", shift)):
        if t.shape != (n_cols,):
            raise ValueError(
                f"{name} must have shape (N,) with N = x.shape[-1] = {n_cols}, got {tuple(t.shape)}"
            )
    for name, value in (("block_m", block_m), ("block_n", block_n), ("num_warps", num_warps)):
        if type(value) is not int:
            raise TypeError(f"{name} must be an int, got {type(value).__name__}")
        if value < 1 or value & (value - 1):
            raise ValueError(f"{name} must be a power of two, got {value}")
    if cdiv(n_cols, block_n) > MAX_COLUMN_TILES:
        raise ValueError(
            f"block_n = {block_n} splits N = {n_cols} into more than {MAX_COLUMN_TILES} column tiles; "
            f"use block_n >= {cdiv(n_cols, MAX_COLUMN_TILES)}"
        )


@op("gpuperf::scale_shift", tensors=3)
def scale_shift(
    x: torch.Tensor,
    scale: torch.Tensor,
    shift: torch.Tensor,
    *,
    block_m: int = BLOCK_M,
    block_n: int = BLOCK_N,
    num_warps: int = NUM_WARPS,
) -> tuple[torch.Tensor, Launches]:
    """Return ``x * scale + shift``, ``scale`` and ``shift`` broadcast over the rows, computed
    by one Triton kernel.

    Args:
        x: tensor of rank >= 1 and shape ``(..., N)``; dtype float32, float16 or
            bfloat16; on a CUDA device (or on the CPU when ``TRITON_INTERPRET=1``).
        scale: ``(N,)``, one factor per column; the same dtype and device as ``x``.
        shift: ``(N,)``, one offset per column; the same dtype and device as ``x``.
        block_m: rows per program's tile, a power of two (default 8).
        block_n: columns per program's tile, a power of two (default 256); at most
            65,535 column tiles, so ``block_n >= N / 65535``.
        num_warps: warps per program, a power of two (default 4).

    Returns:
        A new contiguous tensor of ``x``'s shape and dtype. The multiply-add runs in
        float32 and is rounded once (eager PyTorch's ``x * scale + shift`` rounds the
        product too: in bfloat16 the two can differ by an ulp). NaN and infinity
        propagate as in the formula. Non-contiguous inputs are copied to contiguous
        memory first (one extra pass). An empty ``x`` returns an empty tensor without
        launching a kernel. Not differentiable: no backward is registered.

    Raises:
        TypeError: an input is not a tensor, has an unsupported dtype, or the dtypes
            differ; ``block_m``, ``block_n`` or ``num_warps`` is not an int.
        ValueError: ``x`` is 0-d; ``scale`` or ``shift`` does not have shape
            ``(x.shape[-1],)``; the tensors are on different devices, or on the CPU
            while the interpreter is off; a launch parameter is not a power of two,
            or ``block_n`` is too small for ``N``.

    Also registered as ``torch.ops.gpuperf.scale_shift`` (``torch.library.triton_op``),
    so a compiled model that calls it keeps one graph.

    Memory traffic: reads ``x`` and writes ``y`` once, ``2 * rows * N`` elements, plus
    ``2 * N`` of ``scale`` and ``shift``; two FLOPs (a multiply and an add) per element:
    bandwidth-bound at every size.
    """
    _check(x, scale, shift, block_m, block_n, num_warps)
    x, scale, shift = x.contiguous(), scale.contiguous(), shift.contiguous()
    y = torch.empty_like(x)
    if y.numel() == 0:
        return y, ()
    n_cols = scale.numel()
    n_rows = x.numel() // n_cols
    grid = (cdiv(n_rows, block_m), cdiv(n_cols, block_n))
    runtime = (x, scale, shift, y, n_rows, n_cols)
    return y, (Launch(_scale_shift_kernel, grid, runtime, (block_m, block_n), num_warps),)


__all__ = ["scale_shift"]
