"""The ``proton`` capture: the tree of scopes and kernels of Triton's profiler, flattened
into a table."""

from __future__ import annotations

from gpuperf.pages.tables import Cell, Section, render


def proton_kernels(capture: dict) -> list[dict]:
    """proton's kernels: ``{scope, kernel, count, total_us, avg_us}`` for each leaf frame
    with a time; empty when proton did not run (the capture's ``error`` says why)."""
    out = []
    for frame in capture["payload"].get("frames", []):
        metrics = frame["metrics"]
        if "time (ns)" not in metrics or not metrics.get("count"):
            continue
        out.append(
            {
                "scope": "/".join(frame["path"][1:-1]),
                "kernel": frame["name"],
                "count": metrics["count"],
                "total_us": metrics["time (ns)"] / 1e3,
                "avg_us": metrics["time (ns)"] / 1e3 / metrics["count"],
            }
        )
    return out


def proton_table(capture: dict, notes=()) -> str:
    """proton's tree flattened: scope, kernel, calls, total and average time (µs)."""
    section = Section("", ["scope", "kernel", "calls", "total µs", "µs per call"])
    for k in proton_kernels(capture):
        section.rows.append(
            [
                Cell(k["scope"]),
                Cell(k["kernel"]),
                Cell(str(k["count"]), k["count"]),
                Cell(f"{k['total_us']:,.1f}", k["total_us"]),
                Cell(f"{k['avg_us']:,.1f}", k["avg_us"]),
            ]
        )
    return render([section], notes)
