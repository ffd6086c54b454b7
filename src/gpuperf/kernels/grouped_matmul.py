"""Grouped matmul: one matmul per expert, over the rows routed to it, in one persistent launch.

A Mixture-of-Experts layer sends each token to a few of ``E`` experts. With the token rows
sorted by expert into ``a`` (``M_total x K``), expert ``e`` owns the rows
``offs[e-1] .. offs[e]`` (``offs[-1]`` read as 0) and multiplies them by its own weight
``b[e]`` (``K x N``). A loop over experts launches ``E`` matmuls and the host pays a launch
per expert; with many experts (Qwen3-30B-A3B's 128, DeepSeek-V3's 256) each is too small
to fill the GPU. Here one launch does them all:

* **The work list.** Each expert's output is cut into tiles of ``BLOCK_M x BLOCK_N``; the
  tiles of all experts are numbered in one flat list, expert by expert (within an expert in
  grouped order, :func:`~gpuperf.kernels.tiles.tile_coords`).
* **A persistent grid.** About one program per SM (:func:`grid_size`); program ``p`` of
  ``P`` computes tiles ``p, p + P, p + 2P, ...`` of the list. An expert with many rows has
  many tiles and an expert with none has none, so uneven groups spread over all SMs
  instead of leaving the SMs of small experts idle while a large one finishes.
* **The schedule on the device.** Where the tiles lie depends on ``offs``, which lives on
  the GPU. Each program reads the ``E`` offsets itself (the pointer kernel one by one as it
  walks the experts, the TMA kernel once, as a vector; from L2 after the first program) and
  finds each expert's tiles from them, so the list is never written down: no host
  synchronization to read ``offs`` (``.item()`` or ``.tolist()`` would wait for the GPU,
  every call), and no second kernel writing a schedule into a workspace. The
  grid size needs no offsets either: it is bounded by the tiles there can be,
  ``(ceil(M_total / BLOCK_M) + E) * ceil(N / BLOCK_N)``.

Two kernels run this schedule:

* **Computed pointers** (:func:`_grouped_matmul_kernel`): tiles loaded through pointers
  with masks; runs on any GPU with tensor cores and in Triton's interpreter, and takes
  ``a`` and ``b`` with any strides. Each program walks the offsets expert by expert, a tile
  loop nested in an expert loop.
* **TMA** (:func:`_grouped_matmul_tma_kernel`, Hopper, where tensor descriptors can describe
  the operands: :func:`tma_operands`). The tiles arrive through descriptors the kernel makes
  on the device: one over ``a`` (a tile that runs past its expert's last row reads the next
  expert's rows, harmless since those output rows are not stored) and one over the weights
  as a 3-D ``(E, K, N)`` tensor (or ``(E, N, K)``, for weights stored as ``nn.Linear``
  keeps them), whose boxes never cross into the next expert. The schedule is one flat loop
  over the tiles of all experts: each program loads the offsets once as a vector of
  ``E`` lanes (the next power of two), and the expert that owns a tile is found by
  reductions over those lanes (the experts whose tiles end at or before it come first), no
  loop and no branch. Triton's pipeliner then flattens the loop over tiles with the K loop,
  so the next tile's first loads run under this tile's last products and its store (a loop
  per expert around the tile loop keeps it from doing so). The output is stored with a
  mask (a TMA store of a tile would write the next expert's rows).

The backward's weight gradient, ``db[e] = a[rows of e]ᵀ @ grad_out[rows of e]``, is a third
kernel (:func:`_grouped_matmul_wgrad_kernel`, :func:`grouped_matmul_wgrad`): not this
schedule but a program per (K tile, N tile, expert), each summing its expert's rows.

Semantics: ``torch.nn.functional.grouped_mm(a, b, offs=offs)`` for a 2-D ``a`` and a 3-D
``b``. Source of the persistent grouped schedule: Triton's grouped GEMM tutorial
(https://triton-lang.org/main/getting-started/tutorials/08-grouped-gemm.html).
"""

from __future__ import annotations

import types

import torch
import triton
import triton.language as tl
from torch._subclasses.fake_tensor import is_fake

from gpuperf.kernels import _moe_configs
from gpuperf.kernels._configs import MatmulConfig
from gpuperf.kernels._grid import cdiv, next_power_of_2
from gpuperf.kernels._persistent_configs import PersistentConfig
from gpuperf.kernels._validation import HALF_DTYPES, check_tensors, dtype_names
from gpuperf.kernels.device import has_tma, num_sms, require_tma
from gpuperf.kernels.launch import Launch, Launches, op
from gpuperf.kernels.tiles import tile_coords
from gpuperf.kernels.tma import tma_ready

#: A config of :func:`grouped_matmul_launches`: a :class:`~gpuperf.kernels.MatmulConfig`
#: (the computed-pointer kernel), or a :class:`~gpuperf.kernels.PersistentConfig`, whose
#: ``tma`` picks the TMA kernel.
GroupedConfig = MatmulConfig | PersistentConfig


@triton.jit
def _grouped_matmul_kernel(
    a_ptr,
    b_ptr,
    offs_ptr,
    c_ptr,
    M_total,
    N,
    K,
    E,
    stride_am,
    stride_ak,
    stride_be,
    stride_bk,
    stride_bn,
    stride_cm,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    """c[rows of e] = a[rows of e] @ b[e] for every expert e: a persistent walk over the tiles
    of all experts, numbered expert by expert."""
    tile = tl.program_id(0)  # the next tile this program computes, in the flat list
    num_programs = tl.num_programs(0)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    first_tile = 0  # the current expert's first tile in the flat list
    start = 0  # the current expert's first row
    b_expert = b_ptr  # the current expert's weights (a pointer moved on: no e * stride_be product)
    for e in range(0, E):
        # Clamped into [start, M_total]: offsets that decrease, or pass the end of a, give
        # empty or shortened groups, never an access outside a or c.
        end = tl.minimum(tl.maximum(tl.load(offs_ptr + e), start), M_total)
        num_pid_m = tl.cdiv(end - start, BLOCK_M)
        tiles = num_pid_m * num_pid_n
        while tile < first_tile + tiles:
            pid_m, pid_n = tile_coords(tile - first_tile, num_pid_m, num_pid_n, GROUP_M)
            # int64 rows: row * stride passes 2**31 on large inputs.
            rows = (start + pid_m * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
            cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
            ks = tl.arange(0, BLOCK_K)
            row_in = rows < end
            col_in = cols < N
            a_ptrs = a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak
            b_ptrs = b_expert + ks[:, None] * stride_bk + cols[None, :] * stride_bn
            acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            for k in range(0, tl.cdiv(K, BLOCK_K)):
                k_in = ks < K - k * BLOCK_K
                a = tl.load(a_ptrs, mask=row_in[:, None] & k_in[None, :], other=0.0)
                b = tl.load(b_ptrs, mask=k_in[:, None] & col_in[None, :], other=0.0)
                acc = tl.dot(a, b, acc)
                a_ptrs += BLOCK_K * stride_ak
                b_ptrs += BLOCK_K * stride_bk
            c_ptrs = c_ptr + rows[:, None] * stride_cm + cols[None, :]
            tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=row_in[:, None] & col_in[None, :])
            tile += num_programs
        first_tile += tiles
        start = end
        b_expert += stride_be


@triton.jit
def _max_combine(x, y):
    return tl.maximum(x, y)


@triton.jit
def _expert_tiles(offs_ptr, M_total, E, num_pid_n, BLOCK_M: tl.constexpr, E_BLOCK: tl.constexpr):
    """Every expert's last row and the end of its tiles in the flat list, as vectors of
    ``E_BLOCK`` lanes (lanes past ``E`` end at ``M_total`` with no tiles), and the tiles of
    all experts. Rows as the pointer kernel clamps them: expert ``e`` ends at
    ``min(max(offs[0..e], 0), M_total)``, a running maximum."""
    lane = tl.arange(0, E_BLOCK)
    ends = tl.load(offs_ptr + lane, mask=lane < E, other=0)
    ends = tl.minimum(tl.maximum(tl.associative_scan(ends, 0, _max_combine), 0), M_total)
    starts = tl.load(offs_ptr + lane - 1, mask=(lane >= 1) & (lane < E), other=0)
    starts = tl.minimum(tl.maximum(tl.associative_scan(starts, 0, _max_combine), 0), M_total)
    tiles = tl.cdiv(ends - starts, BLOCK_M) * num_pid_n
    tile_ends = tl.cumsum(tiles, 0)
    total = tl.sum(tiles, 0)
    # Lanes past E: never before a tile (their tile end lies past every tile).
    tile_ends = tl.where(lane < E, tile_ends, total + 1)
    ends = tl.where(lane < E, ends, M_total)
    return ends, tile_ends, total


@triton.jit
def _owner(tile, ends, tile_ends, M_total):
    """``(expert, first row, end row, first tile)`` of the expert that owns flat tile ``tile``:
    the experts whose tiles end at or before it come before it (reductions over the lanes,
    no loop and no branch)."""
    before = tile_ends <= tile
    expert = tl.sum(before.to(tl.int32), 0)
    first_tile = tl.max(tl.where(before, tile_ends, 0), 0)
    start = tl.max(tl.where(before, ends, 0), 0)
    end = tl.min(tl.where(before, M_total, ends), 0)
    return expert, start, end, first_tile


@triton.jit
def _grouped_matmul_tma_kernel(
    a_ptr,
    b_ptr,
    offs_ptr,
    c_ptr,
    M_total,
    N,
    K,
    E,
    stride_am,
    stride_be,
    stride_bk,
    stride_bn,
    stride_cm,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    E_BLOCK: tl.constexpr,
    B_TRANSPOSED: tl.constexpr,
    WARP_SPECIALIZE: tl.constexpr,
):
    """The grouped matmul on Hopper: one flat loop over the tiles of all experts (which
    Triton's pipeliner flattens with the K loop, so the next tile's loads run under this
    tile's last products and its store), tiles loaded by TMA through descriptors made on
    the device: ``a`` as (M_total, K), ``b`` as (E, K, N), or as (E, N, K) when
    ``B_TRANSPOSED`` (weights stored as ``nn.Linear`` keeps them)."""
    a_desc = tl.make_tensor_descriptor(a_ptr, [M_total, K], [stride_am, 1], [BLOCK_M, BLOCK_K])
    if B_TRANSPOSED:
        b_desc = tl.make_tensor_descriptor(b_ptr, [E, N, K], [stride_be, stride_bn, 1], [1, BLOCK_N, BLOCK_K])
    else:
        b_desc = tl.make_tensor_descriptor(b_ptr, [E, K, N], [stride_be, stride_bk, 1], [1, BLOCK_K, BLOCK_N])
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    ends, tile_ends, total = _expert_tiles(offs_ptr, M_total, E, num_pid_n, BLOCK_M, E_BLOCK)
    for tile in tl.range(
        tl.program_id(0), total, tl.num_programs(0), flatten=True, warp_specialize=WARP_SPECIALIZE
    ):
        expert, start, end, first_tile = _owner(tile, ends, tile_ends, M_total)
        pid_m, pid_n = tile_coords(tile - first_tile, tl.cdiv(end - start, BLOCK_M), num_pid_n, GROUP_M)
        row = start + pid_m * BLOCK_M
        col = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            # Rows past the expert's end are the next expert's (or zeros past M_total):
            # their products are computed and never stored. Columns past N and steps past
            # K arrive as zeros.
            a = a_desc.load([row, ki * BLOCK_K])
            if B_TRANSPOSED:
                b = b_desc.load([expert, col, ki * BLOCK_K]).reshape(BLOCK_N, BLOCK_K).T
            else:
                b = b_desc.load([expert, ki * BLOCK_K, col]).reshape(BLOCK_K, BLOCK_N)
            acc = tl.dot(a, b, acc)
        rows = row.to(tl.int64) + tl.arange(0, BLOCK_M)
        cols = col + tl.arange(0, BLOCK_N)
        c_ptrs = c_ptr + rows[:, None] * stride_cm + cols[None, :]
        tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rows[:, None] < end) & (cols[None, :] < N))


@triton.jit
def _grouped_matmul_wgrad_kernel(
    a_ptr,
    g_ptr,
    offs_ptr,
    db_ptr,
    M_total,
    N,
    K,
    E,
    stride_am,
    stride_ak,
    stride_gm,
    stride_gn,
    stride_de,
    stride_dk,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    E_BLOCK: tl.constexpr,
):
    """db[e] = a[rows of e]^T @ g[rows of e] ((K, N) per expert): program (tile, e) sums one
    (BLOCK_K, BLOCK_N) tile of expert e's gradient over its rows, BLOCK_M at a time. Rows
    as the forward clamps them: expert e's end is the running maximum of offs[0..e] in
    [0, M_total], its start the previous expert's end."""
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pid_k = tl.program_id(0) // num_pid_n
    pid_n = tl.program_id(0) % num_pid_n
    e = tl.program_id(1)
    lane = tl.arange(0, E_BLOCK)
    end = tl.max(tl.load(offs_ptr + lane, mask=lane <= e, other=0), 0)
    start = tl.max(tl.load(offs_ptr + lane, mask=lane < e, other=0), 0)
    end = tl.minimum(tl.maximum(end, 0), M_total)
    start = tl.minimum(tl.maximum(start, 0), M_total)
    ks = pid_k * BLOCK_K + tl.arange(0, BLOCK_K)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    k_in = ks < K
    col_in = cols < N
    acc = tl.zeros((BLOCK_K, BLOCK_N), dtype=tl.float32)
    for m in range(start, end, BLOCK_M):
        # int64 rows: row * stride passes 2**31 on large inputs.
        rows = (m + tl.arange(0, BLOCK_M)).to(tl.int64)
        row_in = rows < end
        a_t = tl.load(
            a_ptr + rows[None, :] * stride_am + ks[:, None] * stride_ak,
            mask=k_in[:, None] & row_in[None, :],
            other=0.0,
        )
        g = tl.load(
            g_ptr + rows[:, None] * stride_gm + cols[None, :] * stride_gn,
            mask=row_in[:, None] & col_in[None, :],
            other=0.0,
        )
        acc = tl.dot(a_t, g, acc)
    d_ptrs = db_ptr + e.to(tl.int64) * stride_de + ks[:, None] * stride_dk + cols[None, :]
    tl.store(d_ptrs, acc.to(db_ptr.dtype.element_ty), mask=k_in[:, None] & col_in[None, :])


def grouped_matmul_config(a: torch.Tensor, b: torch.Tensor | None = None) -> GroupedConfig:
    """The config :func:`grouped_matmul` launches with on ``a``'s device: the interpreter's
    small tile on the CPU; on a GPU with TMA, where descriptors can describe ``a`` and ``b``
    (:func:`tma_operands`), :data:`~gpuperf.kernels._moe_configs.GROUPED_MATMUL_TMA_DEFAULT`,
    or at decode (``a`` holds at most
    :data:`~gpuperf.kernels._moe_configs.GROUPED_DECODE_ROWS_PER_EXPERT` rows per expert of
    ``b`` on average: ``M_total <= R * E``)
    :data:`~gpuperf.kernels._moe_configs.GROUPED_MATMUL_TMA_DECODE`; else
    :data:`~gpuperf.kernels._moe_configs.GROUPED_MATMUL_DEFAULT` (computed pointers)."""
    if not a.is_cuda:
        return _moe_configs.GROUPED_MATMUL_INTERPRETER
    if b is not None and has_tma(a) and tma_operands(a, b) is not None:
        if a.shape[0] <= _moe_configs.GROUPED_DECODE_ROWS_PER_EXPERT * b.shape[0]:
            return _moe_configs.GROUPED_MATMUL_TMA_DECODE
        return _moe_configs.GROUPED_MATMUL_TMA_DEFAULT
    return _moe_configs.GROUPED_MATMUL_DEFAULT


def ensure_allocator() -> None:
    """Give Triton an allocator for the scratch memory of descriptors a kernel makes on the
    device (``tl.make_tensor_descriptor``), from PyTorch's caching allocator, unless one is set."""
    from triton.runtime import _allocation

    if isinstance(_allocation._allocator.get(), _allocation.NullAllocator):
        triton.set_allocator(_scratch)


def _scratch(size: int, alignment: int, stream) -> torch.Tensor:
    return torch.empty(size, dtype=torch.int8, device="cuda")


def describable(t: torch.Tensor) -> bool:
    """:func:`~gpuperf.kernels.tma.tma_ready` of ``t``, also while ``torch.compile`` traces
    with fake tensors, which have no address: their alignment is read from the storage
    offset (PyTorch's allocators align every storage to far more than 16 bytes)."""
    if is_fake(t):
        offset = t.storage_offset() * t.element_size()
        t = types.SimpleNamespace(data_ptr=lambda: offset, element_size=t.element_size, stride=t.stride)
    return tma_ready(t)


def tma_operands(a: torch.Tensor, b: torch.Tensor) -> str | None:
    """How the TMA kernel can describe ``b``: ``"row"`` (each expert's ``(K, N)`` row-major),
    ``"col"`` (each expert's ``(K, N)`` column-major: a transposed view of ``(E, N, K)``
    weights as ``nn.Linear`` keeps them), or None where a descriptor cannot describe ``a``
    or ``b`` (a unit stride along K for ``a``, along N or K for ``b``; the other strides
    multiples of 16 bytes; 16-byte aligned bases) or there are more experts than the
    kernel's schedule holds (:data:`~gpuperf.kernels._moe_configs.GROUPED_TMA_MAX_EXPERTS`)."""
    if b.shape[0] > _moe_configs.GROUPED_TMA_MAX_EXPERTS or not describable(a):
        return None
    if describable(b):
        return "row"
    if describable(b.transpose(1, 2)):
        return "col"
    return None


def grid_size(device_index: int, m_total: int, n: int, num_experts: int, config: GroupedConfig) -> int:
    """Programs of the persistent launch: one per SM of device ``device_index``, or fewer when
    there cannot be that many tiles. An expert of ``m`` rows has ``ceil(m / BLOCK_M)`` row
    tiles, at most ``m / BLOCK_M + 1``; summed over experts, at most
    ``ceil(M_total / BLOCK_M) + E``, each times ``ceil(N / BLOCK_N)`` column tiles."""
    bound = (cdiv(m_total, config.block_m) + num_experts) * cdiv(n, config.block_n)
    return max(1, min(num_sms(device_index), bound))


def check_offsets(offs: torch.Tensor, m_total: int) -> None:
    """Check the values of ``offs``: non-decreasing, none negative, the last at most
    ``m_total``. Reads ``offs`` to the host: one synchronization when it is on a GPU.
    :func:`grouped_matmul` runs this itself where ``offs`` is on the CPU.

    Raises:
        ValueError: an offset decreases, is negative, or passes ``m_total``; the message
            gives the first such position and its value.
    """
    values = offs.tolist()
    previous = 0
    for i, value in enumerate(values):
        if value < previous:
            what = "negative" if i == 0 else f"less than offs[{i - 1}] = {previous}"
            raise ValueError(f"offs must be non-decreasing from 0: offs[{i}] = {value} is {what}")
        previous = value
    if values and values[-1] > m_total:
        raise ValueError(f"offs[-1] must be at most the rows of a (M_total = {m_total}), got {values[-1]}")


def check_grouped_operands(a, b, offs) -> None:
    """Check the shapes, dtypes and devices of :func:`grouped_matmul`'s operands (not the
    values of ``offs``: see :func:`check_offsets`).

    Raises:
        TypeError: ``a`` or ``b`` is not a tensor, not float16/bfloat16, or their dtypes
            differ; ``offs`` is not a tensor or not int32.
        ValueError: ``a`` is not 2-D, ``b`` not 3-D, their K differ, ``offs`` is not of
            shape ``(E,)``, or the tensors are not on one device (or on the CPU while the
            interpreter is off).
    """
    check_tensors(("a", "b"), (a, b), HALF_DTYPES)
    if a.dim() != 2:
        raise ValueError(f"a must be 2-D (M_total, K), got shape {tuple(a.shape)}")
    if b.dim() != 3:
        raise ValueError(f"b must be 3-D (E, K, N), got shape {tuple(b.shape)}")
    if a.shape[1] != b.shape[1]:
        raise ValueError(
            f"a and b must have the same K: a is (M_total, K) = {tuple(a.shape)}, "
            f"b is (E, K, N) = {tuple(b.shape)}"
        )
    if not isinstance(offs, torch.Tensor):
        raise TypeError(f"offs must be a torch.Tensor, got {type(offs).__name__}")
    if offs.dtype != torch.int32:
        raise TypeError(f"offs must be int32, got {dtype_names([offs.dtype])}")
    if offs.shape != (b.shape[0],):
        raise ValueError(f"offs must have shape (E,) = ({b.shape[0]},) like b's E, got {tuple(offs.shape)}")
    if offs.device != a.device:
        raise ValueError(f"offs must be on {a.device} like a, got {offs.device}")


def grouped_matmul_launches(
    a: torch.Tensor, b: torch.Tensor, offs: torch.Tensor, config: GroupedConfig | None = None
) -> tuple[torch.Tensor, Launches]:
    """What :func:`grouped_matmul` runs: its checks, then the output and the launch that fills
    it, with ``config`` (default :func:`grouped_matmul_config`). A tuning sweep launches
    these with each candidate of
    :data:`~gpuperf.kernels._moe_configs.GROUPED_MATMUL_CANDIDATES` (computed pointers) and
    :data:`~gpuperf.kernels._moe_configs.GROUPED_MATMUL_TMA_CANDIDATES` (TMA).

    Raises:
        As :func:`grouped_matmul`; and ``TypeError`` for a ``config`` that is neither a
        :class:`~gpuperf.kernels.MatmulConfig` nor a :class:`~gpuperf.kernels.PersistentConfig`;
        for a TMA config, ``ValueError`` where no descriptor can describe ``a`` or ``b``
        (:func:`tma_operands`) and ``RuntimeError`` on a GPU without TMA.
    """
    check_grouped_operands(a, b, offs)
    if config is not None and not isinstance(config, (MatmulConfig, PersistentConfig)):
        raise TypeError(
            f"config must be a gpuperf.kernels.MatmulConfig or PersistentConfig, got {type(config).__name__}"
        )
    offs_read = offs
    if type(offs) is torch.Tensor and not offs.is_cuda:
        check_offsets(offs, a.shape[0])  # on the CPU, reading offs costs no synchronization
        # The kernel reads a copy: a launch on a copy keeps no plan (gpuperf.kernels.launch),
        # so every call on the CPU runs these checks again. (On the CPU the kernel runs in
        # the interpreter, whose time a plan does not save.)
        offs_read = offs.clone()
    m_total, k = a.shape
    num_experts, _, n = b.shape
    c = torch.empty((m_total, n), dtype=a.dtype, device=a.device)
    if m_total == 0 or n == 0 or num_experts == 0:
        return c, ()
    if k == 0:
        return torch.zeros((m_total, n), dtype=a.dtype, device=a.device), ()
    config = config or grouped_matmul_config(a, b)
    programs = grid_size(a.get_device(), m_total, n, num_experts, config)
    constexprs = (config.block_m, config.block_n, config.block_k, config.group_m)
    if isinstance(config, PersistentConfig) and config.tma:
        require_tma("grouped_matmul with a TMA config", a)
        layout = tma_operands(a, b)
        if layout is None:
            raise ValueError(
                "a TMA config needs operands a tensor descriptor can describe: a (M_total, K) and b "
                "(E, K, N) each with a unit stride along K (a) or along N or K (b), the other strides "
                "multiples of 16 bytes and 16-byte aligned bases, and at most "
                f"{_moe_configs.GROUPED_TMA_MAX_EXPERTS} experts; got a of strides {a.stride()}, "
                f"b of strides {b.stride()} ({num_experts} experts)"
            )
        if a.is_cuda:
            ensure_allocator()  # (the descriptors the kernel makes live in scratch memory)
        args = (a, b, offs_read, c, m_total, n, k, num_experts, a.stride(0), *b.stride(), c.stride(0))
        constexprs += (triton.next_power_of_2(num_experts), layout == "col", config.warp_specialize)
        launch = Launch(
            _grouped_matmul_tma_kernel, (programs,), args, constexprs, config.num_warps, config.num_stages
        )
        return c, (launch,)
    args = (a, b, offs_read, c, m_total, n, k, num_experts, *a.stride(), *b.stride(), c.stride(0))
    launch = Launch(
        _grouped_matmul_kernel, (programs,), args, constexprs, config.num_warps, config.num_stages
    )
    return c, (launch,)


@op("gpuperf::grouped_matmul_wgrad", tensors=3)
def grouped_matmul_wgrad(
    a: torch.Tensor, grad_out: torch.Tensor, offs: torch.Tensor
) -> tuple[torch.Tensor, Launches]:
    """The weights' gradient of :func:`grouped_matmul`: ``db[e] = a[rows of e]ᵀ @
    grad_out[rows of e]``, ``(E, K, N)`` in ``a``'s dtype, summed in float32 and rounded
    once; an expert with no rows gets zeros. ``a`` ``(M_total, K)`` and ``grad_out``
    ``(M_total, N)`` float16 or bfloat16, any strides; ``offs`` as :func:`grouped_matmul`
    takes it (its rows clamped the same way). One launch, a program per
    ``(K tile, N tile, expert)`` that walks the expert's rows
    (:data:`~gpuperf.kernels._moe_configs.GROUPED_WGRAD_BLOCKS`): each expert gets the same
    programs whatever its rows, so under uneven routing the busiest expert's programs finish
    last (the schedule :term:`load imbalance` hurts; the forward's flat tile list does not).
    Called by the backward,
    it checks the dtypes, devices, ranks and row counts of ``a`` and ``grad_out``, and that
    ``offs`` is a 1-D int32 tensor on their device (not its values).

    Raises:
        TypeError: ``a`` or ``grad_out`` is not float16/bfloat16 or their dtypes differ;
            ``offs`` is not an int32 tensor.
        ValueError: ``a`` or ``grad_out`` is not 2-D, their rows differ, ``offs`` is not
            1-D, or the tensors are not on one device.
    """
    check_tensors(("a", "grad_out"), (a, grad_out), HALF_DTYPES)
    if a.dim() != 2 or grad_out.dim() != 2 or grad_out.shape[0] != a.shape[0]:
        raise ValueError(
            f"a (M_total, K) and grad_out (M_total, N) must be 2-D with the same rows, got "
            f"{tuple(a.shape)} and {tuple(grad_out.shape)}"
        )
    if not isinstance(offs, torch.Tensor) or offs.dtype != torch.int32:
        got = dtype_names([offs.dtype]) if isinstance(offs, torch.Tensor) else type(offs).__name__
        raise TypeError(f"offs must be an int32 tensor, got {got}")
    if offs.dim() != 1 or offs.device != a.device:
        raise ValueError(
            f"offs must be 1-D on {a.device} like a, got shape {tuple(offs.shape)} on {offs.device}"
        )
    m_total, k = a.shape
    n, num_experts = grad_out.shape[1], offs.shape[0]
    if m_total == 0 or n == 0 or k == 0 or num_experts == 0:
        return torch.zeros((num_experts, k, n), dtype=a.dtype, device=a.device), ()
    db = torch.empty((num_experts, k, n), dtype=a.dtype, device=a.device)  # every tile stored
    block_m, block_n, block_k, num_warps, num_stages = (
        _moe_configs.GROUPED_WGRAD_INTERPRETER if not a.is_cuda else _moe_configs.GROUPED_WGRAD_BLOCKS
    )
    grid = (cdiv(k, block_k) * cdiv(n, block_n), num_experts)
    strides = (*a.stride(), *grad_out.stride(), *db.stride()[:2])
    args = (a, grad_out, offs, db, m_total, n, k, num_experts, *strides)
    constexprs = (block_m, block_n, block_k, next_power_of_2(num_experts))
    return db, (Launch(_grouped_matmul_wgrad_kernel, grid, args, constexprs, num_warps, num_stages),)


def grouped_matmul_backward(
    grad_out: torch.Tensor, a: torch.Tensor, b: torch.Tensor, offs: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(da, db)`` of :func:`grouped_matmul` from the gradient ``grad_out`` ``(M_total, N)``
    of its output and its inputs: ``da = grouped_matmul(grad_out, bᵀ)`` over the same
    experts (``b.transpose(1, 2)``, a view the kernels read in place), its rows past the
    last offset zeroed (they belong to no expert), and ``db`` by
    :func:`grouped_matmul_wgrad`. No host synchronization: the rows past the last offset
    are masked on the device."""
    da = grouped_matmul(grad_out, b.transpose(1, 2), offs)
    rows = torch.arange(da.shape[0], device=da.device)
    da = da.masked_fill(rows[:, None] >= offs[-1:].clamp(min=0), 0) if offs.numel() else da.zero_()
    return da, grouped_matmul_wgrad(a, grad_out, offs)


@op(
    "gpuperf::grouped_matmul",
    tensors=3,
    backward=grouped_matmul_backward,
    saves=lambda a, b, offs, out: (a, b, offs),
)
def grouped_matmul(a: torch.Tensor, b: torch.Tensor, offs: torch.Tensor) -> tuple[torch.Tensor, Launches]:
    """Multiply each expert's rows of ``a`` by its weight ``b[e]``: ``out[rows of e] = a[rows of
    e] @ b[e]``, with expert ``e``'s rows ``offs[e-1] <= row < offs[e]`` (``offs[-1]`` read as 0).

    The semantics of ``torch.nn.functional.grouped_mm(a, b, offs=offs)`` (torch 2.11) for a
    2-D ``a`` and a 3-D ``b``, in bfloat16 and float16, with no layout rule.

    Args:
        a: ``(M_total, K)`` float16 or bfloat16, rows sorted by expert; any strides (row-major
            is the fast layout). On a CUDA device, or on the CPU when ``TRITON_INTERPRET=1``.
        b: ``(E, K, N)``, ``a``'s dtype and device; any strides: row-major, or a transposed
            view ``w.transpose(1, 2)`` of weights stored ``(E, N, K)`` as ``nn.Linear`` keeps
            them, with no copy.
        offs: ``(E,)`` int32 on ``a``'s device: the cumulative row ends, non-decreasing,
            ``offs[E-1] <= M_total``. An expert may have no rows (``offs[e] == offs[e-1]``).

    Returns:
        A new contiguous ``(M_total, N)`` tensor of ``a``'s dtype, summed in float32 and
        rounded once. Rows past ``offs[E-1]`` belong to no expert and are left unwritten
        (their values are undefined, as ``F.grouped_mm``'s). ``M_total = 0``, ``N = 0`` or
        ``E = 0`` launch nothing; ``K = 0`` gives zeros, without a launch.

    Raises:
        TypeError: ``a`` or ``b`` is not a tensor or not float16/bfloat16, their dtypes
            differ, or ``offs`` is not an int32 tensor.
        ValueError: ``a`` is not 2-D or ``b`` not 3-D; their K differ; ``offs`` is not of
            shape ``(E,)``; the tensors are on different devices, or on the CPU while the
            interpreter is off. Where ``offs`` is on the CPU, also offsets that decrease,
            are negative or pass ``M_total`` (:func:`check_offsets`).

    Not checked on a GPU: the values of ``offs``, which would cost a synchronization per
    call (call :func:`check_offsets` to check them). The kernel clamps each expert's rows
    into ``[offs[e-1], M_total]`` (a decreasing offset gives an empty expert), so bad
    offsets never read or write outside ``a``, ``b`` and the output, but the result is not
    a grouped product.

    Also registered as ``torch.ops.gpuperf.grouped_matmul`` (``torch.library.triton_op``).
    Differentiable with respect to ``a`` and ``b`` (:func:`grouped_matmul_backward`: ``da``
    by this kernel on ``bᵀ``, ``db`` by :func:`grouped_matmul_wgrad`), registered with
    ``torch.library.register_autograd``; ``offs`` takes no gradient.

    Algorithm: a persistent grouped GEMM whose tile schedule each program computes from
    ``offs`` on the device (see the module's text), loading through TMA on Hopper where the
    layouts allow (:func:`tma_operands`: row-major ``a``, and ``b`` row-major or the
    transposed view of ``(E, N, K)`` weights), else through computed pointers; FLOPs
    ``2 * offs[E-1] * N * K``.
    """
    return grouped_matmul_launches(a, b, offs)


__all__ = [
    "GroupedConfig",
    "check_grouped_operands",
    "check_offsets",
    "describable",
    "ensure_allocator",
    "grid_size",
    "grouped_matmul",
    "grouped_matmul_backward",
    "grouped_matmul_config",
    "grouped_matmul_launches",
    "grouped_matmul_wgrad",
    "tma_operands",
]
