"""The ``ncu_kernels`` capture: Nsight Compute's counters of each profiled launch, and the
table of them that the guide shows."""

from __future__ import annotations

from gpuperf.pages.tables import Cell, Section, render

#: Nsight Compute's counters the guide reads, in order: (label, metric, scale, digits).
#: ``metric`` is a name from ncu's sections (their human names) or a raw counter;
#: ``scale`` converts ncu's unit to the label's.
NCU_ROWS = (
    ("duration (µs)", "Duration", 1e-3, 1),
    ("DRAM throughput (% of peak)", "DRAM Throughput", 1, 1),
    ("compute (SM) throughput (% of peak)", "Compute (SM) Throughput", 1, 1),
    (
        "tensor pipe active (% of peak)",
        "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
        1,
        1,
    ),
    ("wgmma instructions (thousands)", "sm__inst_executed_pipe_tensor_op_gmma.sum", 1e-3, 0),
    ("DRAM read (MB)", "dram__bytes_read.sum", 1e-6, 1),
    ("DRAM written (MB)", "dram__bytes_write.sum", 1e-6, 1),
    ("L2 hit rate (%)", "L2 Hit Rate", 1, 1),
    ("achieved occupancy (%)", "Achieved Occupancy", 1, 1),
    ("theoretical occupancy (%)", "Theoretical Occupancy", 1, 1),
    ("registers per thread", "Registers Per Thread", 1, 0),
    ("local-memory (spill) requests", "Local Memory Spilling Requests", 1, 0),
    ("threads per block", "Block Size", 1, 0),
    ("blocks", "Grid Size", 1, 0),
    ("waves per SM", "Waves Per SM", 1, 2),
)
#: The raw counter of the tensor pipe's activity, in % of its peak.
TENSOR_PIPE = "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"


def ncu_value(launch: dict, metric: str, scale: float = 1):
    """One counter of one profiled launch, scaled (None when ncu did not report it)."""
    entry = launch["metrics"].get(metric)
    if entry is None or not isinstance(entry["value"], (int, float)):
        return None
    return entry["value"] * scale


def ncu_launch(capture: dict, op: str) -> dict:
    """The profiled launch of ``op`` (a name from the capture's ``ops``).

    Raises:
        KeyError: no launch was matched to ``op``; the message lists those that were.
    """
    for launch in capture["payload"]["launches"]:
        if launch.get("op") == op:
            return launch
    found = [launch.get("op") for launch in capture["payload"]["launches"] if launch.get("op")]
    raise KeyError(f"no profiled launch of {op!r}; the capture has {found}")


def ncu_table(capture: dict, ops=None, notes=()) -> str:
    """Nsight Compute's answers to "why is it slow", one column per op (default: every
    op matched to a launch), one row per counter of
    :data:`~gpuperf.pages.profiling.ncu.NCU_ROWS`."""
    launches = [launch for launch in capture["payload"]["launches"] if launch.get("op")]
    if ops is not None:
        launches = [ncu_launch(capture, op) for op in ops]
    section = Section("", ["counter", *[launch["op"] for launch in launches]])
    for label, metric, scale, digits in NCU_ROWS:
        values = [ncu_value(launch, metric, scale) for launch in launches]
        if all(v is None for v in values):
            continue
        section.rows.append(
            [Cell(label)] + [Cell("-") if v is None else Cell(f"{v:,.{digits}f}", v) for v in values]
        )
    return render([section], notes)
