"""The online softmax of FlashAttention-2: the loop over key tiles that the attention forward
(:mod:`gpuperf.kernels.attention`) and the decode step (:mod:`gpuperf.kernels.attention_decode`)
share.

A program holds one tile of ``BLOCK_M`` query rows ``Q`` (``BLOCK_M x D``) on chip and streams
the keys and values past it in tiles of ``BLOCK_N``. It never holds a whole row of scores:
it keeps, per row, the largest score seen so far ``m``, the sum ``l`` of the exponentials
taken relative to ``m``, and the output accumulator ``acc`` (``BLOCK_M x D``, float32),
weighted the same way. For each tile of keys ``K_j`` and values ``V_j``, in base 2 (the scale
``qk_scale`` holds ``log2 e``, so ``exp2`` is the hardware instruction)::

    S     = Q K_jᵀ · qk_scale                       (BLOCK_M x BLOCK_N)
    m_new = max(m, rowmax(S))
    P     = exp2(S - m_new)
    alpha = exp2(m - m_new)                          what was summed under the old maximum,
    l     = l · alpha + rowsum(P)                    rescaled to the new one
    acc   = acc · alpha + P V_j                      (P rounded to V's dtype for the tensor cores)
    m     = m_new

After the last tile, ``O = acc / l`` and the row's log-sum-exp (base 2) is ``m + log2 l``;
each kernel writes those itself. Source: Dao, "FlashAttention-2: Faster Attention with
Better Parallelism and Work Partitioning" (arXiv:2307.08691), Algorithm 1's inner loop over
key blocks (the unnormalized accumulator, divided by ``l`` once at the end); the rescaling
is Milakov and Gimelshein's online normalizer (arXiv:1805.02867), tutorial 02's long-row
softmax.

``online_softmax_tiles(acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_kn, stride_vn, offs_n,
n_keys, last, qk_scale, start, end, BLOCK_N, MASK_KEYS=False, CAUSAL=False,
LAST_IN_RANGE=False, EMPTY_ROWS=False)`` is a ``@triton.jit`` function: a kernel calls it
and Triton inlines it. Its constexpr flags say what the two kernels mask differently (its
docstring gives each argument's shape and each flag's meaning); a flag that is off
compiles to nothing.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def online_softmax_tiles(
    acc,
    l_i,
    m_i,
    q,
    k_ptrs,
    v_ptrs,
    stride_kn,
    stride_vn,
    offs_n,
    n_keys,
    last,
    qk_scale,
    start,
    end,
    BLOCK_N: tl.constexpr,
    MASK_KEYS: tl.constexpr = False,
    CAUSAL: tl.constexpr = False,
    LAST_IN_RANGE: tl.constexpr = False,
    EMPTY_ROWS: tl.constexpr = False,
):
    """Fold the key tiles ``[start, end)`` (``start`` a multiple of ``BLOCK_N``) into the running
    ``(acc, l_i, m_i)`` of one tile of query rows; return the new ``(acc, l_i, m_i)``.

    Args:
        acc: ``(BLOCK_M, D)`` float32, the unnormalized output so far (zeros at first).
        l_i: ``(BLOCK_M,)`` float32, each row's sum of ``exp2(score - m_i)`` (zeros at first).
        m_i: ``(BLOCK_M,)`` float32, each row's largest score so far (``-inf`` at first).
        q: ``(BLOCK_M, D)``, the query rows, float16 or bfloat16.
        k_ptrs: ``(D, BLOCK_N)`` pointers to the first tile of keys read as ``Kᵀ`` (key
            ``n`` at ``k_ptrs + n * stride_kn``); ``v_ptrs``: ``(BLOCK_N, D)`` pointers to
            the first tile of values, likewise with ``stride_vn``.
        offs_n: ``tl.arange(0, BLOCK_N)``, the key offsets within a tile.
        n_keys: keys ``>= n_keys`` are past the end (the sequence's length).
        last: ``(BLOCK_M,)`` int, the last key each row may see; read only with ``CAUSAL``.
        qk_scale: float32, the softmax scale times ``log2 e``; positive.
        BLOCK_N: keys per tile.
        MASK_KEYS: the range may hold keys ``>= n_keys`` (a partial last tile): they are
            not read (masked loads), and their scores are ``-inf`` (by ``last`` alone
            with ``LAST_IN_RANGE``). Off, every tile is read whole, unmasked.
        CAUSAL: row ``r`` sees key ``j`` only where ``j <= last[r]``; the scores of the
            others are ``-inf``.
        LAST_IN_RANGE: with ``CAUSAL``, every ``last[r] < n_keys``, so the causal mask
            alone keeps the keys past the end out (the decode step); off, the scores of
            keys ``>= n_keys`` are masked as well (for rows past the end of the queries).
        EMPTY_ROWS: a row may have seen no key yet (all its scores ``-inf``): its maximum
            is then taken as 0 in the exponentials, where ``-inf - -inf`` would be NaN; it
            keeps ``m_i = -inf`` and ``l_i = 0``.

    Without ``MASK_KEYS`` and ``CAUSAL`` no score is masked, and the scale multiplies each
    row's maximum rather than every score before it (``qk_scale > 0``, so the maximum of
    the scaled scores is the scaled maximum).
    """
    for start_n in range(start, end, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        cols = start_n + offs_n
        k_tile = k_ptrs + start_n.to(tl.int64) * stride_kn
        if MASK_KEYS:
            k = tl.load(k_tile, mask=cols[None, :] < n_keys, other=0.0)
        else:
            k = tl.load(k_tile)
        qk = tl.dot(q, k)
        if MASK_KEYS or CAUSAL:
            if CAUSAL and LAST_IN_RANGE:
                keep = last[:, None] >= cols[None, :]
            else:
                keep = cols[None, :] < n_keys
                if CAUSAL:
                    keep = keep & (last[:, None] >= cols[None, :])
            qk = tl.where(keep, qk * qk_scale, float("-inf"))
            m_new = tl.maximum(m_i, tl.max(qk, 1))
            if EMPTY_ROWS:
                # -inf - -inf is NaN: a row that has seen no key subtracts 0 instead.
                m_ref = tl.where(m_new == float("-inf"), 0.0, m_new)
            else:
                m_ref = m_new
            p = tl.math.exp2(qk - m_ref[:, None])
        else:
            # qk_scale > 0, so the maximum of the scaled scores is the scaled maximum.
            m_new = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
            m_ref = m_new
            p = tl.math.exp2(qk * qk_scale - m_new[:, None])
        # Rescale what was summed under the old maximum to the new one.
        alpha = tl.math.exp2(m_i - m_ref)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v_tile = v_ptrs + start_n.to(tl.int64) * stride_vn
        if MASK_KEYS:
            v = tl.load(v_tile, mask=cols[:, None] < n_keys, other=0.0)
        else:
            v = tl.load(v_tile)
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_new
    return acc, l_i, m_i


__all__ = ["online_softmax_tiles"]
