"""The ``timing_methods`` and ``launch_bound`` captures as tables: each timing method of an
op side by side, and host time against GPU time per call as the input grows; with the
rows and the crossover that the sentences and the figure read."""

from __future__ import annotations

from gpuperf.pages.tables import Cell, Section, number, render


def _us(ms: float | None, digits: int = 1) -> Cell:
    if ms is None:
        return Cell("-")
    return Cell(f"{ms * 1e3:,.{digits}f}", ms * 1e3)


def method(op: dict, key: str) -> dict:
    """The entry of timing method ``key`` for one op of the ``timing_methods`` capture.

    Raises:
        KeyError: the op has no such method; the message lists those it has.
    """
    for entry in op["methods"]:
        if entry["key"] == key:
            return entry
    raise KeyError(f"no timing method {key!r}; the capture has {[m['key'] for m in op['methods']]}")


def timing_methods_table(capture: dict, notes=()) -> str:
    """One table per op: each timing method's median and 20th/80th percentiles in µs,
    and its ratio to the CUDA-graph time (the kernel alone, launches removed)."""
    sections = []
    for op in capture["payload"]["ops"]:
        graph = method(op, "do_bench_cudagraph")["ms"]
        section = Section(op["op"], ["method", "median µs", "p20 µs", "p80 µs", "x CUDA-graph time"])
        for entry in op["methods"]:
            ratio = entry["ms"] / graph if graph else None
            section.rows.append(
                [
                    Cell(entry["label"]),
                    _us(entry["ms"]),
                    _us(entry.get("ms_p20")),
                    _us(entry.get("ms_p80")),
                    number(ratio, ",.1f", "x"),
                ]
            )
        sections.append(section)
    return render(sections, notes)


def launch_bound_rows(capture: dict, provider: str) -> list[dict]:
    """The rows of one provider of the ``launch_bound`` capture, smallest input first."""
    rows = [r for r in capture["payload"]["rows"] if r["provider"] == provider]
    return sorted(rows, key=lambda r: r["bytes"])


def crossover(capture: dict, provider: str) -> dict | None:
    """The first row (by size) where the GPU's time per call exceeds the host's: below
    it the host sets the pace (launch-bound), from it on the GPU does (GPU-bound)."""
    for row in launch_bound_rows(capture, provider):
        if row["device_ms"] is not None and row["device_ms"] > row["host_ms"]:
            return row
    return None


def launch_bound_table(capture: dict, notes=()) -> str:
    """Per size: each provider's host time per call, GPU time, and wall time per call
    in a loop of back-to-back calls, in µs."""
    providers = list(dict.fromkeys(r["provider"] for r in capture["payload"]["rows"]))
    labels = {r["provider"]: r["label"] for r in capture["payload"]["rows"]}
    sections = []
    for key in providers:
        section = Section(labels[key], ["input", "MB moved", "host µs/call", "GPU µs", "loop µs/call"])
        for row in launch_bound_rows(capture, key):
            section.rows.append(
                [
                    Cell(f"{row['rows']} x {row['cols']}", row["rows"]),
                    Cell(f"{row['bytes'] / 1e6:,.1f}", row["bytes"]),
                    _us(row["host_ms"]),
                    _us(row["device_ms"]),
                    _us(row["loop_ms"]),
                ]
            )
        sections.append(section)
    return render(sections, notes)
