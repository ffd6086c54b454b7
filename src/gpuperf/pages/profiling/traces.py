"""The ``torch_profiler`` capture: the profiler's ``key_averages()`` tables, and its Chrome
trace (where it is kept beside the capture, how to read it, what its last step shows)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from gpuperf.bench import captures
from gpuperf.bench.traces import GPU_WORK, union_ms
from gpuperf.pages.captures import capture_payload, gpu_folder
from gpuperf.pages.tables import Cell, Section, render


def key_averages_table(capture: dict, limit: int = 12, notes=()) -> str:
    """The profiler's ``key_averages()`` rows with the most CUDA time, sorted by it:
    calls, CPU total and self time, CUDA total and self time (µs), and the CUDA
    memory each allocated itself (MiB, as the profiler's table prints them; negative: freed)."""
    rows = sorted(capture["payload"]["key_averages"], key=lambda r: (-(r["cuda_total_us"] or 0), r["name"]))[
        :limit
    ]
    section = Section(
        "",
        ["name", "calls", "CPU total µs", "self CPU µs", "CUDA total µs", "self CUDA µs", "self CUDA MiB"],
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
                Cell("-") if mem is None else Cell(f"{mem / 2**20:,.1f}", mem),
            ]
        )
    return render([section], notes)


def profiler_table(capture: dict) -> str:
    """The table ``prof.key_averages().table(sort_by="cuda_time_total")`` printed on the
    GPU machine, as it printed it.

    Raises:
        TypeError, ValueError: ``capture`` is not a ``torch_profiler`` capture.
    """
    return capture_payload(capture, "torch_profiler")["table"]


def read_trace(path: Path) -> dict:
    """A Chrome/Perfetto trace as ``torch.profiler`` exports it (``.json`` or ``.json.gz``)."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        return json.load(f)


def trace_path(capture: dict) -> Path:
    """Where the Chrome trace of a ``torch_profiler`` capture is kept, beside it.

    Raises:
        TypeError, ValueError: ``capture`` is not a ``torch_profiler`` capture.
    """
    capture_payload(capture, "torch_profiler")
    return captures.artifact_path("torch_profiler_trace", gpu_folder(capture), ".json.gz")


#: Trace event categories drawn on each lane of the timeline, top to bottom.
TIMELINE_LANES = (
    ("CPU: record_function ranges", ("user_annotation",)),
    ("CPU: CUDA runtime calls", ("cuda_runtime", "cuda_driver")),
    ("GPU: kernels, copies, memsets", GPU_WORK),
)
#: Colours of the ranges (and of the GPU work that they launched).
RANGE_COLORS = {"forward": "#1f77b4", "backward": "#d62728", "optimizer": "#2ca02c"}


def range_of(event: dict, ranges: list[dict]) -> str | None:
    """The innermost named range (forward, backward, optimizer) whose CPU span holds ``event``."""
    for r in ranges:
        if r["ts"] <= event["ts"] <= r["ts"] + r["dur"]:
            return r["name"]
    return None


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
    busy = 1e3 * union_ms((max(e["ts"], start), max(e["ts"] + e["dur"], start)) for e in gpu)
    gpu_end = max([stop] + [e["ts"] + e["dur"] for e in gpu])
    return {
        "step_ms": step["dur"] / 1e3,
        "gpu_ms": (gpu_end - start) / 1e3,
        "busy_ms": busy / 1e3,
        "busy_fraction": busy / (gpu_end - start),
        "kernels": sum(1 for e in gpu if e.get("cat") == "kernel"),
    }
