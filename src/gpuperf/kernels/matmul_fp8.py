"""FP8: quantize with a scale, and multiply FP8 matrices on the tensor cores.

An FP8 number has 8 bits: ``float8_e4m3fn`` (4 exponent bits, 3 mantissa bits,
largest finite value 448) keeps more precision and is used for weights and
activations; ``float8_e5m2`` (5 and 2, up to 57344) keeps more range and is used
for gradients. Neither covers the values of a real tensor on its own, so a tensor
is stored as ``x_fp8`` with a float32 scale, ``x ≈ x_fp8 * scale``: one scale per
tensor, or one per row (or column) so that one large row does not crush the
precision of all the others.

:func:`matmul_fp8` multiplies on the FP8 tensor cores (twice the bf16 rate on
Hopper), accumulating in float32, and applies both scales in the epilogue before
rounding once: ``(a · scale_a) @ (b · scale_b)``, the semantics of
``torch._scaled_mm`` (cuBLASLt). On Hopper it runs the persistent TMA kernel of
:mod:`gpuperf.kernels.matmul_persistent`; on Ada (compute capability 8.9, FP8
tensor cores without TMA) the persistent kernel with computed pointers. Those kernels are
the 16-bit matmul's own: the scales and the promotion are constexprs of one kernel body,
which serves both ops.

Sources: Micikevicius et al., "FP8 Formats for Deep Learning" (arXiv:2209.05433);
PyTorch's ``torch._scaled_mm``; NVIDIA Transformer Engine's per-tensor scaling recipe.
"""

from __future__ import annotations

from dataclasses import replace

import torch

from gpuperf._runtime import check_kernel_device, is_interpreter
from gpuperf.kernels import _persistent_configs
from gpuperf.kernels._matmul_checks import check_matmul_shapes
from gpuperf.kernels._persistent_configs import PersistentConfig
from gpuperf.kernels._validation import FLOAT_DTYPES, check_tensor, dtype_names
from gpuperf.kernels.device import capability, has_tma, require_tma, tuned_folder
from gpuperf.kernels.launch import Launches, op
from gpuperf.kernels.matmul_persistent import persistent_launch
from gpuperf.kernels.tma import check_tma_operands, tma_copy, tma_layout, tracing

#: The FP8 formats, with the largest finite value of each.
FP8_DTYPES: tuple[torch.dtype, ...] = (torch.float8_e4m3fn, torch.float8_e5m2)
#: Output dtypes of :func:`matmul_fp8`.
FP8_OUT_DTYPES: tuple[torch.dtype, ...] = (torch.bfloat16, torch.float16, torch.float32)


def to_fp8(
    x: torch.Tensor, *, axis: int | None = None, dtype: torch.dtype = torch.float8_e4m3fn
) -> tuple[torch.Tensor, torch.Tensor]:
    """Quantize ``x`` to FP8 with a float32 dequantization scale: ``x ≈ x_fp8.float() * scale``.

    The scale maps the largest magnitude of each slice onto the format's largest
    finite value (448 for e4m3fn, 57344 for e5m2): ``scale = amax / max``, so
    every value keeps as many mantissa bits as the format has. Values are divided
    by the scale in float32, clamped to ``[-max, max]`` (nothing beyond the range
    survives as inf) and rounded to nearest. A slice of zeros gets scale 1 (not 0,
    which would give NaN on the way back).

    Args:
        x: float32, float16 or bfloat16, on any device. With ``axis=None`` any shape;
            otherwise 2-D ``(M, N)``.
        axis: ``None``: one scale for the whole tensor, shape ``()``; ``-1`` (or 1):
            one per row, shape ``(M, 1)``; ``0``: one per column, shape ``(1, N)``.
        dtype: ``torch.float8_e4m3fn`` or ``torch.float8_e5m2``.

    Returns:
        ``(x_fp8, scale)``: ``x_fp8`` of ``x``'s shape in ``dtype``, ``scale`` float32.

    Raises:
        TypeError: ``x`` is not a float32/float16/bfloat16 tensor, or ``dtype`` is not an FP8 dtype.
        ValueError: ``axis`` is not None, -1, 0 or 1, ``x`` is not 2-D while ``axis``
            is given, or ``x`` holds inf or NaN (no finite scale maps it).

    Reads the slices' amax back to the host to check it is finite: one synchronization.
    """
    check_tensor("x", x, FLOAT_DTYPES)
    if dtype not in FP8_DTYPES:
        raise TypeError(f"dtype must be one of {dtype_names(FP8_DTYPES)}, got {dtype}")
    if axis is not None and (type(axis) is not int or axis not in (-1, 0, 1)):
        raise ValueError(f"axis must be None, -1, 0 or 1, got {axis!r}")
    if axis is not None and x.dim() != 2:
        raise ValueError(f"x must be 2-D (M, N) for axis={axis}, got shape {tuple(x.shape)}")
    finite_max = torch.finfo(dtype).max
    x32 = x.float()
    if axis is None:
        amax = x32.abs().amax() if x.numel() else x32.new_zeros(())
    else:
        amax = x32.abs().amax(dim=axis, keepdim=True)
    if not bool(torch.isfinite(amax).all()):
        raise ValueError("x holds inf or NaN: no finite scale can represent it in FP8")
    scale = torch.where(amax > 0, amax / finite_max, torch.ones_like(amax))
    x_fp8 = (x32 / scale).clamp(-finite_max, finite_max).to(dtype)
    return x_fp8, scale


def check_scale(name: str, scale, rows: int, cols: int, operand) -> None:
    """Check an FP8 operand's dequantization scale: a float32 tensor of shape ``()`` (one per
    tensor) or ``(rows, cols)`` (one per row of A, ``(M, 1)``, or per column of B,
    ``(1, N)``), on ``operand``'s device.

    Raises:
        TypeError: ``scale`` is not a tensor, or not float32.
        ValueError: its shape or its device is not one of those.
    """
    shapes = ((), (rows, cols))
    if not isinstance(scale, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(scale).__name__}")
    if scale.dtype != torch.float32:
        raise TypeError(f"{name} must be float32, got {str(scale.dtype).removeprefix('torch.')}")
    if tuple(scale.shape) not in shapes:
        raise ValueError(f"{name} must have shape () or {shapes[1]}, got {tuple(scale.shape)}")
    if scale.device != operand.device:
        raise ValueError(f"{name} must be on {operand.device} like its operand, got {scale.device}")


def fp8_config(
    a: torch.Tensor, b: torch.Tensor, which: str = "best", *, fast_accum: bool = False
) -> PersistentConfig:
    """The launch config :func:`matmul_fp8` picks for ``a @ b`` on this device (``which``:
    a rung of tutorial 06's ladder, as :func:`~gpuperf.kernels.matmul_persistent.persistent_config`),
    from the sweep of the accumulation ``fast_accum`` names: the two modes favour different
    tiles (promotion stalls the tensor cores once per step along K)."""
    if not has_tma(a) or tma_layout(a) is None or tma_layout(b) is None:
        # Ada (FP8 tensor cores, no TMA), or strides no descriptor can take: computed pointers.
        which = "pointer"
    slug = tuned_folder(a.get_device())
    accumulation = "fast" if fast_accum else "float32"
    m, k = a.shape
    tuned = _persistent_configs.tuned_config("matmul_fp8", slug, m, b.shape[1], k, which, accumulation)
    if tuned:
        return tuned
    if which == "pointer":
        return _persistent_configs.FP8_POINTER_DEFAULT
    return _persistent_configs.FP8_DEFAULT if fast_accum else _persistent_configs.FP8_PROMOTED_DEFAULT


def fit_output(config: PersistentConfig, out_dtype: torch.dtype) -> PersistentConfig:
    """``config`` with fewer pipeline stages when a float32 output would not fit beside them.

    The sweep tunes with bfloat16 outputs. For a float32 output Triton stages the whole
    ``BLOCK_M x BLOCK_N`` float32 tile through shared memory on its way to the store
    (on the H100, 128 x 256 x 128 with 3 stages asked for 278,552 bytes of the 232,448
    there are), so stages are dropped until the operands' stages and that tile fit.
    """
    if out_dtype != torch.float32:
        return config
    tile = config.block_m * config.block_n * 4
    stage = (config.block_m + config.block_n) * config.block_k
    stages = config.num_stages
    while stages > 1 and stages * stage + tile > _persistent_configs.SHARED_MEMORY_BYTES:
        stages -= 1
    return config if stages == config.num_stages else replace(config, num_stages=stages)


@op("gpuperf::matmul_fp8", tensors=("a", "b", "scale_a", "scale_b"))
def matmul_fp8(
    a: torch.Tensor,
    b: torch.Tensor,
    scale_a: torch.Tensor,
    scale_b: torch.Tensor,
    *,
    out_dtype: torch.dtype = torch.bfloat16,
    fast_accum: bool = False,
    config: PersistentConfig | None = None,
) -> tuple[torch.Tensor, Launches]:
    """Return ``(a · scale_a) @ (b · scale_b)`` from FP8 operands, accumulated in float32.

    The semantics of ``torch._scaled_mm(a, b, scale_a, scale_b, out_dtype=...,
    use_fast_accum=...)``, without its layout rule. Hopper's FP8 tensor cores read
    both operands K-major: ``a`` row-major and ``b`` column-major (``b = bt.t()``
    for a row-major ``bt`` of shape (N, K)), as ``torch._scaled_mm`` requires. An
    operand in another layout, or one that TMA cannot describe (see
    :func:`~gpuperf.kernels.tma.tma_layout`: a contiguous view whose base is not 16-byte
    aligned among them), is copied into that layout first (``M * K`` or ``K * N`` bytes,
    read and written once: :func:`~gpuperf.kernels.tma.tma_copy`), unless TMA could not
    describe the copy either (``K`` bytes not a multiple of 16): computed pointers read it.

    Args:
        a: ``(M, K)``, ``torch.float8_e4m3fn`` or ``torch.float8_e5m2``, any strides.
        b: ``(K, N)``, an FP8 dtype (it may differ from ``a``'s), same device, any strides.
        scale_a: float32 dequantization scale of ``a``: shape ``()`` (per tensor) or
            ``(M, 1)`` (per row), as :func:`to_fp8` returns.
        scale_b: float32, shape ``()`` or ``(1, N)`` (per column).
        out_dtype: ``torch.bfloat16`` (default), ``torch.float16`` or ``torch.float32``.
        fast_accum: let Hopper's tensor cores keep FP8 sums in their fast,
            reduced-precision accumulator over all of K (as ``use_fast_accum=True``:
            faster, with about twice the error; tutorial 05 measures both). By default
            the partial sums are promoted to float32 once per step along K, every
            ``config.block_k`` products (128 or 256, as the sweep chose), as cuBLASLt
            promotes without fast accumulation.
        config: launch configuration; by default the committed sweep's choice on
            Hopper (:func:`fp8_config`).

    Returns:
        A new contiguous ``(M, N)`` tensor of ``out_dtype``: scaled, then rounded
        once. On Hopper the tensor cores add FP8 products in an accumulator of about
        14 significant bits, promoted to float32 every ``config.block_k`` products
        (or never, with ``fast_accum``), so even a float32 output carries that
        accumulator's rounding, as ``torch._scaled_mm``'s does. ``K = 0`` gives zeros.

    Raises:
        TypeError: an operand is not a tensor or not FP8, a scale is not a float32
            tensor, ``out_dtype`` is not supported, or ``config`` is not a
            :class:`~gpuperf.kernels.PersistentConfig`.
        ValueError: an operand is not 2-D, the inner dimensions differ, a scale has
            the wrong shape or device, the operands are on different devices (or on
            the CPU while the interpreter is off), or ``config`` asks for TMA that
            cannot describe an operand.
        RuntimeError: the GPU has no FP8 tensor cores (compute capability below 8.9),
            or ``config`` asks for TMA on a GPU without it (below 9.0).

    Registered as ``torch.ops.gpuperf.matmul_fp8`` (``torch.library.triton_op``, taking the
    config's fields): inside ``torch.compile`` this function calls it, and the graph holds
    the computed-pointer kernel (a graph cannot hold a host TMA descriptor), with the sweep's
    fastest pointer config by default, ``config``'s tiles otherwise; the checks are the same.
    Called eagerly, a call whose operands are like ones already checked (shapes, strides,
    dtypes, device, 16-byte alignment, the options) and needed no copy launches from their
    plan (:mod:`gpuperf.kernels.launch`), which describes the new operands again.

    Algorithm: persistent tiled matmul with a scaling epilogue; FLOPs ``2 * M * N * K``.
    """
    for name, t in (("a", a), ("b", b)):  # (a and b may be of different FP8 formats)
        check_tensor(name, t, FP8_DTYPES)
    if a.device != b.device:
        raise ValueError(f"tensors must be on the same device, got a on {a.device}, b on {b.device}")
    check_kernel_device("a", a)
    check_matmul_shapes(a, b)
    m, k = a.shape
    n = b.shape[1]
    check_scale("scale_a", scale_a, m, 1, a)
    check_scale("scale_b", scale_b, 1, n, b)
    if type(fast_accum) is not bool:
        raise TypeError(f"fast_accum must be a bool, got {type(fast_accum).__name__}")
    if out_dtype not in FP8_OUT_DTYPES:
        raise TypeError(f"out_dtype must be one of {dtype_names(FP8_OUT_DTYPES)}, got {out_dtype}")
    if config is not None and not isinstance(config, PersistentConfig):
        raise TypeError(f"config must be a gpuperf.kernels.PersistentConfig, got {type(config).__name__}")
    if a.is_cuda and not is_interpreter():
        major, minor = capability(a.get_device())
        if (major, minor) < (8, 9):
            raise RuntimeError(
                "matmul_fp8 needs FP8 tensor cores: compute capability 8.9 (Ada) or newer; "
                f"{torch.cuda.get_device_name(a.device)} has {major}.{minor}"
            )
    if m == 0 or n == 0 or k == 0:
        return torch.zeros((m, n), dtype=out_dtype, device=a.device), ()
    if has_tma(a):
        # K-major operands: the layout the FP8 tensor cores read, and one TMA describes. (A
        # copy leaves no plan: the launch no longer reads the caller's operand.)
        a, b = tma_copy(a, "row"), tma_copy(b, "col")
    chosen = config or fit_output(fp8_config(a, b, fast_accum=fast_accum), out_dtype)
    if chosen.tma:
        require_tma("matmul_fp8 with a TMA config", a)
        check_tma_operands(("a", "b"), (a, b))
    if config is None and tracing(a, b):  # what a graph can launch, tuned
        chosen = fit_output(fp8_config(a, b, "pointer", fast_accum=fast_accum), out_dtype)
    c = torch.empty((m, n), dtype=out_dtype, device=a.device)
    # (A scale's flat view has the scale's address: a plan reads the caller's scale.)
    return c, (persistent_launch(c, a, b, chosen, scale_a.reshape(-1), scale_b.reshape(-1), fast_accum),)


def forget_tuned_configs() -> None:
    """Drop the cached sweeps and plans: the next call reads ``kernels/tuned`` again."""
    _persistent_configs.forget_tuned()
    matmul_fp8.plans.clear()


__all__ = ["FP8_DTYPES", "FP8_OUT_DTYPES", "check_scale", "matmul_fp8", "to_fp8"]
