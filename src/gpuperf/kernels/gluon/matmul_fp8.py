"""FP8 matmul with float32-promoted accumulation, written in Gluon for Hopper.

Hopper's FP8 tensor cores add products in an accumulator of about 14 significant
bits. Without fast accumulation, cuBLASLt (and ``torch._scaled_mm``) hands that
partial sum to a float32 accumulator every 128 products along K: the *promotion*.
Triton 3.6 lowers a promoted FP8 ``tl.dot`` by draining the chain of asynchronous
``wgmma`` instructions before every float32 addition, so the tensor cores idle while
the CUDA cores add (tutorial 05 measured it at 0.80-0.86x cuBLASLt on the H100).

This kernel chooses the schedule itself. Each step along K multiplies one
``BLOCK_K = 128`` slice into a fresh partial accumulator (``use_acc=False``), and
the float32 addition of the *previous* step's partial runs while this step's
``wgmma`` is in flight: two partial accumulators, ping-ponged, so the tensor cores
never wait for the promotion (``schedule="pingpong"``). ``schedule="drain"`` waits for
every ``wgmma`` before its promotion, Triton's schedule, as the ladder's first rung.
Both promote every ``BLOCK_K`` products, as cuBLASLt does, so both round alike.

The operands reach shared memory through TMA into a ring of ``num_stages`` slots,
each with an ``mbarrier`` that the copy engine arrives on; the loads run
``num_stages - 1`` steps ahead of the tensor cores. The kernel is persistent: one
program per SM takes output tiles one after another (in groups of ``group_m`` rows of
tiles, so that neighbouring programs reuse operand tiles from L2), and its steps along K
count on from one tile to the next, so the next tile's loads are in flight while a tile
is scaled. Two warpgroups (8 warps) share each ``128 x BLOCK_N`` tile, 64 rows
each: three float32 tiles (the accumulator and two partials) of ``64 x 128`` take 192
registers a thread.

Each output tile leaves through shared memory by TMA (where a descriptor can describe
the output), the copy engine storing it while the next tile is computed. Tutorial 08
measures the ladder, rung by rung, against Triton's ``matmul_fp8`` and cuBLASLt.

Sources: DeepSeek-AI, "DeepSeek-V3 Technical Report" (arXiv:2412.19437), §3.3.2
(promotion to CUDA cores every 128 elements along K); NVIDIA's CUTLASS
``KernelTmaWarpSpecializedFP8FastAccum`` and its promoting counterpart; Triton's Gluon
tutorials (``python/tutorials/gluon``: TMA, mbarrier, wgmma).
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
    warpgroup_mma_init,
    warpgroup_mma_wait,
)
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

from gpuperf._runtime import check_kernel_device
from gpuperf.kernels._validation import check_tensor, dtype_names
from gpuperf.kernels.device import num_sms, require_gluon_hopper
from gpuperf.kernels.launch import Launches, keyword_launch, op
from gpuperf.kernels.matmul_fp8 import FP8_DTYPES, FP8_OUT_DTYPES, check_scale
from gpuperf.kernels.matmul_persistent import check_matmul_shapes
from gpuperf.kernels.tma import check_tma_operands, tma_copy, tma_layout, tracing

#: The promotion schedules: ``"pingpong"`` overlaps each float32 addition with the next
#: step's MMA (two partial accumulators); ``"drain"`` waits for each MMA first (Triton's).
SCHEDULES = ("pingpong", "drain")

_GL_DTYPES = {
    torch.float8_e4m3fn: gl.float8e4nv,
    torch.float8_e5m2: gl.float8e5,
    torch.bfloat16: gl.bfloat16,
    torch.float16: gl.float16,
    torch.float32: gl.float32,
}


@dataclass(frozen=True)
class GluonFP8Config:
    """Launch configuration of :func:`matmul_fp8_promoted`.

    Attributes:
        block_m, block_n: output tile (``block_m`` 64 a warpgroup: 128 with 8 warps).
        block_k: products per promotion (and per pipeline slot): 128 as cuBLASLt.
        num_stages: slots of the shared-memory ring (``(block_m + block_n) * block_k``
            bytes each).
        group_m: rows of output tiles visited together (L2 reuse).
        num_warps: 4 per warpgroup; ``block_m == 16 * num_warps``.
        schedule: one of :data:`SCHEDULES`.
        tma_store: store each output tile through shared memory with TMA, which runs on
            while the next tile is computed (where a descriptor can describe the output:
            rows of a multiple of 16 bytes); else a masked store from the registers.
        persistent: one program per SM, each computing a tile after another, the loads of
            the next tile in flight while it stores one (False: a program per tile, each
            filling its pipeline and draining it alone).
    """

    block_m: int = 128
    block_n: int = 128
    block_k: int = 128
    num_stages: int = 4
    group_m: int = 8
    num_warps: int = 8
    schedule: str = "pingpong"
    persistent: bool = True
    tma_store: bool = True

    def __post_init__(self):
        for name in ("persistent", "tma_store"):
            value = getattr(self, name)
            if type(value) is not bool:
                raise ValueError(f"{name} must be a bool, got {value!r}")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES}, got {self.schedule!r}")
        for name in ("block_m", "block_n", "block_k", "num_stages", "group_m", "num_warps"):
            value = getattr(self, name)
            if type(value) is not int or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if self.num_warps % 4 or self.block_m != 16 * self.num_warps:
            raise ValueError(
                f"block_m must be 16 * num_warps (64 rows a warpgroup of 4 warps), got block_m "
                f"{self.block_m} with num_warps {self.num_warps}"
            )
        if self.block_n & (self.block_n - 1) or not 8 <= self.block_n <= 256 or self.block_k % 32:
            raise ValueError(
                f"block_n must be a power of two from 8 to 256 (a TMA box) and block_k a multiple "
                f"of 32 (one FP8 wgmma step), got block_n {self.block_n}, block_k {self.block_k}"
            )


#: The default: 128 x 128 tiles, 4 slots of 32 KiB, pingponged promotion.
DEFAULT_CONFIG = GluonFP8Config()


# The helpers pass the pipeline's state as tuples: ``ring = (a_desc, b_desc, a_ring, b_ring,
# ready)``, the operands' descriptors, the shared-memory slots and their barriers; ``shape
# = (M, N, k_steps, steps)``, with ``steps`` this program's steps along K over all its tiles;
# ``tile = (first, off_m, off_n, next_m, next_n)``, the tile's first step and where this tile
# and the program's next one start.


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
    tiles_m = gl.cdiv(M, BLOCK_M)
    tiles_n = gl.cdiv(N, BLOCK_N)
    in_group = GROUP_M * tiles_n
    first_m = (tile // in_group) * GROUP_M
    group_rows = gl.minimum(tiles_m - first_m, GROUP_M)
    off_m = (first_m + (tile % in_group) % group_rows) * BLOCK_M
    off_n = ((tile % in_group) // group_rows) * BLOCK_N
    return off_m, off_n


@gluon.jit
def _load_at(ring, step, off_m, off_n, k, pred, NUM_STAGES: gl.constexpr):
    """Start the TMA copies of the operand tiles at row ``off_m``, column ``off_n`` and
    depth ``k`` into ``step``'s slot; the slot's barrier completes when all their bytes have
    landed. A tile of rows that are not a power of two (192) arrives in boxes of 64 rows."""
    a_desc, b_desc, a_ring, b_ring, ready = ring
    A_BOX: gl.constexpr = a_desc.block_type.shape[0]
    BOXES: gl.constexpr = a_ring.shape[1] // A_BOX
    slot = step % NUM_STAGES
    mbarrier.expect(ready.index(slot), BOXES * a_desc.block_type.nbytes + b_desc.block_type.nbytes, pred=pred)
    for box in gl.static_range(BOXES):
        a_slot = a_ring.index(slot).slice(box * A_BOX, A_BOX)
        tma.async_copy_global_to_shared(
            a_desc, [off_m + box * A_BOX, k], ready.index(slot), a_slot, pred=pred
        )
    tma.async_copy_global_to_shared(b_desc, [off_n, k], ready.index(slot), b_ring.index(slot), pred=pred)


@gluon.jit
def _load(ring, step, shape, NUM_STAGES: gl.constexpr, GROUP_M: gl.constexpr):
    """Load the operands of this program's ``step`` (if it has that many), finding its tile
    by division: the prologue's loads. The divisions cost more issue slots than the loop
    can spare (the persistent kernel ran 18% slower with them), so the loop refills through
    :func:`_refill`, which knows its tile."""
    a_desc, _b_desc, a_ring, b_ring, _ready = ring
    M, N, k_steps, steps = shape
    BLOCK_K: gl.constexpr = a_desc.block_type.shape[1]
    tile = gl.program_id(0) + (step // k_steps) * gl.num_programs(0)
    off_m, off_n = _tile_offsets(tile, M, N, a_ring.shape[1], b_ring.shape[1], GROUP_M)
    _load_at(ring, step, off_m, off_n, (step % k_steps) * BLOCK_K, step < steps, NUM_STAGES)


@gluon.jit
def _refill(ring, step, tile, shape, NUM_STAGES: gl.constexpr):
    """Once the MMA before ``step``'s has finished, its slot is free: load the operands of
    step ``step + NUM_STAGES - 1`` into it. That step lies in this tile or the next one (the
    launch keeps ``NUM_STAGES - 1`` at most a tile's steps), chosen by arithmetic rather
    than a branch: a branch here made ptxas serialize the wgmma instructions (its C7514)."""
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
def _fp8_promoted_kernel(
    a_desc,
    b_desc,
    c,
    scale_a_ptr,
    scale_b_ptr,
    M,
    N,
    stride_cm,
    ROW_SCALE_A: gl.constexpr,
    COL_SCALE_B: gl.constexpr,
    NUM_STAGES: gl.constexpr,
    GROUP_M: gl.constexpr,
    PINGPONG: gl.constexpr,
    BLOCK_M: gl.constexpr,
    TMA_STORE: gl.constexpr,
    num_warps: gl.constexpr,
):
    BLOCK_K: gl.constexpr = a_desc.block_type.shape[1]
    BLOCK_N: gl.constexpr = b_desc.block_type.shape[0]
    # Program pid computes output tiles pid, pid + programs, ... (only the first without
    # ``persistent``); its steps along K count on from one tile to the next.
    pid = gl.program_id(0)
    programs = gl.num_programs(0)
    my_tiles = gl.cdiv(gl.cdiv(M, BLOCK_M) * gl.cdiv(N, BLOCK_N) - pid, programs)
    k_steps = gl.cdiv(a_desc.shape[1], BLOCK_K)
    shape = (M, N, k_steps, my_tiles * k_steps)

    # The ring: NUM_STAGES slots of A (BLOCK_M x BLOCK_K) and B (BLOCK_N x BLOCK_K, K-major),
    # each with a barrier the TMA engine arrives on when both tiles have landed.
    a_ring = gl.allocate_shared_memory(a_desc.dtype, [NUM_STAGES, BLOCK_M, BLOCK_K], a_desc.layout)
    b_ring = gl.allocate_shared_memory(b_desc.dtype, [NUM_STAGES, BLOCK_N, BLOCK_K], b_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [NUM_STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(NUM_STAGES):
        mbarrier.init(ready.index(s), count=1)
    ring = (a_desc, b_desc, a_ring, b_ring, ready)
    if TMA_STORE:  # c is a tensor descriptor: tiles leave through shared memory, by TMA
        c_smem = gl.allocate_shared_memory(c.dtype, [BLOCK_M, BLOCK_N], c.layout)
    for s in gl.static_range(NUM_STAGES - 1):
        _load(ring, s, shape, NUM_STAGES, GROUP_M)

    # wgmma's register layout: num_warps warps stacked along M, one instruction N wide.
    layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, BLOCK_N, 32]
    )
    for t in range(my_tiles):
        first = t * k_steps  # this tile's first step
        off_m, off_n = _tile_offsets(pid + t * programs, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        next_m, next_n = _tile_offsets(pid + (t + 1) * programs, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        tile = (first, off_m, off_n, next_m, next_n)
        acc = gl.zeros((BLOCK_M, BLOCK_N), dtype=gl.float32, layout=layout)
        if PINGPONG:
            # Steps go in pairs, x then y, so that each partial keeps its registers: a partial
            # moved while its MMA is in flight makes ptxas serialize every wgmma (its C7514).
            x_done = gl.zeros((BLOCK_M, BLOCK_N), dtype=gl.float32, layout=layout)
            y = warpgroup_mma_init(gl.zeros((BLOCK_M, BLOCK_N), dtype=gl.float32, layout=layout))
            for pair in range(k_steps // 2):
                step = first + 2 * pair
                x = _issue(ring, x_done, step, NUM_STAGES)
                y_done = warpgroup_mma_wait(num_outstanding=1, deps=(y,))  # step - 1 has finished:
                acc += y_done  # promote it while step runs, and reuse its slot.
                _refill(ring, step, tile, shape, NUM_STAGES)
                y = _issue(ring, y_done, step + 1, NUM_STAGES)
                x_done = warpgroup_mma_wait(num_outstanding=1, deps=(x,))
                acc += x_done
                _refill(ring, step + 1, tile, shape, NUM_STAGES)
            if k_steps % 2 == 1:
                step = first + k_steps - 1
                x = _issue(ring, x_done, step, NUM_STAGES)
                acc += warpgroup_mma_wait(num_outstanding=1, deps=(y,))
                _refill(ring, step, tile, shape, NUM_STAGES)
                acc += warpgroup_mma_wait(num_outstanding=0, deps=(x,))
            else:
                acc += warpgroup_mma_wait(num_outstanding=0, deps=(y,))
        else:
            # Triton's schedule: wait for each step's MMA, then promote it.
            partial = gl.zeros((BLOCK_M, BLOCK_N), dtype=gl.float32, layout=layout)
            for k in range(k_steps):
                token = _issue(ring, partial, first + k, NUM_STAGES)
                partial = warpgroup_mma_wait(num_outstanding=0, deps=(token,))
                acc += partial
                _refill(ring, first + k, tile, shape, NUM_STAGES)
        # The next tile's first loads are in flight while this one is stored.
        acc = _scaled(acc, scale_a_ptr, scale_b_ptr, off_m, off_n, M, N, ROW_SCALE_A, COL_SCALE_B)
        if TMA_STORE:
            # The copy engine stores the tile while the next one is computed: wait only for
            # the previous tile's store to have read the buffer before overwriting it.
            tma.store_wait(pendings=0)
            c_smem.store(acc.to(c.dtype))
            fence_async_shared()
            tma.async_copy_shared_to_global(c, [off_m, off_n], c_smem)
        else:
            _store(acc, c, off_m, off_n, M, N, stride_cm)
    if TMA_STORE:
        tma.store_wait(pendings=0)
    for s in gl.static_range(NUM_STAGES):
        mbarrier.invalidate(ready.index(s))


@gluon.jit
def _scaled(
    acc, scale_a_ptr, scale_b_ptr, off_m, off_n, M, N, ROW_SCALE_A: gl.constexpr, COL_SCALE_B: gl.constexpr
):
    """The float32 tile ``acc`` (top-left output element ``(off_m, off_n)``) times both scales."""
    rows = off_m + gl.arange(0, acc.shape[0], layout=gl.SliceLayout(1, acc.type.layout))
    cols = off_n + gl.arange(0, acc.shape[1], layout=gl.SliceLayout(0, acc.type.layout))
    if ROW_SCALE_A:
        acc = acc * gl.load(scale_a_ptr + rows, mask=rows < M, other=0.0)[:, None]
    else:
        acc = acc * gl.load(scale_a_ptr)
    if COL_SCALE_B:
        acc = acc * gl.load(scale_b_ptr + cols, mask=cols < N, other=0.0)[None, :]
    else:
        acc = acc * gl.load(scale_b_ptr)
    return acc


@gluon.jit
def _store(acc, c_ptr, off_m, off_n, M, N, stride_cm):
    """One rounding and a masked store straight from the registers: for an output whose rows
    no tensor descriptor can describe (not a multiple of 16 bytes)."""
    rows = off_m + gl.arange(0, acc.shape[0], layout=gl.SliceLayout(1, acc.type.layout))
    cols = off_n + gl.arange(0, acc.shape[1], layout=gl.SliceLayout(0, acc.type.layout))
    mask = (rows < M)[:, None] & (cols < N)[None, :]
    gl.store(c_ptr + rows[:, None] * stride_cm + cols[None, :], acc.to(c_ptr.dtype.element_ty), mask=mask)


@op("gpuperf::matmul_fp8_promoted", tensors=("a", "b", "scale_a", "scale_b"))
def matmul_fp8_promoted(
    a: torch.Tensor,
    b: torch.Tensor,
    scale_a: torch.Tensor,
    scale_b: torch.Tensor,
    *,
    out_dtype: torch.dtype = torch.bfloat16,
    config: GluonFP8Config | None = None,
) -> tuple[torch.Tensor, Launches]:
    """Return ``(a · scale_a) @ (b · scale_b)`` from FP8 operands, promoted to float32
    every 128 products along K while the tensor cores run on (Gluon, Hopper only).

    The semantics and accuracy of ``gpuperf.kernels.matmul_fp8(..., fast_accum=False)``
    and of ``torch._scaled_mm`` with its default accumulation; the schedule is the
    module's subject (see :mod:`gpuperf.kernels.gluon.matmul_fp8`).

    Args:
        a: ``(M, K)``, ``torch.float8_e4m3fn`` or ``torch.float8_e5m2``; copied to
            row-major if TMA cannot read it so (:func:`gpuperf.kernels.tma.tma_copy`: a
            contiguous view whose base is not 16-byte aligned is copied too).
        b: ``(K, N)``, an FP8 dtype, same device; copied to column-major (``bt.t()`` of
            a row-major ``(N, K)``) if TMA cannot read it so, as ``torch._scaled_mm`` wants it.
        scale_a: float32, shape ``()`` (per tensor) or ``(M, 1)`` (per row).
        scale_b: float32, shape ``()`` or ``(1, N)`` (per column).
        out_dtype: ``torch.bfloat16`` (default), ``torch.float16`` or ``torch.float32``.
        config: a :class:`GluonFP8Config`; :data:`DEFAULT_CONFIG` by default.

    Returns:
        A new contiguous ``(M, N)`` tensor of ``out_dtype``. ``K = 0`` gives zeros.

    Raises:
        TypeError: an operand is not an FP8 tensor, a scale not a float32 tensor,
            ``out_dtype`` unsupported, or ``config`` not a :class:`GluonFP8Config`.
        ValueError: shapes or devices do not match, a scale has the wrong shape, or an
            operand cannot be read K-major through TMA, even as a copy (its other stride,
            ``K`` bytes for a contiguous copy, must be a multiple of 16; ``K = 1`` never is).
        RuntimeError: Gluon cannot run here: Triton's interpreter is on, the GPU is
            not a Hopper (compute capability 9.x), or ``torch.compile`` is tracing the call
            (the kernel takes host TMA descriptors, which a graph cannot hold).

    Registered as ``torch.ops.gpuperf.matmul_fp8_promoted`` (through
    :func:`~gpuperf.kernels.launch.op`, taking the config's fields), for eager calls only.
    A call whose operands are like ones already checked (shapes, strides, dtypes, device,
    16-byte alignment, the options) and needed no copy launches from their plan
    (:mod:`gpuperf.kernels.launch`), which describes the new operands again.

    Algorithm: tiled matmul with a TMA + mbarrier ring and pingponged float32
    promotion; FLOPs ``2 * M * N * K``.
    """
    for name, t in (("a", a), ("b", b)):
        check_tensor(name, t, FP8_DTYPES)
    if a.device != b.device:
        raise ValueError(f"tensors must be on the same device, got a on {a.device}, b on {b.device}")
    check_matmul_shapes(a, b)
    m, k = a.shape
    n = b.shape[1]
    check_scale("scale_a", scale_a, m, 1, a)
    check_scale("scale_b", scale_b, 1, n, b)
    if out_dtype not in FP8_OUT_DTYPES:
        raise TypeError(f"out_dtype must be one of {dtype_names(FP8_OUT_DTYPES)}, got {out_dtype}")
    if config is None:
        config = DEFAULT_CONFIG
    if not isinstance(config, GluonFP8Config):
        raise TypeError(f"config must be a GluonFP8Config, got {type(config).__name__}")
    check_kernel_device("a", a)
    require_gluon_hopper("matmul_fp8_promoted", a)
    if tracing(a, b, scale_a, scale_b):
        raise RuntimeError(
            "matmul_fp8_promoted cannot run inside torch.compile: its Gluon kernel takes host TMA "
            "descriptors, which a graph cannot hold; call it outside the compiled region "
            "(torch.compiler.disable) or use gpuperf.kernels.matmul_fp8"
        )
    if m == 0 or n == 0 or k == 0:
        return torch.zeros((m, n), dtype=out_dtype, device=a.device), ()
    a, b = tma_copy(a, "row"), tma_copy(b, "col")
    check_tma_operands(("a", "b"), (a, b))
    # A copy cannot make every operand K-major: PyTorch gives a (1, N) b (K = 1) the strides
    # of a row-major one, and the kernel's descriptor of bᵀ would have a misaligned stride.
    for name, t, wanted in (("a", a, "row"), ("b", b, "col")):
        if tma_layout(t) != wanted:
            raise ValueError(
                f"{name} (shape {tuple(t.shape)}, strides {t.stride()}) cannot be read K-major "
                "through TMA: its K dimension must be contiguous with the other stride a "
                "multiple of 16 bytes (K = 1 cannot be); use gpuperf.kernels.matmul_fp8"
            )
    c = torch.empty((m, n), dtype=out_dtype, device=a.device)
    # (A scale's flat view has the scale's address: a plan reads the caller's scale. A copied
    # operand leaves no plan: the launch no longer reads the caller's operand.)
    return c, (keyword_launch(*kernel_arguments(c, a, b, scale_a.reshape(-1), scale_b.reshape(-1), config)),)


def kernel_arguments(c, a, b, scale_a, scale_b, config: GluonFP8Config) -> tuple:
    """``(kernel, grid, args, constants)`` of one launch: ``kernel[grid](*args, **constants)``
    launches it, ``kernel.warmup(*args, grid=grid, **constants)`` compiles it without launching
    (:mod:`gpuperf.kernels.gluon.offline`)."""
    m = a.shape[0]
    n = b.shape[1]
    bm, bn, bk = config.block_m, config.block_n, config.block_k
    a_box = bm if bm & (bm - 1) == 0 else 64  # (a copy box's sides are powers of two)
    a_layout = gl.NVMMASharedLayout.get_default_for([a_box, bk], _GL_DTYPES[a.dtype])
    b_layout = gl.NVMMASharedLayout.get_default_for([bn, bk], _GL_DTYPES[b.dtype])
    a_desc = TensorDescriptor.from_tensor(a, [a_box, bk], a_layout)
    b_desc = TensorDescriptor.from_tensor(b.t(), [bn, bk], b_layout)
    tiles = triton.cdiv(m, bm) * triton.cdiv(n, bn)
    grid = (min(tiles, num_sms(c.get_device())) if config.persistent else tiles,)
    # The output leaves by TMA when a descriptor can describe it (rows of 16-byte multiples).
    tma_store = config.tma_store and tma_layout(c) == "row" and bm & (bm - 1) == 0
    if tma_store:
        c_layout = gl.NVMMASharedLayout.get_default_for([bm, bn], _GL_DTYPES[c.dtype])
        c = TensorDescriptor.from_tensor(c, [bm, bn], c_layout)
    args = (a_desc, b_desc, c, scale_a, scale_b, m, n, n)
    constants = dict(
        ROW_SCALE_A=scale_a.numel() > 1,
        COL_SCALE_B=scale_b.numel() > 1,
        # (At most a tile's steps in flight ahead: _refill looks one tile ahead, no further.)
        NUM_STAGES=max(2, min(config.num_stages, triton.cdiv(a.shape[1], bk) + 1)),
        GROUP_M=config.group_m,
        PINGPONG=config.schedule == "pingpong",
        BLOCK_M=bm,
        TMA_STORE=tma_store,
        num_warps=config.num_warps,
    )
    return _fp8_promoted_kernel, grid, args, constants


__all__ = ["DEFAULT_CONFIG", "SCHEDULES", "GluonFP8Config", "matmul_fp8_promoted"]
