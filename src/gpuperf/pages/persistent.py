"""Tutorial 06's topic module (persistent matmul with TMA): its opening paragraph, the
tile the tuning sweep chose, the sweeps' tables, and the ladder's ratios per rung.

The page shows the kernel, the wave arithmetic and the calls
(``matmul_persistent``, ``show(MATMUL_PERSISTENT)``); reading the committed sweeps
(``src/gpuperf/kernels/tuned/<gpu>/``) and formatting what it prints from the records
happen here.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from gpuperf.bench import records
from gpuperf.bench.catalog import MATMUL_PERSISTENT
from gpuperf.pages import hardware
from gpuperf.pages.plotting import format_x, short_gpu_name
from gpuperf.pages.prose import Paragraph, paragraph, span, times
from gpuperf.pages.report import Result, check_result, load
from gpuperf.pages.tables import Cell, Section, render

#: The benchmark the page is about.
BENCHMARK = MATMUL_PERSISTENT
#: The ladder's providers, bottom rung first, and how the tables name them.
RUNGS = {
    "triton_t03": "t03",
    "triton_pointer": "pointer",
    "triton_tma": "tma",
    "triton_tma_ws": "tma_ws",
    "triton": "tuned",
}
#: The tuning sweeps the page shows: the bfloat16 ladder's and the FP8 ladder's.
SWEEPS = ("matmul_persistent", "matmul_fp8")


def _ratio_span(ratios: dict) -> str:
    return span(ratios.values()) + "×"


#: The ladder's steps the opening paragraph reads, each a rung over the rung below it: its
#: provider, the one it is compared with, and how the sentence names the step.
STEPS = (
    ("triton_pointer", "triton_t03", "the persistent grid with computed pointers over tutorial 03's kernel"),
    ("triton_tma", "triton_pointer", "TMA loads over computed pointers"),
    ("triton_tma_ws", "triton_tma", "warp specialization over TMA alone"),
)


@dataclass(frozen=True)
class Repeat:
    """The same kernel and config timed twice in one run: the tuned kernel's row and the row
    of the rung whose config the sweep picked at that shape.

    Attributes:
        x: the shape (M, N, K).
        rung: the provider key of the rung timed again (``"triton_tma"``, ...).
        tflops: the two timings, TFLOP/s, the slower first.
        ratio: the slower time over the faster (at least 1): how far two timings of the
            same thing can differ in this record.
    """

    x: tuple
    rung: str
    tflops: tuple[float, float]
    ratio: float


def repeats(result: Result) -> list[Repeat]:
    """Every pair of rows in ``result``'s record that timed the same kernel and config at the
    same shape: the tuned kernel (provider ``"triton"``) and the rung of :data:`RUNGS` whose
    config is the tuned one's, in the record's shape order.

    Raises:
        ValueError: ``result`` has no record.
    """
    if result.record is None:
        raise ValueError(f"no {result.benchmark.name} record to read: {result.notes}")
    tuned = result.rows("triton")
    found = []
    for x, row in tuned.items():
        for key in RUNGS:
            other = result.rows(key).get(x) if key not in ("triton", "triton_t03") else None
            if other is not None and other["config"] == row["config"]:
                slow, fast = sorted((row, other), key=lambda r: -r["ms"])
                found.append(Repeat(x, key, (slow["value"], fast["value"]), slow["ms"] / fast["ms"]))
                break
    return found


def repeat_spread(result: Result) -> Repeat | None:
    """The widest of :func:`repeats`: how far apart the same kernel and config, timed twice in
    this run, came out (None when the record holds no such pair). A step between rungs by
    less than its :attr:`~Repeat.ratio`, either way, is no measurable difference.

    Raises:
        ValueError: ``result`` has no record.
    """
    return max(repeats(result), key=lambda r: r.ratio, default=None)


def verdicts(ratios: dict, spread: float | None) -> dict:
    """``{x: "faster" | "slower" | "no measurable difference"}``: each of ``ratios`` (``{x:
    time of the rung below / time of this rung}``) read against the repeat ``spread``
    (:func:`repeat_spread`'s ratio, or None for none known): faster or slower by more than
    the spread, or within it.

    Raises:
        ValueError: ``spread`` is below 1.
    """
    if spread is not None and not spread >= 1:
        raise ValueError(f"spread must be a ratio of at least 1, got {spread!r}")
    limit = spread or 1.0

    def verdict(r: float) -> str:
        if 1 / limit <= r <= limit:
            return "no measurable difference"
        return "faster" if r > 1 else "slower"

    return {x: verdict(r) for x, r in ratios.items()}


def step_clause(ratios: dict, spread: float | None, words: str) -> str:
    """``'<words>: 1.11–1.24×, faster at 6 of 6 shapes'``: one step of the ladder, its
    ratios' span and the :func:`verdicts` that occur, counted, the most frequent first.

    Raises:
        ValueError: ``ratios`` is empty, or ``spread`` is below 1.
    """
    if not ratios:
        raise ValueError(f"no ratios for the step {words!r}")
    counts = Counter(verdicts(ratios, spread).values())
    parts = [f"{what} at {count} of {len(ratios)} shapes" for what, count in counts.most_common()]
    return f"{words}: {_ratio_span(ratios)}, " + ", ".join(parts)


def gpu_sentence(result: Result) -> str:
    """One GPU's headline: the tuned persistent kernel against cuBLAS over every shape,
    tutorial 03's kernel beside it, then each step of the ladder (:data:`STEPS`) over every
    shape, worded against the record's repeat spread (:func:`repeat_spread`, :func:`step_clause`).

    Raises:
        ValueError: ``result`` has no record, or no rows of the tuned kernel.
    """
    if result.record is None:
        raise ValueError(f"no {result.benchmark.name} record to describe: {result.notes}")
    tuned = result.ratios("triton")
    if not tuned:
        raise ValueError(f"the {result.benchmark.name} record of {result.gpu} has no tuned rows")
    sentences = [
        f"On the {short_gpu_name(result.gpu)}, in bfloat16, the tuned persistent TMA kernel "
        f"runs at {_ratio_span(tuned)} cuBLAS's speed (cuBLAS's time over ours: above 1, ours "
        f"is faster) over {len(tuned)} shapes"
    ]
    t03 = result.ratios("triton_t03")
    if t03:
        sentences[0] += f", where tutorial 03's kernel reaches {_ratio_span(t03)}"
    sentences[0] += "."
    repeat = repeat_spread(result)
    if repeat is not None:
        low, high = sorted(repeat.tflops)
        sentences.append(
            f"The same kernel and config, timed twice in this run (the tuned column and its "
            f"rung), came out up to {times(repeat.ratio)} apart ({format_x(repeat.x)}: "
            f"{low:.0f} and {high:.0f} TFLOP/s): a step smaller than that either way is no "
            f"measurable difference."
        )
    spread = repeat.ratio if repeat else None
    ratios = {provider: result.ratios(provider, over=over) for provider, over, _ in STEPS}
    steps = [step_clause(ratios[provider], spread, words) for provider, _, words in STEPS if ratios[provider]]
    if steps:
        sentences.append("Step by step (time of the rung below over this rung's): " + "; ".join(steps) + ".")
    pointer = set(verdicts(ratios["triton_pointer"], spread).values())
    tma = set(verdicts(ratios["triton_tma"], spread).values())
    if pointer and tma == {"faster"} and "faster" not in pointer:
        sentences.append(
            "The persistent grid alone gained nothing over tutorial 03's kernel at any shape: "
            "the gain is TMA's."
        )
    return " ".join(sentences)


def in_one_paragraph() -> Paragraph:
    """The page's answer, from the ``matmul_persistent`` records of every GPU with measured
    ceilings (:func:`gpuperf.pages.hardware.gpus`): one :func:`gpu_sentence` each, and a
    note for each missing or stale record.

    Returns:
        A :class:`~gpuperf.pages.prose.Paragraph`; with no record at all, its one sentence
        says so and its notes say what is missing.
    """
    sentences, notes = [], []
    for gpu in hardware.gpus():
        result = load(BENCHMARK, gpu)
        notes += result.notes
        if result.record is not None:
            sentences.append(gpu_sentence(result))
    if not sentences:
        sentences = [f"No GPU has a {BENCHMARK.name} record yet."]
    return paragraph(*sentences, notes=notes)


def read_sweep(kernel: str = "matmul_persistent", gpu: str | None = None, root: Path | None = None) -> dict:
    """The committed tuning sweep of ``kernel`` (one of :data:`SWEEPS`) on ``gpu`` (a
    folder such as ``'nvidia-h200'``; default the page's GPU,
    :func:`gpuperf.pages.hardware.page_gpu`), from ``root`` (default
    ``src/gpuperf/kernels/tuned``).

    Raises:
        ValueError: ``kernel`` is not one of :data:`SWEEPS`.
        FileNotFoundError: no sweep of ``kernel`` for ``gpu``; the message says how to make one.
    """
    from gpuperf.bench.tuning import read_tuning
    from gpuperf.kernels.configs import TUNED_DIR

    if kernel not in SWEEPS:
        raise ValueError(f"kernel must be one of {list(SWEEPS)}, got {kernel!r}")
    gpu = gpu or hardware.page_gpu()
    sweep = read_tuning(gpu, root, kernel=kernel)
    if sweep is None:
        where = (root or TUNED_DIR) / gpu / f"{kernel}.json"
        raise FileNotFoundError(
            f"no {kernel} sweep for {gpu} (expected {where}): "
            f"{records.advice(records.bench_command(kernel), 'that GPU')} (it tunes first)"
        )
    return sweep


def tuned_tile(gpu: str | None = None, root: Path | None = None) -> tuple[int, int]:
    """``(BLOCK_M, BLOCK_N)``: the output tile the bfloat16 sweep chose at the most
    shapes on ``gpu`` (default the page's GPU).

    Raises:
        FileNotFoundError: no committed sweep for ``gpu`` (see :func:`read_sweep`).
        ValueError: the sweep chose no config.
    """
    sweep = read_sweep("matmul_persistent", gpu, root)
    tiles = Counter(
        (e["config"]["block_m"], e["config"]["block_n"]) for e in sweep["best"] if e["variant"] == "best"
    )
    if not tiles:
        raise ValueError(f"the matmul_persistent sweep for {gpu or hardware.page_gpu()} chose no config")
    return tiles.most_common(1)[0][0]


def sweep_section(kernel: str, sweep: dict) -> Section:
    """The table of one ladder sweep: per shape (and FP8 accumulation mode), the configs that
    ran, the best TFLOP/s of each rung, and the fastest config overall.

    Raises:
        ValueError: ``sweep`` has no trials.
    """
    from gpuperf.kernels.configs import VARIANTS, PersistentConfig

    if not sweep.get("trials"):
        raise ValueError(f"the {kernel} sweep has no trials")

    def case(entry):
        return tuple(entry["shape"]), entry.get("accumulation")

    best = {(case(e), e["variant"]): e for e in sweep["best"]}
    cases = list(dict.fromkeys(case(t) for t in sweep["trials"]))
    fp8 = any(acc is not None for _, acc in cases)
    header = ["shape", *(["accumulation"] if fp8 else []), "configs ran"]
    header += [f"{v} TFLOP/s" for v in VARIANTS] + ["fastest config"]
    section = Section(f"{kernel}, {short_gpu_name(sweep['provenance']['gpu'])}", header)
    for c in cases:
        ran = sum(t["status"] == "ok" for t in sweep["trials"] if case(t) == c)
        cells = [Cell(format_x(c[0])), *([Cell(c[1])] if fp8 else []), Cell(str(ran), ran)]
        for v in VARIANTS:
            e = best.get((c, v))
            cells.append(Cell(f"{e['tflops']:.0f}", e["tflops"]) if e else Cell("-"))
        top = best.get((c, "best"))
        cells.append(Cell(PersistentConfig(**top["config"]).label() if top else "-"))
        section.rows.append(cells)
    return section


def sweep_tables(gpu: str | None = None, root: Path | None = None) -> str:
    """For each sweep in :data:`SWEEPS` on ``gpu`` (default the page's GPU): a table per
    shape of each rung's best TFLOP/s and the fastest config (:func:`sweep_section`),
    then where and how each sweep ran; a MISSING note for a sweep that is not committed.
    The tables are text, or HTML with ``GPUPERF_TABLES=html``.
    """
    from gpuperf.pages.sweeps import sweep_caption

    sections, missing, captions = [], [], []
    for kernel in SWEEPS:
        try:
            sweep = read_sweep(kernel, gpu, root)
        except FileNotFoundError as err:
            missing.append(f"MISSING: {err}")
            continue
        sections.append(sweep_section(kernel, sweep))
        captions.append(f"{kernel}: {sweep_caption(sweep)}")
    return "\n".join([render(sections, missing), *captions])


def ladder_table(result: Result) -> str:
    """Each rung's speed relative to cuBLAS (cuBLAS's time over the rung's: above 1, faster
    than cuBLAS) per shape (rows), one table per GPU with a record.

    Raises:
        TypeError: ``result`` is not a :class:`~gpuperf.pages.report.Result`.
        ValueError: it is not the result of ``matmul_persistent``.
    """
    check_result(result, BENCHMARK)
    sections = []
    for r in result.gpus():
        ratios = {key: r.ratios(key) for key in RUNGS}
        section = Section(f"{r.name}: time of cuBLAS / time of", ["shape", *RUNGS.values()])
        for x in r.benchmark.x_values:
            cells = [
                Cell(f"{ratios[k][x]:.2f}x", ratios[k][x]) if x in ratios[k] else Cell("-") for k in RUNGS
            ]
            section.rows.append([Cell(format_x(x)), *cells])
        sections.append(section)
    return render(sections, result.all_notes())
