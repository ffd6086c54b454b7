"""Persistent matmul: one program per SM walks the output tiles, loading through TMA on Hopper.

Tutorial 03's kernel launches one program per output tile; a 8192² output in
128x256 tiles is 2048 programs on 132 SMs, about 15.5 waves, and each program
pays its start-up (address arithmetic, filling the pipeline) and leaves its SM
idle while its epilogue stores. Here the grid has one program per SM: each loops
over the tiles ``pid, pid + P, pid + 2P, ...`` (``P`` programs) in grouped order,
and Triton's pipeliner flattens the two loops, so the next tile's first loads are
in flight while this tile's last products and its epilogue run.

On Hopper (compute capability 9.0) the tiles of A and B are loaded through tensor
descriptors: the copy engine (TMA) moves a whole ``BLOCK_M x BLOCK_K`` box from
global to shared memory from one instruction, computing addresses and zero-filling
what lies past the edges itself, so the warps issue no address arithmetic and no
masks. A descriptor needs a 16-byte aligned base, a unit stride in its last
dimension and 16-byte multiples for the other strides. With warp specialization
(``tl.range(..., warp_specialize=True)``) the compiler gives the loads to a
producer warp and the products and epilogue to consumer warpgroups.

The same kernels serve :func:`gpuperf.kernels.matmul_fp8`: an epilogue multiplies
by per-tensor or per-row/column scales before the single rounding.

Sources: Triton's persistent-matmul tutorial
(https://triton-lang.org/main/getting-started/tutorials/09-persistent-matmul.html);
NVIDIA, "CUDA C++ Programming Guide", Tensor Memory Accelerator; the CUTLASS 3
Hopper persistent GEMM (warp-specialized producer/consumer).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from gpuperf.kernels import _persistent_configs
from gpuperf.kernels._grid import cdiv
from gpuperf.kernels._matmul_checks import check_matmul_shapes
from gpuperf.kernels._persistent_configs import PersistentConfig
from gpuperf.kernels._validation import HALF_DTYPES, check_tensors
from gpuperf.kernels.device import require_tma, tuned_folder
from gpuperf.kernels.launch import Launch, Launches, op
from gpuperf.kernels.tiles import persistent_programs, tile_coords
from gpuperf.kernels.tma import check_tma_operands, descriptor, tma_layout, tracing

#: Scale kinds of the epilogue (a constexpr): none, one per tensor, one per row of
#: A (``scale_a``) or per column of B (``scale_b``).
SCALE_NONE, SCALE_TENSOR, SCALE_VECTOR = 0, 1, 2


@triton.jit
def _store_tile(
    acc,
    c_ptr,
    scale_a_ptr,
    scale_b_ptr,
    pid_m,
    pid_n,
    M,
    N,
    stride_cm,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    SCALE_A: tl.constexpr,
    SCALE_B: tl.constexpr,
):
    """Scale the float32 tile (FP8), round it once to C's dtype and store its in-bounds part."""
    offs_cm = pid_m.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    if SCALE_A == 1:
        acc = acc * tl.load(scale_a_ptr)
    elif SCALE_A == 2:
        acc = acc * tl.load(scale_a_ptr + offs_cm, mask=offs_cm < M, other=0.0)[:, None]
    if SCALE_B == 1:
        acc = acc * tl.load(scale_b_ptr)
    elif SCALE_B == 2:
        acc = acc * tl.load(scale_b_ptr + offs_cn, mask=offs_cn < N, other=0.0)[None, :]
    c_ptrs = c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :]
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


@triton.jit
def _matmul_persistent_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    scale_a_ptr,
    scale_b_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    NUM_PROGRAMS: tl.constexpr,
    EVEN_K: tl.constexpr,
    SCALE_A: tl.constexpr,
    SCALE_B: tl.constexpr,
    MAX_IMPRECISE_ACC: tl.constexpr,
):
    """Persistent, with computed pointers (tutorial 03's loads): any strides, no TMA needed."""
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    offs_k = tl.arange(0, BLOCK_K).to(tl.int64)
    for tile_id in tl.range(tl.program_id(0), num_pid_m * num_pid_n, NUM_PROGRAMS, flatten=True):
        pid_m, pid_n = tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M)
        # Rows and columns past the edge wrap around (% M, % N), as in tutorial 03:
        # loads stay in bounds without a mask, and the store drops the wrapped results.
        offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
        offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
        a_rows = a_ptr + offs_am[:, None].to(tl.int64) * stride_am
        b_cols = b_ptr + offs_bn[None, :].to(tl.int64) * stride_bn
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            k = ki * BLOCK_K + offs_k
            if EVEN_K:
                a = tl.load(a_rows + k[None, :] * stride_ak)
                b = tl.load(b_cols + k[:, None] * stride_bk)
            else:
                a = tl.load(a_rows + k[None, :] * stride_ak, mask=k[None, :] < K, other=0.0)
                b = tl.load(b_cols + k[:, None] * stride_bk, mask=k[:, None] < K, other=0.0)
            acc = tl.dot(a, b, acc, max_num_imprecise_acc=MAX_IMPRECISE_ACC)
        _store_tile(
            acc, c_ptr, scale_a_ptr, scale_b_ptr, pid_m, pid_n, M, N, stride_cm,
            BLOCK_M, BLOCK_N, SCALE_A, SCALE_B,
        )  # fmt: skip


@triton.jit
def _matmul_tma_persistent_kernel(
    a_desc,
    b_desc,
    c_ptr,
    scale_a_ptr,
    scale_b_ptr,
    M,
    N,
    K,
    stride_cm,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    NUM_PROGRAMS: tl.constexpr,
    A_TRANSPOSED: tl.constexpr,
    B_TRANSPOSED: tl.constexpr,
    SCALE_A: tl.constexpr,
    SCALE_B: tl.constexpr,
    MAX_IMPRECISE_ACC: tl.constexpr,
    WARP_SPECIALIZE: tl.constexpr,
):
    """Persistent, with TMA loads. ``a_desc`` describes A (M, K), or Aᵀ (K, M) when
    ``A_TRANSPOSED`` (A column-major); ``b_desc`` describes B (K, N), or Bᵀ (N, K) when
    ``B_TRANSPOSED`` (B column-major, the layout FP8 tensor cores read fastest).
    ``MAX_IMPRECISE_ACC`` (FP8 on Hopper): None lets the tensor cores accumulate in
    their fast, reduced-precision mode; ``n`` promotes the partial sums to float32
    every ``n`` products along K."""
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    num_tiles = num_pid_m * num_pid_n
    # The epilogue keeps its own tile counter: the pipeliner then need not carry the
    # loop's tile coordinates from the first loads to the last store.
    tile_id_c = tl.program_id(0) - NUM_PROGRAMS
    for tile_id in tl.range(
        tl.program_id(0), num_tiles, NUM_PROGRAMS, flatten=True, warp_specialize=WARP_SPECIALIZE
    ):
        pid_m, pid_n = tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            # Boxes past the edges of A and B arrive zero-filled: no masks.
            off_k = ki * BLOCK_K
            if A_TRANSPOSED:
                a = a_desc.load([off_k, off_m]).T
            else:
                a = a_desc.load([off_m, off_k])
            if B_TRANSPOSED:
                b = b_desc.load([off_n, off_k]).T
            else:
                b = b_desc.load([off_k, off_n])
            acc = tl.dot(a, b, acc, max_num_imprecise_acc=MAX_IMPRECISE_ACC)
        tile_id_c += NUM_PROGRAMS
        pid_m, pid_n = tile_coords(tile_id_c, num_pid_m, num_pid_n, GROUP_M)
        _store_tile(
            acc, c_ptr, scale_a_ptr, scale_b_ptr, pid_m, pid_n, M, N, stride_cm,
            BLOCK_M, BLOCK_N, SCALE_A, SCALE_B,
        )  # fmt: skip


def _scale_kind(scale: torch.Tensor | None) -> int:
    if scale is None:
        return SCALE_NONE
    return SCALE_TENSOR if scale.numel() == 1 else SCALE_VECTOR


def persistent_launch(
    c, a, b, config: PersistentConfig, scale_a=None, scale_b=None, fast_accum: bool = True
) -> Launch:
    """The launch of ``c = (a @ b) * scale_a * scale_b`` by the persistent kernel ``config`` names.

    No checks: the public ops validate. ``fast_accum=False`` promotes FP8 partial sums to
    float32 once per step along K on Hopper (slower, as precise as cuBLASLt's default).
    ``a`` (M, K), ``b`` (K, N) with K > 0, ``c`` (M, N) row-major; ``scale_a`` None, a
    one-element or an (M,) float32 tensor, ``scale_b`` likewise with (N,). With
    ``config.tma`` both operands must be describable (:func:`gpuperf.kernels.tma.tma_layout`),
    and the launch takes their descriptors; while torch.compile traces, where a graph cannot
    hold a host descriptor, it is the computed-pointer kernel with ``config``'s tiles.
    """
    m, k = a.shape
    n = b.shape[1]
    programs = persistent_programs(a.get_device(), cdiv(m, config.block_m) * cdiv(n, config.block_n))
    scales = (c if scale_a is None else scale_a, c if scale_b is None else scale_b)
    common = (config.block_m, config.block_n, config.block_k, config.group_m, programs)
    kinds = (_scale_kind(scale_a), _scale_kind(scale_b))
    # FP8 on Hopper: None lets the tensor cores keep their reduced-precision accumulator
    # across the whole K loop; BLOCK_K promotes the partial sums to float32 once per step
    # along K (every 128 or 256 products), as cuBLASLt does without fast accumulation.
    imprecise = None if fast_accum else config.block_k
    if config.tma and not tracing(a, b):
        a_layout, b_layout = tma_layout(a), tma_layout(b)
        a_desc = descriptor(a, a_layout, config.block_m, config.block_k)
        b_desc = descriptor(b, b_layout, config.block_k, config.block_n)
        return Launch(
            _matmul_tma_persistent_kernel,
            (programs,),
            (a_desc, b_desc, c, *scales, m, n, k, c.stride(0)),
            (*common, a_layout == "col", b_layout == "col", *kinds, imprecise, config.warp_specialize),
            config.num_warps,
            config.num_stages,
        )
    return Launch(
        _matmul_persistent_kernel,
        (programs,),
        (a, b, c, *scales, m, n, k, *a.stride(), *b.stride(), c.stride(0)),
        (*common, k % config.block_k == 0, *kinds, imprecise),
        config.num_warps,
        config.num_stages,
    )


def persistent_config(a: torch.Tensor, b: torch.Tensor, which: str = "best") -> PersistentConfig:
    """The launch config :func:`matmul_persistent` picks for ``a @ b`` (from the committed
    sweep); ``which`` names a rung of tutorial 06's ladder (``"pointer"``, ``"tma"``,
    ``"tma_ws"``) to get that variant's fastest config instead."""
    slug = tuned_folder(a.get_device())
    tuned = _persistent_configs.tuned_config(
        "matmul_persistent", slug, a.shape[0], b.shape[1], a.shape[1], which
    )
    return tuned or _persistent_configs.PERSISTENT_DEFAULT


def forget_tuned_configs() -> None:
    """Drop the cached sweeps and plans: the next call reads ``kernels/tuned`` again."""
    _persistent_configs.forget_tuned()
    matmul_persistent.plans.clear()


@op("gpuperf::matmul_persistent", tensors=("a", "b"))
def matmul_persistent(
    a: torch.Tensor, b: torch.Tensor, *, config: PersistentConfig | None = None
) -> tuple[torch.Tensor, Launches]:
    """Return ``a @ b``, computed by a persistent Triton kernel that loads through TMA.

    One program per SM walks the output tiles in grouped order; on Hopper the tiles
    of ``a`` and ``b`` arrive through tensor descriptors (TMA), optionally with warp
    specialization, as ``config`` says.

    Args:
        a: ``(M, K)``, float16 or bfloat16, on a CUDA device of compute capability
            9.0 or newer (or on the CPU when ``TRITON_INTERPRET=1``); row-major or
            column-major (a transposed view is read in place), 16-byte aligned, its
            leading stride a multiple of 16 bytes (8 elements).
        b: ``(K, N)``, the same dtype and device, under the same layout rules.
        config: the launch configuration (tiles, group, warps, stages, TMA, warp
            specialization); by default the one the committed tuning sweep chose for
            the nearest benchmarked shape on this GPU (:func:`persistent_config`).
            With ``config.tma=False`` the kernel loads through computed pointers and
            the layout rules do not apply.

    Returns:
        A new contiguous ``(M, N)`` tensor of ``a``'s dtype, accumulated in float32
        and rounded once. ``K = 0`` gives zeros, ``M = 0`` or ``N = 0`` an empty
        tensor, without a launch.

    Raises:
        TypeError: ``a`` or ``b`` is not a tensor, a dtype is not float16 or
            bfloat16, the dtypes differ, or ``config`` is not a
            :class:`~gpuperf.kernels.PersistentConfig`.
        ValueError: ``a`` or ``b`` is not 2-D, the inner dimensions differ, the
            tensors are on different devices (or on the CPU while the interpreter
            is off), or TMA cannot describe an operand (alignment, strides).
        RuntimeError: the GPU has no TMA (compute capability below 9.0); use
            :func:`gpuperf.kernels.matmul` there.

    Registered as ``torch.ops.gpuperf.matmul_persistent`` (``torch.library.triton_op``,
    taking the config's fields): inside ``torch.compile`` this function calls it, and the
    graph holds the computed-pointer kernel (a graph cannot hold a host TMA descriptor), with
    the sweep's fastest pointer config by default, ``config``'s tiles otherwise; the checks
    are the same. Called eagerly, a call whose inputs are like ones already checked (shapes,
    strides, dtypes, device, 16-byte alignment, ``config``) launches from their plan
    (:mod:`gpuperf.kernels.launch`), which describes the new operands again.

    Algorithm: persistent tiled matmul (Triton's tutorial 09); FLOPs ``2 * M * N * K``.
    """
    check_tensors(("a", "b"), (a, b), HALF_DTYPES)
    if config is not None and not isinstance(config, PersistentConfig):
        raise TypeError(f"config must be a gpuperf.kernels.PersistentConfig, got {type(config).__name__}")
    check_matmul_shapes(a, b)
    chosen = config or persistent_config(a, b)
    if chosen.tma:
        require_tma("matmul_persistent", a)
    m, k = a.shape
    n = b.shape[1]
    if k == 0 or m == 0 or n == 0:
        return a.new_zeros((m, n)), ()
    if chosen.tma:
        check_tma_operands(("a", "b"), (a, b))
    if config is None and tracing(a, b):
        chosen = persistent_config(a, b, "pointer")  # what a graph can launch, tuned
    c = a.new_empty((m, n))
    return c, (persistent_launch(c, a, b, chosen),)


__all__ = [
    "PersistentConfig",
    "check_matmul_shapes",
    "matmul_persistent",
    "persistent_config",
    "persistent_launch",
]
