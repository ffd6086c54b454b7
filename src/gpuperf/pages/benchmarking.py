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

import textwrap
from collections.abc import Callable, Mapping

from gpuperf.bench import metrics, records
from gpuperf.bench.catalog import SCALE_SHIFT
from gpuperf.pages import captures as pages_captures
from gpuperf.pages.plotting import format_rate, short_gpu_name
from gpuperf.pages.prose import Paragraph, paragraph, percent, percent_span, span, times
from gpuperf.pages.report import Result, check_result, load, per_gpu
from gpuperf.pages.tables import Cell, Section, render

#: The captures the guide shows, in the order it shows them.
TIMING = "timing_scale_shift"
AUTOTUNE = "autotune_scale_shift"
#: From this many rows up the kernel's traffic (268 MB at 4096 float32 columns) is far
#: larger than L2: the rows the guide reads against the bandwidth ceiling of its record.
HBM_FROM_ROWS = 8192

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


def _each_size(shown: Mapping[str, dict], line: Callable[[dict], str]) -> str:
    """One line per size of each GPU's timing capture, ``line(entry)``
    (:func:`gpuperf.pages.captures.per_gpu`)."""
    return pages_captures.per_gpu(shown, lambda capture: [line(e) for e in capture["payload"]["sizes"]])


def _reading(entry: dict, key: str) -> dict:
    """One reading (``do_bench``, ``one_call``, ...) of one size of the timing capture.

    Raises:
        KeyError: the capture has no such reading; the message lists those it has.
    """
    try:
        return entry["readings"][key]
    except KeyError:
        raise KeyError(f"no reading {key!r}; the capture has {list(entry['readings'])}") from None


def _l2(capture: dict) -> int | None:
    """The L2 size of the capture's GPU, bytes (its provenance's ``l2_bytes``), or None."""
    return capture["provenance"].get("l2_bytes")


def _in_l2(entry: dict, capture: dict) -> str:
    """``'fits in the 50 MiB L2'`` or ``'larger than the 50 MiB L2'`` for one size, or ``''``
    when the capture does not say the GPU's L2 size."""
    l2 = _l2(capture)
    if not l2:
        return ""
    fits = "fits in" if entry["bytes"] <= l2 else "larger than"
    size = f"{l2 / 2**20:,.0f} MiB" if l2 >= 2**20 else f"{l2:,} byte"
    return f"{fits} the {size} L2"


def _memory_roof(capture: dict) -> tuple[float, str] | None:
    """The memory roof of the capture's GPU, from its ``hardware.json``: its rate (GB/s) and
    its name (:attr:`~gpuperf.pages.hardware.Ceilings.memory_label`), the stream bandwidth
    where measured (the fastest rate the memory was shown to stream, which a floor on time
    must use, as the benchmark's record reads the kernel against it), else the copy; None
    where the GPU has no ``hardware.json``."""
    from gpuperf.pages.hardware import ceilings

    try:
        hw = ceilings(pages_captures.gpu_folder(capture))
        return hw.memory_gbps, hw.memory_label
    except (FileNotFoundError, KeyError, AttributeError):
        return None


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
    """For each size, whether its input fits in the GPU's L2 (the provenance's ``l2_bytes``),
    how ``do_bench``'s median without its L2 flush compares with the flushed one, and the
    spread of the flushed runs (p80 over p20, mean over median), one line per size and GPU.
    The same: the unflushed median falls within the flushed runs' 20th to 80th percentiles.
    Faster without the flush: the runs found their inputs in L2. Slower: with no flush
    queued ahead of it, each run waited for the host's next launch, and the events timed
    that wait."""

    def write(capture: dict) -> list[str]:
        lines = []
        for entry in capture["payload"]["sizes"]:
            bench, warm = _reading(entry, "do_bench"), _reading(entry, "do_bench_no_flush")
            ratio = bench["median"] / warm["median"]
            if bench["p20"] <= warm["median"] <= bench["p80"]:
                unflushed = "the same without the flush (within the flushed runs' p20-p80)"
            elif ratio >= 1:
                unflushed = f"{times(ratio)} faster without the flush (inputs found in L2)"
            else:
                unflushed = f"{times(1 / ratio)} slower without the flush (each run waits for its launch)"
            l2 = _in_l2(entry, capture)
            lines.append(
                f"{entry['rows']:>6,} rows ({entry['bytes'] / 1e6:,.1f} MB{', ' + l2 if l2 else ''}): "
                f"{unflushed}; flushed runs: p80/p20 {times(bench['p80'] / bench['p20'])}, "
                f"mean/median {times(bench['mean'] / bench['median'])}"
            )
        return lines

    return pages_captures.per_gpu(shown, write)


# --- CUDA events and CUDA graphs -------------------------------------------------------


def _methods_section(capture: dict, keys: tuple[str, ...], heading: str) -> Section:
    """Per size, the median of each reading in ``keys`` (µs), and each but the graph's as a
    multiple of the CUDA-graph time (a call replayed from a graph: no launch from the host,
    and no L2 flush between calls)."""
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
        return pages_captures.NOTHING_YET
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
    """For each size, CUDA events around one call against ``do_bench``'s median (the same
    call with its launch hidden behind the flush queued ahead of it, its input read from
    HBM): the one-call reading less that is the launch, timed with the call. A lower bound,
    since one call finds an input that fits in L2 there (the calls run back to back)."""

    def line(entry: dict) -> str:
        one = _reading(entry, "one_call")["median"]
        bench = _reading(entry, "do_bench")["median"]
        return (
            f"{entry['rows']:>6,} rows: one call reads {one * 1e3:,.1f} µs, do_bench {bench * 1e3:,.1f} µs: "
            f"at least {percent(max(one - bench, 0) / one)} of the one-call reading is the launch"
        )

    return _each_size(shown, line)


def graph_gain(shown: Mapping[str, dict]) -> str:
    """For each size, the time per call of back-to-back launches against the same calls
    replayed from a CUDA graph: what the graph removes. Where a replayed call takes less
    than moving its bytes from HBM at the GPU's memory roof (its ``hardware.json``: the
    stream bandwidth, named, where measured), it says so: the replays, with no flush
    between them, read their input from L2."""

    def write(capture: dict) -> list[str]:
        roof = _memory_roof(capture)
        gbps, named = roof if roof else (None, None)
        lines = []
        for entry in capture["payload"]["sizes"]:
            loop = _reading(entry, "many_calls")["median"]
            graph = _reading(entry, "cuda_graph")["median"]
            line = (
                f"{entry['rows']:>6,} rows: {loop * 1e3:,.1f} µs per call from Python, "
                f"{graph * 1e3:,.1f} µs from a graph ({times(loop / graph)})"
            )
            floor_us = entry["bytes"] / (gbps * 1e3) if gbps else None
            if floor_us and graph * 1e3 < floor_us:
                line += (
                    f"; below the {floor_us:,.1f} µs that moving {entry['bytes'] / 1e6:,.1f} MB from HBM "
                    f"takes at the {gbps:,.0f} GB/s of the {named}: the replays read their input from L2"
                )
            lines.append(line)
        return lines

    return pages_captures.per_gpu(shown, write)


# --- the benchmark against the memory roof ---------------------------------------------


def against_the_roof(result: Result, hbm_from: int = HBM_FROM_ROWS) -> str:
    """How close each provider comes to the ceiling its rows are read against from
    ``hbm_from`` rows up (named from the record: the stream bandwidth, the fastest rate the
    memory was shown to stream), and
    the kernel's speed against eager PyTorch and ``torch.compile`` over every size, one
    block per GPU; the record's notes when no GPU has one. Where the rows are read against
    another ceiling than the copy bandwidth and the record holds the copy measured in the
    same run, a last line gives each provider's share of that copy at the largest size
    (this kernel, like a copy, reads one byte per byte it writes), marked where it is above
    the copy beyond the timings' spread (the row's 20th percentile above the copy's 80th).

    Raises:
        TypeError: ``result`` is not a :class:`~gpuperf.pages.report.Result`.
        ValueError: ``result`` is not a result of ``SCALE_SHIFT``.
    """
    check_result(result, SCALE_SHIFT)

    def write(r: Result) -> list[str]:
        labels = {row["provider"]: row["label"] for row in r.record["rows"]}
        lines = []
        for provider in labels:
            large = [f for x, f in r.fraction_of_ceiling(provider).items() if x >= hbm_from]
            if large:
                lines.append(
                    f"{labels[provider]}: {percent_span(large)} of the {r.ceiling_name(provider)} "
                    f"from {hbm_from:,} rows up"
                )
        for other in ("eager", "compile"):
            ratios = r.ratios(over=other)
            if ratios and other in labels:
                lines.append(f"Triton over {labels[other]}: {span(ratios.values())}× the speed")
        lines += _against_the_copy(r, labels)
        return lines or ["no successful rows"]

    return per_gpu(result, write)


def _against_the_copy(result: Result, labels: dict) -> list[str]:
    """Each provider's share of the copy bandwidth measured in the same run, at the largest
    size every provider ran, where its rows are read against another ceiling; ``[]``
    otherwise."""
    copy = (result.record or {}).get("ceilings", {}).get("copy_gbps")
    if not copy or not copy.get("value"):
        return []
    rows = {p: result.rows(p) for p in labels}
    if any(r and r[max(r)]["ceiling"] == "copy_gbps" for r in rows.values()):
        return []
    common = set.intersection(*(set(r) for r in rows.values() if r)) if any(rows.values()) else set()
    if not common:
        return []
    x = max(common)
    each = []
    for p, r in rows.items():
        if x not in r:
            continue
        row = r[x]
        beyond = row.get("value_p20", row["value"]) > copy.get("value_p80", copy["value"])
        mark = " (above it beyond the spread)" if beyond else ""
        each.append(f"{labels[p]} {percent(row['value'] / copy['value'])}{mark}")
    line = (
        f"at {x:,} rows, against the copy bandwidth of the same run "
        f"({format_rate(copy['value'], copy['unit'])}): " + ", ".join(each)
    )
    return textwrap.wrap(line, 88, subsequent_indent="  ")


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

    return pages_captures.per_gpu(shown, write)


def tiles_against_compile(shown: Mapping[str, dict], result: Result) -> str:
    """For each GPU with an autotuning capture and a record of ``SCALE_SHIFT``: at the
    largest rows both hold, the fastest tile any tuning timed and the default tile (the
    first tuning's median, µs) against ``torch.compile``'s median in the record, and the
    share of the default's gap to ``torch.compile`` that the fastest tile closes. The two
    come from different runs, each timed with ``do_bench`` (L2 flushed).

    Raises:
        TypeError: ``result`` is not a :class:`~gpuperf.pages.report.Result`.
        ValueError: ``result`` is not a result of ``SCALE_SHIFT``.
    """
    check_result(result, SCALE_SHIFT)

    def write(capture: dict) -> list[str]:
        try:
            record = result.on(pages_captures.gpu_folder(capture))
        except ValueError:
            return ["no record of the benchmark on this GPU to set the tiles against"]
        compiled = record.rows("compile")
        payload = capture["payload"]
        both = [t["rows"] for t in payload["tunings"] if t["rows"] in compiled]
        if not both:
            return ["the record measured torch.compile at none of the autotuned sizes"]
        rows = max(both)
        runs = [t for t in payload["tunings"] if t["rows"] == rows]
        best = min((c for t in runs for c in t["timings"]), key=lambda c: c["ms"])
        default = _tile(payload["default"])
        mine = next((c["ms"] for c in runs[0]["timings"] if _tile(c) == default), None)
        theirs = compiled[rows]["ms"]
        line = (
            f"At {rows:,} rows the fastest tile timed, {_tile(best)}, took {best['ms'] * 1e3:,.1f} µs"
            + ("" if mine is None else f" and the default {mine * 1e3:,.1f} µs")
            + f"; torch.compile took {theirs * 1e3:,.1f} µs in the benchmark's record "
            f"({record.record['provenance']['date'][:10]})"
        )
        if best["ms"] <= theirs:
            line += ": a tile from the search matches torch.compile's kernel"
        elif mine is not None and mine > theirs:
            closed = max(mine - best["ms"], 0) / (mine - theirs)
            line += (
                f": the search closes {percent(closed)} of the default's gap to torch.compile, and no "
                "tile tried reaches it"
            )
        else:
            line += ": no tile tried reaches it"
        return [line + "."]

    return pages_captures.per_gpu(shown, write)


# --- the opening paragraph -------------------------------------------------------------


def _record_sentence(result: Result) -> str:
    fractions = [f for x, f in result.fraction_of_ceiling().items() if x >= HBM_FROM_ROWS]
    parts = []
    if fractions:
        biggest = max(result.values())
        rate = format_rate(result.values()[biggest], result.benchmark.metric)
        parts.append(
            f"the small Triton kernel this guide writes streams at {percent_span(fractions)} of the "
            f"measured {result.ceiling_name()} from {HBM_FROM_ROWS:,} rows up ({rate} at {biggest:,} rows)"
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
    gpu = short_gpu_name(capture["provenance"]["gpu"])
    return (
        f"How it is timed matters most for small calls: on {smallest['rows']} rows, CUDA events "
        f"around one call read {one:.1f} µs, do_bench {bench:.1f} µs and a call replayed from a CUDA "
        f"graph, with no launch and a warm L2, {graph:.1f} µs ({gpu})."
    )


def in_one_paragraph() -> Paragraph:
    """The guide's headline: the kernel's share of the ceiling its record reads it against
    (named from the record) and its speed against
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
