"""What the profiling guide's functions check they were handed: a capture of the name they
read, or a :class:`~gpuperf.pages.report.Result` of the benchmark they read."""

from __future__ import annotations

from gpuperf.pages.captures import capture_payload
from gpuperf.pages.report import Result

__all__ = ["capture_payload", "check_result"]


def check_result(result, benchmark) -> None:
    """Check that ``result`` is a :class:`~gpuperf.pages.report.Result` of ``benchmark``
    (a benchmark declaration of :mod:`gpuperf.bench.catalog`, compared by name).

    Raises:
        TypeError: ``result`` is not a :class:`~gpuperf.pages.report.Result`.
        ValueError: it is another benchmark's.
    """
    if not isinstance(result, Result):
        raise TypeError(f"expected a gpuperf.pages.Result, got {type(result).__name__}")
    if result.benchmark.name != benchmark.name:
        raise ValueError(f"expected the {benchmark.name!r} result, got {result.benchmark.name!r}")
