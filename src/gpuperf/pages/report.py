"""What a tutorial shows for a benchmark: live numbers on a GPU, committed ones elsewhere,
and every other GPU's committed numbers beside them."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field

from gpuperf._runtime import has_cuda, is_interpreter
from gpuperf.bench import records
from gpuperf.bench.catalog import Benchmark
from gpuperf.bench.hardware import CEILINGS, STREAMS
from gpuperf.bench.metrics import LOWER_IS_BETTER
from gpuperf.pages import announce
from gpuperf.pages.plotting import (
    ceiling_label,
    combos,
    format_combo,
    format_rate,
    format_x,
    gpu_label,
    plot_missing,
    plot_records,
    short_gpu_name,
    x_order,
)
from gpuperf.pages.prose import span
from gpuperf.pages.tables import Cell, Section, number, render, row_cell

#: How the note of a stale record shown on the reference GPU starts (:func:`load`).
STALE = "STALE:"


@dataclass
class Result:
    """A benchmark's numbers as a page shows them.

    The lookups (:meth:`values`, :meth:`ratios`, :meth:`fraction_of_ceiling`)
    read this result's own record: the GPU measured live, or the reference GPU.
    They take the axis combination by keyword (``dtype="bfloat16"``); an axis
    with one value may be left out, an axis with several may not. :meth:`plot`
    and :meth:`table` show this record and every one in :attr:`others`, GPU
    beside GPU.

    Attributes:
        benchmark: the declaration.
        record: the record, or None when there is none to show.
        source: ``"live"``, ``"committed"``, ``"missing"``, or ``"stale"`` (another GPU's
            record of code that has changed since: not shown, see :func:`load`).
        notes: what the reader must know (a stale or missing record).
        others: the same benchmark on other GPUs (committed records, each a
            :class:`Result`), drawn beside this one.
    """

    benchmark: Benchmark
    record: dict | None
    source: str
    notes: list[str] = field(default_factory=list)
    others: list[Result] = field(default_factory=list)

    @property
    def gpu(self) -> str | None:
        """The GPU's name (``'NVIDIA H100 80GB HBM3'``), or None without a record."""
        return self.record["provenance"]["gpu"] if self.record else None

    @property
    def folder(self) -> str | None:
        """The GPU's folder (``'nvidia-h200'``: where its records are), or None without a record."""
        return None if self.record is None else records.gpu_slug(self.gpu)

    @property
    def name(self) -> str | None:
        """How the page names this GPU's numbers (:func:`~gpuperf.pages.plotting.gpu_label`):
        ``'H100 80GB HBM3'``, or ``'H100 80GB HBM3 (live)'`` when this run measured them.
        None without a record."""
        return None if self.record is None else gpu_label(self.gpu, self.source)

    @property
    def stale(self) -> bool:
        """Whether the record is of code that has changed since it was measured: another
        GPU's, not shown (source ``"stale"``), or the reference GPU's, shown with a note
        starting with :data:`STALE`."""
        return self.source == "stale" or any(n.startswith(STALE) for n in self.notes)

    def gpus(self) -> list[Result]:
        """This result and :attr:`others`, those that have a record, in drawing order."""
        return [r for r in (self, *self.others) if r.record is not None]

    def on(self, gpu: str) -> Result:
        """The result of the GPU named ``gpu`` (its name or its folder, ``'nvidia-h200'``).

        Raises:
            TypeError: ``gpu`` is not a string.
            ValueError: no GPU of that name has a record here; the message lists those that do.
        """
        if not isinstance(gpu, str):
            raise TypeError(f"gpu must be a GPU name or folder (str), got {type(gpu).__name__}")
        for result in self.gpus():
            if gpu in (result.gpu, result.folder):
                return result
        known = [r.folder for r in self.gpus()]
        raise ValueError(f"{self.benchmark.name} has no record for GPU {gpu!r}; it has records for {known}")

    def measured_on(self) -> str | None:
        """``'Measured on: H100 80GB HBM3 (2026-11-24)'``: where and when this result's own
        record was measured (``live`` when it was measured in this run), or None without one."""
        if self.record is None:
            return None
        when = self.record["provenance"]["date"][:10] + (", live" if self.source == "live" else "")
        return f"Measured on: {short_gpu_name(self.gpu)} ({when})"

    def all_notes(self) -> list[str]:
        """The notes of every GPU, each prefixed with its GPU when there are several."""
        results = [r for r in (self, *self.others) if r.notes]
        if len(self.gpus()) <= 1 and not self.others:
            return list(self.notes)
        return [f"{r.name}: {note}" if r.gpu else note for r in results for note in r.notes]

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

    def rows(self, provider: str | None = None, **axes) -> dict:
        """``{x: row}`` of one provider's successful rows (default: the one under study): the
        record's whole row, its time (``ms``), work (``bytes``, ``flops``) and config."""
        return self._rows(provider or self.benchmark.subject.key, self._combo(axes))

    def row(self, provider: str, x, **axes) -> dict | None:
        """The row of this result's own record for ``provider`` at ``x`` whose axes have the
        values ``axes`` names (any status: a failed row says why), or None."""
        for r in self.record["rows"] if self.record else ():
            if r["provider"] == provider and r["x"] == x and axes.items() <= r["axes"].items():
                return r
        return None

    def ms(self, provider: str | None = None, **axes) -> dict:
        """``{x: milliseconds}`` of one provider's successful rows that have a time (default:
        the provider under study): the GPU time per call (or per step) its record measured."""
        return {x: r["ms"] for x, r in self.rows(provider, **axes).items() if r["ms"]}

    def us(self, provider: str | None = None, **axes) -> dict:
        """:meth:`ms` in microseconds."""
        return {x: ms * 1e3 for x, ms in self.ms(provider, **axes).items()}

    def labels(self) -> dict:
        """``{provider key: label}`` as this result's own record names them
        (``'torch.softmax'``); ``{}`` without a record."""
        return {r["provider"]: r["label"] for r in self.record["rows"]} if self.record else {}

    def values(self, provider: str | None = None, **axes) -> dict:
        """``{x: metric value}`` for one provider's successful rows (default: the one under study)."""
        return {x: r["value"] for x, r in self.rows(provider, **axes).items()}

    def ratios(self, provider: str | None = None, *, over: str | None = None, **axes) -> dict:
        """``{x: baseline time / provider time}``: above 1 means the provider is faster,
        whatever the metric (``us/call`` included); for peak memory (``GiB``),
        ``baseline memory / provider memory``: above 1 means the provider needs less.
        ``over`` names another provider to compare with than the benchmark's baseline (a
        ladder's rung with the rung below it)."""
        combo = self._combo(axes)
        mine = self._rows(provider or self.benchmark.subject.key, combo)
        base = self._rows(over or self.benchmark.baseline, combo)
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

    def ceiling_name(self, provider: str | None = None, *, full: bool = True, **axes) -> str | None:
        """The name of the ceiling a provider's rows (default: the one under study) are read
        against, formatted from its entry in this result's own record
        (:func:`~gpuperf.pages.plotting.ceiling_label`): ``'stream bandwidth (addcmul)'``,
        ``'copy bandwidth'``, ``'cuBLAS bf16 matmul (torch.matmul) at 4096³'``; several
        joined with ``' or '``; None without a record or a ceiling. What a sentence that
        quotes :meth:`fraction_of_ceiling` names, never a typed name: a record measured
        against another ceiling (a GPU measured before memory-bound benchmarks were read
        against the stream bandwidth) names its own. ``full=False`` gives the entry's label
        alone (``'stream bandwidth'``), for a sentence already inside parentheses."""
        rows = self._rows(provider or self.benchmark.subject.key, self._combo(axes))
        ceilings = self.record["ceilings"] if self.record else {}
        keys = dict.fromkeys(r["ceiling"] for r in rows.values() if r["ceiling"] in ceilings)
        names = [
            _named(key, ceilings[key]) if full else ceilings[key].get("label", CEILINGS.get(key, (key,))[0])
            for key in keys
        ]
        return " or ".join(names) or None

    def table(self, **axes) -> str:
        """The numbers behind the plot, one table per axis combination under a heading
        naming it: each provider's metric per x, the ratio of the provider under study
        to the baseline, and its % of the ceiling (when there is one); with several
        GPUs, a GPU column and one row per x and GPU, and with one GPU a last line saying
        where and when it was measured (:meth:`measured_on`), and under it, for each row of
        any provider above the ceiling it is read against beyond the timings' spread, a
        sentence saying so (:func:`above_roof_sentences`). ``axes``
        (``dtype="float16"``, say) keeps the combinations with those values only.

        Fixed-width text, or HTML when ``GPUPERF_TABLES=html`` (the docs build):
        see :mod:`gpuperf.pages.tables`.
        """
        shown = self.gpus()
        notes = self.all_notes()
        if not shown:
            return render([], notes)
        narrowed = [r._subset(axes) for r in shown]
        keys = []
        for record in narrowed:
            keys += [c for c in combos(record) if c not in keys]
        footer = [shown[0].measured_on()] if len(shown) == 1 else []
        # Rows above the roof they are read against, said under the table from the record.
        for result in shown:
            above = result._subset(axes) if axes else result.record
            for line in above_roof_sentences(Result(self.benchmark, above, result.source)):
                footer.append(f"{result.name}: {line}" if len(shown) > 1 else line)
        return render([self._section(combo, shown) for combo in keys], notes, footer)

    def _section(self, combo: dict, results: list[Result]) -> Section:
        """The table of one axis combination over ``results`` (one per GPU)."""
        bench = self.benchmark
        all_rows = [r for result in results for r in result.record["rows"] if r["axes"] == combo]
        rec = results[0].record
        declared = [p.key for p in bench.providers]
        # In declared order, whichever GPU's rows (a quick live run's measure fewer) come first.
        keys = sorted(
            dict.fromkeys(r["provider"] for r in all_rows),
            key=lambda k: declared.index(k) if k in declared else len(declared),
        )
        subject, base = bench.subject.key, bench.baseline
        host = rec["metric"] in LOWER_IS_BETTER
        cost = "memory" if rec["metric"] == "GiB" else "time"
        ceiling = next((r["ceiling"] for r in all_rows if r["ceiling"] is not None), None)
        multi = len(results) > 1
        header = [
            rec["x_name"],
            *(["GPU"] if multi else []),
            *[f"{k} {rec['metric']}" for k in keys],
            f"{base}/{subject} {cost}" if host else f"{subject}/{base}",
        ]
        if ceiling is not None:
            header.append(f"{subject} % of {ceiling.removesuffix('_tflops').removesuffix('_gbps')}")
        digits = (2 if cost == "memory" else 1) if host else 0
        # In declared order: a quick live record holds part of the x values, listed first.
        order = x_order((r["x"] for r in all_rows), bench.x_values)
        section = Section(format_combo(combo), header)
        for position, x in enumerate(order):
            for result in results:
                by = {r["provider"]: r for r in result.record["rows"] if r["axes"] == combo and r["x"] == x}
                if not by:
                    continue
                cells = [Cell(format_x(x), x if isinstance(x, int) else position)]
                if multi:
                    cells.append(Cell(result.name, result.name))
                cells += [row_cell(by.get(k), "value", f".{digits}f") for k in keys]
                ratio = result.ratios(**combo).get(x)
                cells.append(number(ratio, ".2f", "x"))
                if ceiling is not None:
                    frac = result.fraction_of_ceiling(**combo).get(x)
                    cells.append(Cell("-") if frac is None else Cell(f"{100 * frac:.0f}%", frac))
                section.rows.append(cells)
        return section

    def plot(self, **axes):
        """The benchmark's figure: every GPU with a record side by side, one column
        each, and under its title what to see, each GPU's headline
        (:func:`headline`); a placeholder naming the missing
        record when there is none.

        ``axes`` keeps the panels of the combinations with those values only, and
        names them in the title: ``plot(dtype="float16")``.
        """
        shown = self.gpus()
        if not shown:
            return plot_missing(self.benchmark.title, " ".join(self.notes))
        # A GPU with no row in the combinations ``axes`` picks (a quick live build measures
        # part of the sweep) gets no empty column.
        subsets = [Result(self.benchmark, r._subset(axes), r.source) for r in shown]
        subsets = [r for r in subsets if r.record["rows"]] or subsets
        heads = [(r.name, headline(r)) for r in subsets]
        return plot_records(
            [r.record for r in subsets],
            sources=[r.source for r in subsets],
            notes=self.all_notes(),
            headlines=[f"{gpu}: {text}" for gpu, text in heads if text],
        )

    def show(self, **axes) -> Result:
        """Print :meth:`table` and draw :meth:`plot` for the combinations ``axes`` picks
        (all of them by default); return this result, for the lookups that follow."""
        print(self.table(**axes))
        self.plot(**axes)
        return self

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
    """The committed record of ``benchmark`` for ``gpu`` (default: the reference GPU) as a page
    shows it.

    On the reference GPU (:func:`gpuperf.bench.records.reference_gpu`) the record comes with
    notes when it is missing, malformed or stale. Another GPU's record is shown only while
    it describes the code as it stands: a missing, malformed or stale one gives a result
    without a record and without notes (source ``"stale"`` when there is a record of code
    that has changed since), and the page leaves that GPU out.
    """
    first = records.reference_gpu()
    gpu = gpu or first
    path = records.record_path(benchmark.name, gpu)
    if not path.exists():
        missing = (
            f"MISSING: no measurement of {benchmark.name} on {gpu} (expected {path}); "
            f"{records.advice(records.bench_command(benchmark.name), 'that GPU')} to write it."
        )
        return Result(benchmark, None, "missing", [missing] if gpu == first else [])
    try:
        record = records.read(path)
    except ValueError as err:
        return Result(benchmark, None, "missing", [f"MALFORMED: {err}"] if gpu == first else [])
    reasons = records.staleness(record, benchmark)
    if reasons and gpu != first:
        return Result(benchmark, None, "stale")
    again = records.advice(records.bench_command("--stale"))
    notes = [f"{STALE} {r}; {again} to measure it again." for r in reasons]
    return Result(benchmark, record, "committed", notes)


def current_others(benchmark: Benchmark, first: str | None) -> list[Result]:
    """The committed records of ``benchmark`` on every GPU folder but ``first`` (None: on
    every GPU folder) that describe the code as it stands (:func:`load` leaves out the
    others): the page then shows the GPUs it has, and says where they were measured."""
    found = [load(benchmark, gpu) for gpu in records.gpus_with_record(benchmark.name) if gpu != first]
    return [r for r in found if r.record is not None and not r.notes]


def gpus_with_current(benchmark: Benchmark) -> list[str]:
    """Folders of the GPUs whose committed record of ``benchmark`` a page shows, the
    reference GPU first: the reference GPU whenever it has a record (stale or not: it
    says so), another GPU only while its record describes the code as it stands
    (:func:`load`)."""
    return [
        gpu for gpu in records.gpus_with_record(benchmark.name) if load(benchmark, gpu).record is not None
    ]


class LiveRecords:
    """What this process has measured live: each benchmark's record (by its declaration:
    a variant of a benchmark is another one) and the ceilings measured with them. A build
    runs every page in one process, so a benchmark several pages show (the host-time one
    is on four) is measured once, and the bandwidth and matmul ceilings once, not again
    on every page."""

    def __init__(self):
        self.records: dict[Benchmark, dict] = {}
        self.ceilings: dict[str, dict] = {}

    def measure(self, benchmark: Benchmark, ceilings: dict | None, measure) -> dict:
        """The record of ``benchmark`` measured earlier in this process, or ``measure(ceilings)``
        with the ceilings measured so far added to ``ceilings`` (those given win)."""
        if benchmark not in self.records:
            record = measure({**self.ceilings, **(ceilings or {})})
            self.records[benchmark] = record
            self.ceilings.update(record["ceilings"])
        return self.records[benchmark]


#: The live records of this process (:class:`LiveRecords`).
LIVE = LiveRecords()


def run_or_load(benchmark: Benchmark, *, ceilings: dict | None = None) -> Result:
    """Measure ``benchmark`` live when a GPU is usable, else load its committed record;
    either way, with every other GPU's current committed record of it in
    :attr:`Result.others` (:func:`current_others`).

    The GPUs are the folders of the measurements folder
    (:func:`gpuperf.bench.records.measurements_dir`) that hold a record of the
    benchmark (:func:`gpuperf.bench.records.gpus_with_record`), a reader's own
    ``python -m gpuperf.bench`` run included; a record whose code changed since it was measured is
    not drawn. The reference GPU's record is loaded whatever its state, and says so when
    it is stale or missing. ``GPUPERF_BENCH`` overrides the choice: ``records`` always
    loads, ``live`` always measures (and fails without a GPU).

    The first call of a page run as a script prints the page's announcement (live or records,
    the GPU, how long its measuring took last time: :func:`gpuperf.pages.announce.announce_page`).
    Measuring live shows a progress bar (the size and the provider being timed) on the
    process's own stderr, not on the page, and keeps compiled work in the folder of
    :func:`gpuperf.caches.use_compile_caches`. A benchmark already measured live in this
    process is not measured again, and ceilings measured on an earlier page are reused
    (:data:`LIVE`).

    Raises:
        ValueError: ``GPUPERF_BENCH`` is not auto, live, full or records.
    """
    build = announce.current(can_measure())
    announce.announce_page(sys.argv[0], build)
    if build.live:
        from gpuperf.bench.runner import run
        from gpuperf.bench.runs import progress
        from gpuperf.caches import use_compile_caches

        use_compile_caches()
        gpu = records.gpu_slug(build.gpu) if build.gpu else records.reference_gpu()

        xs, combos = benchmark.sweep(build.quick)
        providers = tuple(p.key for p in benchmark.measured_providers(build.quick))

        def measure(known: dict) -> dict:
            with progress([benchmark], gpu, file=sys.__stderr__, quick=build.quick) as bar:
                return run(
                    benchmark,
                    x_values=xs,
                    combos=combos,
                    ceilings=known,
                    providers=providers,
                    log=lambda line: None,
                    step=bar.step,
                )

        record = LIVE.measure(benchmark, ceilings, measure)
        here = records.gpu_slug(record["provenance"]["gpu"])
        # A quick run measured part of the sweep: this GPU's committed sweep is drawn beside it.
        whole = build.quick and bool(benchmark.quick)
        return Result(benchmark, record, "live", others=current_others(benchmark, None if whole else here))
    main = load(benchmark)
    main.others = current_others(benchmark, records.reference_gpu())
    return main


def show(benchmark: Benchmark, **axes) -> Result:
    """Measure ``benchmark`` live or load its records (:func:`run_or_load`), print its
    table and draw its plot, every GPU side by side; ``axes`` (``dtype="float16"``)
    narrows both to those combinations. Returns the :class:`Result` for lookups
    (:meth:`Result.ratios`, :meth:`Result.fraction_of_ceiling`, ...).

    Raises:
        TypeError: ``benchmark`` is not a :class:`~gpuperf.bench.catalog.benchmark.Benchmark`.
        ValueError: an axis or value in ``axes`` that the benchmark does not declare.
    """
    if not isinstance(benchmark, Benchmark):
        raise TypeError(
            f"benchmark must be a gpuperf.bench.catalog.Benchmark, got {type(benchmark).__name__}"
        )
    return run_or_load(benchmark).show(**axes)


def check_result(result, *benchmarks: Benchmark, name: str = "result") -> None:
    """Check that ``result`` is a :class:`Result` of one of ``benchmarks`` (declarations of
    :mod:`gpuperf.bench.catalog`, compared by name; any benchmark when none is given): what
    every page function that reads a result checks first. ``name`` is the argument's name
    the messages use.

    Raises:
        TypeError: ``result`` is not a :class:`Result`.
        ValueError: it is a result of another benchmark.
    """
    if not isinstance(result, Result):
        raise TypeError(f"{name} must be a gpuperf.pages.Result, got {type(result).__name__}")
    names = [b.name for b in benchmarks]
    if names and result.benchmark.name not in names:
        want = repr(names[0]) if len(names) == 1 else f"one of {names}"
        raise ValueError(f"{name} must be a result of {want}, got a result of {result.benchmark.name!r}")


def per_gpu(result: Result, write: Callable[[Result], list[str]]) -> str:
    """The lines ``write(r)`` returns for each GPU with a record, under the GPU's name
    (indented) when there are several; the result's notes when none has one.

    Tutorials 01 and 02 (:mod:`gpuperf.pages.vector_add`, :mod:`gpuperf.pages.softmax`)
    print their lines this way.
    """
    shown = result.gpus()
    if not shown:
        return "\n".join(result.all_notes())
    if len(shown) == 1:
        return "\n".join(write(shown[0]))
    return "\n".join("\n".join([f"{r.name}:", *(f"  {line}" for line in write(r))]) for r in shown)


def x_named(record: dict, x) -> str:
    """An x value of ``record`` with its name: ``'batch = 1'``, ``'elements per tensor = 2^28'``,
    ``'shape = 4096³'``. The name is the record's ``x_label`` without its parenthesis (the
    record's ``x_name`` where it has no label); the value as
    :func:`~gpuperf.pages.plotting.format_x` writes it.

    >>> x_named({"x_name": "batch", "x_label": "batch (prompts of 2048 tokens)"}, 1)
    'batch = 1'

    Raises:
        TypeError: ``record`` is not a dict.
        ValueError: ``record`` has neither an ``x_label`` nor an ``x_name``.
    """
    if not isinstance(record, dict):
        raise TypeError(f"record must be a record (dict), got {type(record).__name__}")
    label = record.get("x_label") or record.get("x_name")
    if not label:
        raise ValueError("record must name its x (an x_label or an x_name); it has neither")
    return f"{label.split(' (')[0].strip()} = {format_x(x)}"


@dataclass(frozen=True)
class Share:
    """The highest share of its ceiling that the provider under study reached in a record.

    Attributes:
        fraction: the row's value over the ceiling's (1.0 is 100%).
        x: the x where it was reached.
        combo: the axis combination where it was reached (``{}`` without axes).
        row: the record's row (its ``value``, ``value_p20``, ``value_p80``, ...).
        key: the ceiling's key (``"stream_gbps"``).
        ceiling: the ceiling's entry in the record (its ``value``, ``unit``, spread, shape),
            measured in the same run as the row.
    """

    fraction: float
    x: object
    combo: dict
    row: dict
    key: str
    ceiling: dict

    @property
    def above_spread(self) -> bool:
        """Whether the share is above 100% beyond the two timings' spread: the row's 20th
        percentile (its slowest usual rate) above the ceiling's 80th (its fastest). Where an
        entry lacks its percentiles, any share above 100%."""
        low, high = self.row.get("value_p20"), self.ceiling.get("value_p80")
        if low is None or high is None:
            return self.fraction > 1
        return low > high


def best_share(result: Result) -> Share | None:
    """Where the provider under study came closest to (or went furthest past) its ceiling in
    ``result``'s own record, over every x and axis combination: a :class:`Share`, or None
    without a record or a ceiling.

    Raises:
        TypeError: ``result`` is not a :class:`Result`.
    """
    if not all(hasattr(result, a) for a in ("record", "benchmark", "fraction_of_ceiling")):
        raise TypeError(f"result must be a gpuperf.pages.Result, got {type(result).__name__}")
    if result.record is None:
        return None
    found = [(v, x, c) for c in result.benchmark.combos() for x, v in result.fraction_of_ceiling(**c).items()]
    if not found:
        return None
    fraction, x, combo = max(found, key=lambda item: item[0])
    row = result.rows(**combo)[x]
    return Share(fraction, x, combo, row, row["ceiling"], result.record["ceilings"][row["ceiling"]])


def _named(key: str, entry: dict) -> str:
    """A ceiling's name from its entry (:func:`~gpuperf.pages.plotting.ceiling_label`), or
    the entry's own label for a key this version of gpuperf does not know."""
    return ceiling_label(key, entry) if key in CEILINGS else str(entry.get("label", key))


def stream_mix(stream: str) -> str:
    """How a stream of :data:`~gpuperf.bench.hardware.STREAMS` mixes reads and writes:
    ``'3 reads per write'``, ``'1 read per write'``, ``'reads alone'``.

    >>> stream_mix("addcmul")
    '3 reads per write'

    Raises:
        ValueError: ``stream`` is not one of :data:`~gpuperf.bench.hardware.STREAMS`.
    """
    if stream not in STREAMS:
        raise ValueError(f"stream must be one of {list(STREAMS)}, got {stream!r}")
    reads = STREAMS[stream]
    if reads is None:
        return "reads alone"
    return f"{reads} read{'s' if reads != 1 else ''} per write"


def roof_caveat(key: str, entry: dict) -> str:
    """Why a rate can pass the ceiling ``key`` (its ``entry`` in a record or in
    ``hardware.json``): a ceiling is a rate a library call reached, not a limit of the
    hardware. Plain text, formatted from the entry.

    >>> import textwrap
    >>> print(textwrap.fill(roof_caveat("stream_gbps", {"stream": "addcmul"}), 80))
    the stream bandwidth is the fastest of the streams timed (addcmul, 3 reads per
    write), a rate the memory was shown to reach, not a limit of it
    >>> print(textwrap.fill(roof_caveat("copy_gbps", {}), 80))
    the copy bandwidth is PyTorch's Tensor.copy_ (1 read per write), a rate the
    memory was shown to reach, not a limit of it

    Raises:
        ValueError: ``key`` is not a key of :data:`~gpuperf.bench.hardware.CEILINGS`.
        TypeError: ``entry`` is not a dict.
    """
    if key not in CEILINGS:
        raise ValueError(f"key must be one of {list(CEILINGS)}, got {key!r}")
    if not isinstance(entry, dict):
        raise TypeError(f"entry must be a ceiling's entry (dict), got {type(entry).__name__}")
    reached = "a rate the memory was shown to reach, not a limit of it"
    if key == "stream_gbps":
        stream = entry.get("stream")
        how = f" ({stream}, {stream_mix(stream)})" if stream in STREAMS else ""
        return f"the {CEILINGS[key][0]} is the fastest of the streams timed{how}, {reached}"
    if key == "copy_gbps":
        return f"the {CEILINGS[key][0]} is PyTorch's Tensor.copy_ ({stream_mix('copy')}), {reached}"
    return f"the ceiling is {ceiling_label(key, entry)} in the same run, not the hardware's peak"


def above_roof(result: Result) -> list[Share]:
    """Every successful row of ``result``'s own record, of any provider, whose rate is
    above the ceiling it is read against beyond the two timings' spread
    (:attr:`Share.above_spread`: the row's 20th percentile above the ceiling's 80th), in
    the record's order; ``[]`` without a record.

    Raises:
        TypeError: ``result`` is not a :class:`Result`.
    """
    if not hasattr(result, "record"):
        raise TypeError(f"result must be a gpuperf.pages.Result, got {type(result).__name__}")
    record = result.record
    if record is None or record["metric"] in LOWER_IS_BETTER or record["metric"] == "GiB":
        return []
    found = []
    for row in record["rows"]:
        entry = record["ceilings"].get(row["ceiling"]) if row["ceiling"] else None
        if row["status"] != "ok" or not entry or not entry.get("value"):
            continue
        share = Share(row["value"] / entry["value"], row["x"], row["axes"], row, row["ceiling"], entry)
        if share.fraction > 1 and share.above_spread:
            found.append(share)
    return found


def passes_roof(
    result: Result, who: str = "it", where: Callable[[Share], str] = lambda share: "", **axes
) -> list[str]:
    """A sentence naming where the provider under study (at ``axes``) ran above the ceiling
    its rows are read against beyond the spread of both timings (:func:`above_roof`), each x
    named (:func:`x_named`) followed by ``where(share)``, and why a ceiling can be passed
    (:func:`roof_caveat`); ``who`` names the provider (``'it'``, ``'ours'``). ``[]`` where
    it never did.

    Raises:
        TypeError: ``result`` is not a :class:`Result`.
    """
    subject = result.benchmark.subject.key
    above = [
        s for s in above_roof(result) if s.row["provider"] == subject and axes.items() <= s.combo.items()
    ]
    if not above:
        return []
    named = ", ".join(x_named(result.record, s.x) + where(s) for s in above)
    return [
        f"At {named} {who} passes that roof beyond the spread of both timings: "
        f"{roof_caveat(above[0].key, above[0].ceiling)}."
    ]


def above_roof_sentences(result: Result) -> list[str]:
    """One sentence per row of :func:`above_roof`: the provider, where (the x named, the
    axis values), its rate and the 20th percentile of it against the ceiling's value and
    80th percentile, named from the record's entry, and why a ceiling can be passed
    (:func:`roof_caveat`). Rates in the ceiling's unit, to the unit (a few GB/s apart is
    the point); ``[]`` when no row is above its roof.

    Raises:
        TypeError: ``result`` is not a :class:`Result`.
    """
    lines = []
    for share in above_roof(result):
        row, entry, unit = share.row, share.ceiling, share.ceiling["unit"]
        where = ", ".join([x_named(result.record, share.x), *(f"{k}={v}" for k, v in share.combo.items())])
        high = entry.get("value_p80", entry["value"])
        low = row.get("value_p20", row["value"])
        lines.append(
            f"Above its roof beyond the spread of both timings: {row['label']} at {where} ran at "
            f"{row['value']:.0f} {unit} (20th percentile {low:.0f}) against the "
            f"{entry['value']:.0f} {unit} (80th percentile {high:.0f}) of the "
            f"{_named(share.key, entry)} measured in the same run; {roof_caveat(share.key, entry)}."
        )
    return lines


def headline(result: Result) -> str | None:
    """The headline of ``result``'s own record (one GPU): what the provider under study
    achieved, in one line, or None when it has no record or no successful row of that
    provider.

    It is derived from what every benchmark declares, its baseline and its ceiling, so a
    new benchmark gets one without any code here: the range of the ratio to the baseline
    over every x and axis combination measured, and the highest % of the ceiling
    (:func:`best_share`) with where it was reached, for example ``'1.01–1.83× the speed of
    torch.softmax; up to 95% of the 3.11 TB/s of stream bandwidth (addcmul), reached at row
    length = 32768'``. The share prints its divisor: the ceiling's value in the record, measured in
    the same run as the rows (two records' ceilings of one name may differ by a few %), and
    the ceiling named from its entry (:func:`~gpuperf.pages.plotting.ceiling_label`: a
    matmul's call, shape and mode, which are not those of the x where the share was
    reached). The x is named (:func:`x_named`); axis values are named where the share was
    reached only for axes with several values.

    Raises:
        TypeError: ``result`` is not a :class:`~gpuperf.pages.report.Result`.
    """
    if not all(hasattr(result, a) for a in ("record", "benchmark", "ratios", "fraction_of_ceiling")):
        raise TypeError(f"result must be a gpuperf.pages.Result, got {type(result).__name__}")
    record = result.record
    if record is None:
        return None
    combos = result.benchmark.combos()
    ratios = [v for combo in combos for v in result.ratios(**combo).values()]
    axes = result.benchmark.axes
    labels = result.labels()
    baseline = result.benchmark.baseline
    base = labels.get(baseline, baseline)
    parts = []
    if ratios and record["metric"] == "GiB":
        # ratios are baseline memory / provider memory: turn them into the provider's share.
        parts.append(f"{span([1 / r for r in ratios])}× the peak memory of {base}")
    elif ratios:
        host = " on the host" if record["metric"] == "us/call" else ""
        parts.append(f"{span(ratios)}× the speed of {base}{host}")
    share = best_share(result)
    if share is not None:
        named_axes = [f"{k}={v}" for k, v in share.combo.items() if len(dict(axes)[k]) > 1]
        at = ", ".join([x_named(record, share.x), *named_axes])
        named = ceiling_label(share.key, share.ceiling)
        rate = format_rate(share.ceiling["value"], share.ceiling["unit"])
        parts.append(f"up to {100 * share.fraction:.0f}% of the {rate} of {named}, reached at {at}")
    return "; ".join(parts) or None


def measured_when(result: Result) -> tuple[str, str] | None:
    """``(date, commit)`` of ``result``'s own record (the date as ``YYYY-MM-DD``): when and at
    which gpuperf commit the numbers a line reads from it were measured; None without a record.

    Raises:
        TypeError: ``result`` is not a :class:`Result`.
    """
    if not hasattr(result, "record"):
        raise TypeError(f"result must be a gpuperf.pages.Result, got {type(result).__name__}")
    if result.record is None:
        return None
    provenance = result.record["provenance"]
    return provenance["date"][:10], records.short_commit(provenance["gpuperf_commit"])
