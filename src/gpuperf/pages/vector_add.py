"""Tutorial 01 (vector add) in words, read from the records.

The page shows the kernel, the byte count and one-line calls; what it prints about
the measurements comes from here: the opening paragraph (:func:`in_one_paragraph`),
the datasheet's balance of arithmetic against bandwidth (:func:`flops_per_byte`), the time
of the smallest launches (:func:`launch_bound`), the host's time per call
(:func:`host_time`) and how close the kernel comes to the bandwidth ceiling its record
reads it against (named from the record: the stream bandwidth, the fastest rate the
memory was shown to stream), to the copy bandwidth measured beside it, and to PyTorch on
large tensors (:func:`hbm_bound`).
Each function that takes a :class:`~gpuperf.pages.report.Result` writes one line per
GPU it holds a record for (the GPU measured live or the reference GPU, then the
others).
"""

from __future__ import annotations

import textwrap

from gpuperf.bench import records
from gpuperf.bench.catalog import HOST_OVERHEAD, VECTOR_ADD
from gpuperf.pages.hardware import ceilings
from gpuperf.pages.plotting import format_rate, format_x, short_gpu_name
from gpuperf.pages.prose import WIDTH, Paragraph, fill, paragraph, percent, percent_span, span
from gpuperf.pages.report import Result, check_result, load, per_gpu

#: From this many elements up the three tensors are far larger than L2: the kernel
#: streams from HBM and is read against the bandwidth ceiling of its record.
HBM_FROM = 2**24
#: From this many elements up launch costs no longer dominate; the page compares the
#: kernel with PyTorch over these sizes.
COMPARE_FROM = 2**20


def launch_bound(result: Result) -> str:
    """The GPU time per call of each provider at the smallest size measured, one line
    per GPU: ``'at N = 4096: triton 4.5 µs, torch 4.4 µs per call'``.

    Raises:
        TypeError: ``result`` is not a :class:`~gpuperf.pages.report.Result`.
        ValueError: ``result`` is not a result of ``VECTOR_ADD``.
    """
    check_result(result, VECTOR_ADD)

    def write(r: Result) -> str:
        providers = [r.benchmark.subject.key, r.benchmark.baseline]
        times = {p: r.us(p) for p in providers}
        smallest = min(min(t) for t in times.values() if t)
        each = ", ".join(f"{p} {t[smallest]:.1f} µs" for p, t in times.items() if smallest in t)
        return [f"at N = {format_x(smallest)}: {each} per call"]

    return per_gpu(result, write)


def hbm_bound(result: Result, hbm_from: int = HBM_FROM, compare_from: int = COMPARE_FROM) -> str:
    """How close the kernel comes to the ceiling its rows are read against from ``hbm_from``
    elements up (named from the record, :meth:`~gpuperf.pages.report.Result.ceiling_name`);
    where that ceiling is not the copy bandwidth and the record holds the copy measured in
    the same run, the kernel's share of the copy at the largest size (a copy reads one byte
    per byte written, this kernel two: :func:`read_mix_line`); and its speed relative to
    PyTorch from ``compare_from`` up (with the size where it is slowest), one line per GPU.

    Raises:
        TypeError: ``result`` is not a :class:`~gpuperf.pages.report.Result`, or a size
            is not an int.
        ValueError: ``result`` is not a result of ``VECTOR_ADD``, or a size is below 1.
    """
    check_result(result, VECTOR_ADD)
    for name, size in (("hbm_from", hbm_from), ("compare_from", compare_from)):
        if not isinstance(size, int) or isinstance(size, bool):
            raise TypeError(f"{name} must be an int (elements), got {type(size).__name__}")
        if size < 1:
            raise ValueError(f"{name} must be at least 1 element, got {size}")

    def write(r: Result) -> str:
        large = [f for x, f in r.fraction_of_ceiling().items() if x >= hbm_from]
        mid = {x: v for x, v in r.ratios().items() if x >= compare_from}
        lines = []
        if large:
            lines.append(f"from {format_x(hbm_from)} up: {percent_span(large)} of the {r.ceiling_name()}")
            lines += read_mix_line(r)
        if mid:
            worst = min(mid, key=mid.get)
            lines.append(
                f"from {format_x(compare_from)} up: {span(mid.values())}× the speed of "
                f"PyTorch (slowest at {format_x(worst)})"
            )
        return lines or ["no successful rows at these sizes"]

    return per_gpu(result, write)


def read_mix_line(result: Result) -> list[str]:
    """The kernel at its largest size against the copy bandwidth measured in the same run,
    where its rows are read against another ceiling (the stream bandwidth) and the record
    holds the copy beside it: ``'against the copy bandwidth of the same run (3.00 TB/s):
    102% at 2^28, above it beyond the timings' spread'``, wrapped at :data:`WIDTH`; ``[]``
    otherwise. Beyond the spread: the row's 20th percentile above the copy's 80th.

    Raises:
        TypeError: ``result`` is not a :class:`~gpuperf.pages.report.Result`.
    """
    check_result(result)
    rows = result.rows()
    copy = (result.record or {}).get("ceilings", {}).get("copy_gbps")
    if not rows or copy is None or not copy.get("value"):
        return []
    x = max(rows)
    row = rows[x]
    if row["ceiling"] == "copy_gbps":
        return []
    share = row["value"] / copy["value"]
    beyond = row.get("value_p20", row["value"]) > copy.get("value_p80", copy["value"])
    where = (
        ", above it beyond the timings' spread"
        if beyond
        else (", within the timings' spread of it" if share > 1 else "")
    )
    named = copy.get("label", "copy bandwidth")
    line = (
        f"against the {named} of the same run ({format_rate(copy['value'], copy['unit'])}): "
        f"{percent(share)} at {format_x(x)}{where}"
    )
    return textwrap.wrap(line, WIDTH - 2, subsequent_indent="  ")


def flops_per_byte(gpu: str | None = None) -> str:
    """The datasheet's float32 FLOP/s over its memory bandwidth for ``gpu`` (default: the
    page's GPU), one line: ``'H100 80GB HBM3, datasheet: 67 TFLOP/s fp32 against 3.35 TB/s
    of HBM: 20 FLOPs in the time one byte arrives'``; a line saying so when the datasheet of
    that GPU is not known.

    Raises:
        TypeError: ``gpu`` is not a string.
    """
    c = ceilings(gpu)
    tflops, gbps = c.datasheet.get("fp32_tflops"), c.datasheet.get("copy_gbps")
    if not (tflops and gbps):
        return f"{c.name}: no datasheet peaks known for this GPU"
    line = (
        f"{c.name}, datasheet: {tflops:.0f} TFLOP/s fp32 against {format_rate(gbps, 'GB/s')} of "
        f"HBM: {tflops * 1e12 / (gbps * 1e9):.0f} FLOPs in the time one byte arrives"
    )
    return textwrap.fill(line, WIDTH, subsequent_indent="  ")


#: How :func:`host_time` names the providers of the ``host_overhead`` record.
HOST_NAMES = {
    "triton": "gpuperf.kernels.vector_add",
    "triton_jit": "the same kernel through kernel[grid]",
    "torch": "PyTorch's x + y",
}


def host_time() -> str:
    """The host's time per call of a small vector add (the ``host_overhead`` record's
    ``vector_add`` row: the GPU kept busy, so only the host's work counts), one line per
    GPU with a current record, the reference GPU first: the library op, the same kernel
    launched by ``kernel[grid]`` and PyTorch's ``x + y``, in microseconds; the reference
    GPU's note when its record is missing or stale."""
    lines, notes = [], []
    for gpu in records.gpus_with_record(HOST_OVERHEAD.name) or [records.reference_gpu()]:
        r = load(HOST_OVERHEAD, gpu)
        notes += r.notes
        if r.record is None or (r.notes and gpu != records.reference_gpu()):
            continue
        times = {p: r.values(p).get(VECTOR_ADD.name) for p in HOST_NAMES}
        each = [f"{name} {times[p]:.1f} µs" for p, name in HOST_NAMES.items() if times[p]]
        if each:
            lines.append(f"{r.name}, host time per call: " + ", ".join(each))
    if not lines and not notes:
        notes.append(f"MISSING: no GPU has a vector_add row in {HOST_OVERHEAD.name!r}")
    return fill(lines + notes)


def _sentence(result: Result) -> str:
    """One GPU's headline measurements as one sentence."""
    fractions = result.fraction_of_ceiling()
    ratios = result.ratios()
    parts = []
    large = {x: f for x, f in fractions.items() if x >= HBM_FROM}
    if large:
        biggest = max(large)
        rate = format_rate(result.values()[biggest], result.benchmark.metric)
        parts.append(
            f"our vector add streams at {percent_span(large.values())} of the measured "
            f"{result.ceiling_name()} from {format_x(HBM_FROM)} elements up ({rate} at {format_x(biggest)})"
        )
    if ratios:
        base = result.labels().get(result.benchmark.baseline, result.benchmark.baseline)
        parts.append(f"at {span(ratios.values())}× the speed of {base} over every size")
    us = result.us(result.benchmark.subject.key)
    if us:
        smallest = min(us)
        parts.append(
            f"a call on {format_x(smallest)} elements still takes {us[smallest]:.1f} µs of "
            "GPU time, the fixed cost of a launch"
        )
    if not parts:
        return ""
    head = ", ".join(parts[:2])
    return f"On the {short_gpu_name(result.gpu)}, " + "; ".join([head, *parts[2:]]) + "."


def _gpus() -> list[str]:
    """Folders of every GPU with a vector-add record, the reference GPU first."""
    return records.gpus_with_record(VECTOR_ADD.name)


def in_one_paragraph() -> Paragraph:
    """The page's headline measurements on every GPU with a vector-add record: the share
    of the ceiling its record reads it against (named from the record) reached on large
    tensors, the speed relative to
    PyTorch's ``x + y``, and the GPU time of the smallest launch.

    Returns:
        A :class:`~gpuperf.pages.prose.Paragraph`: one sentence per GPU with a record,
        and a note for each record that is stale, or one when no GPU has a record.
    """
    sentences, notes = [], []
    for gpu in _gpus():
        result = load(VECTOR_ADD, gpu)
        notes += result.notes
        if result.record is not None:
            sentences.append(_sentence(result))
    if not any(sentences):
        notes.append(
            f"MISSING: no GPU has a record of {VECTOR_ADD.name!r}: "
            f"{records.advice(records.bench_command(VECTOR_ADD.name))}."
        )
    return paragraph(*sentences, notes=notes)
