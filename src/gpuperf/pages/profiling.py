"""Tables and figures of the profiling guide, read from the captures of one GPU run.

``scripts/profile_capture.py`` writes the captures on a GPU (:mod:`gpuperf.bench.captures`);
the functions here turn them into what the guide shows, on any machine: the timing
methods side by side, host time against GPU time as a kernel grows, the
``torch.profiler`` table and a timeline drawn from its Chrome trace, Nsight Compute's
counters, and proton's tree. Tables come out as text or HTML, as
:func:`gpuperf.pages.tables.render` is asked.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from gpuperf.bench import captures
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
