"""Block-scaled FP8: DeepSeek-V3's fine-grained quantization and the matmul that reads it.

One scale per tensor (or per row) lets one large value crush the precision of everything
that shares its scale. DeepSeek-V3 scales small blocks instead: each **1 x 128 tile** of an
activation (one token, 128 channels) and each **128 x 128 block** of a weight has its own
float32 scale, ``amax / 448`` of the block (448 is ``float8_e4m3fn``'s largest finite
value), so an outlier costs precision only to the 127 (or 16,383) values beside it.

The matmul cannot apply such scales once at the end: along K they change every 128
columns. Each step of 128 along K is a partial product of raw FP8 values on the tensor
cores, which is then scaled by its row's scale of ``a`` and its column block's scale of
``b`` and added into a float32 accumulator. That is also DeepSeek-V3's answer to the
tensor cores' FP8 accumulator of about 14 significant bits: partial sums are promoted to
float32 every 128 products (their "increasing accumulation precision").

:func:`quantize_fp8_blockwise` makes these operands from float32/bf16/fp16;
:func:`matmul_fp8_blockwise` multiplies them with one of three kernels:

* on Hopper, where tensor descriptors can describe ``a`` and ``b`` (K-major, rows of a
  multiple of 16 bytes), a Gluon kernel (:mod:`gpuperf.kernels.gluon.matmul_fp8_blockwise`):
  persistent, TMA loads, and each step's partial product scaled and added while the next
  step's ``wgmma`` runs, as DeepGEMM does;
* while ``torch.compile`` traces the op (Inductor launches Triton kernels, not Gluon ones),
  and on newer GPUs with TMA: a persistent Triton kernel with TMA loads, which waits for
  each step's product before scaling it;
* elsewhere (Ada, other layouts, Triton's interpreter): a Triton kernel with computed
  pointers and masks, any strides.

Sources: DeepSeek-AI, "DeepSeek-V3 Technical Report" (arXiv:2412.19437), section 3.3.2
(fine-grained quantization, accumulation precision); the reference implementation's
``act_quant`` and ``weight_quant`` (``inference/kernel.py`` of
https://github.com/deepseek-ai/DeepSeek-V3: ``s = amax / 448``, ``y = x / s`` cast to
``float8_e4m3fn``, one scale per 128 values of a row, or per 128 x 128 block of a weight).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from torch._subclasses.fake_tensor import is_fake

from gpuperf._runtime import is_interpreter
from gpuperf.kernels import _moe_configs
from gpuperf.kernels._configs import MatmulConfig
from gpuperf.kernels._grid import cdiv
from gpuperf.kernels._persistent_configs import PersistentConfig
from gpuperf.kernels._validation import FLOAT_DTYPES, check_tensor, check_tensors, dtype_names
from gpuperf.kernels.device import capability, has_tma, num_sms, require_gluon_hopper, require_tma
from gpuperf.kernels.gluon.matmul_fp8 import GluonFP8Config
from gpuperf.kernels.grouped_matmul import describable, ensure_allocator
from gpuperf.kernels.launch import Launch, Launches, op
from gpuperf.kernels.tiles import tile_coords

#: A config of :func:`matmul_fp8_blockwise_launches`, which also names the kernel: a
#: :class:`~gpuperf.kernels.MatmulConfig` (computed pointers, any GPU with FP8 tensor cores
#: and the interpreter), a :class:`~gpuperf.kernels.PersistentConfig` with ``tma`` (Triton,
#: persistent, TMA loads: compute capability 9.0 or newer) or a
#: :class:`~gpuperf.kernels.gluon.GluonFP8Config` (Gluon, Hopper only:
#: :mod:`gpuperf.kernels.gluon.matmul_fp8_blockwise`).
BlockwiseConfig = MatmulConfig | PersistentConfig | GluonFP8Config

#: The FP8 format of both operands: 4 exponent bits, 3 mantissa bits, largest finite 448.
FP8_BLOCKWISE_DTYPE = torch.float8_e4m3fn

#: The blocks of DeepSeek-V3's recipe: 1 x 128 for activations, 128 x 128 for weights.
ACTIVATION_BLOCK = (1, 128)
WEIGHT_BLOCK = (128, 128)

_SCALE_BLOCK = _moe_configs.FP8_SCALE_BLOCK


def quantize_fp8_blockwise(
    x: torch.Tensor, block: tuple[int, int] = ACTIVATION_BLOCK
) -> tuple[torch.Tensor, torch.Tensor]:
    """Quantize ``x`` to ``float8_e4m3fn`` with one float32 scale per block of its last two
    dimensions: ``x ≈ x_fp8.float() * scale`` blockwise.

    Each block's scale is ``amax / 448``, its largest magnitude mapped onto the format's
    largest finite value; values are divided by it in float32, clamped to ``[-448, 448]``
    and rounded to nearest even: DeepSeek-V3's ``act_quant`` (``block=(1, 128)``) and
    ``weight_quant`` (``block=(128, 128)``). A block of zeros gets scale 1 (the reference's
    ``0 / 0`` would give NaN). Blocks at the right or bottom edge may be partial: their
    scale covers the values there are.

    Args:
        x: ``(..., R, C)``, float32, float16 or bfloat16, rank 2 or more (leading
            dimensions are batches: an expert's weights ``(E, N, K)``), any device and strides.
        block: ``(rows, cols)`` of one block, positive ints: :data:`ACTIVATION_BLOCK` for
            activations ``(M, K)``, :data:`WEIGHT_BLOCK` for weights ``(N, K)``.

    Returns:
        ``(x_fp8, scale)``: ``x_fp8`` contiguous, of ``x``'s shape, ``float8_e4m3fn``;
        ``scale`` contiguous float32 of shape ``(..., ceil(R / rows), ceil(C / cols))``.
        For :func:`matmul_fp8_blockwise`, ``quantize_fp8_blockwise(x)`` gives ``a`` and
        ``scale_a`` and ``quantize_fp8_blockwise(w, WEIGHT_BLOCK)`` of a weight ``w``
        ``(N, K)`` gives ``b`` and ``scale_b``.

    Raises:
        TypeError: ``x`` is not a float32/float16/bfloat16 tensor.
        ValueError: ``x`` has rank below 2, ``block`` is not two positive ints, or ``x``
            holds inf or NaN (no finite scale maps it).

    Reads the blocks' amax back to the host to check it is finite: one synchronization.
    """
    check_tensor("x", x, FLOAT_DTYPES)
    if x.dim() < 2:
        raise ValueError(f"x must have rank 2 or more (..., R, C), got shape {tuple(x.shape)}")
    if type(block) is not tuple or len(block) != 2 or any(type(v) is not int or v < 1 for v in block):
        raise ValueError(f"block must be a tuple of two positive ints (rows, cols), got {block!r}")
    finite_max = torch.finfo(FP8_BLOCKWISE_DTYPE).max
    *lead, rows, cols = x.shape
    br, bc = block
    nr, nc = cdiv(rows, br), cdiv(cols, bc)
    # Zero padding to whole blocks: a zero never raises a block's amax.
    x32 = torch.nn.functional.pad(x.float(), (0, nc * bc - cols, 0, nr * br - rows))
    blocks = x32.reshape(*lead, nr, br, nc, bc)
    amax = blocks.abs().amax(dim=(-3, -1)) if blocks.numel() else x32.new_zeros((*lead, nr, nc))
    if not bool(torch.isfinite(amax).all()):
        raise ValueError("x holds inf or NaN: no finite scale can represent it in FP8")
    scale = torch.where(amax > 0, amax / finite_max, torch.ones_like(amax))
    quantized = (blocks / scale[..., :, None, :, None]).clamp(-finite_max, finite_max)
    x_fp8 = quantized.reshape(x32.shape)[..., :rows, :cols].to(FP8_BLOCKWISE_DTYPE).contiguous()
    return x_fp8, scale


@triton.jit
def _matmul_fp8_blockwise_kernel(
    a_ptr,
    b_ptr,
    sa_ptr,
    sb_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bn,
    stride_bk,
    stride_sam,
    stride_sak,
    stride_sbn,
    stride_sbk,
    stride_cm,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    """c = sum over K steps of (a_step @ b_step^T) * scale_a[row, step] * scale_b[col // BLOCK_K,
    step]: one step along K is one scale block (BLOCK_K = 128)."""
    pid_m, pid_n = tile_coords(tl.program_id(0), tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N), GROUP_M)
    # int64: row * stride passes 2**31 on large inputs.
    rows = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    cols = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)
    ks = tl.arange(0, BLOCK_K)
    row_in = rows < M
    col_in = cols < N
    a_ptrs = a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak
    b_ptrs = b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn  # b read as (K, N)
    sa_ptrs = sa_ptr + rows * stride_sam
    sb_ptrs = sb_ptr + (cols // BLOCK_K) * stride_sbn  # each column's block of 128 rows of b
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_in = ks < K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=row_in[:, None] & k_in[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=k_in[:, None] & col_in[None, :], other=0.0)
        scale_a = tl.load(sa_ptrs + k * stride_sak, mask=row_in, other=0.0)
        scale_b = tl.load(sb_ptrs + k * stride_sbk, mask=col_in, other=0.0)
        # A fresh partial product per step: the tensor cores' FP8 sum runs over 128
        # products at most, then is promoted, scaled and added in float32.
        acc += tl.dot(a, b) * (scale_a[:, None] * scale_b[None, :])
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + rows[:, None] * stride_cm + cols[None, :]
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=row_in[:, None] & col_in[None, :])


@triton.jit
def _matmul_fp8_blockwise_tma_kernel(
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
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    WARP_SPECIALIZE: tl.constexpr,
):
    """The kernel above, persistent (one program per SM walking the output tiles, the loop
    over tiles flattened with the K loop by Triton's pipeliner), its operand tiles loaded by
    TMA through descriptors made on the device: ``a`` (M, K) and ``b`` (N, K), K-major. Steps
    past K arrive zero-filled; the scales come through pointers."""
    a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [stride_am, 1], [BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, [N, K], [stride_bn, 1], [BLOCK_N, BLOCK_K])
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    tiles = num_pid_m * num_pid_n
    for tile in tl.range(
        tl.program_id(0), tiles, tl.num_programs(0), flatten=True, warp_specialize=WARP_SPECIALIZE
    ):
        pid_m, pid_n = tile_coords(tile, num_pid_m, num_pid_n, GROUP_M)
        rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        sa_ptrs = sa_ptr + rows.to(tl.int64) * stride_sam
        sb_ptrs = sb_ptr + (cols // BLOCK_K) * stride_sbn
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(k_tiles):
            a = a_desc.load([pid_m * BLOCK_M, k * BLOCK_K])
            b = b_desc.load([pid_n * BLOCK_N, k * BLOCK_K])
            scale_a = tl.load(sa_ptrs + k * stride_sak, mask=rows < M, other=0.0)
            scale_b = tl.load(sb_ptrs + k * stride_sbk, mask=cols < N, other=0.0)
            acc += tl.dot(a, b.T) * (scale_a[:, None] * scale_b[None, :])
        c_ptrs = c_ptr + rows.to(tl.int64)[:, None] * stride_cm + cols[None, :]
        tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rows[:, None] < M) & (cols[None, :] < N))


def fp8_blockwise_config(a: torch.Tensor, b: torch.Tensor | None = None) -> BlockwiseConfig:
    """The config :func:`matmul_fp8_blockwise` launches with on ``a``'s device: the
    interpreter's small tiles on the CPU; on a Hopper GPU, where descriptors can describe
    ``a`` and ``b`` (:func:`tma_operands`), the Gluon kernel's config for the shape
    (:func:`~gpuperf.kernels._moe_configs.fp8_blockwise_gluon_config`), or the Triton TMA
    kernel's (:data:`~gpuperf.kernels._moe_configs.FP8_BLOCKWISE_TMA_DEFAULT`) while
    ``torch.compile`` traces the op (Inductor launches Triton kernels, not Gluon ones) and on
    newer GPUs with TMA; else
    :data:`~gpuperf.kernels._moe_configs.FP8_BLOCKWISE_DEFAULT` (computed pointers)."""
    if not a.is_cuda:
        return _moe_configs.FP8_BLOCKWISE_INTERPRETER
    if b is None or not has_tma(a) or not tma_operands(a, b):
        return _moe_configs.FP8_BLOCKWISE_DEFAULT
    if torch.compiler.is_compiling() or is_fake(a) or capability(a.get_device())[0] != 9:
        return _moe_configs.FP8_BLOCKWISE_TMA_DEFAULT
    return _moe_configs.fp8_blockwise_gluon_config(a.shape[0], b.shape[0], num_sms(a.get_device()))


def tma_operands(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether tensor descriptors can describe ``a`` (M, K) and ``b`` (N, K) K-major: unit
    strides along K, the other strides multiples of 16 bytes (``K`` a multiple of 16 for
    contiguous operands), 16-byte aligned bases."""
    return describable(a) and describable(b)


def _check_scale(name: str, scale, shape: tuple[int, int], device: torch.device) -> None:
    if not isinstance(scale, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(scale).__name__}")
    if scale.dtype != torch.float32:
        raise TypeError(f"{name} must be float32, got {dtype_names([scale.dtype])}")
    if tuple(scale.shape) != shape:
        raise ValueError(f"{name} must have shape {shape}, got {tuple(scale.shape)}")
    if scale.device != device:
        raise ValueError(f"{name} must be on {device} like its operand, got {scale.device}")


def check_fp8_blockwise_operands(a, b, scale_a, scale_b) -> None:
    """Check :func:`matmul_fp8_blockwise`'s operands and scales.

    Raises:
        TypeError: ``a`` or ``b`` is not a ``float8_e4m3fn`` tensor, or a scale is not a
            float32 tensor.
        ValueError: ``a`` or ``b`` is not 2-D, their K differ, a scale has the wrong shape
            or device, or the operands are on different devices (or on the CPU while the
            interpreter is off).
        RuntimeError: the GPU has no FP8 tensor cores (compute capability below 8.9).
    """
    check_tensors(("a", "b"), (a, b), (FP8_BLOCKWISE_DTYPE,))
    for name, t, shape in (("a", a, "(M, K)"), ("b", b, "(N, K)")):
        if t.dim() != 2:
            raise ValueError(f"{name} must be 2-D {shape}, got shape {tuple(t.shape)}")
    if a.shape[1] != b.shape[1]:
        raise ValueError(
            f"a and b must have the same K: a is (M, K) = {tuple(a.shape)}, b is (N, K) = {tuple(b.shape)}"
        )
    (m, k), n = a.shape, b.shape[0]
    _check_scale("scale_a", scale_a, (m, cdiv(k, _SCALE_BLOCK)), a.device)
    _check_scale("scale_b", scale_b, (cdiv(n, _SCALE_BLOCK), cdiv(k, _SCALE_BLOCK)), b.device)
    if a.is_cuda and not is_interpreter():
        major, minor = capability(a.get_device())
        if (major, minor) < (8, 9):
            raise RuntimeError(
                "matmul_fp8_blockwise needs FP8 tensor cores: compute capability 8.9 (Ada) or "
                f"newer; {torch.cuda.get_device_name(a.device)} has {major}.{minor}"
            )


def matmul_fp8_blockwise_launches(
    a: torch.Tensor,
    b: torch.Tensor,
    scale_a: torch.Tensor,
    scale_b: torch.Tensor,
    config: BlockwiseConfig | None = None,
) -> tuple[torch.Tensor, Launches]:
    """What :func:`matmul_fp8_blockwise` runs: its checks, then the output and the launch that
    fills it, with ``config`` (default :func:`fp8_blockwise_config`), whose type names the
    kernel (:data:`BlockwiseConfig`). A tuning sweep launches these with each candidate of
    :data:`~gpuperf.kernels._moe_configs.FP8_BLOCKWISE_CANDIDATES` (computed pointers),
    :data:`~gpuperf.kernels._moe_configs.FP8_BLOCKWISE_TMA_CANDIDATES` (Triton, TMA) and
    :data:`~gpuperf.kernels._moe_configs.FP8_BLOCKWISE_GLUON_CANDIDATES` (Gluon).

    Raises:
        As :func:`matmul_fp8_blockwise`; and ``TypeError`` for a ``config`` not of
        :data:`BlockwiseConfig`; ``ValueError`` for one whose ``block_k`` is not 128 (one step
        along K is one scale block), a Gluon config the kernel does not take
        (:func:`gpuperf.kernels.gluon.matmul_fp8_blockwise.check_config`), or a TMA or Gluon
        config for operands no descriptor can describe (:func:`tma_operands`);
        ``RuntimeError`` for a TMA config on a GPU without TMA, or a Gluon one off Hopper or
        under the interpreter.
    """
    check_fp8_blockwise_operands(a, b, scale_a, scale_b)
    if config is not None and not isinstance(config, (MatmulConfig, PersistentConfig, GluonFP8Config)):
        raise TypeError(
            "config must be a gpuperf.kernels.MatmulConfig, PersistentConfig or "
            f"gluon.GluonFP8Config, got {type(config).__name__}"
        )
    if config is not None and config.block_k != _SCALE_BLOCK:
        raise ValueError(f"config.block_k must be the scale block, {_SCALE_BLOCK}, got {config.block_k}")
    (m, k), n = a.shape, b.shape[0]
    if m == 0 or n == 0 or k == 0:
        return torch.zeros((m, n), dtype=torch.bfloat16, device=a.device), ()
    c = torch.empty((m, n), dtype=torch.bfloat16, device=a.device)
    config = config or fp8_blockwise_config(a, b)
    if isinstance(config, GluonFP8Config) or (isinstance(config, PersistentConfig) and config.tma):
        return c, (_descriptor_launch(c, a, b, scale_a, scale_b, config),)
    grid = (cdiv(m, config.block_m) * cdiv(n, config.block_n),)
    strides = (*a.stride(), *b.stride(), *scale_a.stride(), *scale_b.stride(), c.stride(0))
    args = (a, b, scale_a, scale_b, c, m, n, k, *strides)
    constexprs = (config.block_m, config.block_n, config.block_k, config.group_m)
    return c, (
        Launch(_matmul_fp8_blockwise_kernel, grid, args, constexprs, config.num_warps, config.num_stages),
    )


def _descriptor_launch(c, a, b, scale_a, scale_b, config: GluonFP8Config | PersistentConfig) -> Launch:
    """The launch of a kernel that loads ``a`` and ``b`` through descriptors it makes on the
    device: the Gluon kernel for a :class:`~gpuperf.kernels.gluon.GluonFP8Config`, the Triton
    TMA kernel for a :class:`~gpuperf.kernels.PersistentConfig`."""
    gluon = isinstance(config, GluonFP8Config)
    if gluon:
        from gpuperf.kernels.gluon import matmul_fp8_blockwise as gluon_blockwise

        gluon_blockwise.check_config(config)
        require_gluon_hopper("matmul_fp8_blockwise with a Gluon config", a)
    else:
        require_tma("matmul_fp8_blockwise with a TMA config", a)
    if not tma_operands(a, b):
        raise ValueError(
            "a TMA or Gluon config needs operands a tensor descriptor can describe: a (M, K) and b "
            "(N, K) with unit strides along K, the other strides multiples of 16 bytes and 16-byte "
            f"aligned bases; got a of strides {a.stride()}, b of strides {b.stride()}"
        )
    if a.is_cuda:
        ensure_allocator()  # (the descriptors the kernel makes live in scratch memory)
    sms = num_sms(a.get_device())
    if gluon:
        kernel, grid, args, constexprs = gluon_blockwise.launch_arguments(
            c, a, b, scale_a, scale_b, config, sms
        )
        return Launch(kernel, grid, args, constexprs, config.num_warps, 1)
    (m, k), n = a.shape, b.shape[0]
    programs = min(sms, cdiv(m, config.block_m) * cdiv(n, config.block_n))
    args = (
        a, b, scale_a, scale_b, c, m, n, k, a.stride(0), b.stride(0), *scale_a.stride(),
        *scale_b.stride(), c.stride(0),
    )  # fmt: skip
    constexprs = (config.block_m, config.block_n, config.block_k, config.group_m, config.warp_specialize)
    return Launch(
        _matmul_fp8_blockwise_tma_kernel, (programs,), args, constexprs, config.num_warps, config.num_stages
    )


@op("gpuperf::matmul_fp8_blockwise", tensors=4)
def matmul_fp8_blockwise(
    a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor
) -> tuple[torch.Tensor, Launches]:
    """Return ``a @ b.T`` from block-scaled FP8 operands, as bfloat16: DeepSeek-V3's FP8 GEMM.

    ``out[m, n] = sum over K steps s of scale_a[m, s] * scale_b[n // 128, s] * (sum over
    the 128 k of step s of a[m, k] * b[n, k])``: each 128-wide step's partial product is
    scaled and added into a float32 accumulator (promoted accumulation), then rounded once.

    Args:
        a: ``(M, K)`` ``float8_e4m3fn``, activations quantized per 1 x 128 tile; any strides
            (K-major, stride 1 along K, is the fast layout). On a CUDA device of compute
            capability 8.9 or newer, or on the CPU when ``TRITON_INTERPRET=1``.
        b: ``(N, K)`` ``float8_e4m3fn``, a weight as ``nn.Linear`` keeps it (K-major),
            quantized per 128 x 128 block; any strides; ``a``'s device.
        scale_a: ``(M, ceil(K / 128))`` float32: the dequantization scale of each 1 x 128
            tile of ``a`` (``a ≈ a_fp8 * scale``); any strides (column-major, as DeepGEMM
            keeps it, included).
        scale_b: ``(ceil(N / 128), ceil(K / 128))`` float32, one per 128 x 128 block of ``b``.

    Returns:
        A new contiguous ``(M, N)`` bfloat16 tensor. ``K`` need not be a multiple of 128:
        the last step is partial, masked to zeros (no padding, no copy), and its scales
        cover the columns there are. ``M = 0`` or ``N = 0`` gives an empty tensor and
        ``K = 0`` zeros, without a launch.

    Raises:
        TypeError: ``a`` or ``b`` is not a ``float8_e4m3fn`` tensor, or a scale is not a
            float32 tensor.
        ValueError: ``a`` or ``b`` is not 2-D, their K differ, a scale's shape is not the
            one above, or the tensors are on different devices (or on the CPU while the
            interpreter is off).
        RuntimeError: the GPU has no FP8 tensor cores (compute capability below 8.9).

    Also registered as ``torch.ops.gpuperf.matmul_fp8_blockwise`` (``torch.library.triton_op``).

    Algorithm: tiled matmul in grouped tile order, one 128-deep step per scale block (on
    Hopper a persistent Gluon kernel that scales each step's partial product while the
    next one runs on the tensor cores: see the module's text); FLOPs ``2 * M * N * K``.
    Source: DeepSeek-V3 Technical Report (arXiv:2412.19437), 3.3.2.
    """
    return matmul_fp8_blockwise_launches(a, b, scale_a, scale_b)


__all__ = [
    "ACTIVATION_BLOCK",
    "FP8_BLOCKWISE_DTYPE",
    "WEIGHT_BLOCK",
    "BlockwiseConfig",
    "check_fp8_blockwise_operands",
    "fp8_blockwise_config",
    "matmul_fp8_blockwise",
    "matmul_fp8_blockwise_launches",
    "quantize_fp8_blockwise",
    "tma_operands",
]
