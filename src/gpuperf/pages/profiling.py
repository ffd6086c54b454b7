"""Tables and figures of the profiling guide, read from the captures of one GPU run.

``scripts/profile_capture.py`` writes the captures on a GPU (:mod:`gpuperf.bench.captures`);
the functions here turn them into what the guide shows, on any machine: the timing
methods side by side, host time against GPU time as a kernel grows, the
``torch.profiler`` table and a timeline drawn from its Chrome trace, Nsight Compute's
counters, and proton's tree. Tables come out as text or HTML, as
:func:`gpuperf.pages.tables.render` is asked.

The guide's topic module too: :func:`in_one_paragraph` opens it with its headline
measurements for every GPU with captures or records, and the sentences it prints under
each capture (:func:`timing_gaps`, :func:`crossovers`, :func:`ncu_findings` and the
others) are written here from the captures, each taking one capture as
:func:`gpuperf.pages.captures.show` hands it over, and refusing any other.
"""

from __future__ import annotations

import gzip
import json
import re
import textwrap
from pathlib import Path

from gpuperf.bench import captures, records
from gpuperf.bench.catalog import HOST_OVERHEAD, ROW_MEAN
from gpuperf.pages import captures as pages_captures
from gpuperf.pages import hardware
from gpuperf.pages.captures import how
from gpuperf.pages.plotting import short_gpu_name
from gpuperf.pages.prose import WIDTH, Paragraph, paragraph, percent, span
from gpuperf.pages.report import Result, load
from gpuperf.pages.tables import Cell, Section, render

#: Nsight Compute's counters the guide reads, in order: (label, metric, scale, digits).
#: ``metric`` is a name from ncu's sections (their human names) or a raw counter;
#: ``scale`` converts ncu's unit to the label's.
NCU_ROWS = (
    ("duration (µs)", "Duration", 1e-3, 1),
    ("DRAM throughput (% of peak)", "DRAM Throughput", 1, 1),
    ("compute (SM) throughput (% of peak)", "Compute (SM) Throughput", 1, 1),
    (
        "tensor pipe active (% of peak)",
        "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
        1,
        1,
    ),
    ("wgmma instructions (thousands)", "sm__inst_executed_pipe_tensor_op_gmma.sum", 1e-3, 0),
    ("DRAM read (MB)", "dram__bytes_read.sum", 1e-6, 1),
    ("DRAM written (MB)", "dram__bytes_write.sum", 1e-6, 1),
    ("L2 hit rate (%)", "L2 Hit Rate", 1, 1),
    ("achieved occupancy (%)", "Achieved Occupancy", 1, 1),
    ("theoretical occupancy (%)", "Theoretical Occupancy", 1, 1),
    ("registers per thread", "Registers Per Thread", 1, 0),
    ("local-memory (spill) requests", "Local Memory Spilling Requests", 1, 0),
    ("threads per block", "Block Size", 1, 0),
    ("blocks", "Grid Size", 1, 0),
    ("waves per SM", "Waves Per SM", 1, 2),
)


def _us(ms: float | None, digits: int = 1) -> Cell:
    if ms is None:
        return Cell("-")
    return Cell(f"{ms * 1e3:,.{digits}f}", ms * 1e3)


def method(op: dict, key: str) -> dict:
    """The entry of timing method ``key`` for one op of the ``timing_methods`` capture.

    Raises:
        KeyError: the op has no such method; the message lists those it has.
    """
    for entry in op["methods"]:
        if entry["key"] == key:
            return entry
    raise KeyError(f"no timing method {key!r}; the capture has {[m['key'] for m in op['methods']]}")


def timing_methods_table(capture: dict, notes=()) -> str:
    """One table per op: each timing method's median and 20th/80th percentiles in µs,
    and its ratio to the CUDA-graph time (the kernel alone, launches removed)."""
    sections = []
    for op in capture["payload"]["ops"]:
        graph = method(op, "do_bench_cudagraph")["ms"]
        section = Section(op["op"], ["method", "median µs", "p20 µs", "p80 µs", "x CUDA-graph time"])
        for entry in op["methods"]:
            ratio = entry["ms"] / graph if graph else None
            section.rows.append(
                [
                    Cell(entry["label"]),
                    _us(entry["ms"]),
                    _us(entry.get("ms_p20")),
                    _us(entry.get("ms_p80")),
                    Cell("-") if ratio is None else Cell(f"{ratio:,.1f}x", ratio),
                ]
            )
        sections.append(section)
    return render(sections, notes)


def launch_bound_rows(capture: dict, provider: str) -> list[dict]:
    """The rows of one provider of the ``launch_bound`` capture, smallest input first."""
    rows = [r for r in capture["payload"]["rows"] if r["provider"] == provider]
    return sorted(rows, key=lambda r: r["bytes"])


def crossover(capture: dict, provider: str) -> dict | None:
    """The first row (by size) where the GPU's time per call exceeds the host's: below
    it the host sets the pace (launch-bound), from it on the GPU does (GPU-bound)."""
    for row in launch_bound_rows(capture, provider):
        if row["device_ms"] is not None and row["device_ms"] > row["host_ms"]:
            return row
    return None


def launch_bound_table(capture: dict, notes=()) -> str:
    """Per size: each provider's host time per call, GPU time, and wall time per call
    in a loop of back-to-back calls, in µs."""
    providers = list(dict.fromkeys(r["provider"] for r in capture["payload"]["rows"]))
    labels = {r["provider"]: r["label"] for r in capture["payload"]["rows"]}
    sections = []
    for key in providers:
        section = Section(labels[key], ["input", "MB moved", "host µs/call", "GPU µs", "loop µs/call"])
        for row in launch_bound_rows(capture, key):
            section.rows.append(
                [
                    Cell(f"{row['rows']} x {row['cols']}", row["rows"]),
                    Cell(f"{row['bytes'] / 1e6:,.1f}", row["bytes"]),
                    _us(row["host_ms"]),
                    _us(row["device_ms"]),
                    _us(row["loop_ms"]),
                ]
            )
        sections.append(section)
    return render(sections, notes)


def launch_bound_figure(capture: dict, notes=()):
    """Host time per call (dashed) and GPU time per call (solid) against the bytes a call
    moves, log-log: where the solid line rises above the dashed one, the GPU sets the pace."""
    import matplotlib.pyplot as plt

    from gpuperf.pages.plotting import provider_color

    fig, ax = plt.subplots(figsize=(8, 4.6), facecolor="white", layout="constrained")
    ax.set_facecolor("white")
    for key in dict.fromkeys(r["provider"] for r in capture["payload"]["rows"]):
        rows = launch_bound_rows(capture, key)
        label = rows[0]["label"]
        color = provider_color(key)
        mb = [r["bytes"] / 1e6 for r in rows]
        ax.plot(mb, [r["host_ms"] * 1e3 for r in rows], "--", color=color, marker="o", ms=3.5, label=label)
        gpu = [(m, r["device_ms"] * 1e3) for m, r in zip(mb, rows, strict=True) if r["device_ms"] is not None]
        if gpu:
            ax.plot(*zip(*gpu, strict=True), "-", color=color, marker="s", ms=3.5)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("MB moved per call (input + output)")
    ax.set_ylabel("µs per call")
    ax.grid(True, which="both", alpha=0.25)
    handles, _ = ax.get_legend_handles_labels()
    styles = [
        plt.Line2D([], [], color="0.3", ls="--", marker="o", ms=3.5, label="host time per call"),
        plt.Line2D([], [], color="0.3", ls="-", marker="s", ms=3.5, label="GPU time per call"),
    ]
    ax.legend(handles=handles + styles, loc="upper left", fontsize=8.5, frameon=False)
    cols = capture["payload"]["cols"]
    ax.set_title(
        f"Softmax over rows of {cols} float32: host time vs GPU time as the input grows", fontsize=10
    )
    fig.text(0.01, -0.02, "\n".join([captures.caption(capture), *notes]), fontsize=7.5, va="top", wrap=True)
    return fig


def key_averages_table(capture: dict, limit: int = 12, notes=()) -> str:
    """The profiler's ``key_averages()`` rows with the most CUDA time, sorted by it:
    calls, CPU total and self time, CUDA total and self time (µs), and the CUDA
    memory each allocated itself (MB; negative: freed)."""
    rows = sorted(capture["payload"]["key_averages"], key=lambda r: (-(r["cuda_total_us"] or 0), r["name"]))[
        :limit
    ]
    section = Section(
        "",
        ["name", "calls", "CPU total µs", "self CPU µs", "CUDA total µs", "self CUDA µs", "self CUDA MB"],
    )
    for r in rows:
        name = r["name"] if len(r["name"]) <= 60 else r["name"][:57] + "..."
        mem = r["self_cuda_memory_bytes"]
        section.rows.append(
            [
                Cell(name, r["name"]),
                Cell(str(r["count"]), r["count"]),
                Cell(f"{r['cpu_total_us']:,.0f}", r["cpu_total_us"]),
                Cell(f"{r['self_cpu_us']:,.0f}", r["self_cpu_us"]),
                Cell(f"{r['cuda_total_us']:,.0f}", r["cuda_total_us"]),
                Cell(f"{r['self_cuda_us']:,.0f}", r["self_cuda_us"]),
                Cell("-") if mem is None else Cell(f"{mem / 1e6:,.1f}", mem),
            ]
        )
    return render([section], notes)


def read_trace(path: Path) -> dict:
    """A Chrome/Perfetto trace as ``torch.profiler`` exports it (``.json`` or ``.json.gz``)."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        return json.load(f)


#: Trace event categories drawn on each lane of the timeline, top to bottom.
TIMELINE_LANES = (
    ("CPU: record_function ranges", ("user_annotation",)),
    ("CPU: CUDA runtime calls", ("cuda_runtime", "cuda_driver")),
    ("GPU: kernels, copies, memsets", ("kernel", "gpu_memcpy", "gpu_memset")),
)
#: Colours of the ranges (and of the GPU work that they launched).
RANGE_COLORS = {"forward": "#1f77b4", "backward": "#d62728", "optimizer": "#2ca02c"}


def _range_of(event: dict, ranges: list[dict]) -> str | None:
    """The innermost named range (forward, backward, optimizer) whose CPU span holds ``event``."""
    for r in ranges:
        if r["ts"] <= event["ts"] <= r["ts"] + r["dur"]:
            return r["name"]
    return None


def timeline_figure(trace: dict, *, title: str = "", caption: str = ""):
    """The trace's last step as a timeline: the CPU's ranges and CUDA runtime calls, and
    the GPU's kernels, coloured by the range (forward, backward, optimizer) whose CPU
    side launched them (the runtime call and its kernel share a ``correlation`` id).
    Time runs from the start of the last ``step`` range, in milliseconds.

    Raises:
        ValueError: the trace has no ``step`` range (``record_function("step ...")``).
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    events = [e for e in trace["traceEvents"] if e.get("ph") == "X" and "dur" in e]
    steps = sorted(
        (e for e in events if e.get("cat") == "user_annotation" and e["name"].startswith("step")),
        key=lambda e: e["ts"],
    )
    if not steps:
        raise ValueError("the trace has no record_function range named 'step ...'")
    step = steps[-1]
    ranges = [e for e in events if e.get("cat") == "user_annotation" and e["name"] in RANGE_COLORS]
    # The backward pass runs on autograd's own thread: its CPU span is the gap the
    # "backward" range on the main thread waits through, so ranges hold launches from any thread.
    launches = {}
    for e in events:
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {}):
            launches[e["args"]["correlation"]] = _range_of(e, ranges)
    gpu = [e for e in events if e.get("cat") in TIMELINE_LANES[2][1]]
    start = step["ts"]
    end = max([step["ts"] + step["dur"]] + [e["ts"] + e["dur"] for e in gpu if e["ts"] >= start])

    fig, ax = plt.subplots(figsize=(8, 3.2), facecolor="white", layout="constrained")
    ax.set_facecolor("white")
    lanes = list(reversed(TIMELINE_LANES))
    for y, (_, cats) in enumerate(lanes):
        for e in events:
            if e.get("cat") not in cats or e["ts"] + e["dur"] < start or e["ts"] > end:
                continue
            if e.get("cat") == "user_annotation":
                name = e["name"] if e["name"] in RANGE_COLORS else None
            elif e.get("cat") in ("cuda_runtime", "cuda_driver"):
                name = _range_of(e, ranges)
            else:
                name = launches.get(e.get("args", {}).get("correlation"))
            if e.get("cat") == "user_annotation" and name is None:
                continue
            color = RANGE_COLORS.get(name, "0.55")
            x0 = (e["ts"] - start) / 1e3
            ax.broken_barh([(x0, max(e["dur"] / 1e3, 0.002))], (y - 0.35, 0.7), color=color, lw=0)
    ax.set_yticks(range(len(lanes)), [label for label, _ in lanes])
    ax.set_xlim(0, (end - start) / 1e3)
    ax.set_xlabel(f"ms from the start of '{step['name']}' on the CPU")
    ax.grid(True, axis="x", alpha=0.25)
    ax.legend(
        handles=[Patch(color=c, label=n) for n, c in RANGE_COLORS.items()]
        + [Patch(color="0.55", label="other")],
        loc="upper center",
        bbox_to_anchor=(0.5, -0.3),
        ncol=4,
        fontsize=8.5,
        frameon=False,
    )
    if title:
        ax.set_title(title, fontsize=10)
    if caption:
        fig.text(0.01, -0.04, caption, fontsize=7.5, va="top", wrap=True)
    return fig


def ncu_value(launch: dict, metric: str, scale: float = 1):
    """One counter of one profiled launch, scaled (None when ncu did not report it)."""
    entry = launch["metrics"].get(metric)
    if entry is None or not isinstance(entry["value"], (int, float)):
        return None
    return entry["value"] * scale


def ncu_launch(capture: dict, op: str) -> dict:
    """The profiled launch of ``op`` (a name from the capture's ``ops``).

    Raises:
        KeyError: no launch was matched to ``op``; the message lists those that were.
    """
    for launch in capture["payload"]["launches"]:
        if launch.get("op") == op:
            return launch
    found = [launch.get("op") for launch in capture["payload"]["launches"] if launch.get("op")]
    raise KeyError(f"no profiled launch of {op!r}; the capture has {found}")


def ncu_table(capture: dict, ops=None, notes=()) -> str:
    """Nsight Compute's answers to "why is it slow", one column per op (default: every
    op matched to a launch), one row per counter of :data:`NCU_ROWS`."""
    launches = [launch for launch in capture["payload"]["launches"] if launch.get("op")]
    if ops is not None:
        launches = [ncu_launch(capture, op) for op in ops]
    section = Section("", ["counter", *[launch["op"] for launch in launches]])
    for label, metric, scale, digits in NCU_ROWS:
        values = [ncu_value(launch, metric, scale) for launch in launches]
        if all(v is None for v in values):
            continue
        section.rows.append(
            [Cell(label)] + [Cell("-") if v is None else Cell(f"{v:,.{digits}f}", v) for v in values]
        )
    return render([section], notes)


def proton_kernels(capture: dict) -> list[dict]:
    """proton's kernels: ``{scope, kernel, count, total_us, avg_us}`` for each leaf frame
    with a time; empty when proton did not run (the capture's ``error`` says why)."""
    out = []
    for frame in capture["payload"].get("frames", []):
        metrics = frame["metrics"]
        if "time (ns)" not in metrics or not metrics.get("count"):
            continue
        out.append(
            {
                "scope": "/".join(frame["path"][1:-1]),
                "kernel": frame["name"],
                "count": metrics["count"],
                "total_us": metrics["time (ns)"] / 1e3,
                "avg_us": metrics["time (ns)"] / 1e3 / metrics["count"],
            }
        )
    return out


def proton_table(capture: dict, notes=()) -> str:
    """proton's tree flattened: scope, kernel, calls, total and average time (µs)."""
    section = Section("", ["scope", "kernel", "calls", "total µs", "µs per call"])
    for k in proton_kernels(capture):
        section.rows.append(
            [
                Cell(k["scope"]),
                Cell(k["kernel"]),
                Cell(str(k["count"]), k["count"]),
                Cell(f"{k['total_us']:,.1f}", k["total_us"]),
                Cell(f"{k['avg_us']:,.1f}", k["avg_us"]),
            ]
        )
    return render([section], notes)


def last_step_summary(trace: dict) -> dict:
    """What the trace's last ``step`` range shows: ``step_ms`` (its CPU span), ``gpu_ms``
    (from its start to the end of the last GPU work it launched), ``busy_ms`` (time the
    GPU was running kernels, copies or memsets, overlaps counted once), ``busy_fraction``
    (``busy_ms / gpu_ms``) and ``kernels`` (how many ran).

    Raises:
        ValueError: the trace has no ``step`` range.
    """
    events = [e for e in trace["traceEvents"] if e.get("ph") == "X" and "dur" in e]
    steps = [e for e in events if e.get("cat") == "user_annotation" and e["name"].startswith("step")]
    if not steps:
        raise ValueError("the trace has no record_function range named 'step ...'")
    step = max(steps, key=lambda e: e["ts"])
    start, stop = step["ts"], step["ts"] + step["dur"]
    launched = {
        e["args"]["correlation"]
        for e in events
        if e.get("cat") in ("cuda_runtime", "cuda_driver")
        and start <= e["ts"] <= stop
        and "correlation" in e.get("args", {})
    }
    gpu = sorted(
        (
            e
            for e in events
            if e.get("cat") in TIMELINE_LANES[2][1] and e["args"].get("correlation") in launched
        ),
        key=lambda e: e["ts"],
    )
    busy, end = 0.0, start
    for e in gpu:  # the union of the intervals
        lo, hi = max(e["ts"], end), e["ts"] + e["dur"]
        if hi > lo:
            busy += hi - lo
            end = hi
    gpu_end = max([stop] + [e["ts"] + e["dur"] for e in gpu])
    return {
        "step_ms": step["dur"] / 1e3,
        "gpu_ms": (gpu_end - start) / 1e3,
        "busy_ms": busy / 1e3,
        "busy_fraction": busy / (gpu_end - start),
        "kernels": sum(1 for e in gpu if e.get("cat") == "kernel"),
    }


# --- the guide's sentences, from the captures and records -------------------------------

#: The captures the profiling guide shows, in the order it shows them.
CAPTURES = ("timing_methods", "launch_bound", "torch_profiler", "cuda_extension", "ncu_kernels", "proton")
#: What each provider of the row-mean benchmark is called in prose.
ROW_MEAN_NAMES = {"triton": "Triton", "cuda": "CUDA C++", "torch": "x.mean"}


def _payload(capture, name: str) -> dict:
    """The payload of ``capture``, checked to be a capture named ``name``.

    Raises:
        TypeError: ``capture`` is not a dict.
        ValueError: it is a capture of another name, or has no payload.
    """
    if not isinstance(capture, dict):
        raise TypeError(f"capture must be a dict (a loaded capture), got {type(capture).__name__}")
    if capture.get("name") != name:
        raise ValueError(f"expected the capture {name!r}, got {capture.get('name')!r}")
    if not isinstance(capture.get("payload"), dict):
        raise ValueError(f"the capture {name!r} has no payload")
    return capture["payload"]


def _short(text: str) -> str:
    """A note without its list of files, for the opening paragraph."""
    return re.sub(r" \([^()]*\.py[^()]*\)", "", text)


def _merged(where: str, notes: list[str]) -> list[str]:
    """The notes of one record or capture as one note for the opening paragraph: its
    kind (``STALE``, ...) once, each reason without its list of files, then the
    command that refreshes it once (``where``: which GPU and record)."""
    if not notes:
        return []
    kind = re.match(r"[A-Z]+: ", notes[0])
    fix = re.search(r"; (re-run .*)$", notes[0])
    reasons = []
    for note in notes:
        note = _short(note)
        note = note[len(kind.group()) :] if kind and note.startswith(kind.group()) else note
        reasons.append(re.sub(r"; re-run .*$", "", note).rstrip("."))
    tail = f"; {fix.group(1)}" if fix else "."
    return [f"{where}: {kind.group() if kind else ''}{'; '.join(reasons)}{tail}"]


def _wrap(lines: list[str]) -> str:
    """``lines`` joined, each wrapped at :data:`~gpuperf.pages.prose.WIDTH` columns (the
    width of a cell's output on the site), its continuation indented under it."""
    out = []
    for line in lines:
        indent = " " * (len(line) - len(line.lstrip()) + 4)
        out.append(
            textwrap.fill(
                line, WIDTH, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False
            )
        )
    return "\n".join(out)


def timing_gaps(capture: dict) -> str:
    """How far apart the timing methods land, one line per op of the ``timing_methods``
    capture: the first call (ms) and its multiple of the CUDA-graph time, and in µs the
    host clock without synchronizing, the kernel alone (CUDA graph) and ``do_bench`` with
    and without its L2 flush.

    Raises:
        TypeError, ValueError: ``capture`` is not a ``timing_methods`` capture.
        KeyError: an op lacks one of those methods.
    """
    lines = []
    for op in _payload(capture, "timing_methods")["ops"]:
        us = {key: method(op, key)["ms"] * 1e3 for key in _GAP_KEYS}
        graph = us["do_bench_cudagraph"]
        lines.append(
            f"{op['op']}: first call {us['first_call'] / 1e3:,.0f} ms, "
            f"{us['first_call'] / graph:,.0f}x the kernel's time (CUDA graph, {graph:.1f} µs); "
            f"host clock without synchronize {us['host_no_sync']:.1f} µs; "
            f"do_bench {us['do_bench']:.1f} µs, without its flush {us['do_bench_no_flush']:.1f} µs"
        )
    return _wrap(lines)


_GAP_KEYS = ("first_call", "host_no_sync", "do_bench", "do_bench_no_flush", "do_bench_cudagraph")


def plot_launch_bound(capture: dict) -> None:
    """Draw :func:`launch_bound_figure` of a ``launch_bound`` capture (a render for
    :func:`gpuperf.pages.captures.show`, which prints the notes and provenance).

    Raises:
        TypeError, ValueError: ``capture`` is not a ``launch_bound`` capture.
    """
    _payload(capture, "launch_bound")
    launch_bound_figure(capture)


def crossovers(capture: dict) -> str:
    """Where the GPU takes over from the host for each provider of a ``launch_bound``
    capture that has GPU times (the input, MB moved, host and GPU µs per call), and
    how much more host time a call costs through ``kernel[grid]`` (``triton_jit``)
    than through the cached launch (``triton``), as a range over the sizes.

    Raises:
        TypeError, ValueError: ``capture`` is not a ``launch_bound`` capture.
    """
    payload = _payload(capture, "launch_bound")
    lines = []
    for key in dict.fromkeys(r["provider"] for r in payload["rows"]):
        rows = launch_bound_rows(capture, key)
        if all(r["device_ms"] is None for r in rows):
            continue
        row = crossover(capture, key)
        if row is None:
            lines.append(f"{rows[0]['label']}: the host sets the pace at every size measured")
            continue
        lines.append(
            f"{row['label']}: GPU time first exceeds host time per call at "
            f"{row['rows']} x {row['cols']} ({row['bytes'] / 1e6:.0f} MB moved): "
            f"host {row['host_ms'] * 1e3:.1f} µs, GPU {row['device_ms'] * 1e3:.1f} µs"
        )
    cached, jit = launch_bound_rows(capture, "triton"), launch_bound_rows(capture, "triton_jit")
    if cached and len(cached) == len(jit):
        ratios = [j["host_ms"] / c["host_ms"] for c, j in zip(cached, jit, strict=True)]
        lines.append(
            "host time through kernel[grid] / through the cached launch: "
            f"{span(ratios, lambda v: f'{v:.1f}')}x over the sizes"
        )
    return _wrap(lines)


def host_time_per_call(result: Result, ops=("vector_add", "softmax", "matmul")) -> str:
    """For each GPU of a ``host_overhead`` result and each of ``ops``: the host time per
    call through ``kernel[grid]`` (``triton_jit``), through our cached launch
    (``triton``), their ratio, and PyTorch's op, in µs.

    Raises:
        TypeError: ``result`` is not a :class:`~gpuperf.pages.report.Result`.
        ValueError: it is not the ``host_overhead`` benchmark's.
    """
    _check_result(result, HOST_OVERHEAD)
    lines = []
    for gpu in result.gpus():
        us = {p: gpu.values(p) for p in ("triton", "triton_jit", "torch")}
        if len(result.gpus()) > 1:
            lines.append(f"{short_gpu_name(gpu.gpu)}:")
        for op in ops:
            ours, before, torch_us = (us[p].get(op) for p in ("triton", "triton_jit", "torch"))
            if None in (ours, before, torch_us):
                continue
            lines.append(
                f"  {op}: {before:.1f} µs per call through kernel[grid], {ours:.1f} µs "
                f"through the cached launch ({before / ours:.1f}x less), "
                f"PyTorch's op {torch_us:.1f} µs"
            )
    return _wrap(lines)


def _check_result(result, benchmark) -> None:
    if not isinstance(result, Result):
        raise TypeError(f"expected a gpuperf.pages.Result, got {type(result).__name__}")
    if result.benchmark.name != benchmark.name:
        raise ValueError(f"expected the {benchmark.name!r} result, got {result.benchmark.name!r}")


def profiler_table(capture: dict) -> str:
    """The table ``prof.key_averages().table(sort_by="cuda_time_total")`` printed on the
    GPU machine, as it printed it.

    Raises:
        TypeError, ValueError: ``capture`` is not a ``torch_profiler`` capture.
    """
    return _payload(capture, "torch_profiler")["table"]


def step_facts(capture: dict) -> str:
    """The profiled model (parameters, tokens, width), the peak GPU memory of the
    profiled steps (MiB), and the op and input shape with the most CUDA time (µs).

    Raises:
        TypeError, ValueError: ``capture`` is not a ``torch_profiler`` capture.
    """
    p = _payload(capture, "torch_profiler")
    model, top = p["model"], p["by_input_shape"][0]
    return _wrap(
        [
            f"{model['parameters']:,} parameters, {model['tokens']} tokens of width "
            f"{model['width']}; peak GPU memory during the profiled steps "
            f"{p['peak_memory_bytes'] / 2**20:.0f} MiB",
            f"most CUDA time by op and input shape: {top['name']} {top['input_shapes']}, "
            f"{top['cuda_total_us']:.0f} µs over {top['count']} calls",
        ]
    )


def trace_size(capture: dict) -> str:
    """The size of a ``torch_profiler`` capture's exported trace: kB of JSON, kB gzipped,
    and how many steps it holds.

    Raises:
        TypeError, ValueError: ``capture`` is not a ``torch_profiler`` capture.
    """
    p = _payload(capture, "torch_profiler")
    return (
        f"trace: {p['trace_bytes'] / 1e3:.0f} kB of JSON, "
        f"{p['trace_gz_bytes'] / 1e3:.0f} kB gzipped ({p['steps']} steps)"
    )


def trace_path(capture: dict) -> Path:
    """Where the Chrome trace of a ``torch_profiler`` capture is kept, beside it.

    Raises:
        TypeError, ValueError: ``capture`` is not a ``torch_profiler`` capture.
    """
    _payload(capture, "torch_profiler")
    gpu = records.gpu_slug(capture["provenance"]["gpu"])
    return captures.artifact_path("torch_profiler_trace", gpu, ".json.gz")


def step_summary(trace: dict) -> str:
    """:func:`last_step_summary` of a trace as one sentence (ms, kernels, % busy).

    Raises:
        ValueError: the trace has no ``step`` range.
    """
    s = last_step_summary(trace)
    return _wrap(
        [
            f"last step: {s['step_ms']:.2f} ms on the CPU, {s['kernels']} kernels; the GPU was "
            f"busy {s['busy_ms']:.2f} ms of the {s['gpu_ms']:.2f} ms from the step's start to "
            f"its last kernel ({percent(s['busy_fraction'])})"
        ]
    )


def timeline(capture: dict) -> str:
    """Draw the last step of a ``torch_profiler`` capture's trace
    (:func:`timeline_figure`) and return :func:`step_summary` of it; a ``MISSING``
    note instead when the trace is not beside the capture.

    Raises:
        TypeError, ValueError: ``capture`` is not a ``torch_profiler`` capture.
    """
    path = trace_path(capture)
    if not path.is_file():
        return f"MISSING: no trace at {path}; run `{how('torch_profiler')}` on a GPU"
    trace = read_trace(path)
    timeline_figure(
        trace,
        title="One training step of the bf16 MLP block under torch.profiler",
        caption=captures.caption(capture),
    )
    return step_summary(trace)


def extension_summary(capture: dict) -> str:
    """How the CUDA extension was built on the GPU machine (seconds, nvcc,
    ``TORCH_CUDA_ARCH_LIST``), how long a new process took to load the cached build,
    and the largest absolute error against the float64 reference per dtype.

    Raises:
        TypeError, ValueError: ``capture`` is not a ``cuda_extension`` capture.
    """
    p = _payload(capture, "cuda_extension")
    worst: dict[str, float] = {}
    for check in p["checks"]:
        worst[check["dtype"]] = max(worst.get(check["dtype"], 0.0), check["max_abs_err"])
    errors = ", ".join(f"{dtype} {err:.1e}" for dtype, err in worst.items())
    return _wrap(
        [
            f"on the GPU run: built in {p['build_s']:.0f} s ({p['nvcc'][0]}, "
            f"TORCH_CUDA_ARCH_LIST={p['torch_cuda_arch_list']}); a new process loaded "
            f"the cached build in {p['cached_load_s']:.1f} s",
            f"{len(p['checks'])} outputs matched the float64 reference; largest absolute "
            f"error per dtype: {errors}",
        ]
    )


def row_mean_ranking(result: Result) -> str:
    """For each GPU of a ``row_mean`` result: the Triton kernel's share of the measured
    copy bandwidth per row length, and at each row length the three versions ranked,
    fastest first, in GB/s.

    Raises:
        TypeError: ``result`` is not a :class:`~gpuperf.pages.report.Result`.
        ValueError: it is not the ``row_mean`` benchmark's.
    """
    _check_result(result, ROW_MEAN)
    lines = []
    for gpu in result.gpus():
        rates = {key: gpu.values(key) for key in ROW_MEAN_NAMES}
        frac = gpu.fraction_of_ceiling()
        lines.append(
            f"{short_gpu_name(gpu.gpu)}, Triton's share of the copy bandwidth: "
            + ", ".join(f"{x}: {percent(f)}" for x, f in frac.items())
        )
        for x in rates["triton"]:
            ranked = sorted((k for k in ROW_MEAN_NAMES if x in rates[k]), key=lambda k: -rates[k][x])
            lines.append(
                f"  {x} columns: "
                + " > ".join(f"{ROW_MEAN_NAMES[k]} {rates[k][x]:,.0f}" for k in ranked)
                + " GB/s"
            )
    return _wrap(lines)


#: The raw counter of the tensor pipe's activity, in % of its peak.
TENSOR_PIPE = "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"


def ncu_findings(capture: dict) -> str:
    """What the counters of an ``ncu_kernels`` capture say about the row means (DRAM
    throughput, achieved occupancy, registers, PyTorch's blocks and waves) and the two
    bf16 matmuls (duration in µs, tensor pipe % busy).

    Raises:
        TypeError, ValueError: ``capture`` is not an ``ncu_kernels`` capture.
        KeyError: an op the sentences name was not profiled.
    """
    ops = _payload(capture, "ncu_kernels")["ops"]
    ours = ncu_launch(capture, "row_mean (Triton)")
    cuda = ncu_launch(capture, "row_mean (CUDA C++)")
    torch_mean = ncu_launch(capture, "x.mean(dim=-1) (PyTorch)")
    mm, cublas = (ncu_launch(capture, op) for op in ops[-2:])

    def v(launch, metric, scale=1):
        value = ncu_value(launch, metric, scale)
        return float("nan") if value is None else value

    return _wrap(
        [
            f"row mean: Triton {v(ours, 'DRAM Throughput'):.0f}% of DRAM peak at "
            f"{v(ours, 'Achieved Occupancy'):.0f}% occupancy "
            f"({v(ours, 'Registers Per Thread'):.0f} registers a thread), CUDA C++ "
            f"{v(cuda, 'DRAM Throughput'):.0f}% at {v(cuda, 'Achieved Occupancy'):.0f}%, "
            f"PyTorch {v(torch_mean, 'DRAM Throughput'):.0f}% with "
            f"{v(torch_mean, 'Grid Size'):.0f} blocks ({v(torch_mean, 'Waves Per SM'):.2f} waves)",
            f"matmul bf16 {capture['payload']['matmul']}^3: Triton "
            f"{v(mm, 'Duration', 1e-3):.0f} µs, tensor pipe {v(mm, TENSOR_PIPE):.0f}% busy; "
            f"cuBLAS {v(cublas, 'Duration', 1e-3):.0f} µs, {v(cublas, TENSOR_PIPE):.0f}%",
        ]
    )


def compiler_stats(capture: dict) -> str:
    """What Triton's compiler reported for the Triton kernels of an ``ncu_kernels``
    capture: registers and spills per thread and shared memory per program (bytes),
    with each kernel's block sizes and ``num_warps``.

    Raises:
        TypeError, ValueError: ``capture`` is not an ``ncu_kernels`` capture.
    """
    lines = []
    for k in _payload(capture, "ncu_kernels").get("triton_compiler", []):
        if "error" in k:
            lines.append(f"{k.get('kernel', '?')}: {k['error']}")
            continue
        lines.append(
            f"{k['kernel']} (BLOCK_M={k['block_m']}, BLOCK_N={k['block_n']}, "
            f"num_warps={k['num_warps']}): {k['registers']} registers, {k['spills']} "
            f"spills, {k['shared_bytes']} bytes of shared memory"
        )
    return _wrap(lines)


def ncu_command(capture: dict) -> str:
    """The ``ncu`` command line of an ``ncu_kernels`` capture, wrapped as a shell command
    (``\\`` at each line's end), and the counters this ``ncu`` did not know (left out),
    if any.

    Raises:
        TypeError, ValueError: ``capture`` is not an ``ncu_kernels`` capture.
    """
    dropped = _payload(capture, "ncu_kernels").get("dropped_metrics", [])
    command = capture["tool"] + " python scripts/profile_capture.py --part ncu-inner"
    words = textwrap.wrap(command, WIDTH - 2, break_long_words=False, break_on_hyphens=False)
    lines = [" \\\n    ".join(words)]
    if dropped:
        lines.append(_wrap([f"counters this ncu did not know (left out): {', '.join(dropped)}"]))
    return "\n".join(lines)


def proton_report(capture: dict) -> str:
    """:func:`proton_table` of a ``proton`` capture, or why proton did not run (the
    error and the end of its traceback).

    Raises:
        TypeError, ValueError: ``capture`` is not a ``proton`` capture.
    """
    p = _payload(capture, "proton")
    if p.get("ok"):
        return proton_table(capture)
    return f"proton did not run on the GPU machine: {p.get('error')}\n" + p.get("traceback", "")[-1500:]


def proton_viewer(capture: dict) -> str:
    """What ``python -m triton.profiler.viewer`` said on the GPU machine: its exit
    status and its output (or the last line of its errors); empty when it was not run.

    Raises:
        TypeError, ValueError: ``capture`` is not a ``proton`` capture.
    """
    viewer = _payload(capture, "proton").get("viewer")
    if not viewer:
        return ""
    err = viewer["stderr"].strip().splitlines()
    out = viewer["stdout"] or (err[-1] if err else "")
    return _wrap([f"python -m triton.profiler.viewer exited with status {viewer['returncode']}:", out])


# --- the opening paragraph ----------------------------------------------------------------


def _gpus() -> list[str]:
    """Folders of the GPUs with anything the guide shows: ceilings, records or captures,
    the page's GPU first."""
    found = list(hardware.gpus())
    for bench in (HOST_OVERHEAD, ROW_MEAN):
        found += records.gpus_with_record(bench.name)
    for name in CAPTURES:
        found += pages_captures.gpus(name)
    return list(dict.fromkeys(found))


def _timing_sentence(capture: dict) -> str:
    op = min(capture["payload"]["ops"], key=lambda o: o["bytes"])
    us = {key: method(op, key)["ms"] * 1e3 for key in (*_GAP_KEYS, "cuda_events")}
    shape = " × ".join(str(d) for d in op["shape"])
    return (
        f"timing our softmax on a tiny {shape} input, the kernel alone takes "
        f"{us['do_bench_cudagraph']:.1f} µs (replayed in a CUDA graph), yet CUDA events "
        f"around one call read {us['cuda_events']:.1f} µs, do_bench without its L2 flush "
        f"{us['do_bench_no_flush']:.1f} µs, and the first call, which compiles, "
        f"{us['first_call'] / 1e3:,.0f} ms."
    )


def _launch_sentence(capture: dict) -> str:
    cols = capture["payload"]["cols"]
    row = crossover(capture, "triton")
    if row is None:
        return f"A loop of softmax calls on rows of {cols} float32 is launch-bound at every size."
    return (
        f"A loop of softmax calls on rows of {cols} float32 stays launch-bound until "
        f"{row['rows']:,} rows, where the GPU's {row['device_ms'] * 1e3:.1f} µs per call "
        f"first exceed the host's {row['host_ms'] * 1e3:.1f} µs."
    )


def _host_sentence(result: Result) -> str:
    us = {p: result.values(p).get("softmax") for p in ("triton", "triton_jit", "torch")}
    if None in us.values():
        return ""
    return (
        f"Our cached launch costs {us['triton']:.1f} µs of host time per softmax call, "
        f"against {us['triton_jit']:.1f} µs through Triton's kernel[grid] and "
        f"{us['torch']:.1f} µs for torch.softmax."
    )


def _row_mean_sentence(result: Result) -> str:
    frac = result.fraction_of_ceiling()
    if not frac:
        return ""
    cuda = result.fraction_of_ceiling("cuda")
    xs = list(frac)
    return (
        f"The Triton row mean streams at {span(frac.values(), percent)} of the measured "
        f"copy bandwidth from {min(xs):,} to {max(xs):,} columns per row"
        + (f" (CUDA C++: {span(cuda.values(), percent)})." if cuda else ".")
    )


def _step_sentence(trace: dict) -> str:
    s = last_step_summary(trace)
    verdict = ": the host set the pace" if s["busy_fraction"] < 0.5 else ""
    return (
        f"In a profiled training step of a bf16 MLP block the GPU was busy "
        f"{percent(s['busy_fraction'])} of the time{verdict}."
    )


def in_one_paragraph() -> Paragraph:
    """The guide's headline measurements for every GPU with captures or records: how far
    apart the timing methods land on a tiny softmax, where a loop of softmax calls stops
    being launch-bound, how busy the GPU was in a profiled training step, the host
    time per softmax call through each launch path, and the row mean's share of the
    copy bandwidth. Missing, stale or malformed captures and records go into the
    notes.

    Returns:
        A :class:`~gpuperf.pages.prose.Paragraph`, whose notes name each GPU.
    """
    sentences, notes = [], []
    for gpu in _gpus():
        loaded = {name: pages_captures.load(name, gpu) for name in CAPTURES}
        results = {bench.name: load(bench, gpu) for bench in (HOST_OVERHEAD, ROW_MEAN)}
        names = [r.gpu for r in results.values() if r.gpu]
        names += [c["provenance"]["gpu"] for c, _ in loaded.values() if c is not None]
        label = short_gpu_name(names[0]) if names else gpu
        for name, (cap, cap_notes) in loaded.items():
            if cap is not None:
                notes += _merged(f"{label}, {name}", cap_notes)
        for name, result in results.items():
            notes += _merged(f"{label}, {name}", result.notes)
        said = []
        timing, launch, prof = (loaded[n][0] for n in CAPTURES[:3])
        if timing is not None:
            said.append(_timing_sentence(timing))
        if launch is not None:
            said.append(_launch_sentence(launch))
        if prof is not None:
            path = trace_path(prof)
            if path.is_file():
                said.append(_step_sentence(read_trace(path)))
            else:
                notes.append(f"MISSING: no trace of the profiled step for the {label} at {path}")
        if results["host_overhead"].record is not None:
            said.append(_host_sentence(results["host_overhead"]))
        if results["row_mean"].record is not None:
            said.append(_row_mean_sentence(results["row_mean"]))
        said = [s for s in said if s]
        if not said:
            continue
        said[0] = f"On the {label}, " + said[0][0].lower() + said[0][1:]
        sentences += said
        missing = [name for name, (cap, _) in loaded.items() if cap is None]
        if missing:
            notes.append(
                f"No {', '.join(missing)} capture for the {label}: run "
                f"`{how(missing[0])}` on it and commit what it writes."
            )
    if not sentences:
        notes.append("MISSING: no captures or records of the profiling guide on any GPU.")
    return paragraph(*sentences, notes=notes)
