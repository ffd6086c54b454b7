"""Block-scaled FP8 matmul (DeepSeek-V3's 1 x 128 / 128 x 128 scales) in Gluon, for Hopper.

The kernel of :func:`gpuperf.kernels.matmul_fp8_blockwise` on Hopper when its config is a
:class:`~gpuperf.kernels.gluon.GluonFP8Config`. It is
:mod:`gpuperf.kernels.gluon.matmul_fp8`'s pingpong schedule with one change: each 128-deep
step's partial product is scaled before it is added. Every step along K multiplies one
``BLOCK_K = 128`` slice (one scale block) into a fresh partial accumulator
(``use_acc=False``); while the next step's ``wgmma`` runs, the finished partial is
multiplied by its rows' scales of ``a`` times its column block's scale of ``b`` and added
into the float32 accumulator, one fused multiply-add an element (the per-tensor kernel's
promotion is one addition an element). Two partials, ping-ponged, so the tensor cores never
wait for the scaling: DeepGEMM's schedule (https://github.com/deepseek-ai/DeepGEMM), in
Gluon.

* **Scales.** A tile is at most 128 columns wide and starts on a multiple of its width, so
  all its columns share one block of ``b``: one scalar per step. ``a``'s scales are a
  vector over the tile's rows, in the accumulator's row layout (each thread loads the two
  rows it holds of each 16). Both are loaded when their step's ``wgmma`` is issued and used
  when it has finished, so the loads' latency hides behind the tensor cores.
* **Descriptors made on the device** (``tma.make_tensor_descriptor``) from the operands'
  addresses and strides: the launch takes tensors only, as every op's launch does
  (:mod:`gpuperf.kernels.launch`), and its plans fill in new addresses. The descriptors
  live in scratch memory that Triton's allocator provides.
* **Persistent and pipelined** as the per-tensor kernel: TMA loads into a ring of
  ``num_stages`` slots, ``num_stages - 1`` steps ahead, counting on from one tile to the
  next; each output tile leaves through shared memory by TMA (where a descriptor can
  describe the output) while the next one is computed.

Runs on Hopper (compute capability 9.x) only, never in Triton's interpreter: the op
launches it only where :func:`gpuperf.kernels.device.has_tma` says TMA exists on a GPU.

Sources: DeepSeek-AI, "DeepSeek-V3 Technical Report" (arXiv:2412.19437), 3.3.2; DeepGEMM's
Hopper FP8 GEMM (scaled promotion of each 128-deep ``wgmma`` chain into float32 registers);
Triton's Gluon tutorials (TMA, mbarrier, wgmma).
"""

from __future__ import annotations

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_init,
    warpgroup_mma_wait,
)

from gpuperf.kernels.gluon.matmul_fp8 import GluonFP8Config

#: Gluon's dtype of each operand and output dtype the kernel takes.
_GL_DTYPES = {torch.float8_e4m3fn: gl.float8e4nv, torch.bfloat16: gl.bfloat16}


# The pipeline, as the per-tensor kernel's (gpuperf.kernels.gluon.matmul_fp8) runs it, its
# state passed as tuples: ``ring = (a_desc, b_desc, a_ring, b_ring, ready)``, the operands'
# descriptors, the shared-memory slots and their barriers; ``shape = (M, N, k_steps,
# steps)``, with ``steps`` this program's steps along K over all its tiles; ``tile = (first,
# off_m, off_n, next_m, next_n)``, the tile's first step and where this tile and the
# program's next one start.


@gluon.jit
def _issue(ring, registers, step, NUM_STAGES: gl.constexpr):
    """Wait for ``step``'s operands, then start its MMA from zero (``use_acc=False``) into
    ``registers`` (a finished partial's, reused); returns the pending MMA."""
    _a_desc, _b_desc, a_ring, b_ring, ready = ring
    slot = step % NUM_STAGES
    mbarrier.wait(ready.index(slot), (step // NUM_STAGES) & 1)
    return warpgroup_mma(
        a_ring.index(slot), b_ring.index(slot).permute((1, 0)), registers, use_acc=False, is_async=True
    )


@gluon.jit
def _tile_offsets(tile, M, N, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, GROUP_M: gl.constexpr):
    """The first row and column of output tile number ``tile``, in grouped order: GROUP_M rows
    of tiles, column by column, so that tiles computed together share operand tiles in L2."""
    in_group = GROUP_M * gl.cdiv(N, BLOCK_N)
    first_m = (tile // in_group) * GROUP_M
    group_rows = gl.minimum(gl.cdiv(M, BLOCK_M) - first_m, GROUP_M)
    off_m = (first_m + (tile % in_group) % group_rows) * BLOCK_M
    off_n = ((tile % in_group) // group_rows) * BLOCK_N
    return off_m, off_n


@gluon.jit
def _load_at(ring, step, off_m, off_n, k, pred, NUM_STAGES: gl.constexpr):
    """Start the TMA copies of the operand tiles at row ``off_m``, column ``off_n`` and depth
    ``k`` into ``step``'s slot; the slot's barrier completes when all their bytes have landed."""
    a_desc, b_desc, a_ring, b_ring, ready = ring
    slot = step % NUM_STAGES
    mbarrier.expect(ready.index(slot), a_desc.block_type.nbytes + b_desc.block_type.nbytes, pred=pred)
    tma.async_copy_global_to_shared(a_desc, [off_m, k], ready.index(slot), a_ring.index(slot), pred=pred)
    tma.async_copy_global_to_shared(b_desc, [off_n, k], ready.index(slot), b_ring.index(slot), pred=pred)


@gluon.jit
def _load(ring, step, shape, NUM_STAGES: gl.constexpr, GROUP_M: gl.constexpr):
    """Load the operands of this program's ``step`` (if it has that many), finding its tile by
    division: the prologue's loads (the loop refills through :func:`_refill`, which knows its
    tile: the divisions cost more issue slots than the loop can spare)."""
    a_desc, _b_desc, a_ring, b_ring, _ready = ring
    M, N, k_steps, steps = shape
    BLOCK_K: gl.constexpr = a_desc.block_type.shape[1]
    tile = gl.program_id(0) + (step // k_steps) * gl.num_programs(0)
    off_m, off_n = _tile_offsets(tile, M, N, a_ring.shape[1], b_ring.shape[1], GROUP_M)
    _load_at(ring, step, off_m, off_n, (step % k_steps) * BLOCK_K, step < steps, NUM_STAGES)


@gluon.jit
def _refill(ring, step, tile, shape, NUM_STAGES: gl.constexpr):
    """Once the MMA before ``step``'s has finished, its slot is free: load the operands of step
    ``step + NUM_STAGES - 1`` into it. That step lies in this tile or the next one (the launch
    keeps ``NUM_STAGES - 1`` at most a tile's steps), chosen by arithmetic rather than a
    branch (a branch here made ptxas serialize the wgmma instructions)."""
    a_desc, _b_desc, _a_ring, _b_ring, _ready = ring
    _M, _N, k_steps, steps = shape
    first, off_m, off_n, next_m, next_n = tile
    BLOCK_K: gl.constexpr = a_desc.block_type.shape[1]
    ahead = step + NUM_STAGES - 1
    depth = ahead - first
    later = (depth >= k_steps).to(gl.int32)  # 1: the step is the next tile's
    off_m = off_m + (next_m - off_m) * later
    off_n = off_n + (next_n - off_n) * later
    _load_at(ring, ahead, off_m, off_n, (depth - k_steps * later) * BLOCK_K, ahead < steps, NUM_STAGES)


@gluon.jit
def _store(acc, c_ptr, off_m, off_n, M, N, stride_cm):
    """One rounding and a masked store straight from the registers: for an output whose rows
    no tensor descriptor can describe (not a multiple of 16 bytes)."""
    rows = off_m + gl.arange(0, acc.shape[0], layout=gl.SliceLayout(1, acc.type.layout))
    cols = off_n + gl.arange(0, acc.shape[1], layout=gl.SliceLayout(0, acc.type.layout))
    mask = (rows < M)[:, None] & (cols < N)[None, :]
    gl.store(c_ptr + rows[:, None] * stride_cm + cols[None, :], acc.to(c_ptr.dtype.element_ty), mask=mask)


@gluon.jit
def _step_scale(sa_rows, row_in, sb_block, k, stride_sak, stride_sbk):
    """The scale of step ``k``'s partial product, one a row of the tile: ``scale_a[row, k] *
    scale_b[block, k]`` (rows past M get 0)."""
    return gl.load(sa_rows + k * stride_sak, mask=row_in, other=0.0) * gl.load(sb_block + k * stride_sbk)


@gluon.jit
def _after(acc, partial):
    """``(acc, partial)`` unchanged, through an empty ``asm volatile`` that reads and writes
    both (CUTLASS's ``warpgroup_fence_operand``): ``partial``, whose registers the next
    ``wgmma`` overwrites, comes back only once ``acc`` has been computed from it. Without it
    the compiler moved the scaled add of the finished partial below the next ``wgmma``, kept
    the partial in copies meanwhile, and ptxas serialized every ``wgmma`` (its C7514); a
    plain addition (the per-tensor kernel's) stays where it is written."""
    return gl.inline_asm_elementwise(
        "", "=r,=r,0,1", [acc, partial], dtype=(gl.float32, gl.float32), is_pure=False, pack=1
    )


@gluon.jit
def _fp8_blockwise_kernel(
    a_ptr,
    b_ptr,
    sa_ptr,
    sb_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_bn,
    stride_sam,
    stride_sak,
    stride_sbn,
    stride_sbk,
    stride_cm,
    A_LAYOUT: gl.constexpr,
    B_LAYOUT: gl.constexpr,
    C_LAYOUT: gl.constexpr,
    BLOCK_M: gl.constexpr,
    BLOCK_N: gl.constexpr,
    BLOCK_K: gl.constexpr,
    NUM_STAGES: gl.constexpr,
    GROUP_M: gl.constexpr,
    PINGPONG: gl.constexpr,
    TMA_STORE: gl.constexpr,
):
    """``c = sum over steps k of (a_k @ b_k^T) * scale_a[:, k] * scale_b[n // 128, k]``: ``a``
    (M, K) and ``b`` (N, K) K-major FP8, ``c`` (M, N) bfloat16. ``BLOCK_M`` is 16 rows a warp
    (64 a warpgroup); ``BLOCK_N`` divides 128 (one block of ``b``'s scales a tile)."""
    a_desc = tma.make_tensor_descriptor(a_ptr, [M, K], [stride_am, 1], [BLOCK_M, BLOCK_K], A_LAYOUT)
    b_desc = tma.make_tensor_descriptor(b_ptr, [N, K], [stride_bn, 1], [BLOCK_N, BLOCK_K], B_LAYOUT)
    pid = gl.program_id(0)
    programs = gl.num_programs(0)
    my_tiles = gl.cdiv(gl.cdiv(M, BLOCK_M) * gl.cdiv(N, BLOCK_N) - pid, programs)
    k_steps = gl.cdiv(K, BLOCK_K)
    shape = (M, N, k_steps, my_tiles * k_steps)

    a_ring = gl.allocate_shared_memory(a_desc.dtype, [NUM_STAGES, BLOCK_M, BLOCK_K], A_LAYOUT)
    b_ring = gl.allocate_shared_memory(b_desc.dtype, [NUM_STAGES, BLOCK_N, BLOCK_K], B_LAYOUT)
    ready = gl.allocate_shared_memory(gl.int64, [NUM_STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(NUM_STAGES):
        mbarrier.init(ready.index(s), count=1)
    ring = (a_desc, b_desc, a_ring, b_ring, ready)
    if TMA_STORE:  # tiles leave through shared memory, by TMA, clipped at the edges
        c_desc = tma.make_tensor_descriptor(c_ptr, [M, N], [stride_cm, 1], [BLOCK_M, BLOCK_N], C_LAYOUT)
        c_smem = gl.allocate_shared_memory(c_desc.dtype, [BLOCK_M, BLOCK_N], C_LAYOUT)
    for s in gl.static_range(NUM_STAGES - 1):
        _load(ring, s, shape, NUM_STAGES, GROUP_M)

    # wgmma's register layout: the warps stacked along M, one instruction BLOCK_N wide.
    layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[BLOCK_M // 16, 1], instr_shape=[16, BLOCK_N, 32]
    )
    row_layout: gl.constexpr = gl.SliceLayout(1, layout)
    for t in range(my_tiles):
        first = t * k_steps
        off_m, off_n = _tile_offsets(pid + t * programs, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        next_m, next_n = _tile_offsets(pid + (t + 1) * programs, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        tile = (first, off_m, off_n, next_m, next_n)
        rows = off_m + gl.arange(0, BLOCK_M, layout=row_layout)
        row_in = rows < M
        sa_rows = sa_ptr + rows.to(gl.int64) * stride_sam
        sb_block = sb_ptr + (off_n // 128) * stride_sbn
        acc = gl.zeros((BLOCK_M, BLOCK_N), dtype=gl.float32, layout=layout)
        if PINGPONG:
            # As the per-tensor kernel: steps in pairs, x then y, each partial keeping its
            # registers; a partial is scaled and added while the other's wgmma runs.
            x_done = gl.zeros((BLOCK_M, BLOCK_N), dtype=gl.float32, layout=layout)
            y = warpgroup_mma_init(gl.zeros((BLOCK_M, BLOCK_N), dtype=gl.float32, layout=layout))
            scale_y = gl.zeros((BLOCK_M,), dtype=gl.float32, layout=row_layout)
            for pair in range(k_steps // 2):
                step = first + 2 * pair
                scale_x = _step_scale(sa_rows, row_in, sb_block, 2 * pair, stride_sak, stride_sbk)
                x = _issue(ring, x_done, step, NUM_STAGES)
                y_done = warpgroup_mma_wait(num_outstanding=1, deps=(y,))
                acc, y_done = _after(acc + y_done * scale_y[:, None], y_done)
                _refill(ring, step, tile, shape, NUM_STAGES)
                scale_y = _step_scale(sa_rows, row_in, sb_block, 2 * pair + 1, stride_sak, stride_sbk)
                y = _issue(ring, y_done, step + 1, NUM_STAGES)
                x_done = warpgroup_mma_wait(num_outstanding=1, deps=(x,))
                acc += x_done * scale_x[:, None]
                _refill(ring, step + 1, tile, shape, NUM_STAGES)
            if k_steps % 2 == 1:
                step = first + k_steps - 1
                scale_x = _step_scale(sa_rows, row_in, sb_block, k_steps - 1, stride_sak, stride_sbk)
                x = _issue(ring, x_done, step, NUM_STAGES)
                acc += warpgroup_mma_wait(num_outstanding=1, deps=(y,)) * scale_y[:, None]
                _refill(ring, step, tile, shape, NUM_STAGES)
                acc += warpgroup_mma_wait(num_outstanding=0, deps=(x,)) * scale_x[:, None]
            else:
                acc += warpgroup_mma_wait(num_outstanding=0, deps=(y,)) * scale_y[:, None]
        else:
            # Triton's schedule: wait for each step's MMA, then scale and add it.
            partial = gl.zeros((BLOCK_M, BLOCK_N), dtype=gl.float32, layout=layout)
            for k in range(k_steps):
                scale = _step_scale(sa_rows, row_in, sb_block, k, stride_sak, stride_sbk)
                token = _issue(ring, partial, first + k, NUM_STAGES)
                partial = warpgroup_mma_wait(num_outstanding=0, deps=(token,))
                acc += partial * scale[:, None]
                _refill(ring, first + k, tile, shape, NUM_STAGES)
        # The next tile's first loads are in flight while this one is stored.
        if TMA_STORE:
            # Wait only for the previous tile's store to have read the buffer.
            tma.store_wait(pendings=0)
            c_smem.store(acc.to(c_desc.dtype))
            fence_async_shared()
            tma.async_copy_shared_to_global(c_desc, [off_m, off_n], c_smem)
        else:
            _store(acc, c_ptr, off_m, off_n, M, N, stride_cm)
    if TMA_STORE:
        tma.store_wait(pendings=0)
    for s in gl.static_range(NUM_STAGES):
        mbarrier.invalidate(ready.index(s))


def check_config(config: GluonFP8Config) -> None:
    """``ValueError`` unless ``config`` suits the block-scaled kernel: 128 deep along K (one
    scale block a step), a tile of 64 or 128 rows (one or two warpgroups) and 64 or 128
    columns (one block of ``b``'s scales), non-persistent launches not offered."""
    if config.block_k != 128:
        raise ValueError(f"config.block_k must be the scale block, 128, got {config.block_k}")
    if config.block_m not in (64, 128) or config.block_n not in (64, 128):
        raise ValueError(
            "the block-scaled Gluon kernel takes tiles of 64 or 128 rows and 64 or 128 columns, "
            f"got {config.block_m} x {config.block_n}"
        )
    if not config.persistent:
        raise ValueError("the block-scaled Gluon kernel is persistent: config.persistent must be True")


def launch_arguments(c, a, b, scale_a, scale_b, config: GluonFP8Config, num_programs: int) -> tuple:
    """``(kernel, grid, args, constexprs)`` of one launch of the kernel on checked
    operands: ``a`` (M, K) and ``b`` (N, K) with unit strides along K and the other strides
    multiples of 16 bytes (what a descriptor needs), ``c`` (M, N) contiguous bfloat16.
    ``num_programs``: the SMs of the device (the grid is at most one program per tile)."""
    (m, k), n = a.shape, b.shape[0]
    bm, bn, bk = config.block_m, config.block_n, config.block_k
    tiles = triton.cdiv(m, bm) * triton.cdiv(n, bn)
    a_layout = gl.NVMMASharedLayout.get_default_for([bm, bk], _GL_DTYPES[a.dtype])
    b_layout = gl.NVMMASharedLayout.get_default_for([bn, bk], _GL_DTYPES[b.dtype])
    c_layout = gl.NVMMASharedLayout.get_default_for([bm, bn], _GL_DTYPES[c.dtype])
    # The output leaves by TMA where a descriptor can describe it (rows of 16-byte multiples).
    tma_store = config.tma_store and (c.stride(0) * c.element_size()) % 16 == 0 and c.data_ptr() % 16 == 0
    args = (
        a, b, scale_a, scale_b, c, m, n, k, a.stride(0), b.stride(0), *scale_a.stride(),
        *scale_b.stride(), c.stride(0),
    )  # fmt: skip
    constexprs = (
        a_layout, b_layout, c_layout, bm, bn, bk,
        # (At most a tile's steps in flight ahead: _refill looks one tile ahead, no further.)
        max(2, min(config.num_stages, triton.cdiv(k, bk) + 1)),
        config.group_m, config.schedule == "pingpong", tma_store,
    )  # fmt: skip
    return _fp8_blockwise_kernel, (min(tiles, num_programs),), args, constexprs


__all__ = ["check_config", "launch_arguments"]
