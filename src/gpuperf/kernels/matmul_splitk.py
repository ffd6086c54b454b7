"""Split-K matmul for a few rows against a large weight: a decode step's projections.

At decode time a projection multiplies ``M`` = 1 to 64 token rows by a ``(K, N)``
weight of tens of megabytes (Llama-3-8B's MLP down-projection: 4096 x 14336 bfloat16,
117 MB). The FLOPs are negligible; the whole job is reading the weight once, at the
memory's bandwidth. A tiled matmul gives one program to each ``BLOCK_M x BLOCK_N``
output tile, and at ``M = 1`` there are only ``N / BLOCK_N`` of them: 16 programs of
256 columns for the down-projection, so 16 of the H100's 132 SMs stream the weight
while the others idle.

Split-K cuts the reduction over K into ``SPLIT_K`` slices as well:

* ``_matmul_splitk_kernel``, grid ``(cdiv(N, BLOCK_N), SPLIT_K, cdiv(M, BLOCK_M))``:
  program ``(n, s, m)`` multiplies rows ``m`` of ``a`` by columns ``n`` of ``b`` over
  its K slice with ``tl.dot`` (float32 accumulator, ``num_stages`` weight tiles in
  flight) and writes a float32 partial tile into a ``(SPLIT_K, M, N)`` workspace;
  with one slice it writes the output itself, rounded once (the store casts to the
  destination's dtype, which Triton compiles for).
* ``_splitk_reduce_kernel`` adds the ``SPLIT_K`` partials of each output element in
  float32, in a fixed order (the same result on every run), and rounds once.

The launch rule (:func:`splitk_launch`) picks enough slices for a few programs per SM.
The workspace costs ``2 * SPLIT_K * M * N * 4`` bytes of traffic (written, read back,
mostly from L2), small against the weight while ``M`` is small.

Sources: the "parallel reduction" split-K GEMM of CUTLASS
(``cutlass/gemm/device/gemm_splitk_parallel.h``: partial products into a workspace, then
a reduction kernel); the tile loop of Triton's matmul tutorial
(https://triton-lang.org/main/getting-started/tutorials/03-matrix-multiplication.html).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import torch
import triton
import triton.language as tl

from gpuperf._runtime import is_interpreter
from gpuperf.kernels._grid import cdiv, next_power_of_2
from gpuperf.kernels._matmul_checks import check_matmul_shapes
from gpuperf.kernels._validation import HALF_DTYPES, check_tensors
from gpuperf.kernels.device import num_sms
from gpuperf.kernels.launch import Launch, Launches, Workspace, fields_as_dict, op

# Launch rules, as data, each with its reason. Measured on an H100 (scripts/llama_splitk_sweep.py,
# bf16, M = 1 and 8, Llama-3-8B's QKV, output and down projections): of programs per SM
# (1, 2, 4), stages (3, 4, 6), BLOCK_N (32, 64, 128) and BLOCK_K (128, 256), one program per
# SM with 32 x 256 weight tiles, 4 stages, was within 1% of the best at every shape: 2167
# GB/s at 1 x 4096 x 14336 against cuBLAS's 2149, 1545 at 1 x 4096 x 4096 (cuBLAS 1559).
#: The M this kernel is meant for: a decode batch. Larger M works, but each further
#: block of 64 rows reads the whole weight again: use the tiled matmuls there.
SPLITK_MAX_M = 64
#: Columns per program: 32 columns of bfloat16 are 64-byte rows of the weight tile, and
#: 4096 columns give 128 column blocks, a wave of the H100's 132 SMs without a split.
SPLITK_BLOCK_N = 32
#: K per loop step: a 256 x 32 weight tile is 16 KB, large enough to keep the loads wide.
SPLITK_BLOCK_K = 256
#: Rows per program: tl.dot needs 16 at least; more than 64 would hold too big an accumulator.
SPLITK_MIN_BLOCK_M = 16
SPLITK_MAX_BLOCK_M = 64
#: Warps and pipeline depth: 4 stages keep three weight tiles (48 KB) in flight per program,
#: about what one SM needs to cover the memory's latency at its share of the bandwidth.
SPLITK_NUM_WARPS = 4
SPLITK_NUM_STAGES = 4
#: Programs per SM the rule fills one wave with: one (two and four ran 1-7% slower: more
#: slices, more float32 partials to write and add, for no more bandwidth).
SPLITK_PROGRAMS_PER_SM = 1
#: The shortest K slice: below it a program's fixed costs (its prologue and its float32
#: partial tile, written and read back) weigh against the few weight tiles it reads.
SPLITK_MIN_K_PER_SPLIT = 512
#: Under the interpreter: small tiles and a few "SMs", so small test shapes cross many
#: slices and tiles on the CPU.
SPLITK_INTERPRETER_BLOCK_N = 16
SPLITK_INTERPRETER_BLOCK_K = 16
SPLITK_INTERPRETER_SMS = 8
SPLITK_INTERPRETER_MIN_K_PER_SPLIT = 16
#: Reduction kernel: partials summed per step (a power of two; more slices loop) and
#: float32 loads per step per program (16 a thread at 4 warps: one pass, wide loads).
SPLITK_REDUCE_MAX_BLOCK_S = 16
SPLITK_REDUCE_ELEMENTS = 2048
SPLITK_REDUCE_WARPS = 4


@triton.jit
def _matmul_splitk_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    k_per_split,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cs,
    stride_cm,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    EVEN_K: tl.constexpr,
):
    # Column blocks vary fastest: the programs running together read neighbouring
    # columns of the same K slice, so each weight row segment is fetched in full lines.
    pid_n = tl.program_id(0)
    pid_s = tl.program_id(1)
    pid_m = tl.program_id(2)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    m_mask = offs_m < M
    n_mask = offs_n < N
    # The host makes k_per_split a multiple of BLOCK_K and leaves no slice empty, so a
    # slice's tiles never reach into the next one; only the last slice can end past K.
    k_start = pid_s * k_per_split
    k_len = tl.minimum(k_per_split, K - k_start)
    # int64: K * N passes 2**31 for weights over 2 G elements.
    k_rows = (k_start + offs_k).to(tl.int64)
    a_ptrs = a_ptr + offs_m[:, None].to(tl.int64) * stride_am + k_rows[None, :] * stride_ak
    b_ptrs = b_ptr + k_rows[:, None] * stride_bk + offs_n[None, :].to(tl.int64) * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for i in range(0, tl.cdiv(k_len, BLOCK_K)):
        # Rows past M and columns past N read 0 (no memory access); so do K past the end.
        if EVEN_K:
            a = tl.load(a_ptrs, mask=m_mask[:, None], other=0.0)
            b = tl.load(b_ptrs, mask=n_mask[None, :], other=0.0)
        else:
            k_mask = offs_k < k_len - i * BLOCK_K
            a = tl.load(a_ptrs, mask=m_mask[:, None] & k_mask[None, :], other=0.0)
            b = tl.load(b_ptrs, mask=k_mask[:, None] & n_mask[None, :], other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    # c is the float32 workspace (one (M, N) slab per slice) or, with one slice, the
    # output: the cast rounds once to whichever dtype it has.
    c_ptrs = (
        c_ptr + pid_s.to(tl.int64) * stride_cs + offs_m[:, None].to(tl.int64) * stride_cm + offs_n[None, :]
    )
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=m_mask[:, None] & n_mask[None, :])


@triton.jit
def _splitk_reduce_kernel(
    ws_ptr,
    c_ptr,
    n_elements,
    n_splits,
    BLOCK_S: tl.constexpr,
    BLOCK: tl.constexpr,
):
    # The output and each slice's slab are contiguous (M, N): one flat index serves both.
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    e_mask = offs < n_elements
    rows = tl.arange(0, BLOCK_S)
    # BLOCK_S partials per step, all loads in flight together; summed once at the end,
    # in a fixed order.
    acc = tl.zeros((BLOCK_S, BLOCK), dtype=tl.float32)
    for s0 in range(0, n_splits, BLOCK_S):
        s = s0 + rows
        mask = (s[:, None] < n_splits) & e_mask[None, :]
        acc += tl.load(ws_ptr + s[:, None].to(tl.int64) * n_elements + offs[None, :], mask=mask, other=0.0)
    tl.store(c_ptr + offs, tl.sum(acc, axis=0).to(c_ptr.dtype.element_ty), mask=e_mask)


class SplitKLaunch(NamedTuple):
    """The launch :func:`matmul_splitk` makes: tile sizes, K slices, warps and stages."""

    block_m: int
    block_n: int
    block_k: int
    split_k: int
    num_warps: int
    num_stages: int

    as_dict = fields_as_dict


def _k_per_split(k: int, block_k: int, split_k: int) -> int:
    """The K slice of each program: a whole number of BLOCK_K tiles, at most ``split_k`` slices."""
    return cdiv(cdiv(k, block_k), split_k) * block_k


def splitk_splits(
    tiles: int, k: int, n_sms: int, block_k: int = SPLITK_BLOCK_K, min_k: int = SPLITK_MIN_K_PER_SPLIT
) -> int:
    """How many K slices to launch for ``tiles`` output tiles and a reduction over ``k`` (>= 1)
    on ``n_sms`` SMs, with ``block_k`` tiles and slices of at least ``min_k``.

    As many slices as one wave of :data:`SPLITK_PROGRAMS_PER_SM` programs per SM holds
    (``slots // tiles``, as the decode attention's rule): a memory-bound kernel wants every
    SM streaming, and a second, partial wave would stream with a few SMs only. At least
    one, and at most ``k // min_k``; then lowered to the count that whole ``block_k``
    tiles per slice give without an empty slice.
    """
    slots = n_sms * SPLITK_PROGRAMS_PER_SM
    wanted = max(1, min(slots // max(tiles, 1), k // min_k))
    return cdiv(k, _k_per_split(k, block_k, wanted))


@functools.lru_cache(maxsize=4096)
def splitk_launch(m: int, n: int, k: int, device_index: int, split_k: int | None = None) -> SplitKLaunch:
    """The :class:`SplitKLaunch` of :func:`matmul_splitk` for ``(m, k) @ (k, n)`` (all >= 1)
    on CUDA device ``device_index`` (-1: the CPU, under the interpreter).

    * ``block_n``, ``block_k``, ``num_warps``, ``num_stages``: :data:`SPLITK_BLOCK_N`,
      :data:`SPLITK_BLOCK_K`, :data:`SPLITK_NUM_WARPS`, :data:`SPLITK_NUM_STAGES`.
    * ``block_m``: the next power of two of ``m``, from 16 (``tl.dot``'s least) to 64.
    * ``split_k``: :func:`splitk_splits` of the ``cdiv(n, block_n) * cdiv(m, block_m)``
      output tiles on this device's SMs. On an H100 (132 SMs, one program each) at
      ``m <= 64``: 1 for every projection of Llama-3-8B (N = 4096 to 28672: 128 to 896
      column tiles, a wave already), 2 for N = 2048 and 4 for N = 1024. Measured on the
      H100 (2026-11-25) at 1 x 4096 x 14336: one slice 2119 GB/s, two 2031, four 1963,
      eight 1991, cuBLAS 2075; at 64 x 4096 x 14336: one 2062, two 1860.

    ``split_k`` overrides the rule's choice; it is lowered the same way, to at most one
    slice per ``block_k`` tile of K and no empty slice.
    """
    if is_interpreter():
        block_n, block_k = SPLITK_INTERPRETER_BLOCK_N, SPLITK_INTERPRETER_BLOCK_K
        min_k, num_stages = SPLITK_INTERPRETER_MIN_K_PER_SPLIT, 1
    else:
        block_n, block_k = SPLITK_BLOCK_N, SPLITK_BLOCK_K
        min_k, num_stages = SPLITK_MIN_K_PER_SPLIT, SPLITK_NUM_STAGES
    block_m = min(SPLITK_MAX_BLOCK_M, max(SPLITK_MIN_BLOCK_M, next_power_of_2(m)))
    if split_k is None:
        tiles = cdiv(n, block_n) * cdiv(m, block_m)
        split_k = splitk_splits(tiles, k, num_sms(device_index, SPLITK_INTERPRETER_SMS), block_k, min_k)
    else:
        split_k = cdiv(k, _k_per_split(k, block_k, split_k))
    return SplitKLaunch(block_m, block_n, block_k, split_k, SPLITK_NUM_WARPS, num_stages)


def _check(a, b, split_k) -> None:
    """Every check of :func:`matmul_splitk`'s arguments."""
    check_tensors(("a", "b"), (a, b), HALF_DTYPES)
    check_matmul_shapes(a, b)
    if split_k is not None:
        if type(split_k) is not int:
            raise TypeError(f"split_k must be None or an int, got {type(split_k).__name__}")
        if split_k < 1:
            raise ValueError(f"split_k must be a positive int, got {split_k}")
    if torch.is_grad_enabled() and (a.requires_grad or b.requires_grad):
        raise RuntimeError(
            "matmul_splitk is not differentiable (it serves decode, which is inference) and an input "
            "requires grad: call it under torch.no_grad() or torch.inference_mode(), pass detached "
            "tensors, or use gpuperf.kernels.matmul for training"
        )


@op("gpuperf::matmul_splitk", tensors=("a", "b"))
def matmul_splitk(
    a: torch.Tensor, b: torch.Tensor, *, split_k: int | None = None
) -> tuple[torch.Tensor, Launches]:
    """Return ``a @ b`` for a few rows of ``a``, with the reduction over K split among programs.

    Meant for ``M`` up to :data:`SPLITK_MAX_M` (64) rows against a large weight, as in a
    decode step, where the weight's read is the whole cost and a tiled matmul leaves most
    SMs idle. Larger ``M`` is computed correctly but slower than
    :func:`~gpuperf.kernels.matmul` and :func:`~gpuperf.kernels.matmul_persistent`: each
    block of 64 rows reads the whole weight again.

    Args:
        a: ``(M, K)``, float16 or bfloat16, any strides; on a CUDA device (or on the CPU
            when ``TRITON_INTERPRET=1``).
        b: ``(K, N)``, the same dtype and device, any strides: a row-major ``(K, N)``
            weight, or the transposed view ``w.t()`` of an ``nn.Linear`` weight ``w``
            ``(N, K)``, read in place without a copy.
        split_k: the number of K slices, overriding the launch rule
            (:func:`splitk_launch`); a positive int, lowered to at most one slice per
            ``BLOCK_K`` tile of K. Keyword only.

    Returns:
        A new contiguous ``(M, N)`` tensor of ``a``'s dtype, accumulated in float32 (each
        slice, then the sum of the slices in a fixed order) and rounded once: the same
        result on every run. ``K = 0`` gives zeros; ``M = 0`` or ``N = 0`` gives an empty
        tensor without a launch. Not differentiable (decode is inference).

    Raises:
        TypeError: ``a`` or ``b`` is not a tensor, a dtype is not float16 or bfloat16,
            the dtypes differ, or ``split_k`` is not None or an int.
        ValueError: ``a`` or ``b`` is not 2-D, the inner dimensions differ, ``split_k``
            is not positive, or the tensors are on different devices (or on the CPU
            while the interpreter is off).
        RuntimeError: gradients are enabled and an input requires grad (use
            :func:`gpuperf.kernels.matmul` for training).

    Never synchronizes with the device: it can be captured in a CUDA graph. Registered
    as ``torch.ops.gpuperf.matmul_splitk`` (``torch.library.triton_op``): inside
    ``torch.compile`` this function calls it, so a compiled model keeps one graph. Called
    eagerly, a call whose inputs are like ones already checked (shapes, strides, dtypes,
    device, 16-byte alignment, ``split_k`` of the same type and value) launches from their
    plan (:mod:`gpuperf.kernels.launch`), which allocates the workspace again.

    Memory traffic: ``a`` is read once per column block (from L2 after the first),
    ``b`` once per block of 64 rows (once for ``M <= 64``), the output written once;
    with ``S`` slices, also ``S * M * N`` float32 partials written and read back. The
    minimum is ``(M*K + K*N + M*N) * element_size`` bytes. FLOPs ``2 * M * N * K``.
    Algorithm: split-K GEMM with a parallel reduction, as CUTLASS's
    ``GemmSplitKParallel``, on the tile loop of Triton's matmul tutorial.
    """
    _check(a, b, split_k)
    m, k = a.shape
    n = b.shape[1]
    if k == 0:
        return a.new_zeros((m, n)), ()
    c = a.new_empty((m, n))
    if m == 0 or n == 0:
        return c, ()
    launch = splitk_launch(m, n, k, a.get_device(), split_k)
    # The kernels read a and b in place, through their strides: no copy is ever made.
    grid = (cdiv(n, launch.block_n), launch.split_k, cdiv(m, launch.block_m))
    constexprs = (launch.block_m, launch.block_n, launch.block_k, k % launch.block_k == 0)
    k_per_split = _k_per_split(k, launch.block_k, launch.split_k)
    single = launch.split_k == 1  # one slice writes the output directly, rounded once
    ws = None if single else torch.empty((launch.split_k, m, n), dtype=torch.float32, device=a.device)
    runtime = (a, b, c if single else ws, m, n, k, k_per_split, *a.stride(), *b.stride(), m * n, n)
    main = Launch(_matmul_splitk_kernel, grid, runtime, constexprs, launch.num_warps, launch.num_stages)
    if single:
        return c, (main,)
    block_s = min(next_power_of_2(launch.split_k), SPLITK_REDUCE_MAX_BLOCK_S)
    block = max(128, SPLITK_REDUCE_ELEMENTS // block_s)
    reduce = Launch(
        _splitk_reduce_kernel,
        (cdiv(m * n, block),),
        (ws, c, m * n, launch.split_k),
        (block_s, block),
        SPLITK_REDUCE_WARPS,
        1,
    )
    return c, (Workspace(ws), main, reduce)


__all__ = ["SPLITK_MAX_M", "SplitKLaunch", "matmul_splitk", "splitk_launch", "splitk_splits"]
