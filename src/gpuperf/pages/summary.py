"""One line per benchmark and GPU: what the provider under study achieved, from its record.

The headline is derived from what every benchmark declares, its baseline and
its ceiling, so a new benchmark gets one without any code here: the range of
the ratio to the baseline over every x and axis combination measured, and the
highest % of the ceiling with where it was reached, for example
``'1.01–1.83× the speed of torch.softmax; up to 98% of copy bandwidth (at 32768)'``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpuperf.pages.plotting import format_x
from gpuperf.pages.prose import span

if TYPE_CHECKING:
    from gpuperf.pages.report import Result


def headline(result: Result) -> str | None:
    """The headline of ``result``'s own record (one GPU), or None when it has no
    record or no successful row of the provider under study. Axis values are named
    where the highest % of the ceiling was reached only for axes with several values.

    Raises:
        TypeError: ``result`` is not a :class:`~gpuperf.pages.report.Result`.
    """
    if not all(hasattr(result, a) for a in ("record", "benchmark", "ratios", "fraction_of_ceiling")):
        raise TypeError(f"result must be a gpuperf.pages.Result, got {type(result).__name__}")
    record = result.record
    if record is None:
        return None
    combos = result.benchmark.combos()
    ratios = [v for combo in combos for v in result.ratios(**combo).values()]
    fractions = [(v, x, c) for c in combos for x, v in result.fraction_of_ceiling(**c).items()]
    axes = result.benchmark.axes
    labels = {r["provider"]: r["label"] for r in record["rows"]}
    base = labels.get(record["baseline"], record["baseline"])
    parts = []
    if ratios and record["metric"] == "GiB":
        # ratios are baseline memory / provider memory: turn them into the provider's share.
        parts.append(f"{span([1 / r for r in ratios])}× the peak memory of {base}")
    elif ratios:
        host = " on the host" if record["metric"] == "us/call" else ""
        parts.append(f"{span(ratios)}× the speed of {base}{host}")
    if fractions:
        best, x, combo = max(fractions, key=lambda item: item[0])
        subject = result.benchmark.subject.key
        key = next(
            r["ceiling"] for r in record["rows"] if (r["x"], r["axes"], r["provider"]) == (x, combo, subject)
        )
        at = ", ".join([format_x(x), *(f"{k}={v}" for k, v in combo.items() if len(dict(axes)[k]) > 1)])
        parts.append(f"up to {100 * best:.0f}% of {record['ceilings'][key]['label']} (at {at})")
    return "; ".join(parts) or None


def last_measured(results: list[Result]) -> tuple[str, str] | None:
    """``(date, commit)`` of the most recent record among ``results`` (dates as
    ``YYYY-MM-DD``), or None when none has a record."""
    dated = [r.record["provenance"] for r in results if r.record is not None]
    if not dated:
        return None
    latest = max(dated, key=lambda p: p["date"])
    return latest["date"][:10], latest["gpuperf_commit"]
