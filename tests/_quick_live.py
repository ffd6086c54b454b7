"""A page run as a live build on the reference GPU would run it, without a GPU: each
benchmark's "live" record is its committed record cut to the points a quick build
measures (:meth:`gpuperf.bench.catalog.Benchmark.sweep`). What the page says then rests
on those points alone; a lookup of a point a quick build does not measure fails.

Run as a script to see what a page prints both ways::

    PYTHONPATH=src TRITON_INTERPRET=1 python tests/_quick_live.py tutorials/04_fused_attention.py
"""

from __future__ import annotations

import contextlib
import io
import os
import runpy
import sys

from gpuperf import caches
from gpuperf.bench import records, runner
from gpuperf.pages import announce, report


def cut_record(benchmark, x_values, combos, providers) -> dict:
    """The reference GPU's committed record of ``benchmark`` with the rows at ``x_values``,
    ``combos`` and ``providers`` (keys) only: what a live run of those would have written."""
    record = records.read(records.record_path(benchmark.name, records.reference_gpu()))
    rows = [
        r for r in record["rows"] if r["x"] in x_values and r["axes"] in combos and r["provider"] in providers
    ]
    return {**record, "rows": rows}


@contextlib.contextmanager
def quick_live(setattr_):
    """Make :func:`gpuperf.pages.run_or_load` take the live path of a quick build on the
    reference GPU, each run answered by :func:`cut_record`. ``setattr_`` is
    ``monkeypatch.setattr`` (or a function that sets an attribute and undoes it later)."""
    name = records.read(records.record_path("vector_add", records.reference_gpu()))["provenance"]["gpu"]
    setattr_(announce, "current", lambda usable: announce.Build("live", name))
    setattr_(report, "LIVE", report.LiveRecords())
    setattr_(caches, "use_compile_caches", lambda: {})

    def run(benchmark, *, x_values=None, combos=None, ceilings=None, providers=None, log=print, step=None):
        keys = providers or tuple(p.key for p in benchmark.providers)
        return cut_record(benchmark, x_values or benchmark.x_values, combos or benchmark.combos(), keys)

    setattr_(runner, "run", run)
    yield


def run_page(path: str) -> str:
    """Run the page script ``path`` and return what it printed."""
    out = io.StringIO()
    argv = sys.argv
    sys.argv = [path]
    try:
        with contextlib.redirect_stdout(out):
            runpy.run_path(path, run_name="__main__")
    finally:
        sys.argv = argv
    return out.getvalue()


if __name__ == "__main__":
    os.environ.setdefault("MPLBACKEND", "Agg")
    os.environ.setdefault("GPUPERF_TABLES", "text")
    undo = []

    def setattr_(obj, name, value):
        undo.append((obj, name, getattr(obj, name, None)))
        setattr(obj, name, value)

    for page in sys.argv[1:]:
        os.environ["GPUPERF_BENCH"] = "records"
        before = run_page(page)
        os.environ["GPUPERF_BENCH"] = "live"
        with quick_live(setattr_):
            after = run_page(page)
        for obj, name, value in reversed(undo):
            setattr(obj, name, value)
        undo.clear()
        import difflib

        sys.stdout.writelines(
            difflib.unified_diff(before.splitlines(True), after.splitlines(True), page, "quick")
        )
