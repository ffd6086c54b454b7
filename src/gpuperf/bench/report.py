"""What a tutorial shows for a benchmark: live numbers on a GPU, committed ones elsewhere."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from gpuperf._runtime import has_cuda, is_interpreter
from gpuperf.bench import records
from gpuperf.bench.catalog import Benchmark
from gpuperf.bench.metrics import LOWER_IS_BETTER
from gpuperf.bench.plotting import combos, format_combo, format_x, plot_missing, plot_record, x_order
from gpuperf.bench.records import REPO_ROOT

#: ``GPUPERF_BENCH=records`` renders committed records even where a GPU is present;
#: ``live`` insists on measuring; ``auto`` (default) measures when it can.
MODE_VAR = "GPUPERF_BENCH"


@dataclass
class Result:
    """A benchmark's numbers as a page shows them.

    The lookups take the axis combination by keyword (``dtype="bfloat16"``);
    an axis with one value may be left out, an axis with several may not.

    Attributes:
        benchmark: the declaration.
        record: the record, or None when there is none to show.
        source: ``"live"``, ``"committed"`` or ``"missing"``.
        notes: what the reader must know (a stale or missing record).
    """

    benchmark: Benchmark
    record: dict | None
    source: str
    notes: list[str] = field(default_factory=list)

    def _combo(self, axes: dict) -> dict:
        """The full axis combination that ``axes`` picks; ``ValueError`` naming what is wrong."""
        declared = dict(self.benchmark.axes)
        unknown = [name for name in axes if name not in declared]
        if unknown:
            raise ValueError(f"{self.benchmark.name} has no axis {unknown[0]!r}; its axes: {list(declared)}")
        combo = {}
        for name, values in declared.items():
            if name in axes:
                if axes[name] not in values:
                    raise ValueError(f"axis {name!r} must be one of {list(values)}, got {axes[name]!r}")
                combo[name] = axes[name]
            elif len(values) == 1:
                combo[name] = values[0]
            else:
                raise ValueError(
                    f"{self.benchmark.name} has several values of axis {name!r} ({list(values)}): "
                    f"pass {name}=... to pick one"
                )
        return combo

    def _rows(self, provider: str, combo: dict) -> dict:
        if self.record is None:
            return {}
        return {
            r["x"]: r
            for r in self.record["rows"]
            if r["provider"] == provider and r["axes"] == combo and r["status"] == "ok"
        }

    def values(self, provider: str | None = None, **axes) -> dict:
        """``{x: metric value}`` for one provider's successful rows (default: the one under study)."""
        rows = self._rows(provider or self.benchmark.subject.key, self._combo(axes))
        return {x: r["value"] for x, r in rows.items()}

    def ratios(self, provider: str | None = None, **axes) -> dict:
        """``{x: baseline time / provider time}``: above 1 means the provider is faster,
        whatever the metric (``us/call`` included); for peak memory (``GiB``),
        ``baseline memory / provider memory``: above 1 means the provider needs less."""
        combo = self._combo(axes)
        mine = self._rows(provider or self.benchmark.subject.key, combo)
        base = self._rows(self.benchmark.baseline, combo)
        cost = "value" if self.benchmark.metric == "GiB" else "ms"
        return {x: base[x][cost] / r[cost] for x, r in mine.items() if x in base and r[cost]}

    def fraction_of_ceiling(self, provider: str | None = None, **axes) -> dict:
        """``{x: value / measured ceiling}`` for a provider (default: the one under study);
        ``{}`` when the combination has no ceiling."""
        rows = self._rows(provider or self.benchmark.subject.key, self._combo(axes))
        ceilings = self.record["ceilings"] if self.record else {}
        return {
            x: r["value"] / ceilings[r["ceiling"]]["value"]
            for x, r in rows.items()
            if r["ceiling"] in ceilings
        }

    def table(self, **axes) -> str:
        """Plain-text tables, one per axis combination under a heading naming it: each
        provider's metric per x, the ratio of the provider under study to the baseline,
        and its % of the ceiling (when there is one). ``axes`` (``dtype="float16"``, say)
        keeps the combinations with those values only."""
        if self.record is None:
            return "\n".join(self.notes)
        out = list(self.notes)
        for combo in combos(self._subset(axes)):
            if combo:
                out += ["", format_combo(combo)] if len(out) > len(self.notes) else [format_combo(combo)]
            out += self._table(combo)
        return "\n".join(out)

    def _table(self, combo: dict) -> list[str]:
        rec = self.record
        rows = [r for r in rec["rows"] if r["axes"] == combo]
        keys = list(dict.fromkeys(r["provider"] for r in rows))
        subject, base = self.benchmark.subject.key, rec["baseline"]
        by = {(r["x"], r["provider"]): r for r in rows}
        host = rec["metric"] in LOWER_IS_BETTER
        cost = "memory" if rec["metric"] == "GiB" else "time"
        ceiling = next((r["ceiling"] for r in rows if r["ceiling"] is not None), None)
        header = [
            rec["x_name"],
            *[f"{k} {rec['metric']}" for k in keys],
            f"{base}/{subject} {cost}" if host else f"{subject}/{base}",
        ]
        if ceiling is not None:
            header.append(f"{subject} % of {ceiling.split('_')[0]}")
        ratios, fractions = self.ratios(**combo), self.fraction_of_ceiling(**combo)
        lines = []
        for x in x_order(r["x"] for r in rows):
            cells = [format_x(x)]
            for k in keys:
                r = by.get((x, k))
                value = "-" if r is None else r["status"] if r["status"] != "ok" else None
                cells.append(value or f"{r['value']:.{(2 if cost == 'memory' else 1) if host else 0}f}")
            cells.append(f"{ratios[x]:.2f}x" if x in ratios else "-")
            if ceiling is not None:
                cells.append(f"{100 * fractions[x]:.0f}%" if x in fractions else "-")
            lines.append(cells)
        widths = [max(len(h), *(len(row[i]) for row in lines)) for i, h in enumerate(header)]
        fmt = lambda cells: "  ".join(c.rjust(w) for c, w in zip(cells, widths, strict=True))
        return [fmt(header), fmt(["-" * w for w in widths]), *map(fmt, lines)]

    def plot(self, **axes):
        """The benchmark's figure (a placeholder naming the missing record when there is none).

        ``axes`` keeps the panels of the combinations with those values only, and
        names them in the title: ``plot(dtype="float16")``.
        """
        if self.record is None:
            return plot_missing(self.benchmark.title, " ".join(self.notes))
        return plot_record(self._subset(axes), source=self.source, notes=self.notes)

    def _subset(self, axes: dict) -> dict:
        """The record with only the rows whose axes take the values in ``axes``."""
        if not axes:
            return self.record
        declared = dict(self.benchmark.axes)
        for name, value in axes.items():
            if name not in declared or value not in declared[name]:
                raise ValueError(f"{self.benchmark.name}: no value {value!r} of an axis {name!r}")
        rows = [r for r in self.record["rows"] if all(r["axes"][k] == v for k, v in axes.items())]
        narrowed = {k: ([axes[k]] if k in axes else v) for k, v in self.record["axes"].items()}
        title = f"{self.record['title']}, " + ", ".join(f"{k}={v}" for k, v in axes.items())
        return {**self.record, "rows": rows, "axes": narrowed, "title": title}


def can_measure() -> bool:
    """True when kernels compile for a real GPU here (CUDA present, interpreter off)."""
    return has_cuda() and not is_interpreter()


def load(benchmark: Benchmark, gpu: str | None = None) -> Result:
    """The committed record of ``benchmark`` for ``gpu`` (default: the reference GPU),
    with notes when it is missing, malformed or stale."""
    gpu = gpu or records.reference_gpu()
    path = records.record_path(benchmark.name, gpu)
    if not path.exists():
        shown = path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path
        return Result(
            benchmark,
            None,
            "missing",
            [
                f"MISSING: no committed measurement of {benchmark.name!r} for {gpu} "
                f"(expected {shown}). Run `nox -s bench` on that GPU and commit what it writes."
            ],
        )
    try:
        record = records.read(path)
    except ValueError as err:
        return Result(benchmark, None, "missing", [f"MALFORMED: {err}"])
    notes = [
        f"STALE: {reason}; re-run `nox -s bench` on a GPU." for reason in records.staleness(record, benchmark)
    ]
    return Result(benchmark, record, "committed", notes)


def run_or_load(benchmark: Benchmark, *, ceilings: dict | None = None) -> Result:
    """Measure ``benchmark`` live when a GPU is usable, else load its committed record.

    ``GPUPERF_BENCH`` overrides the choice: ``records`` always loads, ``live``
    always measures (and fails without a GPU).
    """
    mode = os.environ.get(MODE_VAR, "auto")
    if mode not in ("auto", "live", "records"):
        raise ValueError(f"{MODE_VAR} must be auto, live or records, got {mode!r}")
    if mode == "live" or (mode == "auto" and can_measure()):
        from gpuperf.bench.runner import run

        return Result(benchmark, run(benchmark, ceilings=ceilings, log=lambda line: None), "live")
    return load(benchmark)
