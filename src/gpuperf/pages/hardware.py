"""The GPU a page describes and its measured ceilings, as a page reads them.

A page describes one GPU first: the GPU present when it measures live, else the
reference GPU whose records are committed (:func:`page_gpu`). Its ceilings (a 1 GiB
copy, the fastest of a few streams, and the vendor matmul per dtype at its best of
a few large squares), measured in a run of their own (``python -m gpuperf.bench
--ceilings``), come from that GPU's ``hardware.json`` (:func:`ceilings`), with the
datasheet's peaks beside them for citation. A ceiling is named beside its value by
:func:`~gpuperf.pages.plotting.ceiling_label` (defined with the site's other formats in
:mod:`gpuperf.pages.plotting`, which draws it in each plot's legend), from the entry the
value comes from: its call, shape and mode.
"""

from __future__ import annotations

import json
import math
import textwrap
from dataclasses import dataclass, field

from gpuperf.bench import records
from gpuperf.bench.hardware import CEILINGS, DATASHEET
from gpuperf.pages.plotting import ceiling_label, format_rate, short_gpu_name

#: The ceilings a page can name, by their short name: ``ceilings().tflops("bf16")``.
DTYPES = ("bf16", "fp16", "fp32", "fp8", "fp8_fast")


def _can_measure() -> bool:
    from gpuperf.pages.report import can_measure

    return can_measure()


def page_gpu() -> str:
    """The folder (slug) of the GPU a page describes: the CUDA device present when the
    page measures live, else the reference GPU (``GPUPERF_GPU``, default the H100)."""
    if _can_measure():
        import torch

        return records.gpu_slug(torch.cuda.get_device_name())
    return records.reference_gpu()


def first_then_by_name(slugs, first: str) -> list[str]:
    """The GPU folders ``slugs``, each once, ``first`` (the page's GPU, :func:`page_gpu`, or the
    reference GPU) first, then by name: the order a page writes about its GPUs in."""
    return sorted(set(slugs), key=lambda slug: (slug != first, slug))


def gpus() -> list[str]:
    """Folders of every GPU with measured ceilings: the page's GPU first, then by name."""
    root = records.measurements_dir()
    found = [p.name for p in root.iterdir() if (p / "hardware.json").is_file()] if root.is_dir() else []
    return first_then_by_name(found, page_gpu())


@dataclass(frozen=True)
class Ceilings:
    """The measured ceilings of one GPU, with the datasheet's peaks beside them.

    Attributes:
        gpu: the GPU's name (``'NVIDIA H100 80GB HBM3'``).
        measured: ``{key: value}`` for the keys of :data:`gpuperf.bench.hardware.CEILINGS`
            measured (``copy_gbps`` in GB/s, ``bf16_tflops`` and the others in TFLOP/s).
        datasheet: the datasheet's peaks under the same keys (empty for an unknown GPU).
        provenance: where, when and how they were measured (a record's provenance).
        spread: ``{key: (20th percentile, 80th percentile)}`` of each measured ceiling,
            in its unit (empty where the source gave none).
        entries: ``{key: entry}``, each measured ceiling's whole entry (its ``shape``, FP8's
            ``accumulation``, the ``stream``...), which :meth:`label` names.
    """

    gpu: str
    measured: dict
    datasheet: dict = field(default_factory=dict)
    provenance: dict = field(default_factory=dict)
    spread: dict = field(default_factory=dict)
    entries: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The GPU without the vendor: ``'H100 80GB HBM3'``."""
        return short_gpu_name(self.gpu)

    @property
    def copy_gbps(self) -> float:
        """Measured copy bandwidth (bytes read plus bytes written), GB/s."""
        return self.measured["copy_gbps"]

    @property
    def memory_key(self) -> str:
        """The ceiling the memory roof is: ``'stream_gbps'`` where a stream bandwidth was
        measured, else ``'copy_gbps'``."""
        return "stream_gbps" if "stream_gbps" in self.measured else "copy_gbps"

    @property
    def memory_gbps(self) -> float:
        """The memory roof, GB/s: the measured stream bandwidth (``stream_gbps``, the fastest
        of a few streams: the fastest rate the memory was shown to reach), or the copy
        bandwidth where no stream bandwidth was measured (:attr:`memory_key`)."""
        return self.measured[self.memory_key]

    @property
    def memory_label(self) -> str:
        """What the memory roof is, named from its entry (:meth:`label`):
        ``'stream bandwidth (read)'``, or ``'copy bandwidth'`` where no stream bandwidth
        was measured."""
        return self.label(self.memory_key)

    def tflops(self, dtype: str = "bf16") -> float:
        """The measured vendor-matmul rate of ``dtype`` (``'bf16'``, ``'fp16'``, ``'fp32'``,
        ``'fp8'``), TFLOP/s.

        Raises:
            ValueError: ``dtype`` is not one of :data:`DTYPES`, or was not measured.
        """
        return self.measured[self._key(dtype)]

    def label(self, ceiling: str = "bf16") -> str:
        """What a ceiling is, named from its entry
        (:func:`~gpuperf.pages.plotting.ceiling_label`): ``ceiling`` a dtype of :data:`DTYPES`
        (its matmul ceiling: ``'bf16'``) or a key of :data:`~gpuperf.bench.hardware.CEILINGS`
        (``'copy_gbps'``).

        Raises:
            ValueError: ``ceiling`` is neither, or was not measured.
        """
        key = self._key(ceiling) if ceiling in DTYPES else ceiling
        if key in CEILINGS and key not in self.measured:
            raise ValueError(f"{self.gpu} has no measured {key}; it has {sorted(self.measured)}")
        return ceiling_label(key, self.entries.get(key))

    def ridge_point(self, dtype: str = "bf16", *, datasheet: bool = False) -> float:
        """FLOPs per byte at which ``dtype``'s compute roof meets the memory roof: peak
        FLOP/s over bytes/s, from the measured ceilings (:attr:`memory_gbps`) or the
        datasheet's (its one memory bandwidth).

        Raises:
            ValueError: as :meth:`tflops`, or no datasheet peaks for this GPU.
        """
        source = self.datasheet if datasheet else self.measured
        key = self._key(dtype)
        if key not in source or "copy_gbps" not in source:
            raise ValueError(f"no {'datasheet' if datasheet else 'measured'} {key} for {self.gpu}")
        bandwidth = source["copy_gbps"] if datasheet else self.memory_gbps
        return source[key] * 1e12 / (bandwidth * 1e9)

    def _key(self, dtype: str) -> str:
        if dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {list(DTYPES)}, got {dtype!r}")
        key = f"{dtype}_tflops"
        if key not in self.measured:
            raise ValueError(f"{self.gpu} has no measured {key}; it has {sorted(self.measured)}")
        return key

    def __str__(self) -> str:
        """One line per ceiling, measured (datasheet), and each dtype's ridge point, then
        where and when they were measured."""
        lines = [f"{self.gpu}, measured {self.provenance.get('date', '?')[:10]} (datasheet):"]
        for key, (_, unit) in CEILINGS.items():
            if key not in self.measured:
                continue
            line = f"  {self.label(key)}: {format_rate(self.measured[key], unit)}"
            if key in self.datasheet:
                line += f" ({format_rate(self.datasheet[key], unit)})"
            if unit == "TFLOP/s":
                dtype = key.removesuffix("_tflops")
                line += f"; ridge point {self.ridge_point(dtype):.0f} FLOP/byte"
                if key in self.datasheet and "copy_gbps" in self.datasheet:
                    line += f" ({self.ridge_point(dtype, datasheet=True):.0f})"
            lines += textwrap.wrap(line, 88, subsequent_indent="    ")
        if self.provenance:
            caption = " ".join(records.caption(self.provenance).split())
            lines += textwrap.wrap(caption, 88, subsequent_indent="  ")
        return "\n".join(lines)


def ceilings_or_none(gpu: str | None = None) -> Ceilings | None:
    """:func:`ceilings` of ``gpu``, or None where it has none (no ``hardware.json``, and none
    measured here).

    Raises:
        TypeError: ``gpu`` is not a string.
    """
    try:
        return ceilings(gpu)
    except FileNotFoundError:
        return None


def ceilings(gpu: str | None = None) -> Ceilings:
    """The ceilings of ``gpu`` (a folder such as ``'nvidia-h200'``; default :func:`page_gpu`).

    Read from the GPU's committed ``hardware.json``; on a GPU machine without one for
    the GPU present, measured now (a copy and a matmul per dtype, a few seconds).

    Raises:
        TypeError: ``gpu`` is not a string.
        FileNotFoundError: no ``hardware.json`` for ``gpu`` and it cannot be measured
            here; the message says how to make one.
    """
    if gpu is not None and not isinstance(gpu, str):
        raise TypeError(f"gpu must be a GPU folder name (str), got {type(gpu).__name__}")
    gpu = gpu or page_gpu()
    path = records.measurements_dir() / gpu / "hardware.json"
    if path.is_file():
        hw = json.loads(path.read_text())
        provenance, entries = hw["provenance"], hw["ceilings"]
    elif _can_measure() and gpu == page_gpu():
        from gpuperf.bench.hardware import measure_ceilings

        provenance, entries = records.collect_provenance(), measure_ceilings()
    else:
        raise FileNotFoundError(
            f"no measured ceilings for {gpu} (expected {path}): "
            f"{records.advice(records.bench_command(), 'that GPU')}"
        )
    # Keys of CEILINGS only: a hardware.json written by another version of gpuperf may hold others.
    entries = {k: c for k, c in entries.items() if k in CEILINGS and c and _finite(c.get("value"))}
    measured = {k: c["value"] for k, c in entries.items()}
    spread = {
        k: (c["value_p20"], c["value_p80"])
        for k, c in entries.items()
        if _finite(c.get("value_p20")) and _finite(c.get("value_p80"))
    }
    name = provenance["gpu"]
    return Ceilings(name, measured, dict(DATASHEET.get(name, {})), provenance, spread, entries)


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)
