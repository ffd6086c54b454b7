"""Tutorial 03 (the matmul) in words and tables, read from the records.

The page shows the kernel, the arithmetic and one-line calls; what it prints about the
measurements comes from here: the opening paragraph (:func:`in_one_paragraph`), the
first wave of each program order (:func:`first_wave`), the Nsight Compute counters
(:func:`counters`), the tuning sweeps (:func:`sweep_tables`), and the comparisons
of the kernel with cuBLAS, ``torch.compile`` and the eager epilogue. Every function
that takes a :class:`~gpuperf.pages.report.Result` writes about each GPU it holds a
record for (the GPU measured live or the reference GPU, then the others).
"""

from __future__ import annotations

import json
import math
import textwrap
from collections.abc import Callable
from pathlib import Path

from gpuperf.bench import records
from gpuperf.bench.catalog import HOST_OVERHEAD, MATMUL, MATMUL_EPILOGUE, MATMUL_ORDER
from gpuperf.bench.hardware import DATASHEET
from gpuperf.bench.metrics import matmul_flops
from gpuperf.pages import hardware
from gpuperf.pages.plotting import format_x, short_gpu_name
from gpuperf.pages.prose import WIDTH, Paragraph, and_list, paragraph, percent, span, times
from gpuperf.pages.report import Result, check_result, load
from gpuperf.pages.tables import Cell, Section, number, render

#: The square products whose ratios to cuBLAS the page averages (geometric mean).
SQUARES = tuple((s, s, s) for s in (1024, 2048, 4096, 8192))
#: The product the page quotes first.
HEADLINE_SHAPE = (4096, 4096, 4096)
#: Differences smaller than this share of a product's time are within run-to-run noise.
NOISE = 0.02
#: The command that writes the Nsight Compute counters this page reads.
NCU_HOW = "python scripts/ncu_matmul_order.py"


# The kernel's own arithmetic -------------------------------------------------------------


def tile_of(pid: int, num_pid_m: int, num_pid_n: int, group_m: int) -> tuple[int, int]:
    """(row, column) of the tile of C that program ``pid`` computes, as in ``_matmul_kernel``."""
    num_pid_in_group = group_m * num_pid_n
    first_pid_m = pid // num_pid_in_group * group_m
    group_size_m = min(num_pid_m - first_pid_m, group_m)
    row = first_pid_m + pid % num_pid_in_group % group_size_m
    col = pid % num_pid_in_group // group_size_m
    return row, col


def launch_order(num_pid_m: int, num_pid_n: int, group_m: int) -> list[list[int]]:
    """The grid of tiles of C, each holding the id of the program that computes it.

    Args:
        num_pid_m, num_pid_n: tiles along M and N (at least 1 each).
        group_m: rows of tiles per group (1: row-major order).

    Returns:
        ``num_pid_m`` lists of ``num_pid_n`` program ids.

    Raises:
        ValueError: a count below 1.
    """
    if min(num_pid_m, num_pid_n, group_m) < 1:
        raise ValueError(
            f"tile counts and group_m must be at least 1, got {num_pid_m}, {num_pid_n}, {group_m}"
        )
    grid = [[0] * num_pid_n for _ in range(num_pid_m)]
    for pid in range(num_pid_m * num_pid_n):
        row, col = tile_of(pid, num_pid_m, num_pid_n, group_m)
        grid[row][col] = pid
    return grid


# Helpers ------------------------------------------------------------------------------


def _per_gpu(results: list[Result], write: Callable[[Result], str]) -> str:
    """``write(result)`` for each GPU, under the GPU's name when there are several."""
    if len(results) == 1:
        return write(results[0])
    return "\n\n".join(f"{r.name}:\n{write(r)}" for r in results)


def _wrap(text: str, indent: str = "") -> str:
    """``text`` wrapped at the code column's width, continuation lines indented."""
    return textwrap.fill(text, WIDTH, initial_indent=indent, subsequent_indent=indent + "  ")


def _squares_named(squares: list[tuple]) -> str:
    """The squares of :data:`SQUARES` that ``squares`` holds, as a reader reads them: a range
    (``'1024³-8192³'``) where they are three or more neighbours in :data:`SQUARES`, else
    each named (``'4096³ and 8192³'``); a quick live build measures only some of them."""
    at = [SQUARES.index(s) for s in squares]
    if len(at) >= 3 and at == list(range(at[0], at[0] + len(at))):
        return f"{format_x(squares[0])}-{format_x(squares[-1])}"
    return and_list(format_x(s) for s in squares)


def _geomean(values: list[float]) -> float:
    return math.exp(sum(map(math.log, values)) / len(values)) if values else math.nan


def _largest(shapes) -> tuple:
    return max(shapes, key=lambda s: matmul_flops(*s))


# The opening paragraph ----------------------------------------------------------------


def _gpus() -> list[str]:
    """Folders of every GPU with a matmul record or measured ceilings, reference first."""
    found = [*records.gpus_with_record(MATMUL.name), *hardware.gpus()]
    return hardware.first_then_by_name(found, records.reference_gpu())


def _sentence(plain: Result, order: Result, epilogue: Result) -> str:
    """One GPU's headline measurements as one sentence."""
    ratios = plain.ratios(dtype="bfloat16")
    fractions = plain.fraction_of_ceiling(dtype="bfloat16")
    parts = []
    squares = [ratios[s] for s in SQUARES if s in ratios]
    if HEADLINE_SHAPE in ratios:
        at = f"{times(ratios[HEADLINE_SHAPE])} cuBLAS's speed at {format_x(HEADLINE_SHAPE)} bf16"
        ceiling = plain.record["ceilings"].get("bf16_tflops")
        if HEADLINE_SHAPE in fractions and ceiling:
            at += (
                f", {percent(fractions[HEADLINE_SHAPE])} of the {ceiling['value']:.0f} TFLOP/s bf16 "
                "ceiling measured in the same run"
            )
        if squares:
            at += f" ({span(squares)}× cuBLAS over the squares from 1024³ to 8192³)"
        parts.append(f"our matmul runs at {at}")
    if order.record is not None and order.ratios():
        big = _largest(order.ratios())
        parts.append(
            f"grouped program order is {times(order.ratios()[big])} as fast as row-major at {format_x(big)}"
        )
    if epilogue.record is not None and epilogue.ratios():
        parts.append(
            f"the fused bias + GELU epilogue runs at {span(epilogue.ratios().values())}× the "
            f"eager chain and {span(fused_vs_compile(epilogue).values())}× torch.compile"
        )
    if not parts:
        return ""
    return f"On the {short_gpu_name(plain.gpu)}, " + "; ".join(parts) + "."


def in_one_paragraph() -> Paragraph:
    """The page's headline measurements on every GPU with records: our matmul against
    cuBLAS (at 4096³ bf16, and over the squares), grouped against row-major order, and
    the fused epilogue against the eager chain and ``torch.compile``.

    Returns:
        A :class:`~gpuperf.pages.prose.Paragraph`: one sentence per GPU with a matmul
        record, and a note for each record that is missing or stale.
    """
    sentences, notes = [], []
    for gpu in _gpus():
        results = [load(b, gpu) for b in (MATMUL, MATMUL_ORDER, MATMUL_EPILOGUE)]
        notes += results[0].notes + results[1].notes + results[2].notes
        if results[0].record is not None:
            sentences.append(_sentence(*results))
    if not sentences:
        notes.append(f"No GPU has a record of {MATMUL.name!r}: {records.advice(records.bench_command())}.")
    return paragraph(*sentences, notes=notes)


# Program order ------------------------------------------------------------------------


def first_wave(order: Result) -> str:
    """For each shape of the program-order benchmark, how many rows of tiles of A and
    columns of tiles of B the first wave of programs needs, in row-major and in grouped
    order, with the configs the benchmark ran (one table per GPU).

    A wave is as many programs as fit on the GPU at once: one per SM times how many
    pipelines (the A and B tiles of every stage, float16) fit in an SM's shared memory.

    Raises:
        TypeError, ValueError: ``order`` is not a result of ``MATMUL_ORDER``.
    """
    from gpuperf.kernels import MatmulConfig
    from gpuperf.kernels.configs import SHARED_MEMORY_BYTES

    check_result(order, MATMUL_ORDER)

    def table(result: Result) -> str:
        sms = result.record["provenance"]["sm_count"]
        header = ["shape", "tiles", "wave", "row-major: rows, cols", "grouped: rows, cols"]
        section = Section(f"first wave on {sms} SMs", header)
        for r in result.record["rows"]:
            if r["provider"] != "triton" or not r["config"]:
                continue
            config, (m, n, _) = MatmulConfig(**r["config"]), r["x"]
            smem = (config.block_m + config.block_n) * config.block_k * 2 * config.num_stages
            wave = sms * max(1, SHARED_MEMORY_BYTES // smem)
            tiles_m, tiles_n = -(-m // config.block_m), -(-n // config.block_n)
            cells = [Cell(format_x(r["x"])), Cell(f"{tiles_m} x {tiles_n}"), Cell(str(wave))]
            for group_m in (1, config.group_m):
                needed = [tile_of(p, tiles_m, tiles_n, group_m) for p in range(wave)]
                rows, cols = {t[0] for t in needed}, {t[1] for t in needed}
                cells.append(Cell(f"{len(rows)}, {len(cols)}"))
            section.rows.append(cells)
        return render([section])

    return _per_gpu(order.gpus(), table) or render([], order.all_notes())


def order_verdicts(order: Result) -> str:
    """Grouped over row-major order shape by shape, on each GPU: ``'a tie'`` within 3%,
    else how many times as fast grouped order is.

    Raises:
        TypeError, ValueError: ``order`` is not a result of ``MATMUL_ORDER``.
    """
    check_result(order, MATMUL_ORDER)

    def lines(result: Result) -> str:
        out = []
        for shape, ratio in result.ratios().items():
            verdict = "a tie (within 3%)" if abs(ratio - 1) < 0.03 else f"grouped {times(ratio)} as fast"
            out.append(f"{format_x(shape):>15}: {verdict}")
        return "\n".join(out)

    return _per_gpu(order.gpus(), lines) or "\n".join(order.all_notes())


# Nsight Compute counters --------------------------------------------------------------


def ncu_record(gpu: str, root: Path | None = None) -> dict | None:
    """The Nsight Compute counters of the program-order launches on ``gpu`` (a folder),
    written by ``scripts/ncu_matmul_order.py``; None when there are none.

    Raises:
        TypeError: ``gpu`` is not a string.
    """
    if not isinstance(gpu, str):
        raise TypeError(f"gpu must be a GPU folder name (str), got {type(gpu).__name__}")
    path = (root or records.measurements_dir()) / gpu / "ncu" / "matmul_order.json"
    return json.loads(path.read_text()) if path.is_file() else None


def _ncu_gpus() -> list[str]:
    """Folders of the GPUs with Nsight Compute counters, the reference GPU first."""
    root = records.measurements_dir()
    found = [p.parent.parent.name for p in root.glob("*/ncu/matmul_order.json")]
    return hardware.first_then_by_name(found, records.reference_gpu())


def counter_rows(ncu: dict, copy_gbps: float) -> list[dict]:
    """The counters of each profiled launch with what the page derives from them.

    Args:
        ncu: a record of :func:`ncu_record`.
        copy_gbps: the GPU's measured copy bandwidth, GB/s (positive).

    Returns:
        One dict per launch: ``shape``, ``order``, ``hit`` (L2 hit rate, %),
        ``dram`` (bytes read from DRAM), ``times_minimum`` (``dram`` over the bytes of
        A and B in float16), ``ms`` (duration), ``gbps`` (DRAM read rate, GB/s) and
        ``of_copy`` (``gbps / copy_gbps``).

    Raises:
        ValueError: ``copy_gbps`` is not positive, or ``ncu`` lacks a counter.
    """
    if not copy_gbps > 0:
        raise ValueError(f"copy_gbps must be positive, got {copy_gbps!r}")
    out = []
    for row in ncu["rows"]:
        try:
            dram = row["dram__bytes_read.sum"]["value"]
            seconds = row["gpu__time_duration.sum"]["value"] * 1e-9
            hit = row["lts__t_sector_hit_rate.pct"]["value"]
        except KeyError as err:
            raise ValueError(f"the ncu record has no counter {err} for {row.get('shape')}") from None
        m, n, k = row["shape"]
        gbps = dram / seconds / 1e9
        out.append(
            {
                "shape": tuple(row["shape"]),
                "order": row["order"],
                "hit": hit,
                "dram": dram,
                "times_minimum": dram / ((m * k + k * n) * 2),
                "ms": seconds * 1e3,
                "gbps": gbps,
                "of_copy": gbps / copy_gbps,
            }
        )
    return out


def _ncu_caption(ncu: dict) -> str:
    # Counters of one profiled launch each (the first committed counters' provenance
    # named the benchmarks' timing method instead).
    method = "Nsight Compute counters, one profiled launch each"
    return records.caption({**ncu["provenance"], "timing_method": method})


def counters() -> str:
    """Every GPU's Nsight Compute counters of the program-order launches: L2 hit rate,
    DRAM bytes read (and as a multiple of the minimum), duration, DRAM read rate and
    its share of the copy bandwidth, with the tool line and provenance."""
    gpus = _ncu_gpus()
    if not gpus:
        return f"MISSING: no Nsight Compute counters on any GPU; {records.advice(NCU_HOW)}."
    header = ["shape", "order", "L2 hit", "DRAM read", "x minimum", "time", "DRAM GB/s", "% of copy"]
    blocks = []
    for gpu in gpus:
        ncu, hw = ncu_record(gpu), hardware.ceilings_or_none(gpu)
        if hw is None:
            how = records.advice(records.bench_command(), "that GPU")
            blocks.append(f"MISSING: no measured ceilings for {gpu}; {how}.")
            continue
        section = Section(short_gpu_name(hw.gpu) if len(gpus) > 1 else "", header)
        for r in counter_rows(ncu, hw.copy_gbps):
            section.rows.append(
                [
                    Cell(format_x(r["shape"])),
                    Cell(r["order"]),
                    Cell(f"{r['hit']:.1f}%", r["hit"]),
                    Cell(f"{r['dram'] / 1e9:.1f} GB", r["dram"]),
                    Cell(f"{r['times_minimum']:.1f}x", r["times_minimum"]),
                    Cell(f"{r['ms']:.2f} ms", r["ms"]),
                    Cell(f"{r['gbps']:.0f}", r["gbps"]),
                    Cell(percent(r["of_copy"]), r["of_copy"]),
                ]
            )
        tool = _wrap(f"tool: {ncu['tool'].replace(',', ', ')}")
        blocks.append(f"{render([section])}\n{_wrap(_ncu_caption(ncu))}\n{tool}")
    return "\n\n".join(blocks)


def row_major_verdict() -> str:
    """On each GPU with counters, at the largest profiled shape: how many times as many
    bytes row-major order reads from DRAM as grouped order, at what share of the copy
    bandwidth, and whether that makes it memory-bound (above 80% of the copy)."""
    out = []
    for gpu in _ncu_gpus():
        hw = hardware.ceilings_or_none(gpu)
        if hw is None:
            continue
        rows = {(r["shape"], r["order"]): r for r in counter_rows(ncu_record(gpu), hw.copy_gbps)}
        big = _largest({shape for shape, _ in rows})
        slow, fast = rows[(big, "row-major")], rows[(big, "grouped")]
        verdict = (
            "it is memory-bound, the tensor cores waiting on DRAM."
            if slow["of_copy"] > 0.8
            else "more traffic, but not yet at the memory system's limit."
        )
        out.append(
            _wrap(
                f"{hw.name}: at {format_x(big)}, row-major order reads "
                f"{slow['dram'] / fast['dram']:.1f} times as many bytes from DRAM as grouped "
                f"order, at {percent(slow['of_copy'])} of the copy bandwidth: {verdict}"
            )
        )
    return "\n".join(out) or f"MISSING: no Nsight Compute counters; {records.advice(NCU_HOW)}."


# Tuning sweeps ------------------------------------------------------------------------


def _sweep_gpus() -> list[str]:
    from gpuperf.kernels.configs import TUNED_DIR

    return hardware.first_then_by_name(
        (p.parent.name for p in TUNED_DIR.glob("*/matmul.json")), hardware.page_gpu()
    )


def sweep_sections(sweep: dict) -> list[Section]:
    """One table per dtype of a matmul tuning sweep: per shape, the configs timed, the
    winner, the best and worst TFLOP/s, worst/best, and how many configs came within 3%
    of the best (the table of :func:`gpuperf.pages.sweeps.sweep_table`, as data).

    Raises:
        ValueError: ``sweep`` is not a matmul sweep (no ``trials`` or ``best``).
    """
    from gpuperf.kernels.configs import MatmulConfig

    if not isinstance(sweep, dict) or not {"trials", "best"} <= sweep.keys():
        raise ValueError("expected a matmul tuning sweep (a dict with 'trials' and 'best')")
    best = {(e["dtype"], tuple(e["shape"])): e for e in sweep["best"]}
    trials: dict[tuple, list] = {}
    for t in sweep["trials"]:
        trials.setdefault((t["dtype"], tuple(t["shape"])), []).append(t)
    header = ["shape", "tried", "winner", "best TFLOP/s", "worst TFLOP/s", "worst/best", "within 3%"]
    sections = {}
    for (dtype, shape), tried in trials.items():
        ok = [t["tflops"] for t in tried if t["status"] == "ok"]
        if not ok:
            continue
        close = sum(v >= 0.97 * max(ok) for v in ok)
        winner = MatmulConfig(**best[(dtype, shape)]["config"]).label()
        section = sections.setdefault(dtype, Section(f"dtype={dtype}", header))
        section.rows.append(
            [
                Cell(format_x(shape), matmul_flops(*shape)),
                Cell(str(len(tried)), len(tried)),
                Cell(winner),
                Cell(f"{max(ok):.0f}", max(ok)),
                Cell(f"{min(ok):.0f}", min(ok)),
                Cell(f"{min(ok) / max(ok):.2f}", min(ok) / max(ok)),
                Cell(str(close), close),
            ]
        )
    return list(sections.values())


def sweep_tables() -> str:
    """Every GPU's committed matmul tuning sweep: where it ran, how many candidates, and
    the tables of :func:`sweep_sections`."""
    from gpuperf.bench import tuning
    from gpuperf.pages import sweeps

    blocks = []
    for gpu in _sweep_gpus():
        sweep = tuning.read_tuning(gpu)
        head = f"{sweeps.sweep_caption(sweep)}; {len(sweep['candidates'])} candidate configs"
        blocks.append(f"{_wrap(head)}\n{render(sweep_sections(sweep))}")
    tune = records.advice(records.bench_command("matmul"))
    return "\n\n".join(blocks) or f"MISSING: no matmul tuning sweep; {tune} (it tunes first)."


def sweep_figure(dtype: str = "float16", gpu: str | None = None):
    """The heatmap of ``gpu``'s sweep (default: the page's GPU) for ``dtype``
    (:func:`gpuperf.pages.sweeps.plot_sweep`), or a placeholder naming what is missing.

    Raises:
        ValueError: ``dtype`` is not a dtype the sweep timed.
    """
    from gpuperf.bench import tuning
    from gpuperf.pages import sweeps
    from gpuperf.pages.plotting import plot_missing

    gpu = gpu or hardware.page_gpu()
    sweep = tuning.read_tuning(gpu)
    if sweep is None:
        tune = records.advice(records.bench_command("matmul"), "that GPU")
        return plot_missing("Matmul tuning sweep", f"no tuning sweep for {gpu}; {tune}")
    dtypes = sorted({t["dtype"] for t in sweep["trials"]})
    if dtype not in dtypes:
        raise ValueError(f"dtype must be one of the sweep's {dtypes}, got {dtype!r}")
    return sweeps.plot_sweep(sweep, dtype)


def sweep_drift(result: Result) -> str:
    """On each GPU, the range of (the winner's TFLOP/s in the benchmark run) / (its
    TFLOP/s in the tuning sweep), over the rows where the benchmark ran the sweep's
    winner: how far one config's speed moves between two runs.

    Raises:
        TypeError, ValueError: ``result`` is not a result of ``MATMUL``.
    """
    from gpuperf.bench import tuning

    check_result(result, MATMUL)

    def line(res: Result) -> str:
        sweep = tuning.read_tuning(res.folder)
        if sweep is None:
            return f"no tuning sweep for {res.gpu}"
        best = {(e["dtype"], tuple(e["shape"])): e for e in sweep["best"]}
        drift = []
        for r in res.record["rows"]:
            entry = best.get((r["axes"]["dtype"], tuple(r["x"])))
            if r["provider"] == "triton" and r["status"] == "ok" and entry and r["config"] == entry["config"]:
                drift.append((r["value"] / entry["tflops"], r["axes"]["dtype"], tuple(r["x"])))
        if not drift:
            return "the benchmark ran none of the sweep's winners"
        (lo, lo_d, lo_x), (hi, hi_d, hi_x) = min(drift), max(drift)
        return _wrap(
            f"the winner's TFLOP/s in the benchmark / in the sweep, same config: "
            f"{times(lo)} ({lo_d} {format_x(lo_x)}) to {times(hi)} ({hi_d} {format_x(hi_x)})"
        )

    return _per_gpu(result.gpus(), line)


# cuBLAS and torch.compile -------------------------------------------------------------


def against_cublas(result: Result) -> str:
    """Per GPU and dtype: the ceiling the shares are taken of, named from the record's entry
    (:func:`~gpuperf.pages.plotting.ceiling_label`: the call and the shape that set it;
    measured at the start of the benchmark's run and kept in its record, with its 20th-80th
    percentiles); the ratio to cuBLAS at the large squares with the TFLOP/s and its share of
    that ceiling and of the datasheet's peak; the geometric mean of the ratio over the
    squares the record holds (named: a quick live build measures some); and cuBLAS's own
    rows read against the same ceiling: at the ceiling's shape, the same call and shape
    measured later in the run, and at the large squares, each against cuBLAS's rate at the
    ceiling's shape.

    Raises:
        TypeError, ValueError: ``result`` is not a result of ``MATMUL``.
    """
    check_result(result, MATMUL)

    def lines(res: Result) -> str:
        sheet = DATASHEET.get(res.gpu, {})
        out = []
        for dtype, key in (("float16", "fp16_tflops"), ("bfloat16", "bf16_tflops")):
            ratios, values = res.ratios(dtype=dtype), res.values(dtype=dtype)
            fractions = res.fraction_of_ceiling(dtype=dtype)
            ceiling = res.record["ceilings"].get(key)
            if ceiling is None:
                out.append(f"{dtype}: no measured ceiling in this record")
            else:
                out.append(
                    _wrap(
                        f"{dtype}, against the ceiling measured at the start of this run, "
                        f"{hardware.ceiling_label(key, ceiling)}: {ceiling['value']:.0f} TFLOP/s "
                        f"({_spread(ceiling)}, 20th–80th percentile)"
                    )
                )
            for s in SQUARES[2:]:
                if s not in ratios:
                    continue
                line = f"  {format_x(s)}: {times(ratios[s])} cuBLAS's speed, {values[s]:.0f} TFLOP/s"
                if s in fractions:
                    line += f" = {percent(fractions[s])} of that ceiling"
                if key in sheet:
                    line += f", {percent(values[s] / sheet[key])} of the datasheet's {sheet[key]:.0f}"
                out.append(_wrap(line, "  "))
            squares = [s for s in SQUARES if s in ratios]
            if squares:
                mean, named = _geomean([ratios[s] for s in squares]), _squares_named(squares)
                out.append(f"  geometric mean of the ratio to cuBLAS, {named}: {times(mean)}")
            if ceiling is not None:
                own = _cublas_against_ceiling(res, dtype, ceiling)
                if own:
                    out.append(_wrap(own, "  "))
        return "\n".join(out)

    return _per_gpu(result.gpus(), lines) or "\n".join(result.all_notes())


def _cublas_against_ceiling(res: Result, dtype: str, ceiling: dict) -> str:
    """cuBLAS's own rows of ``dtype`` read against the record's ``ceiling`` (its entry): at
    the ceiling's shape where the benchmark has a row there (the same call and shape, later
    in the run: how far a measurement moves within one run), and at each large square of
    :data:`SQUARES` as a share of the ceiling and a ratio to cuBLAS's rate at the ceiling's
    shape (a different product, not the same measurement). Empty without cuBLAS rows."""
    values, shares = res.values("cublas", dtype=dtype), res.fraction_of_ceiling("cublas", dtype=dtype)
    shape = tuple(ceiling["shape"]) if ceiling.get("shape") else None
    parts = []
    if shape in shares:
        parts.append(
            f"at {format_x(shape)}, the ceiling's shape, {values[shape]:.0f} TFLOP/s = "
            f"{percent(shares[shape])} of it (the same call and shape)"
        )
    elif shape is not None:
        parts.append(f"no row at the ceiling's shape, {format_x(shape)}")
    for s in SQUARES[2:]:
        if s == shape or s not in shares:
            continue
        part = f"at {format_x(s)}, {values[s]:.0f} TFLOP/s = {percent(shares[s])} of it"
        if shape in values:
            part += f" ({times(values[s] / values[shape])} its rate at {format_x(shape)}: another product)"
        parts.append(part)
    if not parts or not shares:
        return ""
    return "cuBLAS's own rows, measured later in this run: " + "; ".join(parts)


def _shape(entry: dict) -> str:
    """``'at 4096³'``: the shape a ceiling's entry was measured at, or ``'(shape not
    recorded)'``."""
    shape = entry.get("shape")
    return f"at {format_x(tuple(shape))}" if shape else "(shape not recorded)"


def _run_over_run(later: dict, earlier: dict, keys) -> str:
    """``'fp16 1.02×, bf16 1.02× (each at the same shape)'``: each ceiling of ``later`` over
    the same ceiling of ``earlier`` (entries by key), saying whether the two were set by
    the same shape (then the same measurement repeated) or which shapes they were."""
    parts = []
    for key in keys:
        a, b = later.get(key), earlier.get(key)
        if not (a and b):
            continue
        part = f"{key.removesuffix('_tflops')} {times(a['value'] / b['value'])}"
        if a.get("shape") and a.get("shape") == b.get("shape"):
            part += f" (both {_shape(a)})"
        else:
            part += f" ({_shape(a)} over {_shape(b)})"
        parts.append(part)
    return ", ".join(parts)


def _spread(entry: dict) -> str:
    """``'784–792'``: a ceiling's 20th and 80th percentiles, TFLOP/s."""
    return f"{entry['value_p20']:.0f}–{entry['value_p80']:.0f}"


def ceilings_by_run(result: Result) -> str:
    """Per GPU, the fp16 and bf16 ceilings (cuBLAS's ``torch.matmul`` on random square
    inputs at a few large sizes, the fastest kept) of the two runs the page reads: the run
    whose ceilings the page prints first (the GPU's ``hardware.json``) and the matmul
    benchmark's own run (its record), whose ceilings :func:`against_cublas` takes shares
    of; each a median with its 20th-80th percentiles and the shape that set it (from its
    entry), the datasheet's peak beside them, fp16 over bf16 in each run, whether fp16's
    80th percentile lies below bf16's 20th in each (a gap wider than the runs' spread), and
    each ceiling of the matmul's run over the same ceiling of the other run.

    Raises:
        TypeError, ValueError: ``result`` is not a result of ``MATMUL``.
    """
    check_result(result, MATMUL)
    keys = ("fp16_tflops", "bf16_tflops")

    def block(res: Result) -> str:
        hw = hardware.ceilings_or_none(res.folder)
        runs = []  # (column name, {key: ceiling entry})
        if hw is not None:
            entries = {
                k: hw.entries[k]
                for k in keys
                if k in hw.entries and k in hw.spread and "value_p20" in hw.entries[k]
            }
            runs.append((f"ceilings' run, {hw.provenance['date'][:10]}", entries))
        runs.append((f"matmul's run, {res.record['provenance']['date'][:10]}", res.record["ceilings"]))
        sheet = DATASHEET.get(res.gpu, {})
        header = ["TFLOP/s", *(name for name, _ in runs), *(["datasheet"] if sheet else [])]
        heading = f"{res.name}: the fp16 and bf16 ceilings, median (20th–80th percentile) and shape"
        section = Section(heading, header)
        for key in keys:
            cells = [Cell(key.removesuffix("_tflops"))]
            for _, entries in runs:
                e = entries.get(key)
                cells.append(
                    Cell(f"{e['value']:.0f} ({_spread(e)}) {_shape(e)}", e["value"]) if e else Cell("-")
                )
            if sheet:
                cells.append(Cell(f"{sheet[key]:.0f}", sheet[key]) if key in sheet else Cell("-"))
            section.rows.append(cells)
        verdicts = []
        ratio_cells = [Cell("fp16 / bf16")]
        for name, entries in runs:
            fp16, bf16 = entries.get(keys[0]), entries.get(keys[1])
            if not (fp16 and bf16):
                ratio_cells.append(Cell("-"))
                continue
            ratio = fp16["value"] / bf16["value"]
            ratio_cells.append(Cell(f"{ratio:.2f}", ratio))
            apart = fp16["value_p80"] < bf16["value_p20"] or fp16["value_p20"] > bf16["value_p80"]
            verdicts.append(
                f"in the {name.split(',')[0]} fp16 is {'below' if ratio < 1 else 'at or above'} bf16, "
                f"{'beyond' if apart else 'within'} their 20th–80th percentile spreads"
            )
        if sheet:
            ratio_cells.append(Cell(f"{sheet[keys[0]] / sheet[keys[1]]:.2f}"))
        section.rows.append(ratio_cells)
        text = render([section])
        if verdicts:
            text += "\n" + _wrap("; ".join(verdicts).capitalize() + ".")
        if len(runs) == 2:
            moved = _run_over_run(runs[1][1], runs[0][1], keys)
            if moved:
                text += "\n" + _wrap(f"The matmul's run over the ceilings' run: {moved}.")
        return text

    return "\n\n".join(block(r) for r in result.gpus()) or "\n".join(result.all_notes())


def smallest_product(result: Result) -> str:
    """Per GPU, the microseconds per call of every provider at the smallest float16
    product of ``MATMUL`` (a launch-bound size).

    Raises:
        TypeError, ValueError: ``result`` is not a result of ``MATMUL``.
    """
    check_result(result, MATMUL)

    def lines(res: Result) -> str:
        rows = [r for r in res.record["rows"] if r["axes"]["dtype"] == "float16" and r["ms"]]
        small = min((r["x"] for r in rows), key=lambda s: matmul_flops(*s))
        return "\n".join(
            f"{format_x(small)} float16, {r['provider']:>8}: {r['ms'] * 1e3:.1f} us per call"
            for r in rows
            if r["x"] == small
        )

    return _per_gpu(result.gpus(), lines)


def against_compile(result: Result) -> str:
    """Our TFLOP/s over ``torch.compile``'s, per shape and dtype: one table per GPU.

    Raises:
        TypeError, ValueError: ``result`` is not a result of ``MATMUL``.
    """
    check_result(result, MATMUL)
    dtypes = ("float16", "bfloat16")
    sections = []
    for res in result.gpus():
        name = res.name if len(result.gpus()) > 1 else ""
        section = Section(name, ["shape", *(f"{d} ours / compile" for d in dtypes)])
        for shape in res.values(dtype=dtypes[0]):
            cells = [Cell(format_x(shape))]
            for dtype in dtypes:
                ours, theirs = res.values(dtype=dtype), res.values("compile", dtype=dtype)
                ratio = ours[shape] / theirs[shape] if shape in ours and shape in theirs else None
                cells.append(number(ratio, ".2f", "x"))
            section.rows.append(cells)
        sections.append(section)
    return render(sections, result.all_notes())


# The fused epilogue -------------------------------------------------------------------


def fused_vs_compile(epilogue: Result) -> dict:
    """``{shape: fused TFLOP/s / torch.compile TFLOP/s}`` of this result's own record.

    Raises:
        TypeError, ValueError: ``epilogue`` is not a result of ``MATMUL_EPILOGUE``.
    """
    check_result(epilogue, MATMUL_EPILOGUE)
    theirs = epilogue.values("compile")
    return {x: v / theirs[x] for x, v in epilogue.values().items() if x in theirs}


def epilogue_ratios(epilogue: Result) -> str:
    """Per GPU and shape, the fused kernel over the eager chain and over
    ``torch.compile``, then at how many shapes the fused kernel beats each.

    Raises:
        TypeError, ValueError: ``epilogue`` is not a result of ``MATMUL_EPILOGUE``.
    """
    check_result(epilogue, MATMUL_EPILOGUE)

    def lines(res: Result) -> str:
        eager, compiled = res.ratios(), fused_vs_compile(res)
        out = [
            f"{format_x(s):>15}: fused / eager {times(eager[s])}, fused / torch.compile {times(compiled[s])}"
            for s in eager
            if s in compiled
        ]
        wins = sum(r > 1 for r in compiled.values())
        tail = (
            " Against torch.compile, what fusing saves must make up for running the product"
            " on our main loop instead of cuBLAS's, and here it does not everywhere."
            if wins < len(compiled)
            else " What fusing saves makes up for our main loop's distance from cuBLAS's."
        )
        out.append(
            _wrap(
                f"The fused kernel beats the eager chain at {sum(r > 1 for r in eager.values())} of "
                f"{len(eager)} shapes and torch.compile at {wins} of {len(compiled)}.{tail}"
            )
        )
        return "\n".join(out)

    return _per_gpu(epilogue.gpus(), lines) or "\n".join(epilogue.all_notes())


def epilogue_split(result: Result, epilogue: Result) -> str:
    """Per GPU, each epilogue shape split into the plain product (``MATMUL``, bfloat16)
    and what the epilogue adds on top (the epilogue record's time minus the product's),
    ours against cuBLAS + torch.compile's, in microseconds; then where ours adds less or
    more than torch.compile's, differences under 2% of the product being noise.

    Raises:
        TypeError, ValueError: the results are not of ``MATMUL`` and ``MATMUL_EPILOGUE``.
    """
    check_result(result, MATMUL)
    check_result(epilogue, MATMUL_EPILOGUE)
    header = [
        "shape",
        "product: ours",
        "cuBLAS",
        "epilogue: ours",
        "torch.compile",
        "fused / compile",
    ]
    blocks = []
    for res in result.gpus():
        try:
            epi = epilogue.on(res.gpu)
        except ValueError:
            continue
        plain = {p: res.us(p, dtype="bfloat16") for p in ("triton", "cublas")}
        fused = {p: epi.us(p) for p in ("triton", "compile")}
        section = Section(f"{res.name}, us per call", header)
        gaps = {}
        for shape, ratio in fused_vs_compile(epi).items():
            if not all(shape in plain[p] for p in plain):
                continue
            ours, lib = plain["triton"][shape], plain["cublas"][shape]
            ours_epi, lib_epi = fused["triton"][shape] - ours, fused["compile"][shape] - lib
            gaps[shape] = (ours - lib, ours_epi - lib_epi, lib)
            numbers = (ours, lib, ours_epi, lib_epi)
            section.rows.append(
                [Cell(format_x(shape)), *(Cell(f"{v:.0f}", v) for v in numbers), Cell(f"{ratio:.2f}x", ratio)]
            )
        if not gaps:
            continue
        slower = sum(product > NOISE * lib for product, _, lib in gaps.values())
        less = [s for s, (_, epi_gap, lib) in gaps.items() if epi_gap < -NOISE * lib]
        more = [format_x(s) for s, (_, epi_gap, lib) in gaps.items() if epi_gap > NOISE * lib]
        blocks.append(
            render([section])
            + "\n"
            + _wrap(
                f"Our product is slower than cuBLAS's by over 2% at {slower} of {len(gaps)} shapes."
                + f" Our fused epilogue adds less than torch.compile's separate one at {len(less)}"
                + f" of {len(gaps)} shapes, more at {len(more)}"
                + (f" ({', '.join(more)})" if more else "")
                + ", and about the same (within 2% of the product's time) at the rest."
            )
        )
    return "\n\n".join(blocks) or "no GPU has both records"


# Host time ----------------------------------------------------------------------------


def host_time(host: Result) -> str:
    """Per GPU, the host's microseconds per matmul call: through the launch cache,
    through ``kernel[grid]``, and ``torch.matmul``.

    Raises:
        TypeError, ValueError: ``host`` is not a result of ``HOST_OVERHEAD``.
    """
    check_result(host, HOST_OVERHEAD)

    def line(res: Result) -> str:
        us = {p: res.values(p).get("matmul") for p in ("triton", "triton_jit", "torch")}
        if None in us.values():
            return "no matmul row in the host-overhead record"
        return _wrap(
            f"matmul: {us['triton']:.1f} us per call through the launch cache, "
            f"{us['triton_jit']:.1f} us through kernel[grid] "
            f"({times(us['triton_jit'] / us['triton'], 1)} as long), torch.matmul {us['torch']:.1f} us"
        )

    return _per_gpu(host.gpus(), line) or "\n".join(host.all_notes())


# torch.compile ------------------------------------------------------------------------


def graph_ops(graph_module) -> list[str]:
    """The functions a ``torch.fx.GraphModule`` calls, our ops as ``torch.ops.gpuperf.*``
    and the others by module and name (``torch.relu``).

    Raises:
        TypeError: ``graph_module`` has no ``graph`` (is not a ``GraphModule``).
    """
    graph = getattr(graph_module, "graph", None)
    if graph is None:
        raise TypeError(f"expected a torch.fx.GraphModule, got {type(graph_module).__name__}")
    names = []
    for node in graph.nodes:
        if node.op != "call_function":
            continue
        name = str(node.target).removesuffix(".default")
        if name.startswith("gpuperf."):
            names.append(f"torch.ops.{name}")
        else:
            names.append(f"{node.target.__module__}.{node.target.__name__}")
    return names
