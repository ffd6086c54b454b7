"""The measurement core: one way to time, one set of formulas, one record format.

* :mod:`~gpuperf.bench.timing`: GPU time (``triton.testing.do_bench`` quantiles) and host time per call.
* :mod:`~gpuperf.bench.metrics`: bytes and FLOPs per op; GB/s, TFLOP/s and µs per call.
* :mod:`~gpuperf.bench.hardware`: ceilings measured on the GPU at hand, datasheet peaks beside them.
* :mod:`~gpuperf.bench.catalog`: :class:`~gpuperf.bench.catalog.benchmark.Benchmark` and every benchmark,
  declared once, by family.
* :mod:`~gpuperf.bench.runner`: check, then time, every provider.
* :mod:`~gpuperf.bench.records`: committed JSON records and their provenance.
* :mod:`~gpuperf.bench.captures`: other output of a GPU run (profiler tables, counters, generated code),
  kept with the same provenance.
* :mod:`~gpuperf.bench.tuning`: the autotuning sweeps whose winners the kernels read.
* :mod:`~gpuperf.bench.strategy`: the optimization-strategy guide's measurements that are not
  declared benchmarks (``torch.compile``'s modes, kernels per call, Inductor's code).
* :mod:`~gpuperf.bench.debugging`: the debugging guide's demo kernels, each run in a process
  of its own with the environment debugging needs, and the trimming of what they print.

What a page shows of these (plots, tables, headlines, the roofline chart) lives in
:mod:`gpuperf.pages`. Run ``python -m gpuperf.bench`` (or ``nox -s bench``) on a GPU
machine to refresh every committed record.
"""
