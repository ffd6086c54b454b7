"""Tutorial 08's topic module (Gluon on Hopper): its opening paragraph, the ladder's
ratios per rung, and what the compiler made of each schedule.

The page shows the kernels, the arithmetic of the promotion and the calls; compiling a
kernel for ``sm_90`` without a GPU (:mod:`gpuperf.kernels.gluon._offline`), reading
``ptxas``'s report and the committed records, and formatting them happen here.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from dataclasses import dataclass

from gpuperf.bench.catalog import GLUON_FP8
from gpuperf.pages import hardware
from gpuperf.pages.plotting import format_x, short_gpu_name
from gpuperf.pages.prose import Paragraph, paragraph, span
from gpuperf.pages.report import Result, load
from gpuperf.pages.tables import Cell, Section, render

#: The FP8 ladder's providers, bottom rung first, and how the page names them.
FP8_RUNGS = {
    "gluon_drain": "Gluon, drain then promote",
    "gluon_pingpong": "Gluon, promote beside next MMA",
    "gluon_persistent": "Gluon, + persistent",
    "gluon": "Gluon, + TMA store",
    "triton": "Triton matmul_fp8, tuned",
}


#: How the page names the scalings.
SCALINGS = {"tensor": "per-tensor scales", "row": "per-row scales"}


@dataclass(frozen=True)
class CompiledSchedule:
    """What the compiler made of one configuration of the Gluon FP8 kernel, for ``sm_90``.

    Attributes:
        waits: the distinct ``wgmma.wait_group N`` instructions in its PTX (``N``: how many
            MMA groups may still run when the wait returns).
        registers: registers a thread, from ``ptxas -v``.
        spilled: bytes of spill stores (0: none).
        serialized: whether ptxas serialized the ``wgmma`` instructions (its note C7514),
            which undoes any overlap the schedule asks for.
        shared_bytes: shared memory a program allocates.
    """

    waits: tuple[str, ...]
    registers: int
    spilled: int
    serialized: bool
    shared_bytes: int

    def line(self) -> str:
        waits = ", ".join(self.waits)
        serial = "serialized by ptxas" if self.serialized else "asynchronous"
        return (
            f"{waits}; {self.registers} registers a thread, {self.spilled} bytes spilled; wgmma "
            f"{serial}; {self.shared_bytes // 1024} KiB of shared memory"
        )


def compile_fp8_schedule(config, m: int = 4096, n: int = 4096, k: int = 4096) -> CompiledSchedule:
    """Compile :func:`gpuperf.kernels.gluon.matmul_fp8_promoted`'s kernel with ``config`` (a
    :class:`~gpuperf.kernels.gluon.GluonFP8Config`) for ``sm_90`` on this machine, GPU or
    not, and read its PTX and ``ptxas -v``'s report (the ``ptxas`` in Triton's wheel).

    Raises:
        RuntimeError: Triton's wheel carries no ``ptxas`` here.
    """
    from dataclasses import asdict

    from triton.backends.nvidia import compiler

    from gpuperf.kernels.gluon._offline import compile_matmul_fp8

    ptxas = os.path.join(os.path.dirname(compiler.__file__), "bin", "ptxas")
    if not os.path.isfile(ptxas):
        raise RuntimeError(f"no ptxas at {ptxas}: Triton's wheel for this platform carries none")
    compiled = compile_matmul_fp8(asdict(config), m, n, k)
    ptx = compiled["ptx"]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "kernel.ptx")
        with open(path, "w") as f:
            f.write(ptx)
        report = subprocess.run(
            [ptxas, "-arch=sm_90a", "-v", path, "-o", os.path.join(tmp, "kernel.cubin")],
            capture_output=True,
            text=True,
            check=True,
        ).stderr
    waits = sorted({line.strip().rstrip(";") for line in ptx.splitlines() if "wgmma.wait_group" in line})
    return CompiledSchedule(
        waits=tuple(w.replace(".sync.aligned", "") for w in waits),
        registers=int(re.search(r"Used (\d+) registers", report).group(1)),
        spilled=int(re.search(r"(\d+) bytes spill stores", report).group(1)),
        serialized="C7514" in report,
        shared_bytes=compiled["shared"],
    )


def _ratio_span(ratios) -> str:
    return span(ratios) + "×"


def fp8_sentence(result: Result) -> str:
    """One GPU's FP8 ladder in a sentence: the Gluon kernel's top rung against cuBLASLt and
    Triton, and what each rung bought.

    Raises:
        ValueError: ``result`` has no record.
    """
    if result.record is None:
        raise ValueError(f"no {result.benchmark.name} record to describe: {result.notes}")
    vs_cublaslt = [v for c in GLUON_FP8.combos() for v in result.ratios("gluon", **c).values()]

    def bought(provider, over):
        return [r for c in GLUON_FP8.combos() for r in result.ratios(provider, over=over, **c).values()]

    vs_triton = bought("gluon", "triton")

    return (
        f"On the {short_gpu_name(result.gpu)}, the Gluon FP8 matmul with float32 promotion "
        f"runs at {_ratio_span(vs_cublaslt)} cuBLASLt's speed and {_ratio_span(vs_triton)} "
        f"Triton's tuned kernel: overlapping the promotion with the next MMA bought "
        f"{_ratio_span(bought('gluon_pingpong', 'gluon_drain'))}, persistence "
        f"{_ratio_span(bought('gluon_persistent', 'gluon_pingpong'))}, storing by TMA "
        f"{_ratio_span(bought('gluon', 'gluon_persistent'))}."
    )


def in_one_paragraph() -> Paragraph:
    """The page's answer, from the ``gluon_fp8`` records of every GPU with measured ceilings
    (:func:`gpuperf.pages.hardware.gpus`): one :func:`fp8_sentence` each, and a note for each
    missing or stale record."""
    sentences, notes = [], []
    for gpu in hardware.gpus():
        result = load(GLUON_FP8, gpu=gpu)
        notes += result.notes
        if result.record is not None:
            sentences.append(fp8_sentence(result))
    return paragraph(*sentences, notes=notes)


def fp8_ladder_table(result: Result) -> str:
    """Each GPU's FP8 ladder: TFLOP/s of every rung at every shape and scaling, and its speed
    relative to cuBLASLt (above 1: faster).

    Raises:
        TypeError: ``result`` is not a :class:`~gpuperf.pages.report.Result`.
        ValueError: it is not the result of :data:`~gpuperf.bench.catalog.GLUON_FP8`.
    """
    if not isinstance(result, Result):
        raise TypeError(f"expected a gpuperf.pages.Result, got {type(result).__name__}")
    if result.benchmark.name != GLUON_FP8.name:
        raise ValueError(f"expected the result of {GLUON_FP8.name!r}, got {result.benchmark.name!r}")
    sections = []
    header = ["TFLOP/s (× cuBLASLt)", *(format_x(x) for x in GLUON_FP8.x_values)]
    for r in result.gpus():
        for combo in GLUON_FP8.combos():
            base = r.rows("scaled_mm", **combo)
            rows = []
            for key, name in FP8_RUNGS.items():
                cells = [Cell(name)]
                for x, row in r.rows(key, **combo).items():
                    ratio = base[x]["ms"] / row["ms"] if x in base else None
                    cells.append(
                        Cell(f"{row['value']:.0f}" + (f" ({ratio:.2f}×)" if ratio else ""), row["value"])
                    )
                rows.append(cells)
            rows.append(
                [Cell("cuBLASLt"), *(Cell(f"{row['value']:.0f}", row["value"]) for row in base.values())]
            )
            heading = f"{short_gpu_name(r.gpu)}, {SCALINGS[combo['scaling']]}:"
            sections.append(Section(heading, header, rows))
    return render(sections)


#: The columns of :func:`ncu_table`: a heading and the metric it reads (scaled to the unit shown).
NCU_COLUMNS = (
    ("ms", "gpu__time_duration.sum", 1e-6),
    ("tensor pipe %", "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", 1),
    ("L2 TB/s", "lts__t_bytes.sum.per_second", 1e-12),
    ("L2 % of peak", "lts__throughput.avg.pct_of_peak_sustained_elapsed", 1),
    ("regs", "launch__registers_per_thread", 1),
    ("stall: barrier %", "smsp__warp_issue_stalled_barrier_per_warp_active.pct", 1),
    ("stall: wait %", "smsp__warp_issue_stalled_wait_per_warp_active.pct", 1),
    ("stall: long scoreboard %", "smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct", 1),
)
#: The units the scales of :data:`NCU_COLUMNS` assume (ncu's CSV prints base units).
_NCU_UNITS = {"gpu__time_duration.sum": "ns", "lts__t_bytes.sum.per_second": "byte/s"}
#: How :func:`ncu_table` names each profiled provider.
NCU_NAMES = {**FP8_RUNGS, "scaled_mm": "cuBLASLt"}


def ncu_table(capture: dict) -> str:
    """The capture ``ncu_gluon_fp8`` (``scripts/gluon_capture.py``) as a table: per provider,
    its time, how busy the tensor pipe was, L2 traffic, registers and the largest stall
    reasons (percent of active warps' cycles).

    Raises:
        ValueError: a metric is in another unit than the table's scale assumes."""
    payload = capture["payload"]
    rows = []
    for row in payload["rows"]:
        metrics = row["metrics"]
        cells = [Cell(NCU_NAMES.get(row["provider"], row["provider"]))]
        for _heading, metric, scale in NCU_COLUMNS:
            m = metrics.get(metric)
            if m is None:
                cells.append(Cell("-"))
                continue
            expected = _NCU_UNITS.get(metric)
            if expected is not None and m["unit"] != expected:
                raise ValueError(
                    f"{metric} is in {m['unit']!r} in this capture; the table reads {expected!r}"
                )
            value = m["value"] * scale
            cells.append(Cell(f"{value:.3g}" if value < 100 else f"{value:.0f}", value))
        rows.append(cells)
    shape = format_x(tuple(payload["shape"]))
    header = [f"{shape}, {SCALINGS[payload['scaling']]}", *(h for h, _, _ in NCU_COLUMNS)]
    # The libraries' kernel names say what they chose (cuBLASLt's names its tile and cluster).
    kernels = [
        [Cell(NCU_NAMES.get(row["provider"], row["provider"])), Cell(row["kernel"])]
        for row in payload["rows"]
        if not row["provider"].startswith("gluon")
    ]
    return render([Section("", header, rows), Section("", ["library", "kernel it ran"], kernels)])


__all__ = [
    "FP8_RUNGS",
    "NCU_COLUMNS",
    "CompiledSchedule",
    "compile_fp8_schedule",
    "fp8_ladder_table",
    "fp8_sentence",
    "in_one_paragraph",
    "ncu_table",
]
