"""Matmul benchmarks: tutorial 03's kernel against cuBLAS and ``torch.compile`` (with its
fused epilogue and its program order), and the persistent and FP8 matmuls of tutorials 05
and 06. Each is read in TFLOP/s against the measured cuBLAS (or cuBLASLt FP8) ceiling, but
the split-K matmul of a decode step's few rows, read in GB/s against the copy bandwidth."""

from __future__ import annotations

import torch

from gpuperf import reference
from gpuperf.bench import metrics
from gpuperf.bench.catalog.benchmark import (
    ELEMENT_SIZE,
    TFLOPS_CEILING,
    Benchmark,
    Provider,
    call,
    compiled,
    kernels,
    liger,
)

#: Square products from launch-bound to compute-bound, as (M, N, K).
MATMUL_SQUARE = tuple((n, n, n) for n in (256, 512, 1024, 2048, 4096, 8192))
#: Products from a real model, Llama 3 8B (hidden 4096, MLP 14336, 8 KV heads of
#: 128): the MLP up-projection and the fused QKV projection over 8192 tokens, and
#: the up-projection at decode time, 16 tokens (skinny: memory-bound on the weights).
MATMUL_MODEL = ((8192, 14336, 4096), (8192, 6144, 4096), (16, 14336, 4096))
MATMUL_SHAPES = MATMUL_SQUARE + MATMUL_MODEL
MATMUL_DTYPES = ("float16", "bfloat16")
#: What a quick live build measures of ``MATMUL``, in both dtypes: each (shape, dtype)
#: costs a ``max-autotune`` compile. The smallest square (the launch-bound calls the page
#: prints), 4096³ and 8192³ (the ratios to cuBLAS it quotes, the fused epilogue's and the
#: strategy guide's squares) and the MLP up-projection (the epilogue's model shape).
MATMUL_QUICK = (("shape", ((256, 256, 256), (4096, 4096, 4096), (8192, 8192, 8192), (8192, 14336, 4096))),)


def matmul_operands(shape, device, dtype="bfloat16", bias=False):
    """``(a, b)``, or with ``bias`` ``(a, b, bias)``: random ``(M, K)`` and ``(K, N)`` operands
    of ``shape`` ``(M, N, K)`` in ``dtype`` (a name, ``"bfloat16"``) on ``device``."""
    m, n, k = shape
    dt = getattr(torch, dtype)
    a = torch.randn(m, k, device=device, dtype=dt)
    b = torch.randn(k, n, device=device, dtype=dt)
    return (a, b, torch.randn(n, device=device, dtype=dt)) if bias else (a, b)


def _matmul(a, b):
    return kernels().matmul(a, b)


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
    make_inputs=matmul_operands,
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
    bytes=lambda shape, dtype: metrics.matmul_bytes(*shape, ELEMENT_SIZE[dtype]),
    flops=lambda shape, dtype: metrics.matmul_flops(*shape),
    ceiling=lambda dtype: TFLOPS_CEILING[dtype],
    sources=("kernels/matmul.py",),
    axes=(("dtype", MATMUL_DTYPES),),
    reduction=_matmul_k,
    quick=MATMUL_QUICK,
)

#: Shapes for the fused epilogue: a square product at two sizes and the MLP up-projection.
MATMUL_EPILOGUE_SHAPES = ((4096, 4096, 4096), (8192, 8192, 8192), (8192, 14336, 4096))

MATMUL_EPILOGUE = Benchmark(
    name="matmul_epilogue",
    title="Matmul + bias + GELU, bfloat16",
    x_name="shape",
    x_label="shape (M×N×K)",
    x_values=MATMUL_EPILOGUE_SHAPES,
    make_inputs=lambda shape, device: matmul_operands(shape, device, "bfloat16", bias=True),
    reference=lambda a, b, bias: reference.matmul_ref(a, b, bias, "gelu"),
    providers=(
        Provider(
            "triton",
            "Triton, epilogue fused (gpuperf.kernels.matmul)",
            call(lambda a, b, bias: kernels().matmul(a, b, bias=bias, activation="gelu")),
            config=lambda a, b, bias: _matmul_config(a, b).as_dict(),
        ),
        Provider("torch", "cuBLAS, then eager bias and GELU", call(reference.matmul_epilogue_eager)),
        Provider("compile", "torch.compile of the eager code", compiled(reference.matmul_epilogue_eager)),
    ),
    baseline="torch",
    metric="TFLOP/s",
    bytes=lambda shape: metrics.matmul_bytes(*shape, 2, bias=True),
    flops=lambda shape: metrics.matmul_flops(*shape),
    ceiling="bf16_tflops",
    sources=("kernels/matmul.py",),
    reduction=_matmul_k,
)

MATMUL_ORDER = Benchmark(
    name="matmul_order",
    title="Program order: grouped vs row-major, float16",
    x_name="shape",
    x_label="shape (M×N×K)",
    x_values=((4096, 4096, 4096), (8192, 8192, 8192), (16384, 16384, 16384), (8192, 14336, 4096)),
    make_inputs=lambda shape, device: matmul_operands(shape, device, "float16"),
    reference=reference.matmul_ref,
    providers=(
        Provider(
            "triton",
            "grouped order (GROUP_M = 8)",
            call(lambda a, b: kernels().matmul(a, b, config=_matmul_config(a, b, group_m=8))),
            config=lambda a, b: _matmul_config(a, b, group_m=8).as_dict(),
        ),
        Provider(
            "triton_rowmajor",
            "row-major order (GROUP_M = 1)",
            call(lambda a, b: kernels().matmul(a, b, config=_matmul_config(a, b, group_m=1))),
            config=lambda a, b: _matmul_config(a, b, group_m=1).as_dict(),
        ),
    ),
    baseline="triton_rowmajor",
    metric="TFLOP/s",
    bytes=lambda shape: metrics.matmul_bytes(*shape, 2),
    flops=lambda shape: metrics.matmul_flops(*shape),
    ceiling="fp16_tflops",
    sources=("kernels/matmul.py",),
    reduction=_matmul_k,
)

#: The sources of the persistent matmuls (tutorials 05 and 06), named by several benchmarks.
PERSISTENT_SOURCES = ("kernels/matmul_persistent.py",)

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
        return lambda: kernels().matmul_persistent(a, b, config=chosen)

    return Provider(key, label, make, config=lambda a, b: config(a, b).as_dict())


#: Tutorial 03's tuned kernel, the rung below the persistent ones in the ladders that follow.
_T03_PROVIDER = Provider(
    "triton_t03",
    "tutorial 03's kernel (gpuperf.kernels.matmul)",
    call(_matmul),
    config=lambda a, b: _matmul_config(a, b).as_dict(),
)

MATMUL_PERSISTENT = Benchmark(
    name="matmul_persistent",
    title="Persistent matmul on Hopper, bfloat16: the ladder from tutorial 03's kernel",
    x_name="shape",
    x_label="shape (M×N×K)",
    x_values=PERSISTENT_SHAPES,
    make_inputs=lambda shape, device: matmul_operands(shape, device, "bfloat16"),
    reference=reference.matmul_ref,
    providers=(
        _persistent_provider("triton", "Triton persistent, tuned (gpuperf.kernels.matmul_persistent)"),
        _T03_PROVIDER,
        *(_persistent_provider(key, label, which) for key, label, which in _LADDER),
        Provider("cublas", "cuBLAS (torch.matmul)", call(torch.matmul)),
    ),
    baseline="cublas",
    metric="TFLOP/s",
    bytes=lambda shape: metrics.matmul_bytes(*shape, 2),
    flops=lambda shape: metrics.matmul_flops(*shape),
    ceiling="bf16_tflops",
    sources=(*PERSISTENT_SOURCES, "kernels/matmul.py"),
    reduction=_matmul_k,
)


# --- a few rows against a large weight: a decode step's projections -----------------------

#: Llama-3-8B's projections at decode time, as (M, N, K): the fused QKV, the output, the
#: down- and the fused gate/up projection at batch 1, and the down-projection at batch 16
#: and 64. Memory-bound: reading the weight (K x N bf16) is the whole cost.
MATMUL_SMALL_M_SHAPES = (
    (1, 6144, 4096),
    (1, 4096, 4096),
    (1, 4096, 14336),
    (1, 28672, 4096),
    (16, 4096, 14336),
    (64, 4096, 14336),
)


def _splitk_launch(a, b) -> dict:
    """The launch :func:`gpuperf.kernels.matmul_splitk` makes on these operands."""
    from gpuperf.kernels.matmul_splitk import splitk_launch

    return splitk_launch(a.shape[0], b.shape[1], a.shape[1], a.get_device()).as_dict()


MATMUL_SMALL_M = Benchmark(
    name="matmul_small_m",
    title="Matmul of a few rows against a large weight (decode projections), bfloat16",
    x_name="shape",
    x_label="shape (M×N×K)",
    x_values=MATMUL_SMALL_M_SHAPES,
    make_inputs=lambda shape, device: matmul_operands(shape, device, "bfloat16"),
    reference=reference.matmul_ref,
    providers=(
        Provider(
            "triton",
            "Triton split-K (gpuperf.kernels.matmul_splitk)",
            call(lambda a, b: kernels().matmul_splitk(a, b)),
            config=_splitk_launch,
        ),
        _persistent_provider("triton_persistent", "Triton persistent (gpuperf.kernels.matmul_persistent)"),
        _T03_PROVIDER,
        Provider("cublas", "cuBLAS (torch.matmul)", call(torch.matmul)),
    ),
    baseline="cublas",
    metric="GB/s",
    bytes=lambda shape: metrics.matmul_bytes(*shape, 2),
    flops=lambda shape: metrics.matmul_flops(*shape),
    ceiling="stream_gbps",
    # Its FLOPs run on the tensor cores in bfloat16: left of that roof's ridge, not fp32's.
    compute_roof="bf16_tflops",
    # Every kernel it times: split-K, the persistent matmul and tutorial 03's.
    sources=("kernels/matmul_splitk.py", "kernels/matmul_persistent.py", "kernels/matmul.py"),
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


def fp8_operands(shape, device, scaling="tensor", accumulation="float32"):
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
        return lambda: kernels().matmul_fp8(a, b, scale_a, scale_b, fast_accum=fast, config=chosen)

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
    make_inputs=fp8_operands,
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
    # Each accumulation against the cuBLASLt ceiling of the same mode: fast accumulation
    # runs past the promoted one (gpuperf.bench.hardware.FP8_ACCUMULATION).
    ceiling=lambda scaling, accumulation: "fp8_fast_tflops" if accumulation == "fast" else "fp8_tflops",
    sources=(*PERSISTENT_SOURCES, "kernels/matmul_fp8.py"),
    axes=(("scaling", ("tensor", "row")), ("accumulation", ("float32", "fast"))),
    reduction=lambda shape, scaling, accumulation: fp8_check_k(shape[2], accumulation),
    # A quick live build: the two squares the pages compare with bfloat16 (the strategy
    # guide), 8192³ also the one tutorial 05's paragraph quotes its share of the FP8 ceiling
    # at (the ceiling's own shape is in its entry), in every scaling and accumulation mode.
    quick=(("shape", ((4096, 4096, 4096), (8192, 8192, 8192))),),
)

# --- SwiGLU, Llama's MLP gate (tutorial 07) -----------------------------------------------

#: Llama 3 8B's MLP gate and up projections (hidden 4096, MLP 14336) over 64 tokens
#: (decode, batch 64: memory-bound on the weight) and 2048 to 16384 tokens (prefill).
SWIGLU_SHAPES = ((64, 14336, 4096), (2048, 14336, 4096), (8192, 14336, 4096), (16384, 14336, 4096))


def swiglu_operands(shape, device):
    """``(x, w_gate_up)``: random ``(M, K)`` activations and a ``(K, 2N)`` weight
    ``[W_gate | W_up]`` scaled by ``1/sqrt(K)`` (products of order one, as in a model),
    bfloat16, for ``shape`` ``(M, N, K)``. The weight is stored as a model stores a fused
    ``gate_up_proj`` (``nn.Linear``'s layout, a row-major ``(2N, K)`` matrix
    ``[W_gate; W_up]``) and passed transposed, as the Llama layer passes it."""
    m, n, k = shape
    x = torch.randn(m, k, device=device, dtype=torch.bfloat16)
    w = (torch.randn(2 * n, k, device=device) * k**-0.5).to(torch.bfloat16)
    return x, w.t()


def _gate_up(w_gate_up):
    n = w_gate_up.shape[1] // 2
    return w_gate_up[:, :n], w_gate_up[:, n:]


def swiglu_eager_fused_weight(x, w_gate_up):
    """The eager formula on the two column slices of one ``[W_gate | W_up]`` weight, as the
    model's PyTorch ops call it (:func:`gpuperf.reference.swiglu_eager`)."""
    return reference.swiglu_eager(x, *_gate_up(w_gate_up))


def _swiglu_epilogue(gate_up):
    """``silu(g) * u`` of cuBLAS's ``[g | u]``, to check that provider's products (untimed)."""
    g, u = _gate_up(gate_up)
    return (torch.nn.functional.silu(g.float()) * u.float()).to(gate_up.dtype)


def _swiglu_launch_config(x, w_gate_up):
    from gpuperf.kernels.swiglu import launch_config

    return launch_config(x, w_gate_up).as_dict()


def _liger_swiglu(x, w_gate_up):
    # One cuBLAS matmul into [g | u], then Liger-Kernel's kernel for silu(g) * u on it: what
    # a model patched with Liger runs for a fused gate_up projection.
    function = liger("swiglu").LigerFusedGateUpSiLUMulFunction
    return lambda: function.apply(x @ w_gate_up)


SWIGLU = Benchmark(
    name="swiglu",
    title="SwiGLU, bfloat16: silu(x @ W_gate) * (x @ W_up) in one matmul (nn.Linear layout)",
    x_name="shape",
    x_label="shape (M×N×K)",
    x_values=SWIGLU_SHAPES,
    make_inputs=swiglu_operands,
    reference=lambda x, w_gate_up: reference.swiglu_ref(x, *_gate_up(w_gate_up)),
    providers=(
        Provider(
            "triton",
            "Triton, gate fused (gpuperf.kernels.swiglu)",
            call(lambda x, w: kernels().swiglu(x, w)),
            config=_swiglu_launch_config,
        ),
        Provider(
            "eager", "eager PyTorch (two cuBLAS matmuls, SiLU, multiply)", call(swiglu_eager_fused_weight)
        ),
        Provider("compile", "torch.compile of the eager code", compiled(swiglu_eager_fused_weight)),
        Provider(
            "cublas",
            "cuBLAS x @ [W_gate | W_up] alone (no epilogue)",
            call(torch.matmul),
            check_as=_swiglu_epilogue,
        ),
        Provider(
            "liger", "cuBLAS, then Liger-Kernel's SiLU-mul (LigerFusedGateUpSiLUMulFunction)", _liger_swiglu
        ),
    ),
    baseline="eager",
    metric="TFLOP/s",
    bytes=lambda shape: metrics.swiglu_bytes(*shape, ELEMENT_SIZE["bfloat16"]),
    flops=lambda shape: metrics.swiglu_flops(*shape),
    ceiling=TFLOPS_CEILING["bfloat16"],
    sources=("kernels/swiglu.py", *PERSISTENT_SOURCES),
    reduction=_matmul_k,
)
