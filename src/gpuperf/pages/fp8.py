"""Tutorial 05's topic module (FP8 matmul): its opening paragraph, the outlier experiment's
table of errors, and the tables it prints from the ``matmul_fp8`` records.

The page shows the calls (``to_fp8``, ``matmul_fp8``, ``show(MATMUL_FP8)``); what it
prints from the records (ratios per scaling and accumulation mode, the configs the
sweep chose) is formatted here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpuperf.bench.catalog import MATMUL_FP8, MATMUL_PERSISTENT
from gpuperf.pages import hardware
from gpuperf.pages.plotting import format_x, short_gpu_name
from gpuperf.pages.prose import Paragraph, paragraph, percent, times, times_span
from gpuperf.pages.report import Result, check_result, load
from gpuperf.pages.tables import Cell, Section, number, render

#: The benchmark the page is about.
BENCHMARK = MATMUL_FP8
#: The shape at which the opening paragraph quotes the kernel's share of the FP8 ceiling (the
#: ceiling itself named with the shape it was measured at) and its bfloat16 comparison.
HEADLINE_SHAPE = (8192, 8192, 8192)
#: The scalings and accumulation modes of the benchmark, in the order the tables list them.
SCALINGS = ("tensor", "row")
ACCUMULATIONS = ("fast", "float32")
#: How many rows of A :func:`outlier_case` makes larger than the rest.
OUTLIER_ROWS = 8


def gpu_sentence(result: Result, bf16: Result | None = None) -> str:
    """One GPU's headline: ``matmul_fp8`` with fast accumulation against cuBLASLt, per-tensor
    and per-row scales; at :data:`HEADLINE_SHAPE`, when ``bf16`` (the GPU's
    ``matmul_persistent`` result) is given, its TFLOP/s over cuBLAS's bfloat16 TFLOP/s, and
    its share of the fast-accumulation FP8 ceiling measured in the same run (the ceiling
    the benchmark reads fast rows against), named from the record's entry
    (:func:`~gpuperf.pages.plotting.ceiling_label`: call, accumulation mode, shape); then
    the float32-promoted ratios and their share of the promoted ceiling.

    Raises:
        ValueError: ``result`` has no record, or it has no per-tensor fast-accumulation rows.
    """
    if result.record is None:
        raise ValueError(f"no {result.benchmark.name} record to describe: {result.notes}")
    fast = result.ratios(scaling="tensor", accumulation="fast")
    if not fast:
        raise ValueError(f"the {result.benchmark.name} record of {result.gpu} has no per-tensor fast rows")
    sentence = (
        f"On the {short_gpu_name(result.gpu)}, matmul_fp8 (e4m3, fast accumulation) runs at "
        f"{times_span(fast.values())} cuBLASLt's speed with per-tensor scales"
    )
    per_row = result.ratios(scaling="row", accumulation="fast")
    if per_row:
        sentence += f" and {times_span(per_row.values())} with per-row scales"
    sentence += f" over {len(fast)} shapes"
    at = []
    ours = result.values(scaling="tensor", accumulation="fast")
    cublas = bf16.values("cublas") if bf16 is not None and bf16.record is not None else {}
    if HEADLINE_SHAPE in ours and HEADLINE_SHAPE in cublas:
        at.append(
            f"{times(ours[HEADLINE_SHAPE] / cublas[HEADLINE_SHAPE], 1)} cuBLAS's bfloat16 TFLOP/s "
            "(tutorial 06's run)"
        )
    share = _share(result, "fast")
    if share:
        at.append(share)
    if at:
        sentence += f"; at {format_x(HEADLINE_SHAPE)}, " + " and ".join(at)
    promoted = result.ratios(scaling="tensor", accumulation="float32")
    if promoted:
        sentence += (
            f"; promoting the sum to float32 takes it to {times_span(promoted.values())} "
            "cuBLASLt's promoted speed"
        )
        share = _share(result, "float32")
        if share:
            sentence += f" and, at {format_x(HEADLINE_SHAPE)}, {share}"
    return sentence + "."


def _share(result: Result, accumulation: str) -> str:
    """``"95% of cuBLASLt's FP8 ceiling measured in the same run (<call, accumulation, shape>)"``:
    the ceiling of the same accumulation (:func:`~gpuperf.pages.plotting.ceiling_label`), for
    per-tensor rows with ``accumulation`` at :data:`HEADLINE_SHAPE`; empty where the
    record holds no such row or ceiling."""
    key = BENCHMARK.ceiling_key(scaling="tensor", accumulation=accumulation)
    shares = result.fraction_of_ceiling(scaling="tensor", accumulation=accumulation)
    entry = result.record["ceilings"].get(key)
    if HEADLINE_SHAPE not in shares or entry is None:
        return ""
    return (
        f"{percent(shares[HEADLINE_SHAPE])} of cuBLASLt's FP8 ceiling measured in the same run "
        f"({hardware.ceiling_label(key, entry, name=False)})"
    )


def in_one_paragraph() -> Paragraph:
    """The page's answer, from the records of every GPU with measured ceilings
    (:func:`gpuperf.pages.hardware.gpus`): one :func:`gpu_sentence` each, and a note for
    each missing or stale ``matmul_fp8`` or ``matmul_persistent`` record.

    Returns:
        A :class:`~gpuperf.pages.prose.Paragraph`; with no record at all, its one sentence
        says so and its notes say what is missing.
    """
    sentences, notes = [], []
    for gpu in hardware.gpus():
        result, bf16 = load(BENCHMARK, gpu), load(MATMUL_PERSISTENT, gpu)
        notes += [*result.notes, *bf16.notes]
        if result.record is not None:
            sentences.append(gpu_sentence(result, bf16))
    if not sentences:
        sentences = [f"No GPU has a {BENCHMARK.name} record yet."]
    else:
        sentences.append(
            "On inputs with outlier rows, per-row scales keep the ordinary rows accurate "
            "where one scale per tensor pushes them into e4m3's subnormals."
        )
    return paragraph(*sentences, notes=notes)


def outlier_case(factor: float, shape: tuple[int, int, int], device="cpu", seed: int = 1):
    """Random normal A (M, K) with :data:`OUTLIER_ROWS` evenly spaced rows ``factor``
    times larger than the rest, and B (K, N), float32, on ``device``.

    Returns:
        ``(a, b)``.

    Raises:
        ValueError: ``factor`` is not positive, or M is smaller than :data:`OUTLIER_ROWS`.
    """
    import torch

    m, n, k = shape
    if not factor > 0:
        raise ValueError(f"factor must be positive, got {factor!r}")
    if m < OUTLIER_ROWS:
        raise ValueError(f"M must be at least {OUTLIER_ROWS}, got shape {shape}")
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(m, k, generator=g)
    a[:: m // OUTLIER_ROWS] *= factor
    return a.to(device), torch.randn(k, n, generator=g).to(device)


def ordinary_rows(m: int):
    """A boolean mask (M,) of the rows :func:`outlier_case` leaves unscaled."""
    import torch

    keep = torch.ones(m, dtype=torch.bool)
    keep[:: m // OUTLIER_ROWS] = False
    return keep


def relative_error(out, ref, rows=None) -> float:
    """``‖out - ref‖ / ‖ref‖`` (Frobenius norms, in float64) over ``rows`` (a mask or an
    index of rows; default all).

    Raises:
        ValueError: the shapes differ.
    """
    if tuple(out.shape) != tuple(ref.shape):
        raise ValueError(f"shapes differ: {tuple(out.shape)} and {tuple(ref.shape)}")
    if rows is not None:
        rows = rows.to(out.device)
        out, ref = out[rows], ref[rows]
    out, ref = out.double().cpu(), ref.double().cpu()
    return ((out - ref).norm() / ref.norm()).item()


@dataclass
class ErrorTable:
    """The outlier experiment's errors: per outlier factor and method (``"bfloat16"``, then
    the FP8 scalings), the relative error against the float64 product on the ordinary
    rows and on all rows, and against the bfloat16 product.

    ``str()`` is the table (text or HTML, see :mod:`gpuperf.pages.tables`) and a line
    with the per-row error over the per-tensor error on the ordinary rows per factor.
    """

    shape: tuple[int, int, int]
    rows: list[dict] = field(default_factory=list)

    def add(self, factor: float, method: str, out, exact) -> None:
        """Record ``out`` (M, N), the product by ``method`` of :func:`outlier_case`'s
        operands for ``factor``, against ``exact`` (their float64 product). Add
        ``"bfloat16"`` first for each factor: the others are compared with it too.

        Raises:
            ValueError: ``out`` or ``exact`` is not (M, N).
        """
        m, n, _ = self.shape
        if tuple(out.shape) != (m, n) or tuple(exact.shape) != (m, n):
            raise ValueError(f"expected ({m}, {n}) results, got {tuple(out.shape)} and {tuple(exact.shape)}")
        bf16 = next(
            (r["out"] for r in self.rows if r["factor"] == factor and r["method"] == "bfloat16"), None
        )
        self.rows.append(
            {
                "factor": factor,
                "method": method,
                "out": out if method == "bfloat16" else None,
                "ordinary": relative_error(out, exact, ordinary_rows(m)),
                "all": relative_error(out, exact),
                "vs_bf16": None if bf16 is None else relative_error(out, bf16),
            }
        )

    def error(self, factor: float, method: str) -> float:
        """The error on the ordinary rows of ``method`` at ``factor``.

        Raises:
            KeyError: nothing was added for that factor and method.
        """
        for r in self.rows:
            if r["factor"] == factor and r["method"] == method:
                return r["ordinary"]
        raise KeyError(f"no error recorded for factor {factor!r} and method {method!r}")

    def per_row_gain(self) -> dict:
        """``{factor: per-row error / per-tensor error}`` on the ordinary rows, for the
        factors that have both and a nonzero per-tensor error."""
        errors = {(r["factor"], r["method"]): r["ordinary"] for r in self.rows}
        return {
            f: errors[(f, "per row")] / errors[(f, "per tensor")]
            for f in dict.fromkeys(f for f, _ in errors)
            if errors.get((f, "per tensor")) and (f, "per row") in errors
        }

    def __str__(self) -> str:
        m, n, k = self.shape
        header = ["outliers", "method", "vs float64, ordinary rows", "all rows", "vs bfloat16"]
        section = Section(f"A {m}x{k} with {OUTLIER_ROWS} outlier rows, B {k}x{n}", header)
        for r in self.rows:
            cells = [Cell(f"{r['factor']:.0e}", r["factor"]), Cell(r["method"])]
            for key in ("ordinary", "all", "vs_bf16"):
                cells.append(number(r[key], ".4f"))
            section.rows.append(cells)
        gain = ", ".join(f"{g:.2f} at {f:.0e}" for f, g in self.per_row_gain().items())
        return f"{render([section])}\nPer-row error / per-tensor error, ordinary rows: {gain}"


def ratio_table(result: Result) -> str:
    """cuBLASLt's time over ``matmul_fp8``'s (above 1: ours is faster) per scaling and
    accumulation mode (rows) and shape (columns, those the GPU's record holds), one table
    per GPU with a record.

    Raises:
        TypeError: ``result`` is not a :class:`~gpuperf.pages.report.Result`.
        ValueError: it is not the result of ``matmul_fp8``.
    """
    check_result(result, BENCHMARK)
    sections = []
    for r in result.gpus():
        shapes = _shapes(r)
        section = Section(r.name, ["scaling", "accumulation", *map(format_x, shapes)])
        for scaling in SCALINGS:
            for accumulation in ACCUMULATIONS:
                ratios = r.ratios(scaling=scaling, accumulation=accumulation)
                cells = [Cell(scaling), Cell(accumulation)]
                for x in shapes:
                    cells.append(Cell(f"{ratios[x]:.2f}x", ratios[x]) if x in ratios else Cell("-"))
                section.rows.append(cells)
        sections.append(section)
    return render(sections, result.all_notes())


def chosen_configs(result: Result, scaling: str = "tensor") -> str:
    """The config the tuning sweep chose for ``matmul_fp8`` per shape (rows: those the
    GPU's record holds) and accumulation mode (columns), as ``PersistentConfig.label()``,
    one table per GPU.

    Raises:
        TypeError: ``result`` is not a :class:`~gpuperf.pages.report.Result`.
        ValueError: it is not the result of ``matmul_fp8``, or ``scaling`` is not one of :data:`SCALINGS`.
    """
    from gpuperf.kernels import PersistentConfig

    check_result(result, BENCHMARK)
    if scaling not in SCALINGS:
        raise ValueError(f"scaling must be one of {list(SCALINGS)}, got {scaling!r}")
    sections = []
    for r in result.gpus():
        chosen = {}
        for row in r.record["rows"]:
            if row["provider"] == r.benchmark.subject.key and row["axes"]["scaling"] == scaling:
                if row.get("config"):
                    label = PersistentConfig(**row["config"]).label()
                    chosen[(tuple(row["x"]), row["axes"]["accumulation"])] = label
        header = ["shape", *(f"{accumulation} accumulation" for accumulation in ACCUMULATIONS)]
        section = Section(f"{r.name}, {scaling} scaling", header)
        for x in _shapes(r):
            cells = [Cell(chosen.get((tuple(x), acc), "-")) for acc in ACCUMULATIONS]
            section.rows.append([Cell(format_x(x)), *cells])
        sections.append(section)
    return render(sections, result.all_notes())


def _shapes(result: Result) -> list[tuple]:
    """The benchmark's shapes that ``result``'s record holds, in declared order (a quick
    live build measures some of them)."""
    held = {row["x"] for row in result.record["rows"]}
    return [x for x in result.benchmark.x_values if x in held]
