"""Tutorial 09 (a Mixture-of-Experts layer on Hopper) in words, tables and charts, read from
the records and the capture, and the small experiments the page runs on the CPU.

* :func:`in_one_paragraph`: the page's answer, from the layer's prefill and decode records;
* :func:`loop_table` and :func:`loop_reading`: a loop of cuBLAS calls over the experts
  against the grouped kernels, model by model (8, 128 and 256 experts);
* :func:`routing_counts`: the rows each expert gets under uniform and skewed routing, drawn
  by the benchmark's own routing function;
* :func:`imbalance_table` and :func:`imbalance_reading`: what skewed routing costs each
  grouped matmul;
* :func:`outlier_channels` and :class:`ScalingErrors`: block-scaled FP8 against per-tensor
  FP8 and bfloat16 on activations with outlier channels;
* :func:`fp8_table`, :func:`plot_fp8_blockwise` and :func:`deepgemm_reading`: the
  block-scaled matmul's speed against cuBLASLt's, the per-tensor kernel's and DeepGEMM's
  published figures (:data:`DEEPGEMM_TFLOPS`);
* :func:`decode_reading`: a decode step read against the memory roof;
* :func:`plot_time_breakdown` and :func:`breakdown_table`: where the layer's time goes,
  part by part (the ``moe_time_breakdown`` capture).

The benchmarks are :data:`~gpuperf.bench.catalog.GROUPED_MATMUL`,
:data:`~gpuperf.bench.catalog.MATMUL_FP8_BLOCKWISE`, :data:`~gpuperf.bench.catalog.MOE_LAYER`
and :data:`~gpuperf.bench.catalog.MOE_LAYER_DECODE`.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field

from gpuperf.bench import captures as bench_captures
from gpuperf.bench import records
from gpuperf.bench.catalog.moe import (
    GROUPED_MATMUL,
    MATMUL_FP8_BLOCKWISE,
    MOE_DECODE_TOKENS,
    MOE_LAYER,
    MOE_LAYER_DECODE,
    MOE_MODELS,
    MOE_PREFILL_TOKENS,
    MOE_ROUTINGS,
    routed_offsets,
)
from gpuperf.pages import breakdown, captures, prose
from gpuperf.pages.fp8 import relative_error
from gpuperf.pages.plotting import PROVIDER_COLORS, ceiling_label, format_x, short_gpu_name
from gpuperf.pages.prose import WIDTH, fill
from gpuperf.pages.report import Result, check_result, load, passes_roof
from gpuperf.pages.tables import Cell, Section, number, render

#: The capture of where the layer's time goes (``scripts/moe_capture.py``).
BREAKDOWN = "moe_time_breakdown"
#: How the page names each provider of the MoE benchmarks and the capture.
NAMES = {
    "triton": "ours",
    "grouped_mm": "F.grouped_mm",
    "cublas_loop": "cuBLAS loop",
    "compile": "torch.compile",
    "scaled_mm_blockwise": "cuBLASLt blockwise",
    "per_tensor": "ours, per-tensor FP8",
}
#: How the page names each model of the benchmarks.
MODEL_NAMES = {"mixtral-8x7b": "Mixtral-8x7B", "qwen3-30b-a3b": "Qwen3-30B-A3B", "deepseek-v3": "DeepSeek-V3"}
#: The parts of the layer that are the experts' matmuls (the grouped GEMMs).
GEMM_PARTS = ("gate_up", "down")
#: One colour per part of the layer in the breakdown chart.
PART_COLORS = {
    "router": "#9467bd",
    "permute": "#17becf",
    "gate_up": "#2ca02c",
    "activation": "#bcbd22",
    "down": "#98df8a",
    "combine": "#e377c2",
    "shared": "#1f77b4",
    "other": "#ff7f0e",
}
#: DeepGEMM's published TFLOP/s of its block-scaled FP8 matmul (``gemm_fp8_fp8_bf16_nt``) at
#: the shapes of :data:`~gpuperf.bench.catalog.MATMUL_FP8_BLOCKWISE`, ``{(M, N, K): TFLOP/s}``:
#: the table "Normal GEMMs for dense models" of DeepGEMM's README as first published
#: (:data:`DEEPGEMM_SOURCE`). Not measured here: another GPU (:data:`DEEPGEMM_GPU`), another
#: date and software.
DEEPGEMM_TFLOPS = {
    (128, 2112, 7168): 352,
    (128, 4096, 7168): 533,
    (128, 7168, 2048): 510,
    (128, 7168, 16384): 645,
    (4096, 2112, 7168): 1058,
    (4096, 4096, 7168): 1304,
    (4096, 7168, 2048): 1025,
    (4096, 7168, 16384): 1358,
}
#: What DeepGEMM reported later, as the page cites it: its first figures are not its best.
DEEPGEMM_LATER = "its README reports up to 1550 TFLOPS on the H800 from April 2025"
#: Where :data:`DEEPGEMM_TFLOPS` comes from, as the page cites it.
DEEPGEMM_SOURCE = (
    "DeepGEMM's README as first published (github.com/deepseek-ai/DeepGEMM, February 2025), "
    "'Normal GEMMs for dense models': H800, NVCC 12.8"
)
#: The GPU DeepGEMM's figures were measured on.
DEEPGEMM_GPU = "H800"
#: Outlier channels of :func:`outlier_channels`: two, in the first 128 channels.
OUTLIER_CHANNELS = (3, 70)


def experts_of(model: str) -> tuple[int, int]:
    """``(E, top_k)`` of ``model``, a key of :data:`~gpuperf.bench.catalog.MOE_MODELS`.

    Raises:
        ValueError: ``model`` is not one of them.
    """
    if model not in MOE_MODELS:
        raise ValueError(f"model must be one of {list(MOE_MODELS)}, got {model!r}")
    _, _, experts, top_k = MOE_MODELS[model]
    return experts, top_k


def rows_per_expert(model: str) -> int:
    """Rows each expert gets on average in a prefill of
    :data:`~gpuperf.bench.catalog.MOE_PREFILL_TOKENS` tokens: ``tokens * top_k / E``."""
    experts, top_k = experts_of(model)
    return MOE_PREFILL_TOKENS * top_k // experts


def _gemms(model: str) -> list[str]:
    return [g for g in GROUPED_MATMUL.x_values if g.split()[0] == model]


# --- the opening paragraph -------------------------------------------------------------


def in_one_paragraph() -> prose.Paragraph:
    """The page's answer, from the ``moe_layer`` and ``moe_layer_decode`` records of the
    page's GPU: the prefill against the block on ``F.grouped_mm`` and ``torch.compile`` of the
    loop over experts, and a decode step against the memory roof."""
    layer, decode = load(MOE_LAYER), load(MOE_LAYER_DECODE)
    sentences, notes = [], [*layer.notes, *decode.notes]
    if layer.record is not None:
        grouped = layer.ratios("triton", over="grouped_mm")
        compiled = layer.ratios("triton", over="compile")
        each = ", ".join(f"{prose.times(r, 1)} ({MODEL_NAMES[m]})" for m, r in compiled.items())
        share = layer.fraction_of_ceiling()
        if grouped and compiled:
            sentences.append(
                f"On the {short_gpu_name(layer.gpu)}, the MoE feed-forward block built from this "
                f"site's kernels runs a prefill of {MOE_PREFILL_TOKENS} tokens "
                f"{prose.times_span(grouped.values())} as fast as the same block on PyTorch's F.grouped_mm, "
                f"and {each} as fast as torch.compile of the loop over experts, at "
                f"{prose.percent_span(share.values())} of the rate of the {layer.ceiling_name()}."
            )
    if decode.record is not None:
        model = next(iter(MOE_MODELS))
        fracs = {
            t: [decode.fraction_of_ceiling(model=m).get(t) for m in MOE_MODELS] for t in MOE_DECODE_TOKENS
        }
        ratios = [v for m in MOE_MODELS for v in decode.ratios("triton", over="grouped_mm", model=m).values()]
        if ratios and all(None not in f for f in fracs.values()):
            name = decode.ceiling_name(model=model, full=False)
            reads = [
                f"{prose.percent_span(f)} of {'the ' + name if i == 0 else 'it'} with {t} "
                f"token{'s' if t != 1 else ''}"
                for i, (t, f) in enumerate(sorted(fracs.items(), reverse=True))
            ]
            sentences.append(
                f"Read against the memory roof, a decode step streams the active experts' weights "
                f"at {', and at '.join(reads)}, {prose.times_span(ratios)} as fast as the "
                f"F.grouped_mm block."
            )
            sentences += passes_roof(decode, "ours", lambda s: f" ({MODEL_NAMES[s.combo['model']]})")
            sentences += _eager_decode()
    return prose.paragraph(*sentences, notes=notes)


def _eager_decode() -> list[str]:
    """A sentence saying that the decode rates are timed with the host's launches hidden, and
    how much slower a loop of eager 1-token steps of ours runs than the same step replayed
    from one CUDA graph (the ``moe_time_breakdown`` capture); ``[]`` without the capture."""
    capture, _ = captures.load(BREAKDOWN)
    if capture is None:
        return []
    payload = breakdown.check_payload(capture["payload"])
    slower = [
        ours["step_us"] / ours["graph_step_us"]
        for case in payload["cases"]
        if case["phase"] == "decode" and case["x"] == 1
        for ours in [case["providers"].get("triton", {})]
        if ours.get("graph_step_us")
    ]
    if not slower:
        return []
    return [
        f"Those rates are timed as every benchmark here is, an L2 flush before each call giving "
        f"the host a head start on its launches; in a loop of eager 1-token steps the GPU waits "
        f"on the host, and each step takes {prose.span(slower, lambda v: f'{v:.1f}')}× as long as "
        f"the same step replayed from one CUDA graph (where the time goes, below)."
    ]


# --- a loop over experts -----------------------------------------------------------------


def loop_table(result: Result) -> str:
    """Each model's grouped matmuls under uniform routing, every GPU with a record: the
    experts, rows per expert, TFLOP/s of the loop of cuBLAS calls, of ``F.grouped_mm`` and of
    ours, and the loop's speed relative to ours.

    Raises:
        TypeError, ValueError: ``result`` is not a result of ``GROUPED_MATMUL``.
    """
    check_result(result, GROUPED_MATMUL)
    sections = []
    header = ["gemm", "experts", "rows/expert", "loop TFLOP/s", "F.grouped_mm", "ours", "loop / ours"]
    for r in result.gpus():
        section = Section(f"{r.name}, uniform routing", header)
        values = {p: r.values(p, routing="uniform") for p in ("cublas_loop", "grouped_mm", "triton")}
        speed = r.ratios("cublas_loop", over="triton", routing="uniform")
        for gemm in GROUPED_MATMUL.x_values:
            model = gemm.split()[0]
            cells = [Cell(gemm), Cell(str(experts_of(model)[0])), Cell(str(rows_per_expert(model)))]
            for p in values:
                v = values[p].get(gemm)
                cells.append(number(v, ".0f"))
            s = speed.get(gemm)
            cells.append(Cell("-") if s is None else Cell(prose.times(s), s))
            section.rows.append(cells)
        sections.append(section)
    return render(sections, result.all_notes())


def loop_reading(result: Result) -> str:
    """One line per model of ``result``'s own record: its experts, the rows each gets on
    average, and the loop of cuBLAS calls' speed relative to ours over its two matmuls
    (uniform routing).

    Raises:
        TypeError, ValueError: ``result`` is not a result of ``GROUPED_MATMUL``.
    """
    check_result(result, GROUPED_MATMUL)
    if result.record is None:
        return "\n".join(result.notes)
    speed = result.ratios("cublas_loop", over="triton", routing="uniform")
    lines = []
    for model in MOE_MODELS:
        ratios = [speed[g] for g in _gemms(model) if g in speed]
        if ratios:
            lines.append(
                f"{MODEL_NAMES[model]}, {experts_of(model)[0]} experts of {rows_per_expert(model)} rows "
                f"on average: the loop runs at {prose.times_span(ratios)} our speed"
            )
    return "\n".join(lines)


# --- load imbalance ----------------------------------------------------------------------


def routing_counts(model: str, device="cpu") -> dict[str, tuple[int, int, int]]:
    """``{routing: (fewest, mean, most)}`` rows per expert of a prefill of ``model``, drawn by
    the benchmark's routing function (:func:`gpuperf.bench.catalog.routed_offsets`, seed 0)
    on ``device``; a GPU's random numbers differ from the CPU's, so the counts are alike,
    not the same as the benchmark's.

    Raises:
        ValueError: ``model`` is not a key of :data:`~gpuperf.bench.catalog.MOE_MODELS`.
    """
    import torch

    experts, top_k = experts_of(model)
    counts = {}
    for routing in MOE_ROUTINGS:
        offs = routed_offsets(MOE_PREFILL_TOKENS, experts, top_k, routing, device)
        rows = torch.diff(offs.long(), prepend=offs.new_zeros(1).long())
        counts[routing] = (int(rows.min()), MOE_PREFILL_TOKENS * top_k // experts, int(rows.max()))
    return counts


def imbalance_table(result: Result) -> str:
    """Each grouped matmul's TFLOP/s under skewed routing as a share of its uniform TFLOP/s,
    per provider, every GPU with a record.

    Raises:
        TypeError, ValueError: ``result`` is not a result of ``GROUPED_MATMUL``.
    """
    check_result(result, GROUPED_MATMUL)
    keys = [p.key for p in GROUPED_MATMUL.providers]
    sections = []
    for r in result.gpus():
        header = ["gemm", *(f"{NAMES[k]} skewed/uniform" for k in keys)]
        section = Section(f"{r.name}: TFLOP/s under skewed routing, as a share of uniform", header)
        shares = {k: _skew_shares(r, k) for k in keys}
        for gemm in GROUPED_MATMUL.x_values:
            cells = [Cell(gemm)]
            for k in keys:
                s = shares[k].get(gemm)
                cells.append(Cell("-") if s is None else Cell(prose.percent(s), s))
            section.rows.append(cells)
        sections.append(section)
    return render(sections, result.all_notes())


def _skew_shares(result: Result, provider: str) -> dict:
    """``{gemm: skewed TFLOP/s / uniform TFLOP/s}`` of one provider in ``result``'s own record."""
    uniform = result.values(provider, routing="uniform")
    skewed = result.values(provider, routing="skewed")
    return {g: skewed[g] / uniform[g] for g in skewed if uniform.get(g)}


def imbalance_reading(result: Result) -> str:
    """What skewed routing costs, from ``result``'s own record: each provider's skewed
    TFLOP/s as a share of its uniform TFLOP/s over the models with many experts (more than
    8) and over Mixtral's, and ours against ``F.grouped_mm`` under skew.

    Raises:
        TypeError, ValueError: ``result`` is not a result of ``GROUPED_MATMUL``.
    """
    check_result(result, GROUPED_MATMUL)
    if result.record is None:
        return "\n".join(result.notes)
    many = [g for m in MOE_MODELS if experts_of(m)[0] > 8 for g in _gemms(m)]
    few = [g for g in GROUPED_MATMUL.x_values if g not in many]
    parts = []
    for key in (p.key for p in GROUPED_MATMUL.providers):
        shares = _skew_shares(result, key)
        if any(g in shares for g in many) and any(g in shares for g in few):
            parts.append(
                f"{NAMES[key]} {prose.percent_span(shares[g] for g in many if g in shares)} "
                f"({prose.percent_span(shares[g] for g in few if g in shares)})"
            )
    text = (
        f"Under skewed routing, each keeps this share of its uniform TFLOP/s with "
        f"{_many_experts()} experts (with {_few_experts()} in parentheses): {', '.join(parts)}."
    )
    ratios = result.ratios("triton", over="grouped_mm", routing="skewed")
    if ratios:
        text += f" Ours runs at {prose.times_span(ratios.values())} the speed of F.grouped_mm under skew."
    return textwrap.fill(text, WIDTH)


def _many_experts() -> str:
    return " and ".join(str(experts_of(m)[0]) for m in MOE_MODELS if experts_of(m)[0] > 8)


def _few_experts() -> str:
    return " and ".join(str(experts_of(m)[0]) for m in MOE_MODELS if experts_of(m)[0] <= 8)


# --- block-scaled FP8: accuracy ----------------------------------------------------------


def outlier_channels(factor: float, shape: tuple[int, int, int], seed: int = 1):
    """Random normal activations ``a`` ``(M, K)`` whose channels :data:`OUTLIER_CHANNELS` are
    ``factor`` times larger than the rest (the outlier features of large language models'
    activations), and a weight ``w`` ``(N, K)`` scaled by ``1 / sqrt(K)``; float32 on the CPU.

    Returns:
        ``(a, w)``.

    Raises:
        ValueError: ``factor`` is not positive, or K has fewer channels than the outliers need.
    """
    import torch

    m, n, k = shape
    if not factor > 0:
        raise ValueError(f"factor must be positive, got {factor!r}")
    if k <= max(OUTLIER_CHANNELS):
        raise ValueError(f"K must be above {max(OUTLIER_CHANNELS)}, got shape {shape}")
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(m, k, generator=g)
    a[:, list(OUTLIER_CHANNELS)] *= factor
    return a, torch.randn(n, k, generator=g) * k**-0.5


def ordinary_channels(k: int):
    """A boolean mask ``(K,)`` of the channels :func:`outlier_channels` leaves unscaled."""
    import torch

    keep = torch.ones(k, dtype=torch.bool)
    keep[list(OUTLIER_CHANNELS)] = False
    return keep


@dataclass
class ScalingErrors:
    """The outlier-channel experiment's errors: per outlier factor and method, the error of
    the stored activations on the ordinary channels (what the scaling kept of them) and the
    error of the product against the float32 product of the unquantized operands.

    ``str()`` is the table (text or HTML, see :mod:`gpuperf.pages.tables`).
    """

    shape: tuple[int, int, int]
    rows: list[dict] = field(default_factory=list)

    def add(self, factor: float, method: str, stored, a, out, exact) -> None:
        """Record ``method`` at ``factor``: ``stored`` ``(M, K)``, the activations as the
        method keeps them (dequantized), ``a`` the activations, ``out`` ``(M, N)`` the
        method's product and ``exact`` the float32 product of the unquantized operands.

        Raises:
            ValueError: a shape is not ``(M, K)`` or ``(M, N)``.
        """
        m, n, k = self.shape
        if tuple(stored.shape) != (m, k) or tuple(a.shape) != (m, k):
            got = f"{tuple(stored.shape)} and {tuple(a.shape)}"
            raise ValueError(f"expected ({m}, {k}) activations, got {got}")
        if tuple(out.shape) != (m, n) or tuple(exact.shape) != (m, n):
            raise ValueError(f"expected ({m}, {n}) products, got {tuple(out.shape)} and {tuple(exact.shape)}")
        keep = ordinary_channels(k)
        self.rows.append(
            {
                "factor": factor,
                "method": method,
                "stored": relative_error(stored[:, keep], a[:, keep]),
                "product": relative_error(out, exact),
            }
        )

    def error(self, factor: float, method: str, which: str = "stored") -> float:
        """The error ``which`` (``"stored"`` or ``"product"``) of ``method`` at ``factor``.

        Raises:
            KeyError: nothing was added for that factor and method.
        """
        for r in self.rows:
            if r["factor"] == factor and r["method"] == method:
                return r[which]
        raise KeyError(f"no error recorded for factor {factor!r} and method {method!r}")

    def __str__(self) -> str:
        m, n, k = self.shape
        channels = ", ".join(str(c) for c in OUTLIER_CHANNELS)
        header = ["outliers", "method", "A as stored: ordinary channels' error", "A @ W.T: error"]
        title = (
            f"Relative errors (Frobenius norm), A {m}x{k} with outlier channels {channels}, W {n}x{k}, "
            f"against the unquantized float32 values"
        )
        section = Section(title, header)
        for r in self.rows:
            section.rows.append(
                [
                    Cell(f"{r['factor']:.0e}", r["factor"]),
                    Cell(r["method"]),
                    Cell(f"{r['stored']:.4f}", r["stored"]),
                    Cell(f"{r['product']:.4f}", r["product"]),
                ]
            )
        return render([section])


# --- block-scaled FP8: speed -------------------------------------------------------------


def fp8_table(result: Result) -> str:
    """TFLOP/s of each provider at each shape, every GPU with a record, beside DeepGEMM's
    published figure (:data:`DEEPGEMM_TFLOPS`, on another GPU) and ours as a share of it;
    the source of DeepGEMM's figures under the table.

    Raises:
        TypeError, ValueError: ``result`` is not a result of ``MATMUL_FP8_BLOCKWISE``.
    """
    check_result(result, MATMUL_FP8_BLOCKWISE)
    keys = [p.key for p in MATMUL_FP8_BLOCKWISE.providers]
    sections = []
    for r in result.gpus():
        header = ["(M, N, K)", *(NAMES[k] for k in keys), f"DeepGEMM ({DEEPGEMM_GPU})", "ours / DeepGEMM"]
        section = Section(f"{r.name}, TFLOP/s", header)
        values = {k: r.values(k) for k in keys}
        for shape in MATMUL_FP8_BLOCKWISE.x_values:
            cells = [Cell(format_x(shape))]
            for k in keys:
                v = values[k].get(shape)
                cells.append(number(v, ".0f"))
            dg, ours = DEEPGEMM_TFLOPS.get(shape), values["triton"].get(shape)
            cells.append(Cell("-") if dg is None else Cell(f"{dg}", dg))
            cells.append(Cell("-") if not (dg and ours) else Cell(prose.percent(ours / dg), ours / dg))
            section.rows.append(cells)
        sections.append(section)
    return render(sections, result.all_notes(), [f"DeepGEMM: {DEEPGEMM_SOURCE}."])


def deepgemm_reading(result: Result) -> str:
    """Ours and cuBLASLt's blockwise matmul as shares of DeepGEMM's published TFLOP/s, at
    each M of ``result``'s own record, and ours against cuBLASLt's.

    Raises:
        TypeError, ValueError: ``result`` is not a result of ``MATMUL_FP8_BLOCKWISE``.
    """
    check_result(result, MATMUL_FP8_BLOCKWISE)
    if result.record is None:
        return "\n".join(result.notes)
    lines = []
    for m in sorted({s[0] for s in MATMUL_FP8_BLOCKWISE.x_values}):
        shapes = [s for s in MATMUL_FP8_BLOCKWISE.x_values if s[0] == m and s in DEEPGEMM_TFLOPS]
        ours = result.values("triton")
        cublas = result.values("scaled_mm_blockwise")
        vs = result.ratios("triton")
        per_tensor = result.ratios("triton", over="per_tensor")
        mine = [ours[s] / DEEPGEMM_TFLOPS[s] for s in shapes if s in ours]
        theirs = [cublas[s] / DEEPGEMM_TFLOPS[s] for s in shapes if s in cublas]
        if mine and theirs:
            line = (
                f"M = {m}: ours at {prose.percent_span(mine)} of DeepGEMM's published TFLOP/s, "
                f"cuBLASLt's at {prose.percent_span(theirs)}; ours "
                f"{prose.times_span(vs[s] for s in shapes if s in vs)} cuBLASLt's speed"
            )
            tensor = [per_tensor[s] for s in shapes if s in per_tensor]
            if tensor:
                line += f" and {prose.times_span(tensor)} our per-tensor kernel's on the same FP8 values"
            lines.append(line + ".")
    lines.append(
        f"(DeepGEMM's figures: {DEEPGEMM_SOURCE}; measured on another GPU, not in this run; "
        f"{DEEPGEMM_LATER}.)"
    )
    return fill(lines)


def plot_fp8_blockwise(result: Result):
    """Bars of each provider's TFLOP/s at each shape of ``result``'s own record, one panel per
    M (their rates differ several-fold), DeepGEMM's published figure hatched beside them, the
    FP8 ceiling of the record as a dashed line named from its entry, and the record's
    provenance and DeepGEMM's source under the chart; a placeholder without a record.

    Raises:
        TypeError, ValueError: ``result`` is not a result of ``MATMUL_FP8_BLOCKWISE``.
    """
    import matplotlib.pyplot as plt
    import numpy as np

    from gpuperf.pages.plotting import plot_missing

    check_result(result, MATMUL_FP8_BLOCKWISE)
    if result.record is None:
        return plot_missing(MATMUL_FP8_BLOCKWISE.title, " ".join(result.notes))
    keys = [p.key for p in MATMUL_FP8_BLOCKWISE.providers]
    ms = sorted({s[0] for s in MATMUL_FP8_BLOCKWISE.x_values})
    ceiling_key = next(iter(result.record["ceilings"]))
    ceiling = result.record["ceilings"][ceiling_key]
    ceiling_name = ceiling_label(ceiling_key, ceiling)
    caption = textwrap.wrap(
        f"Measured: {records.caption(result.record['provenance'])}. Dashed: {ceiling_name}, "
        f"measured in the same run. DeepGEMM (hatched): {DEEPGEMM_SOURCE}; not measured here.",
        150,
    )
    caption_h = 0.12 * len(caption) + 0.1  # inches, at 7 points a line
    height = 4.3 + caption_h
    fig, axes = plt.subplots(1, len(ms), figsize=(10.0, height), squeeze=False)
    fig.patch.set_facecolor("white")
    bars = len(keys) + 1
    width = 0.8 / bars
    for ax, m in zip(axes[0], ms, strict=True):
        shapes = [s for s in MATMUL_FP8_BLOCKWISE.x_values if s[0] == m]
        xs = np.arange(len(shapes))
        for i, key in enumerate(keys):
            values = result.values(key)
            ax.bar(
                xs + (i - bars / 2 + 0.5) * width,
                [values.get(s, 0.0) for s in shapes],
                width,
                color=PROVIDER_COLORS.get(key, "#7f7f7f") if key != "per_tensor" else "#aec7e8",
                label=NAMES[key],
            )
        ax.bar(
            xs + (bars / 2 - 0.5) * width,
            [DEEPGEMM_TFLOPS.get(s, 0.0) for s in shapes],
            width,
            color="white",
            edgecolor="#555555",
            hatch="///",
            label=f"DeepGEMM, published ({DEEPGEMM_GPU})",
        )
        ax.axhline(ceiling["value"], color="#555555", ls="--", lw=1)
        ax.text(
            -0.4,
            ceiling["value"] * 1.02,
            f"FP8 ceiling, {ceiling['value']:.0f} TFLOP/s",
            fontsize=8,
            va="bottom",
            color="#555555",
        )
        ax.set_xticks(xs, [f"{n}×{k}" for _, n, k in shapes])
        ax.set_xlim(-0.5, len(shapes) - 0.5)
        ax.set_xlabel("N × K")
        ax.set_title(f"M = {m}", fontsize=10)
        ax.set_ylim(0, ceiling["value"] * 1.15)
        ax.grid(True, axis="y", color="#eeeeee")
    axes[0][0].set_ylabel("TFLOP/s")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), frameon=False, fontsize=8.5,
               bbox_to_anchor=(0.5, caption_h / height))  # fmt: skip
    fig.suptitle(f"{MATMUL_FP8_BLOCKWISE.title}, {short_gpu_name(result.gpu)}", fontsize=10.5)
    fig.text(0.01, 0.01, "\n".join(caption), fontsize=7, va="bottom")
    fig.tight_layout(rect=(0, (caption_h + 0.35) / height, 1, 1 - 0.3 / height))
    return fig


# --- the layer -----------------------------------------------------------------------------


def decode_reading(result: Result) -> str:
    """A decode step against the memory roof, from ``result``'s own record: per token count,
    ours as a share of the roof the rows are read against (named from the record), per
    model; then the sentences of any row above its roof.

    Raises:
        TypeError, ValueError: ``result`` is not a result of ``MOE_LAYER_DECODE``.
    """
    from gpuperf.pages.report import above_roof_sentences

    check_result(result, MOE_LAYER_DECODE)
    if result.record is None:
        return "\n".join(result.notes)
    lines = []
    for tokens in MOE_DECODE_TOKENS:
        each = []
        for model in MOE_MODELS:
            frac = result.fraction_of_ceiling(model=model).get(tokens)
            if frac is not None:
                each.append(f"{MODEL_NAMES[model]} {prose.percent(frac)}")
        if each:
            name = result.ceiling_name(model=next(iter(MOE_MODELS)))
            many = "s" if tokens != 1 else ""
            lines.append(f"{tokens} token{many}: ours at {', '.join(each)} of the {name}")
    stream = result.record["ceilings"].get("stream_gbps", {}).get("stream")
    if stream:
        lines.append(
            f"(The stream bandwidth is the fastest of the streams its glossary entry describes; "
            f"'({stream})' names the one that set it on this GPU.)"
        )
    lines += above_roof_sentences(result)
    return fill(lines)


# --- where the time goes -------------------------------------------------------------------


def _case_title(case: dict, sep: str = ", ") -> str:
    """A breakdown case as the page names it: ``'DeepSeek-V3, decode, 64 tokens'`` (``sep``
    between the model and the rest)."""
    model = case["axes"].get("model", "")
    unit = case["x_name"].removesuffix("s") if case["x"] == 1 else case["x_name"]
    return f"{MODEL_NAMES.get(model, model)}{sep}{case['phase']}, {case['x']} {unit}"


def _panel_title(case: dict) -> str:
    """A breakdown case's panel title: the model over the phase (narrow panels)."""
    return _case_title(case, sep="\n")


def plot_time_breakdown(gpu: str | None = None):
    """A stacked bar per provider and case of the ``moe_time_breakdown`` capture, one row of
    panels per model (prefill, then the decode steps): each part's GPU time per step in
    microseconds (:func:`gpuperf.pages.breakdown.plot_time_breakdown`); a placeholder when
    the capture is missing."""
    return breakdown.plot_time_breakdown(
        BREAKDOWN, names=NAMES, colors=PART_COLORS, title_of=_panel_title, gpu=gpu, ncols=3
    )


def breakdown_table(gpu: str | None = None) -> str:
    """Per case of the ``moe_time_breakdown`` capture of ``gpu`` (default: the reference GPU)
    and provider: the step's time, its kernels' GPU time and count, how busy they keep the
    GPU (kernels over step), the experts' matmuls' share of the kernels' time and the
    largest other part; the capture's notes (``MISSING``, ``STALE``) when it has any.

    Raises:
        ValueError: a malformed capture (:func:`gpuperf.pages.breakdown.check_payload`).
    """
    capture, notes = captures.load(BREAKDOWN, gpu)
    if capture is None:
        return "\n".join(notes)
    payload = breakdown.check_payload(capture["payload"])
    header = [
        "case", "provider", "step µs", "CUDA graph µs", "kernels µs", "kernels", "GPU busy", "expert GEMMs",
        "next part", "peak MiB",
    ]  # fmt: skip
    section = Section("Where a step's time goes", header)
    for case in payload["cases"]:
        for key, p in case["providers"].items():
            parts = p["parts_us"]
            total = p["kernels_us"]
            gemm = sum(parts.get(part, 0.0) for part in GEMM_PARTS) / total if total else 0.0
            others = {k: v for k, v in parts.items() if k not in GEMM_PARTS and v > 0}
            top = max(others, key=others.get) if others else None
            step, graph, peak = p.get("step_us"), p.get("graph_step_us"), p.get("peak_extra_mb")
            busy = total / step if step else None
            section.rows.append(
                [
                    Cell(_case_title(case)),
                    Cell(NAMES.get(key, key)),
                    number(step, ".0f"),
                    number(graph, ".0f"),
                    Cell(f"{total:.0f}", total),
                    Cell(f"{p['kernel_count']:.0f}", p["kernel_count"]),
                    Cell("-") if busy is None else Cell(prose.percent(busy), busy),
                    Cell(prose.percent(gemm), gemm),
                    Cell("-") if top is None else Cell(f"{top} {prose.percent(others[top] / total)}"),
                    number(peak, ".0f"),
                ]
            )
    caption = textwrap.fill(bench_captures.caption(capture), WIDTH)
    providers = [(k, p) for c in payload["cases"] for k, p in c["providers"].items()]
    ungraphed = sorted({NAMES.get(k, k) for k, p in providers if "graph_step_us" not in p})
    if ungraphed:
        caption = (
            textwrap.fill(f"CUDA graph µs: not captured for {', '.join(ungraphed)} ('-').", WIDTH)
            + "\n"
            + caption
        )
    return render([section], notes) + "\n" + caption


def launch_bound_reading(gpu: str | None = None) -> str:
    """What the ``moe_time_breakdown`` capture of ``gpu`` (default: the reference GPU) says of
    our one-token decode steps (the launch-bound ones): per model, the step's time as a loop
    of steps runs it, the same step replayed from one CUDA graph, and its kernels' GPU time
    (a step of more tokens is bound by its kernels: the breakdown table shows it); then the memory
    each provider's prefill allocates above the weights and the input. Empty when the
    capture is missing (:func:`breakdown_table` says so).

    Raises:
        ValueError: a malformed capture (:func:`gpuperf.pages.breakdown.check_payload`).
    """
    capture, _ = captures.load(BREAKDOWN, gpu)
    if capture is None:
        return ""
    payload = breakdown.check_payload(capture["payload"])
    lines = []
    for case in payload["cases"]:
        ours = case["providers"].get("triton", {})
        if case["phase"] != "decode" or case["x"] != 1 or "graph_step_us" not in ours:
            continue
        step, graph, kernels = ours["step_us"], ours["graph_step_us"], ours["kernels_us"]
        lines.append(
            f"{_case_title(case)}: {step:.0f} µs a step, {graph:.0f} µs from one CUDA graph "
            f"({step / graph:.1f}× faster), its kernels {kernels:.0f} µs"
        )
    peaks = []
    for case in payload["cases"]:
        if case["phase"] == "prefill":
            peak = {k: p["peak_extra_mb"] for k, p in case["providers"].items() if "peak_extra_mb" in p}
            shown = ", ".join(f"{NAMES.get(k, k)} {mib:.0f} MiB" for k, mib in peak.items())
            peaks.append(f"{_case_title(case)}: {shown}")
    if peaks:
        lines.append("Memory a prefill allocates above the weights and the input (peak):")
        lines += [f"  {line}" for line in peaks]
    return fill(lines)


__all__ = [
    "BREAKDOWN",
    "DEEPGEMM_GPU",
    "DEEPGEMM_LATER",
    "DEEPGEMM_SOURCE",
    "DEEPGEMM_TFLOPS",
    "NAMES",
    "OUTLIER_CHANNELS",
    "ScalingErrors",
    "breakdown_table",
    "decode_reading",
    "deepgemm_reading",
    "experts_of",
    "fp8_table",
    "imbalance_reading",
    "imbalance_table",
    "in_one_paragraph",
    "launch_bound_reading",
    "loop_reading",
    "loop_table",
    "ordinary_channels",
    "outlier_channels",
    "plot_fp8_blockwise",
    "plot_time_breakdown",
    "routing_counts",
    "rows_per_expert",
]
