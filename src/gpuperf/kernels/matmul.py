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
from torch.library import triton_op

from gpuperf._runtime import gpu_slug
from gpuperf.kernels import _configs
from gpuperf.kernels._configs import MatmulConfig
from gpuperf.kernels._grid import cdiv
from gpuperf.kernels._launch import Launcher, fast_path_enabled, traced
from gpuperf.kernels._validation import HALF_DTYPES, check_tensors
from gpuperf.kernels.plans import planned

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


_launch = Launcher(_matmul_kernel)
_launch_traced = traced(_matmul_kernel)


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


@torch.compiler.assume_constant_result
def _config_fields(device_index: int, dtype: torch.dtype, m: int, n: int, k: int) -> tuple[int, ...]:
    # torch.compile calls this once per shape and keeps the result as a constant,
    # rather than tracing the lookup (which reads the committed sweep from disk).
    return _fields(_config_for(device_index, dtype, m, n, k))


def _fields(c: MatmulConfig) -> tuple[int, ...]:
    return (c.block_m, c.block_n, c.block_k, c.group_m, c.num_warps, c.num_stages)


def _matmul_into(c, a, b, bias, activation, config: MatmulConfig, launch, bind=False):
    """Launch ``c = activation(a @ b + bias)``; return the :class:`Bound` launch when ``bind``."""
    m, k = a.shape
    n = b.shape[1]
    if k == 0:
        # Nothing to read: the kernel's loop runs zero times and only the
        # epilogue runs, so any valid pointer stands in for A and B.
        a = b = c
    grid = (cdiv(m, config.block_m) * cdiv(n, config.block_n),)
    stride_am, stride_ak = a.stride() if k else (0, 0)
    stride_bk, stride_bn = b.stride() if k else (0, 0)
    runtime = (
        a,
        b,
        c,
        c if bias is None else bias,
        m,
        n,
        k,
        stride_am,
        stride_ak,
        stride_bk,
        stride_bn,
        c.stride(0),
        1 if bias is None else bias.stride(0),
    )
    constexprs = (
        config.block_m,
        config.block_n,
        config.block_k,
        config.group_m,
        k % config.block_k == 0,
        bias is not None,
        activation,
    )
    return launch(
        grid, runtime, constexprs, num_warps=config.num_warps, num_stages=config.num_stages, bind=bind
    )


@triton_op("gpuperf::matmul", mutates_args=())
def _matmul_op(
    a: torch.Tensor,
    b: torch.Tensor,
    bias: torch.Tensor | None,
    activation: str | None,
    block_m: int,
    block_n: int,
    block_k: int,
    group_m: int,
    num_warps: int,
    num_stages: int,
) -> torch.Tensor:
    config = MatmulConfig(block_m, block_n, block_k, group_m, num_warps, num_stages)
    c = torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)
    if c.numel():
        _matmul_into(c, a, b, bias, activation, config, _launch_traced)
    return c


class _MatmulPlan:
    """A checked, configured matmul for inputs like the ones it was made for
    (:mod:`gpuperf.kernels.plans`): ``plan(a, b)`` (or ``plan(a, b, bias)``) allocates the
    output and launches the kernel bound to everything but the four addresses. Where there is
    no binary to bind (Triton's interpreter), it launches through the cache with the checked
    activation and config instead."""

    __slots__ = ("activation", "bound", "config", "shape")

    def __init__(self, bound, shape: tuple[int, int], activation: str | None, config: MatmulConfig):
        self.bound, self.shape, self.activation, self.config = bound, shape, activation, config

    def __call__(self, a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
        c = a.new_empty(self.shape)
        if self.bound is None:
            _matmul_into(c, a, b, bias, self.activation, self.config, _launch)
        else:
            c_address = c.data_ptr()
            self.bound(a.data_ptr(), b.data_ptr(), c_address, c_address if bias is None else bias.data_ptr())
        return c


def _matmul(a, b, bias, activation, config) -> tuple[torch.Tensor, _MatmulPlan | None]:
    """The body of :func:`matmul`: every check, the config, the launch; ``(c, plan)``, with no
    plan where the output is empty, where K = 0 (the launch reads stand-in pointers, not the
    inputs) or while the fast path is off."""
    if bias is None:
        check_tensors(("a", "b"), (a, b), HALF_DTYPES)
    else:
        check_tensors(("a", "b", "bias"), (a, b, bias), HALF_DTYPES)
    if a.dim() != 2 or b.dim() != 2:
        raise ValueError(f"a and b must be 2-D, got a {tuple(a.shape)} and b {tuple(b.shape)}")
    m, k = a.shape
    k_b, n = b.shape
    if k != k_b:
        raise ValueError(
            f"inner dimensions must match: a is {tuple(a.shape)} and b is {tuple(b.shape)} ({k} != {k_b})"
        )
    if bias is not None and bias.shape != (n,):
        raise ValueError(f"bias must have shape ({n},) for N = {n}, got {tuple(bias.shape)}")
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {list(ACTIVATIONS)}, got {activation!r}")
    if config is not None and not isinstance(config, MatmulConfig):
        raise TypeError(f"config must be a gpuperf.kernels.MatmulConfig, got {type(config).__name__}")
    if torch.compiler.is_compiling():
        fields = _config_fields(a.get_device(), a.dtype, m, n, k) if config is None else _fields(config)
        return torch.ops.gpuperf.matmul(a, b, bias, activation, *fields), None
    launch_config = _config_for(a.get_device(), a.dtype, m, n, k) if config is None else config
    c = a.new_empty((m, n))
    if m == 0 or n == 0:
        return c, None
    bound = _matmul_into(c, a, b, bias, activation, launch_config, _launch, bind=k > 0)
    # Later calls with inputs like these launch from the plan (gpuperf.kernels.plans), but not
    # at K = 0, whose launch reads stand-in pointers instead of a and b.
    if k == 0 or not fast_path_enabled():
        return c, None
    return c, _MatmulPlan(bound, (m, n), activation, launch_config)


# A bias is a tensor input, keyed by its layout like a and b (its address changes from call to
# call): one planned op without a bias and one with.
@planned(tensors=2)
def _matmul_without_bias(a, b, activation, config) -> tuple[torch.Tensor, _MatmulPlan | None]:
    return _matmul(a, b, None, activation, config)


@planned(tensors=3)
def _matmul_with_bias(a, b, bias, activation, config) -> tuple[torch.Tensor, _MatmulPlan | None]:
    return _matmul(a, b, bias, activation, config)


def matmul(
    a: torch.Tensor,
    b: torch.Tensor,
    *,
    bias: torch.Tensor | None = None,
    activation: str | None = None,
    config: MatmulConfig | None = None,
) -> torch.Tensor:
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

    Also registered as ``torch.ops.gpuperf.matmul`` (``torch.library.triton_op``):
    inside ``torch.compile`` this function calls that op. Called eagerly, a call whose
    inputs are like ones already checked (shapes, strides, dtypes, device, 16-byte
    alignment, ``activation`` and ``config`` of the same types and values) launches from
    their plan (:mod:`gpuperf.kernels.plans`).

    Algorithm: tiled matmul with grouped program order, as Triton's tutorial 03;
    FLOPs ``2 * M * N * K``.
    """
    if bias is None:
        return _matmul_without_bias(a, b, activation, config)
    return _matmul_with_bias(a, b, bias, activation, config)


class _MatmulPlans:
    """The plans of :func:`matmul` (:mod:`gpuperf.kernels.plans`): those without a bias and
    those with one, counted and cleared together."""

    def __len__(self) -> int:
        return len(_matmul_without_bias.plans) + len(_matmul_with_bias.plans)

    def clear(self) -> None:
        _matmul_without_bias.plans.clear()
        _matmul_with_bias.plans.clear()


matmul.plans = _MatmulPlans()


__all__ = ["ACTIVATIONS", "MatmulConfig", "matmul", "matmul_config"]
