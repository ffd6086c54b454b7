"""The guide on benchmarking your own kernel, in words and tables, read from its record and
captures.

The guide times one small kernel, :func:`gpuperf.kernels.scale_shift`, every way it
teaches. Two captures hold what only a GPU can show (``python
scripts/benchmark_guide_capture.py``): ``timing_scale_shift`` (``do_bench`` and its
return modes, with and without the L2 flush; CUDA events around one call and around
many; ``do_bench_cudagraph``) and ``autotune_scale_shift`` (``@triton.autotune`` with
``TRITON_PRINT_AUTOTUNING=1``). The benchmark :data:`~gpuperf.bench.catalog.SCALE_SHIFT`
holds the kernel against eager PyTorch and ``torch.compile``.

Each ``*_table`` function renders one capture (the ``render`` of
:func:`gpuperf.pages.captures.show`); the functions that take the captures shown
(``{gpu: capture}``) or a :class:`~gpuperf.pages.report.Result` write what the guide
reads from them, one block per GPU.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from gpuperf.bench import metrics, records
from gpuperf.bench.catalog import SCALE_SHIFT
from gpuperf.pages import captures as pages_captures
from gpuperf.pages.plotting import format_rate, short_gpu_name
from gpuperf.pages.prose import Paragraph, paragraph, percent_span, span, times
from gpuperf.pages.report import Result, load, per_gpu
from gpuperf.pages.tables import Cell, Section, render

#: The captures the guide shows, in the order it shows them.
TIMING = "timing_scale_shift"
AUTOTUNE = "autotune_scale_shift"
#: From this many rows up the kernel's traffic (268 MB at 4096 float32 columns) is far
#: larger than L2: the rows the guide reads against the copy bandwidth.
HBM_FROM_ROWS = 8192

#: What a reading prints when the capture it reads is not there (the note above it says why).
NOTHING_YET = "Nothing to read here yet: the capture above is not there."
#: The readings of the timing capture, each with the label its tables use.
LABELS = {
    "do_bench": "do_bench (L2 flushed)",
    "do_bench_no_flush": "do_bench, no flush",
    "one_call": "CUDA events, one call",
    "many_calls": "CUDA events, 100 calls, per call",
    "cuda_graph": "do_bench_cudagraph",
}


def _us(ms: float | None) -> Cell:
    if ms is None:
        return Cell("-")
    us = ms * 1e3
    return Cell(f"{us:,.1f}" if us < 1000 else f"{us:,.0f}", us)


def _size(entry: dict, cols: int) -> Cell:
    return Cell(f"{entry['rows']:,} x {cols:,} ({entry['bytes'] / 1e6:,.1f} MB)", entry["rows"])


def _gbps(entry: dict, ms: float) -> Cell:
    rate = metrics.gb_per_s(entry["bytes"], ms)
    return Cell(f"{rate:,.0f}", rate)


def _each(shown: Mapping[str, dict], write: Callable[[dict], list[str]]) -> str:
    """``write(capture)``'s lines for each GPU's capture, under the GPU's name when there
    are several; a line saying there is nothing to read when there is none."""
    return pages_captures.per_gpu(shown, write, NOTHING_YET)


def _each_size(shown: Mapping[str, dict], line: Callable[[dict], str]) -> str:
    """:func:`_each` with one line per size of the timing capture: ``line(entry)``."""
    return _each(shown, lambda capture: [line(entry) for entry in capture["payload"]["sizes"]])


def _reading(entry: dict, key: str) -> dict:
    """One reading (``do_bench``, ``one_call``, ...) of one size of the timing capture.

    Raises:
        KeyError: the capture has no such reading; the message lists those it has.
    """
    try:
        return entry["readings"][key]
    except KeyError:
        raise KeyError(f"no reading {key!r}; the capture has {list(entry['readings'])}") from None


# --- do_bench --------------------------------------------------------------------------


def do_bench_table(capture: dict) -> str:
    """Per size: ``do_bench``'s median with its 20th and 80th percentiles, its mean (the
    default return mode), minimum and number of runs, the median without the L2 flush,
    all in µs, and the flushed median as GB/s."""
    cols = capture["payload"]["cols"]
    header = ["input", "median", "p20", "p80", "mean", "min", "runs", "no flush", "GB/s"]
    section = Section("triton.testing.do_bench, µs", header)
    for entry in capture["payload"]["sizes"]:
        bench, warm = _reading(entry, "do_bench"), _reading(entry, "do_bench_no_flush")
        section.rows.append(
            [
                _size(entry, cols),
                _us(bench["median"]),
                _us(bench["p20"]),
                _us(bench["p80"]),
                _us(bench["mean"]),
                _us(bench["min"]),
                Cell(f"{bench['runs']:,}", bench["runs"]),
                _us(warm["median"]),
                _gbps(entry, bench["median"]),
            ]
        )
    return render([section])


def flush_effect(shown: Mapping[str, dict]) -> str:
    """For each size, how ``do_bench``'s median without its L2 flush compares with the
    flushed one, and the spread of the flushed runs (p80 over p20, mean over median), one
    line per size and GPU. The same: the unflushed median falls within the flushed runs'
    20th to 80th percentiles. Faster without the flush: the runs found their inputs in L2.
    Slower: with no flush queued ahead of it, each run waited for the host's next launch,
    and the events timed that wait."""

    def line(entry: dict) -> str:
        bench, warm = _reading(entry, "do_bench"), _reading(entry, "do_bench_no_flush")
        ratio = bench["median"] / warm["median"]
        if bench["p20"] <= warm["median"] <= bench["p80"]:
            unflushed = "the same without the flush (within the flushed runs' p20-p80)"
        elif ratio >= 1:
            unflushed = f"{times(ratio)} faster without the flush (inputs found in L2)"
        else:
            unflushed = f"{times(1 / ratio)} slower without the flush (each run waits for its launch)"
        return (
            f"{entry['rows']:>6,} rows ({entry['bytes'] / 1e6:,.1f} MB): {unflushed}; flushed "
            f"runs: p80/p20 {times(bench['p80'] / bench['p20'])}, "
            f"mean/median {times(bench['mean'] / bench['median'])}"
        )

    return _each_size(shown, line)


# --- CUDA events and CUDA graphs -------------------------------------------------------


def _methods_section(capture: dict, keys: tuple[str, ...], heading: str) -> Section:
    """Per size, the median of each reading in ``keys`` (µs), and each but the graph's as a
    multiple of the CUDA-graph time (the GPU's time alone)."""
    cols = capture["payload"]["cols"]
    others = [k for k in keys if k != "cuda_graph"]
    header = ["input", *(LABELS[k] for k in keys), *(f"{LABELS[k]} / graph" for k in others)]
    section = Section(heading, header)
    for entry in capture["payload"]["sizes"]:
        medians = {k: _reading(entry, k)["median"] for k in keys}
        graph = _reading(entry, "cuda_graph")["median"]
        ratios = [
            Cell(times(medians[k] / graph, 1), medians[k] / graph) if graph else Cell("-") for k in others
        ]
        section.rows.append([_size(entry, cols), *(_us(medians[k]) for k in keys), *ratios])
    return section


def _tables(shown: Mapping[str, dict], keys: tuple[str, ...]) -> str:
    """One table of the readings ``keys`` per GPU's capture, headed by the GPU when there are several."""
    if not isinstance(shown, Mapping):
        raise TypeError(f"expected the captures shown ({{gpu: capture}}), got {type(shown).__name__}")
    if not shown:
        return NOTHING_YET
    sections = []
    for capture in shown.values():
        gpu = f"{short_gpu_name(capture['provenance']['gpu'])}: " if len(shown) > 1 else ""
        sections.append(_methods_section(capture, keys, f"{gpu}medians, µs"))
    return render(sections)


def events_table(shown: Mapping[str, dict]) -> str:
    """Per size and GPU: CUDA events around one call and around 100 calls (per call),
    against ``do_bench`` and the CUDA-graph time, in µs.

    Raises:
        TypeError: ``shown`` is not the ``{gpu: capture}`` that ``captures.show`` returns.
    """
    return _tables(shown, ("one_call", "many_calls", "do_bench", "cuda_graph"))


def graph_table(shown: Mapping[str, dict]) -> str:
    """Per size and GPU: back-to-back launches (CUDA events around 100 calls), ``do_bench``
    with and without its flush, and the CUDA-graph time, in µs.

    Raises:
        TypeError: ``shown`` is not the ``{gpu: capture}`` that ``captures.show`` returns.
    """
    return _tables(shown, ("many_calls", "do_bench", "do_bench_no_flush", "cuda_graph"))


def launch_share(shown: Mapping[str, dict]) -> str:
    """For each size, what CUDA events around one call read beyond the GPU's own time
    (the CUDA-graph time): the launch, timed with the kernel."""

    def line(entry: dict) -> str:
        one = _reading(entry, "one_call")["median"]
        graph = _reading(entry, "cuda_graph")["median"]
        return (
            f"{entry['rows']:>6,} rows: one call reads {one * 1e3:,.1f} µs, the kernel "
            f"{graph * 1e3:,.1f} µs: {100 * (one - graph) / one:.0f}% is not the kernel"
        )

    return _each_size(shown, line)


def graph_gain(shown: Mapping[str, dict]) -> str:
    """For each size, the time per call of back-to-back launches against the same calls
    replayed from a CUDA graph: what the graph removes."""

    def line(entry: dict) -> str:
        loop = _reading(entry, "many_calls")["median"]
        graph = _reading(entry, "cuda_graph")["median"]
        return (
            f"{entry['rows']:>6,} rows: {loop * 1e3:,.1f} µs per call from Python, "
            f"{graph * 1e3:,.1f} µs from a graph ({times(loop / graph)})"
        )

    return _each_size(shown, line)


# --- the benchmark against the copy roof -----------------------------------------------


def _check(result: Result) -> None:
    if not isinstance(result, Result):
        raise TypeError(f"expected a gpuperf.pages.Result, got {type(result).__name__}")
    if result.benchmark.name != SCALE_SHIFT.name:
        raise ValueError(f"expected the result of {SCALE_SHIFT.name!r}, got {result.benchmark.name!r}")


def against_the_roof(result: Result, hbm_from: int = HBM_FROM_ROWS) -> str:
    """How close each provider comes to the copy bandwidth from ``hbm_from`` rows up, and
    the kernel's speed against eager PyTorch and ``torch.compile`` over every size, one
    block per GPU; the record's notes when no GPU has one.

    Raises:
        TypeError: ``result`` is not a :class:`~gpuperf.pages.report.Result`.
        ValueError: ``result`` is not a result of ``SCALE_SHIFT``.
    """
    _check(result)

    def write(r: Result) -> list[str]:
        labels = {row["provider"]: row["label"] for row in r.record["rows"]}
        lines = []
        for provider in labels:
            large = [f for x, f in r.fraction_of_ceiling(provider).items() if x >= hbm_from]
            if large:
                lines.append(
                    f"{labels[provider]}: {percent_span(large)} of the copy bandwidth "
                    f"from {hbm_from:,} rows up"
                )
        for other in ("eager", "compile"):
            ratios = r.ratios(over=other)
            if ratios and other in labels:
                lines.append(f"Triton over {labels[other]}: {span(ratios.values())}× the speed")
        return lines or ["no successful rows"]

    return per_gpu(result, write)


# --- autotuning ------------------------------------------------------------------------


def _tile(config: dict) -> str:
    return f"{config['BLOCK_M']} x {config['BLOCK_N']}, {config['num_warps']} warps"


def autotune_log(capture: dict) -> str:
    """What ``TRITON_PRINT_AUTOTUNING=1`` printed on the first tuning at each size, then
    one table: each config's median time (µs) at each size and tuning, the winners and
    the wrapper's default marked."""
    payload = capture["payload"]
    tunings = payload["tunings"]
    first = [t for t in tunings if t["attempt"] == 1]
    out = []
    for t in first:
        out.append(f"$ first call at {t['rows']:,} x {payload['cols']:,} printed:")
        out.append(t["printed"].rstrip())
        second = t["printed_second_call"].strip() or "(nothing: the choice is cached in memory)"
        out.append(f"$ second call with the same key printed: {second}")
        out.append("")
    header = ["tile (BLOCK_M x BLOCK_N, warps)"]
    header += [f"{t['rows']:,} rows, tuning {t['attempt']}" for t in tunings]
    section = Section("each config's median, µs (* the winner)", header)
    default = _tile(payload["default"])
    for tile in payload["tiles"]:
        config = {"BLOCK_M": tile[0], "BLOCK_N": tile[1], "num_warps": tile[2]}
        name = _tile(config)
        cells = [Cell(name + (" (default)" if name == default else ""), name)]
        for t in tunings:
            ms = next((c["ms"] for c in t["timings"] if _tile(c) == name), None)
            won = _tile(t["best"]) == name
            cells.append(Cell("-") if ms is None else Cell(f"{ms * 1e3:,.1f}" + (" *" if won else ""), ms))
        section.rows.append(cells)
    out.append(render([section]))
    return "\n".join(out)


def autotune_findings(shown: Mapping[str, dict]) -> str:
    """For each size: what the first call cost (the tuning) against the second, whether
    the two tunings picked the same tile, and how far the default tile is from the best."""

    def write(capture: dict) -> list[str]:
        payload = capture["payload"]
        default = _tile(payload["default"])
        lines = []
        for rows in dict.fromkeys(t["rows"] for t in payload["tunings"]):
            runs = [t for t in payload["tunings"] if t["rows"] == rows]
            first = runs[0]
            winners = [_tile(t["best"]) for t in runs]
            same = "the same tile" if len(set(winners)) == 1 else "different tiles"
            best = min(c["ms"] for c in first["timings"])
            mine = next((c["ms"] for c in first["timings"] if _tile(c) == default), None)
            gap = "" if mine is None else f"; the default takes {times(mine / best)} the best time"
            lines.append(
                f"{rows:>6,} rows: first call {first['first_call_s']:.2f} s (tuning "
                f"{len(first['timings'])} configs), second call {first['second_call_s'] * 1e3:.2f} ms"
            )
            lines.append(f"{'':>12}the tunings picked {same}: {'; '.join(winners)}{gap}")
        return lines

    return _each(shown, write)


# --- the opening paragraph -------------------------------------------------------------


def _record_sentence(result: Result) -> str:
    fractions = [f for x, f in result.fraction_of_ceiling().items() if x >= HBM_FROM_ROWS]
    parts = []
    if fractions:
        biggest = max(result.values())
        rate = format_rate(result.values()[biggest], result.benchmark.metric)
        parts.append(
            f"the small Triton kernel this guide writes streams at {percent_span(fractions)} of the "
            f"measured copy bandwidth from {HBM_FROM_ROWS:,} rows up ({rate} at {biggest:,} rows)"
        )
    for other, name in (("eager", "eager PyTorch"), ("compile", "torch.compile")):
        ratios = result.ratios(over=other)
        if ratios:
            parts.append(f"{span(ratios.values())}× the speed of {name}")
    if not parts:
        return ""
    return f"On the {short_gpu_name(result.gpu)}, " + ", ".join(parts) + "."


def _timing_sentence(capture: dict) -> str:
    smallest = min(capture["payload"]["sizes"], key=lambda e: e["rows"])
    one = _reading(smallest, "one_call")["median"] * 1e3
    graph = _reading(smallest, "cuda_graph")["median"] * 1e3
    bench = _reading(smallest, "do_bench")["median"] * 1e3
    return (
        f"How it is timed matters most for small calls: on {smallest['rows']} rows, CUDA events "
        f"around one call read {one:.1f} µs, do_bench {bench:.1f} µs and a CUDA graph {graph:.1f} µs "
        f"({short_gpu_name(capture['provenance']['gpu'])})."
    )


def in_one_paragraph() -> Paragraph:
    """The guide's headline: the kernel's share of the copy bandwidth and its speed against
    eager PyTorch and ``torch.compile`` on every GPU with a record, and how far apart the
    ways of timing a small call read on the reference GPU's capture.

    Returns:
        A :class:`~gpuperf.pages.prose.Paragraph`, with a note for each record or capture
        that is missing or stale.
    """
    sentences, notes = [], []
    for gpu in records.gpus_with_record(SCALE_SHIFT.name) or [records.reference_gpu()]:
        result = load(SCALE_SHIFT, gpu)
        notes += result.notes
        if result.record is not None:
            sentences.append(_record_sentence(result))
    capture, capture_notes = pages_captures.load(TIMING)
    notes += capture_notes
    if capture is not None:
        sentences.append(_timing_sentence(capture))
    return paragraph(*sentences, notes=notes)
