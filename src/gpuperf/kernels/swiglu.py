"""SwiGLU, ``silu(x @ W_gate) * (x @ W_up)``: Llama's MLP gate as one persistent matmul
with the gating in its epilogue.

Llama's MLP (Touvron et al., "LLaMA", arXiv:2302.13971; Shazeer, "GLU Variants Improve
Transformer", arXiv:2002.05202) projects its input twice and gates one projection by the
SiLU of the other, ``h = silu(x @ W_gate) * (x @ W_up)``, before the down projection.
Written in PyTorch (Hugging Face's ``LlamaMLP``) that is two matmuls, each writing an
``(M, N)`` product to memory, then a SiLU and a multiplication that read them back. Here
the two weights are one ``(K, 2N)`` matrix ``[W_gate | W_up]`` and one kernel computes
both products of each output tile, then ``silu(g) * u`` on the tiles still in registers,
and stores the ``(M, N)`` result, rounded once. The products never reach memory.

How the gate and up tiles reach the tensor cores decides the speed:

* **One operand, one dot** (the weight in ``nn.Linear``'s layout: ``w_gate_up`` the
  transposed view of a row-major ``(2N, K)`` matrix ``[W_gate; W_up]``, as a fused
  ``gate_up_proj`` stores it). A 3-D tensor descriptor sees that matrix as ``(2, N, K)``
  and one TMA copy brings the gate rows ``n .. n + BLOCK_N`` and the up rows ``N + n ..``
  of a K step into one ``2·BLOCK_N x BLOCK_K`` tile (merging the two leading dimensions
  keeps the rows' layout in shared memory): one ``tl.dot`` per step into one
  ``BLOCK_M x 2·BLOCK_N`` accumulator ``[g | u]``, which the epilogue splits. On an H100 at
  8192 x 14336 x 4096 (bf16) this ran at 735 TFLOP/s, cuBLAS's plain ``x @ w`` at 693.
* **Two dots** (a row-major ``(K, 2N)`` weight, or strides no descriptor can describe):
  per step one tile of ``x`` and two of the weight, at columns ``n`` and ``N + n``, into
  two accumulators. The same merge of ``(K, 2, N)`` boxes would change the inner
  dimension, which Triton 3.6 cannot pipeline (476 TFLOP/s); the two dots reach 575.

The loop is :mod:`~gpuperf.kernels.matmul_persistent`'s (tutorial 06): one program per
SM walks the output tiles in grouped order; on Hopper the tiles arrive through TMA
tensor descriptors (optionally with warp specialization), elsewhere (before compute
capability 9.0, or strides no descriptor can describe) through computed pointers, with
the same epilogue. Two ``BLOCK_M x BLOCK_N`` accumulators cost the registers of one
``BLOCK_M x 2·BLOCK_N`` tile, and a pipeline stage holds one tile of ``x`` and two of the
weight: a 128 x 128 SwiGLU tile is what a 128 x 256 tile is to the plain matmul, the
tile its sweep chose at Llama's MLP shape on both Hopper GPUs. (An ``activation`` of
the matmul's epilogue would not do: that epilogue maps one accumulator onto one output
tile, while SwiGLU combines two, from weight columns N apart, into an output half the
weight's width, which changes the loads, the grid and the store.)

The backward recomputes ``[g | u] = x @ [W_gate | W_up]`` with one matmul (rather than
keeping ``2·M·N`` elements from the forward), takes the elementwise derivatives in
float32 in one small kernel,

    sig = sigmoid(g),  dg = dy · u · sig · (1 + g · (1 - sig)),  du = dy · g · sig,

and multiplies back with gpuperf's matmuls: ``dx = [dg | du] @ [W_gate | W_up]ᵀ`` and
``dW = xᵀ @ [dg | du]``.
"""

from __future__ import annotations

import dataclasses

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

from gpuperf.kernels import _persistent_configs
from gpuperf.kernels._grid import cdiv, next_power_of_2
from gpuperf.kernels._persistent_configs import SHARED_MEMORY_BYTES, PersistentConfig
from gpuperf.kernels._validation import HALF_DTYPES, check_tensors
from gpuperf.kernels.device import capability, has_tma, tuned_folder
from gpuperf.kernels.launch import Launch, Launches, launcher, op
from gpuperf.kernels.matmul_persistent import matmul_persistent
from gpuperf.kernels.tiles import persistent_programs, tile_coords
from gpuperf.kernels.tma import box_offset_aligned, descriptor, tma_layout, tracing

# --- launch configurations, as data --------------------------------------------------------


def _grid(tiles, stages, warps, *, ws=False, tma=True, block_k=64) -> tuple[PersistentConfig, ...]:
    return tuple(
        PersistentConfig(bm, bn, block_k, 8, w, s, tma, ws)
        for (bm, bn) in tiles
        for s in stages
        for w in warps
    )


#: Candidates the sweep (:func:`gpuperf.bench.tuning.tune_persistent`, ``"swiglu"``) times, written to
#: ``kernels/tuned/<gpu>/swiglu.json``: 128-row tiles (Hopper's wgmma covers 64 rows per
#: warpgroup) 128 or 64 columns wide per half, without and with warp specialization, two
#: to four stages; 64-row tiles for decode-sized M; the same tiles through computed pointers.
SWIGLU_CANDIDATES: tuple[PersistentConfig, ...] = (
    _grid(((128, 128),), (3, 4), (8,))
    + _grid(((128, 64),), (3, 4), (4, 8))
    + _grid(((64, 128),), (3, 4), (4,))
    + _grid(((64, 64),), (4,), (4,), block_k=128)
    + _grid(((128, 128),), (2, 3), (8,), ws=True)
    + _grid(((128, 64),), (3, 4), (4, 8), ws=True)
    + _grid(((128, 128),), (3,), (8,), tma=False)
    + _grid(((128, 64),), (3,), (4,), tma=False)
)

#: Without a committed sweep, on Hopper: the tile of the persistent matmul's sweep winner at
#: 8192 x 14336 x 4096 (128 x 256 x 64, 3 stages, 8 warps, no warp specialization) on both
#: GPUs, split into its gate and up halves: 48 KB of shared memory per stage.
SWIGLU_DEFAULT = PersistentConfig(128, 128, 64, num_warps=8, num_stages=3)
#: M up to this many rows takes :data:`SWIGLU_SMALL_M_DEFAULT` (decode: a 128-row tile
#: would be over half padding).
SWIGLU_SMALL_M = 64
#: Decode-sized M: one warpgroup per 64-row tile, a stage deeper (the weight's read is
#: the whole cost: keep more of it in flight).
SWIGLU_SMALL_M_DEFAULT = PersistentConfig(64, 128, 64, num_warps=4, num_stages=4)
#: GPUs without TMA (compute capability below 9.0): computed pointers, 96 KB of pipeline,
#: which fits the shared memory of every GPU since Ampere.
SWIGLU_POINTER_DEFAULT = PersistentConfig(128, 64, 64, num_warps=4, num_stages=3, tma=False)
#: Under Triton's interpreter: small tiles.
SWIGLU_INTERPRETER = PersistentConfig(32, 32, 32, group_m=2, num_warps=4, num_stages=1)

#: The backward's elementwise kernel: columns of each half per program (at most), elements
#: per program, and warps (16 elements of each of dy, g and u per thread).
SWIGLU_BWD_MAX_BLOCK_N = 1024
SWIGLU_BWD_TILE = 2048
SWIGLU_BWD_WARPS = 4


def stage_bytes(config: PersistentConfig, element_size: int = 2) -> int:
    """Shared memory one pipeline stage takes: a ``BLOCK_M x BLOCK_K`` tile of x and two
    ``BLOCK_K x BLOCK_N`` tiles of the weight."""
    return (config.block_m + 2 * config.block_n) * config.block_k * element_size


def candidates(m: int, n: int, k: int) -> list[PersistentConfig]:
    """The candidates of :data:`SWIGLU_CANDIDATES` worth timing for ``x (m, k)`` and an
    ``(k, 2n)`` weight."""
    kept = []
    for c in SWIGLU_CANDIDATES:
        # A tile over twice the matrix computes mostly padding.
        if c.block_m > 2 * max(16, m) or c.block_n > 2 * max(16, n):
            continue
        if stage_bytes(c) * c.num_stages > SHARED_MEMORY_BYTES:
            continue
        # Over 128 float32 accumulators per thread (two tiles of them) spill to local memory.
        if 2 * c.block_m * c.block_n // (32 * c.num_warps) > 128:
            continue
        kept.append(c)
    return kept


# --- kernels -------------------------------------------------------------------------------

#: sigmoid(g) = 1 / (1 + 2^(-g log2 e)), with exp2 the hardware instruction.
LOG2E = tl.constexpr(1.4426950408889634)


@triton.jit
def _store_swiglu(
    acc_g, acc_u, c_ptr, pid_m, pid_n, M, N, stride_cm, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr
):
    """``silu(g) * u`` in float32 on the two tiles in registers, rounded once to C's dtype;
    only the in-bounds part is stored (rows past M; gate columns past N, which read
    up-weights, and the zero-filled up columns past 2N beside them)."""
    out = acc_g * acc_u / (1.0 + tl.exp2(-acc_g * LOG2E))
    offs_cm = pid_m.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :]
    tl.store(c_ptrs, out.to(c_ptr.dtype.element_ty), mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


@triton.jit
def _swiglu_tma_tiles(
    x_desc,
    w_desc,
    c_ptr,
    M,
    N,
    K,
    stride_cm,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    NUM_PROGRAMS: tl.constexpr,
    X_TRANSPOSED: tl.constexpr,
    W_TRANSPOSED: tl.constexpr,
    WARP_SPECIALIZE: tl.constexpr,
):
    """The persistent TMA loop of both TMA kernels. ``x_desc`` describes x (M, K), or xᵀ
    (K, M) when ``X_TRANSPOSED``; ``w_desc`` the weight (K, 2N), or, when ``W_TRANSPOSED``
    (the layout of ``nn.Linear``'s weight), its transpose (2N, K) seen as (2, N, K): then
    the gate and up tiles arrive as one operand of one dot."""
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    num_tiles = num_pid_m * num_pid_n
    # The epilogue keeps its own tile counter (as matmul_persistent's kernel): the
    # pipeliner then need not carry the tile coordinates from the first loads to the store.
    tile_id_c = tl.program_id(0) - NUM_PROGRAMS
    for tile_id in tl.range(
        tl.program_id(0), num_tiles, NUM_PROGRAMS, flatten=True, warp_specialize=WARP_SPECIALIZE
    ):
        pid_m, pid_n = tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M)
        off_m = pid_m * BLOCK_M
        # The gate tile of the last column of tiles runs past N into the up-weights, and
        # the up tile past 2N, where TMA fills zeros: the store drops those columns.
        off_gate = pid_n * BLOCK_N
        off_up = N + off_gate
        if W_TRANSPOSED:
            # [g | u] in one accumulator: the (2, BLOCK_N, BLOCK_K) box of gate rows and up
            # rows is one (2 BLOCK_N, BLOCK_K) tile (rows past N are zero-filled by TMA).
            acc = tl.zeros((BLOCK_M, 2 * BLOCK_N), dtype=tl.float32)
            for ki in range(k_tiles):
                off_k = ki * BLOCK_K
                if X_TRANSPOSED:
                    a = x_desc.load([off_k, off_m]).T
                else:
                    a = x_desc.load([off_m, off_k])
                b = w_desc.load([0, off_gate, off_k]).reshape(2 * BLOCK_N, BLOCK_K).T
                acc = tl.dot(a, b, acc)
            # Columns j and BLOCK_N + j are the gate and the up product of one output column.
            acc_g, acc_u = tl.split(tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N)), (0, 2, 1)))
        else:
            acc_g = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            acc_u = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            for ki in range(k_tiles):
                off_k = ki * BLOCK_K
                if X_TRANSPOSED:
                    a = x_desc.load([off_k, off_m]).T
                else:
                    a = x_desc.load([off_m, off_k])
                b_gate = w_desc.load([off_k, off_gate])
                b_up = w_desc.load([off_k, off_up])
                acc_g = tl.dot(a, b_gate, acc_g)
                acc_u = tl.dot(a, b_up, acc_u)
        tile_id_c += NUM_PROGRAMS
        pid_m, pid_n = tile_coords(tile_id_c, num_pid_m, num_pid_n, GROUP_M)
        _store_swiglu(acc_g, acc_u, c_ptr, pid_m, pid_n, M, N, stride_cm, BLOCK_M, BLOCK_N)


@triton.jit
def _swiglu_tma_kernel(
    x_desc,
    w_desc,
    c_ptr,
    M,
    N,
    K,
    stride_cm,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    NUM_PROGRAMS: tl.constexpr,
    X_TRANSPOSED: tl.constexpr,
    W_TRANSPOSED: tl.constexpr,
    WARP_SPECIALIZE: tl.constexpr,
):
    """Persistent, TMA loads from descriptors made on the host (the eager path)."""
    _swiglu_tma_tiles(
        x_desc, w_desc, c_ptr, M, N, K, stride_cm, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, NUM_PROGRAMS,
        X_TRANSPOSED, W_TRANSPOSED, WARP_SPECIALIZE,
    )  # fmt: skip


@triton.jit
def _swiglu_tma_device_kernel(
    x_ptr,
    w_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_xm,
    stride_xk,
    stride_wk,
    stride_wn,
    stride_cm,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    NUM_PROGRAMS: tl.constexpr,
    X_TRANSPOSED: tl.constexpr,
    W_TRANSPOSED: tl.constexpr,
    WARP_SPECIALIZE: tl.constexpr,
):
    """Persistent, TMA loads from descriptors each program makes on the device (the
    ``torch.library`` op: torch.compile passes tensors to a user kernel, not host
    descriptors). Needs Triton's allocator for the descriptors' global scratch memory."""
    if X_TRANSPOSED:
        x_desc = tl.make_tensor_descriptor(x_ptr, [K, M], [stride_xk, 1], [BLOCK_K, BLOCK_M])
    else:
        x_desc = tl.make_tensor_descriptor(x_ptr, [M, K], [stride_xm, 1], [BLOCK_M, BLOCK_K])
    if W_TRANSPOSED:
        w_desc = tl.make_tensor_descriptor(
            w_ptr, [2, N, K], [N * stride_wn, stride_wn, 1], [2, BLOCK_N, BLOCK_K]
        )
    else:
        w_desc = tl.make_tensor_descriptor(w_ptr, [K, 2 * N], [stride_wk, 1], [BLOCK_K, BLOCK_N])
    _swiglu_tma_tiles(
        x_desc, w_desc, c_ptr, M, N, K, stride_cm, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, NUM_PROGRAMS,
        X_TRANSPOSED, W_TRANSPOSED, WARP_SPECIALIZE,
    )  # fmt: skip


@triton.jit
def _swiglu_pointer_kernel(
    x_ptr,
    w_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_xm,
    stride_xk,
    stride_wk,
    stride_wn,
    stride_cm,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    NUM_PROGRAMS: tl.constexpr,
    EVEN_K: tl.constexpr,
):
    """Persistent, with computed pointers: any strides, no TMA needed."""
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    offs_k = tl.arange(0, BLOCK_K).to(tl.int64)
    for tile_id in tl.range(tl.program_id(0), num_pid_m * num_pid_n, NUM_PROGRAMS, flatten=True):
        pid_m, pid_n = tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M)
        # Rows and columns past the edge wrap around (% M, % N), as in tutorial 03: the
        # loads stay in bounds without a mask (gate columns wrap within the gate half),
        # and the store drops the wrapped results.
        offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
        offs_gn = ((pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N).to(tl.int64)
        x_rows = x_ptr + offs_am[:, None].to(tl.int64) * stride_xm
        gate_cols = w_ptr + offs_gn[None, :] * stride_wn
        up_cols = w_ptr + (offs_gn[None, :] + N) * stride_wn
        acc_g = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        acc_u = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            k = ki * BLOCK_K + offs_k
            if EVEN_K:
                a = tl.load(x_rows + k[None, :] * stride_xk)
                b_gate = tl.load(gate_cols + k[:, None] * stride_wk)
                b_up = tl.load(up_cols + k[:, None] * stride_wk)
            else:
                # Zeros past the end of K add nothing to the products.
                a = tl.load(x_rows + k[None, :] * stride_xk, mask=k[None, :] < K, other=0.0)
                b_gate = tl.load(gate_cols + k[:, None] * stride_wk, mask=k[:, None] < K, other=0.0)
                b_up = tl.load(up_cols + k[:, None] * stride_wk, mask=k[:, None] < K, other=0.0)
            acc_g = tl.dot(a, b_gate, acc_g)
            acc_u = tl.dot(a, b_up, acc_u)
        _store_swiglu(acc_g, acc_u, c_ptr, pid_m, pid_n, M, N, stride_cm, BLOCK_M, BLOCK_N)


@triton.jit
def _swiglu_bwd_kernel(
    dy_ptr,
    gu_ptr,
    d_ptr,
    M,
    N,
    stride_dym,
    stride_dyn,
    stride_gum,
    stride_gun,
    stride_dm,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    """``d[g | u]`` from ``dy`` (M, N) and the recomputed ``[g | u]`` (M, 2N), in float32.
    ``d`` may be ``[g | u]`` itself: each element is read before the same program writes it."""
    # int64: row * stride passes 2**31 past 2 G elements, and so may a column of a transposed dy.
    rows = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1).to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    dy = tl.load(dy_ptr + rows[:, None] * stride_dym + cols[None, :] * stride_dyn, mask=mask, other=0.0)
    gu_rows = gu_ptr + rows[:, None] * stride_gum
    g = tl.load(gu_rows + cols[None, :] * stride_gun, mask=mask, other=0.0).to(tl.float32)
    u = tl.load(gu_rows + (cols[None, :] + N) * stride_gun, mask=mask, other=0.0).to(tl.float32)
    dy = dy.to(tl.float32)
    sig = 1.0 / (1.0 + tl.exp2(-g * LOG2E))
    dg = dy * u * sig * (1.0 + g * (1.0 - sig))
    du = dy * g * sig
    d_rows = d_ptr + rows[:, None] * stride_dm
    tl.store(d_rows + cols[None, :], dg.to(d_ptr.dtype.element_ty), mask=mask)
    tl.store(d_rows + (cols[None, :] + N), du.to(d_ptr.dtype.element_ty), mask=mask)


# --- configuration choice ------------------------------------------------------------------


def _config_for(device_index: int, m: int, n: int, k: int) -> PersistentConfig:
    slug = tuned_folder(device_index)
    if slug is None:  # the interpreter
        return SWIGLU_INTERPRETER
    tma = capability(device_index)[0] >= 9
    tuned = _persistent_configs.tuned_config("swiglu", slug, m, n, k, "best" if tma else "pointer")
    if tuned is not None:
        return tuned
    if not tma:
        return SWIGLU_POINTER_DEFAULT
    return SWIGLU_SMALL_M_DEFAULT if m <= SWIGLU_SMALL_M else SWIGLU_DEFAULT


def swiglu_config(x: torch.Tensor, w_gate_up: torch.Tensor) -> PersistentConfig:
    """The launch config :func:`swiglu` chooses for ``x`` and ``w_gate_up`` on their GPU:
    the committed sweep's fastest (``kernels/tuned/<gpu>/swiglu.json``, nearest shape) if
    there is one, else :data:`SWIGLU_DEFAULT` (:data:`SWIGLU_SMALL_M_DEFAULT` for M up to
    :data:`SWIGLU_SMALL_M`), or :data:`SWIGLU_POINTER_DEFAULT` on a GPU without TMA. See
    :func:`launch_config` for what is launched."""
    return _config_for(x.get_device(), x.shape[0], w_gate_up.shape[1] // 2, x.shape[1])


def tma_loads(x, w_gate_up, x_layout: str | None, w_layout: str | None) -> bool:
    """Whether TMA can load both operands of :func:`swiglu`, whose layouts (as
    :func:`~gpuperf.kernels.tma.tma_layout` gives them) are ``x_layout`` and ``w_layout``:
    the GPU has TMA, a descriptor describes each operand, and for a row-major weight the
    up half's boxes, ``N`` columns in, start 16-byte aligned (``N * element size`` a
    multiple of 16: :func:`~gpuperf.kernels.tma.box_offset_aligned`; a misaligned box is an
    illegal instruction on the GPU)."""
    if not has_tma(x) or x_layout is None or w_layout is None:
        return False
    n = w_gate_up.shape[1] // 2
    return w_layout != "row" or box_offset_aligned(n, w_gate_up.element_size())


def launch_config(
    x: torch.Tensor, w_gate_up: torch.Tensor, config: PersistentConfig | None = None
) -> PersistentConfig:
    """The config :func:`swiglu` launches: ``config`` (by default :func:`swiglu_config`),
    turned into computed pointers (``tma=False``, no warp specialization, the same tiles)
    where TMA cannot load (:func:`tma_loads`): a GPU without it, an operand no tensor
    descriptor describes, or a row-major weight whose up half starts off a 16-byte boundary."""
    chosen = config or swiglu_config(x, w_gate_up)
    if chosen.tma and not tma_loads(x, w_gate_up, tma_layout(x), tma_layout(w_gate_up)):
        return dataclasses.replace(chosen, tma=False, warp_specialize=False)
    return chosen


def forget_tuned_configs() -> None:
    """Drop the cached sweeps and plans: the next call reads ``kernels/tuned`` again."""
    _persistent_configs.forget_tuned()
    swiglu.plans.clear()


def _fields(c: PersistentConfig) -> tuple:
    return (c.block_m, c.block_n, c.block_k, c.group_m, c.num_warps, c.num_stages, c.tma, c.warp_specialize)


# --- launches ------------------------------------------------------------------------------


def _weight_descriptor(w_gate_up: torch.Tensor, layout: str, block_k: int, block_n: int):
    """The weight's descriptor: boxes of (BLOCK_K, BLOCK_N) of the row-major (K, 2N) matrix,
    or, for ``nn.Linear``'s layout (``layout == "col"``), boxes of (2, BLOCK_N, BLOCK_K) of
    its transpose (2N, K) seen as (2, N, K): gate rows and the up rows N below them."""
    if layout == "row":
        return descriptor(w_gate_up, layout, block_k, block_n)
    n, row = w_gate_up.shape[1] // 2, w_gate_up.stride(1)
    shape = [2, n, w_gate_up.shape[0]]
    return TensorDescriptor(w_gate_up.t(), shape, [n * row, row, 1], [2, block_n, block_k])


def _scratch(size: int, alignment: int, stream):
    return torch.empty(size, dtype=torch.int8, device="cuda")


def _ensure_allocator() -> None:
    """Give Triton an allocator for the device-made descriptors' scratch memory (from
    PyTorch's caching allocator, as Inductor's launcher does), unless one is set."""
    from triton.runtime import _allocation

    if isinstance(_allocation._allocator.get(), _allocation.NullAllocator):
        triton.set_allocator(_scratch)


def _forward_launch(out, x, w_gate_up, config: PersistentConfig | None) -> Launch:
    """The launch of ``out = silu(x @ W_gate) * (x @ W_up)`` (K > 0), with ``config`` (by
    default :func:`swiglu_config`) made by :func:`launch_config`.

    Eagerly: TMA from host tensor descriptors where it can load, else computed pointers.
    While torch.compile traces (:func:`~gpuperf.kernels.tma.tracing`: fake tensors, which
    have no address; a graph cannot hold a host descriptor): TMA from descriptors the kernel
    makes on the device, from scratch memory Triton's allocator gives, else computed
    pointers."""
    m, k = x.shape
    n = out.shape[1]
    # (tma_layout reads a trace's tensors too: their alignment from the storage offset.)
    config = launch_config(x, w_gate_up, config)
    if config.tma:
        x_layout, w_layout = tma_layout(x), tma_layout(w_gate_up)
    programs = persistent_programs(x.get_device(), cdiv(m, config.block_m) * cdiv(n, config.block_n))
    common = (config.block_m, config.block_n, config.block_k, config.group_m, programs)
    if not config.tma:
        runtime = (x, w_gate_up, out, m, n, k, *x.stride(), *w_gate_up.stride(), out.stride(0))
        constexprs = (*common, k % config.block_k == 0)
        return Launch(
            _swiglu_pointer_kernel, (programs,), runtime, constexprs, config.num_warps, config.num_stages
        )
    constexprs = (*common, x_layout == "col", w_layout == "col", config.warp_specialize)
    if tracing(x, w_gate_up):
        if x.is_cuda:
            _ensure_allocator()
        runtime = (x, w_gate_up, out, m, n, k, *x.stride(), *w_gate_up.stride(), out.stride(0))
        kernel = _swiglu_tma_device_kernel
    else:
        x_desc = descriptor(x, x_layout, config.block_m, config.block_k)
        w_desc = _weight_descriptor(w_gate_up, w_layout, config.block_k, config.block_n)
        runtime = (x_desc, w_desc, out, m, n, k, out.stride(0))
        kernel = _swiglu_tma_kernel
    return Launch(kernel, (programs,), runtime, constexprs, config.num_warps, config.num_stages)


def _elementwise_launch(d, grad_out, gate_up) -> Launch:
    """The launch of ``d = d[g | u]`` (``d`` may be ``gate_up`` itself) from ``grad_out``
    ``(M, N)`` and ``gate_up`` ``(M, 2N)``."""
    m, n2 = gate_up.shape
    n = n2 // 2
    block_n = min(SWIGLU_BWD_MAX_BLOCK_N, next_power_of_2(n))
    block_m = max(1, SWIGLU_BWD_TILE // block_n)
    runtime = (grad_out, gate_up, d, m, n, *grad_out.stride(), *gate_up.stride(), d.stride(0))
    return Launch(
        _swiglu_bwd_kernel,
        (cdiv(m, block_m), cdiv(n, block_n)),
        runtime,
        (block_m, block_n),
        SWIGLU_BWD_WARPS,
    )


@op("gpuperf::swiglu_backward", tensors=2)
def swiglu_elementwise_backward(
    grad_out: torch.Tensor, gate_up: torch.Tensor
) -> tuple[torch.Tensor, Launches]:
    """``d[g | u]`` ``(M, 2N)`` in ``gate_up``'s dtype, from the gradient ``grad_out`` ``(M, N)``
    of :func:`swiglu`'s output (any strides) and the recomputed products ``gate_up = [g | u]``:
    ``sig = sigmoid(g)``, ``dg = dy · u · sig · (1 + g · (1 - sig))``, ``du = dy · g · sig``,
    in float32, rounded once. One launch; none for an empty ``gate_up``. Called by the
    backward, it checks nothing."""
    d = torch.empty(gate_up.shape, dtype=gate_up.dtype, device=gate_up.device)
    if d.numel() == 0:
        return d, ()
    return d, (_elementwise_launch(d, grad_out, gate_up),)


def _matmul(a, b):
    """``a @ b`` for the backward: the persistent TMA matmul where it can load the operands,
    tutorial 03's kernel elsewhere (and while torch.compile traces, where a graph holds no
    host descriptor)."""
    from gpuperf.kernels.matmul import matmul

    if tracing(a, b):
        return matmul(a, b)
    if has_tma(a) and tma_layout(a) is not None and tma_layout(b) is not None:
        return matmul_persistent(a, b)
    return matmul(a, b)


def swiglu_backward(
    grad_out: torch.Tensor, x: torch.Tensor, w_gate_up: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(dx, dw_gate_up)`` of :func:`swiglu` from the gradient ``grad_out`` of its output and
    its inputs (all the forward saves): ``[g | u] = x @ w_gate_up`` recomputed with one
    matmul, ``d[g | u]`` by one elementwise kernel, then ``dx = d[g | u] @ w_gate_upᵀ`` and
    ``dw = xᵀ @ d[g | u]``. Eagerly the elementwise kernel writes ``d[g | u]`` in place of
    ``[g | u]`` (one ``(M, 2N)`` buffer); while torch.compile traces it is the op
    ``torch.ops.gpuperf.swiglu_backward`` (:func:`swiglu_elementwise_backward`), a new
    buffer, since a graph's ops do not write their inputs."""
    gate_up = _matmul(x, w_gate_up)
    if tracing(grad_out, gate_up):
        d = swiglu_elementwise_backward(grad_out, gate_up)
    else:
        d = gate_up
        if d.numel():
            step = _elementwise_launch(d, grad_out, gate_up)
            launcher(step.kernel)(step.grid, step.args, step.constexprs, num_warps=step.num_warps)
    return _matmul(d, w_gate_up.t()), _matmul(x.t(), d)


# --- the public op -------------------------------------------------------------------------


def _check(x, w_gate_up, config) -> tuple[int, int, int]:
    """Every check of :func:`swiglu`'s arguments; returns ``(M, N, K)``."""
    check_tensors(("x", "w_gate_up"), (x, w_gate_up), HALF_DTYPES)
    if config is not None and not isinstance(config, PersistentConfig):
        raise TypeError(f"config must be a gpuperf.kernels.PersistentConfig, got {type(config).__name__}")
    if x.dim() != 2 or w_gate_up.dim() != 2:
        raise ValueError(
            f"x and w_gate_up must be 2-D, got x {tuple(x.shape)} and w_gate_up {tuple(w_gate_up.shape)}"
        )
    m, k = x.shape
    k_w, n2 = w_gate_up.shape
    if k != k_w:
        raise ValueError(
            f"x's columns must match w_gate_up's rows (K): x is {tuple(x.shape)} and w_gate_up is "
            f"{tuple(w_gate_up.shape)} ({k} != {k_w})"
        )
    if n2 % 2:
        raise ValueError(
            f"w_gate_up must have an even number of columns, [W_gate | W_up] with N each, got {n2}"
        )
    return m, n2 // 2, k


@op(
    "gpuperf::swiglu",
    tensors=("x", "w_gate_up"),
    backward=swiglu_backward,
    saves=lambda x, w_gate_up, *config_and_out: (x, w_gate_up),
)
def swiglu(
    x: torch.Tensor, w_gate_up: torch.Tensor, *, config: PersistentConfig | None = None
) -> tuple[torch.Tensor, Launches]:
    """Return ``silu(x @ W_gate) * (x @ W_up)`` for ``w_gate_up = [W_gate | W_up]``, in one
    persistent Triton kernel with the gating in its epilogue.

    Args:
        x: ``(M, K)``, float16 or bfloat16, on a CUDA device (or on the CPU when
            ``TRITON_INTERPRET=1``); any strides. Row-major and column-major ``x`` (a
            transposed view) are read in place through TMA on Hopper when 16-byte
            aligned with the other stride a multiple of 16 bytes; other strides, and
            GPUs before compute capability 9.0, take the computed-pointer kernel.
        w_gate_up: ``(K, 2N)``, the gate projection's ``N`` columns first, then the up
            projection's; the dtype and device of ``x``; any strides, the same layout
            rules (row-major, or column-major as ``torch.cat([w_gate, w_up]).t()`` of
            ``nn.Linear`` weights). A row-major weight is read through TMA only when the
            up half starts on a 16-byte boundary (``N`` a multiple of 8 in float16 or
            bfloat16); otherwise, and for any layout TMA cannot describe, the
            computed-pointer kernel reads it (:func:`tma_loads`).
        config: the launch configuration (:class:`~gpuperf.kernels.PersistentConfig`:
            tiles of the ``(M, N)`` output, group, warps, stages, TMA, warp
            specialization); by default :func:`swiglu_config`. A TMA config falls back to
            computed pointers with the same tiles where TMA cannot load
            (:func:`launch_config`).

    Returns:
        A new contiguous ``(M, N)`` tensor of ``x``'s dtype. Both products are
        accumulated in float32, and ``silu(g) * u`` is computed in float32 on the tiles
        in registers and rounded once. Hugging Face's eager ``LlamaMLP``
        (:func:`gpuperf.reference.swiglu_eager`) rounds ``g`` and ``u`` to the dtype
        first, and ``silu(g)`` too: the two differ by about an ulp. ``K = 0`` gives
        zeros; ``M = 0`` or ``N = 0`` an empty tensor; neither launches a kernel.
        Differentiable with respect to ``x`` and ``w_gate_up``: the backward recomputes
        ``[g | u]`` with one matmul (the forward keeps nothing but its inputs), computes
        ``d[g | u]`` in float32 in one elementwise kernel (rounded to the dtype, in
        place of ``[g | u]``), and multiplies back with
        :func:`~gpuperf.kernels.matmul_persistent` (or
        :func:`~gpuperf.kernels.matmul` where TMA cannot load); gradients come out
        in the inputs' dtype.

    Raises:
        TypeError: ``x`` or ``w_gate_up`` is not a tensor, a dtype is not float16 or
            bfloat16, the dtypes differ, or ``config`` is not a
            :class:`~gpuperf.kernels.PersistentConfig`.
        ValueError: ``x`` or ``w_gate_up`` is not 2-D, ``x``'s columns differ from
            ``w_gate_up``'s rows, ``w_gate_up`` has an odd number of columns, or the
            tensors are on different devices (or on the CPU while the interpreter is
            off).

    Registered as ``torch.ops.gpuperf.swiglu`` (through :func:`~gpuperf.kernels.launch.op`,
    taking the config's fields; inside torch.compile this function calls it, with TMA
    descriptors made on the device) with its backward, :func:`swiglu_backward`, registered
    with ``torch.library.register_autograd``: the matmuls and the elementwise step
    ``torch.ops.gpuperf.swiglu_backward`` (:func:`swiglu_elementwise_backward`). Called
    eagerly without a gradient to record, a call whose inputs are like ones already
    checked (shapes, strides, dtypes, device, 16-byte alignment, ``config``) launches from
    their plan (:mod:`gpuperf.kernels.launch`), its descriptors made again on the new
    addresses.

    FLOPs ``2 * M * 2N * K`` (and a few per output element in the epilogue). Memory
    traffic at least ``(M * K + K * 2N + M * N) * element_size``: ``x`` and the weight
    read once, the output written once; the products stay on chip.
    Algorithm: Shazeer, "GLU Variants Improve Transformer", arXiv:2002.05202 (SwiGLU);
    the persistent TMA matmul of Triton's tutorial 09.
    """
    m, n, k = _check(x, w_gate_up, config)
    if m == 0 or n == 0:
        return x.new_empty((m, n)), ()
    if k == 0:  # g = u = 0, and silu(0) * 0 = 0
        return x.new_zeros((m, n)), ()
    out = x.new_empty((m, n))
    return out, (_forward_launch(out, x, w_gate_up, config),)


__all__ = [
    "launch_config",
    "swiglu",
    "swiglu_backward",
    "swiglu_config",
    "swiglu_elementwise_backward",
    "tma_loads",
]
