"""Row softmax over the last dimension, fused into one pass over memory.

Two kernels share the work:

* ``_softmax_kernel`` (rows up to :data:`~gpuperf.kernels._configs.SOFTMAX_MAX_FUSED_COLS`
  columns): each program loads a tile of ``BLOCK_M`` whole rows into registers,
  takes the row maximum, exponentiates, sums and normalises, and stores: the
  input is read once and the output written once, the minimum traffic.
* ``_softmax_online_kernel`` (longer rows): a row no longer fits on chip, so one
  program walks it in chunks, keeping a running maximum and a running sum that
  is rescaled whenever the maximum grows (the online softmax of Milakov and
  Gimelshein, "Online normalizer calculation for softmax", arXiv:1805.02867),
  then walks it again to write ``exp(x - max) / sum``. The second walk runs
  backwards, so it starts on the chunks the first walk left in L2.

Both compute in float32 and round once when storing. Reference: Triton's fused
softmax tutorial (https://triton-lang.org/main/getting-started/tutorials/02-fused-softmax.html).
"""

from __future__ import annotations

import functools

import torch
import triton
import triton.language as tl

from gpuperf.kernels import _configs
from gpuperf.kernels._grid import cdiv, next_power_of_2
from gpuperf.kernels._validation import check_tensors
from gpuperf.kernels.launch import Launch, Launches, op

# exp(x) == exp2(x * log2(e)); exp2 is the hardware instruction.
LOG2E = tl.constexpr(1.4426950408889634)


@triton.jit
def _softmax_kernel(
    x_ptr,
    y_ptr,
    n_rows,
    n_cols,
    stride_xm,
    stride_xn,
    stride_ym,
    BLOCK_N: tl.constexpr,
    BLOCK_M: tl.constexpr,
):
    pid = tl.program_id(0)
    rows = pid.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x_ptrs = x_ptr + rows[:, None] * stride_xm + cols[None, :] * stride_xn
    # Padding lanes read -inf: they add exp(-inf) = 0 to the sum and never win the max.
    x = tl.load(x_ptrs, mask=mask, other=-float("inf")).to(tl.float32)
    row_max = tl.max(x, axis=1)
    numerator = tl.exp2((x - row_max[:, None]) * LOG2E)
    denominator = tl.sum(numerator, axis=1)
    y = numerator * (1.0 / denominator)[:, None]
    y_ptrs = y_ptr + rows[:, None] * stride_ym + cols[None, :]
    tl.store(y_ptrs, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _softmax_online_kernel(
    x_ptr,
    y_ptr,
    n_cols,
    stride_xm,
    stride_xn,
    stride_ym,
    BLOCK_N: tl.constexpr,
    REVERSE_SECOND_PASS: tl.constexpr = True,
):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_xm
    y_row = y_ptr + row * stride_ym
    cols = tl.arange(0, BLOCK_N)
    n_chunks = tl.cdiv(n_cols, BLOCK_N)

    # Pass 1: per-lane running max m and running sum s of exp(x - m).
    m = tl.full([BLOCK_N], -float("inf"), tl.float32)
    s = tl.zeros([BLOCK_N], tl.float32)
    for chunk in range(0, n_chunks):
        offs = chunk * BLOCK_N + cols
        # evict_last: keep the row in L2 for pass 2.
        x = tl.load(
            x_row + offs * stride_xn,
            mask=offs < n_cols,
            other=-float("inf"),
            eviction_policy="evict_last",
        ).to(tl.float32)
        m_new = tl.maximum(m, x)
        # While a lane has seen only -inf, m_new is -inf and (m - m_new) would be
        # NaN; shifting by 0 instead keeps s at 0 until a finite value arrives.
        shift = tl.where(m_new == -float("inf"), 0.0, m_new)
        s = s * tl.exp2((m - shift) * LOG2E) + tl.exp2((x - shift) * LOG2E)
        m = m_new
    row_max = tl.max(m, axis=0)
    max_shift = tl.where(row_max == -float("inf"), 0.0, row_max)
    row_sum = tl.sum(s * tl.exp2((m - max_shift) * LOG2E), axis=0)
    inv_sum = 1.0 / row_sum

    # Pass 2, last chunk first: those are the chunks most likely still in L2.
    for i in range(0, n_chunks):
        chunk = n_chunks - 1 - i if REVERSE_SECOND_PASS else i
        offs = chunk * BLOCK_N + cols
        mask = offs < n_cols
        x = tl.load(
            x_row + offs * stride_xn, mask=mask, other=-float("inf"), eviction_policy="evict_first"
        ).to(tl.float32)
        # A row of only -inf gives (-inf) - (-inf) = NaN here, as torch.softmax does.
        y = tl.exp2((x - row_max) * LOG2E) * inv_sum
        tl.store(y_row + offs, y.to(y_ptr.dtype.element_ty), mask=mask, eviction_policy="evict_first")


@functools.lru_cache(maxsize=1024)
def _launch_config(n_cols: int) -> tuple:
    """``(kernel, BLOCK_N, BLOCK_M, num_warps)`` for rows of ``n_cols``.

    BLOCK_M is None for the online kernel, which gives each row its own program.
    """
    if n_cols <= _configs.SOFTMAX_MAX_FUSED_COLS:
        block_n = next_power_of_2(n_cols)
        block_m, num_warps = _configs.softmax_fused_launch(block_n)
        return _softmax_kernel, block_n, block_m, num_warps
    return _softmax_online_kernel, _configs.SOFTMAX_ONLINE_BLOCK_N, None, _configs.SOFTMAX_ONLINE_NUM_WARPS


@op("gpuperf::softmax")
def softmax(x: torch.Tensor) -> tuple[torch.Tensor, Launches]:
    """Softmax over the last dimension of ``x``, computed in float32.

    Args:
        x: tensor of rank >= 1 and any shape ``(..., N)``; dtype float32, float16 or
            bfloat16; on a CUDA device (or on the CPU when ``TRITON_INTERPRET=1``).
            Any strides are accepted: when the leading dimensions cannot be viewed
            as one, they are copied (``Tensor.reshape``); the last dimension is
            read through its stride.

    Returns:
        A new contiguous tensor of ``x``'s shape and dtype whose rows sum to 1.
        Matches ``torch.softmax(x, dim=-1)``, including on rows that contain
        ``-inf`` (those entries get 0; a row of only ``-inf`` gives NaN). Empty
        inputs return an empty tensor without launching a kernel.

    Raises:
        TypeError: ``x`` is not a tensor or has an unsupported dtype.
        ValueError: ``x`` is 0-d, or is on the CPU while the interpreter is off.

    Also registered as ``torch.ops.gpuperf.softmax`` (``torch.library.triton_op``):
    inside ``torch.compile`` this function calls that op, so a compiled model
    keeps one graph and Inductor sees the kernels.

    Algorithm: rows of up to 32,768 columns are read once into registers (one
    read and one write of the tensor); longer rows use the online softmax
    (Milakov and Gimelshein, arXiv:1805.02867), which reads the row twice and
    writes it once, the second read served partly from L2.
    """
    check_tensors(("x",), (x,))
    if x.dim() == 0:
        raise ValueError("x must have at least 1 dimension (softmax runs over the last), got a 0-d tensor")
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    if x.numel() == 0:
        return y, ()
    n_cols = x.shape[-1]
    x2d = x if x.dim() == 2 else x.reshape(-1, n_cols)
    n_rows = x2d.shape[0]
    stride_xm, stride_xn = x2d.stride()
    kernel, block_n, block_m, num_warps = _launch_config(n_cols)
    if block_m is None:  # the online kernel: one program per row
        runtime = (x2d, y, n_cols, stride_xm, stride_xn, n_cols)
        return y, (Launch(kernel, (n_rows,), runtime, (block_n, True), num_warps),)
    runtime = (x2d, y, n_rows, n_cols, stride_xm, stride_xn, n_cols)
    return y, (Launch(kernel, (cdiv(n_rows, block_m),), runtime, (block_n, block_m), num_warps),)
