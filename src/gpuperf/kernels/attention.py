"""Fused attention, forward and backward, in the FlashAttention-2 way.

``softmax(Q Kᵀ · scale) V`` without ever writing the ``S_q x S_k`` score matrix
to memory. Each forward program keeps one ``BLOCK_M x D`` tile of Q on chip and
streams K and V past it in tiles of ``BLOCK_N`` keys; the softmax is computed
online (tutorial 02's long-row kernel): a running row maximum ``m`` and row sum
``l`` are rescaled whenever ``m`` grows, and so is the output accumulator
(:mod:`gpuperf.kernels.online_softmax`, which the decode step shares). Only
``O`` and the log-sum-exp of each row (``m + log2 l``, 4 bytes a row) are written.

The backward pass recomputes the probabilities ``P = exp2(Q Kᵀ · scale · log2 e - lse)``
tile by tile from the saved log-sum-exp instead of reading a stored ``P``, which
would cost ``S_q · S_k`` elements of memory and as many bytes of traffic per pass.
Two kernels share it: one program per block of keys accumulates ``dK`` and ``dV``
over every query of every head that shares the key head (so grouped-query
attention needs no atomics and no second reduction), and one program per block
of queries accumulates ``dQ``. With ``delta = rowsum(dO ∘ O)``:

    dV = Pᵀ dO,   dP = dO Vᵀ,   dS = P ∘ (dP - delta),   dQ = dS K · scale,   dK = dSᵀ Q · scale

Causal attention skips the key tiles above the diagonal and masks only the tiles
that cross it. Sources: Dao, "FlashAttention-2: Faster Attention with Better
Parallelism and Work Partitioning" (arXiv:2307.08691), Algorithms 1 and 2; Dao
et al., "FlashAttention" (arXiv:2205.14135); Triton's fused-attention tutorial
(https://triton-lang.org/main/getting-started/tutorials/06-fused-attention.html).
"""

from __future__ import annotations

import functools

import torch
import triton
import triton.language as tl

from gpuperf._runtime import gpu_slug, is_interpreter
from gpuperf.kernels import _attention_configs
from gpuperf.kernels._attention_checks import check_attention, check_scale
from gpuperf.kernels._attention_configs import ATTENTION_HEAD_DIMS, AttentionConfig
from gpuperf.kernels._grid import cdiv
from gpuperf.kernels.launch import Launch, Launches, Workspace, launcher, op
from gpuperf.kernels.online_softmax import online_softmax_tiles

# exp(x) == exp2(x * log2(e)); exp2 is the hardware instruction.
LOG2E = 1.4426950408889634


@triton.jit
def _attention_forward_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    o_ptr,
    lse_ptr,
    stride_qb,
    stride_qh,
    stride_qm,
    stride_qd,
    stride_kb,
    stride_kh,
    stride_kn,
    stride_kd,
    stride_vb,
    stride_vh,
    stride_vn,
    stride_vd,
    stride_ob,
    stride_oh,
    stride_om,
    n_heads,
    group_size,
    seq_q,
    seq_k,
    qk_scale,
    HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr,
    EVEN_M: tl.constexpr,
    EVEN_N: tl.constexpr,
):
    # Inductor passes Python floats to user kernels as float64 (Triton passes float32):
    # cast, or every score, the running max and the accumulator would turn float64.
    qk_scale = tl.cast(qk_scale, tl.float32)
    pid_m = tl.program_id(0)
    if CAUSAL:
        # Tiles near the end of the sequence see the most keys: start them first,
        # so the short ones fill the gaps at the end of the grid.
        pid_m = tl.num_programs(0) - 1 - pid_m
    pid_bh = tl.program_id(1)
    batch = pid_bh // n_heads
    head = pid_bh % n_heads
    kv_head = head // group_size  # grouped-query attention: heads share K and V in groups
    q_base = q_ptr + batch.to(tl.int64) * stride_qb + head.to(tl.int64) * stride_qh
    k_base = k_ptr + batch.to(tl.int64) * stride_kb + kv_head.to(tl.int64) * stride_kh
    v_base = v_ptr + batch.to(tl.int64) * stride_vb + kv_head.to(tl.int64) * stride_vh

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q_ptrs = q_base + offs_m[:, None].to(tl.int64) * stride_qm + offs_d[None, :] * stride_qd
    # K is read as Kᵀ tiles (HEAD_DIM x BLOCK_N), ready for Q @ Kᵀ.
    k_ptrs = k_base + offs_n[None, :] * stride_kn + offs_d[:, None] * stride_kd
    v_ptrs = v_base + offs_n[:, None] * stride_vn + offs_d[None, :] * stride_vd
    if EVEN_M:
        q = tl.load(q_ptrs)
    else:
        q = tl.load(q_ptrs, mask=offs_m[:, None] < seq_q, other=0.0)

    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    if CAUSAL:
        # Keys left of the tile's first row: every query of the tile sees them all.
        diagonal = pid_m * BLOCK_M
        acc, l_i, m_i = online_softmax_tiles(
            acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_kn, stride_vn, offs_n, seq_k, offs_m, qk_scale,
            0, diagonal, BLOCK_N,
        )  # fmt: skip
        # The tiles the diagonal crosses: mask keys j > i (and keys past the end).
        acc, l_i, m_i = online_softmax_tiles(
            acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_kn, stride_vn, offs_n, seq_k, offs_m, qk_scale,
            diagonal, tl.minimum(diagonal + BLOCK_M, seq_k), BLOCK_N, MASK_KEYS=not EVEN_N, CAUSAL=True,
        )  # fmt: skip
    else:
        full = seq_k if EVEN_N else (seq_k // BLOCK_N) * BLOCK_N
        acc, l_i, m_i = online_softmax_tiles(
            acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_kn, stride_vn, offs_n, seq_k, offs_m, qk_scale,
            0, full, BLOCK_N,
        )  # fmt: skip
        if not EVEN_N:  # the last, partial tile of keys
            acc, l_i, m_i = online_softmax_tiles(
                acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_kn, stride_vn, offs_n, seq_k, offs_m, qk_scale,
                full, seq_k, BLOCK_N, MASK_KEYS=True,
            )  # fmt: skip

    acc = acc / l_i[:, None]
    o_ptrs = (
        o_ptr
        + batch.to(tl.int64) * stride_ob
        + head.to(tl.int64) * stride_oh
        + offs_m[:, None].to(tl.int64) * stride_om
        + offs_d[None, :]
    )
    lse_ptrs = lse_ptr + pid_bh.to(tl.int64) * seq_q + offs_m
    if EVEN_M:
        tl.store(lse_ptrs, m_i + tl.math.log2(l_i))
        tl.store(o_ptrs, acc.to(o_ptr.dtype.element_ty))
    else:
        tl.store(lse_ptrs, m_i + tl.math.log2(l_i), mask=offs_m < seq_q)
        tl.store(o_ptrs, acc.to(o_ptr.dtype.element_ty), mask=offs_m[:, None] < seq_q)


@triton.jit
def _attention_delta_kernel(
    o_ptr,
    do_ptr,
    delta_ptr,
    stride_ob,
    stride_oh,
    stride_om,
    stride_dob,
    stride_doh,
    stride_dom,
    stride_dod,
    n_heads,
    seq_q,
    HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,
):
    """``delta = rowsum(dO ∘ O)`` in float32: the term the softmax's backward subtracts."""
    pid_bh = tl.program_id(1)
    batch = pid_bh // n_heads
    head = pid_bh % n_heads
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    rows = offs_m[:, None] < seq_q
    o = tl.load(
        o_ptr + batch.to(tl.int64) * stride_ob + head.to(tl.int64) * stride_oh
        + offs_m[:, None].to(tl.int64) * stride_om + offs_d[None, :],
        mask=rows, other=0.0,
    )  # fmt: skip
    do = tl.load(
        do_ptr + batch.to(tl.int64) * stride_dob + head.to(tl.int64) * stride_doh
        + offs_m[:, None].to(tl.int64) * stride_dom + offs_d[None, :] * stride_dod,
        mask=rows, other=0.0,
    )  # fmt: skip
    delta = tl.sum(o.to(tl.float32) * do.to(tl.float32), axis=1)
    tl.store(delta_ptr + pid_bh.to(tl.int64) * seq_q + offs_m, delta, mask=offs_m < seq_q)


@triton.jit
def _dkdv_tiles(
    dk,
    dv,
    k,
    v,
    q_ptrs,
    do_ptrs,
    lse_ptr,
    delta_ptr,
    stride_qm,
    stride_dom,
    offs_m,
    offs_n,
    seq_q,
    qk_scale,
    start,
    end,
    BLOCK_M: tl.constexpr,
    MASK_QUERIES: tl.constexpr,
    CAUSAL_DIAGONAL: tl.constexpr,
):
    """Add the query tiles ``[start, end)`` of one head to ``dK`` and ``dV`` of one key tile."""
    for start_m in range(start, end, BLOCK_M):
        start_m = tl.multiple_of(start_m, BLOCK_M)
        rows = start_m + offs_m
        q_tile = q_ptrs + start_m.to(tl.int64) * stride_qm
        do_tile = do_ptrs + start_m.to(tl.int64) * stride_dom
        if MASK_QUERIES:
            # Rows past the end read lse = +inf, so their P is exactly 0.
            q_t = tl.load(q_tile, mask=rows[None, :] < seq_q, other=0.0)
            lse = tl.load(lse_ptr + rows, mask=rows < seq_q, other=float("inf"))
            do = tl.load(do_tile, mask=rows[:, None] < seq_q, other=0.0)
            delta = tl.load(delta_ptr + rows, mask=rows < seq_q, other=0.0)
        else:
            q_t = tl.load(q_tile)
            lse = tl.load(lse_ptr + rows)
            do = tl.load(do_tile)
            delta = tl.load(delta_ptr + rows)
        # Pᵀ, recomputed: (BLOCK_N x BLOCK_M).
        p_t = tl.math.exp2(tl.dot(k, q_t) * qk_scale - lse[None, :])
        if CAUSAL_DIAGONAL:
            p_t = tl.where(rows[None, :] >= offs_n[:, None], p_t, 0.0)
        dv = tl.dot(p_t.to(do.dtype), do, dv)
        dp_t = tl.dot(v, tl.trans(do))
        ds_t = p_t * (dp_t - delta[None, :])
        dk = tl.dot(ds_t.to(q_t.dtype), tl.trans(q_t), dk)
    return dk, dv


@triton.jit
def _attention_dkdv_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    do_ptr,
    lse_ptr,
    delta_ptr,
    dk_ptr,
    dv_ptr,
    stride_qb,
    stride_qh,
    stride_qm,
    stride_qd,
    stride_kb,
    stride_kh,
    stride_kn,
    stride_kd,
    stride_vb,
    stride_vh,
    stride_vn,
    stride_vd,
    stride_dob,
    stride_doh,
    stride_dom,
    stride_dod,
    stride_dkb,
    stride_dkh,
    stride_dkn,
    n_heads,
    n_kv_heads,
    group_size,
    seq_q,
    seq_k,
    qk_scale,
    scale,
    HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr,
    EVEN_M: tl.constexpr,
    EVEN_N: tl.constexpr,
):
    # Inductor passes Python floats to user kernels as float64 (Triton passes float32):
    # cast, or every score, the running max and the accumulator would turn float64.
    qk_scale = tl.cast(qk_scale, tl.float32)
    scale = tl.cast(scale, tl.float32)
    pid_n = tl.program_id(0)
    pid_bh = tl.program_id(1)
    batch = pid_bh // n_kv_heads
    kv_head = pid_bh % n_kv_heads
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_m = tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    k_ptrs = (
        k_ptr + batch.to(tl.int64) * stride_kb + kv_head.to(tl.int64) * stride_kh
        + offs_n[:, None].to(tl.int64) * stride_kn + offs_d[None, :] * stride_kd
    )  # fmt: skip
    v_ptrs = (
        v_ptr + batch.to(tl.int64) * stride_vb + kv_head.to(tl.int64) * stride_vh
        + offs_n[:, None].to(tl.int64) * stride_vn + offs_d[None, :] * stride_vd
    )  # fmt: skip
    if EVEN_N:
        k = tl.load(k_ptrs)
        v = tl.load(v_ptrs)
    else:
        k = tl.load(k_ptrs, mask=offs_n[:, None] < seq_k, other=0.0)
        v = tl.load(v_ptrs, mask=offs_n[:, None] < seq_k, other=0.0)
    dk = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
    # Every query head of the group reads this key head: sum their gradients here.
    for g in range(group_size):
        head = kv_head * group_size + g
        # Qᵀ tiles (HEAD_DIM x BLOCK_M), ready for K @ Qᵀ.
        q_ptrs = (
            q_ptr + batch.to(tl.int64) * stride_qb + head.to(tl.int64) * stride_qh
            + offs_m[None, :] * stride_qm + offs_d[:, None] * stride_qd
        )  # fmt: skip
        do_ptrs = (
            do_ptr + batch.to(tl.int64) * stride_dob + head.to(tl.int64) * stride_doh
            + offs_m[:, None] * stride_dom + offs_d[None, :] * stride_dod
        )  # fmt: skip
        row = (batch * n_heads + head).to(tl.int64) * seq_q
        if CAUSAL:
            # Queries i < j never see key j. The tile's own rows cross the diagonal;
            # the rows below it see every key of the tile.
            diagonal = pid_n * BLOCK_N
            dk, dv = _dkdv_tiles(
                dk, dv, k, v, q_ptrs, do_ptrs, lse_ptr + row, delta_ptr + row, stride_qm, stride_dom,
                offs_m, offs_n, seq_q, qk_scale, diagonal, tl.minimum(diagonal + BLOCK_N, seq_q),
                BLOCK_M, not EVEN_M, True,
            )  # fmt: skip
            dk, dv = _dkdv_tiles(
                dk, dv, k, v, q_ptrs, do_ptrs, lse_ptr + row, delta_ptr + row, stride_qm, stride_dom,
                offs_m, offs_n, seq_q, qk_scale, diagonal + BLOCK_N, seq_q, BLOCK_M, not EVEN_M, False,
            )  # fmt: skip
        else:
            dk, dv = _dkdv_tiles(
                dk, dv, k, v, q_ptrs, do_ptrs, lse_ptr + row, delta_ptr + row, stride_qm, stride_dom,
                offs_m, offs_n, seq_q, qk_scale, 0, seq_q, BLOCK_M, not EVEN_M, False,
            )  # fmt: skip
    dk *= scale
    out = (
        batch.to(tl.int64) * stride_dkb + kv_head.to(tl.int64) * stride_dkh
        + offs_n[:, None].to(tl.int64) * stride_dkn + offs_d[None, :]
    )  # fmt: skip
    if EVEN_N:
        tl.store(dk_ptr + out, dk.to(dk_ptr.dtype.element_ty))
        tl.store(dv_ptr + out, dv.to(dv_ptr.dtype.element_ty))
    else:
        tl.store(dk_ptr + out, dk.to(dk_ptr.dtype.element_ty), mask=offs_n[:, None] < seq_k)
        tl.store(dv_ptr + out, dv.to(dv_ptr.dtype.element_ty), mask=offs_n[:, None] < seq_k)


@triton.jit
def _dq_tiles(
    dq,
    q,
    do,
    lse,
    delta,
    k_ptrs,
    v_ptrs,
    stride_kn,
    stride_vn,
    offs_m,
    offs_n,
    seq_k,
    qk_scale,
    start,
    end,
    BLOCK_N: tl.constexpr,
    MASK_KEYS: tl.constexpr,
    CAUSAL_DIAGONAL: tl.constexpr,
):
    """Add the key tiles ``[start, end)`` to ``dQ`` of one query tile."""
    for start_n in range(start, end, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        cols = start_n + offs_n
        k_tile = k_ptrs + start_n.to(tl.int64) * stride_kn
        v_tile = v_ptrs + start_n.to(tl.int64) * stride_vn
        if MASK_KEYS:
            k_t = tl.load(k_tile, mask=cols[None, :] < seq_k, other=0.0)
            v_t = tl.load(v_tile, mask=cols[None, :] < seq_k, other=0.0)
        else:
            k_t = tl.load(k_tile)
            v_t = tl.load(v_tile)
        p = tl.math.exp2(tl.dot(q, k_t) * qk_scale - lse[:, None])
        if MASK_KEYS or CAUSAL_DIAGONAL:
            keep = cols[None, :] < seq_k
            if CAUSAL_DIAGONAL:
                keep = keep & (offs_m[:, None] >= cols[None, :])
            p = tl.where(keep, p, 0.0)
        dp = tl.dot(do, v_t)
        ds = p * (dp - delta[:, None])
        dq = tl.dot(ds.to(k_t.dtype), tl.trans(k_t), dq)
    return dq


@triton.jit
def _attention_dq_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    do_ptr,
    lse_ptr,
    delta_ptr,
    dq_ptr,
    stride_qb,
    stride_qh,
    stride_qm,
    stride_qd,
    stride_kb,
    stride_kh,
    stride_kn,
    stride_kd,
    stride_vb,
    stride_vh,
    stride_vn,
    stride_vd,
    stride_dob,
    stride_doh,
    stride_dom,
    stride_dod,
    stride_dqb,
    stride_dqh,
    stride_dqm,
    n_heads,
    group_size,
    seq_q,
    seq_k,
    qk_scale,
    scale,
    HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr,
    EVEN_M: tl.constexpr,
    EVEN_N: tl.constexpr,
):
    # Inductor passes Python floats to user kernels as float64 (Triton passes float32):
    # cast, or every score, the running max and the accumulator would turn float64.
    qk_scale = tl.cast(qk_scale, tl.float32)
    scale = tl.cast(scale, tl.float32)
    pid_m = tl.program_id(0)
    if CAUSAL:
        pid_m = tl.num_programs(0) - 1 - pid_m  # the longest rows first, as in the forward
    pid_bh = tl.program_id(1)
    batch = pid_bh // n_heads
    head = pid_bh % n_heads
    kv_head = head // group_size
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q_ptrs = (
        q_ptr + batch.to(tl.int64) * stride_qb + head.to(tl.int64) * stride_qh
        + offs_m[:, None].to(tl.int64) * stride_qm + offs_d[None, :] * stride_qd
    )  # fmt: skip
    do_ptrs = (
        do_ptr + batch.to(tl.int64) * stride_dob + head.to(tl.int64) * stride_doh
        + offs_m[:, None].to(tl.int64) * stride_dom + offs_d[None, :] * stride_dod
    )  # fmt: skip
    row = pid_bh.to(tl.int64) * seq_q
    if EVEN_M:
        q = tl.load(q_ptrs)
        do = tl.load(do_ptrs)
        lse = tl.load(lse_ptr + row + offs_m)
        delta = tl.load(delta_ptr + row + offs_m)
    else:
        q = tl.load(q_ptrs, mask=offs_m[:, None] < seq_q, other=0.0)
        do = tl.load(do_ptrs, mask=offs_m[:, None] < seq_q, other=0.0)
        lse = tl.load(lse_ptr + row + offs_m, mask=offs_m < seq_q, other=0.0)
        delta = tl.load(delta_ptr + row + offs_m, mask=offs_m < seq_q, other=0.0)
    # Kᵀ and Vᵀ tiles (HEAD_DIM x BLOCK_N).
    k_ptrs = (
        k_ptr + batch.to(tl.int64) * stride_kb + kv_head.to(tl.int64) * stride_kh
        + offs_n[None, :] * stride_kn + offs_d[:, None] * stride_kd
    )  # fmt: skip
    v_ptrs = (
        v_ptr + batch.to(tl.int64) * stride_vb + kv_head.to(tl.int64) * stride_vh
        + offs_n[None, :] * stride_vn + offs_d[:, None] * stride_vd
    )  # fmt: skip
    dq = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    if CAUSAL:
        diagonal = pid_m * BLOCK_M
        dq = _dq_tiles(
            dq, q, do, lse, delta, k_ptrs, v_ptrs, stride_kn, stride_vn, offs_m, offs_n, seq_k, qk_scale,
            0, diagonal, BLOCK_N, False, False,
        )  # fmt: skip
        dq = _dq_tiles(
            dq, q, do, lse, delta, k_ptrs, v_ptrs, stride_kn, stride_vn, offs_m, offs_n, seq_k, qk_scale,
            diagonal, tl.minimum(diagonal + BLOCK_M, seq_k), BLOCK_N, not EVEN_N, True,
        )  # fmt: skip
    else:
        full = seq_k if EVEN_N else (seq_k // BLOCK_N) * BLOCK_N
        dq = _dq_tiles(
            dq, q, do, lse, delta, k_ptrs, v_ptrs, stride_kn, stride_vn, offs_m, offs_n, seq_k, qk_scale,
            0, full, BLOCK_N, False, False,
        )  # fmt: skip
        if not EVEN_N:
            dq = _dq_tiles(
                dq, q, do, lse, delta, k_ptrs, v_ptrs, stride_kn, stride_vn, offs_m, offs_n, seq_k,
                qk_scale, full, seq_k, BLOCK_N, True, False,
            )  # fmt: skip
    dq *= scale
    out = (
        dq_ptr + batch.to(tl.int64) * stride_dqb + head.to(tl.int64) * stride_dqh
        + offs_m[:, None].to(tl.int64) * stride_dqm + offs_d[None, :]
    )  # fmt: skip
    if EVEN_M:
        tl.store(out, dq.to(dq_ptr.dtype.element_ty))
    else:
        tl.store(out, dq.to(dq_ptr.dtype.element_ty), mask=offs_m[:, None] < seq_q)


@functools.lru_cache(maxsize=256)
def _configs_for(device_index: int, head_dim: int, causal: bool):
    slug = None if is_interpreter() else gpu_slug(torch.cuda.get_device_name(device_index))
    return _attention_configs.attention_configs(slug, head_dim, causal)


def attention_configs(q: torch.Tensor, *, causal: bool = False) -> dict[str, AttentionConfig]:
    """The launch configs :func:`attention` uses for queries like ``q``, by kernel:
    ``{"forward": ..., "dkdv": ..., "dq": ...}`` (from the committed tuning sweep)."""
    return dict(
        zip(
            _attention_configs.ATTENTION_KERNELS,
            _configs_for(q.get_device(), q.shape[-1], causal),
            strict=True,
        )
    )


def forget_tuned_configs() -> None:
    """Drop the cached config choices and plans: the next call reads the tuning sweeps again."""
    _attention_configs._attention_table.cache_clear()
    _configs_for.cache_clear()
    attention.plans.clear()
    attention.registered_plans.clear()
    attention_backward.plans.clear()


def _forward_launch(o, lse, q, k, v, causal: bool, scale: float, config: AttentionConfig) -> Launch:
    """The forward kernel's launch with ``config`` into ``o`` (``q``'s shape) and ``lse``
    (float32, ``(B, H, S_q)``)."""
    batch, n_heads, seq_q, head_dim = q.shape
    n_kv_heads, seq_k = k.shape[1], k.shape[2]
    grid = (cdiv(seq_q, config.block_m), batch * n_heads)
    runtime = (
        q, k, v, o, lse, *q.stride(), *k.stride(), *v.stride(), *o.stride()[:3],
        n_heads, n_heads // n_kv_heads, seq_q, seq_k, scale * LOG2E,
    )  # fmt: skip
    constexprs = (
        head_dim,
        config.block_m,
        config.block_n,
        causal,
        seq_q % config.block_m == 0,
        seq_k % config.block_n == 0,
    )
    return Launch(_attention_forward_kernel, grid, runtime, constexprs, config.num_warps, config.num_stages)


def _backward_launches(dq, dk, dv, do, q, k, v, o, lse, causal: bool, scale: float, configs) -> list:
    """The backward's launches into ``dq``, ``dk`` and ``dv`` from the upstream gradient ``do``
    and the forward's ``o`` and ``lse``, with ``configs`` ``(forward, dK/dV, dQ)`` (the first
    unused): ``delta = rowsum(dO ∘ O)`` into a float32 :class:`~gpuperf.kernels.launch.Workspace`,
    then dK/dV, then dQ."""
    _, dkdv, dq_config = configs
    batch, n_heads, seq_q, head_dim = q.shape
    n_kv_heads, seq_k = k.shape[1], k.shape[2]
    group_size = n_heads // n_kv_heads
    delta = torch.empty(lse.shape, dtype=torch.float32, device=lse.device)
    block = 64 if head_dim <= 64 else 32
    delta_launch = Launch(
        _attention_delta_kernel,
        (cdiv(seq_q, block), batch * n_heads),
        (o, do, delta, *o.stride()[:3], *do.stride(), n_heads, seq_q),
        (head_dim, block),
        4,
        1,
    )
    strides = (*q.stride(), *k.stride(), *v.stride(), *do.stride())
    dkdv_launch = Launch(
        _attention_dkdv_kernel,
        (cdiv(seq_k, dkdv.block_n), batch * n_kv_heads),
        (
            q, k, v, do, lse, delta, dk, dv, *strides, *dk.stride()[:3],
            n_heads, n_kv_heads, group_size, seq_q, seq_k, scale * LOG2E, scale,
        ),
        (head_dim, dkdv.block_m, dkdv.block_n, causal, seq_q % dkdv.block_m == 0, seq_k % dkdv.block_n == 0),
        dkdv.num_warps,
        dkdv.num_stages,
    )  # fmt: skip
    dq_launch = Launch(
        _attention_dq_kernel,
        (cdiv(seq_q, dq_config.block_m), batch * n_heads),
        (
            q, k, v, do, lse, delta, dq, *strides, *dq.stride()[:3],
            n_heads, group_size, seq_q, seq_k, scale * LOG2E, scale,
        ),
        (
            head_dim, dq_config.block_m, dq_config.block_n, causal,
            seq_q % dq_config.block_m == 0, seq_k % dq_config.block_n == 0,
        ),
        dq_config.num_warps,
        dq_config.num_stages,
    )  # fmt: skip
    return [Workspace(delta), delta_launch, dkdv_launch, dq_launch]


def _launch_now(launches) -> None:
    """Launch each of ``launches`` through the cache of compiled kernels (no plan)."""
    for step in launches:
        if type(step) is Launch:
            launcher(step.kernel, step.args)(
                step.grid, step.args, step.constexprs, num_warps=step.num_warps, num_stages=step.num_stages
            )


def forward_into(o, lse, q, k, v, causal: bool, scale: float, config: AttentionConfig) -> None:
    """Launch the forward kernel with ``config`` into ``o`` (``q``'s shape) and ``lse`` (float32,
    ``(B, H, S_q)``), through the cache of compiled kernels. No checks: the caller passes
    checked tensors (the tuning sweep of :mod:`gpuperf.bench.tuning`, which times each
    config)."""
    _launch_now((_forward_launch(o, lse, q, k, v, causal, scale, config),))


def backward_into(dq, dk, dv, do, q, k, v, o, lse, causal: bool, scale: float, configs) -> None:
    """Launch the backward into ``dq``, ``dk`` and ``dv`` from the upstream gradient ``do`` and
    the forward's ``o`` and ``lse``, with ``configs`` ``(forward, dK/dV, dQ)`` (the first
    unused), as :func:`forward_into`. No checks, as there."""
    _launch_now(_backward_launches(dq, dk, dv, do, q, k, v, o, lse, causal, scale, configs))


@op("gpuperf::attention_backward", tensors=6)
def attention_backward(
    grad_out: torch.Tensor,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    out: torch.Tensor,
    lse: torch.Tensor,
    causal: bool,
    scale: float | None,
) -> tuple[tuple[torch.Tensor, torch.Tensor, torch.Tensor], Launches]:
    """``(dq, dk, dv)`` of :func:`attention` from the gradient ``grad_out`` of its output
    (``q``'s shape, any strides) and what its forward saved: ``q``, ``k``, ``v``, the output
    ``out``, the float32 log-sum-exp ``lse`` ``(B, H, S_q)``, ``causal`` and ``scale`` (None:
    ``1 / sqrt(D)``). Called by autograd, it checks nothing.

    Three launches: ``delta = rowsum(dO ∘ O)`` per query row into a float32 workspace
    ``(B, H, S_q)``, then one program per block of keys for dK and dV (summed over the query
    heads of each group), then one per block of queries for dQ. Gradients come out in the
    inputs' dtypes. No query: ``dq`` empty, ``dk`` and ``dv`` zeros, nothing launched.
    """
    scale = check_scale(scale, q.shape[3])
    dq = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    dk = torch.empty(k.shape, dtype=k.dtype, device=k.device)
    dv = torch.empty(v.shape, dtype=v.dtype, device=v.device)
    if q.numel() == 0:  # no query: no gradient flows to the keys and values
        return (dq, dk.zero_(), dv.zero_()), ()
    if dk.numel() == 0:
        return (dq, dk, dv), ()
    configs = _configs_for(q.get_device(), q.shape[3], causal)
    return (dq, dk, dv), _backward_launches(dq, dk, dv, grad_out, q, k, v, out, lse, causal, scale, configs)


@op(
    "gpuperf::attention",
    tensors=3,
    outputs=1,  # o; lse is for the backward
    backward=attention_backward,
    saves=lambda q, k, v, causal, scale, o, lse: (q, k, v, o, lse, causal, scale),
)
def attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    causal: bool = False,
    scale: float | None = None,
) -> tuple[tuple[torch.Tensor, torch.Tensor], Launches]:
    """Return ``softmax(q @ kᵀ · scale) @ v`` per batch and head, fused, with a Triton backward.

    The layout and semantics of ``torch.nn.functional.scaled_dot_product_attention``
    (with ``enable_gqa=True``), computed without storing the score matrix.

    Args:
        q: ``(B, H, S_q, D)``, float16 or bfloat16, on a CUDA device (or on the CPU
            under ``TRITON_INTERPRET=1``). ``D`` is one of
            :data:`~gpuperf.kernels._attention_configs.ATTENTION_HEAD_DIMS` (16, 32, 64, 128).
        k: ``(B, H_kv, S_k, D)``, the same dtype and device; ``H`` must be a multiple
            of ``H_kv``: each group of ``H / H_kv`` consecutive query heads shares one
            key/value head (grouped-query attention; ``H_kv = 1`` is multi-query).
        v: ``(B, H_kv, S_k, D)``, like ``k``.
        causal: query ``i`` attends to keys ``j <= i`` only. Needs ``S_q == S_k``
            (for ``S_q != S_k`` the diagonal is ambiguous: PyTorch aligns it to the
            top left, FlashAttention to the bottom right), so anything else is a
            ``ValueError``.
        scale: multiplies the scores before the softmax; a positive number,
            ``1 / sqrt(D)`` by default.

    Any strides are read in place, without a copy (a last-dimension stride other
    than 1 is correct but loads slowly). ``S_q`` and ``S_k`` need not be multiples
    of any block size.

    Returns:
        ``(B, H, S_q, D)``, contiguous, in the dtype of ``q``: scores, softmax and
        the weighted sum in float32, rounded once. Differentiable with respect to
        ``q``, ``k`` and ``v``: the backward is three Triton kernels that recompute
        the probabilities from the saved row log-sum-exp (float32, ``4 * B * H * S_q``
        bytes, besides the inputs and the output). Gradients of grouped heads are
        summed over each group.

    Raises:
        TypeError: an input is not a tensor, its dtype is not float16 or bfloat16,
            the dtypes differ, ``causal`` is not a bool or ``scale`` not a number.
        ValueError: a tensor is not 4-D, the batch sizes, head dims or key and value
            shapes disagree, ``H`` is not a multiple of ``H_kv``, ``D`` is not
            supported, ``S_k`` is 0, ``causal`` with ``S_q != S_k``, ``scale`` is
            not positive and finite, or the tensors are on different devices (or on
            the CPU while the interpreter is off).

    Registered as ``torch.ops.gpuperf.attention`` (through
    :func:`~gpuperf.kernels.launch.op`, returning the output and the log-sum-exp) with its
    backward ``torch.ops.gpuperf.attention_backward`` (:func:`attention_backward`,
    registered with ``torch.library.register_autograd``): inside ``torch.compile`` this
    function calls them, so ``torch.compile(fullgraph=True)`` keeps it in the graph and
    trains through it.

    Called eagerly, it launches the same kernels, with the same configs and arguments,
    through the cache of compiled kernels (:mod:`gpuperf.kernels.launch`): the results are
    the ops', bit for bit. With a gradient to record, the call goes through the
    registered op, whose autograd runs the backward; without one, a call whose inputs are
    like ones already checked (shapes, strides, dtypes, device, 16-byte alignment,
    ``causal`` and ``scale`` of the same types and values) launches from their plan
    (:mod:`gpuperf.kernels.launch`).

    FLOPs: ``4 * B * H * S_q * S_k * D`` forward (half that when causal), 2.5 times as
    many backward. Algorithm: FlashAttention-2 (arXiv:2307.08691).
    """
    scale = check_attention(q, k, v, causal, scale, ATTENTION_HEAD_DIMS)
    batch, n_heads, seq_q, _ = q.shape
    o = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    # Each row's log-sum-exp (base 2), float32: the backward recomputes the probabilities from it.
    lse = torch.empty((batch, n_heads, seq_q), dtype=torch.float32, device=q.device)
    if o.numel() == 0:
        return (o, lse), ()
    config = _configs_for(q.get_device(), q.shape[3], causal)[0]
    return (o, lse), (_forward_launch(o, lse, q, k, v, causal, scale, config),)


__all__ = [
    "AttentionConfig",
    "attention",
    "attention_backward",
    "attention_configs",
    "backward_into",
    "forward_into",
]
