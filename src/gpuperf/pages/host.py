"""The host-time table: each op's host time per call against its PyTorch op, and its target.

Read from the ``host_overhead`` record (:data:`gpuperf.bench.catalog.HOST_OVERHEAD`), whose
targets are :data:`gpuperf.bench.catalog.host.HOST_TARGETS`.
"""

from __future__ import annotations

import textwrap

from gpuperf.bench.catalog import HOST_OVERHEAD
from gpuperf.bench.catalog.host import HOST_TARGETS
from gpuperf.pages.profiling.checks import check_result
from gpuperf.pages.report import Result
from gpuperf.pages.tables import Cell, Section, render


def _verdict(ratio: float, target: float) -> Cell:
    if ratio <= target:
        return Cell("met", 0)
    return Cell(f"missed by {100 * (ratio / target - 1):.0f}%", ratio / target - 1)


def _per_gpu(result: Result, targets: dict[str, float]):
    """``(gpu, {op: (ours µs, PyTorch µs)})`` for each GPU of a ``host_overhead`` result,
    over the ops of ``targets`` with both times."""
    check_result(result, HOST_OVERHEAD)
    for gpu in result.gpus():
        ours, theirs = gpu.values("triton"), gpu.values("torch")
        yield gpu, {op: (ours[op], theirs[op]) for op in targets if ours.get(op) and theirs.get(op)}


def targets_table(result: Result, targets: dict[str, float] | None = None) -> str:
    """For each GPU of a ``host_overhead`` result, one row per op that has a target: our
    wrapper's host time per call (cached launch), the PyTorch op's, their ratio, the target
    ratio and whether the median met it. ``targets`` defaults to :data:`HOST_TARGETS`.

    Raises:
        TypeError: ``result`` is not a :class:`~gpuperf.pages.report.Result`.
        ValueError: it is not the ``host_overhead`` benchmark's.
    """
    targets = HOST_TARGETS if targets is None else targets
    sections = []
    for gpu, times in _per_gpu(result, targets):
        header = ["op", "ours µs", "PyTorch µs", "ours / PyTorch", "target", ""]
        section = Section(gpu.name if len(result.gpus()) > 1 else "", header)
        for op, (ours, theirs) in times.items():
            ratio, target = ours / theirs, targets[op]
            section.rows.append(
                [
                    Cell(op, op),
                    Cell(f"{ours:.1f}", ours),
                    Cell(f"{theirs:.1f}", theirs),
                    Cell(f"{ratio:.2f}×", ratio),
                    Cell(f"≤ {target:.1f}×", target),
                    _verdict(ratio, target),
                ]
            )
        sections.append(section)
    footer = result.measured_on() if len(result.gpus()) == 1 else None
    return render(sections, result.all_notes(), footer=footer)


def targets_reading(result: Result, targets: dict[str, float] | None = None) -> str:
    """One sentence per GPU of a ``host_overhead`` result, read off the same numbers as
    :func:`targets_table`: which ops met their target, and which missed, the largest miss
    first, each with its ratio to the PyTorch op. Raises as :func:`targets_table` does."""
    targets = HOST_TARGETS if targets is None else targets
    lines = []
    for gpu, times in _per_gpu(result, targets):
        ratios = {op: ours / theirs for op, (ours, theirs) in times.items()}
        missed = sorted(
            (op for op in ratios if ratios[op] > targets[op]), key=lambda op: -ratios[op] / targets[op]
        )
        met = [op for op in ratios if op not in missed]
        where = f"{gpu.name}: " if len(result.gpus()) > 1 else ""
        said = [f"met by {_ops(met, ratios)}"] if met else []
        if missed:
            said.append(f"missed by {_ops(missed, ratios)}, the largest miss first")
        sentence = where + ("The target is " + "; ".join(said) + "." if said else "No op has a target here.")
        lines.append(textwrap.fill(sentence, 88))
    return "\n".join(lines)


def _ops(ops: list[str], ratios: dict[str, float]) -> str:
    named = [f"{op} ({ratios[op]:.2f}×)" for op in ops]
    return named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]


__all__ = ["targets_reading", "targets_table"]
