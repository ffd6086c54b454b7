"""The profiling guide's opening paragraph: its headline measurements for every GPU with
captures or records, and one note for each capture or record that is missing or stale."""

from __future__ import annotations

import re

from gpuperf.bench import captures, records
from gpuperf.bench.catalog import HOST_OVERHEAD, ROW_MEAN
from gpuperf.pages import captures as pages_captures
from gpuperf.pages import hardware
from gpuperf.pages.plotting import short_gpu_name
from gpuperf.pages.profiling.sentences import GAP_KEYS
from gpuperf.pages.profiling.timings import (
    GPU_BOUND_RATIO,
    below_crossover,
    crossover,
    host_paced,
    launch_bound_rows,
    loop_over_host,
    method,
)
from gpuperf.pages.profiling.traces import last_step_summary, read_trace, trace_path
from gpuperf.pages.prose import Paragraph, paragraph, percent, span
from gpuperf.pages.report import Result, load

#: The captures the profiling guide shows, in the order it shows them.
CAPTURES = ("timing_methods", "launch_bound", "torch_profiler", "cuda_extension", "ncu_kernels", "proton")


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
    us = {key: method(op, key)["ms"] * 1e3 for key in (*GAP_KEYS, "cuda_events")}
    shape = " × ".join(str(d) for d in op["shape"])
    return (
        f"timing our softmax on a tiny {shape} input, the kernel alone takes "
        f"{us['do_bench_cudagraph']:.1f} µs (replayed in a CUDA graph), yet CUDA events "
        f"around one call read {us['cuda_events']:.1f} µs, do_bench without its L2 flush "
        f"{us['do_bench_no_flush']:.1f} µs, and the first call, which compiles, "
        f"{us['first_call'] / 1e3:,.0f} ms."
    )


def _launch_sentence(capture: dict) -> str:
    """Where a back-to-back loop of our softmax (the ``triton`` provider) starts to run at
    the GPU's pace (:func:`~gpuperf.pages.profiling.timings.crossover`), and, where every
    smaller size ran at the host's (:func:`~gpuperf.pages.profiling.timings.host_paced`),
    the last size below it; read from the loop's and the host's times per call. Empty
    where the capture has no ``triton`` rows or no loop times."""
    cols = capture["payload"]["cols"]
    if not any(r["provider"] == "triton" for r in capture["payload"]["rows"]):
        return ""
    rows = [r for r in launch_bound_rows(capture, "triton") if loop_over_host(r) is not None]
    if not rows:
        return ""
    start = f"A back-to-back loop of softmax calls on rows of {cols} float32"
    row, below = crossover(capture, "triton"), below_crossover(capture, "triton")
    if row is None:
        return (
            f"{start} stays under {GPU_BOUND_RATIO:g}x the host's time per call at every "
            f"size measured, up to {below['rows']:,} rows ({below['loop_ms'] * 1e3:.1f} µs "
            f"per call, the host needing {below['host_ms'] * 1e3:.1f} µs)."
        )
    gpu = (
        f"at the GPU's pace from {row['rows']:,} rows ({row['loop_ms'] * 1e3:.1f} µs per call, "
        f"{loop_over_host(row):.1f}x the host's {row['host_ms'] * 1e3:.1f} µs)"
    )
    if below is None or not all(host_paced(r) for r in rows if r["bytes"] < row["bytes"]):
        return f"{start} runs {gpu}."
    return (
        f"{start} runs at the host's pace up to {below['rows']:,} rows (there "
        f"{below['loop_ms'] * 1e3:.1f} µs per call, the host needing "
        f"{below['host_ms'] * 1e3:.1f} µs) and {gpu}."
    )


def _host_sentence(result: Result) -> str:
    us = {p: result.values(p).get("softmax") for p in ("triton", "triton_jit", "torch")}
    if None in us.values():
        return ""
    return (
        "In the host-time benchmark, a run of its own, our cached "
        f"launch costs {us['triton']:.1f} µs of host time per softmax call, "
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
        f"{result.ceiling_name()} from {min(xs):,} to {max(xs):,} columns per row"
        + (f" (CUDA C++: {span(cuda.values(), percent)})." if cuda else ".")
    )


def _step_sentence(trace: dict) -> str:
    s = last_step_summary(trace)
    slow = s["busy_fraction"] < 0.5
    verdict = " under the profiler, which slows the host: the host set the pace" if slow else ""
    return (
        f"In a profiled training step of a bf16 MLP block the GPU was busy "
        f"{percent(s['busy_fraction'])} of the time{verdict}."
    )


def in_one_paragraph() -> Paragraph:
    """The guide's headline measurements for every GPU with captures or records: how far
    apart the timing methods land on a tiny softmax, where a loop of softmax calls stops
    being launch-bound, how busy the GPU was in a profiled training step, the host
    time per softmax call through each launch path, and the row mean's share of the
    ceiling its record reads it against (named from the record). Missing, stale or
    malformed captures and records go into the notes.

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
        # (pages.captures.load notes a missing capture on the reference GPU only: another
        # GPU shows what it has.)
        missing = [name for name, (cap, cap_notes) in loaded.items() if cap is None and cap_notes]
        if missing:
            notes.append(
                f"No {', '.join(missing)} capture for the {label}: "
                f"{records.advice(captures.command(missing[0]))} to take it."
            )
    if not sentences:
        notes.append("MISSING: no captures or records of the profiling guide on any GPU.")
    return paragraph(*sentences, notes=notes)
