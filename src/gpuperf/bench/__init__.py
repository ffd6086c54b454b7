"""The measurement core: one way to time, one set of formulas, one record format, one plot style.

* :mod:`~gpuperf.bench.timing`: ``triton.testing.do_bench`` quantiles.
* :mod:`~gpuperf.bench.metrics`: bytes and FLOPs per op; GB/s and TFLOP/s.
* :mod:`~gpuperf.bench.hardware`: ceilings measured on the GPU at hand.
* :mod:`~gpuperf.bench.spec` and :mod:`~gpuperf.bench.catalog`: benchmarks declared once.
* :mod:`~gpuperf.bench.runner`: check, then time, every provider.
* :mod:`~gpuperf.bench.records` and :mod:`~gpuperf.bench.provenance`: committed JSON records.
* :mod:`~gpuperf.bench.plotting` and :mod:`~gpuperf.bench.report`: what a page shows.

Run ``python -m gpuperf.bench`` (or ``nox -s bench``) on a GPU machine to refresh
every committed record.
"""

from gpuperf.bench.report import Result, load, run_or_load

__all__ = ["Result", "load", "run_or_load"]
