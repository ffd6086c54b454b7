"""Row mean over the last dimension: the smallest reduction, used by the profiling guide.

Each program owns ``BLOCK_M`` rows and walks them in chunks of ``BLOCK_N``
columns, adding every chunk into a float32 tile of partial sums; at the end it
sums the tile along the row and divides by the row length. The input is read
once and one value per row is written, so the kernel is memory-bound at every
size: its yardstick is the copy bandwidth. The algorithm is the row reduction of
Triton's fused-softmax tutorial
(https://triton-lang.org/main/getting-started/tutorials/02-fused-softmax.html),
with a loop over chunks so that rows of any length fit.

A CUDA C++ version of the same op, built with ``torch.utils.cpp_extension.load_inline``,
is in :mod:`gpuperf.kernels.row_mean_cuda`.
"""

from __future__ import annotations

import functools

import torch
import triton
import triton.language as tl

from gpuperf._runtime import is_interpreter
from gpuperf.kernels._grid import cdiv, next_power_of_2
from gpuperf.kernels._validation import check_tensors
from gpuperf.kernels.launch import Launch, Launches, op

# Launch rules, as data. A chunk of at most 2048 columns (8 KB of fp32 per row)
# per step; rows are stacked until a tile holds 4096 elements, so short rows
# still give each program 16 KB to stream (the softmax kernel's rule, tutorial 02).
#: Widest chunk of a row that one step of a program reads.
ROW_MEAN_MAX_BLOCK_N = 2048
#: Elements per program per step that the rows-per-program rule aims at.
ROW_MEAN_TILE_ELEMENTS = 4096
#: Most rows per program.
ROW_MEAN_MAX_BLOCK_M = 16
#: Warps per program: 4 warps hold a 4096-element fp32 tile in 32 registers a thread.
ROW_MEAN_NUM_WARPS = 4
#: Under the interpreter, small tiles keep the CPU build fast.
ROW_MEAN_INTERPRETER_BLOCK_N = 64


@triton.jit
def _row_mean_kernel(
    x_ptr,
    out_ptr,
    n_rows,
    n_cols,
    stride_xm,
    stride_xn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    pid = tl.program_id(0)
    # int64 rows: rows * stride_xm passes 2**31 on tensors over 8 GB of fp32.
    rows = pid.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < n_rows
    x_rows = x_ptr + rows[:, None] * stride_xm
    # Partial sums per lane, in fp32 whatever the input dtype; combined once at the end.
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = row_mask[:, None] & (cols[None, :] < n_cols)
        # Padding lanes read 0: they add nothing to the sum.
        x = tl.load(x_rows + cols[None, :] * stride_xn, mask=mask, other=0.0)
        acc += x.to(tl.float32)
    total = tl.sum(acc, axis=1)
    mean = total / n_cols
    tl.store(out_ptr + rows, mean.to(out_ptr.dtype.element_ty), mask=row_mask)


@functools.lru_cache(maxsize=1024)
def row_mean_launch(n_rows: int, n_cols: int) -> tuple[int, int, int]:
    """``(BLOCK_M, BLOCK_N, num_warps)`` for a ``(n_rows, n_cols)`` input (both >= 1)."""
    if is_interpreter():
        return 1, min(next_power_of_2(n_cols), ROW_MEAN_INTERPRETER_BLOCK_N), 1
    block_n = min(next_power_of_2(n_cols), ROW_MEAN_MAX_BLOCK_N)
    block_m = min(ROW_MEAN_MAX_BLOCK_M, max(1, ROW_MEAN_TILE_ELEMENTS // block_n), next_power_of_2(n_rows))
    return block_m, block_n, ROW_MEAN_NUM_WARPS


@op("gpuperf::row_mean")
def row_mean(x: torch.Tensor) -> tuple[torch.Tensor, Launches]:
    """Mean over the last dimension of ``x``, accumulated in float32.

    Args:
        x: tensor of rank >= 1 and shape ``(..., N)``; dtype float32, float16 or
            bfloat16; on a CUDA device (or on the CPU when ``TRITON_INTERPRET=1``).
            Any strides: the leading dimensions are viewed as one when they can
            be (copied otherwise, by ``Tensor.reshape``), and the last is read
            through its stride.

    Returns:
        A new tensor of shape ``x.shape[:-1]`` and ``x``'s dtype, matching
        ``x.mean(dim=-1)``: each row's sum in float32 divided by ``N``, rounded
        once to the dtype. Rows of length 0 give NaN, as in PyTorch. An input
        with no rows returns an empty tensor without launching a kernel.

    Raises:
        TypeError: ``x`` is not a tensor or has an unsupported dtype.
        ValueError: ``x`` is 0-d, or is on the CPU while the interpreter is off.

    Also registered as ``torch.ops.gpuperf.row_mean`` (``torch.library.triton_op``), so a
    compiled model that calls it keeps one graph.

    Memory traffic: reads ``rows * N`` elements and writes ``rows``; the
    kernel is memory-bound and its ceiling is the copy bandwidth. One program
    owns whole rows, so inputs with few, very long rows leave most SMs idle
    (a split-row version would add a second pass; the guide's inputs have
    thousands of rows).
    """
    check_tensors(("x",), (x,))
    if x.dim() == 0:
        raise ValueError("x must have at least 1 dimension (the mean runs over the last), got a 0-d tensor")
    out_shape = x.shape[:-1]
    n_cols = x.shape[-1]
    if n_cols == 0:
        return torch.full(out_shape, float("nan"), dtype=x.dtype, device=x.device), ()
    out = torch.empty(out_shape, dtype=x.dtype, device=x.device)
    if out.numel() == 0:
        return out, ()
    x2d = x.reshape(-1, n_cols)
    n_rows = x2d.shape[0]
    block_m, block_n, num_warps = row_mean_launch(n_rows, n_cols)
    stride_xm, stride_xn = x2d.stride()
    runtime = (x2d, out, n_rows, n_cols, stride_xm, stride_xn)
    return out, (Launch(_row_mean_kernel, (cdiv(n_rows, block_m),), runtime, (block_m, block_n), num_warps),)
