"""What the pages show: the measurement core's records drawn, tabulated and summarised.

A tutorial or guide imports what it shows from here, so that what a reader sees on
the page is the lesson: a kernel, a call, the arithmetic, and one-line calls that draw
a measurement. The plumbing behind those calls (loading records and captures, GPU
folders, provenance captions, MISSING and STALE notes, formatting) lives here.

* :mod:`~gpuperf.pages.report`: :func:`~gpuperf.pages.report.run_or_load` and
  :func:`~gpuperf.pages.report.show` (a benchmark's table and plot, every GPU side by
  side), and one headline per benchmark and GPU (:func:`~gpuperf.pages.report.headline`).
* :mod:`~gpuperf.pages.landing`: the landing page's table of what the tutorials found, one
  cell per benchmark and GPU, each read from and dated by one record.
* :mod:`~gpuperf.pages.announce`: what a docs build or a page run as a script says first:
  live or records, on which GPU, and each page's time from its records' wall times.
* :mod:`~gpuperf.pages.hardware`: the GPU a page describes and its measured ceilings
  (:func:`~gpuperf.pages.hardware.ceilings`: stream and copy bandwidths, matmul peaks,
  ridge points).
* :mod:`~gpuperf.pages.captures`: profiler tables, counters and generated code, each
  GPU's, with their provenance (:func:`gpuperf.pages.captures.show`).
* :mod:`~gpuperf.pages.breakdown`: where a layer's step spends its GPU time, part by part
  (the stacked bars of tutorials 07 and 09).
* :mod:`~gpuperf.pages.prose`: the paragraph that opens each page, written from the
  records by the page's topic module.
* :mod:`~gpuperf.pages.plotting` and :mod:`~gpuperf.pages.tables`: the house style.
* :mod:`~gpuperf.pages.roofline` and :mod:`~gpuperf.pages.roofline_plot`: every record
  placed on its GPU's measured roofline, and the charts of it (an overview and the
  compute-bound corner per GPU).
* :mod:`~gpuperf.pages.profiling` and :mod:`~gpuperf.pages.sweeps`: the profiling
  guide's captures and the tuning sweeps as tables and figures.

Each page has a topic module here, named after its subject, that holds what only
that page needs (its opening paragraph and the sentences it prints from the
records): :mod:`~gpuperf.pages.vector_add`, :mod:`~gpuperf.pages.softmax`,
:mod:`~gpuperf.pages.matmul`, :mod:`~gpuperf.pages.attention`,
:mod:`~gpuperf.pages.fp8`, :mod:`~gpuperf.pages.persistent`,
:mod:`~gpuperf.pages.llama`, :mod:`~gpuperf.pages.gluon`, :mod:`~gpuperf.pages.moe`,
:mod:`~gpuperf.pages.profiling`, :mod:`~gpuperf.pages.roofline_readings`,
:mod:`~gpuperf.pages.strategy`, :mod:`~gpuperf.pages.benchmarking`,
:mod:`~gpuperf.pages.recipes`, :mod:`~gpuperf.pages.execution_model` and
:mod:`~gpuperf.pages.debugging`. A new page helper
goes into its page's topic module; one that two pages share goes into one of the modules
above.

Nothing here measures: :mod:`gpuperf.bench` does
(:func:`~gpuperf.pages.report.run_or_load` calls its runner on a GPU).
"""

from gpuperf.pages.hardware import ceilings, page_gpu
from gpuperf.pages.report import Result, can_measure, load, run_or_load, show

__all__ = ["Result", "can_measure", "ceilings", "load", "page_gpu", "run_or_load", "show"]
