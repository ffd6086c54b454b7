"""What the profiling guide's functions check they were handed: a capture of the name they
read, or a :class:`~gpuperf.pages.report.Result` of the benchmark they read."""

from __future__ import annotations

from gpuperf.pages.report import Result


def capture_payload(capture, name: str) -> dict:
    """The payload of ``capture``, checked to be a capture named ``name``.

    Raises:
        TypeError: ``capture`` is not a dict.
        ValueError: it is a capture of another name, or has no payload.
    """
    if not isinstance(capture, dict):
        raise TypeError(f"capture must be a dict (a loaded capture), got {type(capture).__name__}")
    if capture.get("name") != name:
        raise ValueError(f"expected the capture {name!r}, got {capture.get('name')!r}")
    if not isinstance(capture.get("payload"), dict):
        raise ValueError(f"the capture {name!r} has no payload")
    return capture["payload"]


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
