"""Tutorial 02 (fused softmax) in words, read from the records.

The page shows the byte count, the kernels and one-line calls; what it prints about
the measurements comes from here: the opening paragraph (:func:`in_one_paragraph`)
and, for each benchmark, the share of the bandwidth ceiling its record reads it against
(named from the record: the stream bandwidth, the fastest rate the memory was shown to
stream) the kernel reaches at each row length and its speed relative to
``torch.softmax``, the naive five-kernel code and ``torch.compile``
(:func:`bandwidth_and_speedups`). Each function that takes a
:class:`~gpuperf.pages.report.Result` writes about every GPU it holds a record for
(the GPU measured live or the reference GPU, then the others).
"""

from __future__ import annotations

import re
import textwrap

from gpuperf.bench import records
from gpuperf.bench.catalog import SOFTMAX, SOFTMAX_LONG
from gpuperf.pages.hardware import first_then_by_name
from gpuperf.pages.plotting import format_x, short_gpu_name
from gpuperf.pages.prose import WIDTH, Paragraph, paragraph, percent, percent_span, span
from gpuperf.pages.report import Result, check_result, load, per_gpu
from gpuperf.pages.tables import Cell, Section, render

#: The benchmarks this page reads: rows that fit in registers, and rows that take the
#: online kernel.
BENCHMARKS = (SOFTMAX, SOFTMAX_LONG)
#: The file ``scripts/explore_configs.py`` writes into each GPU's measurements folder.
SWEEP_LOG = "explore_configs.log"
#: One row length of the single-pass sweep in that file.
_SWEEP_LINE = re.compile(
    r"softmax n_cols=(?P<cols>\d+): default (?P<default>\S+) ranks (?P<rank>\d+) of "
    r"(?P<of>\d+); best (?P<best>.*); worst (?P<worst>\S+): (?P<worst_gbps>\d+)"
)


def speedup_over_naive(result: Result) -> dict:
    """``{columns: naive time / Triton time}``: how many times faster the fused kernel
    is than the naive five-kernel PyTorch code, at each row length both ran.

    Raises:
        TypeError: ``result`` is not a :class:`~gpuperf.pages.report.Result`.
        ValueError: ``result`` is not a result of ``SOFTMAX`` or ``SOFTMAX_LONG``.
    """
    check_result(result, *BENCHMARKS)
    fused, naive = result.ratios(), result.ratios("naive")
    return {x: fused[x] / naive[x] for x in fused if naive.get(x)}


def bandwidth_and_speedups(result: Result) -> str:
    """What the Triton kernel reached on each GPU: its % of the ceiling its rows are read
    against (named from the record) at every row length, the range of speeds of the
    Triton kernel, the naive eager code and ``torch.compile`` relative to
    ``torch.softmax`` (above 1: faster), and the Triton kernel's relative to
    ``torch.compile``.

    Returns:
        Lines of at most :data:`WIDTH` columns, under each GPU's name when there are
        several; the result's notes when no GPU has a record.

    Raises:
        TypeError: ``result`` is not a :class:`~gpuperf.pages.report.Result`.
        ValueError: ``result`` is not a result of ``SOFTMAX`` or ``SOFTMAX_LONG``.
    """
    check_result(result, *BENCHMARKS)

    def write(r: Result) -> list[str]:
        lines = []
        fractions = r.fraction_of_ceiling()
        if fractions:
            each = ", ".join(f"{format_x(x)}: {percent(f)}" for x, f in fractions.items())
            lines += textwrap.wrap(
                f"Triton, % of the {r.ceiling_name()} by columns: {each}",
                WIDTH - 2,
                subsequent_indent="  ",
            )
        labels = r.labels()
        base = labels.get(r.benchmark.baseline, r.benchmark.baseline)
        for provider, name in (("triton", "Triton"), ("naive", "naive eager"), ("compile", None)):
            ratios = r.ratios(provider)
            if ratios:
                name = name or labels.get(provider, provider)
                lines.append(f"{name} / {base}: {span(ratios.values())}×")
        over_compile = r.ratios(over="compile")
        if over_compile:
            compiled = labels.get("compile", "compile")
            lines.append(f"Triton / {compiled}: {span(over_compile.values())}×")
        return lines or ["no successful rows"]

    return per_gpu(result, write)


#: The online kernel's traffic if its second read came entirely from HBM, in units of the
#: minimum (one read and one write): two reads and one write.
THREE_PASSES = 3 / 2


def online_against_three_passes(result: Result) -> str:
    """The online kernel's share of the ceiling its rows are read against (named from the
    record: the fastest rate the memory was shown to stream) at each row length, one line
    per GPU, against what it would reach if its second read of each row came entirely
    from HBM: ``1 / THREE_PASSES`` of that ceiling (GB/s counts the minimum traffic). A
    row length is above that share where the row's 20th percentile is above it at the
    ceiling's 80th (L2 served part of the second read), below it where the row's 80th
    percentile is below it at the ceiling's 20th, and within the spread of both timings
    otherwise (no sign either way).

    Raises:
        TypeError: ``result`` is not a :class:`~gpuperf.pages.report.Result`.
        ValueError: ``result`` is not a result of ``SOFTMAX_LONG``.
    """
    check_result(result, SOFTMAX_LONG)
    cap = 1 / THREE_PASSES

    def write(r: Result) -> list[str]:
        fractions = r.fraction_of_ceiling()
        if not fractions:
            return ["no successful rows"]
        sides = {x: _side(row, r.record["ceilings"][row["ceiling"]], cap) for x, row in r.rows().items()}
        each = ", ".join(f"{format_x(x)}: {percent(f)}" for x, f in fractions.items())
        verdicts = []
        for side, said in (
            ("above", "above it"),
            ("within", "within the timings' spread of it"),
            ("below", "below it"),
        ):
            xs = [format_x(x) for x in fractions if sides.get(x) == side]
            if xs:
                verdicts.append(f"{said} at {', '.join(xs)} columns")
        verdict = "; ".join(verdicts)
        return textwrap.wrap(
            f"% of the {r.ceiling_name()} by columns: {each}; three passes from HBM would allow "
            f"{percent(cap)}: {verdict}",
            WIDTH - 2,
            subsequent_indent="  ",
        )

    return per_gpu(result, write)


def _side(row: dict, ceiling: dict, share: float) -> str:
    """``'above'``, ``'below'`` or ``'within'``: where ``row``'s rate lies against ``share`` of
    ``ceiling`` (its entry), beyond or within the spread of both timings (the row's 20th and
    80th percentiles against the ceiling's 80th and 20th; the medians where one lacks them)."""
    low, high = row.get("value_p20", row["value"]), row.get("value_p80", row["value"])
    if low > share * ceiling.get("value_p80", ceiling["value"]):
        return "above"
    if high < share * ceiling.get("value_p20", ceiling["value"]):
        return "below"
    return "within"


def _sweep_rows(text: str) -> list[dict]:
    """The single-pass sweep's lines of an ``explore_configs.log``, one dict per row
    length: ``cols``, ``default`` (``'M8/w8'``: rows per program / warps), ``rank``,
    ``of``, ``best`` and ``worst`` (config names) and their GB/s."""
    rows = []
    for match in _SWEEP_LINE.finditer(text):
        ranked = [item.rsplit(": ", 1) for item in match["best"].split(", ")]
        rows.append(
            {
                "cols": int(match["cols"]),
                "default": match["default"],
                "rank": int(match["rank"]),
                "of": int(match["of"]),
                "best": ranked[0][0],
                "best_gbps": float(ranked[0][1]),
                "worst": match["worst"],
                "worst_gbps": float(match["worst_gbps"]),
            }
        )
    return rows


def config_sweep(gpu: str | None = None) -> str:
    """How the single-pass kernel's launch rule (rows per program ``M``, warps ``w``)
    ranks among every configuration measured by ``scripts/explore_configs.py``, and how
    much the best and the worst configuration differ, per row length.

    Args:
        gpu: a GPU folder (``'nvidia-h100-80gb-hbm3'``); default every GPU whose
            measurements folder holds the sweep's log.

    Returns:
        A table per GPU (text, or HTML with ``GPUPERF_TABLES=html``): columns, the
        default config and its rank, the best config and its GB/s, the worst and the
        share of the best's GB/s it loses; a note when no log is found.

    Raises:
        TypeError: ``gpu`` is not a string.
    """
    if gpu is not None and not isinstance(gpu, str):
        raise TypeError(f"gpu must be a GPU folder name (str), got {type(gpu).__name__}")
    root = records.measurements_dir()
    folders = [gpu] if gpu else sorted(p.parent.name for p in root.glob(f"*/{SWEEP_LOG}"))
    sections, notes = [], []
    for folder in folders:
        path = root / folder / SWEEP_LOG
        rows = _sweep_rows(path.read_text()) if path.is_file() else []
        if not rows:
            notes.append(
                f"MISSING: no softmax sweep in {folder}/{SWEEP_LOG}: "
                f"{records.advice('python scripts/explore_configs.py', 'that GPU')}."
            )
            continue
        header = ["n_cols", "default", "rank", "best", "best GB/s", "worst", "worst loses"]
        name = short_gpu_name(path.read_text().split(" (", 1)[0])
        section = Section(f"{name}: every config of the single-pass kernel", header)
        for r in rows:
            loss = 1 - r["worst_gbps"] / r["best_gbps"]
            section.rows.append(
                [
                    Cell(str(r["cols"]), r["cols"]),
                    Cell(r["default"]),
                    Cell(f"{r['rank']} of {r['of']}", r["rank"]),
                    Cell(r["best"]),
                    Cell(f"{r['best_gbps']:.0f}", r["best_gbps"]),
                    Cell(r["worst"]),
                    Cell(percent(loss), loss),
                ]
            )
        sections.append(section)
    if not folders:
        notes.append(
            f"MISSING: no GPU folder under {root} holds {SWEEP_LOG}: "
            f"{records.advice('python scripts/explore_configs.py')}."
        )
    return render(sections, notes)


def _sentence(short: Result, long: Result) -> str:
    """One GPU's headline measurements as one sentence."""
    parts = []
    fractions = short.fraction_of_ceiling() if short.record else {}
    if fractions:
        best = max(fractions, key=fractions.get)
        base = short.labels().get(short.benchmark.baseline, short.benchmark.baseline)
        part = (
            f"the fused kernel reaches {percent(fractions[best])} of the measured "
            f"{short.ceiling_name()} at {format_x(best)} columns and runs at "
            f"{span(short.ratios().values())}× the speed of {base}"
        )
        naive = speedup_over_naive(short)
        if naive:
            part += f" and {span(naive.values())}× that of the naive five-kernel code"
        parts.append(part)
    long_fractions = long.fraction_of_ceiling() if long.record else {}
    if long_fractions:
        xs = sorted(long_fractions)
        base = long.labels().get(long.benchmark.baseline, long.benchmark.baseline)
        parts.append(
            f"on rows of {format_x(xs[0])} to {format_x(xs[-1])} columns the online kernel "
            f"reaches {percent_span(long_fractions.values())} of it at "
            f"{span(long.ratios().values())}× the speed of {base}"
        )
    if not parts:
        return ""
    gpu = (short.record and short.gpu) or long.gpu
    return f"On the {short_gpu_name(gpu)}, " + "; ".join(parts) + "."


def _gpus() -> list[str]:
    """Folders of every GPU with a record of either benchmark, the reference GPU first."""
    found = [gpu for benchmark in BENCHMARKS for gpu in records.gpus_with_record(benchmark.name)]
    return first_then_by_name(found, records.reference_gpu())


def in_one_paragraph() -> Paragraph:
    """The page's headline measurements on every GPU with softmax records: the fused
    kernel's best share of the ceiling its record reads it against (named from the
    record), its speed relative to ``torch.softmax`` and to the naive five-kernel code,
    and the online kernel's share of its ceiling and speed on rows too long for registers.

    Returns:
        A :class:`~gpuperf.pages.prose.Paragraph`: one sentence per GPU with a record,
        and a note for each record that is missing or stale.
    """
    sentences, notes = [], []
    for gpu in _gpus():
        short, long = (load(b, gpu) for b in BENCHMARKS)
        notes += short.notes + long.notes
        sentences.append(_sentence(short, long))
    if not any(sentences):
        notes.append(
            f"MISSING: no GPU has a record of {SOFTMAX.name!r}: "
            f"{records.advice(records.bench_command(SOFTMAX.name))}."
        )
    return paragraph(*sentences, notes=notes)
