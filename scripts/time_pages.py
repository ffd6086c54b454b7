"""Time every page of the site the way ``nox -s docs`` runs them: one process, pages in
build order (tutorials, then guides), each executed as a script. Prints each page's
wall time and the wall time of each benchmark it measured live, and writes them as
JSON (``--json``) with, for each benchmark, where its time went per provider: the
checked first calls (compiling included, on a first run) and the timing itself
(:func:`provider_seconds`, from the rows of each live record); the rest of a benchmark's
time is its inputs, references and checks.

Run it on a GPU, with the caches cold for a first run and warm for a second::

    rm -rf ~/.cache/gpuperf                                  # first run: nothing cached
    PYTHONPATH=src python scripts/time_pages.py --json first.json
    PYTHONPATH=src python scripts/time_pages.py --json second.json

``--pages 03_matmul,01_profiling`` runs those pages alone. sphinx-gallery also renders
and writes HTML; this script times what a page runs, not that.
"""

from __future__ import annotations

import argparse
import json
import os
import runpy
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("tutorials", "guides")


def pages(only: list[str]) -> list[Path]:
    """The page scripts in build order, or those named in ``only`` (stems)."""
    found = [p for folder in FOLDERS for p in sorted((ROOT / folder).glob("[0-9][0-9]_*.py"))]
    if only:
        unknown = set(only) - {p.stem for p in found}
        if unknown:
            raise SystemExit(f"no page named {sorted(unknown)}; pages: {[p.stem for p in found]}")
        found = [p for p in found if p.stem in only]
    return found


def provider_seconds(record: dict) -> dict:
    """``{provider: {"first_call_s", "timing_s"}}``: the seconds a live record's rows spent in
    each provider's checked first calls (a compile, where nothing is cached) and in timing
    it, summed over its points (:func:`gpuperf.bench.runner.run` keeps them per row)."""
    split: dict = {}
    for row in record["rows"]:
        phases = split.setdefault(row["provider"], {"first_call_s": 0.0, "timing_s": 0.0})
        for phase in phases:
            phases[phase] = round(phases[phase] + (row.get(phase) or 0.0), 2)
    return split


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", default="", help="comma-separated page stems (default: all)")
    parser.add_argument("--json", type=Path, help="write the times here")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    from gpuperf.caches import use_compile_caches

    use_compile_caches()
    os.environ.setdefault("MPLBACKEND", "Agg")
    import matplotlib.pyplot as plt

    from gpuperf.pages import report

    results = []
    for page in pages([s for s in args.pages.split(",") if s]):
        before = set(report.LIVE.records)
        sys.argv = [str(page)]
        t0 = time.perf_counter()
        error = None
        try:
            with open(os.devnull, "w") as quiet:
                stdout, sys.stdout = sys.stdout, quiet
                try:
                    runpy.run_path(str(page), run_name="__main__")
                finally:
                    sys.stdout = stdout
        except Exception as err:  # a page that fails is reported, and the others still run
            error = f"{type(err).__name__}: {err}"
        wall = time.perf_counter() - t0
        plt.close("all")
        new = [b for b in report.LIVE.records if b not in before]
        measured = {b.name: report.LIVE.records[b].get("wall_s") for b in new}
        split = {b.name: provider_seconds(report.LIVE.records[b]) for b in new}
        results.append(
            {
                "page": f"{page.parent.name}/{page.name}",
                "wall_s": round(wall, 1),
                "benchmarks_wall_s": measured,
                "providers_s": split,
                "error": error,
            }
        )
        print(
            f"{page.parent.name}/{page.name:40s} {wall:7.1f} s  "
            + ", ".join(f"{k} {v}" for k, v in measured.items())
            + (f"  FAILED {error}" if error else ""),
            flush=True,
        )
        for benchmark, providers in split.items():
            first = sorted(providers.items(), key=lambda kv: -kv[1]["first_call_s"])
            print(
                f"    {benchmark}: first calls "
                + ", ".join(f"{p} {t['first_call_s']:.1f}" for p, t in first)
                + f"; timing {sum(t['timing_s'] for t in providers.values()):.1f} s",
                flush=True,
            )
        if args.json:
            args.json.write_text(json.dumps(results, indent=1))
    total = time.perf_counter() - start
    print(f"all pages: {total / 60:.1f} min", flush=True)
    if args.json:
        args.json.write_text(json.dumps({"total_s": round(total, 1), "pages": results}, indent=1))
    return 1 if any(r["error"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
