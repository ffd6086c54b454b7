"""Token permutation for a Mixture-of-Experts layer: the router's choices turned into rows
sorted by expert (the input of :func:`~gpuperf.kernels.grouped_matmul`), and the experts'
outputs added back to their tokens.

A router sends each of ``T`` tokens to ``k`` experts: ``topk_ids`` ``(T, k)``. Flat
position ``i = t * k + j`` is the pair (token ``t``, its ``j``-th expert). A grouped matmul
wants the ``T * k`` pairs' rows grouped by expert, each expert's rows contiguous, and the
cumulative row ends ``offs`` ``(E,)``. PyTorch writes that as ``argsort`` of the flat ids
plus a ``bincount`` and a gather (:func:`gpuperf.reference.sort_by_expert`): a sort of
``T * k`` keys where a counting sort of ``E`` buckets does. Here it is a counting sort in
three small kernels and a gather, with no host synchronization and no loop over experts:

1. ``_count_kernel``: the ids are cut into chunks of :data:`CHUNK` pairs; each program
   counts its chunk's pairs per expert (``tl.histogram``) into a ``(chunks, E)`` table.
2. ``_scan_kernel`` (one program): the table's column sums are the experts' row counts,
   their running sum ``offs``; the table is turned in place into each (chunk, expert)'s
   first row: the expert's start plus the pairs of that expert in earlier chunks.
3. ``_scatter_kernel``: each pair's row is its (chunk, expert)'s first row plus the pairs
   of the same expert before it in its chunk (a ``CHUNK x CHUNK`` comparison): a stable
   order, tokens in order within an expert, exactly ``torch.argsort(ids, stable=True)``.
   It writes ``order`` (sorted row -> flat position) and ``rows`` (flat position -> row).
4. ``_gather_kernel``: row ``r`` of the permuted activations is token ``order[r] // k``.

The combine (:func:`moe_combine`) is a gather too, not a scatter-add: each token's program
reads its ``k`` rows of the experts' output (``rows[t * k + j]``), weights them, sums in
float32 and rounds once. No atomics, so the sum is in a fixed order and the result does not
depend on the run.

Reference: the same counting sort is the "moe_align" step of vLLM's and SGLang's fused MoE
(``moe_align_block_size``), which also pads each expert to a tile multiple; the grouped
matmul here takes unpadded offsets, so no padding is made.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from gpuperf.kernels._grid import cdiv, next_power_of_2
from gpuperf.kernels._validation import check_tensors
from gpuperf.kernels.launch import Launch, Launches, Workspace, op

#: Pairs per program of the count and scatter kernels. The scatter compares every pair of
#: its chunk with every other (``CHUNK x CHUNK`` lanes) to rank pairs of one expert.
CHUNK = 128

#: Counts the scan kernel reads per step (chunks x experts), so its loop is short at any E.
SCAN_TILE = 8192

#: Rows and columns per program of the gather kernel.
GATHER_ROWS = 4
GATHER_BLOCK_D = 1024

#: Columns per program of the combine kernel.
COMBINE_BLOCK_D = 1024

#: The fewest lanes of a block (the histogram's bins, a row's columns): one warp's worth
#: of small sizes rather than blocks of 1 or 2 lanes.
MIN_BLOCK = 16

#: The most experts the kernels take (the histogram's bins and the scan's vector).
MAX_EXPERTS = 4096

ID_DTYPES = (torch.int32, torch.int64)


@triton.jit
def _count_kernel(ids_ptr, counts_ptr, n, E, CHUNK: tl.constexpr, E_BINS: tl.constexpr):
    c = tl.program_id(0)
    i = c * CHUNK + tl.arange(0, CHUNK)
    e = tl.load(ids_ptr + i, mask=i < n, other=0).to(tl.int32)
    # Ids outside [0, E) (a caller's bug) count nowhere, so no write leaves the table.
    valid = (i < n) & (e >= 0) & (e < E)
    hist = tl.histogram(tl.where(valid, e, 0), E_BINS, mask=valid)
    bins = tl.arange(0, E_BINS)
    tl.store(counts_ptr + c * E + bins, hist, mask=bins < E)


@triton.jit
def _scan_kernel(counts_ptr, offs_ptr, n_chunks, E, CHUNKS: tl.constexpr, E_BINS: tl.constexpr):
    e = tl.arange(0, E_BINS)
    e_ok = e < E
    # Pass 1: each expert's row count, then the running sum (offs) and each expert's start.
    totals = tl.zeros([E_BINS], tl.int32)
    for c0 in range(0, n_chunks, CHUNKS):
        c = c0 + tl.arange(0, CHUNKS)
        mask = (c[:, None] < n_chunks) & e_ok[None, :]
        totals += tl.sum(tl.load(counts_ptr + c[:, None] * E + e[None, :], mask=mask, other=0), axis=0)
    ends = tl.cumsum(totals, axis=0)
    tl.store(offs_ptr + e, ends, mask=e_ok)
    # Pass 2: each (chunk, expert)'s first row, in place of its count.
    carry = ends - totals
    for c0 in range(0, n_chunks, CHUNKS):
        c = c0 + tl.arange(0, CHUNKS)
        mask = (c[:, None] < n_chunks) & e_ok[None, :]
        ptrs = counts_ptr + c[:, None] * E + e[None, :]
        counts = tl.load(ptrs, mask=mask, other=0)
        tl.store(ptrs, tl.cumsum(counts, axis=0) - counts + carry[None, :], mask=mask)
        carry += tl.sum(counts, axis=0)


@triton.jit
def _scatter_kernel(ids_ptr, first_ptr, order_ptr, rows_ptr, n, E, CHUNK: tl.constexpr):
    c = tl.program_id(0)
    lane = tl.arange(0, CHUNK)
    i = c * CHUNK + lane
    in_range = i < n
    e = tl.load(ids_ptr + i, mask=in_range, other=-1).to(tl.int32)
    valid = in_range & (e >= 0) & (e < E)
    # The pairs of the same expert before each pair in this chunk: its rank in the chunk.
    before = (e[None, :] == e[:, None]) & (lane[None, :] < lane[:, None])
    rank = tl.sum(before.to(tl.int32), axis=1)
    first = tl.load(first_ptr + c * E + e, mask=valid, other=0)
    row = first + rank
    tl.store(order_ptr + row, i, mask=valid)
    # A pair with no expert gets row -1, which the combine skips.
    tl.store(rows_ptr + i, tl.where(valid, row, -1), mask=in_range)


@triton.jit
def _gather_kernel(
    x_ptr,
    order_ptr,
    offs_ptr,
    out_ptr,
    d,
    k,
    E,
    stride_xt,
    stride_xd,
    ROWS: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    r = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    # Rows up to offs[E-1] have a pair (all of them unless some ids were out of range).
    r_ok = r < tl.load(offs_ptr + E - 1)
    token = (tl.load(order_ptr + r, mask=r_ok, other=0) // k).to(tl.int64)
    mask = r_ok[:, None] & (cols[None, :] < d)
    v = tl.load(x_ptr + token[:, None] * stride_xt + cols[None, :] * stride_xd, mask=mask)
    tl.store(out_ptr + r.to(tl.int64)[:, None] * d + cols[None, :], v, mask=mask)


@triton.jit
def _combine_kernel(
    y_ptr,
    rows_ptr,
    w_ptr,
    out_ptr,
    d,
    k,
    stride_yr,
    stride_yd,
    stride_wt,
    stride_wk,
    BLOCK_D: tl.constexpr,
):
    t = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    c_ok = cols < d
    acc = tl.zeros([BLOCK_D], tl.float32)
    for j in range(0, k):
        row = tl.load(rows_ptr + t * k + j).to(tl.int64)
        w = tl.load(w_ptr + t * stride_wt + j * stride_wk).to(tl.float32)
        y = tl.load(y_ptr + row * stride_yr + cols * stride_yd, mask=c_ok & (row >= 0), other=0.0)
        acc += w * y.to(tl.float32)
    tl.store(out_ptr + t * d + cols, acc.to(out_ptr.dtype.element_ty), mask=c_ok)


def _check_ids(topk_ids, num_experts: int) -> None:
    if not isinstance(topk_ids, torch.Tensor) or topk_ids.dtype not in ID_DTYPES:
        got = topk_ids.dtype if isinstance(topk_ids, torch.Tensor) else type(topk_ids).__name__
        raise TypeError(f"topk_ids must be an int32 or int64 tensor, got {got}")
    if topk_ids.dim() != 2:
        raise ValueError(f"topk_ids must be 2-D (tokens, k), got shape {tuple(topk_ids.shape)}")
    if type(num_experts) is not int or not 1 <= num_experts <= MAX_EXPERTS:
        raise ValueError(f"num_experts must be an int in [1, {MAX_EXPERTS}], got {num_experts!r}")


@op("gpuperf::moe_permute", tensors=2)
def moe_permute(
    x: torch.Tensor, topk_ids: torch.Tensor, num_experts: int
) -> tuple[tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], Launches]:
    """Sort a routing's (token, expert) pairs by expert and gather their activations: the
    inputs of :func:`~gpuperf.kernels.grouped_matmul`.

    Args:
        x: ``(T, d)`` tokens, float32, float16 or bfloat16, any strides; on a CUDA device (or
            on the CPU when ``TRITON_INTERPRET=1``).
        topk_ids: ``(T, k)`` int32 or int64 on ``x``'s device, each token's ``k`` experts, each
            in ``[0, num_experts)``; any strides (a non-contiguous one is copied first).
            The ids are not checked on the GPU (that would synchronize): a pair whose id is
            out of range goes to no expert (no row, ``rows`` -1) and the permuted rows then
            end before ``T * k``.
        num_experts: ``E``, from 1 to :data:`MAX_EXPERTS`.

    Returns:
        ``(x_sorted, order, rows, offs)``:

        * ``x_sorted`` ``(T * k, d)`` in ``x``'s dtype, contiguous: row ``r`` is token
          ``order[r] // k``'s activations, the rows grouped by expert;
        * ``order`` ``(T * k,)`` int32: the flat pair ``t * k + j`` at each sorted row,
          stable (tokens in order within an expert): the values of
          :func:`gpuperf.reference.sort_by_expert`'s order;
        * ``rows`` ``(T * k,)`` int32, its inverse: the sorted row of each flat pair, the
          input of :func:`moe_combine`;
        * ``offs`` ``(E,)`` int32: the cumulative row ends (``grouped_matmul``'s ``offs``).

        ``T = 0`` gives ``offs`` zeros and empty tensors.

    Raises:
        TypeError: ``x`` is not a float tensor, or ``topk_ids`` not an int32/int64 tensor.
        ValueError: ``x`` not 2-D, ``topk_ids`` not 2-D or of another token count or
            device, ``num_experts`` out of range, or CPU tensors while the interpreter is off.

    Also registered as ``torch.ops.gpuperf.moe_permute``.

    Algorithm: a counting sort (see the module's text): four kernels, no host
    synchronization; the gather moves ``T * k * d`` elements, the rest reads the ids
    three times.
    """
    check_tensors(("x",), (x,))
    _check_ids(topk_ids, num_experts)
    if x.dim() != 2:
        raise ValueError(f"x must be 2-D (tokens, d), got shape {tuple(x.shape)}")
    if topk_ids.shape[0] != x.shape[0]:
        raise ValueError(f"topk_ids must have x's {x.shape[0]} tokens, got {topk_ids.shape[0]}")
    if topk_ids.device != x.device:
        raise ValueError(f"topk_ids must be on x's device {x.device}, got {topk_ids.device}")
    tokens, d = x.shape
    k = topk_ids.shape[1]
    n = tokens * k
    device = x.device
    x_sorted = torch.empty((n, d), dtype=x.dtype, device=device)
    order = torch.empty((n,), dtype=torch.int32, device=device)
    rows = torch.empty((n,), dtype=torch.int32, device=device)
    if n == 0:
        return (x_sorted, order, rows, torch.zeros((num_experts,), dtype=torch.int32, device=device)), ()
    offs = torch.empty((num_experts,), dtype=torch.int32, device=device)
    ids = topk_ids if topk_ids.is_contiguous() else topk_ids.contiguous()
    chunks = cdiv(n, CHUNK)
    e_bins = max(MIN_BLOCK, next_power_of_2(num_experts))
    table = torch.empty((chunks, num_experts), dtype=torch.int32, device=device)
    scan_chunks = max(1, SCAN_TILE // e_bins)
    launches: list = [
        Workspace(table),
        Launch(_count_kernel, (chunks,), (ids, table, n, num_experts), (CHUNK, e_bins), 4),
        Launch(_scan_kernel, (1,), (table, offs, chunks, num_experts), (scan_chunks, e_bins), 8),
        Launch(_scatter_kernel, (chunks,), (ids, table, order, rows, n, num_experts), (CHUNK,), 8),
    ]
    if d:
        block_d = min(GATHER_BLOCK_D, max(MIN_BLOCK, next_power_of_2(d)))
        gather_args = (x, order, offs, x_sorted, d, k, num_experts, *x.stride())
        grid = (cdiv(n, GATHER_ROWS), cdiv(d, block_d))
        launches.append(Launch(_gather_kernel, grid, gather_args, (GATHER_ROWS, block_d), 4))
    return (x_sorted, order, rows, offs), launches


@op("gpuperf::moe_combine", tensors=3)
def moe_combine(y: torch.Tensor, rows: torch.Tensor, weights: torch.Tensor) -> tuple[torch.Tensor, Launches]:
    """Add each token's experts' outputs back, weighted: ``out[t] = sum_j weights[t, j] *
    y[rows[t * k + j]]``, summed in float32 and rounded once.

    Args:
        y: ``(T * k, d)`` the experts' outputs in expert-sorted rows (the grouped matmul's
            output on :func:`moe_permute`'s ``x_sorted``), float32, float16 or bfloat16,
            any strides; on a CUDA device (or on the CPU when ``TRITON_INTERPRET=1``).
        rows: ``(T * k,)`` int32, each flat pair's row of ``y`` (:func:`moe_permute`'s
            ``rows``); a row of -1 adds nothing. Values are not checked on the GPU.
        weights: ``(T, k)`` router weights, float32, float16 or bfloat16, any strides.

    Returns:
        A new contiguous ``(T, d)`` tensor of ``y``'s dtype.

    Raises:
        TypeError: ``y`` or ``weights`` is not a float tensor, ``rows`` not int32.
        ValueError: ranks or sizes that do not match (``rows`` of ``T * k`` entries, ``y``
            of ``T * k`` rows), tensors on different devices, or CPU tensors while the
            interpreter is off.

    Also registered as ``torch.ops.gpuperf.moe_combine``.

    Algorithm: one program per token and block of columns reads its ``k`` rows (a gather,
    not a scatter-add: no atomics, so the sum's order is fixed). Memory: ``T * k * d``
    elements read, ``T * d`` written.
    """
    check_tensors(("y",), (y,))
    check_tensors(("weights",), (weights,))
    if not isinstance(rows, torch.Tensor) or rows.dtype != torch.int32:
        got = rows.dtype if isinstance(rows, torch.Tensor) else type(rows).__name__
        raise TypeError(f"rows must be an int32 tensor, got {got}")
    if y.dim() != 2 or weights.dim() != 2 or rows.dim() != 1:
        raise ValueError(
            f"y must be 2-D, rows 1-D and weights 2-D, got shapes {tuple(y.shape)}, "
            f"{tuple(rows.shape)} and {tuple(weights.shape)}"
        )
    tokens, k = weights.shape
    if rows.shape[0] != tokens * k or y.shape[0] != tokens * k:
        raise ValueError(
            f"rows and y must have tokens * k = {tokens * k} entries and rows (weights is "
            f"{tuple(weights.shape)}), got {rows.shape[0]} and {y.shape[0]}"
        )
    if not (y.device == rows.device == weights.device):
        raise ValueError(
            f"y, rows and weights must be on one device, got {y.device}, {rows.device}, {weights.device}"
        )
    d = y.shape[1]
    out = torch.empty((tokens, d), dtype=y.dtype, device=y.device)
    if tokens == 0 or d == 0:
        return out, ()
    rows = rows if rows.is_contiguous() else rows.contiguous()
    block_d = min(COMBINE_BLOCK_D, max(MIN_BLOCK, next_power_of_2(d)))
    args = (y, rows, weights, out, d, k, *y.stride(), *weights.stride())
    return out, (Launch(_combine_kernel, (tokens, cdiv(d, block_d)), args, (block_d,), 4),)


__all__ = ["CHUNK", "MAX_EXPERTS", "moe_combine", "moe_permute"]
