"""What a tutorial shows for a benchmark: live numbers on a GPU, committed ones elsewhere."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from gpuperf._runtime import has_cuda, is_interpreter
from gpuperf.bench import records
from gpuperf.bench.plotting import format_size, plot_missing, plot_record
from gpuperf.bench.provenance import REPO_ROOT
from gpuperf.bench.spec import Benchmark

#: ``GPUPERF_BENCH=records`` renders committed records even where a GPU is present;
#: ``live`` insists on measuring; ``auto`` (default) measures when it can.
MODE_VAR = "GPUPERF_BENCH"


@dataclass
class Result:
    """A benchmark's numbers as a page shows them.

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

    def values(self, provider: str) -> dict[int, float]:
        """``{x: metric value}`` for one provider's successful rows."""
        if self.record is None:
            return {}
        return {
            r["x"]: r["value"]
            for r in self.record["rows"]
            if r["provider"] == provider and r["status"] == "ok"
        }

    def ratios(self, provider: str | None = None) -> dict[int, float]:
        """``{x: provider / baseline}`` (time ratio inverted: above 1 means faster)."""
        mine = self.values(provider or self.benchmark.subject.key)
        base = self.values(self.benchmark.baseline)
        return {x: mine[x] / base[x] for x in mine if x in base}

    def fraction_of_ceiling(self, provider: str | None = None) -> dict[int, float]:
        """``{x: value / measured ceiling}`` for a provider (default: the one under study)."""
        if self.record is None:
            return {}
        c = self.record["ceiling"]["value"]
        return {x: v / c for x, v in self.values(provider or self.benchmark.subject.key).items()}

    def table(self) -> str:
        """A plain-text table: each provider's metric per size, the ratio to the baseline
        and the % of the ceiling for the provider under study."""
        if self.record is None:
            return "\n".join(self.notes)
        rec = self.record
        keys = list(dict.fromkeys(r["provider"] for r in rec["rows"]))
        subject, base = self.benchmark.subject.key, rec["baseline"]
        by = {(r["x"], r["provider"]): r for r in rec["rows"]}
        header = [
            rec["x_name"],
            *[f"{k} {rec['metric']}" for k in keys],
            f"{subject}/{base}",
            f"{subject} % of {rec['ceiling']['key'].split('_')[0]}",
        ]
        ratios, fractions = self.ratios(), self.fraction_of_ceiling()
        lines = []
        for x in sorted({r["x"] for r in rec["rows"]}):
            cells = [format_size(x)]
            for k in keys:
                r = by.get((x, k))
                cells.append(
                    "-" if r is None else (f"{r['value']:.0f}" if r["status"] == "ok" else r["status"])
                )
            cells.append(f"{ratios[x]:.2f}x" if x in ratios else "-")
            cells.append(f"{100 * fractions[x]:.0f}%" if x in fractions else "-")
            lines.append(cells)
        widths = [max(len(h), *(len(row[i]) for row in lines)) for i, h in enumerate(header)]
        fmt = lambda cells: "  ".join(c.rjust(w) for c, w in zip(cells, widths, strict=True))
        out = [fmt(header), fmt(["-" * w for w in widths]), *map(fmt, lines)]
        return "\n".join([*self.notes, *out])

    def plot(self):
        """The benchmark's figure (a placeholder naming the missing record when there is none)."""
        if self.record is None:
            return plot_missing(self.benchmark.title, " ".join(self.notes))
        return plot_record(self.record, source=self.source, notes=self.notes)


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
