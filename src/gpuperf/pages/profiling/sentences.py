"""The sentences the profiling guide prints under each capture and record, written from
them: each function takes one capture as :func:`gpuperf.pages.captures.show` hands it
over (or one :class:`~gpuperf.pages.report.Result`) and refuses any other; lines are
wrapped at :data:`~gpuperf.pages.prose.WIDTH` columns."""

from __future__ import annotations

import textwrap

from gpuperf.bench.catalog import HOST_OVERHEAD, ROW_MEAN
from gpuperf.pages.captures import capture_payload
from gpuperf.pages.profiling.ncu import TENSOR_PIPE, ncu_launch, ncu_value
from gpuperf.pages.profiling.proton import proton_table
from gpuperf.pages.profiling.timings import (
    GPU_BOUND_RATIO,
    below_crossover,
    crossover,
    launch_bound_rows,
    loop_over_host,
    method,
)
from gpuperf.pages.profiling.traces import last_step_summary
from gpuperf.pages.prose import WIDTH, percent, span
from gpuperf.pages.report import Result, check_result

#: What each provider of the row-mean benchmark is called in prose.
ROW_MEAN_NAMES = {"triton": "Triton", "cuda": "CUDA C++", "torch": "x.mean"}
#: The timing methods whose gaps the sentences state (keys of the ``timing_methods`` capture).
GAP_KEYS = ("first_call", "host_no_sync", "do_bench", "do_bench_no_flush", "do_bench_cudagraph")


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
    for op in capture_payload(capture, "timing_methods")["ops"]:
        us = {key: method(op, key)["ms"] * 1e3 for key in GAP_KEYS}
        graph = us["do_bench_cudagraph"]
        lines.append(
            f"{op['op']}: first call {us['first_call'] / 1e3:,.0f} ms, "
            f"{us['first_call'] / graph:,.0f}x the kernel's time (CUDA graph, {graph:.1f} µs); "
            f"host clock without synchronize {us['host_no_sync']:.1f} µs; "
            f"do_bench {us['do_bench']:.1f} µs, without its flush {us['do_bench_no_flush']:.1f} µs"
        )
    return _wrap(lines)


def _loop_vs_host(row: dict) -> str:
    """``'the loop 48.7 µs per call against the host's 12.5 µs (3.9x)'`` for one
    ``launch_bound`` row."""
    return (
        f"the loop {row['loop_ms'] * 1e3:.1f} µs per call against the host's "
        f"{row['host_ms'] * 1e3:.1f} µs ({loop_over_host(row):.1f}x)"
    )


#: Providers of the ``launch_bound`` capture that launch another provider's kernel, with that
#: provider's name in prose: the same wrapper through ``kernel[grid]`` runs the cached
#: launch's kernel.
SAME_KERNEL = {"triton_jit": ("triton", "the cached launch")}


def _loop_range(row: dict) -> tuple[float, float]:
    """A ``launch_bound`` row's loop time per call as (20th, 80th percentile), the median
    twice where the capture has no percentiles."""
    return row.get("loop_ms_p20") or row["loop_ms"], row.get("loop_ms_p80") or row["loop_ms"]


def paced_like(capture: dict, provider: str) -> list[tuple[dict, dict]]:
    """``(row, twin)`` for each size below ``provider``'s crossover at which it runs the
    kernel of another provider (:data:`~gpuperf.pages.profiling.sentences.SAME_KERNEL`),
    that provider's loop runs at the GPU's pace (at or above its own crossover), and the
    two loops' 20th-80th percentile ranges overlap: the GPU sets this loop's pace too, though it is within
    :data:`~gpuperf.pages.profiling.timings.GPU_BOUND_RATIO` of its own host time. Empty
    for a provider with no twin in the capture.

    Raises:
        ValueError: the capture has no rows for ``provider``.
    """
    twin_key = SAME_KERNEL.get(provider, (None, ""))[0]
    rows = launch_bound_rows(capture, provider)
    if twin_key is None or not any(r["provider"] == twin_key for r in capture["payload"]["rows"]):
        return []
    twin_cross = crossover(capture, twin_key)
    if twin_cross is None:
        return []
    own = crossover(capture, provider)
    twins = {r["bytes"]: r for r in launch_bound_rows(capture, twin_key)}
    found = []
    for row in rows:
        twin = twins.get(row["bytes"])
        if own is not None and row["bytes"] >= own["bytes"]:
            break
        if twin is None or loop_over_host(row) is None or not twin.get("loop_ms"):
            continue
        if twin["bytes"] < twin_cross["bytes"]:
            continue
        (lo, hi), (twin_lo, twin_hi) = _loop_range(row), _loop_range(twin)
        if lo <= twin_hi and twin_lo <= hi:
            found.append((row, twin))
    return found


def _paced_like(capture: dict, provider: str, below: dict | None) -> str:
    """The clause that names each size of :func:`paced_like` (``below``: the row the line
    has just named, called "there"), or ``""``."""
    twin_name = SAME_KERNEL.get(provider, (None, ""))[1]
    clauses = []
    for row, twin in paced_like(capture, provider):
        there = below is not None and row["bytes"] == below["bytes"]
        where = "there" if there else f"at {row['rows']} x {row['cols']}"
        clauses.append(
            f"; {where} its loop takes as long as {twin_name}'s, {twin['loop_ms'] * 1e3:.1f} µs, "
            "the same kernel at the GPU's pace: the GPU already sets the pace, within the "
            "rule's margin"
        )
    return "".join(clauses)


def crossovers(capture: dict) -> str:
    """Where a loop of back-to-back calls starts to run at the GPU's pace, for each
    provider of a ``launch_bound`` capture: the rule (:func:`~gpuperf.pages.profiling.timings.crossover`,
    its ratio formatted from :data:`~gpuperf.pages.profiling.timings.GPU_BOUND_RATIO`),
    then per provider the first GPU-bound input (MB moved, the loop's and the host's µs
    per call, their ratio, and the GPU's µs with a flushed L2 where measured) and the
    size below it, and any size below it where the loop already runs at the same kernel's
    GPU-bound pace through another launch path (:func:`paced_like`); then how much more
    host time a call costs through ``kernel[grid]``
    (``triton_jit``) than through the cached launch (``triton``), as a range over the
    sizes both have.

    Raises:
        TypeError, ValueError: ``capture`` is not a ``launch_bound`` capture.
    """
    payload = capture_payload(capture, "launch_bound")
    providers = list(dict.fromkeys(r["provider"] for r in payload["rows"]))
    lines = [
        f"Where the loop first takes at least {GPU_BOUND_RATIO:g}x the host's time per call "
        "(GPU-bound from there):"
    ]
    for key in providers:
        rows = launch_bound_rows(capture, key)
        label = rows[0]["label"]
        if all(loop_over_host(r) is None for r in rows):
            lines.append(f"{label}: no loop time in this capture, so no crossover to read")
            continue
        row, below = crossover(capture, key), below_crossover(capture, key)
        if row is None:
            lines.append(
                f"{label}: at no size measured (at the largest with both times, "
                f"{below['rows']} x {below['cols']}, {_loop_vs_host(below)})"
                f"{_paced_like(capture, key, below)}"
            )
            continue
        before = (
            f"; at {below['rows']} x {below['cols']}, {_loop_vs_host(below)}" if below is not None else ""
        )
        gpu = (
            f"; GPU {row['device_ms'] * 1e3:.1f} µs with a flushed L2" if row["device_ms"] is not None else ""
        )
        lines.append(
            f"{label}: from {row['rows']} x {row['cols']} ({row['bytes'] / 1e6:.0f} MB moved), "
            f"{_loop_vs_host(row)}{gpu}{before}{_paced_like(capture, key, below)}"
        )
    if "triton" in providers and "triton_jit" in providers:
        cached = {r["bytes"]: r for r in launch_bound_rows(capture, "triton")}
        jit = {r["bytes"]: r for r in launch_bound_rows(capture, "triton_jit")}
        ratios = [jit[b]["host_ms"] / cached[b]["host_ms"] for b in cached if b in jit]
        if ratios:
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
    check_result(result, HOST_OVERHEAD)
    lines = []
    for gpu in result.gpus():
        us = {p: gpu.values(p) for p in ("triton", "triton_jit", "torch")}
        if len(result.gpus()) > 1:
            lines.append(f"{gpu.name}:")
        for op in ops:
            ours, before, torch_us = (us[p].get(op) for p in ("triton", "triton_jit", "torch"))
            if None in (ours, before, torch_us):
                continue
            lines.append(
                f"  {op}: {before:.1f} µs per call through kernel[grid], {ours:.1f} µs "
                f"through the cached launch ({before / ours:.1f}x faster), "
                f"PyTorch's op {torch_us:.1f} µs"
            )
    return _wrap(lines)


def row_mean_ranking(result: Result) -> str:
    """For each GPU of a ``row_mean`` result: the Triton kernel's share of the ceiling its
    rows are read against (named from the record: the stream bandwidth) per row length,
    and at each row length the three versions ranked, fastest first, in GB/s.

    Raises:
        TypeError: ``result`` is not a :class:`~gpuperf.pages.report.Result`.
        ValueError: it is not the ``row_mean`` benchmark's.
    """
    check_result(result, ROW_MEAN)
    lines = []
    for gpu in result.gpus():
        rates = {key: gpu.values(key) for key in ROW_MEAN_NAMES}
        frac = gpu.fraction_of_ceiling()
        lines.append(
            f"{gpu.name}, Triton's share of the {gpu.ceiling_name()}: "
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


def step_facts(capture: dict) -> str:
    """The profiled model (parameters, tokens, width), the peak GPU memory of the
    profiled steps (MiB), and the op and input shape with the most CUDA time (µs).

    Raises:
        TypeError, ValueError: ``capture`` is not a ``torch_profiler`` capture.
    """
    p = capture_payload(capture, "torch_profiler")
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
    p = capture_payload(capture, "torch_profiler")
    return (
        f"trace: {p['trace_bytes'] / 1e3:.0f} kB of JSON, "
        f"{p['trace_gz_bytes'] / 1e3:.0f} kB gzipped ({p['steps']} steps)"
    )


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


def extension_summary(capture: dict) -> str:
    """How the CUDA extension was built on the GPU machine (seconds, nvcc,
    ``TORCH_CUDA_ARCH_LIST``), how long a new process took to load the cached build,
    and the largest absolute error against the float64 reference per dtype.

    Raises:
        TypeError, ValueError: ``capture`` is not a ``cuda_extension`` capture.
    """
    p = capture_payload(capture, "cuda_extension")
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


def blocks_per_sm(blocks: int, sms: int, waves: float) -> tuple[int, int, int]:
    """How a grid of ``blocks`` spreads over ``sms`` SMs in one wave: ``(fewest, most,
    room)``, the fewest and the most blocks an SM gets and how many it could hold at once
    (Nsight Compute's *waves per SM* is ``blocks / (sms x room)``).

    Raises:
        ValueError: an argument is not positive.
    """
    if not (blocks > 0 and sms > 0 and waves > 0):
        raise ValueError(f"blocks, sms and waves must be positive, got {blocks}, {sms} and {waves}")
    return blocks // sms, -(-blocks // sms), round(blocks / (waves * sms))


def ncu_findings(capture: dict) -> str:
    """What the counters of an ``ncu_kernels`` capture say about the row means (DRAM
    throughput, achieved occupancy, registers; for PyTorch's, its blocks and waves and
    how they spread over the SMs: :func:`blocks_per_sm`) and the two bf16 matmuls
    (duration in µs, tensor pipe % busy).

    Raises:
        TypeError, ValueError: ``capture`` is not an ``ncu_kernels`` capture.
        KeyError: an op the sentences name was not profiled.
    """
    ops = capture_payload(capture, "ncu_kernels")["ops"]
    ours = ncu_launch(capture, "row_mean (Triton)")
    cuda = ncu_launch(capture, "row_mean (CUDA C++)")
    torch_mean = ncu_launch(capture, "x.mean(dim=-1) (PyTorch)")
    mm, cublas = (ncu_launch(capture, op) for op in ops[-2:])

    def v(launch, metric, scale=1):
        value = ncu_value(launch, metric, scale)
        return float("nan") if value is None else value

    blocks, waves = v(torch_mean, "Grid Size"), v(torch_mean, "Waves Per SM")
    spread = f"{blocks:.0f} blocks ({waves:.2f} waves)"
    sms = capture["provenance"].get("sm_count")
    if sms and blocks > 0 and waves > 0:
        fewest, most, room = blocks_per_sm(int(blocks), sms, waves)
        gets = f"{fewest}" if fewest == most else f"{fewest} or {most}"
        spread += (
            f": each of the {sms} SMs gets {gets} blocks of {v(torch_mean, 'Block Size'):.0f} "
            f"threads where it could hold {room}, {v(torch_mean, 'Achieved Occupancy'):.0f}% "
            "achieved occupancy"
        )
    return _wrap(
        [
            f"row mean: Triton {v(ours, 'DRAM Throughput'):.0f}% of DRAM peak at "
            f"{v(ours, 'Achieved Occupancy'):.0f}% occupancy "
            f"({v(ours, 'Registers Per Thread'):.0f} registers a thread), CUDA C++ "
            f"{v(cuda, 'DRAM Throughput'):.0f}% at {v(cuda, 'Achieved Occupancy'):.0f}%, "
            f"PyTorch {v(torch_mean, 'DRAM Throughput'):.0f}% with {spread}",
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
    for k in capture_payload(capture, "ncu_kernels").get("triton_compiler", []):
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
    dropped = capture_payload(capture, "ncu_kernels").get("dropped_metrics", [])
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
    p = capture_payload(capture, "proton")
    if p.get("ok"):
        return proton_table(capture)
    return f"proton did not run: {p.get('error')}\n" + p.get("traceback", "")[-1500:]


def proton_viewer(capture: dict) -> str:
    """What ``python -m triton.profiler.viewer`` said where the capture ran: its exit
    status and its output, the tree line by line as drawn (or the last line of its
    errors); empty when it was not run.

    Raises:
        TypeError, ValueError: ``capture`` is not a ``proton`` capture.
    """
    viewer = capture_payload(capture, "proton").get("viewer")
    if not viewer:
        return ""
    err = viewer["stderr"].strip().splitlines()
    head = f"python -m triton.profiler.viewer exited with status {viewer['returncode']}:"
    if viewer["stdout"].strip():
        # The viewer draws a tree, one frame a line: kept as drawn, never refilled.
        return head + "\n" + viewer["stdout"].rstrip()
    return _wrap([head, err[-1] if err else ""])
