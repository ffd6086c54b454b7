"""What a docs build, or a tutorial run as a script, says before it starts: whether the
pages measure live or load the committed records, on which GPU, and how long each page's
measuring took the last time, from the wall time each record stores about its own run
(``wall_s``; "time not recorded" where a record has none, never a guess).

* :func:`benchmarks_of`: the benchmarks a page measures, read from its source: the
  benchmarks it passes to :func:`~gpuperf.pages.report.show` and :func:`~gpuperf.pages.report.run_or_load`.
* :func:`current`: live or records, as ``GPUPERF_BENCH`` and the GPU present decide.
* :func:`describe` and :func:`describe_page`: what a build will do, page by page, and
  one page.
* :func:`announce_site` and :func:`announce_page`: print them; ``docs/conf.py`` calls
  the first before the build, :func:`~gpuperf.pages.report.run_or_load` the second before a
  page's first benchmark (a page run as a script announces itself there).

The per-benchmark wording and sums are :mod:`gpuperf.bench.runs`'s, the same as
``python -m gpuperf.bench --dry-run`` prints.
"""

from __future__ import annotations

import ast
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from gpuperf.bench import catalog, records, runs
from gpuperf.bench.catalog import Benchmark

#: ``GPUPERF_BENCH=records`` renders committed records even where a GPU is present;
#: ``live`` insists on measuring; ``auto`` (default) measures when it can. Both measure the
#: quick part of a long sweep (:attr:`~gpuperf.bench.catalog.benchmark.Benchmark.quick`: the points
#: the text reads) and draw the committed sweep beside it; ``full`` measures every sweep
#: whole.
MODE_VAR = "GPUPERF_BENCH"
MODES = ("auto", "live", "full", "records")

#: The functions of :mod:`gpuperf.pages` that measure a benchmark live where they can.
MEASURING = ("show", "run_or_load")
_PAGES_MODULES = ("gpuperf.pages", "gpuperf.pages.report")
_CATALOG = "gpuperf.bench.catalog"

_NO_GPU = "no CUDA GPU is usable here (or TRITON_INTERPRET=1)"


@dataclass(frozen=True)
class Build:
    """What the pages of this run do.

    Attributes:
        setting: ``GPUPERF_BENCH``'s value: ``"auto"`` (unset), ``"live"``, ``"full"`` or
            ``"records"``.
        gpu: the CUDA GPU present and usable (``'NVIDIA H100 80GB HBM3'``), or None.
    """

    setting: str = "auto"
    gpu: str | None = None

    @property
    def live(self) -> bool:
        """Whether the pages measure: ``live`` or ``full``, or ``auto`` with a usable GPU."""
        return self.setting in ("live", "full") or (self.setting == "auto" and self.gpu is not None)

    @property
    def quick(self) -> bool:
        """Whether a live build measures only the quick part of the long sweeps (all but ``full``)."""
        return self.live and self.setting != "full"


def setting() -> str:
    """``GPUPERF_BENCH``'s value, ``"auto"`` when unset.

    Raises:
        ValueError: it is set to something else than auto, live, full or records.
    """
    value = os.environ.get(MODE_VAR, "auto")
    if value not in MODES:
        raise ValueError(f"{MODE_VAR} must be auto, live, full or records, got {value!r}")
    return value


def current(gpu_usable: bool) -> Build:
    """The :class:`Build` of this process: :func:`setting`, and the GPU's name when
    ``gpu_usable`` (:func:`gpuperf.pages.report.can_measure`)."""
    mode = setting()
    if not gpu_usable:
        return Build(mode, None)
    import torch

    return Build(mode, torch.cuda.get_device_name())


# Which benchmarks a page measures ------------------------------------------------------


def benchmarks_of(script) -> list[Benchmark]:
    """The benchmarks the page script ``script`` (a path) passes to :func:`~gpuperf.pages.report.show`
    or :func:`~gpuperf.pages.report.run_or_load`, in the order of the source, each once.

    The source is parsed, not run. A benchmark is recognised by its name in
    :mod:`gpuperf.bench.catalog`, imported (``from gpuperf.bench.catalog import MATMUL``)
    or reached through the module (``cat.MATMUL``).

    Raises:
        ValueError: a call passes something else than a catalog benchmark by name (the
            message gives the file, line and expression), or names one the catalog lacks.
        OSError, SyntaxError: the file cannot be read or parsed.
    """
    path = Path(script)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names, modules, calls, holders = {}, set(), set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0:
            for alias in node.names:
                local = alias.asname or alias.name
                if node.module == _CATALOG:
                    names[local] = alias.name
                elif f"{node.module}.{alias.name}" == _CATALOG:
                    modules.add(local)
                elif node.module in _PAGES_MODULES and alias.name in MEASURING:
                    calls.add(local)
                elif f"{node.module}.{alias.name}" in _PAGES_MODULES:
                    holders.add(local)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname and alias.name == _CATALOG:
                    modules.add(alias.asname)
                elif alias.asname and alias.name in _PAGES_MODULES:
                    holders.add(alias.asname)
    found: list[tuple[int, int, Benchmark]] = []  # sorted below: ast.walk is breadth-first
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and _measures(node.func, calls, holders)):
            continue
        args = node.args[:1] or [k.value for k in node.keywords if k.arg == "benchmark"]
        arg = args[0] if args else None
        if isinstance(arg, ast.Name) and arg.id in names:
            name = names[arg.id]
        elif isinstance(arg, ast.Attribute) and isinstance(arg.value, ast.Name) and arg.value.id in modules:
            name = arg.attr
        else:
            shown = ast.unparse(arg) if arg is not None else "nothing"
            raise ValueError(
                f"{path}:{node.lineno}: {ast.unparse(node.func)}() is passed {shown}, not a "
                f"benchmark of {_CATALOG} by name: the announcement cannot tell what this page measures"
            )
        benchmark = getattr(catalog, name, None)
        if not isinstance(benchmark, Benchmark):
            raise ValueError(f"{path}:{node.lineno}: {_CATALOG} has no benchmark named {name!r}")
        found.append((node.lineno, node.col_offset, benchmark))
    ordered = [b for *_, b in sorted(found, key=lambda t: t[:2])]
    return list({b.name: b for b in ordered}.values())


def _measures(func: ast.expr, calls: set[str], holders: set[str]) -> bool:
    if isinstance(func, ast.Name):
        return func.id in calls
    return (
        isinstance(func, ast.Attribute)
        and func.attr in MEASURING
        and isinstance(func.value, ast.Name)
        and func.value.id in holders
    )


# The plan as text ----------------------------------------------------------------------


def _estimate_gpu(build: Build, root=None) -> str:
    """The GPU folder whose records give the wall times: the GPU present when it has records
    (a reader's own ``nox -s bench`` run), else the reference GPU's."""
    if build.gpu is not None:
        here = (root or records.measurements_dir()) / records.gpu_slug(build.gpu)
        if any(p.name != "hardware.json" for p in here.glob("*.json")):
            return here.name
    return records.reference_gpu()


def _page_name(script) -> str:
    path = Path(script)
    return f"{path.parent.name}/{path.name}"


def _page_minutes(walls) -> str:
    """``'about 4.6 min'`` over the recorded wall times of one page, and which are not
    recorded; ``'time not recorded'`` when none is."""
    known = [w for w in walls.values() if w]
    missing = [name for name, w in walls.items() if not w]
    if not known:
        return "time not recorded"
    text = f"about {sum(known) / 60:.1f} min"
    return text + (f" (time not recorded for {', '.join(missing)})" if missing else "")


def headline(build: Build, page: str | None = None) -> str:
    """One sentence: whether the pages (or the one page named ``page``) measure live or load
    records, on which GPU, and why."""
    who, measure, load = (f"{page}", "measures", "loads") if page else ("the pages", "measure", "load")
    reference = records.reference_gpu()
    if build.live and build.gpu:
        return f"{who} {measure} live on {build.gpu} ({MODE_VAR}={build.setting})"
    if build.live:
        return f"{MODE_VAR}=live, but {_NO_GPU}: the first benchmark {who} {measure} will fail"
    if build.gpu:
        return (
            f"{who} {load} the committed records of {reference} ({MODE_VAR}=records): "
            f"nothing is measured on {build.gpu}"
        )
    return (
        f"{who} {load} the committed records of {reference}: {_NO_GPU}, so the kernels "
        "run in Triton's interpreter and nothing is measured"
    )


def _source(build: Build, gpu: str) -> str:
    """Where the wall times come from, and a warning when that is another GPU."""
    if build.gpu and records.gpu_slug(build.gpu) != gpu:
        return f"on {gpu}, another GPU than this one: a rough guide"
    return f"on {gpu}"


def describe_page(script, build: Build, root=None) -> str:
    """The plan of one page (``script``, a path): its :func:`headline`, then, when it
    measures live, each benchmark with its last wall time and their sum.

    Raises:
        ValueError, OSError, SyntaxError: as :func:`benchmarks_of`.
    """
    benchmarks = benchmarks_of(script)
    name = _page_name(script)
    if not build.live or not build.gpu:
        listed = ", ".join(b.name for b in benchmarks) or "no benchmark"
        return f"{headline(build, name)}; it shows {listed}."
    gpu = _estimate_gpu(build, root)
    walls = {b.name: runs.expected_wall_s(b, gpu, root, build.quick) for b in benchmarks}
    lines = [f"{headline(build, name)}; {MODE_VAR}=records loads the committed records instead."]
    for b in benchmarks:
        lines.append(f"  {b.name:<24} {_points(b, build.quick)}, {_expected(walls[b.name])}")
    lines.append(f"  {runs.about(walls.values())} ({_source(build, gpu)})")
    return "\n".join(lines)


def _points(benchmark: Benchmark, quick: bool) -> str:
    """``'336 points'``, or ``'24 of 336 points (quick)'`` where a quick build measures part."""
    every, measured = runs.points(benchmark), runs.points(benchmark, quick)
    return f"{every:>5} points" if measured == every else f"{measured:>5} of {every} points (quick)"


def _expected(wall_s: float | None) -> str:
    return f"about {wall_s / 60:.1f} min" if wall_s else "time not recorded"


def describe(scripts, build: Build, root=None, caches: dict | None = None) -> str:
    """The plan of a build over the page scripts ``scripts`` (paths, in build order): the
    :func:`headline`, how to choose the other way and, with a usable GPU, each page's
    benchmarks with how long measuring them took last time (the sum of their records'
    ``wall_s`` on this GPU, else on the reference GPU); a benchmark an earlier page shows
    counts there only, since one build measures it once. ``caches``
    (:func:`gpuperf.caches.use_compile_caches`' answer) names where compiled work is kept.

    Raises:
        ValueError, OSError, SyntaxError: as :func:`benchmarks_of`, for any page.
    """
    lines = [f"gpuperf: {headline(build)}."]
    if build.gpu is None:
        return lines[0]
    gpu = _estimate_gpu(build, root)
    pages = [(_page_name(s), benchmarks_of(s)) for s in scripts]
    # One process builds every page and measures a benchmark once (pages.report.LIVE):
    # only the first page that shows it pays for it.
    seen: set[str] = set()
    walls = []
    for _, benchmarks in pages:
        new = [b for b in benchmarks if b.name not in seen]
        seen.update(b.name for b in new)
        walls.append({b.name: runs.expected_wall_s(b, gpu, root, build.quick) for b in new})
    every = [w for page in walls for w in page.values()]
    total = f"{len(every)} measurements on {len(pages)} pages: {runs.about(every)}"
    if not build.live:
        lines.append(
            f"Unset {MODE_VAR} (or set it to live) to measure live on {build.gpu}: "
            f"{total} ({_source(build, gpu)})."
        )
        return "\n".join(lines)
    lines.append(
        f"{MODE_VAR}=records loads the committed records instead: a quick build on a GPU "
        f"(`{MODE_VAR}=records nox -s docs`)."
    )
    if build.quick:
        lines.append(
            "Long sweeps are measured at the points the pages' text reads, beside the committed "
            f"sweep; {MODE_VAR}=full measures every sweep whole."
        )
    lines.append(
        f"Measuring each page should take ({_source(build, gpu)}; each record's wall_s"
        + (", scaled to the points measured):" if build.quick else "):")
    )
    width = max((len(name) for name, _ in pages), default=0)
    for (name, benchmarks), page in zip(pages, walls, strict=True):
        listed = ", ".join(
            b.name if b.name in page else f"{b.name} (measured on an earlier page)" for b in benchmarks
        )
        lines.append(f"  {name:<{width}}  {_page_minutes(page) if page else 'nothing to measure'}")
        if listed:
            lines.append(f"  {'':<{width}}    {listed}")
    lines.append(
        f"In all, {total}; the rest of each page (its checks, the ceilings, the figures) comes on top."
    )
    if caches:
        folders = ", ".join(f"{k}={v}" for k, v in caches.items() if k.endswith("_DIR"))
        lines.append(f"Compiled kernels and max-autotune choices are kept between runs: {folders}.")
    return "\n".join(lines)


# Printing it once ----------------------------------------------------------------------


@dataclass
class _Shown:
    site: bool = False
    pages: set = field(default_factory=set)


_SHOWN = _Shown()


def announce_site(scripts, build: Build, root=None, caches: dict | None = None, file=None) -> str:
    """Print :func:`describe` (on ``file``, default stdout) and return it. The pages then
    add their own plan only when they measure live (:func:`announce_page`)."""
    text = describe(scripts, build, root, caches)
    print(text, file=file or sys.stdout, flush=True)
    _SHOWN.site = True
    return text


def announce_page(script, build: Build, root=None, file=None) -> bool:
    """Print :func:`describe_page` of ``script`` (a path; the script being run) once per
    script, on ``file`` (default: the process's own stderr, ``sys.__stderr__``, which
    sphinx-gallery does not put on the page). After :func:`announce_site`, a page that
    loads records says nothing more. Quiet, and False, when ``script`` is not a page: a
    file that does not parse or passes :func:`~gpuperf.pages.report.show` no catalog benchmark
    (the test runner, a reader's own script).

    Returns:
        Whether it printed.
    """
    key = str(Path(script).resolve())
    if key in _SHOWN.pages or (_SHOWN.site and not build.live):
        return False
    _SHOWN.pages.add(key)
    try:
        if not benchmarks_of(script):
            return False
        text = describe_page(script, build, root)
    except (OSError, SyntaxError, ValueError):
        return False
    # After the site plan, sphinx's progress line is on screen without its newline.
    print(("\n" if _SHOWN.site else "") + text, file=file or sys.__stderr__ or sys.stderr, flush=True)
    return True
