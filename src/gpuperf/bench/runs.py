"""What a ``python -m gpuperf.bench`` run will measure, how long it took last time, its progress
while it runs, and how a fresh run compares with the committed records.

* :func:`stale`: the benchmarks whose record on a GPU is missing, malformed or stale.
* :func:`describe`: what the run will measure, one line per benchmark with its points and last wall time
  (:func:`last_wall_s`, :func:`took`, :func:`about`, which the pages' announcement reads too).
* :func:`progress`: a progress bar over every point of the run, with an ETA.
* :func:`compare`: each provider's ratio to the baseline in a fresh record next to the
  committed one's, and the regressions beyond the committed spread.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

from gpuperf.bench import captures, records
from gpuperf.bench.catalog import Benchmark


def committed(benchmark: Benchmark, gpu: str, root=None) -> dict | None:
    """The committed record of ``benchmark`` on the GPU folder ``gpu``, or None when there is
    none or it is malformed."""
    return _read(benchmark, gpu, root)[0]


def why_stale(benchmark: Benchmark, gpu: str, root=None) -> list[str]:
    """Why the record of ``benchmark`` on ``gpu`` must be measured again (empty: it is current)."""
    return _read(benchmark, gpu, root)[1]


def _read(benchmark: Benchmark, gpu: str, root=None) -> tuple[dict | None, list[str]]:
    """The committed record of ``benchmark`` on ``gpu`` (None when missing or malformed) and
    why it must be measured again."""
    path = records.record_path(benchmark.name, gpu, root)
    if not path.is_file():
        return None, ["no record"]
    try:
        record = records.read(path)
    except ValueError as err:
        return None, [str(err)]
    return record, records.staleness(record, benchmark)


def stale(benchmarks, gpu: str, root=None) -> list[Benchmark]:
    """Those of ``benchmarks`` whose record on the GPU folder ``gpu`` is missing or stale."""
    return [b for b in benchmarks if why_stale(b, gpu, root)]


def points(benchmark: Benchmark, quick: bool = False) -> int:
    """Provider measurements in one run of ``benchmark``: combinations × x values × providers,
    of its whole sweep or, with ``quick``, of its quick part (:meth:`Benchmark.sweep`,
    :meth:`Benchmark.measured_providers`)."""
    xs, combos = benchmark.sweep(quick)
    return len(combos) * len(xs) * len(benchmark.measured_providers(quick))


def expected_wall_s(benchmark: Benchmark, gpu: str, root=None, quick: bool = False) -> float | None:
    """Seconds a run of ``benchmark`` on the GPU folder ``gpu`` should take: the last
    measurement's :func:`last_wall_s`, scaled by the share of its points that a quick run
    measures (with ``quick``); None where the wall time is not recorded."""
    wall = last_wall_s(benchmark, gpu, root)
    return None if wall is None else wall * points(benchmark, quick) / points(benchmark)


def last_wall_s(benchmark: Benchmark, gpu: str, root=None) -> float | None:
    """Seconds the last measurement of ``benchmark`` on the GPU folder ``gpu`` took, as its
    record stores it (``wall_s``); None when there is no record, it is malformed, or it
    did not record its wall time (records older than schema 3 did not)."""
    return _wall(committed(benchmark, gpu, root))


def _wall(record: dict | None) -> float | None:
    wall = record.get("wall_s") if record else None
    return float(wall) if wall else None


def took(wall_s: float | None) -> str:
    """``'took 1.5 min last time'``, or ``'time not recorded'`` for None: never a guess."""
    return f"took {wall_s / 60:.1f} min last time" if wall_s else "time not recorded"


def about(walls) -> str:
    """The sum of the recorded wall times among ``walls`` (seconds, None where not recorded):
    ``'about 12.0 min for the 5 whose last wall time is recorded'``, or
    ``'no wall time recorded'``."""
    known = [w for w in walls if w]
    if not known:
        return "no wall time recorded"
    return f"about {sum(known) / 60:.1f} min for the {len(known)} whose last wall time is recorded"


def describe(benchmarks, gpu: str, root=None) -> str:
    """The plan as text: each benchmark with its points, why it is measured (when its record
    on ``gpu`` is missing or stale) and how long its last measurement took."""
    if not benchmarks:
        return f"nothing to measure on {gpu}"
    lines = [f"{len(benchmarks)} benchmarks to measure on {gpu}:"]
    walls = []
    for b in benchmarks:
        record, why = _read(b, gpu, root)
        walls.append(_wall(record))
        reason = f"; {why[0]}" if why else ""
        lines.append(f"  {b.name:<24} {points(b):>5} points, {took(walls[-1])}{reason}")
    lines.append(about(walls))
    return "\n".join(lines)


class _Bar:
    """A tqdm bar over points; :meth:`step` moves it and names the point being measured."""

    def __init__(self, total: int, file=None):
        from tqdm import tqdm

        file = file or sys.stderr
        self._tqdm = tqdm(total=total, unit="pt", file=file, dynamic_ncols=True, smoothing=0.05)
        self._started = False

    def step(self, what: str) -> None:
        if self._started:
            self._tqdm.update(1)
        self._started = True
        self._tqdm.set_postfix_str(what, refresh=True)

    def write_line(self, line: str) -> None:
        self._tqdm.write(line, file=sys.stdout)

    def close(self) -> None:
        if self._started:
            self._tqdm.update(1)
        self._tqdm.close()


@contextlib.contextmanager
def progress(benchmarks, gpu: str, root=None, *, file=None, quick: bool = False) -> Iterator[_Bar]:
    """A progress bar over every provider measurement of ``benchmarks`` (tqdm, on ``file``,
    default stderr), of their quick part with ``quick``: the benchmark, the point and the
    provider being measured, the points done and an ETA."""
    bar = _Bar(sum(points(b, quick) for b in benchmarks), file)
    try:
        yield bar
    finally:
        bar.close()


def _cost(benchmark: Benchmark, row: dict) -> tuple[float, float, float]:
    """What a row costs, low to high: time (ms, p20, p80), or peak memory (GiB, no spread)."""
    if benchmark.metric == "GiB":
        return row["value"], row["value"], row["value"]
    return row["ms"], row["ms_p20"], row["ms_p80"]


def _ours(benchmark: Benchmark, key: str) -> bool:
    """Whether the provider ``key`` is the package's own code (the one under study or one of its
    variants, ``triton_graph``, ``gluon_persistent``...), which the regression gate watches."""
    subject = benchmark.subject.key
    return key == subject or key.startswith(subject + "_")


#: How far below the committed range a ratio must fall, at least, to be a regression: one
#: run's p20-p80 spread of a long GPU-bound kernel is under 1%, narrower than the drift
#: between two runs of unchanged code (on the H100, attention_decode at 8192 tokens and
#: batch 64 read 1.00x (0.99-1.00) against a committed 1.01x (1.00-1.01)).
REGRESSION_FLOOR = 0.02


def compare(benchmark: Benchmark, old: dict | None, new: dict) -> tuple[list[str], list[str]]:
    """Each provider's ratio to the baseline (baseline cost / provider cost: above 1 is faster)
    in the fresh record ``new`` next to the committed record ``old``, as lines of text, and
    the regressions: points where one of the package's providers now has a ratio whose whole
    p20-p80 range lies below the committed record's (at its best, baseline p80 / provider
    p20, it is still below what the committed spread allows at its worst, baseline p20 /
    provider p80), and by more than :data:`REGRESSION_FLOOR`. Comparing medians alone
    flagged unchanged kernels: one run's spread is narrower than the spread between runs
    (on the H100, vector_add at 65536 elements read 0.89x where the committed range was
    0.93-1.10x, with the code unchanged).

    Returns:
        ``(lines, regressions)``, both lists of strings.
    """
    base = benchmark.baseline

    def ok_rows(record):
        return {
            (r["x"], tuple(sorted(r["axes"].items())), r["provider"]): r
            for r in (record or {"rows": []})["rows"]
            if r["status"] == "ok"
        }

    def spread(base_row, row) -> tuple[float, float, float]:
        """(worst, median, best) ratio of ``row`` to ``base_row`` over their p20-p80 ranges."""
        b, p = _cost(benchmark, base_row), _cost(benchmark, row)
        return b[1] / p[2], b[0] / p[0], b[2] / p[1]

    before, now = ok_rows(old), ok_rows(new)
    lines = [f"{benchmark.name}: provider ratio to {base} now and committed, each with its p20-p80 range"]
    regressions = []
    for (x, axes, key), row in now.items():
        if key == base or (x, axes, base) not in now:
            continue
        where = " ".join([f"{benchmark.x_name}={x}", *(f"{k}={v}" for k, v in axes)])
        low, ratio, high = spread(now[(x, axes, base)], row)
        now_text = f"{ratio:6.2f}x ({low:.2f}-{high:.2f})"
        then, then_base = before.get((x, axes, key)), before.get((x, axes, base))
        if then is None or then_base is None:
            lines.append(f"  {where:<40} {key:>18} {now_text}   (no committed point)")
            continue
        old_low, old_mid, old_high = spread(then_base, then)
        worse = _ours(benchmark, key) and high < old_low * (1 - REGRESSION_FLOOR)
        flag = "  REGRESSION" if worse else ""
        committed = f"{old_mid:.2f}x ({old_low:.2f}-{old_high:.2f})"
        lines.append(f"  {where:<40} {key:>18} {now_text}   committed {committed}{flag}")
        if worse:
            regressions.append(f"{benchmark.name} {where} {key}: {now_text.strip()}, committed {committed}")
    return lines, regressions


def stale_captures(gpu: str, root=None) -> list[tuple[str, str]]:
    """``(name, command)`` of each capture on the GPU folder ``gpu`` whose code changed, with
    the command that takes it again (:data:`gpuperf.bench.captures.COMMANDS`)."""
    found = []
    folder = (root or records.measurements_dir()) / gpu / "captures"
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else ():
        try:
            capture = captures.load(path.stem, gpu, root)
        except ValueError:
            found.append((path.stem, captures.command(path.stem)))
            continue
        if captures.staleness(capture):
            found.append((path.stem, captures.command(path.stem)))
    return found
