"""The decode step of attention: a few new queries per sequence against a KV cache, split
over the keys (Flash-Decoding).

In decode, each sequence brings ``S_q`` new queries (one per step, a few with
speculative decoding) and attends to every key in its cache. The work is one pass
over the cache: ``2 * B * H_kv * len * D`` elements read for ``4 * B * H * S_q * len * D``
FLOPs, so the kernel is bound by memory bandwidth, and the whole question is whether
enough programs run to keep the memory system busy. One program per (sequence, head),
as in the FlashAttention forward, launches only ``B * H_kv`` programs: eight at batch
1 for Llama-3-8B, on a GPU with 132 SMs.

Flash-Decoding (Dao, Haziza, Massa and Sizov, "Flash-Decoding for long-context
inference", 2023, https://crfm.stanford.edu/2023/10/12/flashdecoding.html) splits the
keys as well: ``_attention_decode_kernel`` runs on a grid of
``(B * H_kv * row blocks, num_splits)`` programs. Each takes one KV head and all the
``G = H / H_kv`` query heads that share it, times the ``S_q`` queries, as the rows of
one tile (``BLOCK_M``, at least 16 rows so that ``tl.dot`` runs on the tensor cores):
each K and V tile is then read once per KV head, not once per query head. It reads the
sequence's length on the device, takes its share of the keys (``chunk = cdiv(cdiv(len,
num_splits), BLOCK_N) * BLOCK_N`` keys from ``split * chunk``: balanced whatever the
cache's capacity), and folds them in with the attention forward's online softmax
(:mod:`gpuperf.kernels.online_softmax`), writing the split's output ``o_s`` (normalized)
and log-sum-exp ``lse_s`` (base 2) in float32. ``_attention_decode_combine_kernel``
merges them per query row:

    o = sum_s 2**(lse_s - lse_max) * o_s / sum_s 2**(lse_s - lse_max)

With one split (when ``B * H_kv`` programs already fill the GPU) the split kernel
writes the output itself and the combine is skipped.

Semantics follow FlashAttention's ``flash_attn_with_kvcache``: sequence ``b`` holds
``cache_seqlens[b]`` valid keys, and its queries are the last ``S_q`` positions,
causal, aligned bottom-right. The lengths stay on the GPU: the wrapper never reads
them (no synchronization, so a decode step can be captured in a CUDA graph), and a
length out of range makes that sequence's output NaN on the device.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import torch
import triton
import triton.language as tl

from gpuperf._runtime import is_interpreter
from gpuperf.kernels._attention_checks import check_scale, check_shapes
from gpuperf.kernels._grid import cdiv, next_power_of_2
from gpuperf.kernels._validation import HALF_DTYPES, check_tensors
from gpuperf.kernels.device import num_sms
from gpuperf.kernels.launch import Launch, Launches, Workspace, fields_as_dict, op
from gpuperf.kernels.online_softmax import online_softmax_tiles
from gpuperf.kernels.tma import tracing

# exp(x) == exp2(x * log2(e)); exp2 is the hardware instruction.
LOG2E = 1.4426950408889634

#: Head dims the kernel takes: powers of two (whole 16-byte vectors per row, and
#: ``tl.dot``'s inner dimension at least 16) from 16 up to 256 (Gemma's), as
#: :func:`gpuperf.kernels.attention` and more.
DECODE_HEAD_DIMS = (16, 32, 64, 128, 256)
#: The most new queries per sequence: decode is one token a step, a few more with
#: speculative decoding; beyond that the query tile is a prefill's, for
#: :func:`gpuperf.kernels.attention`.
DECODE_MAX_QUERIES = 16

# Launch rules, as data, each with its reason (candidates: the lead measures and sets them).
#: ``(BLOCK_N, num_warps, num_stages, most rows per tile)`` of the split kernel by head
#: dim. BLOCK_N * D = 8192 elements from D = 32 up: K and V tiles of 16 KB each in
#: bfloat16, three stages of both in 96 KB of shared memory, so two programs fit an H100
#: SM (228 KB) with two tiles of each in flight (D = 16 stops at 256 keys). Rows (query
#: heads x queries) per tile: the float32 accumulator (BLOCK_M x D) and scores (BLOCK_M x
#: BLOCK_N) hold at most 8192 elements each, 64 registers a thread at 4 warps.
DECODE_CONFIGS = {
    16: (256, 4, 3, 32),
    32: (256, 4, 3, 32),
    64: (128, 4, 3, 64),
    128: (64, 4, 3, 64),
    256: (32, 4, 3, 32),
}
#: Keys per tile under the interpreter: small, so small caches cross several tiles.
DECODE_INTERPRETER_BLOCK_N = 16
#: Programs of the split kernel the grid aims to give each SM: one. On an H100 (Llama-3-8B,
#: bf16), one program per SM beat two: 16 splits at batch 1 (128 programs) over the 29 of
#: a two-per-SM rule (1259 against 1176 GB/s at 8192 keys, 2089 against 1989 at 32768),
#: 2 splits at batch 8 over 4 (2107 against 2059 at 4096 keys).
DECODE_PROGRAMS_PER_SM = 1
#: One split when the (sequence, KV head) programs alone fill this share of the slots:
#: splitting would only add partials to write and combine (FlashAttention-2's 0.8).
DECODE_SINGLE_SPLIT_FILL = 0.8
#: Fewest keys a split is given: one tile of 64 (so at most S_max // 64 splits). On an
#: H100 at batch 1 and 1024 keys, 16 splits of 64 keys ran at 313 GB/s against 306 for 8
#: of 128; the partial a split writes (G * S_q * (D + 1) floats, 2 KB for Llama-3-8B's
#: decode) stays under a tenth of the 32 KB of cache it reads.
DECODE_MIN_KEYS_PER_SPLIT = 64
#: Most splits the launch rule picks (FlashAttention-2 allows 128).
DECODE_MAX_SPLITS = 64
#: Pipeline stages of the split kernel when it runs one split (a batch large enough to
#: fill the GPU with (sequence, KV head) programs): two, so that more programs share an
#: SM. On an H100 at batch 64 (Llama-3-8B, bf16), 2 stages read the cache at 3046 GB/s
#: (8192 keys) and 3120 (32768) against 2775 and 2815 with 3; with several splits (batch
#: 1 and 8) three stages were the best, 1237 against 1041 GB/s at batch 1 and 8192 keys.
DECODE_SINGLE_SPLIT_STAGES = 2
#: SMs counted under the interpreter, and its fewest keys per split: small, so that the
#: launch rule picks several splits on the tests' small shapes.
DECODE_INTERPRETER_SMS = 4
DECODE_INTERPRETER_MIN_KEYS = 16
#: Most splits the private ``_num_splits`` override accepts.
DECODE_MAX_SPLITS_OVERRIDE = 256
#: Splits the combine kernel merges per step, and its warps: a 16 x D float32 tile.
DECODE_COMBINE_BLOCK_S = 16
DECODE_COMBINE_WARPS = 4


@triton.jit
def _attention_decode_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    seqlens_ptr,
    part_o_ptr,
    part_lse_ptr,
    o_ptr,
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
    stride_seqlens,
    n_kv_heads,
    group_size,
    seq_q,
    s_max,
    n_row_blocks,
    qk_scale,
    HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    SINGLE_SPLIT: tl.constexpr,
):
    # Inductor passes Python floats to user kernels as float64 (Triton passes float32):
    # cast, or every score, the running max and the accumulator would turn float64.
    qk_scale = tl.cast(qk_scale, tl.float32)
    pid = tl.program_id(0)
    split = tl.program_id(1)
    n_splits = tl.num_programs(1)
    bh = pid // n_row_blocks  # batch * n_kv_heads + kv_head
    row_block = pid % n_row_blocks
    batch = bh // n_kv_heads
    kv_head = bh % n_kv_heads

    # The length lives on the device. Out of range, the sequence reads no key at all
    # (nothing out of bounds) and its output is NaN.
    seq_len = tl.load(seqlens_ptr + batch.to(tl.int64) * stride_seqlens)
    bad = (seq_len < seq_q) | (seq_len > s_max)
    n_keys = tl.where(bad, 0, seq_len)
    # This split's keys, from this sequence's length: whole tiles, balanced across splits.
    chunk = tl.cdiv(tl.cdiv(n_keys, n_splits), BLOCK_N) * BLOCK_N
    start = split * chunk
    end = tl.minimum(start + chunk, n_keys)
    full_end = start + tl.maximum(end - start, 0) // BLOCK_N * BLOCK_N

    # Rows of the tile: query head g of this KV head's group, query i, as row g * S_q + i.
    rows_per_head = group_size * seq_q
    rows = row_block * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < rows_per_head
    head = kv_head * group_size + rows // seq_q
    query = rows % seq_q
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q_ptrs = (
        q_ptr + batch.to(tl.int64) * stride_qb + head[:, None].to(tl.int64) * stride_qh
        + query[:, None].to(tl.int64) * stride_qm + offs_d[None, :] * stride_qd
    )  # fmt: skip
    q = tl.load(q_ptrs, mask=row_mask[:, None], other=0.0)
    # Query i is position len - S_q + i: it sees keys 0 .. len - S_q + i.
    last = n_keys - seq_q + query
    # K is read as Kᵀ tiles (HEAD_DIM x BLOCK_N), ready for Q @ Kᵀ.
    k_ptrs = (
        k_ptr + batch.to(tl.int64) * stride_kb + kv_head.to(tl.int64) * stride_kh
        + offs_n[None, :] * stride_kn + offs_d[:, None] * stride_kd
    )  # fmt: skip
    v_ptrs = (
        v_ptr + batch.to(tl.int64) * stride_vb + kv_head.to(tl.int64) * stride_vh
        + offs_n[:, None] * stride_vn + offs_d[None, :] * stride_vd
    )  # fmt: skip

    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    # Whole tiles without load masks, then the split's partial last tile (if any), masked:
    # keys past the length are never read, so garbage there cannot reach the output.
    # Causal, bottom-right: row r sees keys j <= last[r] < len, so that mask alone also
    # keeps out keys past the end; a row may see no key of this split (or none at all).
    acc, l_i, m_i = online_softmax_tiles(
        acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_kn, stride_vn, offs_n, end, last, qk_scale,
        start, full_end, BLOCK_N, MASK_KEYS=False, CAUSAL=True, LAST_IN_RANGE=True, EMPTY_ROWS=True,
    )  # fmt: skip
    acc, l_i, m_i = online_softmax_tiles(
        acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_kn, stride_vn, offs_n, end, last, qk_scale,
        full_end, end, BLOCK_N, MASK_KEYS=True, CAUSAL=True, LAST_IN_RANGE=True, EMPTY_ROWS=True,
    )  # fmt: skip

    # Rows of the (B, H, S_q) output in order: (b * H_kv + kv_head) * G * S_q + g * S_q + i.
    out_rows = bh.to(tl.int64) * rows_per_head + rows
    if SINGLE_SPLIT:
        # Every valid row saw key 0, so l > 0 (0 is left for padding rows and bad lengths).
        o = tl.where(bad, float("nan"), acc / tl.where(l_i > 0, l_i, 1.0)[:, None])
        o_ptrs = o_ptr + out_rows[:, None] * HEAD_DIM + offs_d[None, :]
        tl.store(o_ptrs, o.to(o_ptr.dtype.element_ty), mask=row_mask[:, None])
    else:
        # A row that saw no key in this split (an empty split, or its last key before
        # the split's first) writes lse = -inf: weight 0 in the combine.
        seen = l_i > 0
        o = acc / tl.where(seen, l_i, 1.0)[:, None]
        lse = tl.where(seen, m_i + tl.math.log2(tl.where(seen, l_i, 1.0)), float("-inf"))
        slot = out_rows * n_splits + split
        tl.store(part_o_ptr + slot[:, None] * HEAD_DIM + offs_d[None, :], o, mask=row_mask[:, None])
        tl.store(part_lse_ptr + slot, lse, mask=row_mask)


@triton.jit
def _attention_decode_combine_kernel(
    part_o_ptr,
    part_lse_ptr,
    seqlens_ptr,
    o_ptr,
    stride_seqlens,
    rows_per_batch,
    seq_q,
    s_max,
    n_splits,
    HEAD_DIM: tl.constexpr,
    BLOCK_S: tl.constexpr,
):
    """One output row (batch, head, query): the splits' outputs weighted by their softmax mass."""
    row = tl.program_id(0).to(tl.int64)
    seq_len = tl.load(seqlens_ptr + (row // rows_per_batch) * stride_seqlens)
    bad = (seq_len < seq_q) | (seq_len > s_max)
    offs_s = tl.arange(0, BLOCK_S)
    offs_d = tl.arange(0, HEAD_DIM)
    lse_row = part_lse_ptr + row * n_splits
    # The largest log-sum-exp first, so that no weight 2**(lse - max) overflows.
    lse_max = tl.full([BLOCK_S], float("-inf"), dtype=tl.float32)
    for s0 in range(0, n_splits, BLOCK_S):
        splits = s0 + offs_s
        lse_max = tl.maximum(lse_max, tl.load(lse_row + splits, mask=splits < n_splits, other=float("-inf")))
    # Every split of a bad length wrote -inf: subtract 0 rather than -inf (NaN), set NaN below.
    lse_max = tl.max(lse_max, 0)
    lse_max = tl.where(lse_max == float("-inf"), 0.0, lse_max)
    acc = tl.zeros([BLOCK_S, HEAD_DIM], dtype=tl.float32)
    weights = tl.zeros([BLOCK_S], dtype=tl.float32)
    for s0 in range(0, n_splits, BLOCK_S):
        splits = s0 + offs_s
        in_range = splits < n_splits
        w = tl.math.exp2(tl.load(lse_row + splits, mask=in_range, other=float("-inf")) - lse_max)
        o_s = tl.load(
            part_o_ptr + (row * n_splits + splits[:, None]) * HEAD_DIM + offs_d[None, :],
            mask=in_range[:, None],
            other=0.0,
        )
        acc += w[:, None] * o_s
        weights += w
    total = tl.sum(weights, 0)
    o = tl.where(bad, float("nan"), tl.sum(acc, 0) / tl.where(total > 0, total, 1.0))
    tl.store(o_ptr + row * HEAD_DIM + offs_d, o.to(o_ptr.dtype.element_ty))


class DecodeLaunch(NamedTuple):
    """How :func:`attention_decode` launches on one shape.

    Attributes:
        num_splits: programs per (sequence, KV head, row block) along the keys; 1 skips
            the combine kernel.
        block_m: rows (query heads x queries) per tile.
        n_row_blocks: tiles of rows per KV head (1 unless ``H / H_kv * S_q`` rows
            exceed the most a tile holds).
        block_n: keys per tile.
        num_warps: warps of the split kernel.
        num_stages: software-pipeline depth of the split kernel's loop over key tiles.
    """

    num_splits: int
    block_m: int
    n_row_blocks: int
    block_n: int
    num_warps: int
    num_stages: int

    as_dict = fields_as_dict


def decode_splits(programs: int, s_max: int, n_sms: int, min_keys: int = DECODE_MIN_KEYS_PER_SPLIT) -> int:
    """How many splits of the keys to launch for ``programs`` (sequence, KV head, row block)
    programs on a cache of ``s_max`` keys, on ``n_sms`` SMs.

    After FlashAttention-2's rule (``num_splits_heuristic`` in
    ``csrc/flash_attn/flash_api.cpp``), for one wave: one split when the programs already
    fill :data:`DECODE_SINGLE_SPLIT_FILL` of the slots (:data:`DECODE_PROGRAMS_PER_SM`
    per SM); otherwise as many splits as one wave holds (``slots // programs``), at most
    ``s_max // min_keys`` and :data:`DECODE_MAX_SPLITS`. The lengths on the device may
    be shorter than ``s_max``: the kernel divides each sequence's own keys evenly
    among the splits, so a split then just gets fewer keys.
    """
    slots = n_sms * DECODE_PROGRAMS_PER_SM
    if programs >= DECODE_SINGLE_SPLIT_FILL * slots:
        return 1
    max_splits = max(1, min(DECODE_MAX_SPLITS, s_max // min_keys))
    return max(1, min(max_splits, slots // max(programs, 1)))


@functools.lru_cache(maxsize=1024)
def decode_launch(
    batch: int,
    n_kv_heads: int,
    rows_per_head: int,
    s_max: int,
    head_dim: int,
    device_index: int,
    num_splits: int | None = None,
    config: tuple | None = None,
) -> DecodeLaunch:
    """The :class:`DecodeLaunch` of :func:`attention_decode` for ``batch`` sequences of
    ``n_kv_heads`` KV heads, ``rows_per_head = H / H_kv * S_q`` query rows per KV head, a
    cache of ``s_max`` keys and head dim ``head_dim`` (one of :data:`DECODE_HEAD_DIMS`) on
    CUDA device ``device_index`` (-1: the CPU, under the interpreter).

    ``num_splits`` and ``config = (block_n, num_warps, num_stages)`` override the launch
    rules (:func:`decode_splits`, :data:`DECODE_CONFIGS`); for tuning sweeps.
    """
    block_n, num_warps, num_stages, max_rows = DECODE_CONFIGS[head_dim]
    min_keys = DECODE_MIN_KEYS_PER_SPLIT
    if is_interpreter():
        block_n, num_stages, min_keys = DECODE_INTERPRETER_BLOCK_N, 1, DECODE_INTERPRETER_MIN_KEYS
    if config is not None:
        block_n, num_warps, num_stages = config
    block_m = min(next_power_of_2(max(16, rows_per_head)), max_rows)
    n_row_blocks = cdiv(rows_per_head, block_m)
    if num_splits is None:
        num_splits = decode_splits(
            batch * n_kv_heads * n_row_blocks, s_max, num_sms(device_index, DECODE_INTERPRETER_SMS), min_keys
        )
        if num_splits == 1 and config is None and not is_interpreter():
            num_stages = DECODE_SINGLE_SPLIT_STAGES
    return DecodeLaunch(num_splits, block_m, n_row_blocks, block_n, num_warps, num_stages)


def decode_launch_for(
    q: torch.Tensor, k_cache: torch.Tensor, num_splits: int | None = None, config: tuple | None = None
) -> DecodeLaunch:
    """The :class:`DecodeLaunch` :func:`attention_decode` makes for queries ``q`` ``(B, H,
    S_q, D)`` against caches like ``k_cache`` ``(B, H_kv, S_max, D)``, already checked
    (:func:`decode_launch` of their sizes and device). ``num_splits`` and ``config`` are
    the private overrides ``_num_splits`` and ``_config`` of :func:`attention_decode`."""
    batch, n_heads, seq_q, head_dim = q.shape
    n_kv_heads, s_max = k_cache.shape[1], k_cache.shape[2]
    rows_per_head = n_heads // n_kv_heads * seq_q
    return decode_launch(
        batch, n_kv_heads, rows_per_head, s_max, head_dim, q.get_device(), num_splits, config
    )


def _check(q, k_cache, v_cache, cache_seqlens, scale, check_lengths, num_splits, config) -> float:
    """Every check of :func:`attention_decode`'s arguments but the lengths' values; returns the scale."""
    check_tensors(("q", "k_cache", "v_cache"), (q, k_cache, v_cache), HALF_DTYPES)
    if not isinstance(cache_seqlens, torch.Tensor):
        raise TypeError(f"cache_seqlens must be a torch.Tensor, got {type(cache_seqlens).__name__}")
    if cache_seqlens.dtype != torch.int32:
        raise TypeError(
            f"cache_seqlens must have dtype int32, got {str(cache_seqlens.dtype).removeprefix('torch.')}"
        )
    if cache_seqlens.device != q.device:
        raise ValueError(
            "cache_seqlens must be on q's device, got "
            f"cache_seqlens on {cache_seqlens.device}, q on {q.device}"
        )
    batch, _, seq_q, head_dim, _, s_max = check_shapes(
        q, k_cache, v_cache, DECODE_HEAD_DIMS, "k_cache", "v_cache", "S_max"
    )
    if not 1 <= seq_q <= DECODE_MAX_QUERIES:
        raise ValueError(
            f"q must hold 1 to {DECODE_MAX_QUERIES} queries per sequence (S_q = q.shape[2]), got {seq_q}; "
            "for longer query blocks use gpuperf.kernels.attention"
        )
    if s_max < seq_q:
        raise ValueError(
            f"the cache must hold at least S_q = {seq_q} keys (S_max = k_cache.shape[2]), got S_max = {s_max}"
        )
    if cache_seqlens.shape != (batch,):
        raise ValueError(f"cache_seqlens must have shape (B,) = ({batch},), got {tuple(cache_seqlens.shape)}")
    scale = check_scale(scale, head_dim)
    if type(check_lengths) is not bool:
        raise TypeError(f"check_lengths must be a bool, got {type(check_lengths).__name__}")
    if num_splits is not None and (
        type(num_splits) is not int or not 1 <= num_splits <= DECODE_MAX_SPLITS_OVERRIDE
    ):
        raise ValueError(
            f"_num_splits must be None or an int from 1 to {DECODE_MAX_SPLITS_OVERRIDE}, got {num_splits!r}"
        )
    if config is not None:
        ok = isinstance(config, tuple) and len(config) == 3 and all(type(c) is int for c in config)
        block_n, num_warps, num_stages = config if ok else (0, 0, 0)
        if not (
            ok
            and block_n >= 16
            and block_n & (block_n - 1) == 0
            and num_warps in (1, 2, 4, 8, 16)
            and num_stages >= 1
        ):
            raise ValueError(
                "_config must be None or (block_n, num_warps, num_stages): a power of two >= 16, "
                f"a power of two up to 16 and a positive int, got {config!r}"
            )
    return float(scale)


def _check_lengths(cache_seqlens: torch.Tensor, seq_q: int, s_max: int) -> None:
    """Raise ``ValueError`` at the first length outside ``[S_q, S_max]`` (reads them to the host)."""
    for b, n in enumerate(cache_seqlens.tolist()):
        if not seq_q <= n <= s_max:
            raise ValueError(
                f"cache_seqlens[{b}] = {n} is outside the allowed range [S_q, S_max] = [{seq_q}, {s_max}]"
            )


@op(
    "gpuperf::attention_decode",
    tensors=("q", "k_cache", "v_cache", "cache_seqlens"),
)
def _attention_decode(
    q: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    cache_seqlens: torch.Tensor,
    *,
    scale: float | None = None,
    num_splits: int | None = None,
    block_n: int | None = None,
    num_warps: int | None = None,
    num_stages: int | None = None,
) -> tuple[torch.Tensor, Launches]:
    """The registered op ``torch.ops.gpuperf.attention_decode`` (see :func:`attention_decode`,
    which calls it): its checks, the launch rule and the split kernel's launch, then the
    combine's with several splits. ``num_splits`` is ``_num_splits``; ``block_n``,
    ``num_warps`` and ``num_stages`` are ``_config``, all None for the launch rules."""
    config = (
        None
        if block_n is None and num_warps is None and num_stages is None
        else (block_n, num_warps, num_stages)
    )
    scale_f = _check(q, k_cache, v_cache, cache_seqlens, scale, False, num_splits, config)
    if torch.is_grad_enabled() and (q.requires_grad or k_cache.requires_grad or v_cache.requires_grad):
        raise RuntimeError(
            "attention_decode is not differentiable (decode is inference) and an input requires grad: "
            "call it under torch.no_grad() or torch.inference_mode(), or pass detached tensors"
        )
    out = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    if out.numel() == 0:
        return out, ()
    launch = decode_launch_for(q, k_cache, num_splits, config)
    batch, n_heads, seq_q, head_dim = q.shape
    n_kv_heads, s_max = k_cache.shape[1], k_cache.shape[2]
    n_splits = launch.num_splits
    single = n_splits == 1
    n_rows = batch * n_heads * seq_q
    launches = []
    if not single:
        # Each (row, split)'s output, then each one's log-sum-exp, in float32.
        part_o = torch.empty((n_rows * n_splits * head_dim,), dtype=torch.float32, device=q.device)
        part_lse = torch.empty((n_rows * n_splits,), dtype=torch.float32, device=q.device)
        launches += (Workspace(part_o), Workspace(part_lse))
    elif type(out) is torch.Tensor and not tracing(out):
        part_o = part_lse = out  # unused with one split
    else:
        # Traced (torch.compile): distinct tensors, no argument passed twice, so that
        # functionalization sees each write plainly.
        part_o = torch.empty((head_dim,), dtype=torch.float32, device=q.device)
        part_lse = torch.empty((1,), dtype=torch.float32, device=q.device)
    runtime = (
        q, k_cache, v_cache, cache_seqlens, part_o, part_lse, out,
        *q.stride(), *k_cache.stride(), *v_cache.stride(), cache_seqlens.stride(0),
        n_kv_heads, n_heads // n_kv_heads, seq_q, s_max, launch.n_row_blocks, scale_f * LOG2E,
    )  # fmt: skip
    launches.append(
        Launch(
            _attention_decode_kernel,
            (batch * n_kv_heads * launch.n_row_blocks, n_splits),
            runtime,
            (head_dim, launch.block_m, launch.block_n, single),
            launch.num_warps,
            launch.num_stages,
        )
    )
    if not single:
        combine_runtime = (
            part_o, part_lse, cache_seqlens, out,
            cache_seqlens.stride(0), n_heads * seq_q, seq_q, s_max, n_splits,
        )  # fmt: skip
        launches.append(
            Launch(
                _attention_decode_combine_kernel,
                (n_rows,),
                combine_runtime,
                (head_dim, min(next_power_of_2(n_splits), DECODE_COMBINE_BLOCK_S)),
                DECODE_COMBINE_WARPS,
                1,
            )
        )
    return out, launches


def attention_decode(
    q: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    cache_seqlens: torch.Tensor,
    *,
    scale: float | None = None,
    check_lengths: bool = False,
    _num_splits: int | None = None,
    _config: tuple | None = None,
) -> torch.Tensor:
    """Attention of the last ``S_q`` queries of each sequence against its KV cache (a decode step).

    The semantics of FlashAttention's ``flash_attn_with_kvcache`` (without appending new
    keys: write them into the cache first) in the ``(batch, heads, sequence, head dim)``
    layout of ``torch.nn.functional.scaled_dot_product_attention``.

    Args:
        q: ``(B, H, S_q, D)``, float16 or bfloat16, on a CUDA device (or on the CPU under
            ``TRITON_INTERPRET=1``), with ``1 <= S_q <=`` :data:`DECODE_MAX_QUERIES` (16)
            and ``D`` one of :data:`DECODE_HEAD_DIMS` (16, 32, 64, 128, 256).
        k_cache: ``(B, H_kv, S_max, D)``, the same dtype and device, ``S_max >= S_q``;
            ``H`` must be a multiple of ``H_kv``: each group of ``H / H_kv`` consecutive
            query heads shares one key/value head (grouped-query attention, as
            :func:`gpuperf.kernels.attention` and SDPA's ``enable_gqa``; ``H_kv = 1`` is
            multi-query).
        v_cache: ``(B, H_kv, S_max, D)``, like ``k_cache``.
        cache_seqlens: ``(B,)`` int32 on the same device: sequence ``b`` holds
            ``cache_seqlens[b]`` valid keys, at positions ``0 .. len - 1`` of its cache
            (what lies beyond is never read). Its ``S_q`` queries are the last ``S_q``
            positions, ``len - S_q .. len - 1``, causal and aligned bottom-right: query
            ``i`` sees keys ``j <= len - S_q + i``.
        scale: multiplies the scores before the softmax; a positive number,
            ``1 / sqrt(D)`` by default.
        check_lengths: read the lengths to the host (one synchronization with the
            device) and raise ``ValueError`` for one out of range. By default the
            lengths are never read on the host: a length outside ``[S_q, S_max]``
            makes that sequence's whole output NaN, on the device (the other
            sequences are unaffected, and no key of that sequence is read). Under
            ``torch.compile`` the check breaks the graph.
        _num_splits, _config: private overrides of the launch rules (the splits of
            the keys, and ``(block_n, num_warps, num_stages)``), for tuning sweeps.

    Any strides are read in place, without a copy (a last-dimension stride other than 1
    is correct but loads slowly).

    Returns:
        A new contiguous ``(B, H, S_q, D)`` tensor in ``q``'s dtype: scores, softmax and
        weighted sum in float32, rounded once. Not differentiable (decode is inference).

    Raises:
        TypeError: ``q``, ``k_cache`` or ``v_cache`` is not a tensor, its dtype is not
            float16 or bfloat16, or the dtypes differ; ``cache_seqlens`` is not an
            int32 tensor; ``scale`` is not a number; ``check_lengths`` is not a bool.
        ValueError: a tensor is not 4-D, the caches' shapes differ, batch sizes or head
            dims disagree, ``D`` is not supported, ``H`` is not a multiple of ``H_kv``,
            ``S_q`` is not from 1 to 16, ``S_max < S_q``, ``cache_seqlens`` is not
            ``(B,)`` or not on ``q``'s device, ``scale`` is not positive and finite, the
            tensors are on different devices (or on the CPU while the interpreter is
            off), an override is invalid, or with ``check_lengths=True`` a length is
            outside ``[S_q, S_max]`` (the message names the first).
        RuntimeError: gradients are enabled and an input requires grad.

    The call never synchronizes with the device and takes the same path whatever the
    lengths, so it can be captured in a CUDA graph and replayed with new lengths.
    Registered as ``torch.ops.gpuperf.attention_decode`` (``torch.library.triton_op``,
    through :func:`~gpuperf.kernels.launch.op`; its schema takes ``q, k_cache, v_cache,
    cache_seqlens, scale, num_splits, block_n, num_warps, num_stages``, the last four
    ``_num_splits`` and ``_config``, None for the launch rules): inside ``torch.compile``
    this function calls it, so a compiled model keeps one graph. Called eagerly, it
    launches the op's kernels, with the same launch and arguments (the results are the
    op's, bit for bit), through the cache of compiled kernels; a call whose inputs are like
    ones already checked (shapes, strides, dtypes, device, 16-byte alignment, ``scale``,
    ``_num_splits`` and ``_config`` of the same types and values) launches from their plan
    (:mod:`gpuperf.kernels.launch`), which allocates the splits' workspace again. A call
    with ``check_lengths=True`` or a ``_config`` is checked in full every time first.

    Memory traffic: each sequence's valid keys and values are read once,
    ``2 * B * H_kv * len * D`` elements (the query heads of a group share each tile),
    plus ``q`` and the output; with several splits also ``B * H * S_q * num_splits *
    (D + 1)`` float32 written and read back. FLOPs ``4 * B * H * S_q * len * D``.
    Launch: :func:`decode_launch`. Algorithm: Flash-Decoding (Dao, Haziza, Massa and
    Sizov, 2023, https://crfm.stanford.edu/2023/10/12/flashdecoding.html) on the online
    softmax of FlashAttention-2 (arXiv:2307.08691).
    """
    if check_lengths is not False or _config is not None:
        # The slow paths (a synchronization, a tuning sweep), checked in full on every call.
        _check(q, k_cache, v_cache, cache_seqlens, scale, check_lengths, _num_splits, _config)
        if check_lengths:
            _check_lengths(cache_seqlens, q.shape[2], k_cache.shape[2])
        if _config is not None:
            block_n, num_warps, num_stages = _config
            return _attention_decode(
                q, k_cache, v_cache, cache_seqlens, scale=scale, num_splits=_num_splits,
                block_n=block_n, num_warps=num_warps, num_stages=num_stages,
            )  # fmt: skip
    return _attention_decode(q, k_cache, v_cache, cache_seqlens, scale=scale, num_splits=_num_splits)


#: The plans of the eager calls (:mod:`gpuperf.kernels.launch`) and the registered op.
attention_decode.plans = _attention_decode.plans
attention_decode.registered = _attention_decode.registered


__all__ = ["DecodeLaunch", "attention_decode", "decode_launch", "decode_launch_for", "decode_splits"]
