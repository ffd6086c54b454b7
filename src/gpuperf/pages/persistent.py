"""Tutorial 06's topic module (persistent matmul with TMA): its opening paragraph, the
tile the tuning sweep chose, the sweeps' tables, and the ladder's ratios per rung.

The page shows the kernel, the wave arithmetic and the calls
(``matmul_persistent``, ``show(MATMUL_PERSISTENT)``); reading the committed sweeps
(``src/gpuperf/kernels/tuned/<gpu>/``) and formatting what it prints from the records
happen here.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from gpuperf.bench import records
from gpuperf.bench.catalog import MATMUL_PERSISTENT
from gpuperf.pages import hardware
from gpuperf.pages.plotting import format_x, short_gpu_name
from gpuperf.pages.prose import Paragraph, paragraph, span, times
from gpuperf.pages.report import Result, load
from gpuperf.pages.tables import Cell, Section, render

#: The benchmark the page is about.
BENCHMARK = MATMUL_PERSISTENT
#: The shape the opening paragraph follows the ladder at.
HEADLINE_SHAPE = (8192, 8192, 8192)
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


def gpu_sentence(result: Result) -> str:
    """One GPU's headline: the tuned persistent kernel against cuBLAS over every shape and
    at :data:`HEADLINE_SHAPE`, tutorial 03's kernel beside it, and each rung at
    :data:`HEADLINE_SHAPE`.

    Raises:
        ValueError: ``result`` has no record, or no rows of the tuned kernel.
    """
    if result.record is None:
        raise ValueError(f"no {result.benchmark.name} record to describe: {result.notes}")
    ratios = {key: result.ratios(key) for key in RUNGS}
    tuned = ratios["triton"]
    if not tuned:
        raise ValueError(f"the {result.benchmark.name} record of {result.gpu} has no tuned rows")
    sentence = (
        f"On the {short_gpu_name(result.gpu)}, in bfloat16, the tuned persistent TMA kernel "
        f"runs at {_ratio_span(tuned)} cuBLAS's speed over {len(tuned)} shapes"
    )
    if ratios["triton_t03"]:
        sentence += f", where tutorial 03's kernel reaches {_ratio_span(ratios['triton_t03'])}"
    at = {RUNGS[k]: r[HEADLINE_SHAPE] for k, r in ratios.items() if HEADLINE_SHAPE in r}
    steps = [f"{times(at[name])} {words}" for name, words in _RUNG_WORDS if name in at]
    if steps:
        sentence += f"; at {format_x(HEADLINE_SHAPE)}: " + ", ".join(steps)
    return sentence + "."


_RUNG_WORDS = (
    ("t03", "tutorial 03"),
    ("pointer", "persistent with computed pointers"),
    ("tma", "with TMA"),
    ("tma_ws", "with TMA and warp specialization"),
)


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
    else:
        sentences.append("Ratios are cuBLAS's time over ours: above 1, ours is faster.")
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
        TypeError: ``result`` is not the :class:`~gpuperf.pages.report.Result` of
            ``matmul_persistent``.
    """
    if not isinstance(result, Result) or result.benchmark.name != BENCHMARK.name:
        got = result.benchmark.name if isinstance(result, Result) else type(result).__name__
        raise TypeError(
            f"expected the Result of {BENCHMARK.name} (run_or_load(MATMUL_PERSISTENT)), got {got}"
        )
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
