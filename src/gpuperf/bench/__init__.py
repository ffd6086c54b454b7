"""The measurement core: one way to time, one set of formulas, one record format, one plot style.

* :mod:`~gpuperf.bench.timing`: GPU time (``triton.testing.do_bench`` quantiles) and host time per call.
* :mod:`~gpuperf.bench.metrics`: bytes and FLOPs per op; GB/s, TFLOP/s and µs per call.
* :mod:`~gpuperf.bench.hardware`: ceilings measured on the GPU at hand.
* :mod:`~gpuperf.bench.catalog`: :class:`~gpuperf.bench.catalog.Benchmark` and every benchmark, declared once.
* :mod:`~gpuperf.bench.runner`: check, then time, every provider.
* :mod:`~gpuperf.bench.records`: committed JSON records and their provenance.
* :mod:`~gpuperf.bench.captures`: other output of a GPU run (profiler tables, counters, generated code),
  kept with the same provenance.
* :mod:`~gpuperf.bench.plotting`, :mod:`~gpuperf.bench.tables` and :mod:`~gpuperf.bench.report`:
  what a page shows, every GPU with records side by side.
* :mod:`~gpuperf.bench.summary`: one headline per benchmark and GPU.
* :mod:`~gpuperf.bench.roofline` and :mod:`~gpuperf.bench.roofline_plot`: every record of a GPU
  placed against its measured roofs, and the chart of them.

Run ``python -m gpuperf.bench`` (or ``nox -s bench``) on a GPU machine to refresh
every committed record.
"""

from gpuperf.bench.report import Result, load, run_or_load

__all__ = ["Result", "load", "run_or_load"]
