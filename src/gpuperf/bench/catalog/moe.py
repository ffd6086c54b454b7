"""Mixture-of-Experts benchmarks (tutorial 09): the grouped matmul, the block-scaled FP8
matmul and a whole MoE block, at the shapes of Mixtral-8x7B, Qwen3-30B-A3B and DeepSeek-V3.

* :data:`GROUPED_MATMUL`: each model's prefill up (gate and up together, ``N = 2 ffn``) and
  down projections over :data:`MOE_PREFILL_TOKENS` tokens, routed uniformly or skewed
  (expert ``e`` chosen with weight ``1 / (e + 1)``): gpuperf's grouped kernel,
  ``F.grouped_mm`` and a loop of cuBLAS matmuls over the experts. TFLOP/s against the
  cuBLAS bfloat16 ceiling.
* :data:`MATMUL_FP8_BLOCKWISE`: DeepSeek-V3's dense projections at 128 and 4096 tokens with
  1 x 128 activation and 128 x 128 weight scales: gpuperf's block-scaled kernel, cuBLASLt's
  (``torch._scaled_mm`` with blockwise scales) and gpuperf's per-tensor promoted FP8 matmul
  on the same FP8 values. TFLOP/s against the promoted cuBLASLt FP8 ceiling.
* :data:`MOE_LAYER` and :data:`MOE_LAYER_DECODE`: the block of
  :class:`~gpuperf.models.moe.MoELayer`, prefill (TFLOP/s) and decode (GB/s of the weights
  the active experts must read, against the stream bandwidth): gpuperf's kernels, the same
  layer on ``F.grouped_mm`` and ``torch.compile`` of the loop over experts
  (:func:`gpuperf.reference.moe_ref`).
"""

from __future__ import annotations

import torch

from gpuperf import reference
from gpuperf.bench.catalog.benchmark import Benchmark, Provider, call, cuda_graph, kernels

#: Tokens of a prefill: the experts get 1024 (Mixtral), 256 (Qwen3) and 128 (DeepSeek-V3)
#: rows each when routed uniformly.
MOE_PREFILL_TOKENS = 4096
#: Tokens of a decode step (one per sequence of a batch).
MOE_DECODE_TOKENS = (1, 64)
#: The models, by the name the benchmarks use: ``(d, ffn, E, top_k)``.
MOE_MODELS = {
    "mixtral-8x7b": (4096, 14336, 8, 2),
    "qwen3-30b-a3b": (2048, 768, 128, 8),
    "deepseek-v3": (7168, 2048, 256, 8),
}
#: The grouped matmuls: each model's up (``[W_gate | W_up]``) and down projections.
GROUPED_GEMMS = tuple(f"{model} {gemm}" for model in MOE_MODELS for gemm in ("up", "down"))
MOE_ROUTINGS = ("uniform", "skewed")
#: DeepSeek-V3's dense FP8 projections (its MLA down projection, 2112 x 7168; the MLP's
#: gate/up, 4096 x 7168, and down, 7168 x 2048; 7168 x 16384, the attention output) at 128
#: and 4096 tokens, as ``(M, N, K)``: the shapes DeepGEMM publishes.
FP8_BLOCKWISE_SHAPES = tuple(
    (m, n, k) for n, k in ((2112, 7168), (4096, 7168), (7168, 2048), (7168, 16384)) for m in (128, 4096)
)
#: The scale block along K.
SCALE_BLOCK = 128


def _gemm(name: str) -> tuple[int, int, int, int]:
    """``(E, K, N, top_k)`` of the grouped matmul ``name`` (``"deepseek-v3 up"``)."""
    model, gemm = name.split()
    d, ffn, experts, top_k = MOE_MODELS[model]
    return (experts, d, 2 * ffn, top_k) if gemm == "up" else (experts, ffn, d, top_k)


def routed_offsets(tokens: int, experts: int, top_k: int, routing: str, device, seed: int = 0):
    """``offs`` (int32 ``(E,)``, on ``device``) of ``tokens`` tokens each sent to ``top_k``
    distinct experts: ``routing="uniform"``, or ``"skewed"`` (expert ``e`` chosen with weight
    ``1 / (e + 1)``: the first experts get several times their share). ``offs[E-1]`` is
    always ``tokens * top_k``."""
    g = torch.Generator(device=device).manual_seed(seed)
    weights = torch.ones(experts, device=device)
    if routing == "skewed":
        weights = 1.0 / torch.arange(1, experts + 1, device=device)
    chosen = torch.multinomial(weights.expand(tokens, experts), top_k, replacement=False, generator=g)
    return reference.sort_by_expert(chosen, experts)[1]


def grouped_operands(name: str, device, routing: str = "uniform") -> tuple:
    """``(a, b, offs)`` of the grouped matmul ``name`` over :data:`MOE_PREFILL_TOKENS` tokens:
    ``a`` ``(tokens * top_k, K)``, ``b`` ``(E, K, N)`` scaled by ``1 / sqrt(K)``, bfloat16."""
    experts, k, n, top_k = _gemm(name)
    rows = MOE_PREFILL_TOKENS * top_k
    a = torch.randn(rows, k, device=device, dtype=torch.bfloat16)
    b = torch.randn(experts, k, n, device=device, dtype=torch.bfloat16).mul_(k**-0.5)
    return a, b, routed_offsets(MOE_PREFILL_TOKENS, experts, top_k, routing, device)


def _grouped_mm(a, b, offs):
    return torch.nn.functional.grouped_mm(a, b, offs=offs)


def _grouped_flops(name: str, routing: str = "uniform") -> float:
    _, k, n, top_k = _gemm(name)
    return 2.0 * MOE_PREFILL_TOKENS * top_k * n * k


def _grouped_bytes(name: str, routing: str = "uniform") -> float:
    experts, k, n, top_k = _gemm(name)
    rows = MOE_PREFILL_TOKENS * top_k
    return 2.0 * (rows * k + experts * k * n + rows * n)


GROUPED_MATMUL = Benchmark(
    name="grouped_matmul",
    title=f"Grouped matmul of MoE experts, prefill of {MOE_PREFILL_TOKENS} tokens, bfloat16",
    x_name="gemm",
    x_label="model and projection",
    x_values=GROUPED_GEMMS,
    make_inputs=grouped_operands,
    reference=reference.grouped_matmul_ref,
    providers=(
        Provider(
            "triton", "gpuperf grouped_matmul", call(lambda a, b, offs: kernels().grouped_matmul(a, b, offs))
        ),
        Provider("grouped_mm", "F.grouped_mm", call(_grouped_mm)),
        Provider("cublas_loop", "cuBLAS, a loop over experts", call(reference.grouped_matmul_loop)),
    ),
    baseline="grouped_mm",
    metric="TFLOP/s",
    bytes=_grouped_bytes,
    flops=_grouped_flops,
    ceiling="bf16_tflops",
    sources=("kernels/grouped_matmul.py",),
    axes=(("routing", MOE_ROUTINGS),),
    reduction=lambda name, routing="uniform": _gemm(name)[1],
)


# --- block-scaled FP8 ------------------------------------------------------------------


def fp8_blockwise_operands(shape, device) -> tuple:
    """``(a, b, scale_a, scale_b, scale)``: ``a`` ``(M, K)`` and ``b`` ``(N, K)``
    ``float8_e4m3fn`` with 1 x 128 and 128 x 128 float32 scales
    (:func:`~gpuperf.kernels.quantize_fp8_blockwise`), and ``scale``, the per-tensor scale
    that stands for every block's.

    The values are random normal, clipped to ``[-4, 4]``, with one ``4`` in each 128 x 128
    block, so that every block (and every 1 x 128 tile of ``a``) has the same largest
    magnitude and so the same scale: the per-tensor matmul then multiplies the very same
    FP8 values with the same scale, and every provider computes one product (a block's
    scale value does not change how long a kernel takes). The accuracy of block scaling
    against per-tensor scaling is another measurement.
    """
    from gpuperf.kernels import quantize_fp8_blockwise

    m, n, k = shape

    def operand(rows: int) -> torch.Tensor:
        x = torch.randn(rows, k, device=device).clamp_(-4.0, 4.0)
        x[:, ::SCALE_BLOCK] = 4.0  # every 1 x 128 tile's largest magnitude
        return x

    a, scale_a = quantize_fp8_blockwise(operand(m))
    b, scale_b = quantize_fp8_blockwise(operand(n).mul_(k**-0.5), (SCALE_BLOCK, SCALE_BLOCK))
    return a, b, scale_a, scale_b, scale_b.flatten()[:1].reshape(())


def _blockwise_ref(a, b, scale_a, scale_b, scale):
    return reference.matmul_fp8_blockwise_ref(a, b, scale_a, scale_b)


def _scaled_mm_blockwise(a, b, scale_a, scale_b, scale):
    # cuBLASLt's layouts for the 1 x 128 / 128 x 128 recipe: both scales column-major.
    sa, sb = scale_a.t().contiguous().t(), scale_b.t()
    return lambda: torch._scaled_mm(a, b.t(), sa, sb, out_dtype=torch.bfloat16)


def _per_tensor(a, b, scale_a, scale_b, scale):
    sa = scale_a.flatten()[:1].reshape(())
    return lambda: kernels().matmul_fp8(a, b.t(), sa, scale)


MATMUL_FP8_BLOCKWISE = Benchmark(
    name="matmul_fp8_blockwise",
    title="Block-scaled FP8 matmul (1x128 and 128x128 scales), DeepSeek-V3 shapes, bfloat16 output",
    x_name="shape",
    x_label="(M, N, K)",
    x_values=FP8_BLOCKWISE_SHAPES,
    make_inputs=fp8_blockwise_operands,
    reference=_blockwise_ref,
    providers=(
        Provider(
            "triton",
            "gpuperf matmul_fp8_blockwise",
            call(lambda a, b, sa, sb, s: kernels().matmul_fp8_blockwise(a, b, sa, sb)),
        ),
        Provider("scaled_mm_blockwise", "cuBLASLt blockwise (torch._scaled_mm)", _scaled_mm_blockwise),
        Provider("per_tensor", "gpuperf matmul_fp8, per-tensor scale, promoted", _per_tensor),
    ),
    baseline="scaled_mm_blockwise",
    metric="TFLOP/s",
    bytes=lambda s: s[0] * s[2] + s[1] * s[2] + 2 * s[0] * s[1],
    flops=lambda s: 2.0 * s[0] * s[1] * s[2],
    ceiling="fp8_tflops",
    sources=("kernels/matmul_fp8_blockwise.py", "kernels/matmul_fp8.py"),
    reduction=lambda s: s[2],
    runs_on=lambda capability: capability >= (9, 0),
)


# --- the MoE block -----------------------------------------------------------------------

_LAYERS: dict = {}

#: The layer's check: the relative error of the output's norm against the loop over experts
#: in bfloat16. Each path rounds its intermediates differently (about 0.5 %), and a router
#: whose scores Inductor computes in another order may break a near-tie the other way for a
#: token, which changes that token's experts: one such token of 4096 costs about 1.6 %.
MOE_LAYER_NORM_RTOL = 0.05


def moe_layer(model: str, device):
    """The benchmarks' :class:`~gpuperf.models.moe.MoELayer` of ``model`` on ``device``
    (bfloat16, seed 0, made once)."""
    from gpuperf.models.moe import MoELayer

    key = (model, str(device))
    if key not in _LAYERS:
        _LAYERS[key] = MoELayer(_config(model), device=device)
    return _LAYERS[key]


def forget_layers() -> None:
    """Drop the layers :func:`moe_layer` made (DeepSeek-V3's experts hold 22 GiB)."""
    _LAYERS.clear()


def _config(model: str):
    """The :class:`~gpuperf.models.moe.MoEConfig` of ``model`` (a key of :data:`MOE_MODELS`)."""
    from gpuperf.models import moe

    return {
        "mixtral-8x7b": moe.MIXTRAL_8X7B,
        "qwen3-30b-a3b": moe.QWEN3_30B_A3B,
        "deepseek-v3": moe.DEEPSEEK_V3,
    }[model]


def _layer_inputs(tokens: int, model: str, device) -> tuple:
    layer = moe_layer(model, device)
    return layer, torch.randn(tokens, layer.config.hidden, device=device, dtype=torch.bfloat16)


def _prefill_inputs(model: str, device) -> tuple:
    return _layer_inputs(MOE_PREFILL_TOKENS, model, device)


def _decode_inputs(tokens: int, device, model: str = "deepseek-v3") -> tuple:
    return _layer_inputs(tokens, model, device)


def _layer_reference(layer, x):
    with torch.no_grad():
        return layer.reference(x)


def _layer(ops: str):
    def make(layer, x):
        def step():
            layer.ops = ops
            with torch.no_grad():
                return layer(x)

        return step

    return make


def _layer_graph(layer, x):
    layer.ops = "gpuperf"
    return cuda_graph(lambda: layer(x))


def _compiled_reference(layer, x):
    # Dynamic shapes from the first call: each expert's row count differs, and a compile per
    # count would hit the recompile limit (the loop over experts itself breaks the graph at
    # each data-dependent ``torch.where``, so its pieces compile as separate graphs).
    torch._dynamo.reset()
    run = torch.compile(layer.reference, dynamic=True)

    def step():
        with torch.no_grad():
            return run(x)

    return step


def moe_layer_flops(model: str, tokens: int) -> float:
    """The block's matmul FLOPs over ``tokens`` tokens: the router, each token's ``top_k``
    experts (gate, up and down) and the shared expert."""
    c = _config(model)
    per_token = c.experts * c.hidden + c.top_k * 3 * c.hidden * c.ffn + 3 * c.hidden * c.shared_ffn
    return 2.0 * tokens * per_token


def moe_layer_bytes(model: str, tokens: int) -> float:
    """The bytes a call must move: the expected experts' weights that ``tokens`` tokens
    routed uniformly touch (``E * (1 - (1 - top_k / E) ** tokens)`` experts, each ``3 d
    ffn`` bfloat16 weights), the shared expert's and the router's, and the tokens in and
    out."""
    c = _config(model)
    d, ffn, experts, top_k = c.hidden, c.ffn, c.experts, c.top_k
    active = experts * (1.0 - (1.0 - top_k / experts) ** tokens)
    router = experts * d * (4 if c.scoring == "sigmoid" else 2)  # float32 with sigmoid scoring
    return 2.0 * (active * 3 * d * ffn + 3 * d * c.shared_ffn + 2 * tokens * d) + router


_LAYER_PROVIDERS = (
    Provider("triton", "gpuperf MoE block", _layer("gpuperf")),
    Provider("grouped_mm", "the block on F.grouped_mm", _layer("torch")),
    Provider("compile", "torch.compile of the loop over experts", _compiled_reference),
)

MOE_LAYER = Benchmark(
    name="moe_layer",
    title=f"MoE feed-forward block, prefill of {MOE_PREFILL_TOKENS} tokens, bfloat16",
    x_name="model",
    x_label="model",
    x_values=tuple(MOE_MODELS),
    make_inputs=_prefill_inputs,
    reference=_layer_reference,
    providers=_LAYER_PROVIDERS,
    baseline="grouped_mm",  # the strongest other path: the same block on PyTorch's grouped GEMM
    metric="TFLOP/s",
    bytes=lambda model: moe_layer_bytes(model, MOE_PREFILL_TOKENS),
    flops=lambda model: moe_layer_flops(model, MOE_PREFILL_TOKENS),
    ceiling="bf16_tflops",
    sources=("models/moe.py",),
    norm_rtol=MOE_LAYER_NORM_RTOL,
)

MOE_LAYER_DECODE = Benchmark(
    name="moe_layer_decode",
    title="MoE feed-forward block, a decode step, bfloat16",
    x_name="tokens",
    x_label="tokens (one per sequence)",
    x_values=MOE_DECODE_TOKENS,
    make_inputs=_decode_inputs,
    reference=_layer_reference,
    # (A decode step at a few tokens is bound by its launches: one CUDA graph replays them.)
    providers=(
        _LAYER_PROVIDERS[0],
        Provider("triton_graph", "gpuperf MoE block, one CUDA graph", _layer_graph),
        *_LAYER_PROVIDERS[1:],
    ),
    baseline="grouped_mm",  # the strongest other path: the same block on PyTorch's grouped GEMM
    metric="GB/s",
    bytes=lambda tokens, model="deepseek-v3": moe_layer_bytes(model, tokens),
    flops=lambda tokens, model="deepseek-v3": moe_layer_flops(model, tokens),
    ceiling="stream_gbps",
    compute_roof="bf16_tflops",
    sources=("models/moe.py",),
    axes=(("model", tuple(MOE_MODELS)),),
    norm_rtol=MOE_LAYER_NORM_RTOL,
)

__all__ = [
    "FP8_BLOCKWISE_SHAPES",
    "GROUPED_GEMMS",
    "GROUPED_MATMUL",
    "MATMUL_FP8_BLOCKWISE",
    "MOE_DECODE_TOKENS",
    "MOE_LAYER",
    "MOE_LAYER_DECODE",
    "MOE_MODELS",
    "MOE_PREFILL_TOKENS",
    "MOE_ROUTINGS",
    "forget_layers",
    "fp8_blockwise_operands",
    "grouped_operands",
    "moe_layer",
    "moe_layer_bytes",
    "moe_layer_flops",
    "routed_offsets",
]
