"""Every benchmark on the site, declared once, and the types that declare them.

A :class:`Benchmark` names its providers over one input generator, a baseline,
x values, optional axes (a dtype, say), a metric and the ceiling to read it
against. The same declaration serves the tutorials (measured live or rendered
from the committed record), the ``bench`` command that refreshes the records on
a GPU machine (``python -m gpuperf.bench`` runs :data:`ALL`), and the tests,
which check the declarations against the committed records.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from gpuperf import reference
from gpuperf.bench import hardware, metrics
from gpuperf.bench.timing import TIMING_METHODS


@dataclass(frozen=True)
class Provider:
    """One implementation being measured.

    Attributes:
        key: stable id, also the provider's colour on every plot (``"triton"``, ``"torch"``, ...).
        label: legend label.
        make: ``make(*inputs) -> fn`` returning a zero-argument callable that runs the
            implementation on ``inputs`` and returns its output. Per-size setup
            (``torch.compile`` of a fresh function, say) belongs in ``make``.
        config: optional ``config(*inputs) -> dict | None``: the launch or autotune
            configuration this provider runs on ``inputs`` (a JSON-able dict, e.g.
            ``{"BLOCK_M": 128, "num_warps": 8}``), recorded in each row. It is
            called after the provider's first call, so an autotuner has chosen.
    """

    key: str
    label: str
    make: Callable[..., Callable[[], Any]]
    config: Callable[..., dict | None] | None = None


def call(fn: Callable[..., Any]) -> Callable[..., Callable[[], Any]]:
    """The plain provider factory: ``make(*inputs)`` returns ``lambda: fn(*inputs)``."""
    return lambda *inputs: lambda: fn(*inputs)


def _x_kind(x) -> str | None:
    if isinstance(x, bool):
        return None
    if isinstance(x, int):
        return "size"
    if isinstance(x, tuple) and x and all(isinstance(d, int) and not isinstance(d, bool) for d in x):
        return "shape"
    if isinstance(x, str):
        return "name"
    return None


@dataclass(frozen=True)
class Benchmark:
    """A sweep over x values and axis combinations comparing several providers.

    Attributes:
        name: record file name (``<name>.json``) and id.
        title: plot title.
        x_name: name of the swept parameter (``"n_elements"``, ``"shape"``).
        x_label: axis label for it.
        x_values: what is measured on a GPU, all of one kind: ints (a size, drawn
            on a log2 axis), tuples of ints (shapes such as ``(M, N, K)``) or
            strings (names, e.g. of ops); shapes and strings are drawn as
            categories in the order given here.
        make_inputs: ``make_inputs(x, device, **axes) -> tuple of inputs``; random, never zeros.
        reference: ``reference(*inputs)``, in higher precision; every provider's
            output must match it before its time is kept.
        providers: the implementations; the first is the one under study.
        baseline: key of the provider that ratios are taken against.
        metric: ``"GB/s"``, ``"TFLOP/s"`` or ``"us/call"`` (host microseconds per
            call, lower is better; goes with ``timer="host"``).
        bytes: ``bytes(x, **axes)`` -> the least bytes one call must move.
        flops: ``flops(x, **axes)`` -> the FLOPs of one call. Both are recorded in
            every row whatever the metric, so a roofline can place any record.
        ceiling: key into the measured ceilings (:data:`gpuperf.bench.hardware.CEILINGS`,
            e.g. ``"copy_gbps"``), or ``ceiling(**axes) -> key`` when it depends
            on the axes (``"bf16_tflops"`` for bfloat16, ...), or None: no
            ceiling line and no % of it.
        sources: files under ``src/gpuperf`` whose change makes a committed record stale.
        axes: declared axes, each ``(name, values)``, e.g.
            ``(("dtype", ("float16", "bfloat16")),)``; every combination is
            measured at every x, and passed by keyword to ``make_inputs``,
            ``bytes``, ``flops`` and ``ceiling``.
        timer: ``"device"``: GPU time by :func:`gpuperf.bench.timing.time_ms`; or
            ``"host"``: host time per call by :func:`gpuperf.bench.timing.host_time_ms`.
        reduction: optional ``reduction(x, **axes) -> int``: how many products each
            output element sums (a matmul's K), so the check against the reference
            allows the rounding that grows with it (:func:`gpuperf.testing.reduction_atol`).

    Raises:
        ValueError: the declaration is inconsistent; the message names the field.
    """

    name: str
    title: str
    x_name: str
    x_label: str
    x_values: tuple
    make_inputs: Callable[..., tuple]
    reference: Callable[..., Any]
    providers: tuple[Provider, ...]
    baseline: str
    metric: str
    bytes: Callable[..., float]
    flops: Callable[..., float]
    ceiling: str | Callable[..., str | None] | None
    sources: tuple[str, ...]
    axes: tuple[tuple[str, tuple], ...] = ()
    timer: str = "device"
    reduction: Callable[..., int] | None = None

    def __post_init__(self):
        keys = [p.key for p in self.providers]
        if not keys:
            raise ValueError("providers must not be empty")
        if len(set(keys)) != len(keys):
            raise ValueError(f"providers must have unique keys, got {keys}")
        if self.baseline not in keys:
            raise ValueError(f"baseline must be one of the provider keys {keys}, got {self.baseline!r}")
        if self.metric not in metrics.METRICS:
            raise ValueError(f"metric must be one of {list(metrics.METRICS)}, got {self.metric!r}")
        if self.timer not in TIMING_METHODS:
            raise ValueError(f"timer must be one of {list(TIMING_METHODS)}, got {self.timer!r}")
        kinds = {_x_kind(x) for x in self.x_values}
        if not self.x_values or None in kinds or len(kinds) > 1:
            raise ValueError(
                "x_values must be a non-empty tuple of ints, of tuples of ints (shapes) or of strings, "
                f"all of one kind; got {self.x_values!r}"
            )
        if len(set(self.x_values)) != len(self.x_values):
            raise ValueError(f"x_values must be unique, got {self.x_values!r}")
        names = [axis[0] for axis in self.axes]
        if len(set(names)) != len(names) or {"device", "x"} & set(names):
            raise ValueError(f"axes must have unique names other than 'x' and 'device', got {names}")
        for name, values in self.axes:
            if not values or not all(isinstance(v, (str, int, float)) for v in values):
                raise ValueError(
                    f"axes: {name!r} needs a non-empty tuple of str/int/float values, got {values!r}"
                )
        for combo in self.combos():
            try:
                key = self.ceiling_key(**combo)
            except TypeError as err:
                shown = ", ".join(f"{k}={v!r}" for k, v in combo.items())
                raise ValueError(f"ceiling({shown}) failed: {err}") from None
            if key is None:
                continue
            if key not in hardware.CEILINGS:
                raise ValueError(f"ceiling must be a key of {list(hardware.CEILINGS)} or None, got {key!r}")
            if hardware.CEILINGS[key][1] != self.metric:
                raise ValueError(
                    f"ceiling {key!r} is in {hardware.CEILINGS[key][1]}, not in the metric {self.metric}"
                )

    @property
    def subject(self) -> Provider:
        """The provider under study (the first)."""
        return self.providers[0]

    def combos(self) -> list[dict]:
        """One ``{axis name: value}`` per combination of the axes, in declared order
        (``[{}]`` without axes)."""
        names = [name for name, _ in self.axes]
        return [
            dict(zip(names, values, strict=True)) for values in itertools.product(*(v for _, v in self.axes))
        ]

    def ceiling_key(self, **axes) -> str | None:
        """The ceiling that the combination ``axes`` is read against (None: no ceiling)."""
        return self.ceiling(**axes) if callable(self.ceiling) else self.ceiling


def _kernels():
    # Imported on first use: importing the catalog must not import Triton kernels.
    import gpuperf.kernels

    return gpuperf.kernels


def _vector_add(x, y):
    return _kernels().vector_add(x, y)


def _softmax(x):
    return _kernels().softmax(x)


def _compiled(fn):
    """Provider factory for ``torch.compile(fn)``: a fresh compilation per size, so
    each size gets a kernel specialised to it (no dynamic-shape recompile) and the
    recompile limit is never reached."""

    def make(*inputs):
        torch._dynamo.reset()
        compiled = torch.compile(fn, dynamic=False)
        return lambda: compiled(*inputs)

    return make


def _random_pair(n: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    return (torch.randn(n, device=device), torch.randn(n, device=device))


VECTOR_ADD = Benchmark(
    name="vector_add",
    title="Vector add, float32",
    x_name="n_elements",
    x_label="elements per tensor",
    x_values=tuple(2**p for p in range(12, 29)),
    make_inputs=_random_pair,
    reference=reference.vector_add_ref,
    providers=(
        Provider("triton", "Triton (gpuperf.kernels.vector_add)", call(_vector_add)),
        Provider("torch", "PyTorch x + y", call(torch.add)),
    ),
    baseline="torch",
    metric="GB/s",
    bytes=lambda n: metrics.elementwise_bytes(n, element_size=4),
    flops=metrics.vector_add_flops,
    ceiling="copy_gbps",
    sources=("kernels/vector_add.py", "kernels/_configs.py"),
)

SOFTMAX_ROWS = 4096
SOFTMAX_LONG_ROWS = 1024

_SOFTMAX_PROVIDERS = (
    Provider("triton", "Triton (gpuperf.kernels.softmax)", call(_softmax)),
    Provider("torch", "torch.softmax", call(lambda x: torch.softmax(x, dim=-1))),
    Provider("compile", "torch.compile(naive)", _compiled(reference.softmax_naive)),
    Provider("naive", "naive eager PyTorch", call(reference.softmax_naive)),
)

SOFTMAX = Benchmark(
    name="softmax",
    title=f"Softmax, float32, {SOFTMAX_ROWS} rows",
    x_name="n_cols",
    x_label="row length (columns)",
    x_values=tuple(2**p for p in range(8, 16)),
    make_inputs=lambda n, device: (torch.randn(SOFTMAX_ROWS, n, device=device),),
    reference=reference.softmax_ref,
    providers=_SOFTMAX_PROVIDERS,
    baseline="torch",
    metric="GB/s",
    bytes=lambda n: metrics.softmax_bytes(SOFTMAX_ROWS, n, element_size=4),
    flops=lambda n: metrics.softmax_flops(SOFTMAX_ROWS, n),
    ceiling="copy_gbps",
    sources=("kernels/softmax.py", "kernels/_configs.py"),
)

SOFTMAX_LONG = Benchmark(
    name="softmax_long_rows",
    title=f"Softmax on long rows, float32, {SOFTMAX_LONG_ROWS} rows",
    x_name="n_cols",
    x_label="row length (columns)",
    x_values=(65536, 131072, 262144),
    make_inputs=lambda n, device: (torch.randn(SOFTMAX_LONG_ROWS, n, device=device),),
    reference=reference.softmax_ref,
    providers=_SOFTMAX_PROVIDERS,
    baseline="torch",
    metric="GB/s",
    bytes=lambda n: metrics.softmax_bytes(SOFTMAX_LONG_ROWS, n, element_size=4),
    flops=lambda n: metrics.softmax_flops(SOFTMAX_LONG_ROWS, n),
    ceiling="copy_gbps",
    sources=("kernels/softmax.py", "kernels/_configs.py"),
)

# --- row mean (the profiling guide) ------------------------------------------------

ROW_MEAN_ROWS = 4096


def _row_mean(x):
    return _kernels().row_mean(x)


def _row_mean_cuda(x):
    from gpuperf.kernels.row_mean_cuda import row_mean_cuda

    return row_mean_cuda(x)


ROW_MEAN = Benchmark(
    name="row_mean",
    title=f"Row mean, float32, {ROW_MEAN_ROWS} rows",
    x_name="n_cols",
    x_label="row length (columns)",
    x_values=tuple(2**p for p in range(8, 16)),
    make_inputs=lambda n, device: (torch.randn(ROW_MEAN_ROWS, n, device=device),),
    reference=reference.row_mean_ref,
    providers=(
        Provider("triton", "Triton (gpuperf.kernels.row_mean)", call(_row_mean)),
        Provider("cuda", "CUDA C++ via load_inline (row_mean_cuda)", call(_row_mean_cuda)),
        Provider("torch", "x.mean(dim=-1)", call(lambda x: x.mean(dim=-1))),
    ),
    baseline="torch",
    metric="GB/s",
    bytes=lambda n: metrics.row_mean_bytes(ROW_MEAN_ROWS, n, element_size=4),
    flops=lambda n: metrics.row_mean_flops(ROW_MEAN_ROWS, n),
    ceiling="copy_gbps",
    sources=("kernels/row_mean.py", "kernels/row_mean_cuda.py"),
)

# --- matmul -------------------------------------------------------------------------

#: Square products from launch-bound to compute-bound, as (M, N, K).
MATMUL_SQUARE = tuple((n, n, n) for n in (256, 512, 1024, 2048, 4096, 8192))
#: Products from a real model, Llama 3 8B (hidden 4096, MLP 14336, 8 KV heads of
#: 128): the MLP up-projection and the fused QKV projection over 8192 tokens, and
#: the up-projection at decode time, 16 tokens (skinny: memory-bound on the weights).
MATMUL_MODEL = ((8192, 14336, 4096), (8192, 6144, 4096), (16, 14336, 4096))
MATMUL_SHAPES = MATMUL_SQUARE + MATMUL_MODEL
MATMUL_DTYPES = ("float16", "bfloat16")

_TFLOPS_CEILING = {"float16": "fp16_tflops", "bfloat16": "bf16_tflops"}
_ELEMENT_SIZE = {"float16": 2, "bfloat16": 2}


def _matmul_operands(shape, device, dtype="bfloat16", bias=False):
    m, n, k = shape
    dt = getattr(torch, dtype)
    a = torch.randn(m, k, device=device, dtype=dt)
    b = torch.randn(k, n, device=device, dtype=dt)
    return (a, b, torch.randn(n, device=device, dtype=dt)) if bias else (a, b)


def _matmul(a, b):
    return _kernels().matmul(a, b)


def _matmul_config(a, b, **overrides):
    """The config ``matmul`` picks for ``a @ b``, with ``overrides`` (``group_m=1``, say)."""
    from dataclasses import replace

    from gpuperf.kernels.matmul import matmul_config

    return replace(matmul_config(a, b), **overrides)


def _max_autotune(fn):
    """Provider factory for Inductor's ``max-autotune`` of ``fn``, its GEMM templates
    restricted to Triton (``max_autotune_gemm_backends="TRITON"``) so that it is a
    Triton-vs-Triton comparison, without CUDA graphs (which would add input copies)."""

    def make(*inputs):
        import torch._inductor.config as inductor_config

        torch._dynamo.reset()
        with inductor_config.patch(max_autotune_gemm_backends="TRITON"):
            compiled = torch.compile(fn, mode="max-autotune-no-cudagraphs", dynamic=False)
            compiled(*inputs)  # autotune now, under the patch
        return lambda: compiled(*inputs)

    return make


def _matmul_k(shape, **axes):
    """K, the length of the reduction behind each output element (for the tolerance)."""
    return shape[2]


MATMUL = Benchmark(
    name="matmul",
    title="Matmul C = A @ B",
    x_name="shape",
    x_label="shape (M×N×K)",
    x_values=MATMUL_SHAPES,
    make_inputs=_matmul_operands,
    reference=reference.matmul_ref,
    providers=(
        Provider(
            "triton",
            "Triton (gpuperf.kernels.matmul)",
            call(_matmul),
            config=lambda a, b: _matmul_config(a, b).as_dict(),
        ),
        Provider("cublas", "cuBLAS (torch.matmul)", call(torch.matmul)),
        Provider("compile", "torch.compile max-autotune (Triton templates)", _max_autotune(torch.matmul)),
    ),
    baseline="cublas",
    metric="TFLOP/s",
    bytes=lambda shape, dtype: metrics.matmul_bytes(*shape, _ELEMENT_SIZE[dtype]),
    flops=lambda shape, dtype: metrics.matmul_flops(*shape),
    ceiling=lambda dtype: _TFLOPS_CEILING[dtype],
    sources=("kernels/matmul.py", "kernels/_configs.py", "kernels/_launch.py"),
    axes=(("dtype", MATMUL_DTYPES),),
    reduction=_matmul_k,
)

#: Shapes for the fused epilogue: a square product at two sizes and the MLP up-projection.
MATMUL_EPILOGUE_SHAPES = ((4096, 4096, 4096), (8192, 8192, 8192), (8192, 14336, 4096))

MATMUL_EPILOGUE = Benchmark(
    name="matmul_epilogue",
    title="Matmul + bias + GELU, bfloat16",
    x_name="shape",
    x_label="shape (M×N×K)",
    x_values=MATMUL_EPILOGUE_SHAPES,
    make_inputs=lambda shape, device: _matmul_operands(shape, device, "bfloat16", bias=True),
    reference=lambda a, b, bias: reference.matmul_ref(a, b, bias, "gelu"),
    providers=(
        Provider(
            "triton",
            "Triton, epilogue fused (gpuperf.kernels.matmul)",
            call(lambda a, b, bias: _kernels().matmul(a, b, bias=bias, activation="gelu")),
            config=lambda a, b, bias: _matmul_config(a, b).as_dict(),
        ),
        Provider("torch", "cuBLAS, then eager bias and GELU", call(reference.matmul_epilogue_eager)),
        Provider("compile", "torch.compile of the eager code", _compiled(reference.matmul_epilogue_eager)),
    ),
    baseline="torch",
    metric="TFLOP/s",
    bytes=lambda shape: metrics.matmul_bytes(*shape, 2, bias=True),
    flops=lambda shape: metrics.matmul_flops(*shape),
    ceiling="bf16_tflops",
    sources=("kernels/matmul.py", "kernels/_configs.py", "kernels/_launch.py"),
    reduction=_matmul_k,
)

MATMUL_ORDER = Benchmark(
    name="matmul_order",
    title="Program order: grouped vs row-major, float16",
    x_name="shape",
    x_label="shape (M×N×K)",
    x_values=((4096, 4096, 4096), (8192, 8192, 8192), (16384, 16384, 16384), (8192, 14336, 4096)),
    make_inputs=lambda shape, device: _matmul_operands(shape, device, "float16"),
    reference=reference.matmul_ref,
    providers=(
        Provider(
            "triton",
            "grouped order (GROUP_M = 8)",
            call(lambda a, b: _kernels().matmul(a, b, config=_matmul_config(a, b, group_m=8))),
            config=lambda a, b: _matmul_config(a, b, group_m=8).as_dict(),
        ),
        Provider(
            "triton_rowmajor",
            "row-major order (GROUP_M = 1)",
            call(lambda a, b: _kernels().matmul(a, b, config=_matmul_config(a, b, group_m=1))),
            config=lambda a, b: _matmul_config(a, b, group_m=1).as_dict(),
        ),
    ),
    baseline="triton_rowmajor",
    metric="TFLOP/s",
    bytes=lambda shape: metrics.matmul_bytes(*shape, 2),
    flops=lambda shape: metrics.matmul_flops(*shape),
    ceiling="fp16_tflops",
    sources=("kernels/matmul.py", "kernels/_configs.py"),
    reduction=_matmul_k,
)

# --- host time per call ---------------------------------------------------------------

#: The sources of the persistent matmuls (tutorials 05 and 06), named by several benchmarks.
_PERSISTENT_SOURCES = (
    "kernels/matmul_persistent.py",
    "kernels/_persistent_configs.py",
)


def _host_inputs(op: str, device):
    """Small inputs, so that the host, not the GPU, bounds the call rate."""
    if op == "vector_add":
        return (op, *_random_pair(4096, device))
    if op == "softmax":
        return (op, torch.randn(SOFTMAX_ROWS, 256, device=device))
    if op == "matmul_fp8":
        return (op, *_fp8_operands((512, 512, 512), device)[:4])
    a, b = _matmul_operands((512, 512, 512), device, "float16")
    return (op, a, b)


def _ours(op, *tensors):
    return getattr(_kernels(), op)(*tensors)


def _ours_uncached(op, *tensors):
    from gpuperf.kernels._launch import uncached

    with uncached():
        return getattr(_kernels(), op)(*tensors)


_PYTORCH_OP = {
    "vector_add": torch.add,
    "softmax": lambda x: torch.softmax(x, dim=-1),
    "matmul": torch.matmul,
    "matmul_persistent": torch.matmul,
    "matmul_fp8": lambda a, b, sa, sb: torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16),
}
_REFERENCE = {
    "vector_add": reference.vector_add_ref,
    "softmax": reference.softmax_ref,
    "matmul": reference.matmul_ref,
    "matmul_persistent": reference.matmul_ref,
    "matmul_fp8": reference.matmul_fp8_ref,
}

HOST_OVERHEAD = Benchmark(
    name="host_overhead",
    title="Host time per call (GPU kept busy): our wrappers vs PyTorch's ops",
    x_name="op",
    x_label=(
        "op (vector_add: 4096 fp32; softmax: 4096 x 256 fp32; matmuls: 512^3, fp16 or e4m3 "
        "with per-tensor scales)"
    ),
    x_values=("vector_add", "softmax", "matmul", "matmul_persistent", "matmul_fp8"),
    make_inputs=_host_inputs,
    reference=lambda op, *tensors: _REFERENCE[op](*tensors),
    providers=(
        Provider("triton", "gpuperf.kernels.<op> (cached launch)", call(_ours)),
        Provider("triton_jit", "the same, launched by kernel[grid]", call(_ours_uncached)),
        Provider("torch", "the PyTorch op", call(lambda op, *tensors: _PYTORCH_OP[op](*tensors))),
    ),
    baseline="torch",
    metric="us/call",
    bytes=lambda op: 0,
    flops=lambda op: 0,
    ceiling=None,
    sources=(
        "kernels/vector_add.py",
        "kernels/softmax.py",
        "kernels/matmul.py",
        "kernels/_launch.py",
        "kernels/_validation.py",
        *_PERSISTENT_SOURCES,
        "kernels/matmul_fp8.py",
    ),
    timer="host",
    reduction=lambda op: 512 if op.startswith("matmul") else None,
)

# --- attention ------------------------------------------------------------------------

#: Sequence lengths at fixed work per batch, as the FlashAttention papers measure:
#: B * S = 16384 tokens and H * D = 2048, so every point does about the same FLOPs
#: per token and only the attention span grows.
ATTENTION_SEQ_LENS = (512, 1024, 2048, 4096, 8192, 16384)
ATTENTION_TOKENS = 16384
ATTENTION_WIDTH = 2048
ATTENTION_AXES = (("dtype", ("float16", "bfloat16")), ("head_dim", (64, 128)), ("causal", (False, True)))


def attention_shape(seq_len: int, head_dim: int) -> tuple[int, int, int, int]:
    """``(B, H, S, D)`` of the attention benchmarks at ``seq_len`` and ``head_dim``."""
    return ATTENTION_TOKENS // seq_len, ATTENTION_WIDTH // head_dim, seq_len, head_dim


def _attention_inputs(seq_len, device, dtype="float16", head_dim=128, causal=False, grad=False):
    """``(q, k, v, causal)``, or with ``grad`` ``(q, k, v, grad_out, causal)``, q, k and v
    requiring gradients."""
    shape = attention_shape(seq_len, head_dim)
    dt = getattr(torch, dtype)
    q, k, v = (torch.randn(shape, device=device, dtype=dt, requires_grad=grad) for _ in range(3))
    return (q, k, v, torch.randn(shape, device=device, dtype=dt), causal) if grad else (q, k, v, causal)


def _sdpa(backend_name: str):
    """``attention(q, k, v, causal)`` by ``scaled_dot_product_attention`` with one backend forced."""

    def attend(q, k, v, causal):
        from torch.nn.attention import SDPBackend, sdpa_kernel

        with sdpa_kernel(getattr(SDPBackend, backend_name)):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)

    return lambda q, k, v, causal: attend


#: FlexAttention compiled once per dtype, head dim and masking (the key), for every
#: sequence length: ``{key: compiled flex_attention}``, one entry at a time.
_FLEX_COMPILED: dict = {}


def _flex(q, k, v, causal):
    """FlexAttention, compiled by ``torch.compile`` (which generates its Triton kernels) with
    dynamic shapes, so that one compilation serves every sequence length of a panel; causal
    masking by a block mask, which skips the tiles above the diagonal."""
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    key = (q.dtype, q.shape[-1], causal, q.requires_grad)
    if q.requires_grad:
        # The backward benchmark differentiates one graph repeatedly (retain_graph=True),
        # which AOTAutograd's donated buffers (reused for the gradients) forbid.
        torch._functorch.config.donated_buffer = False
    if key not in _FLEX_COMPILED:
        torch._dynamo.reset()
        _FLEX_COMPILED.clear()
        _FLEX_COMPILED[key] = torch.compile(flex_attention, dynamic=True)
    compiled = _FLEX_COMPILED[key]
    if not causal:
        return lambda q, k, v, causal: compiled(q, k, v)
    s = q.shape[2]
    mask = create_block_mask(lambda b, h, i, j: i >= j, None, None, s, s, device=q.device)
    return lambda q, k, v, causal: compiled(q, k, v, block_mask=mask)


def _ours_attention(q, k, v, causal):
    return lambda q, k, v, causal: _kernels().attention(q, k, v, causal=causal)


def _naive_attention(q, k, v, causal):
    return lambda q, k, v, causal: reference.attention_naive(q, k, v, causal)


#: The attention implementations compared, by provider key: ``(label, setup)`` where
#: ``setup(q, k, v, causal)`` prepares one (compiles it, say) and returns
#: ``attend(q, k, v, causal) -> output``.
ATTENTION_IMPLEMENTATIONS = {
    "triton": ("Triton (gpuperf.kernels.attention)", _ours_attention),
    "flash": ("SDPA, FlashAttention-2 backend", _sdpa("FLASH_ATTENTION")),
    "cudnn": ("SDPA, cuDNN backend", _sdpa("CUDNN_ATTENTION")),
    "efficient": ("SDPA, memory-efficient backend", _sdpa("EFFICIENT_ATTENTION")),
    "math": ("SDPA, math backend", _sdpa("MATH")),
    "flex": ("FlexAttention, torch.compile (dynamic shapes)", _flex),
    "naive": ("naive eager PyTorch", _naive_attention),
}


def _forward_provider(key: str) -> Provider:
    label, setup = ATTENTION_IMPLEMENTATIONS[key]

    def make(q, k, v, causal):
        attend = setup(q, k, v, causal)
        return lambda: attend(q, k, v, causal)

    return Provider(key, label, make)


def _backward_provider(key: str) -> Provider:
    """The backward pass alone: the forward runs once in ``make``, each call differentiates its graph."""
    label, setup = ATTENTION_IMPLEMENTATIONS[key]

    def make(q, k, v, grad_out, causal):
        out = setup(q, k, v, causal)(q, k, v, causal)
        return lambda: torch.autograd.grad(out, (q, k, v), grad_out, retain_graph=True)

    return Provider(key, label, make)


def _training_step_provider(key: str) -> Provider:
    """Forward and backward, from inputs to gradients, as one training step runs them."""
    label, setup = ATTENTION_IMPLEMENTATIONS[key]

    def make(q, k, v, grad_out, causal):
        attend = setup(q, k, v, causal)
        return lambda: torch.autograd.grad(attend(q, k, v, causal), (q, k, v), grad_out)

    return Provider(key, label, make)


def _attention_flops(seq_len, dtype, head_dim, causal, backward=False):
    return metrics.attention_flops(*attention_shape(seq_len, head_dim), causal=causal, backward=backward)


def _attention_bytes(seq_len, dtype, head_dim, causal):
    return metrics.attention_bytes(*attention_shape(seq_len, head_dim), element_size=_ELEMENT_SIZE[dtype])


def _attention_grads_ref(q, k, v, grad_out, causal):
    return reference.attention_grads_ref(q, k, v, grad_out, causal)


_ATTENTION_SOURCES = ("kernels/attention.py", "kernels/_attention_configs.py", "kernels/_launch.py")

ATTENTION_FORWARD = Benchmark(
    name="attention_forward",
    title=f"Attention forward, B·S = {ATTENTION_TOKENS}, H·D = {ATTENTION_WIDTH}",
    x_name="seq_len",
    x_label="sequence length S",
    x_values=ATTENTION_SEQ_LENS,
    make_inputs=_attention_inputs,
    reference=lambda q, k, v, causal: reference.attention_ref(q, k, v, causal),
    providers=tuple(_forward_provider(key) for key in ATTENTION_IMPLEMENTATIONS),
    baseline="flash",
    metric="TFLOP/s",
    bytes=_attention_bytes,
    flops=_attention_flops,
    ceiling=lambda dtype, head_dim, causal: _TFLOPS_CEILING[dtype],
    sources=_ATTENTION_SOURCES,
    axes=ATTENTION_AXES,
    reduction=lambda seq_len, **axes: seq_len,
)

ATTENTION_BACKWARD = Benchmark(
    name="attention_backward",
    title=f"Attention backward, B·S = {ATTENTION_TOKENS}, H·D = {ATTENTION_WIDTH}",
    x_name="seq_len",
    x_label="sequence length S",
    x_values=ATTENTION_SEQ_LENS,
    make_inputs=lambda s, device, **axes: _attention_inputs(s, device, **axes, grad=True),
    reference=_attention_grads_ref,
    providers=tuple(_backward_provider(key) for key in ATTENTION_IMPLEMENTATIONS),
    baseline="flash",
    metric="TFLOP/s",
    bytes=_attention_bytes,
    flops=lambda s, **axes: _attention_flops(s, **axes, backward=True),
    ceiling=lambda dtype, head_dim, causal: _TFLOPS_CEILING[dtype],
    sources=_ATTENTION_SOURCES,
    axes=ATTENTION_AXES,
    reduction=lambda seq_len, **axes: seq_len,
)

ATTENTION_MEMORY = Benchmark(
    name="attention_memory",
    title="Peak memory of one training step (forward + backward), float16, D = 128, not causal",
    x_name="seq_len",
    x_label="sequence length S (B·S = 16384, H = 16)",
    x_values=ATTENTION_SEQ_LENS,
    make_inputs=lambda s, device: _attention_inputs(s, device, "float16", 128, False, grad=True),
    reference=_attention_grads_ref,
    providers=tuple(_training_step_provider(key) for key in ATTENTION_IMPLEMENTATIONS),
    baseline="flash",
    metric="GiB",
    bytes=lambda s: _attention_bytes(s, "float16", 128, False),
    flops=lambda s: 3.5 * _attention_flops(s, "float16", 128, False),
    ceiling=None,
    sources=_ATTENTION_SOURCES,
    timer="memory",
    reduction=lambda seq_len: seq_len,
)

# --- persistent and FP8 matmuls (tutorials 05 and 06) ------------------------------------

#: Square products and Llama 3 8B's MLP up-projection and QKV projection over 8192 tokens.
PERSISTENT_SHAPES = (
    (1024, 1024, 1024),
    (2048, 2048, 2048),
    (4096, 4096, 4096),
    (8192, 8192, 8192),
    (8192, 14336, 4096),
    (8192, 6144, 4096),
)
#: FP8 shapes: the published comparison's 8192 x 8192 x 4096 among the squares and the MLP.
FP8_SHAPES = (
    (2048, 2048, 2048),
    (4096, 4096, 4096),
    (8192, 8192, 4096),
    (8192, 8192, 8192),
    (8192, 14336, 4096),
)
_LADDER = (
    ("triton_pointer", "persistent, computed pointers", "pointer"),
    ("triton_tma", "persistent + TMA", "tma"),
    ("triton_tma_ws", "persistent + TMA + warp specialization", "tma_ws"),
)


def _persistent_provider(key: str, label: str, which: str = "best") -> Provider:
    def config(a, b):
        from gpuperf.kernels.matmul_persistent import persistent_config

        return persistent_config(a, b, which)

    def make(a, b):
        chosen = config(a, b)
        return lambda: _kernels().matmul_persistent(a, b, config=chosen)

    return Provider(key, label, make, config=lambda a, b: config(a, b).as_dict())


MATMUL_PERSISTENT = Benchmark(
    name="matmul_persistent",
    title="Persistent matmul on Hopper, bfloat16: the ladder from tutorial 03's kernel",
    x_name="shape",
    x_label="shape (M×N×K)",
    x_values=PERSISTENT_SHAPES,
    make_inputs=lambda shape, device: _matmul_operands(shape, device, "bfloat16"),
    reference=reference.matmul_ref,
    providers=(
        _persistent_provider("triton", "Triton persistent, tuned (gpuperf.kernels.matmul_persistent)"),
        Provider(
            "triton_t03",
            "tutorial 03's kernel (gpuperf.kernels.matmul)",
            call(_matmul),
            config=lambda a, b: _matmul_config(a, b).as_dict(),
        ),
        *(_persistent_provider(key, label, which) for key, label, which in _LADDER),
        Provider("cublas", "cuBLAS (torch.matmul)", call(torch.matmul)),
    ),
    baseline="cublas",
    metric="TFLOP/s",
    bytes=lambda shape: metrics.matmul_bytes(*shape, 2),
    flops=lambda shape: metrics.matmul_flops(*shape),
    ceiling="bf16_tflops",
    sources=(*_PERSISTENT_SOURCES, "kernels/matmul.py", "kernels/_configs.py"),
    reduction=_matmul_k,
)


#: How many more products the check of a fast-accumulation FP8 result allows for than
#: its K. Hopper's FP8 tensor cores keep a reduced-precision accumulator across K unless
#: the sum is promoted to float32; its error grows about linearly with K, not as sqrt(K):
#: on the H100 at 8192 x 8192 x 4096 (8192) both cuBLASLt's and our fast-accumulation
#: results were off the float64 reference by at most 2.3 (4.1), against 1.0 promoted
#: (2026-11-23, probe run before tutorial 05). 64 K allows 8 times the float32-promoted
#: sqrt(K) bound: it passes both libraries' fast results and still fails a wrong one.
FP8_FAST_ACCUM_K_FACTOR = 64


def fp8_check_k(k: int, accumulation: str) -> int:
    """The ``k`` that checks an FP8 result summed over ``k`` products with ``accumulation``
    (``"float32"``: promoted; ``"fast"``: Hopper's fast accumulator)."""
    return k * FP8_FAST_ACCUM_K_FACTOR if accumulation == "fast" else k


def _fp8_operands(shape, device, scaling="tensor", accumulation="float32"):
    """``(a, b, scale_a, scale_b, fast_accum)``: e4m3 operands quantized from random normal
    values with per-tensor or per-row/column scales, ``b`` column-major (as
    ``torch._scaled_mm`` takes it)."""
    from gpuperf.kernels import to_fp8

    m, n, k = shape
    axis = None if scaling == "tensor" else -1
    a, scale_a = to_fp8(torch.randn(m, k, device=device), axis=axis)
    bt, scale_bt = to_fp8(torch.randn(n, k, device=device), axis=axis)
    b, scale_b = bt.t(), scale_bt.t()
    return a, b, scale_a, scale_b, accumulation == "fast"


def _fp8_provider(key: str, label: str, which: str = "best") -> Provider:
    def config(a, b, scale_a, scale_b, fast):
        from gpuperf.kernels.matmul_fp8 import fp8_config

        return fp8_config(a, b, which, fast_accum=fast)

    def make(a, b, scale_a, scale_b, fast):
        chosen = config(a, b, scale_a, scale_b, fast)
        return lambda: _kernels().matmul_fp8(a, b, scale_a, scale_b, fast_accum=fast, config=chosen)

    return Provider(key, label, make, config=lambda *inputs: config(*inputs).as_dict())


def _scaled_mm(a, b, scale_a, scale_b, fast):
    return torch._scaled_mm(
        a, b, scale_a=scale_a, scale_b=scale_b, out_dtype=torch.bfloat16, use_fast_accum=fast
    )


MATMUL_FP8 = Benchmark(
    name="matmul_fp8",
    title="FP8 (e4m3) matmul with scales, bfloat16 output; float32-promoted or fast accumulation",
    x_name="shape",
    x_label="shape (M×N×K)",
    x_values=FP8_SHAPES,
    make_inputs=_fp8_operands,
    reference=lambda a, b, scale_a, scale_b, *rest: reference.matmul_fp8_ref(a, b, scale_a, scale_b),
    providers=(
        _fp8_provider("triton", "Triton FP8, tuned (gpuperf.kernels.matmul_fp8)"),
        *(_fp8_provider(key, label, which) for key, label, which in _LADDER),
        Provider("scaled_mm", "cuBLASLt FP8 (torch._scaled_mm)", call(_scaled_mm)),
    ),
    baseline="scaled_mm",
    metric="TFLOP/s",
    bytes=lambda shape, scaling, accumulation: metrics.matmul_bytes(*shape, 1),
    flops=lambda shape, scaling, accumulation: metrics.matmul_flops(*shape),
    ceiling="fp8_tflops",
    sources=(*_PERSISTENT_SOURCES, "kernels/matmul_fp8.py"),
    axes=(("scaling", ("tensor", "row")), ("accumulation", ("float32", "fast"))),
    reduction=lambda shape, scaling, accumulation: fp8_check_k(shape[2], accumulation),
)

# --- elementwise fusion and access patterns (the optimization-strategy guide) ---------

#: Sizes of the elementwise case studies: from launch-bound (2^12) to HBM-bound (2^28).
ELEMENTWISE_SIZES = tuple(2**p for p in range(12, 29, 2))
ELEMENTWISE_DTYPES = ("float32", "bfloat16")
_DTYPE_SIZE = {"float32": 4, "float16": 2, "bfloat16": 2}


def _elementwise_inputs(count: int):
    """``make_inputs(n, device, dtype)``: ``count`` random tensors of ``n`` elements."""

    def make(n, device, dtype="float32"):
        return tuple(torch.randn(n, device=device, dtype=getattr(torch, dtype)) for _ in range(count))

    return make


def _gelu(x):
    return _kernels().gelu(x)


def _add_relu_mul(x, y, z):
    return _kernels().add_relu_mul(x, y, z)


GELU = Benchmark(
    name="gelu",
    title="GELU (tanh): the eager formula, F.gelu, torch.compile and one Triton kernel",
    x_name="n_elements",
    x_label="elements",
    x_values=ELEMENTWISE_SIZES,
    make_inputs=_elementwise_inputs(1),
    reference=reference.gelu_ref,
    providers=(
        Provider("triton", "Triton (gpuperf.kernels.gelu)", call(_gelu)),
        Provider(
            "torch",
            'F.gelu(x, approximate="tanh")',
            call(lambda x: torch.nn.functional.gelu(x, approximate="tanh")),
        ),
        Provider("compile", "torch.compile(eager formula)", _compiled(reference.gelu_eager)),
        Provider("naive", "eager formula (8 kernels)", call(reference.gelu_eager)),
    ),
    baseline="torch",
    metric="GB/s",
    bytes=lambda n, dtype: metrics.elementwise_bytes(n, _DTYPE_SIZE[dtype], n_inputs=1),
    flops=lambda n, dtype: metrics.gelu_flops(n),
    ceiling="copy_gbps",
    sources=("kernels/gelu.py", "kernels/_elementwise.py", "kernels/_launch.py"),
    axes=(("dtype", ELEMENTWISE_DTYPES),),
)

ADD_RELU_MUL = Benchmark(
    name="add_relu_mul",
    title="Fused add → ReLU → multiply: eager, torch.compile and one Triton kernel",
    x_name="n_elements",
    x_label="elements per tensor",
    x_values=ELEMENTWISE_SIZES,
    make_inputs=_elementwise_inputs(3),
    reference=reference.add_relu_mul_ref,
    providers=(
        Provider("triton", "Triton (gpuperf.kernels.add_relu_mul)", call(_add_relu_mul)),
        Provider("compile", "torch.compile(eager)", _compiled(reference.add_relu_mul_eager)),
        Provider("naive", "eager relu(x + y) * z (3 kernels)", call(reference.add_relu_mul_eager)),
    ),
    baseline="naive",
    metric="GB/s",
    bytes=lambda n, dtype: metrics.elementwise_bytes(n, _DTYPE_SIZE[dtype], n_inputs=3),
    flops=lambda n, dtype: metrics.add_relu_mul_flops(n),
    ceiling="copy_gbps",
    sources=("kernels/add_relu_mul.py", "kernels/_elementwise.py", "kernels/_launch.py"),
    axes=(("dtype", ELEMENTWISE_DTYPES),),
)

#: Elements each strided copy writes (float32): 128 MiB of useful traffic, well past L2.
STRIDED_COPY_ELEMENTS = 2**24


def _strided_copy(x, stride):
    return _kernels().strided_copy(x, stride)


STRIDED_COPY = Benchmark(
    name="strided_copy",
    title=f"Strided reads: copy every stride-th float32 element, {STRIDED_COPY_ELEMENTS:,} written",
    x_name="stride",
    x_label="stride between the elements read (float32 elements; 8 = one 32-byte sector)",
    x_values=(1, 2, 4, 8, 16, 32, 64),
    make_inputs=lambda stride, device: (torch.randn(STRIDED_COPY_ELEMENTS * stride, device=device), stride),
    reference=reference.strided_copy_ref,
    providers=(
        Provider("triton", "Triton (gpuperf.kernels.strided_copy)", call(_strided_copy)),
        Provider(
            "torch",
            "PyTorch x[::stride].clone()",
            call(lambda x, s: x[::s].clone(memory_format=torch.contiguous_format)),
        ),
    ),
    baseline="torch",
    metric="GB/s",
    bytes=lambda stride: metrics.copy_bytes(STRIDED_COPY_ELEMENTS * 4),
    flops=lambda stride: 0,
    ceiling="copy_gbps",
    sources=("kernels/strided_copy.py", "kernels/_elementwise.py", "kernels/_launch.py"),
)

ALL: tuple[Benchmark, ...] = (
    VECTOR_ADD,
    SOFTMAX,
    SOFTMAX_LONG,
    HOST_OVERHEAD,
    MATMUL,
    MATMUL_EPILOGUE,
    MATMUL_ORDER,
    ATTENTION_FORWARD,
    ATTENTION_BACKWARD,
    ATTENTION_MEMORY,
    MATMUL_PERSISTENT,
    MATMUL_FP8,
    ROW_MEAN,
    GELU,
    ADD_RELU_MUL,
    STRIDED_COPY,
)


def by_name(name: str) -> Benchmark:
    """Return the benchmark called ``name``; ``KeyError`` listing the known names otherwise."""
    for b in ALL:
        if b.name == name:
            return b
    raise KeyError(f"no benchmark {name!r}; known: {[b.name for b in ALL]}")
