"""RMSNorm over the last dimension, ``y = x / sqrt(mean(x**2) + eps) * weight``, with a Triton backward.

Root Mean Square Layer Normalization (Zhang and Sennrich, arXiv:1910.07467): layer
normalization without the mean subtraction and the bias, the norm of Llama and most
decoder models since. The forward reads ``x`` once and writes ``y`` once:

* ``_rms_norm_kernel`` (rows up to :data:`RMS_NORM_MAX_FUSED_COLS` columns): each
  program loads ``BLOCK_M`` whole rows into registers, sums their squares in float32,
  scales by the reciprocal root mean square and the weight, and stores, rounding once.
* ``_rms_norm_chunked_kernel`` (longer rows, and rows that would leave over a quarter
  of the fused kernel's power-of-two tile empty): one program per row walks it in chunks
  twice, once for the sum of squares and once (backwards, from the chunks still in
  L2) to write ``y``.

Both store the per-row ``rstd = 1 / sqrt(mean(x**2) + eps)`` (float32) when a
gradient is needed. The backward, with ``g = dy * weight`` and ``x̂ = x * rstd``, is

    dx = rstd * (g - x̂ * mean(g * x̂))          dweight = sum over rows of dy * x̂

``dweight`` is a sum over every row. As in Triton's layer-norm tutorial
(https://triton-lang.org/main/getting-started/tutorials/05-layer-norm.html), each
program of the backward kernel sums the rows it owns into a float32 partial row and a
second kernel adds the partial rows up. Unlike the tutorial, which spreads rows over
a few buffers guarded by spin locks, each program here owns a fixed set of rows
(a grid-stride loop over four programs per SM) and its own partial row: no locks, and
the same ``dweight`` on every run.
"""

from __future__ import annotations

import functools
import math

import torch
import triton
import triton.language as tl

from gpuperf._runtime import is_interpreter
from gpuperf.kernels._grid import cdiv, next_power_of_2
from gpuperf.kernels._validation import check_tensors
from gpuperf.kernels.launch import Launch, Launches, Workspace, op

# Launch rules, as data, each with its reason.
#: Rows longer than this take the chunked forward (two reads of x): the longest row
#: that one program holds in registers, as for the softmax.
RMS_NORM_MAX_FUSED_COLS = 32768
#: Elements per program the fused forward aims for on short rows (16 KB of fp32): rows
#: are stacked, up to 8, so no program is mostly launch overhead.
RMS_NORM_TILE_ELEMENTS = 4096
#: Elements of x each thread holds in the fused forward, and most warps per program: on
#: an H200 at 8192 rows of bf16, (rows per program, warps) from (1..8, 2..32) within 2%
#: of the best at every row length from 1024 to 32768 columns; 32 warps lost 3-70%.
RMS_NORM_ELEMENTS_PER_THREAD = 16
RMS_NORM_MAX_WARPS = 16
#: Chunk length and warps of the chunked forward: 32 elements per thread per chunk.
RMS_NORM_CHUNK = 8192
RMS_NORM_CHUNK_WARPS = 8
#: A row of at least RMS_NORM_RAGGED_MIN_COLS columns that would fill less than this
#: share of its power-of-two tile takes the chunked forward, in chunks of
#: RMS_NORM_RAGGED_CHUNK over RMS_NORM_RAGGED_WARPS warps: on the H200 at 8192 x 5120
#: bf16 (a 62% full tile of 8192) that ran at 3500 GB/s against the fused kernel's 3140,
#: the second read of the row coming from L2.
RMS_NORM_RAGGED_FILL = 0.75
RMS_NORM_RAGGED_MIN_COLS = 2048
RMS_NORM_RAGGED_CHUNK = 1024
RMS_NORM_RAGGED_WARPS = 4
#: Rows longer than this take the chunked backward: the fused one holds x, dy, the
#: weight and the dweight partial sums of a whole row, four registers per column.
RMS_NORM_BWD_MAX_FUSED_COLS = 8192
#: Elements of each of those rows per thread in the fused backward (at least 4 warps): on
#: an H200 at 8192 rows of bf16, 4 warps were within 3% of the best at 1024 and 4096
#: columns; 2 warps on 8 rows of 1024 spilled and ran 15x slower.
RMS_NORM_BWD_ELEMENTS_PER_THREAD = 32
#: Chunk length and warps of the chunked backward.
RMS_NORM_BWD_CHUNK = 4096
RMS_NORM_BWD_CHUNK_WARPS = 8
#: Backward programs per SM: each walks every (programs)-th block of rows, so dweight
#: has this many partial rows per SM to add up. On the H200, 8 per SM was best at 1024
#: columns and 2 at 4096; 4 came within 8% of the best at both.
RMS_NORM_BWD_PROGRAMS_PER_SM = 4
#: Backward programs under the interpreter: few, so each walks several blocks of rows.
RMS_NORM_INTERPRETER_PROGRAMS = 3
#: Tile of the dweight reduction: columns per program and partial rows per step.
RMS_NORM_DW_BLOCK_N = 128
RMS_NORM_DW_BLOCK_M = 32


@triton.jit
def _rms_norm_kernel(
    x_ptr,
    w_ptr,
    y_ptr,
    rstd_ptr,
    n_rows,
    n_cols,
    stride_xm,
    stride_xn,
    stride_w,
    stride_ym,
    eps,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    STORE_RSTD: tl.constexpr,
):
    pid = tl.program_id(0)
    # int64 rows: rows * stride_xm passes 2**31 on tensors over 4 GB of bf16.
    rows = pid.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    row_mask = rows < n_rows
    col_mask = cols < n_cols
    mask = row_mask[:, None] & col_mask[None, :]
    # Padding lanes read 0: they add nothing to the sum of squares.
    x = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :] * stride_xn, mask=mask, other=0.0)
    x = x.to(tl.float32)
    w = tl.load(w_ptr + cols * stride_w, mask=col_mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=1) / n_cols + eps)
    y = x * rstd[:, None] * w[None, :]
    tl.store(y_ptr + rows[:, None] * stride_ym + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)
    if STORE_RSTD:
        tl.store(rstd_ptr + rows, rstd, mask=row_mask)


@triton.jit
def _rms_norm_chunked_kernel(
    x_ptr,
    w_ptr,
    y_ptr,
    rstd_ptr,
    n_cols,
    stride_xm,
    stride_xn,
    stride_w,
    stride_ym,
    eps,
    BLOCK_N: tl.constexpr,
    STORE_RSTD: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_xm
    y_row = y_ptr + row * stride_ym
    cols = tl.arange(0, BLOCK_N)
    n_chunks = tl.cdiv(n_cols, BLOCK_N)
    # Pass 1: the sum of squares, per lane, combined once at the end.
    acc = tl.zeros([BLOCK_N], tl.float32)
    for chunk in range(0, n_chunks):
        offs = chunk * BLOCK_N + cols
        # evict_last: keep the row in L2 for pass 2.
        x = tl.load(x_row + offs * stride_xn, mask=offs < n_cols, other=0.0, eviction_policy="evict_last")
        x = x.to(tl.float32)
        acc += x * x
    rstd = tl.rsqrt(tl.sum(acc, axis=0) / n_cols + eps)
    # Pass 2, last chunk first: those are the chunks most likely still in L2.
    for i in range(0, n_chunks):
        offs = (n_chunks - 1 - i) * BLOCK_N + cols
        mask = offs < n_cols
        x = tl.load(x_row + offs * stride_xn, mask=mask, other=0.0, eviction_policy="evict_first")
        w = tl.load(w_ptr + offs * stride_w, mask=mask, other=0.0)
        y = x.to(tl.float32) * rstd * w.to(tl.float32)
        tl.store(y_row + offs, y.to(y_ptr.dtype.element_ty), mask=mask, eviction_policy="evict_first")
    if STORE_RSTD:
        tl.store(rstd_ptr + row, rstd)


@triton.jit
def _rms_norm_bwd_kernel(
    dy_ptr,
    x_ptr,
    w_ptr,
    rstd_ptr,
    dx_ptr,
    dw_partial_ptr,
    n_rows,
    n_cols,
    stride_dym,
    stride_dyn,
    stride_xm,
    stride_xn,
    stride_w,
    stride_dxm,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    pid = tl.program_id(0)
    n_programs = tl.num_programs(0)
    cols = tl.arange(0, BLOCK_N)
    col_mask = cols < n_cols
    w = tl.load(w_ptr + cols * stride_w, mask=col_mask, other=0.0).to(tl.float32)
    # This program's share of dweight, in registers until its last row.
    dw = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for block in range(pid, tl.cdiv(n_rows, BLOCK_M), n_programs):
        rows = tl.cast(block, tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
        row_mask = rows < n_rows
        mask = row_mask[:, None] & col_mask[None, :]
        x = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :] * stride_xn, mask=mask, other=0.0)
        dy = tl.load(dy_ptr + rows[:, None] * stride_dym + cols[None, :] * stride_dyn, mask=mask, other=0.0)
        rstd = tl.load(rstd_ptr + rows, mask=row_mask, other=0.0)
        x_hat = x.to(tl.float32) * rstd[:, None]
        dy = dy.to(tl.float32)
        g = dy * w[None, :]
        c = tl.sum(g * x_hat, axis=1) / n_cols
        dx = (g - x_hat * c[:, None]) * rstd[:, None]
        tl.store(
            dx_ptr + rows[:, None] * stride_dxm + cols[None, :], dx.to(dx_ptr.dtype.element_ty), mask=mask
        )
        dw += dy * x_hat
    tl.store(dw_partial_ptr + pid.to(tl.int64) * n_cols + cols, tl.sum(dw, axis=0), mask=col_mask)


@triton.jit
def _rms_norm_bwd_chunked_kernel(
    dy_ptr,
    x_ptr,
    w_ptr,
    rstd_ptr,
    dx_ptr,
    dw_partial_ptr,
    n_rows,
    n_cols,
    stride_dym,
    stride_dyn,
    stride_xm,
    stride_xn,
    stride_w,
    stride_dxm,
    BLOCK_N: tl.constexpr,
):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    n_chunks = tl.cdiv(n_cols, BLOCK_N)
    # This program's partial row of dweight lives in memory (zeroed by the caller):
    # only this program reads and writes it.
    dw_row = dw_partial_ptr + pid.to(tl.int64) * n_cols
    for row in range(pid, n_rows, tl.num_programs(0)):
        row = tl.cast(row, tl.int64)
        x_row = x_ptr + row * stride_xm
        dy_row = dy_ptr + row * stride_dym
        rstd = tl.load(rstd_ptr + row)
        # Pass 1: sum(dy * w * x) over the row.
        acc = tl.zeros([BLOCK_N], tl.float32)
        for chunk in range(0, n_chunks):
            offs = chunk * BLOCK_N + cols
            mask = offs < n_cols
            x = tl.load(x_row + offs * stride_xn, mask=mask, other=0.0, eviction_policy="evict_last")
            dy = tl.load(dy_row + offs * stride_dyn, mask=mask, other=0.0, eviction_policy="evict_last")
            w = tl.load(w_ptr + offs * stride_w, mask=mask, other=0.0)
            acc += dy.to(tl.float32) * w.to(tl.float32) * x.to(tl.float32)
        c = tl.sum(acc, axis=0) * rstd / n_cols  # mean(g * x_hat)
        # Pass 2, last chunk first (still in L2): dx, and this row's dy * x_hat into dweight.
        for i in range(0, n_chunks):
            offs = (n_chunks - 1 - i) * BLOCK_N + cols
            mask = offs < n_cols
            x = tl.load(x_row + offs * stride_xn, mask=mask, other=0.0, eviction_policy="evict_first")
            dy = tl.load(dy_row + offs * stride_dyn, mask=mask, other=0.0, eviction_policy="evict_first")
            w = tl.load(w_ptr + offs * stride_w, mask=mask, other=0.0).to(tl.float32)
            x_hat = x.to(tl.float32) * rstd
            dy = dy.to(tl.float32)
            dx = (dy * w - x_hat * c) * rstd
            tl.store(dx_ptr + row * stride_dxm + offs, dx.to(dx_ptr.dtype.element_ty), mask=mask)
            partial = tl.load(dw_row + offs, mask=mask, other=0.0)
            tl.store(dw_row + offs, partial + dy * x_hat, mask=mask)


@triton.jit
def _rms_norm_dw_kernel(
    partial_ptr,
    dw_ptr,
    n_partials,
    n_cols,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    # dweight[col] = the sum of the partial rows' column col (float32), rounded once.
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < n_cols
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for start in range(0, n_partials, BLOCK_M):
        rows = start + tl.arange(0, BLOCK_M)
        mask = (rows[:, None] < n_partials) & col_mask[None, :]
        acc += tl.load(
            partial_ptr + rows[:, None].to(tl.int64) * n_cols + cols[None, :], mask=mask, other=0.0
        )
    tl.store(dw_ptr + cols, tl.sum(acc, axis=0).to(dw_ptr.dtype.element_ty), mask=col_mask)


@functools.lru_cache(maxsize=1024)
def forward_launch(n_cols: int) -> tuple:
    """``(kernel, BLOCK_M, BLOCK_N, num_warps)`` of the forward on rows of ``n_cols`` (>= 1).

    BLOCK_M is None for the chunked kernel, which gives each row its own program.
    """
    if n_cols > RMS_NORM_MAX_FUSED_COLS:
        return _rms_norm_chunked_kernel, None, RMS_NORM_CHUNK, RMS_NORM_CHUNK_WARPS
    block_n = next_power_of_2(n_cols)
    if n_cols >= RMS_NORM_RAGGED_MIN_COLS and n_cols < RMS_NORM_RAGGED_FILL * block_n:
        return _rms_norm_chunked_kernel, None, RMS_NORM_RAGGED_CHUNK, RMS_NORM_RAGGED_WARPS
    block_m = min(8, max(1, RMS_NORM_TILE_ELEMENTS // block_n))
    num_warps = min(RMS_NORM_MAX_WARPS, max(4, block_m * block_n // (32 * RMS_NORM_ELEMENTS_PER_THREAD)))
    return _rms_norm_kernel, block_m, block_n, num_warps


@functools.lru_cache(maxsize=1024)
def backward_launch(n_cols: int) -> tuple:
    """``(kernel, BLOCK_M, BLOCK_N, num_warps)`` of the backward on rows of ``n_cols`` (>= 1).

    BLOCK_M is None for the chunked kernel, which walks one row at a time.
    """
    if n_cols > RMS_NORM_BWD_MAX_FUSED_COLS:
        return _rms_norm_bwd_chunked_kernel, None, RMS_NORM_BWD_CHUNK, RMS_NORM_BWD_CHUNK_WARPS
    block_n = next_power_of_2(n_cols)
    block_m = min(8, max(1, RMS_NORM_TILE_ELEMENTS // block_n))
    num_warps = min(16, max(4, block_m * block_n // (32 * RMS_NORM_BWD_ELEMENTS_PER_THREAD)))
    return _rms_norm_bwd_kernel, block_m, block_n, num_warps


@functools.cache
def _backward_programs(device_index: int) -> int:
    """Most programs of the backward: four per SM on a GPU, a few under the interpreter."""
    if device_index < 0 or is_interpreter():
        return RMS_NORM_INTERPRETER_PROGRAMS
    return RMS_NORM_BWD_PROGRAMS_PER_SM * torch.cuda.get_device_properties(device_index).multi_processor_count


@op("gpuperf::rms_norm_backward", tensors=4)
def rms_norm_backward(
    grad_y: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, rstd: torch.Tensor
) -> tuple[tuple[torch.Tensor, torch.Tensor], Launches]:
    """``(dx, dweight)`` of :func:`rms_norm` from the gradient ``grad_y`` of its output (``x``'s
    shape, any strides) and what its forward saved: ``x``, ``weight`` and ``rstd``. Called
    by autograd, it checks nothing.

    Two launches: the backward kernel (each program walks its rows, writes their ``dx`` and
    sums their ``dy * x̂`` into a float32 partial row of its own, a :class:`Workspace`), then
    the sum of the partial rows into ``dweight``. Rows of no column, or no row, launch nothing: ``dweight``
    is then zeros.
    """
    n_cols = x.shape[-1]
    n_rows = math.prod(x.shape[:-1])
    dx = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    if n_rows == 0 or n_cols == 0:  # no row: no gradient flows to the weight
        return (dx, torch.zeros((n_cols,), dtype=weight.dtype, device=weight.device)), ()
    x2d, grad_y2d, dx2d = x.reshape(n_rows, n_cols), grad_y.reshape(n_rows, n_cols), dx.view(n_rows, n_cols)
    dw = torch.empty((n_cols,), dtype=weight.dtype, device=weight.device)
    kernel, block_m, block_n, num_warps = backward_launch(n_cols)
    n_blocks = n_rows if block_m is None else cdiv(n_rows, block_m)
    n_programs = min(n_blocks, _backward_programs(x.get_device()))
    # The chunked kernel adds into its partial row in memory; the fused one writes it once.
    new_partial = torch.empty if block_m is not None else torch.zeros
    partial = new_partial((n_programs, n_cols), dtype=torch.float32, device=x.device)
    runtime = (
        grad_y2d, x2d, weight, rstd, dx2d, partial, n_rows, n_cols,
        *grad_y2d.stride(), *x2d.stride(), weight.stride(0), dx2d.stride(0),
    )  # fmt: skip
    constexprs = (block_n,) if block_m is None else (block_m, block_n)
    sum_partials = Launch(
        _rms_norm_dw_kernel,
        (cdiv(n_cols, RMS_NORM_DW_BLOCK_N),),
        (partial, dw, n_programs, n_cols),
        (RMS_NORM_DW_BLOCK_M, RMS_NORM_DW_BLOCK_N),
        num_warps=4,
    )
    workspace = Workspace(partial, zeroed=new_partial is torch.zeros)  # (allocated again by a plan)
    return (dx, dw), (workspace, Launch(kernel, (n_programs,), runtime, constexprs, num_warps), sum_partials)


def _check(x, weight, eps) -> float:
    """Every check of :func:`rms_norm`'s arguments; returns ``eps`` as a float."""
    check_tensors(("x", "weight"), (x, weight))
    if x.dim() == 0:
        raise ValueError("x must have at least 1 dimension (the norm runs over the last), got a 0-d tensor")
    if weight.shape != x.shape[-1:]:
        raise ValueError(
            f"weight must have shape (N,) with N = x.shape[-1] = {x.shape[-1]}, got {tuple(weight.shape)}"
        )
    if isinstance(eps, bool) or not isinstance(eps, (int, float)):
        raise TypeError(f"eps must be a float, got {type(eps).__name__}")
    if not (math.isfinite(eps) and eps > 0):
        raise ValueError(f"eps must be positive and finite, got {eps}")
    return float(eps)


@op(
    "gpuperf::rms_norm",
    tensors=2,
    outputs=1,  # y; rstd is for the backward
    backward=rms_norm_backward,
    saves=lambda x, weight, eps, y, rstd: (x, weight, rstd),
)
def rms_norm(
    x: torch.Tensor, weight: torch.Tensor, *, eps: float = 1e-6, saving: bool = True
) -> tuple[tuple[torch.Tensor, torch.Tensor], Launches]:
    """RMSNorm over the last dimension: ``x / sqrt(mean(x**2, -1) + eps) * weight``.

    Args:
        x: tensor of rank >= 1 and shape ``(..., N)``; dtype float32, float16 or
            bfloat16; on a CUDA device (or on the CPU when ``TRITON_INTERPRET=1``).
            Any strides: the leading dimensions are viewed as one when they can be
            (copied otherwise, by ``Tensor.reshape``), and the last is read through
            its stride.
        weight: ``(N,)``, the same dtype and device as ``x``; any stride.
        eps: added to the mean square before the square root; a positive, finite
            number (keyword only).

    Returns:
        A new contiguous tensor of ``x``'s shape and dtype. The mean square, the
        reciprocal root and both products are computed in float32 and rounded once
        (Hugging Face's ``LlamaRMSNorm`` rounds the normalized ``x`` to its dtype
        before multiplying by the weight: in bfloat16 the two differ by an ulp).
        Empty inputs return an empty tensor without launching a kernel.
        Differentiable with respect to ``x`` and ``weight``: the forward then also
        keeps each row's ``1 / sqrt(mean(x**2) + eps)`` (float32, 4 bytes a row) and
        the backward is two Triton kernels (``dx`` and per-program partial sums of
        ``dweight``, then the sum of the partials); gradients come out in the
        inputs' dtypes.

    Raises:
        TypeError: ``x`` or ``weight`` is not a tensor, has an unsupported dtype, or
            their dtypes differ; ``eps`` is not a number.
        ValueError: ``x`` is 0-d, ``weight``'s shape is not ``(x.shape[-1],)``,
            ``eps`` is not positive and finite, or the tensors are on different
            devices (or on the CPU while the interpreter is off).

    Registered as ``torch.ops.gpuperf.rms_norm`` (returning ``y`` and each row's float32
    ``rstd``, of shape ``x.shape[:-1]`` flattened, for the backward) with its backward
    ``torch.ops.gpuperf.rms_norm_backward``: inside ``torch.compile`` this function
    calls them, so a compiled model keeps one graph and trains through it.

    Memory traffic: reads ``x`` and ``weight`` once and writes ``y`` once for rows up
    to 32,768 columns (longer rows, and rows such as 5,120 that would leave over a
    quarter of a power-of-two tile empty, read ``x`` twice, the second time from L2); the
    backward reads ``x``, ``dy`` and ``weight`` and writes ``dx``.
    Algorithm: Zhang and Sennrich, "Root Mean Square Layer Normalization",
    arXiv:1910.07467.
    """
    eps = _check(x, weight, eps)
    n_cols = x.shape[-1]
    n_rows = math.prod(x.shape[:-1])
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    # Each row's 1 / sqrt(mean(x**2) + eps), for the backward; not stored where none follows
    # (saving=False: the public call outside autograd, gpuperf.kernels.launch).
    rstd = torch.empty((n_rows,), dtype=torch.float32, device=x.device) if saving else None
    if y.numel() == 0:
        return (y, rstd), ()
    x2d = x if x.dim() == 2 else x.reshape(n_rows, n_cols)
    y2d = y.view(n_rows, n_cols)
    kernel, block_m, block_n, num_warps = forward_launch(n_cols)
    tensors = (x2d, weight, y2d, y2d if rstd is None else rstd)
    strides = (*x2d.stride(), weight.stride(0), y2d.stride(0))
    if block_m is None:  # the chunked kernel: one program per row
        runtime = (*tensors, n_cols, *strides, eps)
        return (y, rstd), (Launch(kernel, (n_rows,), runtime, (block_n, saving), num_warps),)
    runtime = (*tensors, n_rows, n_cols, *strides, eps)
    grid = (cdiv(n_rows, block_m),)
    return (y, rstd), (Launch(kernel, grid, runtime, (block_m, block_n, saving), num_warps),)


__all__ = ["rms_norm"]
