"""The host-time table: each op's host time per call against its PyTorch op, and its target.

Read from the ``host_overhead`` record (:data:`gpuperf.bench.catalog.HOST_OVERHEAD`), whose
targets are :data:`gpuperf.bench.catalog.host.HOST_TARGETS`; and where a training step's
host time goes, part by part, from the ``host_breakdown`` capture
(``scripts/host_breakdown.py``): :func:`show_training_step`.
"""

from __future__ import annotations

import textwrap

from gpuperf.bench.catalog import HOST_OVERHEAD
from gpuperf.bench.catalog.host import HOST_TARGETS
from gpuperf.pages import captures as page_captures
from gpuperf.pages.prose import and_list
from gpuperf.pages.report import Result, check_result
from gpuperf.pages.tables import Cell, Section, render


def _verdict(ratio: float, target: float) -> Cell:
    if ratio <= target:
        return Cell("met", 0)
    return Cell(f"missed by {100 * (ratio / target - 1):.0f}%", ratio / target - 1)


def _per_gpu(result: Result, ops):
    """``(gpu, {op: (ours µs, PyTorch µs)})`` for each GPU of a ``host_overhead`` result,
    over the ``ops`` (names, or a dict keyed by them) with both times."""
    check_result(result, HOST_OVERHEAD)
    for gpu in result.gpus():
        ours, theirs = gpu.values("triton"), gpu.values("torch")
        yield gpu, {op: (ours[op], theirs[op]) for op in ops if ours.get(op) and theirs.get(op)}


#: How far below the clock's time a row's CPU time may fall and still count as the same:
#: the two are read around the same calls, so they differ by the clocks' resolution alone
#: unless the process waited for a core.
CPU_SHORTFALL = 0.05


def _cpu_shares(gpu, ops) -> dict[str, float]:
    """``{op + " " + provider: CPU time / clock time}`` of one GPU's rows of ``ops``, ours and
    PyTorch's, where the row read the process's CPU time (``cpu_ms``; records measured
    before it was read have none)."""
    found = {}
    for provider, who in (("triton", "ours"), ("torch", "PyTorch's")):
        rows = gpu.rows(provider)
        for op in ops:
            row = rows.get(op)
            if row and row.get("cpu_ms") and row["ms"]:
                found[f"{op} ({who})"] = row["cpu_ms"] / row["ms"]
    return found


def _cpu_sentence(gpu) -> str:
    """Of one GPU's rows that read the process's CPU time: whether it matched the clock's on
    every row (the host time was work on the CPU) or fell short on some (the process waited
    for a core there), with the range of CPU / clock; ``""`` when no row read it."""
    shares = _cpu_shares(gpu, gpu.values("triton"))
    if not shares:
        return ""
    low, high = min(shares.values()), max(shares.values())
    short = [row for row, share in shares.items() if share < 1 - CPU_SHORTFALL]
    if not short:
        return (
            f" The process's CPU time per call, read around the same calls, is "
            f"{100 * low:.0f}–{100 * high:.0f}% of the clock's on every row: the host's time "
            f"is work on the CPU, not time spent waiting for a core."
        )
    listed = and_list(f"{row} ({100 * shares[row]:.0f}%)" for row in short)
    return (
        f" The process's CPU time per call falls short of the clock's on {listed}: there "
        f"the process waited for a core for part of the time."
    )


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
            row = [
                Cell(op, op),
                Cell(f"{ours:.1f}", ours),
                Cell(f"{theirs:.1f}", theirs),
                Cell(f"{ratio:.2f}×", ratio),
                Cell(f"≤ {target:.1f}×", target),
                _verdict(ratio, target),
            ]
            section.rows.append(row)
        sections.append(section)
    footer = result.measured_on() if len(result.gpus()) == 1 else None
    return render(sections, result.all_notes(), footer=footer)


def targets_reading(result: Result, targets: dict[str, float] | None = None) -> str:
    """One sentence per GPU of a ``host_overhead`` result, read off the same numbers as
    :func:`targets_table`: which ops met their target, and which missed, the largest miss
    first, each with its ratio to the PyTorch op; then, where the record read the process's
    CPU time, whether it matched the clock's (:data:`CPU_SHORTFALL`). Raises as
    :func:`targets_table` does."""
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
        sentence += _cpu_sentence(gpu)
        lines.append(textwrap.fill(sentence, 88))
    return "\n".join(lines)


#: The capture of host time per part of a call.
BREAKDOWN = "host_breakdown"
#: The attention training step's parts in the capture: (ours, SDPA's), each ``(name, what)``.
TRAINING_PARTS = (
    ("forward, no autograd", "the forward under torch.no_grad() (ours: a plan's replay)"),
    ("forward, recorded", "the forward with q, k, v requiring grad: autograd records it"),
    ("forward + backward", "the recorded forward, then torch.autograd.grad through the backward"),
)


def training_step_table(capture: dict) -> str:
    """The attention training step's host time per call, part by part, ours beside SDPA's,
    from a ``host_breakdown`` capture: each part's µs, and what recording the forward and
    running the backward add.

    Raises:
        TypeError, ValueError: ``capture`` is not a ``host_breakdown`` capture
            (:func:`~gpuperf.pages.captures.capture_payload`).
    """
    payload = page_captures.capture_payload(capture, BREAKDOWN)
    parts = payload["us_per_call"]["attention_train"]
    spread = payload.get("spread", {}).get("attention_train", {})

    def cells(name: str) -> list[Cell]:
        us = parts[name]
        found = [Cell(f"{us:.1f}", us)]
        if spread:
            s = spread.get(name, {})
            low, high = s.get("p20"), s.get("p80")
            found.append(Cell(f"{low:.0f}–{high:.0f}", low) if low and high else Cell("-"))
        return found

    if spread:
        header = ["part", "ours µs", "ours p20–p80", "SDPA µs", "SDPA p20–p80", "what it times"]
    else:
        header = ["part", "ours µs", "SDPA µs", "what it times"]
    section = Section("", header)
    for name, what in TRAINING_PARTS:
        section.rows.append([Cell(name, name), *cells(name), *cells(f"SDPA {name}"), Cell(what, what)])
    return render([section])


def _clear(spread: dict, lower: str, upper: str) -> bool | None:
    """Whether part ``upper`` took longer than part ``lower`` beyond their spread (``upper``'s
    20th percentile above ``lower``'s 80th); ``None`` where either lacks percentiles."""
    low, high = spread.get(upper, {}).get("p20"), spread.get(lower, {}).get("p80")
    if low is None or high is None:
        return None
    return low > high


def training_step_reading(capture: dict, host: Result | None = None) -> str:
    """One paragraph read off :func:`training_step_table`'s numbers: what recording the
    forward costs ours and SDPA, what the backward adds, and how the capture's whole step
    compares with the ``attention_train`` row of ``host`` (the ``host_overhead`` result,
    another run of the same step), where ``host`` has that row for the capture's GPU.
    Raises as :func:`training_step_table` does, and as :func:`targets_table` for ``host``."""
    payload = page_captures.capture_payload(capture, BREAKDOWN)
    parts = payload["us_per_call"]["attention_train"]
    spread = payload.get("spread", {}).get("attention_train", {})

    def added(prefix: str) -> tuple[float, float]:
        plain, recorded = parts[f"{prefix}forward, no autograd"], parts[f"{prefix}forward, recorded"]
        return recorded - plain, parts[f"{prefix}forward + backward"] - recorded

    ours_record, ours_backward = added("")
    sdpa_record, sdpa_backward = added("SDPA ")

    def added_to(us: float, whose: str) -> str:
        if us >= 0:
            return f"{us:.0f} µs per call to {whose}"
        return f"nothing measurable to {whose} (its recorded forward timed {-us:.0f} µs faster)"

    negative = [(whose, -us) for whose, us in (("ours", ours_record), ("SDPA's", sdpa_record)) if us < 0]
    if negative:
        # Recording cannot make a call cheaper: the difference is the noise between two parts.
        whose, us = negative[0]
        noise = (
            f"Recording cannot make a call cheaper, so {whose} {us:.0f} µs is noise, and it shows "
            "how far two parts of this table can drift apart: each part is timed on its own. "
            "Read recording's cost as tens of microseconds at most, and the backward's hundreds "
            "as the finding. "
        )
    else:
        noise = _spread_sentence(spread, payload.get("rounds"))
    text = (
        f"Recording the forward adds {added_to(ours_record, 'ours')} and "
        f"{added_to(sdpa_record, 'SDPA')}; the backward then adds {ours_backward:.0f} µs to "
        f"ours and {sdpa_backward:.0f} µs to SDPA. "
        + noise
        + _against_the_record(capture, parts, host)
        + "Our recorded call still launches from a plan, but takes a longer way: the "
        "public call computes its key, sees that autograd records it and runs a Python "
        "torch.autograd.Function (it appears as gpuperf_attentionBackward in a profile) whose "
        "forward calls the registered op's eager call (which computes the key a second time "
        "and replays the registered op's plan, whose kernel also writes the log-sum-exp: each "
        "query row's log of its softmax denominator, from which the backward recomputes the "
        "probabilities), then keeps q, k, v, the output and the log-sum-exp for the backward. "
        "Our backward is Python too: the Function's backward calls attention_backward, an op "
        "with plans of its own, which launches three kernels. SDPA records a C++ node: "
        "scaled_dot_product_attention picks a fused kernel (flash, memory-efficient or cuDNN "
        "attention), and that kernel's autograd node is C++ that PyTorch generates from "
        "derivatives.yaml."
    )
    return textwrap.fill(text, 88)


def _spread_sentence(spread: dict, rounds: int | None) -> str:
    """How far to trust the differences of :func:`training_step_reading`: where the capture
    kept each part's 20th and 80th percentiles, which differences clear them (:func:`_clear`);
    else a general caution."""
    steps = {
        "our": [("forward, no autograd", "forward, recorded"), ("forward, recorded", "forward + backward")],
        "SDPA's": [
            ("SDPA forward, no autograd", "SDPA forward, recorded"),
            ("SDPA forward, recorded", "SDPA forward + backward"),
        ],
    }
    what = ("recording", "backward")
    verdicts = {
        f"{whose} {what[i]}": _clear(spread, lower, upper)
        for whose, pairs in steps.items()
        for i, (lower, upper) in enumerate(pairs)
    }
    if None in verdicts.values():
        return (
            "Each part is timed on its own, and host times on a shared machine move by tens of "
            "percent between runs, so read the differences to the nearest tens of microseconds. "
        )
    turns = f" ({rounds} rounds)" if rounds else ""
    within = [name for name, clear in verdicts.items() if not clear]
    verdict = (
        "every difference here clears them"
        if not within
        else f"here {and_list(within)} {'does' if len(within) == 1 else 'do'} not, so read "
        f"{'its cost' if len(within) == 1 else 'their costs'} as no larger than the noise"
    )
    return (
        f"Each part is timed alone, the parts in turn one round each{turns}, so a slow stretch "
        "of the host falls on every part alike; still, a part's rounds spread (the p20–p80 "
        "columns), so a difference counts where the larger part's 20th percentile lies above "
        f"the smaller's 80th: {verdict}. "
    )


def _against_the_record(capture: dict, parts: dict, host: Result | None) -> str:
    """The sentence that sets the capture's whole step beside ``host``'s ``attention_train``
    row on the capture's GPU: two runs of the same step, never to be compared part by part;
    empty where ``host`` has no such row."""
    if host is None:
        return ""
    folder = page_captures.gpu_folder(capture)
    for gpu, times in _per_gpu(host, ("attention_train",)):
        if gpu.folder != folder or "attention_train" not in times:
            continue
        ours, theirs = times["attention_train"]
        step, sdpa_step = parts["forward + backward"], parts["SDPA forward + backward"]
        calls = HOST_OVERHEAD.host_calls("attention_train")
        return (
            f"This table is a run of its own, not the host_overhead record above: its forward + "
            f"backward, {step:.0f} µs ours and {sdpa_step:.0f} µs SDPA's ({step / sdpa_step:.2f}×), "
            f"is the record's attention_train step, {ours:.0f} and {theirs:.0f} µs "
            f"({ours / theirs:.2f}×), timed again with the same timer and {calls} calls a round, "
            "in another run. Compare the parts within this table, never with the record. "
        )
    return ""


def show_training_step(host: Result | None = None) -> page_captures.Shown:
    """Print every GPU's ``host_breakdown`` capture of the attention training step: the table
    (:func:`training_step_table`) and its reading (:func:`training_step_reading`, set beside
    ``host``, the ``host_overhead`` result the page shows, where given)."""
    return page_captures.show(
        BREAKDOWN,
        lambda capture: training_step_table(capture) + "\n\n" + training_step_reading(capture, host),
    )


def _ops(ops: list[str], ratios: dict[str, float]) -> str:
    return and_list(f"{op} ({ratios[op]:.2f}×)" for op in ops)


__all__ = [
    "BREAKDOWN",
    "CPU_SHORTFALL",
    "TRAINING_PARTS",
    "show_training_step",
    "targets_reading",
    "targets_table",
    "training_step_reading",
    "training_step_table",
]
