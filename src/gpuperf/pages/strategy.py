"""The optimization-strategy guide (``guides/03_optimization_strategy.py``) as it reads
the records: its opening paragraph, and the sentences and tables each step prints.

Every number comes from a committed record, capture or tuning sweep (or a live run on a
GPU): the guide calls one function per step, and the loading, the per-GPU loops, the
kernel-name clean-up and the table formatting live here.
:mod:`gpuperf.bench.strategy` is the measuring side (``torch.compile``'s modes, graph
breaks, recompilations); nothing here measures.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable, Sequence

from gpuperf.bench import catalog as cat
from gpuperf.bench import metrics, records, tuning
from gpuperf.bench.catalog import Benchmark
from gpuperf.pages import hardware
from gpuperf.pages.plotting import ceiling_label, format_rate, format_x, short_gpu_name
from gpuperf.pages.prose import Paragraph, fill, paragraph, percent, times
from gpuperf.pages.report import Result, check_result, load
from gpuperf.pages.tables import Cell, Section, number, render

#: The largest elementwise size measured (2^28 elements, far past L2).
LARGEST = 2**28
#: Step 2's kernels: ``(benchmark, x, axes)``, from bandwidth-bound to compute-bound.
CLASSIFY = (
    (cat.VECTOR_ADD, 2**28, {}),
    (cat.GELU, 2**28, {"dtype": "float32"}),
    (cat.SOFTMAX, 8192, {}),
    (cat.MATMUL, (16, 14336, 4096), {"dtype": "bfloat16"}),
    (cat.MATMUL, (8192, 8192, 8192), {"dtype": "bfloat16"}),
    (cat.ATTENTION_FORWARD, 8192, {"dtype": "float16", "head_dim": 128, "causal": False}),
)
#: Square matmul shapes the steps on tiling, precision and persistence quote.
SQUARES = ((4096, 4096, 4096), (8192, 8192, 8192))
#: Bytes of one float32 element, and of one sector: the unit a warp's loads are served in.
ELEMENT_BYTES, SECTOR_BYTES = 4, 32
#: Words of a C++ kernel name that are not its name (namespaces, templates, types).
_NOT_NAMES = frozenset(
    {"void", "at", "native", "anonymous", "namespace", "vectorized_elementwise_kernel"}
    | {"float", "AUnaryFunctor", "BinaryFunctor", "c10", "std", "binary_internal"}
    | {"cublasLt"}
)
_WORD = re.compile(r"[A-Za-z_]\w*")


# The opening paragraph -------------------------------------------------------------


def _headline(gpu: str) -> tuple[str, list[str]]:
    """One GPU's sentence of the opening paragraph and the notes of its records."""
    results = {b.name: load(b, gpu) for b in (cat.GELU, cat.MATMUL, cat.MATMUL_PERSISTENT)}
    results |= {b.name: load(b, gpu) for b in (cat.MATMUL_FP8, cat.STRIDED_COPY)}
    notes = [f"{gpu}: {n}" for r in results.values() for n in r.notes]
    parts = []
    gelu = results["gelu"]
    fused, eager = (
        gelu.row("triton", LARGEST, dtype="float32"),
        gelu.row("naive", LARGEST, dtype="float32"),
    )
    if fused and eager and fused["status"] == eager["status"] == "ok":
        share = gelu.fraction_of_ceiling(dtype="float32")[LARGEST]
        roof = gelu.ceiling_name(dtype="float32", full=False)
        parts.append(
            f"fusing GELU's eight eager kernels into one makes it {times(eager['ms'] / fused['ms'], 1)} "
            f"faster (2^28 float32 elements, {percent(share)} of the {roof})"
        )
    square = SQUARES[0]
    tiled = results["matmul"].ratios(dtype="bfloat16").get(square)
    persistent = results["matmul_persistent"].ratios().get(square)
    if tiled is not None:
        clause = f"a tiled Triton matmul reaches {times(tiled)} cuBLAS at {format_x(square)} bf16"
        if persistent is not None:
            clause += f", and {times(persistent)} as a persistent TMA kernel"
        parts.append(clause)
    fp8 = results["matmul_fp8"].values(scaling="tensor", accumulation="fast").get(square)
    promoted = results["matmul_fp8"].values(scaling="tensor", accumulation="float32").get(square)
    bf16 = results["matmul_persistent"].values().get(square)
    if fp8 and bf16:
        clause = (
            f"FP8 with fast accumulation runs {times(fp8 / bf16)} the persistent kernel's bf16 rate "
            f"at {format_x(square)}"
        )
        if promoted:
            clause += f" ({times(promoted / bf16)} with promoted accumulation)"
        parts.append(clause)
    strided = results["strided_copy"].fraction_of_ceiling().get(8)
    if strided is not None:
        named = results["strided_copy"].ceiling_name()
        parts.append(f"a copy reading every eighth float32 keeps {percent(strided)} of the {named}")
    if not parts:
        return "", notes
    name = short_gpu_name(next(r.gpu for r in results.values() if r.record is not None))
    return f"On the {name}, " + "; ".join(parts) + ".", notes


def in_one_paragraph() -> Paragraph:
    """The guide's answer, one sentence per GPU with records: what fusing GELU buys, how
    close a tiled and a persistent Triton matmul come to cuBLAS, what FP8 adds and what
    a strided read costs; stale or missing records in its notes."""
    sentences, notes = [], []
    for gpu in hardware.gpus():
        sentence, gpu_notes = _headline(gpu)
        sentences.append(sentence)
        notes += gpu_notes
    if not any(sentences):
        notes.append(
            "MISSING: no GPU has records of this guide's benchmarks; "
            f"{records.advice(records.bench_command())}."
        )
    lead = (
        "Measure, classify with the roofline, then move less data before doing faster "
        "arithmetic: each step below is worth what its measurement says."
    )
    return paragraph(lead, *sentences, notes=notes)


# Step 1: kernels per call ------------------------------------------------------------


def short_kernel(name: str) -> str:
    """A GPU kernel's name without its C++ decoration: the first word of a demangled
    ``void at::native::...<...>`` name that is not a namespace or a template argument
    (ATen's functor or kernel); a name that is not C++ (Triton's, cuBLAS's) as it is.

    Raises:
        TypeError: ``name`` is not a string.
    """
    if not isinstance(name, str):
        raise TypeError(f"a kernel name must be a string, got {type(name).__name__}")
    if not name.startswith("void "):
        return name
    words = [w for w in _WORD.findall(name) if w not in _NOT_NAMES]
    return words[0] if words else name[:40]


def kernels_table(capture: dict) -> str:
    """The ``kernels_per_call`` capture as a table: for each benchmark and provider, how
    many GPU kernels one call launched and their short names.

    Raises:
        KeyError: the capture has no ``payload["benchmarks"]``.
    """
    section = Section("", ["benchmark", "provider", "kernels", "names"])
    for bench, providers in capture["payload"]["benchmarks"].items():
        for entry in providers.values():
            names = entry["kernels"]
            section.rows.append(
                [
                    Cell(bench),
                    Cell(entry["label"]),
                    Cell(str(len(names)), len(names)),
                    Cell(", ".join(short_kernel(n) for n in names)),
                ]
            )
    return render([section])


# Step 2: classify ---------------------------------------------------------------------


def classify_table(cases: Sequence[tuple] = CLASSIFY) -> str:
    """Each kernel of ``cases`` (``(benchmark, x, axes)``) on every GPU with ceilings, read
    as the roofline guide reads it (:mod:`gpuperf.pages.roofline`): its arithmetic
    intensity (FLOPs over bytes, from its record), the compute roof of the unit and dtype
    its arithmetic runs on with that roof's ridge point, whether it sits below the ridge
    (memory-bound) or above it (compute-bound), and the share of that roof our kernel
    reaches at its intensity: its rate over ``min(peak, intensity x memory roof)``, the
    memory roof the stream bandwidth where measured (else the copy's).
    One table per GPU, with the kernels it holds a current record of (another GPU's
    record of code that has changed since is left out, and so is a GPU without any).

    Raises:
        TypeError: a case is not ``(Benchmark, x, dict)``.
    """
    from gpuperf.bench.hardware import CEILINGS
    from gpuperf.pages import roofline

    for case in cases:
        if not (isinstance(case, tuple) and len(case) == 3 and isinstance(case[0], Benchmark)):
            raise TypeError(f"each case must be (Benchmark, x, axes), got {case!r}")
    sections, notes = [], []
    for gpu in hardware.gpus():
        ceilings = hardware.ceilings(gpu)
        roofs = roofline.roofs(
            {"ceilings": {k: {"value": v, "unit": CEILINGS[k][1]} for k, v in ceilings.measured.items()}}
        )
        header = ["kernel", "x", "FLOP/byte", "roof (ridge FLOP/byte)", "bound by", "ours, % of that roof"]
        section = Section(ceilings.name, header)
        for bench, x, axes in cases:
            result = load(bench, gpu)
            notes += [f"{ceilings.name}: {n}" for n in result.notes]
            r = result.row(bench.subject.key, x, **axes)
            if r is None:
                continue
            intensity = r["flops"] / r["bytes"]
            roof = roofs.get(bench.compute_roof_key(**axes))
            if roof is None:
                continue
            share = r["status"]
            if r["status"] == "ok":
                rate = r["flops"] / (r["ms"] * 1e-3) / 1e12
                share = percent(rate / roof.attainable(intensity))
            section.rows.append(
                [
                    Cell(bench.name),
                    Cell(format_x(x)),
                    Cell(f"{intensity:.1f}", intensity),
                    Cell(f"{roof.key.removesuffix('_tflops')} ({roof.ridge:.0f})", roof.ridge),
                    Cell("memory" if intensity < roof.ridge else "compute"),
                    Cell(share),
                ]
            )
        if section.rows:
            sections.append(section)
    return render(sections, notes)


# Step 3: fuse ------------------------------------------------------------------------


def fused_vs_eager(result: Result, fused: str = "triton", eager: str = "naive") -> str:
    """One line per GPU: how many times faster the ``fused`` provider runs than the
    ``eager`` one, smallest to largest over the sizes both measured (softmax's fused
    kernel against its five eager kernels, by default).

    Raises:
        TypeError: ``result`` is not a :class:`~gpuperf.pages.report.Result`.
    """
    check_result(result)
    lines = []
    for r in result.gpus():
        a, b = r.ratios(fused), r.ratios(eager)
        ratio = {x: a[x] / b[x] for x in a if x in b}
        if ratio:
            lines.append(
                f"{r.name}: {fused} is {min(ratio.values()):.1f}x to {max(ratio.values()):.1f}x "
                f"faster than {eager} ({format_x(min(ratio))} to {format_x(max(ratio))})"
            )
    return "\n".join(lines + result.all_notes())


def gelu_at_largest(result: Result) -> str:
    """The GELU benchmark at 2^28 elements, a table per GPU: each version's time (µs) and
    share of the ceiling its row is read against per dtype, or why it has none (the check
    against the reference refused it), that ceiling named from the record in the table's
    heading with its value (the stream bandwidth: the fastest rate the memory was shown to
    stream); under it, what share of that ceiling the eager formula reaches on the bytes
    it really moves (nine tensors, float32), and why its bfloat16 run has no time.

    Raises:
        TypeError: ``result`` is not a :class:`~gpuperf.pages.report.Result`.
    """
    check_result(result)
    keys = ("triton", "torch", "compile", "naive")
    parts = []
    for res in result.gpus():
        rows = [res.row(k, LARGEST, dtype=d) for k in keys for d in cat.ELEMENTWISE_DTYPES]
        key = next((r["ceiling"] for r in rows if r and r["ceiling"]), None)
        entry = res.record["ceilings"].get(key) if key else None
        if entry is None:
            continue
        roof = entry["value"]
        short = key.removesuffix("_gbps")
        heading = (
            f"{res.name}, 2^28 elements; % of the {ceiling_label(key, entry)} measured in the same run, "
            f"{format_rate(roof, entry['unit'])}"
        )
        section = Section(heading, ["dtype", *(f"{k} µs (% of {short})" for k in keys)])
        for dtype in cat.ELEMENTWISE_DTYPES:
            cells = [Cell(dtype)]
            for key_ in keys:
                r = res.row(key_, LARGEST, dtype=dtype)
                if r is None:
                    cells.append(Cell("-"))
                elif r["status"] != "ok":
                    cells.append(Cell(r["status"]))
                else:
                    cells.append(Cell(f"{r['ms'] * 1e3:.0f} ({percent(r['value'] / roof)})", r["ms"]))
            section.rows.append(cells)
        parts.append(render([section]))
        naive = res.row("naive", LARGEST, dtype="float32")
        if naive and naive["status"] == "ok":
            moved = metrics.gelu_eager_bytes(LARGEST, 4)
            real = metrics.gb_per_s(moved, naive["ms"]) / roof
            parts.append(
                f"the eager formula, float32, moves {moved / 2**30:.0f} GiB in {naive['ms']:.2f} ms:\n"
                f"  {percent(real)} of the {ceiling_label(key, entry)} on the bytes it really moves"
            )
        bf16 = res.row("naive", LARGEST, dtype="bfloat16")
        if bf16 and bf16["status"] != "ok" and bf16.get("message"):
            why = bf16["message"].splitlines()[0].rsplit(": ", 1)[-1][:80]
            parts.append(f"the eager formula in bfloat16: {bf16['status']} ({why})")
    return "\n".join(parts + result.all_notes())


def inductor_code(name: str, width: int = 100) -> Callable[[dict], str]:
    """A render function for :func:`gpuperf.pages.captures.show`: the Triton code Inductor
    wrote for ``name`` (``'gelu_eager'``, ``'add_relu_mul_eager'``) in the
    ``inductor_elementwise`` capture, its decorator's metadata lines cut at ``width``
    columns; a GPU whose code is the same as the previous GPU's says so instead.

    Raises:
        TypeError: ``name`` is not a string.
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a function's name (str), got {type(name).__name__}")
    shown: list[list[str]] = []

    def render(capture: dict) -> str:
        code = capture["payload"]["code"].get(name)
        if code is None:
            known = sorted(capture["payload"]["code"])
            raise KeyError(f"the capture has no code for {name!r}; it has {known}")
        if shown and code == shown[-1]:
            return "(the same code as above)"
        shown.append(code)
        cut = (
            line if len(line) <= width else line[: width - 4] + " ..."
            for s in code
            for line in s.splitlines()
        )
        return "\n".join(cut)

    return render


def add_relu_mul_at_largest(result: Result) -> str:
    """add → ReLU → multiply at 2^28 elements, per GPU and dtype: eager time over ours
    beside eager bytes over ours (8 tensors against 4), and ``torch.compile``'s time
    over ours.

    Raises:
        TypeError: ``result`` is not a :class:`~gpuperf.pages.report.Result`.
    """
    check_result(result)
    byte_ratio = metrics.add_relu_mul_eager_bytes(1, 2) / metrics.elementwise_bytes(1, 2, 3)
    lines = []
    for res in result.gpus():
        for dtype in cat.ELEMENTWISE_DTYPES:
            r = {k: res.row(k, LARGEST, dtype=dtype) for k in ("triton", "compile", "naive")}
            if all(v and v["status"] == "ok" for v in r.values()):
                ours = r["triton"]["ms"]
                lines.append(
                    f"{res.name}, {dtype}, 2^28: eager / ours {r['naive']['ms'] / ours:.2f}x "
                    f"(bytes: {byte_ratio:.0f}x), compile / ours {r['compile']['ms'] / ours:.2f}x"
                )
    return "\n".join(lines + result.all_notes())


# Steps 4 and 5: tile, coalesce -------------------------------------------------------


def matmul_vs_cublas(result: Result, shapes=(*SQUARES, (8192, 14336, 4096))) -> str:
    """Tutorial 03's bf16 matmul per GPU at ``shapes``: its time against cuBLAS's, and its
    rate as a share of the bf16 ceiling measured in the same run, which a last line per GPU
    names from the record's entry (:func:`~gpuperf.pages.plotting.ceiling_label`: the call
    and the shape that set it).

    Raises:
        TypeError: ``result`` is not a :class:`~gpuperf.pages.report.Result`.
    """
    check_result(result)
    lines = []
    for r in result.gpus():
        ratios, shares = r.ratios(dtype="bfloat16"), r.fraction_of_ceiling(dtype="bfloat16")
        for x in shapes:
            if x in ratios:
                share = f", {percent(shares[x])} of the ceiling" if x in shares else ""
                lines.append(f"{r.name}, bf16 {format_x(x):>15}: ours / cuBLAS {ratios[x]:.2f}x{share}")
        ceiling = r.record["ceilings"].get("bf16_tflops")
        if ceiling is not None and any(x in shares for x in shapes):
            named = f"{hardware.ceiling_label('bf16_tflops', ceiling)}, {ceiling['value']:.0f} TFLOP/s"
            lines.append(textwrap.fill(f"the ceiling, same run: {named}", 88, initial_indent="    "))
    return "\n".join(lines + result.all_notes())


def share_of_roof(result: Result, x=LARGEST) -> str:
    """One line per GPU: the kernel under study at ``x`` as a share of the ceiling its row is
    read against, named from the record (:meth:`~gpuperf.pages.report.Result.ceiling_name`:
    for a memory-bound kernel the stream bandwidth, the fastest rate the memory was shown
    to stream).

    Raises:
        TypeError: ``result`` is not a :class:`~gpuperf.pages.report.Result`.
    """
    check_result(result)
    lines = []
    for r in result.gpus():
        share = r.fraction_of_ceiling().get(x)
        if share is not None:
            lines.append(
                f"{r.name}: {result.benchmark.name} at {format_x(x)}, {percent(share)} of the "
                f"{r.ceiling_name()}"
            )
    return "\n".join(lines + result.all_notes())


def _fetched_per_read(result: Result, stride: int, copy_gbps: float) -> float:
    """Bytes the memory system fetched per float32 element the strided copy read, at
    ``stride``: at the copy bandwidth, its time pays for each element's 4-byte write and
    for what serving its read fetched, ``copy GB/s x time / elements - 4``."""
    ms = result.row("triton", stride)["ms"]
    return copy_gbps * 1e9 * ms * 1e-3 / cat.STRIDED_COPY_ELEMENTS - ELEMENT_BYTES


def strided_share(result: Result, stride: int = SECTOR_BYTES // ELEMENT_BYTES) -> str:
    """Per GPU: the strided copy at ``stride`` (default: one 32-byte sector per 4-byte
    read) as a share of the copy bandwidth, and why that share is above
    ``ELEMENT_BYTES / (stride x ELEMENT_BYTES)``: GB/s counts each element's read and its
    write, and only the read is strided. The bytes fetched per read come from the
    measured time (:func:`strided_table`'s column); a whole sector per read is the share
    the sector size alone predicts.

    Raises:
        TypeError: ``result`` is not a :class:`~gpuperf.pages.report.Result`.
    """
    check_result(result)
    useful = 2 * ELEMENT_BYTES  # the element read, and the element written
    sector = min(stride * ELEMENT_BYTES, SECTOR_BYTES)
    lines = []
    for r in result.gpus():
        share = r.fraction_of_ceiling().get(stride)
        if share is None:
            continue
        fetched = _fetched_per_read(r, stride, r.record["ceilings"]["copy_gbps"]["value"])
        lines.append(
            f"{r.name}: stride {stride} ({stride * ELEMENT_BYTES} bytes), {percent(share)} of the copy "
            f"bandwidth, not 1/{stride}: of the {useful} useful bytes per element, only the "
            f"{ELEMENT_BYTES}-byte read is strided; the {ELEMENT_BYTES}-byte write stays contiguous. "
            f"The time pays for {fetched:.0f} bytes fetched per read plus the write: "
            f"{useful} / ({fetched:.0f} + {ELEMENT_BYTES}) = {percent(useful / (fetched + ELEMENT_BYTES))}; "
            f"one {sector}-byte sector per read would leave "
            f"{useful} / ({sector} + {ELEMENT_BYTES}) = {percent(useful / (sector + ELEMENT_BYTES))}"
        )
    return fill(lines + result.all_notes())


def strided_table(result: Result) -> str:
    """The strided copy per GPU and stride: the useful bytes as a share of the copy
    bandwidth, the bytes the memory system fetched per 4-byte element read (at the copy
    bandwidth, the time pays for each element's 4-byte write and for what serving its
    read fetched: ``copy GB/s × time / elements − 4``), and ours against PyTorch's copy.

    Raises:
        TypeError: ``result`` is not a :class:`~gpuperf.pages.report.Result`.
    """
    check_result(result)
    sections = []
    for r in result.gpus():
        copy = r.record["ceilings"]["copy_gbps"]["value"]
        ratios = r.ratios()
        header = ["stride", "useful % of copy", "bytes fetched per float32 read", "ours / PyTorch"]
        section = Section(r.name, header)
        for stride, share in sorted(r.fraction_of_ceiling().items()):
            fetched = _fetched_per_read(r, stride, copy)
            ratio = ratios.get(stride)
            section.rows.append(
                [
                    Cell(str(stride), stride),
                    Cell(percent(share), share),
                    Cell(f"{fetched:.0f}", fetched),
                    Cell("-" if ratio is None else f"{ratio:.2f}", ratio),
                ]
            )
        sections.append(section)
    return render(sections, result.all_notes())


# Step 6: precision -------------------------------------------------------------------


def fp8_vs_bf16(fp8: Result, bf16: Result, shapes=SQUARES) -> str:
    """A table, per GPU and shape: the bf16 persistent matmul's TFLOP/s (``bf16``,
    tutorial 06), and the FP8 matmul's (``fp8``, tutorial 05, per-tensor scales) with
    the fast accumulator and with partial sums promoted to float32, each with its
    multiple of bf16.

    Raises:
        TypeError: ``fp8`` or ``bf16`` is not a :class:`~gpuperf.pages.report.Result`.
    """
    check_result(fp8, name="fp8")
    check_result(bf16, name="bf16")
    header = ["GPU", "shape", "bf16 TFLOP/s", "FP8 fast acc.", "FP8 promoted to fp32"]
    section = Section("", header)
    for r8 in fp8.gpus():
        try:
            vb = bf16.on(r8.gpu).values()
        except ValueError:
            continue
        fast = r8.values(scaling="tensor", accumulation="fast")
        promoted = r8.values(scaling="tensor", accumulation="float32")
        for x in shapes:
            if x in fast and x in promoted and x in vb:
                section.rows.append(
                    [
                        Cell(r8.name),
                        Cell(format_x(x)),
                        Cell(f"{vb[x]:.0f}", vb[x]),
                        Cell(f"{fast[x]:.0f} ({fast[x] / vb[x]:.2f}x)", fast[x]),
                        Cell(f"{promoted[x]:.0f} ({promoted[x] / vb[x]:.2f}x)", promoted[x]),
                    ]
                )
    return render([section], fp8.all_notes() + bf16.all_notes())


# Step 7: occupancy (the attention sweep) -------------------------------------------


def _attention_grids() -> dict[str, tuple[dict, dict]]:
    """``{GPU folder: (sweep, grid)}``: each GPU's attention sweep, forward kernel at
    D = 128, non-causal, as tile (rows) against (warps, stages) (columns)."""
    from gpuperf.pages.sweeps import config_grid

    out = {}
    for gpu in records.gpus_with_record(cat.ATTENTION_FORWARD.name):
        sweep = tuning.read_tuning(gpu, kernel="attention")
        if sweep:
            grid = config_grid(
                sweep["trials"], ("block_m", "block_n"), ("num_warps", "num_stages"),
                kernel="forward", head_dim=128, causal=False,
            )  # fmt: skip
            out[gpu] = (sweep, grid)
    return out


def attention_sweep_figure():
    """Heatmaps, one per GPU with an attention sweep: the forward kernel's TFLOP/s
    (fp16, D = 128, S = 4096) for each tile (rows) and (warps, stages) (columns), blank
    where not tried; the sweeps' provenance under them. Returns the figure."""
    import matplotlib.pyplot as plt
    import numpy as np

    from gpuperf.pages.sweeps import sweep_caption

    grids = _attention_grids()
    n = max(1, len(grids))
    fig, axes = plt.subplots(1, n, figsize=(5.2 * n, 3.9), facecolor="white")
    for ax, (sweep, grid) in zip(np.atleast_1d(axes), grids.values(), strict=False):
        values = np.array([[np.nan if v is None else v for v in r] for r in grid["tflops"]])
        image = ax.imshow(values, cmap="viridis", aspect="auto", vmin=0, vmax=np.nanmax(values))
        for i, j in np.argwhere(~np.isnan(values)):
            color = "white" if values[i, j] < 0.6 * np.nanmax(values) else "black"
            ax.text(j, i, f"{values[i, j]:.0f}", ha="center", va="center", fontsize=9, color=color)
        cols = [f"{w} warps\n{s} stages" for w, s in grid["cols"]]
        ax.set_xticks(range(len(grid["cols"])), cols, fontsize=8)
        ax.set_yticks(range(len(grid["rows"])), [f"{m}x{n}" for m, n in grid["rows"]], fontsize=8)
        ax.set_ylabel("tile: BLOCK_M x BLOCK_N")
        title = f"{short_gpu_name(sweep['provenance']['gpu'])}: TFLOP/s (blank: not tried)"
        ax.set_title(title, fontsize=9.5)
        fig.colorbar(image, ax=ax, fraction=0.05, pad=0.02)
    fig.suptitle("Attention forward, fp16, D = 128, S = 4096: tile vs warps and stages", fontsize=11)
    captions = [sweep_caption(sweep) for sweep, _ in grids.values()]
    fig.text(0.01, 0.005, "\n".join(captions) or "no attention sweep", fontsize=6.5, color="#333333")
    fig.subplots_adjust(left=0.1, right=0.97, top=0.84, bottom=0.2 + 0.04 * len(captions), wspace=0.3)
    return fig


def attention_sweep_spread() -> str:
    """Per GPU and tile of the attention sweep: how many (warps, stages) were tried and the
    worst over the best TFLOP/s among them."""
    lines = []
    for sweep, grid in _attention_grids().values():
        name = short_gpu_name(sweep["provenance"]["gpu"])
        for tile, values in zip(grid["rows"], grid["tflops"], strict=True):
            tried = [v for v in values if v is not None]
            if len(tried) > 1:
                lines.append(
                    f"{name}: tile {tile[0]}x{tile[1]}, {len(tried)} (warps, stages) tried: "
                    f"worst / best = {min(tried) / max(tried):.2f}"
                )
    tune = records.advice(records.bench_command("attention_forward"))
    return "\n".join(lines) or f"MISSING: no attention tuning sweep; {tune} (it tunes first)."


# Step 8: autotune ----------------------------------------------------------------------


def matmul_sweep_figure(dtype: str = "bfloat16"):
    """Tutorial 03's matmul tuning sweep on the reference GPU, as a heatmap of % of the
    best config at each shape (:func:`gpuperf.pages.sweeps.plot_sweep`); a placeholder
    figure when there is no sweep.

    Raises:
        ValueError: ``dtype`` is not one the sweep timed.
    """
    from gpuperf.pages.plotting import plot_missing
    from gpuperf.pages.sweeps import plot_sweep

    sweep = tuning.read_tuning(records.reference_gpu())
    if sweep is None:
        return plot_missing("Matmul tuning sweep", "no committed sweep for the reference GPU")
    dtypes = {t["dtype"] for t in sweep["trials"]}
    if dtype not in dtypes:
        raise ValueError(f"dtype must be one of {sorted(dtypes)}, got {dtype!r}")
    return plot_sweep(sweep, dtype)


def tuned_vs_max_autotune(result: Result) -> str:
    """Per GPU: our tuned bf16 matmul's speed over ``torch.compile(mode="max-autotune")``'s
    (over the squares from 1024³ to 8192³ the record holds, the first and last named),
    then, from each GPU's tuning sweep, the worst bf16 config's TFLOP/s over the best's at
    4096³ and 8192³ (each dtype was swept on its own).

    Raises:
        TypeError: ``result`` is not a :class:`~gpuperf.pages.report.Result`.
    """
    check_result(result)
    lines = []
    for r in result.gpus():
        vs = {}
        for x in cat.MATMUL_SQUARE[2:]:
            mine, theirs = r.row("triton", x, dtype="bfloat16"), r.row("compile", x, dtype="bfloat16")
            if mine and theirs and mine["status"] == theirs["status"] == "ok":
                vs[x] = theirs["ms"] / mine["ms"]
        if vs:
            lines.append(
                f"{r.name}: ours / max-autotune, bf16, {format_x(min(vs))} to {format_x(max(vs))}: "
                f"{min(vs.values()):.2f}x to {max(vs.values()):.2f}x"
            )
    for gpu in records.gpus_with_record(cat.MATMUL.name):
        sweep = tuning.read_tuning(gpu)
        spreads = []
        for shape in SQUARES if sweep else ():
            ok = [
                t["tflops"]
                for t in sweep["trials"]
                if tuple(t["shape"]) == shape and t["dtype"] == "bfloat16" and t["status"] == "ok"
            ]
            if ok:
                spreads.append(
                    f"  {format_x(shape)}: worst / best = {min(ok) / max(ok):.2f} over {len(ok)} configs"
                )
        if spreads:
            lines += [f"{short_gpu_name(sweep['provenance']['gpu'])}, tuning sweep, bf16:", *spreads]
    return "\n".join(lines + result.all_notes())


# Steps 9 and 10: persistent, stop -----------------------------------------------------

#: Tutorial 06's ladder: provider key and the name of its rung.
LADDER = (
    ("triton_t03", "t03"),
    ("triton_pointer", "pointer"),
    ("triton_tma", "tma"),
    ("triton_tma_ws", "tma_ws"),
    ("triton", "tuned"),
)


def persistent_ladder(result: Result, shapes=SQUARES) -> str:
    """Tutorial 06's ladder, a table per GPU and shape: each rung's speed against cuBLAS
    (tutorial 03's kernel, the persistent grid, TMA loads, warp specialization, the
    tuned best).

    Raises:
        TypeError: ``result`` is not a :class:`~gpuperf.pages.report.Result`.
    """
    check_result(result)
    section = Section("x cuBLAS", ["GPU", "shape", *(name for _, name in LADDER)])
    for r in result.gpus():
        ratios = {key: r.ratios(key) for key, _ in LADDER}
        for x in shapes:
            cells = [Cell(r.name), Cell(format_x(x))]
            for key, _ in LADDER:
                ratio = ratios[key].get(x)
                cells.append(number(ratio, ".2f"))
            section.rows.append(cells)
    return render([section], result.all_notes())


def roof_table(results: Sequence[Result]) -> str:
    """Each benchmark of ``results`` on each GPU at its best measured point: the kernel
    under study as a share of the ceiling its record measured in the same run (for a
    memory-bound kernel the stream bandwidth, the fastest rate the memory was shown to
    stream; for a compute-bound one the vendor matmul, for FP8 that of the row's
    accumulation mode), where
    (x and axes), and that ceiling, named from its record entry
    (:func:`~gpuperf.pages.plotting.ceiling_label`) with its value.

    Raises:
        TypeError: an item of ``results`` is not a :class:`~gpuperf.pages.report.Result`.
    """
    for result in results:
        check_result(result, name="each item of results")
    section = Section("", ["kernel", "GPU", "% of its roof", "at", "its roof, measured in the same run"])
    notes = []
    for result in results:
        bench = result.benchmark
        notes += result.all_notes()
        for r in result.gpus():
            points = [(v, x, c) for c in bench.combos() for x, v in r.fraction_of_ceiling(**c).items()]
            if points:
                v, x, c = max(points, key=lambda item: item[0])
                where = ", ".join([format_x(x), *(f"{k}={val}" for k, val in c.items())])
                key = bench.ceiling_key(**c)
                entry = r.record["ceilings"].get(key, {})
                roof = ceiling_label(key, entry)
                if "value" in entry:
                    roof = f"{format_rate(entry['value'], entry['unit'])}, {roof}"
                section.rows.append(
                    [Cell(bench.name), Cell(r.name), Cell(percent(v), v), Cell(where), Cell(roof)]
                )
    return render([section], notes)


# Case study: torch.compile's modes -------------------------------------------------------


def _per_call(entry: dict) -> float:
    """Time per call of a loop of calls: the larger of GPU and host time, ms."""
    return max(entry["gpu_ms"], entry["host_ms"])


def compile_table(capture: dict) -> str:
    """The ``compile_modes`` capture, one table per case (tokens, dim, hidden): for each
    mode, its compile time, GPU and host time per call, which of the two bounds a loop
    of calls, its speed over eager, after how many calls a gain repays the compile
    time, and how many kernels one call launches; under each table, those kernels by
    mode (short names).

    Raises:
        KeyError: the capture has no ``payload["cases"]`` or ``payload["results"]``.
    """
    payload = capture["payload"]
    header = ["mode", "compile s", "GPU us", "host us", "bound by", "vs eager", "repaid after", "kernels"]
    parts = []
    for case, shape in payload["cases"].items():
        results = payload["results"][case]
        eager = results.get("eager", {})
        base = _per_call(eager) if eager.get("status") == "ok" else None
        heading = f"{case}: tokens={shape['tokens']}, dim={shape['dim']}, hidden={shape['hidden']}, bfloat16"
        section, names = Section(heading, header), []
        for mode in payload["modes"]:
            e = results.get(mode, {"status": "missing"})
            if e["status"] != "ok":
                names.append(f"{mode}: {e['status']}: {e.get('message', '')[-100:]}")
                section.rows.append([Cell(mode), Cell(e["status"]), *[Cell("-")] * 6])
                continue
            per_call = _per_call(e)
            speedup = base / per_call if base else None
            repaid = None
            if base and mode != "eager" and per_call < base:
                repaid = e["compile_s"] / ((base - per_call) * 1e-3)
            kernels = e["kernels"]
            if kernels:
                names.append(f"{mode}: " + ", ".join(short_kernel(k) for k in kernels))
            section.rows.append(
                [
                    Cell(mode),
                    Cell(f"{e['compile_s']:.1f}", e["compile_s"]),
                    Cell(f"{e['gpu_ms'] * 1e3:.1f}", e["gpu_ms"]),
                    Cell(f"{e['host_ms'] * 1e3:.1f}", e["host_ms"]),
                    Cell("host" if e["host_ms"] > e["gpu_ms"] else "GPU"),
                    Cell("-" if speedup is None else f"{speedup:.2f}x", speedup),
                    Cell("-" if repaid is None else f"{repaid:,.0f} calls", repaid),
                    Cell(
                        "-" if kernels is None else str(len(kernels)),
                        None if kernels is None else len(kernels),
                    ),
                ]
            )
        parts += [render([section]), "kernels per call:", *(f"  {line}" for line in names)]
    return "\n".join(parts)


#: The ``torch.compile`` modes that record CUDA graphs on a GPU (``max-autotune`` does too;
#: ``max-autotune-no-cudagraphs`` is the mode without them).
CUDA_GRAPH_MODES = ("reduce-overhead", "max-autotune")
#: The kernel that copies a call's input into a CUDA graph's own buffer (``torch._foreach_copy_``).
INPUT_COPY_KERNEL = "multi_tensor_apply_kernel"


def gemm_kernels(kernels: Sequence[str]) -> dict[str, int]:
    """How many of ``kernels`` (short names, :func:`short_kernel`) are GEMMs, by who wrote
    them: ``{"cuBLAS": n, "Triton templates": m}`` (cuBLAS's ``nvjet_...`` and
    ``...gemm...`` kernels, its split-K reduction not counted; Inductor's
    ``triton_tem_...`` templates), zero counts left out."""
    counts = {
        "cuBLAS": sum(k.startswith("nvjet") or "gemm" in k.lower() for k in kernels),
        "Triton templates": sum(k.startswith("triton_tem_") for k in kernels),
    }
    return {who: n for who, n in counts.items() if n}


def _gemms(kernels: Sequence[str]) -> str:
    """``'cuBLAS 2'``, ``'Triton templates 2'`` or ``'none'``: :func:`gemm_kernels` in words."""
    return ", ".join(f"{who} {n}" for who, n in gemm_kernels(kernels).items()) or "none"


def compile_reading(capture: dict) -> str:
    """What each mode of a ``compile_modes`` capture did, case by case under the GPU's
    name, for the prose to read: per mode, its GPU time against eager's, its host time,
    which of the two bounds a loop of calls and its speed over eager, who wrote its
    GEMMs, and whether it copies its input into a CUDA graph's buffer. Where a
    CUDA-graph mode (:data:`CUDA_GRAPH_MODES`) is host-bound and spends at least eager's
    host time per call, a last line says so (launching a recorded graph should cost the
    host a few µs): where its kernels show the input's copy into the graph's buffer, the
    graph replayed and the host's time is torch.compile's own around it; otherwise it says
    what the measurement asks, without naming a cause it cannot show.

    Raises:
        KeyError: the capture has no ``payload["cases"]`` or ``payload["results"]``.
    """
    payload = capture["payload"]
    gpu = capture.get("provenance", {}).get("gpu")
    out = [f"{short_gpu_name(gpu)}:"] if gpu else []
    for case in payload["cases"]:
        results = payload["results"][case]
        eager = results.get("eager", {})
        if eager.get("status") != "ok":
            out.append(f"{case}: no eager measurement to compare with")
            continue
        base = _per_call(eager)
        out.append(
            f"{case}: eager GPU {eager['gpu_ms'] * 1e3:.0f} µs, host {eager['host_ms'] * 1e3:.0f} µs "
            f"({'host' if eager['host_ms'] > eager['gpu_ms'] else 'GPU'}-bound), "
            f"{len(eager['kernels'] or ())} kernels, GEMMs: "
            + _gemms([short_kernel(k) for k in eager["kernels"] or ()])
        )
        questions = []
        for mode in payload["modes"]:
            e = results.get(mode, {"status": "missing"})
            if mode == "eager" or e["status"] != "ok":
                continue
            kernels = [short_kernel(k) for k in e["kernels"] or ()]
            host_bound = e["host_ms"] > e["gpu_ms"]
            line = (
                f"  {mode}: GPU {e['gpu_ms'] * 1e3:.0f} µs ({e['gpu_ms'] / eager['gpu_ms']:.2f}x eager's), "
                f"host {e['host_ms'] * 1e3:.0f} µs ({e['host_ms'] / eager['host_ms']:.2f}x): "
                f"{'host' if host_bound else 'GPU'}-bound, {base / _per_call(e):.2f}x eager"
            )
            if e["kernels"] is not None:
                line += f"; GEMMs: {_gemms(kernels)}"
                if INPUT_COPY_KERNEL in kernels:
                    line += "; copies x into the graph's buffer"
            out.append(line)
            if mode in CUDA_GRAPH_MODES and host_bound and e["host_ms"] >= eager["host_ms"]:
                slow = (
                    f"  {mode} launches its kernels as one recorded CUDA graph, yet its host "
                    f"time per call ({e['host_ms'] * 1e3:.0f} µs) is not below eager's "
                    f"({eager['host_ms'] * 1e3:.0f} µs for {len(eager['kernels'] or ())} launches "
                    "one by one), where launching a graph should cost the host a few µs. "
                )
                if INPUT_COPY_KERNEL in kernels:  # the copy into the graph's static input
                    slow += (
                        "The graph did replay on each call: its kernels begin with the copy of "
                        "x into the graph's buffer, which only a replay needs. So the host's "
                        "time goes to what torch.compile does around the replay (checking its "
                        "guards, its wrappers), not to launching kernels."
                    )
                else:
                    slow += (
                        "The measurement asks whether the graph was replayed on each call, or "
                        "what else took the host's time; it does not show which."
                    )
                questions.append(slow)
        out += questions
    return fill(out, "      ")


def compile_winners(capture: dict) -> str:
    """One line per case of the ``compile_modes`` capture: the modes faster than eager per
    call (the larger of GPU and host time), each with its speed-up, or ``none``."""
    lines = []
    for case, modes in capture["payload"]["results"].items():
        ok = {m: _per_call(e) for m, e in modes.items() if e["status"] == "ok"}
        if "eager" in ok:
            faster = [
                f"{m} ({ok['eager'] / t:.2f}x)" for m, t in ok.items() if m != "eager" and t < ok["eager"]
            ]
            lines.append(f"{case}: faster than eager: {', '.join(faster) or 'none'}")
    return "\n".join(lines)
