"""Reading what ``torch.profiler`` recorded, from its Chrome trace (``prof.export_chrome_trace``).

:func:`kernel_time_by_range` adds up the GPU time of the kernels launched inside each
``record_function`` range, Triton's included: tutorial 07's time breakdown
(``scripts/llama_capture.py``) is made with it.
"""

from __future__ import annotations

from collections import Counter

#: The Chrome trace categories of work on the GPU's timeline that torch.profiler records:
#: kernels, copies and memsets. The trace's other GPU-side category, ``gpu_user_annotation``,
#: marks ranges (``Optimizer.step#AdamW.step``) around work already counted.
GPU_WORK = ("kernel", "gpu_memcpy", "gpu_memset")


def union_ms(intervals) -> float:
    """Milliseconds that ``intervals`` (``[start, end]`` pairs in µs, a trace's clock) cover,
    each instant once however many of them overlap it: how long the GPU was busy.

    Raises:
        ValueError: an interval ends before it starts.
    """
    total, reach = 0.0, None
    for start, end in sorted(intervals):
        if end < start:
            raise ValueError(f"an interval must not end before it starts, got [{start}, {end}]")
        if reach is None or start > reach:
            total += end - start
            reach = end
        elif end > reach:
            total += end - reach
            reach = end
    return total / 1e3


def kernel_time_by_range(trace_events: list, prefix: str) -> tuple[dict, float, int, dict]:
    """``(GPU microseconds by range, all kernels' microseconds, kernel count, event categories)``
    from the events of a Chrome trace of ``torch.profiler`` (``export_chrome_trace``): each
    kernel, copy and memset goes to the ``record_function`` range named ``prefix + name``
    that was open on the host when its launch (a CUDA runtime or driver call with the same
    correlation id) was made, under ``name``, or to ``"other"``. Launches are matched by the host's
    clock, not by the profiler's op tree, because Triton's launcher calls the driver
    directly, outside any PyTorch op the tree would hang the kernel on."""
    ranges = sorted(
        (e["ts"], e["ts"] + e["dur"], e["name"].removeprefix(prefix))
        for e in trace_events
        if e.get("cat") == "user_annotation" and e.get("name", "").startswith(prefix)
    )
    launches = {
        e["args"]["correlation"]: e["ts"]
        for e in trace_events
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})
    }
    parts, total, count = {}, 0.0, 0
    for e in trace_events:
        if e.get("cat") not in GPU_WORK:
            continue
        at = launches.get(e.get("args", {}).get("correlation"))
        part = next((name for start, end, name in ranges if at is not None and start <= at <= end), "other")
        parts[part] = parts.get(part, 0.0) + e["dur"]
        total += e["dur"]
        count += 1
    return parts, total, count, dict(Counter(e.get("cat") for e in trace_events))


def profile_parts(step, recording, prefix: str, *, steps: int = 5, warmup: int = 2) -> dict:
    """GPU microseconds per step of each part of ``step`` (a function of no arguments that
    launches one step's kernels), by ``torch.profiler`` over ``steps`` steps after ``warmup``
    steps: ``{"parts_us": {part: µs}, "kernels_us": µs, "kernel_count": kernels per step,
    "trace_categories": {category: events}}``.

    ``recording`` is the context under which the step opens a ``record_function`` range
    ``prefix + part`` around each part (``Sections.recording`` of
    :mod:`gpuperf.models.sections`); a kernel goes to the part whose range was open when
    it was launched (:func:`kernel_time_by_range`), or to ``"other"``. Needs a CUDA GPU.
    """
    import json
    import tempfile

    import torch
    from torch.profiler import ProfilerActivity, profile

    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    with recording(), profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as scratch:
        path = f"{scratch}/trace.json"
        prof.export_chrome_trace(path)
        with open(path) as f:
            trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    parts, total, count, categories = kernel_time_by_range(events, prefix)
    return {
        "parts_us": {name: us / steps for name, us in parts.items()},
        "kernels_us": total / steps,
        "kernel_count": count / steps,
        "trace_categories": categories,
    }


def time_parts(step, sections, *, steps: int = 5) -> dict:
    """Where a model step's time goes, measured three ways over ``steps`` steps: GPU
    microseconds per part by ``torch.profiler`` (:func:`profile_parts`: ``parts_us``,
    ``kernels_us``, ``kernel_count``, ``trace_categories``), microseconds per part between
    CUDA events at the parts' edges (``event_parts_us``, :meth:`gpuperf.models.sections.Sections.timing`),
    and the step's time in a back-to-back loop (``step_us``,
    :func:`gpuperf.bench.timing.loop_time_ms`).

    ``step`` is a function of no arguments that runs one step; ``sections`` the
    :class:`~gpuperf.models.sections.Sections` the model marks its parts with.

    Raises:
        RuntimeError: no CUDA device is available.
    """
    import torch

    from gpuperf.bench import timing
    from gpuperf.models.sections import event_times_us

    timing.require_cuda()
    entry = profile_parts(step, sections.recording, sections.prefix, steps=steps)
    with sections.timing() as marks:
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
    entry["event_parts_us"] = event_times_us(marks, steps)
    entry["step_us"] = timing.loop_time_ms(step).ms * 1e3
    return entry
