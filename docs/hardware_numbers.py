"""The H100's measured numbers as reStructuredText substitutions (``|h100-copy|`` and
the others), for prose that quotes them: the glossary above all.

Every value comes from the committed ``hardware.json`` of the H100
(:func:`gpuperf.pages.hardware.ceilings`), for the limits of an SM from its
``execution_model`` capture (what ``torch.cuda.get_device_properties`` and the driver
reported), and for the host time of a PyTorch op from its ``host_overhead`` record, so the
prose changes when the records do and no number is typed by hand.
"""

from __future__ import annotations

from gpuperf.bench.catalog import by_name
from gpuperf.pages import captures, report
from gpuperf.pages.execution_model import NAME as EXECUTION_MODEL
from gpuperf.pages.execution_model import device_value
from gpuperf.pages.hardware import ceilings
from gpuperf.pages.plotting import format_rate

#: The GPU the glossary quotes: the H100 these pages were first measured on.
GPU = "nvidia-h100-80gb-hbm3"


def substitutions(gpu: str = GPU) -> dict[str, str]:
    """``{name: text}``: the GPU's name, SM count, L2 size, memory, measured copy bandwidth
    (and the size of the copy, from its rate and time), stream bandwidth (the memory roof,
    with the stream that set it) and matmul peaks (also named by call,
    shape and mode), the bf16 ridge point, the date they were measured, and the quickest
    PyTorch op's host time per call."""
    c = ceilings(gpu)
    p = c.provenance
    sms = p["sm_count"]
    copy = c.entries["copy_gbps"]
    # GB/s x ms = bytes read plus written / 1e6; a copy reads and writes each byte once.
    copied_gib = copy["value"] * copy["ms"] * 1e6 / 2 / 2**30
    return {
        **sm_limits(gpu),
        **host_times(gpu),
        "h100-name": p["gpu"],
        "h100-sms": str(sms),
        "h100-sms-plus-one": str(sms + 1),
        "h100-sms-twice": str(2 * sms),
        "h100-l2": f"{p['l2_bytes'] / 2**20:.0f} MiB",
        "h100-memory": f"{p['memory_gib']:.0f} GiB",
        "h100-copy": format_rate(c.copy_gbps, "GB/s"),
        "h100-copy-size": f"{copied_gib:.0f} GiB",
        # The memory roof: the fastest stream, and which stream set it (the copy where none was).
        "h100-stream": format_rate(c.memory_gbps, "GB/s"),
        "h100-stream-name": _stream_name(c),
        "h100-bf16": format_rate(c.tflops("bf16"), "TFLOP/s"),
        "h100-fp8": format_rate(c.tflops("fp8"), "TFLOP/s"),
        "h100-fp32": format_rate(c.tflops("fp32"), "TFLOP/s"),
        # What each matmul ceiling is, named from its entry: call, shape (fp8: accumulation).
        "h100-bf16-label": c.label("bf16"),
        "h100-fp8-label": c.label("fp8"),
        "h100-fp32-label": c.label("fp32"),
        "h100-fp8-accumulation": str(c.entries["fp8_tflops"].get("accumulation", "promoted")),
        "h100-ridge-bf16": f"{c.ridge_point('bf16'):.0f} FLOP/byte",
        "h100-measured": p["date"][:10],
    }


def _stream_name(c) -> str:
    """``'the chunked read (reads alone)'``: the stream that set the stream bandwidth of
    ``c`` (:class:`~gpuperf.pages.hardware.Ceilings`), from its entry, with its mix."""
    from gpuperf.bench.hardware import STREAMS
    from gpuperf.pages.report import stream_mix

    stream = c.entries.get(c.memory_key, {}).get("stream", "copy")
    if stream not in STREAMS:
        return str(stream)
    return f"{_STREAM_PROSE.get(stream, stream)} ({stream_mix(stream)})"


#: How the glossary names each stream of :data:`gpuperf.bench.hardware.STREAMS`, as its
#: definition of the stream bandwidth lists them ("read" is the chunked read, not any read).
_STREAM_PROSE = {
    "copy": "the copy",
    "add": "the add",
    "addcmul": "the multiply-add",
    "sum": "the sum",
    "read": "the chunked read",
}


def sm_limits(gpu: str = GPU) -> dict[str, str]:
    """``{name: text}``: an SM's limits as the GPU reported them in its ``execution_model``
    capture: threads and warps, programs (thread blocks) and threads per program, registers
    and shared memory per SM and per program.

    Raises:
        RuntimeError: the GPU has no ``execution_model`` capture.
    """
    capture, notes = captures.load(EXECUTION_MODEL, gpu)
    if capture is None:
        raise RuntimeError(f"no {EXECUTION_MODEL} capture of {gpu}: {' '.join(notes)}")
    value = lambda key: device_value(capture, key)[0]
    threads, warp = value("threads_per_sm"), value("warp_size")
    return {
        "h100-threads-per-sm": f"{threads:,}",
        "h100-warps-per-sm": f"{threads // warp}",
        "h100-programs-per-sm": f"{value('programs_per_sm')}",
        "h100-threads-per-program": f"{value('threads_per_program'):,}",
        "h100-registers-per-sm": f"{value('registers_per_sm'):,}",
        "h100-register-kib": f"{value('registers_per_sm') * 4 // 1024} KiB",
        "h100-shared-per-sm": f"{value('shared_per_sm') // 1024} KiB",
        "h100-shared-per-program": f"{value('shared_per_program') // 1024} KiB",
    }


def host_times(gpu: str = GPU) -> dict[str, str]:
    """``{name: text}``: the host time per call of the quickest PyTorch op (the record's
    baseline provider) in the GPU's ``host_overhead`` record, in µs, and that op's name.

    Raises:
        RuntimeError: the GPU has no ``host_overhead`` record, or it has no baseline row.
    """
    result = report.load(by_name("host_overhead"), gpu)
    if result.record is None:
        raise RuntimeError(f"no host_overhead record of {gpu}: {' '.join(result.notes)}")
    record = result.record
    rows = [r for r in record["rows"] if r["provider"] == record["baseline"] and r.get("status") == "ok"]
    if not rows:
        raise RuntimeError(f"the host_overhead record of {gpu} has no {record['baseline']!r} row")
    quickest = min(rows, key=lambda r: r["value"])
    return {
        "h100-host-torch-op": f"{quickest['value']:.0f} µs",
        "h100-host-torch-op-name": str(quickest["x"]),
    }


def rst_epilog(gpu: str = GPU) -> str:
    """The substitutions as reStructuredText, for Sphinx's ``rst_epilog``."""
    return "\n".join(f".. |{name}| replace:: {text}" for name, text in substitutions(gpu).items()) + "\n"
