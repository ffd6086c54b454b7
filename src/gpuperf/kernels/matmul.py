"""Matrix multiplication with a fused epilogue: ``act(A @ B + bias)`` in one kernel.

Each program computes one ``BLOCK_M x BLOCK_N`` tile of C. It walks K in steps of
``BLOCK_K``, loading a tile of A and a tile of B into shared memory (pipelined
``num_stages`` deep) and multiplying them on the tensor cores with ``tl.dot``,
accumulating in float32 registers. Every element of A is loaded
``N / BLOCK_N`` times and every element of B ``M / BLOCK_M`` times instead of
``N`` and ``M`` times: the tile size sets the arithmetic intensity.

Programs are ordered in groups of ``GROUP_M`` rows of tiles, so that programs
running at the same time share tiles of A and B in L2 (Triton's matmul tutorial,
https://triton-lang.org/main/getting-started/tutorials/03-matrix-multiplication.html).
The epilogue adds the bias and applies the activation in float32 while the tile
is still in registers, then rounds once to the output dtype: the unfused
alternative writes C and reads it back once per elementwise op.
"""

from __future__ import annotations

import functools

import torch
import triton
import triton.language as tl

from gpuperf._runtime import gpu_slug
from gpuperf.kernels import _configs
from gpuperf.kernels._configs import MatmulConfig
from gpuperf.kernels._grid import cdiv
from gpuperf.kernels._matmul_checks import check_matmul_shapes
from gpuperf.kernels._validation import HALF_DTYPES, check_tensors
from gpuperf.kernels.launch import Launch, Launches, op

#: Epilogue activations, by name; the kernel takes the name as a constexpr.
ACTIVATIONS = (None, "relu", "leaky_relu", "gelu")
LEAKY_RELU_SLOPE = tl.constexpr(0.01)
# GELU, tanh form: 0.5 x (1 + tanh(u)) = x * sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3);
# sigmoid(2u) = 1 / (1 + 2^(-2u log2 e)), with exp2 the hardware instruction.
GELU_2U_LOG2E = tl.constexpr(2 * 0.7978845608028654 * 1.4426950408889634)
GELU_CUBIC = tl.constexpr(0.044715)


@triton.jit
def _matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    bias_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_bias,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    EVEN_K: tl.constexpr,
    HAS_BIAS: tl.constexpr,
    ACTIVATION: tl.constexpr,
):
    # Grouped order: walk GROUP_M rows of tiles column by column, so the programs
    # in flight together reuse the same few tiles of A and of B from L2.
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    # Rows and columns past the edge wrap around (% M, % N): every load stays in
    # bounds without a mask, and the store below drops the wrapped results. When
    # M or N is a multiple of 16 (Triton specializes on that), the compiler still
    # knows the offsets run in contiguous runs of 16 and keeps 16-byte loads.
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    # int64: row * stride passes 2**31 for matrices over 2 G elements.
    offs_k = tl.arange(0, BLOCK_K).to(tl.int64)
    a_ptrs = a_ptr + offs_am[:, None].to(tl.int64) * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_bn[None, :].to(tl.int64) * stride_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        if EVEN_K:
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
        else:
            # Zeros past the end of K add nothing to the dot product.
            k_left = K - k * BLOCK_K
            a = tl.load(a_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    # Epilogue, in float32 on the tile in registers.
    offs_cm = pid_m.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    if HAS_BIAS:
        bias = tl.load(bias_ptr + offs_cn * stride_bias, mask=offs_cn < N, other=0.0)
        acc += bias.to(tl.float32)[None, :]
    if ACTIVATION == "relu":
        acc = tl.maximum(acc, 0.0)
    elif ACTIVATION == "leaky_relu":
        acc = tl.where(acc >= 0, acc, acc * LEAKY_RELU_SLOPE)
    elif ACTIVATION == "gelu":
        u2 = (acc + GELU_CUBIC * acc * acc * acc) * GELU_2U_LOG2E
        acc = acc / (1.0 + tl.exp2(-u2))
    c_ptrs = c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=c_mask)


@functools.cache
def _gpu_slug(device_index: int) -> str:
    return gpu_slug(torch.cuda.get_device_name(device_index))


@functools.lru_cache(maxsize=4096)
def _config_for(device_index: int, dtype: torch.dtype, m: int, n: int, k: int) -> MatmulConfig:
    slug = None if device_index < 0 else _gpu_slug(device_index)
    return _configs.matmul_config(slug, str(dtype).removeprefix("torch."), m, n, k)


def forget_tuned_configs() -> None:
    """Drop every cached config choice and plan: the next call reads the tuning sweeps again."""
    _configs._tuned_table.cache_clear()
    _config_for.cache_clear()
    matmul.plans.clear()


def matmul_config(a: torch.Tensor, b: torch.Tensor) -> MatmulConfig:
    """The launch config :func:`matmul` picks for ``a @ b`` (from the committed tuning sweep)."""
    return _config_for(a.get_device(), a.dtype, a.shape[0], b.shape[1], a.shape[1])


@op("gpuperf::matmul", tensors=("a", "b", "bias"))
def matmul(
    a: torch.Tensor,
    b: torch.Tensor,
    *,
    bias: torch.Tensor | None = None,
    activation: str | None = None,
    config: MatmulConfig | None = None,
) -> tuple[torch.Tensor, Launches]:
    """Return ``activation(a @ b + bias)``, computed by one Triton kernel.

    Args:
        a: ``(M, K)``, float16 or bfloat16, any strides (a transposed view is read
            in place, without a copy); on a CUDA device (or on the CPU when
            ``TRITON_INTERPRET=1``).
        b: ``(K, N)``, the same dtype and device as ``a``, any strides.
        bias: optional ``(N,)`` tensor of ``a``'s dtype, any stride (a strided
            view or an expanded scalar is read in place), added to every row in
            float32 before the activation.
        activation: ``None``, ``"relu"``, ``"leaky_relu"`` (slope 0.01) or
            ``"gelu"`` (the tanh approximation, as
            ``torch.nn.functional.gelu(x, approximate="tanh")``), applied in float32.
        config: the launch configuration (tile sizes, group size, warps, stages);
            by default the one the committed tuning sweep chose for the nearest
            benchmarked shape on this GPU (:func:`matmul_config`).

    Returns:
        A new contiguous ``(M, N)`` tensor of ``a``'s dtype, accumulated in float32
        and rounded once. ``K = 0`` gives ``activation(bias)`` (zeros without a
        bias), as ``torch.matmul`` does; ``M = 0`` or ``N = 0`` gives an empty
        tensor without a launch.

    Raises:
        TypeError: ``a``, ``b`` or ``bias`` is not a tensor, a dtype is not float16
            or bfloat16, the dtypes differ, or ``config`` is not a
            :class:`~gpuperf.kernels.MatmulConfig`.
        ValueError: ``a`` or ``b`` is not 2-D, the inner dimensions differ,
            ``bias`` is not ``(N,)``, the tensors are on different devices (or on
            the CPU while the interpreter is off), or ``activation`` is unknown.

    Also registered as ``torch.ops.gpuperf.matmul`` (``torch.library.triton_op``, taking
    the config's fields, each None for the tuned config): inside ``torch.compile`` this
    function calls that op. Called eagerly, a call whose inputs are like ones already
    checked (shapes, strides, dtypes, device, 16-byte alignment, a bias or none,
    ``activation`` and ``config`` of the same types and values) launches from their plan
    (:mod:`gpuperf.kernels.launch`).

    Algorithm: tiled matmul with grouped program order, as Triton's tutorial 03;
    FLOPs ``2 * M * N * K``.
    """
    if bias is None:
        check_tensors(("a", "b"), (a, b), HALF_DTYPES)
    else:
        check_tensors(("a", "b", "bias"), (a, b, bias), HALF_DTYPES)
    check_matmul_shapes(a, b)
    m, k = a.shape
    n = b.shape[1]
    if bias is not None and bias.shape != (n,):
        raise ValueError(f"bias must have shape ({n},) for N = {n}, got {tuple(bias.shape)}")
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {list(ACTIVATIONS)}, got {activation!r}")
    if config is not None and not isinstance(config, MatmulConfig):
        raise TypeError(f"config must be a gpuperf.kernels.MatmulConfig, got {type(config).__name__}")
    config = config or _config_for(a.get_device(), a.dtype, m, n, k)
    c = a.new_empty((m, n))
    if m == 0 or n == 0:
        return c, ()
    if k == 0:
        # Nothing to read: the kernel's loop runs zero times and only the epilogue runs, so
        # the output stands in for A and B (a plan replays that on the new output).
        a = b = c
    runtime = (
        a, b, c, c if bias is None else bias, m, n, k,
        *(a.stride() if k else (0, 0)), *(b.stride() if k else (0, 0)),
        c.stride(0), 1 if bias is None else bias.stride(0),
    )  # fmt: skip
    constexprs = (
        config.block_m, config.block_n, config.block_k, config.group_m,
        k % config.block_k == 0, bias is not None, activation,
    )  # fmt: skip
    grid = (cdiv(m, config.block_m) * cdiv(n, config.block_n),)
    return c, (Launch(_matmul_kernel, grid, runtime, constexprs, config.num_warps, config.num_stages),)


__all__ = ["ACTIVATIONS", "MatmulConfig", "matmul", "matmul_config"]
