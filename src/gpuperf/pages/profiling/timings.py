"""The ``timing_methods`` and ``launch_bound`` captures as tables: each timing method of an
op side by side, and the host's time per call against a loop's time per call (and the
GPU's) as the input grows; with the rows and the crossover (where the loop starts to
run at the GPU's pace) that the opening, the sentences and the figure read."""

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


#: How many times the host's time per call a call must take in the back-to-back loop for
#: the GPU, not the host, to set the loop's pace (see :func:`crossover`).
GPU_BOUND_RATIO = 2.0


def launch_bound_rows(capture: dict, provider: str) -> list[dict]:
    """The rows of one provider of the ``launch_bound`` capture, smallest input first.

    Raises:
        ValueError: the capture has no rows for ``provider``; the message lists those it has.
    """
    found = capture["payload"]["rows"]
    rows = [r for r in found if r["provider"] == provider]
    if not rows:
        have = list(dict.fromkeys(r["provider"] for r in found))
        raise ValueError(f"provider {provider!r} is not in the launch_bound capture; it has {have}")
    return sorted(rows, key=lambda r: r["bytes"])


def loop_over_host(row: dict) -> float | None:
    """A ``launch_bound`` row's wall time per call in the loop of back-to-back calls
    (``loop_ms``) over the host's time per call (``host_ms``); ``None`` where either is
    missing. Near 1, the host sets the loop's pace; well above 1, the GPU does."""
    loop, host = row.get("loop_ms"), row.get("host_ms")
    if loop is None or not host:
        return None
    return loop / host


def host_paced(row: dict) -> bool:
    """Whether a ``launch_bound`` row's loop runs at the host's pace: its time per call
    is no further above the host's time per call than the two measurements' spread
    (the loop's 20th percentile at most the host's 80th; the medians where the capture
    has no percentiles). ``False`` where the row lacks either time."""
    if loop_over_host(row) is None:
        return False
    loop = row.get("loop_ms_p20") or row["loop_ms"]
    host = row.get("host_ms_p80") or row["host_ms"]
    return loop <= host


def crossover(capture: dict, provider: str) -> dict | None:
    """The first row (by size) from which a loop of back-to-back calls runs at the GPU's
    pace: at it and at every larger size measured, a call in the loop (``loop_ms``) takes
    at least :data:`GPU_BOUND_RATIO` times the host's time per call (``host_ms``).

    The crossover is read from the loop, not from the GPU time (``device_ms``): that is
    :func:`~gpuperf.bench.timing.time_ms`'s, taken after flushing the L2, while in the
    loop an input that fits in the L2 stays there, so the kernel runs faster than
    ``device_ms`` says. A loop takes about the larger of the host's and the GPU's time
    per call; where it takes twice the host's, the host waits for the GPU at least half
    of every call, so the GPU sets the pace (*GPU-bound*); below that margin the two
    measurements, taken apart, can differ by their noise alone (*launch-bound*: the
    host's cost per call sets the pace, the GPU idles between kernels). Rows without
    both times are skipped.

    Returns:
        The row, or ``None`` where no size is GPU-bound by that rule (or no row has
        both times).

    Raises:
        ValueError: the capture has no rows for ``provider``.
    """
    found = None
    for row in reversed(launch_bound_rows(capture, provider)):
        ratio = loop_over_host(row)
        if ratio is None:
            continue
        if ratio < GPU_BOUND_RATIO:
            break
        found = row
    return found


def below_crossover(capture: dict, provider: str) -> dict | None:
    """The largest row with both times smaller than :func:`crossover`'s (the last size
    not GPU-bound by its rule); the largest such row where there is no crossover;
    ``None`` where the crossover is the smallest size (or no row has both times).

    Raises:
        ValueError: the capture has no rows for ``provider``.
    """
    cross = crossover(capture, provider)
    timed = [r for r in launch_bound_rows(capture, provider) if loop_over_host(r) is not None]
    below = [r for r in timed if cross is None or r["bytes"] < cross["bytes"]]
    return below[-1] if below else None


def launch_bound_table(capture: dict, notes=()) -> str:
    """Per size: each provider's host time per call, GPU time (the kernel with a
    flushed L2), wall time per call in a loop of back-to-back calls, all in µs, and the
    loop's time over the host's (:func:`loop_over_host`)."""
    providers = list(dict.fromkeys(r["provider"] for r in capture["payload"]["rows"]))
    labels = {r["provider"]: r["label"] for r in capture["payload"]["rows"]}
    sections = []
    for key in providers:
        section = Section(
            labels[key],
            ["input", "MB moved", "host µs/call", "GPU µs, L2 flushed", "loop µs/call", "loop / host"],
        )
        for row in launch_bound_rows(capture, key):
            section.rows.append(
                [
                    Cell(f"{row['rows']} x {row['cols']}", row["rows"]),
                    Cell(f"{row['bytes'] / 1e6:,.1f}", row["bytes"]),
                    _us(row["host_ms"]),
                    _us(row["device_ms"]),
                    _us(row.get("loop_ms")),
                    number(loop_over_host(row), ",.1f", "x"),
                ]
            )
        sections.append(section)
    return render(sections, notes)
