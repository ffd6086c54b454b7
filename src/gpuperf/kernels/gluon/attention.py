"""Attention forward in the FlashAttention-3 way, written in Gluon for Hopper.

Tutorial 04's Triton kernel (FlashAttention-2's algorithm) leaves the schedule to
Triton's compiler: each program's warps load K and V, wait for ``Q Kᵀ``, compute the
softmax while the tensor cores idle, then wait for ``P V``. FlashAttention-3 (Shah et
al., arXiv:2407.08608) keeps the tensor cores busy with three changes, each a rung of
this kernel's ladder:

1. **Warp specialization, producer and consumers** (§3.1). A producer warp does nothing
   but issue TMA copies of K and V tiles into a ring of ``num_stages`` shared-memory slots;
   each slot has ``mbarrier``\\ s that say "K landed", "V landed" and "both consumers are
   done with it". Two consumer warpgroups, 64 query rows each, only compute.
2. **Intra-warpgroup overlap** (§3.2, ``overlap=True``). A consumer issues ``Q K_jᵀ`` and
   ``P_{j-1} V_{j-1}`` as asynchronous ``wgmma``, and computes the softmax of tile ``j``
   while ``P_{j-1} V_{j-1}`` still runs: the exponentials run beside the tensor cores.
3. **Ping-pong between the consumers** (§3.1, ``pingpong=True``). Two ``mbarrier``\\ s pass
   a turn: one warpgroup issues its two GEMMs, then lets the other issue its own, so one
   computes its softmax while the other's GEMMs hold the tensor cores.
4. **Persistent programs** (``persistent``): one program per SM walks output tiles head by
   head, and its producer loads the next tile's Q, K and V while the consumers finish
   and store the current one.

Each output tile is ``128 x D`` of one head; the consumers' ``P`` stays in registers as
the left operand of the second ``wgmma`` (FlashAttention-3's "RS" GEMM), and the output
leaves through the Q tile's shared memory by a TMA store, which clips the rows past
``S_q``. Forward only: no log-sum-exp is written, so there is no backward.

Sources: Shah, Bikshandi, Zhang, Thakkar, Ramani, Dao, "FlashAttention-3: Fast and
Accurate Attention with Asynchrony and Low-precision" (arXiv:2407.08608), Algorithms 1-2;
Dao, "FlashAttention-2" (arXiv:2307.08691); Triton's Gluon tutorials
(``python/tutorials/gluon``: TMA, wgmma, warp specialization).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

from gpuperf._runtime import check_kernel_device
from gpuperf.kernels._attention_checks import check_attention
from gpuperf.kernels.device import num_sms, require_gluon_hopper
from gpuperf.kernels.launch import Launches, keyword_launch, op
from gpuperf.kernels.tma import tma_copy, tracing

#: The head dims the kernel is written for (a ``wgmma``'s K is a multiple of 16; the
#: shared-memory ring holds two ``BLOCK_N x D`` tiles a slot).
HEAD_DIMS = (64, 128)

#: Query rows a consumer warpgroup owns (one ``wgmma`` is 64 rows tall); a program's output
#: tile is ``consumers`` times as tall.
WARPGROUP_M = 64

#: Registers a thread, summed over a program's warpgroups, by consumer count: three
#: warpgroups share 168 a thread at launch (65,536 per SM), four share 128.
_REGISTER_POOL = {2: 3 * 168, 3: 4 * 128}

# exp(x) == exp2(x * log2(e)); exp2 is the hardware instruction.
LOG2E = 1.4426950408889634

_GL_DTYPES = {torch.float16: gl.float16, torch.bfloat16: gl.bfloat16}


@dataclass(frozen=True)
class FA3Config:
    """Launch configuration of :func:`attention_fa3`: the rungs of the ladder and the tiles.

    Every rung has the producer warp and the two consumer warpgroups (warp specialization).

    Attributes:
        block_n: keys per tile of K and V (64 or 128: one TMA box).
        num_stages: slots of the K/V ring (``2 * block_n * D * 2`` bytes each); None picks
            the most that fit beside Q (3 at D 128, 4 at D 64).
        overlap: issue ``Q K_jᵀ`` before ``P_{j-1} V_{j-1}`` and compute tile ``j``'s
            softmax while the second GEMM runs (FlashAttention-3 §3.2); False keeps
            FlashAttention-2's order (both GEMMs, then the softmax).
        pingpong: the two consumer warpgroups take turns issuing GEMMs, so one's softmax
            runs while the other's GEMMs hold the tensor cores (FlashAttention-3 §3.1).
            Measured on the H100 it bought nothing over ``overlap`` alone (tutorial 08), so
            it is off by default.
        persistent: one program per SM, each computing output tiles one after another (the
            next tile's Q and K arrive while one is stored); False: a program per tile.
            None (the default): persistent when not causal (causal tiles differ in length,
            and a static round robin then leaves SMs idle at the end).
        consumers: consumer warpgroups, 64 query rows each: 2, or 3 at D 64 only (more
            softmax in flight beside GEMMs half as long as D 128's). Measured on the H100
            (``scripts/fa3_explore.py``), three ran 1.02-1.07x cuDNN on causal sequences of
            8192 and 16384 tokens, where two ran 0.94-0.98x, but slower on shorter and
            non-causal ones (0.47x at 1024 causal: a third fewer, taller tiles), so 2 is
            the default.
        consumer_registers: registers a thread of each consumer warpgroup may hold, the
            producer warp keeping the rest (``setmaxnreg``); None (the default): 240 with two
            consumers (the producer keeps 24), 160 with three (it keeps 32).
    """

    block_n: int = 128
    num_stages: int | None = None
    overlap: bool = True
    pingpong: bool = False
    persistent: bool | None = None
    consumers: int = 2
    consumer_registers: int | None = None

    def __post_init__(self):
        for name in ("overlap", "pingpong"):
            value = getattr(self, name)
            if type(value) is not bool:
                raise ValueError(f"{name} must be a bool, got {value!r}")
        if self.persistent is not None and type(self.persistent) is not bool:
            raise ValueError(f"persistent must be a bool or None, got {self.persistent!r}")
        if type(self.block_n) is not int or self.block_n not in (64, 128):
            raise ValueError(f"block_n must be 64 or 128, got {self.block_n!r}")
        if self.num_stages is not None and (type(self.num_stages) is not int or self.num_stages < 2):
            raise ValueError(f"num_stages must be None or an int >= 2, got {self.num_stages!r}")
        if type(self.consumers) is not int or self.consumers not in (2, 3):
            raise ValueError(f"consumers must be 2 or 3, got {self.consumers!r}")
        registers = self.consumer_registers
        if registers is not None and (
            type(registers) is not int or registers % 8 or not 24 <= registers <= 256
        ):
            raise ValueError(
                f"consumer_registers must be None or a multiple of 8 from 24 to 256, got {registers!r}"
            )

    def registers_for(self, head_dim: int) -> tuple[int, int]:
        """``(consumer, producer)`` registers a thread at ``head_dim``: every consumer gets
        :attr:`consumer_registers` (or 240 with two consumers, 160 with three) and the producer
        warp's warpgroup what is left of the program's pool.

        Raises:
            ValueError: the consumers' registers leave the producer fewer than 24, or three
                consumers at a head dim above 64.
        """
        consumers = self.consumers
        if consumers == 3 and head_dim > 64:
            raise ValueError(
                f"consumers=3 is for head dim 64: at D {head_dim} a consumer's output tile, scores "
                "and probabilities need more registers than three consumers can each have"
            )
        pool = _REGISTER_POOL[consumers]
        consumer = self.consumer_registers or (240 if consumers == 2 else 160)
        producer = pool - consumers * consumer
        if producer < 24:
            raise ValueError(
                f"consumer_registers {consumer} for {consumers} consumers leave the producer {producer} "
                f"registers a thread (of {pool}); at least 24 are needed"
            )
        return consumer, min(producer, 256)


#: The fastest rungs measured on the H100: producer warp, intra-warpgroup overlap,
#: persistent when not causal.
DEFAULT_CONFIG = FA3Config()

#: Shared memory a program may allocate on an H100 (227 KiB), less what the barriers take.
_SHARED_BYTES = 227 * 1024 - 1024


def stages_for(head_dim: int, config: FA3Config) -> int:
    """Slots of the K/V ring: ``config.num_stages``, or the most that fit beside Q's tiles."""
    if config.num_stages is not None:
        return config.num_stages
    q_bytes = config.consumers * WARPGROUP_M * head_dim * 2
    slot_bytes = 2 * config.block_n * head_dim * 2
    return min(4, (_SHARED_BYTES - q_bytes) // slot_bytes)


# --- the schedule: which output tiles a program computes ----------------------------------------


@gluon.jit
def _tile(t, shape, ROWS: gl.constexpr, BLOCK_N: gl.constexpr, CAUSAL: gl.constexpr):
    """Output tile number ``t`` (``ROWS`` query rows of one head): ``(batch, head, kv_head,
    off_m)`` and its key tiles ``(n_tiles, n_unmasked)``, the second those every key of which
    every row sees. Tiles go head by head (neighbours share K and V in L2); causal, a head's
    tiles run from the last rows to the first (those that see the most keys start first)."""
    n_heads, group_size, seq_q, seq_k = shape
    num_m = gl.cdiv(seq_q, ROWS)
    bh = t // num_m
    pid_m = t % num_m
    if CAUSAL:
        pid_m = num_m - 1 - pid_m
    off_m = pid_m * ROWS
    if CAUSAL:
        n_tiles = gl.cdiv(gl.minimum(off_m + ROWS, seq_k), BLOCK_N)
        n_unmasked = off_m // BLOCK_N
    else:
        n_tiles = gl.cdiv(seq_k, BLOCK_N)
        n_unmasked = seq_k // BLOCK_N
    head = bh % n_heads
    return (bh // n_heads, head, head // group_size, off_m), (n_tiles, n_unmasked)


# --- the producer: one warp of TMA copies ------------------------------------------------------


@gluon.jit
def _producer(q_desc, k_desc, v_desc, smem, bars, shape, total, CAUSAL: gl.constexpr):
    """For each of this program's output tiles: load its two Q tiles once the consumers have
    stored the previous output through them, then K and V tile by tile into the ring, each
    slot once both consumers have released it (its ``empty`` barrier)."""
    q_smem, k_ring, v_ring = smem
    q_ready, q_empty, k_ready, v_ready, empty, _turn = bars
    NUM_STAGES: gl.constexpr = k_ring.shape[0]
    BLOCK_N: gl.constexpr = k_ring.shape[1]
    CONSUMERS: gl.constexpr = q_smem.shape[0]
    M: gl.constexpr = q_smem.shape[1]
    pid = gl.program_id(0)
    programs = gl.num_programs(0)
    step = 0  # K/V tiles loaded so far, over all this program's output tiles
    for i in range(gl.cdiv(total - pid, programs)):
        coords, tiles = _tile(pid + i * programs, shape, CONSUMERS * M, BLOCK_N, CAUSAL)
        batch, head, kv_head, off_m = coords
        n_tiles, _n_unmasked = tiles
        for wg in gl.static_range(CONSUMERS):
            mbarrier.wait(q_empty.index(wg), (i & 1) ^ 1)
            mbarrier.expect(q_ready.index(wg), q_desc.block_type.nbytes)
            q_box = q_smem.index(wg)._reinterpret(q_desc.dtype, q_desc.block_type.shape, q_desc.layout)
            tma.async_copy_global_to_shared(
                q_desc, [batch, head, off_m + wg * M, 0], q_ready.index(wg), q_box
            )
        for j in range(n_tiles):
            slot = step % NUM_STAGES
            mbarrier.wait(empty.index(slot), ((step // NUM_STAGES) & 1) ^ 1)
            k_box = k_ring.index(slot)._reinterpret(k_desc.dtype, k_desc.block_type.shape, k_desc.layout)
            v_box = v_ring.index(slot)._reinterpret(v_desc.dtype, v_desc.block_type.shape, v_desc.layout)
            mbarrier.expect(k_ready.index(slot), k_desc.block_type.nbytes)
            tma.async_copy_global_to_shared(
                k_desc, [batch, kv_head, j * BLOCK_N, 0], k_ready.index(slot), k_box
            )
            mbarrier.expect(v_ready.index(slot), v_desc.block_type.nbytes)
            tma.async_copy_global_to_shared(
                v_desc, [batch, kv_head, j * BLOCK_N, 0], v_ready.index(slot), v_box
            )
            step += 1


# --- the consumers: two warpgroups of GEMMs and softmax ----------------------------------------


@gluon.jit
def _wait_turn(turn, group, WG: gl.constexpr, PINGPONG: gl.constexpr):
    """Ping-pong: before its ``group``-th pair of GEMMs, warpgroup WG waits for its turn
    (warpgroup 0 goes first: a fresh barrier has completed phase 1)."""
    if PINGPONG:
        FIRST: gl.constexpr = 1 if WG == 0 else 0
        mbarrier.wait(turn.index(WG), (group & 1) ^ FIRST)


@gluon.jit
def _pass_turn(turn, WG: gl.constexpr, PINGPONG: gl.constexpr):
    """Ping-pong: this warpgroup's GEMMs are issued; the next one may issue its own."""
    if PINGPONG:
        NEXT: gl.constexpr = (WG + 1) % turn.shape[0]
        mbarrier.arrive(turn.index(NEXT), count=1)


@gluon.jit
def _softmax(s, m_i, l_i, cols, rows, seq_k, qk_scale, MASK: gl.constexpr, CAUSAL: gl.constexpr):
    """Online softmax of a float32 score tile ``s`` (``Q K_jᵀ``, unscaled): the new row
    maximum ``m`` (of the scaled scores), the probabilities ``P = exp2(s·scale·log2e - m)``,
    the factor ``alpha`` that rescales the sums so far, and the new row sums. With ``MASK``,
    keys past ``S_k`` (and, causal, keys after the query) score ``-inf``."""
    if MASK:
        if CAUSAL:
            s = gl.where((cols[None, :] <= rows[:, None]) & (cols < seq_k)[None, :], s, float("-inf"))
        else:
            s = gl.where((cols < seq_k)[None, :], s, float("-inf"))
    # The maximum in scaled units (the scale is positive): one fused multiply-add a score.
    m_new = gl.maximum(m_i, gl.max(s, axis=1) * qk_scale)
    alpha = gl.exp2(m_i - m_new)
    p = gl.exp2(s * qk_scale - m_new[:, None])
    l_i = l_i * alpha + gl.sum(p, axis=1)
    return p, m_new, alpha, l_i


@gluon.jit
def _step(j, counts, state, q, smem, bars, cols, rows, scores, flags, WG: gl.constexpr, MASK: gl.constexpr):
    """Key tile ``j`` (``j >= 1``) of one consumer: scores ``Q K_jᵀ``, their softmax, and the
    previous tile's ``P_{j-1} V_{j-1}``; returns the new ``(p, m_i, l_i, acc)``. ``counts =
    (step, group)``: K/V tiles and GEMM pairs of this program before this output tile's."""
    p, m_i, l_i, acc = state
    _q_smem, k_ring, v_ring = smem
    _q_ready, _q_empty, k_ready, v_ready, empty, turn = bars
    seq_k, qk_scale = scores
    CAUSAL, OVERLAP, PINGPONG = flags
    NUM_STAGES: gl.constexpr = k_ring.shape[0]
    BLOCK_N: gl.constexpr = k_ring.shape[1]
    p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=acc.type.layout, k_width=2)
    row_layout: gl.constexpr = gl.SliceLayout(1, acc.type.layout)
    M: gl.constexpr = q.shape[0]
    s_layout: gl.constexpr = p.type.layout
    s_zero = gl.zeros((M, BLOCK_N), dtype=gl.float32, layout=s_layout)
    step = counts[0] + j
    slot = step % NUM_STAGES
    prev = (step - 1) % NUM_STAGES
    mbarrier.wait(k_ready.index(slot), (step // NUM_STAGES) & 1)
    mbarrier.wait(v_ready.index(prev), ((step - 1) // NUM_STAGES) & 1)
    _wait_turn(turn, counts[1] + j, WG, PINGPONG)
    if OVERLAP:
        # Issue both GEMMs; tile j's softmax runs while P_{j-1} V_{j-1} is on the tensor cores.
        s_token = warpgroup_mma(q, k_ring.index(slot).permute((1, 0)), s_zero, use_acc=False, is_async=True)
        pv = gl.convert_layout(p.to(k_ring.dtype), p_layout)
        o_token = warpgroup_mma(pv, v_ring.index(prev), acc, is_async=True)
        _pass_turn(turn, WG, PINGPONG)
        s = warpgroup_mma_wait(num_outstanding=1, deps=(s_token,))
        p, m_i, alpha, l_i = _softmax(s, m_i, l_i, cols + j * BLOCK_N, rows, seq_k, qk_scale, MASK, CAUSAL)
        acc = warpgroup_mma_wait(num_outstanding=0, deps=(o_token,))
    else:
        # FlashAttention-2's order: P V, then the next scores, then their softmax.
        pv = gl.convert_layout(p.to(k_ring.dtype), p_layout)
        o_token = warpgroup_mma(pv, v_ring.index(prev), acc, is_async=True)
        s_token = warpgroup_mma(q, k_ring.index(slot).permute((1, 0)), s_zero, use_acc=False, is_async=True)
        _pass_turn(turn, WG, PINGPONG)
        acc, s = warpgroup_mma_wait(num_outstanding=0, deps=(o_token, s_token))
        p, m_i, alpha, l_i = _softmax(s, m_i, l_i, cols + j * BLOCK_N, rows, seq_k, qk_scale, MASK, CAUSAL)
    mbarrier.arrive(empty.index(prev), count=1)
    acc = acc * gl.convert_layout(alpha, row_layout)[:, None]
    return p, m_i, l_i, acc


@gluon.jit
def _consumer(o_desc, smem, bars, shape, total, qk_scale, flags, WG: gl.constexpr):
    """One warpgroup's 64 query rows of each of this program's output tiles: stream K and V
    through, online softmax, ``O = P V``, normalize, store through shared memory by TMA."""
    q_smem, k_ring, v_ring = smem
    q_ready, q_empty, k_ready, v_ready, empty, turn = bars
    _n_heads, _group_size, _seq_q, seq_k = shape
    CAUSAL, _OVERLAP, PINGPONG = flags
    NUM_STAGES: gl.constexpr = k_ring.shape[0]
    BLOCK_N: gl.constexpr = k_ring.shape[1]
    HEAD_DIM: gl.constexpr = k_ring.shape[2]
    M: gl.constexpr = q_smem.shape[1]
    s_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BLOCK_N, 16]
    )
    o_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, HEAD_DIM, 16]
    )
    p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=2)
    cols = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, s_layout))
    q = q_smem.index(WG)
    scores = (seq_k, qk_scale)
    pid = gl.program_id(0)
    programs = gl.num_programs(0)
    step = 0  # K/V tiles consumed so far, over all this program's output tiles
    for i in range(gl.cdiv(total - pid, programs)):
        coords, tiles = _tile(pid + i * programs, shape, q_smem.shape[0] * M, BLOCK_N, CAUSAL)
        batch, head, _kv_head, off_m = coords
        n_tiles, n_unmasked = tiles
        counts = (step, step + i)  # K/V tiles, GEMM pairs (n_tiles + 1 a tile) before this tile
        rows = off_m + WG * M + gl.arange(0, M, layout=gl.SliceLayout(1, s_layout))

        # Tile 0: scores, then the softmax (masked: it may be the only tile, or the diagonal's).
        slot = step % NUM_STAGES
        mbarrier.wait(q_ready.index(WG), i & 1)
        mbarrier.wait(k_ready.index(slot), (step // NUM_STAGES) & 1)
        _wait_turn(turn, step + i, WG, PINGPONG)
        s_zero = gl.zeros((M, BLOCK_N), dtype=gl.float32, layout=s_layout)
        s_token = warpgroup_mma(q, k_ring.index(slot).permute((1, 0)), s_zero, use_acc=False, is_async=True)
        _pass_turn(turn, WG, PINGPONG)
        s = warpgroup_mma_wait(num_outstanding=0, deps=(s_token,))
        m_i = gl.full([M], float("-inf"), dtype=gl.float32, layout=gl.SliceLayout(1, s_layout))
        l_i = gl.zeros([M], dtype=gl.float32, layout=gl.SliceLayout(1, s_layout))
        p, m_i, _alpha, l_i = _softmax(s, m_i, l_i, cols, rows, seq_k, qk_scale, True, CAUSAL)
        state = (p, m_i, l_i, gl.zeros((M, HEAD_DIM), dtype=gl.float32, layout=o_layout))

        # Tiles every key of which every row sees: no mask. Then the rest (the causal
        # diagonal, the keys past S_k), masked.
        for j in range(1, n_unmasked):
            state = _step(j, counts, state, q, smem, bars, cols, rows, scores, flags, WG, False)
        for j in range(gl.maximum(n_unmasked, 1), n_tiles):
            state = _step(j, counts, state, q, smem, bars, cols, rows, scores, flags, WG, True)
        p, m_i, l_i, acc = state

        # The last P V.
        step += n_tiles
        last = (step - 1) % NUM_STAGES
        mbarrier.wait(v_ready.index(last), ((step - 1) // NUM_STAGES) & 1)
        _wait_turn(turn, step + i, WG, PINGPONG)
        pv = gl.convert_layout(p.to(k_ring.dtype), p_layout)
        o_token = warpgroup_mma(pv, v_ring.index(last), acc, is_async=True)
        _pass_turn(turn, WG, PINGPONG)
        acc = warpgroup_mma_wait(num_outstanding=0, deps=(o_token,))
        mbarrier.arrive(empty.index(last), count=1)

        acc = acc / gl.convert_layout(l_i, gl.SliceLayout(1, o_layout))[:, None]
        # Q's tile is free: the output leaves through it (the TMA store clips rows past S_q),
        # and once the copy engine has read it, the producer may load the next tile's Q.
        q.store(acc.to(k_ring.dtype))
        fence_async_shared()
        o_box = q._reinterpret(o_desc.dtype, o_desc.block_type.shape, o_desc.layout)
        tma.async_copy_shared_to_global(o_desc, [batch, head, off_m + WG * M, 0], o_box)
        tma.store_wait(pendings=0)
        mbarrier.arrive(q_empty.index(WG), count=1)


@gluon.jit
def _fa3_kernel(
    q_desc,
    k_desc,
    v_desc,
    o_desc,
    n_heads,
    group_size,
    seq_q,
    seq_k,
    total,
    qk_scale,
    NUM_STAGES: gl.constexpr,
    CAUSAL: gl.constexpr,
    OVERLAP: gl.constexpr,
    PINGPONG: gl.constexpr,
    CONSUMERS: gl.constexpr,
    REGISTERS: gl.constexpr,
):
    # Program pid computes output tiles pid, pid + programs, ... of the ``total``: one each
    # when the grid has a program per tile, several when it has one per SM (persistent).
    M: gl.constexpr = q_desc.block_type.shape[2]
    BLOCK_N: gl.constexpr = k_desc.block_type.shape[2]
    HEAD_DIM: gl.constexpr = k_desc.block_type.shape[3]
    shape = (n_heads, group_size, seq_q, seq_k)

    # Shared memory: the consumers' Q tiles, the K/V ring and their barriers.
    tile_layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BLOCK_N, HEAD_DIM], k_desc.dtype)
    q_smem = gl.allocate_shared_memory(q_desc.dtype, [CONSUMERS, M, HEAD_DIM], tile_layout)
    k_ring = gl.allocate_shared_memory(k_desc.dtype, [NUM_STAGES, BLOCK_N, HEAD_DIM], tile_layout)
    v_ring = gl.allocate_shared_memory(v_desc.dtype, [NUM_STAGES, BLOCK_N, HEAD_DIM], tile_layout)
    q_ready = gl.allocate_shared_memory(gl.int64, [CONSUMERS, 1], mbarrier.MBarrierLayout())
    q_empty = gl.allocate_shared_memory(gl.int64, [CONSUMERS, 1], mbarrier.MBarrierLayout())
    turn = gl.allocate_shared_memory(gl.int64, [CONSUMERS, 1], mbarrier.MBarrierLayout())
    k_ready = gl.allocate_shared_memory(gl.int64, [NUM_STAGES, 1], mbarrier.MBarrierLayout())
    v_ready = gl.allocate_shared_memory(gl.int64, [NUM_STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [NUM_STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(CONSUMERS):
        mbarrier.init(q_ready.index(i), count=1)
        mbarrier.init(q_empty.index(i), count=1)
        mbarrier.init(turn.index(i), count=1)
    for i in gl.static_range(NUM_STAGES):
        mbarrier.init(k_ready.index(i), count=1)
        mbarrier.init(v_ready.index(i), count=1)
        mbarrier.init(empty.index(i), count=CONSUMERS)  # every consumer releases a slot
    smem = (q_smem, k_ring, v_ring)
    bars = (q_ready, q_empty, k_ready, v_ready, empty, turn)
    flags = (CAUSAL, OVERLAP, PINGPONG)
    # Consumer 0 runs in the launch's 4 warps; the other consumers (4 warps each) and the
    # producer (1 warp) in warps of their own, with REGISTERS = (consumer, producer) a thread.
    if CONSUMERS == 3:
        gl.warp_specialize(
            [
                (_consumer, (o_desc, smem, bars, shape, total, qk_scale, flags, 0)),
                (_consumer, (o_desc, smem, bars, shape, total, qk_scale, flags, 1)),
                (_consumer, (o_desc, smem, bars, shape, total, qk_scale, flags, 2)),
                (_producer, (q_desc, k_desc, v_desc, smem, bars, shape, total, CAUSAL)),
            ],
            [4, 4, 1],
            [REGISTERS[0], REGISTERS[0], REGISTERS[1]],
        )
    else:
        gl.warp_specialize(
            [
                (_consumer, (o_desc, smem, bars, shape, total, qk_scale, flags, 0)),
                (_consumer, (o_desc, smem, bars, shape, total, qk_scale, flags, 1)),
                (_producer, (q_desc, k_desc, v_desc, smem, bars, shape, total, CAUSAL)),
            ],
            [4, 1],
            [REGISTERS[0], REGISTERS[1]],
        )


def _descriptor(t: torch.Tensor, rows: int) -> TensorDescriptor:
    """A 4-D descriptor of ``(B, H, S, D)`` ``t`` with boxes of ``rows x D`` of one head."""
    box = [1, 1, rows, t.shape[3]]
    layout = gl.NVMMASharedLayout.get_default_for(box, _GL_DTYPES[t.dtype])
    return TensorDescriptor(t, list(t.shape), list(t.stride()), box, layout)


def kernel_arguments(o, q, k, v, causal: bool, scale: float, config: FA3Config):
    """``(kernel, grid, args, constants)`` of one launch: ``kernel[grid](*args, **constants)``
    launches it, ``kernel.warmup(*args, grid=grid, **constants)`` compiles it without launching
    (:mod:`gpuperf.kernels.gluon.offline`)."""
    batch, n_heads, seq_q, head_dim = q.shape
    n_kv_heads, seq_k = k.shape[1], k.shape[2]
    block_n = config.block_n
    descs = (
        _descriptor(q, WARPGROUP_M),
        _descriptor(k, block_n),
        _descriptor(v, block_n),
        _descriptor(o, WARPGROUP_M),
    )
    consumers = config.consumers
    total = triton.cdiv(seq_q, consumers * WARPGROUP_M) * batch * n_heads
    persistent = not causal if config.persistent is None else config.persistent
    grid = (min(total, num_sms(o.get_device())) if persistent else total,)
    args = (*descs, n_heads, n_heads // n_kv_heads, seq_q, seq_k, total, scale * LOG2E)
    constants = dict(
        NUM_STAGES=stages_for(head_dim, config),
        CAUSAL=causal,
        OVERLAP=config.overlap,
        PINGPONG=config.pingpong,
        CONSUMERS=consumers,
        REGISTERS=config.registers_for(head_dim),
        num_warps=4,
    )
    return _fa3_kernel, grid, args, constants


@op("gpuperf::attention_fa3", tensors=("q", "k", "v"))
def attention_fa3(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    causal: bool = False,
    scale: float | None = None,
    config: FA3Config | None = None,
) -> tuple[torch.Tensor, Launches]:
    """Return ``softmax(q @ kᵀ · scale) @ v`` per batch and head: FlashAttention-3's
    forward, in Gluon (Hopper only; no backward).

    The layout, semantics and errors of :func:`gpuperf.kernels.attention` (and of
    ``torch.nn.functional.scaled_dot_product_attention`` with ``enable_gqa=True``).

    Args:
        q: ``(B, H, S_q, D)``, float16 or bfloat16, on a Hopper GPU; ``D`` is 64 or 128.
        k: ``(B, H_kv, S_k, D)``, the same dtype and device, ``H`` a multiple of ``H_kv``
            (grouped-query attention).
        v: like ``k``.
        causal: query ``i`` attends to keys ``j <= i`` only (needs ``S_q == S_k``).
        scale: multiplies the scores before the softmax; ``1 / sqrt(D)`` by default.
        config: an :class:`FA3Config` (the ladder's rungs); :data:`DEFAULT_CONFIG` by default.

    Inputs are read in place through TMA where a descriptor can describe them (unit last
    stride, 16-byte aligned base and strides); otherwise they are copied to contiguous
    memory first (:func:`gpuperf.kernels.tma.tma_copy`): a contiguous view whose base is
    not 16-byte aligned (a slice of a bigger buffer at an odd offset) included.

    Returns:
        ``(B, H, S_q, D)``, contiguous, in ``q``'s dtype: scores, softmax and the weighted
        sum in float32, rounded once. Not differentiable (forward only).

    Raises:
        TypeError, ValueError: as :func:`gpuperf.kernels.attention` (a bad tensor, dtype,
            shape, head dim, ``causal`` or ``scale``, named); also ``config`` not an
            :class:`FA3Config` (TypeError), or three consumers at D 128 (ValueError).
        RuntimeError: Gluon cannot run here: Triton's interpreter is on, the GPU is not
            a Hopper (compute capability 9.x), or ``torch.compile`` is tracing the call (the
            kernel takes host TMA descriptors, which a graph cannot hold).

    Registered as ``torch.ops.gpuperf.attention_fa3`` (through
    :func:`~gpuperf.kernels.launch.op`, taking the config's fields), for eager calls only.
    A call whose inputs are like ones already checked (shapes, strides, dtypes, device,
    16-byte alignment, the options) and needed no copy launches from their plan
    (:mod:`gpuperf.kernels.launch`), which describes the new inputs again.

    FLOPs: ``4 * B * H * S_q * S_k * D`` (half that when causal). Algorithm:
    FlashAttention-3 (arXiv:2407.08608), forward.
    """
    scale = check_attention(q, k, v, causal, scale, HEAD_DIMS)
    if config is None:
        config = DEFAULT_CONFIG
    if not isinstance(config, FA3Config):
        raise TypeError(f"config must be an FA3Config, got {type(config).__name__}")
    config.registers_for(q.shape[3])  # (ValueError: three consumers above D 64)
    check_kernel_device("q", q)
    require_gluon_hopper("attention_fa3", q)
    if tracing(q, k, v):
        raise RuntimeError(
            "attention_fa3 cannot run inside torch.compile: its Gluon kernel takes host TMA "
            "descriptors, which a graph cannot hold; call it outside the compiled region "
            "(torch.compiler.disable) or use gpuperf.kernels.attention"
        )
    o = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    if o.numel() == 0:
        return o, ()
    # A copy is contiguous at a new, aligned address: its strides (D a multiple of 64 elements)
    # are multiples of 16 bytes, so a descriptor describes every input that reaches the kernel.
    # (A copied input leaves no plan: the launch no longer reads the caller's tensor.)
    ready = [tma_copy(t) for t in (q, k, v)]
    return o, (keyword_launch(*kernel_arguments(o, *ready, causal, scale, config)),)


__all__ = ["DEFAULT_CONFIG", "HEAD_DIMS", "FA3Config", "attention_fa3"]
