"""The landing page's table of what the tutorials found: one cell per benchmark and GPU.

Each cell reads one record: the benchmark's headline on that GPU
(:func:`~gpuperf.pages.report.headline`: its ratio to the declared baseline and its highest
share of the ceiling measured in the same run, the ceiling's value printed), why a share
above 100% is possible where it is above its ceiling beyond the timings' spread
(:func:`over_roof`), and when and at which commit that record was measured. A GPU whose
record is of an older version of the code says so rather than showing it
(:func:`cell`): the pages leave another GPU's stale record out, and the reference GPU's is
shown marked stale (:func:`~gpuperf.pages.report.load`).
"""

from __future__ import annotations

from gpuperf.bench import records
from gpuperf.bench.catalog import Benchmark
from gpuperf.bench.hardware import CEILINGS, STREAMS
from gpuperf.pages import hardware
from gpuperf.pages.plotting import ceiling_label, format_rate, short_gpu_name
from gpuperf.pages.report import Result, best_share, headline, load, measured_when, stream_mix


def over_roof(result: Result) -> str | None:
    """Why the provider under study's highest share of its ceiling
    (:func:`~gpuperf.pages.report.best_share`) can be above 100%, as reStructuredText (a
    call in double backquotes), or None where it is not.

    A ceiling is a rate a library call reached in the same run, not a limit of the
    hardware: a share above 100% is within the timings' spread where the row's 20th
    percentile is not above the ceiling's 80th (said so where it prints above 100%), and
    beyond it otherwise. Beyond it, against the stream bandwidth, the note names the stream
    that set it (the fastest of the mixes of reads and writes timed in the same run), a
    rate the memory was shown to reach rather than its limit; against the copy bandwidth
    (a ``Tensor.copy_``, one read per write, where a record was read against it), the
    share of the GPU's stream bandwidth (``stream_gbps`` of its ``hardware.json``, measured
    in a run of its own), or that none is measured on that GPU; against a matmul ceiling,
    that it is the library's call at one shape.

    Raises:
        TypeError: ``result`` is not a :class:`~gpuperf.pages.report.Result`.
    """
    share = best_share(result)
    if share is None or share.fraction <= 1:
        return None
    if not share.above_spread:
        if round(100 * share.fraction) <= 100:
            return None
        return "above 100% within the timings' spread: its 20th percentile is not above the ceiling's 80th"
    if share.key == "stream_gbps":
        name = share.ceiling.get("stream")
        how = f" (``{name}``, {stream_mix(name)})" if name in STREAMS else ""
        return (
            f"over 100%: the {CEILINGS['stream_gbps'][0]} is the fastest of the streams timed "
            f"in the same run{how}, a rate the memory was shown to reach, not a limit of it"
        )
    if share.key == "copy_gbps":
        gpu = short_gpu_name(result.gpu)
        said = (
            f"over 100%: the copy bandwidth is PyTorch's ``Tensor.copy_``, {stream_mix('copy')}, measured in "
            "the same run, not a limit of the memory"
        )
        stream = _stream_entry(result.folder)
        if stream is None:
            return (
                f"{said}; no stream bandwidth, the fastest of a few mixes of reads and writes, is "
                f"measured on the {gpu}"
            )
        part = share.row["value"] / stream["value"]
        name = stream.get("stream")
        how = f" ({name}, {stream_mix(name)})" if name in STREAMS else ""
        text = (
            f"{said}; against the {format_rate(stream['value'], stream['unit'])} "
            f"{CEILINGS['stream_gbps'][0]}, the fastest of the streams timed on the {gpu} "
            f"in a run of its own{how}, {100 * part:.0f}%"
        )
        if part > 1:
            text += ", above those streams too"
        return text
    named = ceiling_label(share.key, share.ceiling)
    if CEILINGS[share.key][1] == "TFLOP/s":
        return f"over 100%: the ceiling is {named} in the same run, not the tensor cores' peak"
    return f"over 100%: the ceiling is {named} as measured in the same run, not a hardware limit"


def _stream_entry(slug: str) -> dict | None:
    """The ``stream_gbps`` entry of the GPU's committed ``hardware.json``, or None where it
    has none (no file, or no stream measured there)."""
    if not (records.measurements_dir() / slug / "hardware.json").is_file():
        return None
    return hardware.ceilings(slug).entries.get("stream_gbps")


def cell(benchmark: Benchmark, gpu: str) -> str:
    """The landing table's cell of ``benchmark`` on ``gpu`` (a folder, ``'nvidia-h200'``), as
    reStructuredText: the headline of its record, the note of :func:`over_roof`, then when
    and at which commit that record was measured, and ``stale`` where the reference GPU's
    record is of code that has changed since. Without a record shown: ``'not measured'``,
    or, for another GPU's stale record, that it is not shown and when it was measured.

    Raises:
        TypeError: ``benchmark`` is not a :class:`~gpuperf.bench.catalog.benchmark.Benchmark`, or
            ``gpu`` not a string.
    """
    if not isinstance(benchmark, Benchmark):
        raise TypeError(
            f"benchmark must be a gpuperf.bench.catalog.Benchmark, got {type(benchmark).__name__}"
        )
    if not isinstance(gpu, str):
        raise TypeError(f"gpu must be a GPU folder name (str), got {type(gpu).__name__}")
    result = load(benchmark, gpu)
    if result.record is None:
        if result.source == "stale":
            old = records.read(records.record_path(benchmark.name, gpu))["provenance"]
            commit = records.short_commit(old["gpuperf_commit"])
            return (
                f"not shown: measured {old['date'][:10]} at gpuperf ``{commit}``, "
                "on an older version of its code (stale)"
            )
        if any(note.startswith("MALFORMED") for note in result.notes):
            return "record unreadable (malformed)"
        return "not measured"
    text = headline(result) or "no successful measurement of the kernel under study"
    note = over_roof(result)
    if note:
        text += f" ({note})"
    date, commit = measured_when(result)
    text += f". Measured {date} at gpuperf ``{commit}``"
    if result.stale:
        text += "; stale: its code changed after it was measured"
    return text + "."
