"""The profiling guide's matplotlib figures: host time against a loop's time per call as a
kernel grows (the ``launch_bound`` capture) and one training step's timeline (the ``torch_profiler``
capture's trace), each with the render that draws it on the page."""

from __future__ import annotations

import textwrap

from gpuperf.bench import captures, records
from gpuperf.pages.captures import capture_payload
from gpuperf.pages.profiling.sentences import step_summary
from gpuperf.pages.profiling.timings import GPU_BOUND_RATIO, crossover, launch_bound_rows
from gpuperf.pages.profiling.traces import RANGE_COLORS, TIMELINE_LANES, range_of, read_trace, trace_path


def launch_bound_figure(capture: dict, notes=()):
    """Host time per call (dashed) and a back-to-back loop's time per call (solid) against
    the bytes a call moves, log-log, one colour per provider; a ring marks each
    provider's crossover (:func:`~gpuperf.pages.profiling.timings.crossover`), from which
    the loop takes at least :data:`~gpuperf.pages.profiling.timings.GPU_BOUND_RATIO`
    times the host's time per call: the GPU sets the pace. Where the solid line lies on
    the dashed one, the host does. (The GPU time with a flushed L2 is left to the table:
    the loop keeps an input that fits in L2 there.)"""
    import matplotlib.pyplot as plt

    from gpuperf.pages.plotting import provider_color

    fig, ax = plt.subplots(figsize=(8, 4.6), facecolor="white", layout="constrained")
    ax.set_facecolor("white")
    providers = []
    for key in dict.fromkeys(r["provider"] for r in capture["payload"]["rows"]):
        rows = launch_bound_rows(capture, key)
        label = rows[0]["label"]
        color = provider_color(key)
        mb = [r["bytes"] / 1e6 for r in rows]
        ax.plot(mb, [r["host_ms"] * 1e3 for r in rows], "--", color=color, marker="o", ms=3.5)
        providers.append(plt.Line2D([], [], color=color, lw=6, label=label))
        loop = [(m, r["loop_ms"] * 1e3) for m, r in zip(mb, rows, strict=True) if r.get("loop_ms")]
        if loop:
            ax.plot(*zip(*loop, strict=True), "-", color=color, marker="s", ms=3.5)
        row = crossover(capture, key)
        if row is not None:
            ax.plot(row["bytes"] / 1e6, row["loop_ms"] * 1e3, "o", ms=11, mfc="none", mec=color, mew=1.5)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("MB moved per call (input + output)")
    ax.set_ylabel("µs per call")
    ax.grid(True, which="both", alpha=0.25)
    styles = [
        plt.Line2D([], [], color="0.3", ls="--", marker="o", ms=3.5, label="host time per call"),
        plt.Line2D([], [], color="0.3", ls="-", marker="s", ms=3.5, label="loop of calls, time per call"),
        plt.Line2D(
            [],
            [],
            color="0.3",
            ls="none",
            marker="o",
            ms=9,
            mfc="none",
            mew=1.5,
            label=f"GPU-bound from here (loop ≥ {GPU_BOUND_RATIO:g}x host)",
        ),
    ]
    # Below the axes, where no line runs: providers (colour) in one column, line styles in the other.
    ax.legend(
        handles=providers + styles,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.14),
        ncol=2,
        fontsize=8.5,
        frameon=False,
    )
    cols = capture["payload"]["cols"]
    ax.set_title(
        f"Softmax over rows of {cols} float32: a loop's time per call against the host's", fontsize=10
    )
    # The caption in a strip at the bottom that the layout leaves free (text below the
    # figure's edge would be cut off when the page saves it).
    lines = [part for text in (captures.caption(capture), *notes) for part in textwrap.wrap(text, 135)]
    height = fig.get_figheight() * 72  # points
    strip = (len(lines) * 7.5 * 1.3 + 6) / height
    fig.get_layout_engine().set(rect=(0, strip, 1, 1 - strip))
    fig.text(0.01, strip - 3 / height, "\n".join(lines), fontsize=7.5, va="top")
    return fig


def plot_launch_bound(capture: dict) -> None:
    """Draw :func:`launch_bound_figure` of a ``launch_bound`` capture (a render for
    :func:`gpuperf.pages.captures.show`, which prints the notes and provenance).

    Raises:
        TypeError, ValueError: ``capture`` is not a ``launch_bound`` capture.
    """
    capture_payload(capture, "launch_bound")
    launch_bound_figure(capture)


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
            launches[e["args"]["correlation"]] = range_of(e, ranges)
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
                name = range_of(e, ranges)
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


def timeline(capture: dict) -> str:
    """Draw the last step of a ``torch_profiler`` capture's trace
    (:func:`timeline_figure`) and return :func:`step_summary` of it; a ``MISSING``
    note instead when the trace is not beside the capture.

    Raises:
        TypeError, ValueError: ``capture`` is not a ``torch_profiler`` capture.
    """
    path = trace_path(capture)
    if not path.is_file():
        return f"MISSING: no trace at {path}; {records.advice(captures.command('torch_profiler'))}"
    trace = read_trace(path)
    timeline_figure(
        trace,
        title="One training step of the bf16 MLP block under torch.profiler",
        caption=captures.caption(capture),
    )
    return step_summary(trace)
