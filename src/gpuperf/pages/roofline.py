"""The roofline model, placed from the committed records: every kernel against its GPU's roofs.

A kernel that does ``F`` FLOPs while moving ``B`` bytes has an *arithmetic
intensity* ``I = F / B`` (FLOP per byte). A GPU that computes at most ``P``
FLOP/s and moves at most ``W`` bytes/s can run it at best at
``attainable(I) = min(P, I * W)`` (Williams, Waterman and Patterson, "Roofline:
an insightful visual performance model for multicore architectures", CACM 2009).
The two terms meet at the *ridge point* ``I = P / W``: left of it a kernel is
bound by memory, right of it by compute.

Here ``P`` and ``W`` are the ceilings measured on the GPU (``hardware.json``: the
fastest of a few streams for ``W``, cuBLAS per dtype and ``torch._scaled_mm``
for fp8 for ``P``), one roof per compute ceiling, all sharing one memory roof. That
roof is the *stream* bandwidth (``stream_gbps``, :func:`gpuperf.bench.hardware.measure_stream_gbps`):
how fast HBM streams depends on the mix of reads and writes, and a copy
(``copy_gbps``, one read per write) sits below what a kernel reading two or three
bytes per byte written reaches, and below what reads alone reach. A ``hardware.json``
without a stream bandwidth falls back to the copy (:func:`memory_key`). The datasheet's figures
(:data:`gpuperf.bench.hardware.DATASHEET`) give a second, dotted set. Each record
row is placed from what every row stores, whatever the benchmark's metric: its
``bytes`` and ``flops`` (the least traffic and the work of one call, from
:mod:`gpuperf.bench.metrics`) and its median time ``ms``. So a new benchmark's
record lands on the chart without code here.

Which roof a row is read against: the roof of the engine and dtype its FLOPs run on.
That is its own ceiling when that is a compute ceiling (a matmul's ``bf16_tflops``);
otherwise (a kernel read against a memory ceiling, the stream bandwidth) the benchmark's declared
:attr:`~gpuperf.bench.catalog.Benchmark.compute_roof` (a bfloat16 matmul with a
small dimension runs on the tensor cores: ``bf16_tflops``), and by default the
float32 roof, ``fp32_tflops``, because kernels that are not matrix products do
their arithmetic on the CUDA cores in float32 whatever their storage dtype. The
compute roof sets where the ridge is; left of it a row's share of the roof is its
rate over ``I * W``. Rows that cannot be placed (a failed provider, host time,
peak memory, zero FLOPs or bytes) are listed in :attr:`Placement.skipped`.
"""

from __future__ import annotations

import json
import math
import numbers
from dataclasses import dataclass, field
from pathlib import Path

from gpuperf.bench import records
from gpuperf.bench.hardware import CEILINGS, DATASHEET

#: The copy bandwidth, which every ``hardware.json`` holds.
BANDWIDTH_KEY = "copy_gbps"
#: The memory roofs in order of preference: the fastest stream measured, else the copy.
MEMORY_KEYS = ("stream_gbps", BANDWIDTH_KEY)
#: The roof of rows whose own ceiling is not a compute ceiling (CUDA-core float32).
DEFAULT_ROOF = "fp32_tflops"
#: The metrics whose rows are GPU times of one call (others: host time, peak memory).
PLACED_METRICS = ("GB/s", "TFLOP/s")
#: Intensities within this factor of each other are one point of the chart (see :func:`chart_series`).
SAME_INTENSITY = 1.1
#: A call shorter than this many times the shortest kernel time measured on the GPU
#: spends at least half its time on the fixed cost of a launch, not on its work.
LAUNCH_FACTOR = 2.0
#: The longest shortest-kernel time taken as a launch floor, ms: launching and draining an
#: almost empty kernel takes a few microseconds on the GPUs measured here (the profiling
#: guide's launch-bound capture), so a shortest point above 20 µs is real work, not a floor.
MAX_LAUNCH_FLOOR_MS = 0.02


def _number(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    return float(value)


def arithmetic_intensity(flops: float, n_bytes: float) -> float:
    """FLOPs per byte moved: ``flops / n_bytes``.

    Args:
        flops: the work of one call (FLOPs, >= 0).
        n_bytes: the bytes one call moves (> 0).

    Raises:
        TypeError: either is not a number.
        ValueError: ``n_bytes`` is not positive or ``flops`` is negative.
    """
    flops, n_bytes = _number("flops", flops), _number("n_bytes", n_bytes)
    if n_bytes <= 0:
        raise ValueError(f"n_bytes must be positive, got {n_bytes}")
    if flops < 0:
        raise ValueError(f"flops must be >= 0, got {flops}")
    return flops / n_bytes


def _rates(peak_tflops, bandwidth_gbps) -> tuple[float, float]:
    peak, bandwidth = _number("peak_tflops", peak_tflops), _number("bandwidth_gbps", bandwidth_gbps)
    if peak <= 0 or bandwidth <= 0:
        raise ValueError(f"peak_tflops and bandwidth_gbps must be positive, got {peak} and {bandwidth}")
    return peak, bandwidth


def ridge_point(peak_tflops: float, bandwidth_gbps: float) -> float:
    """The intensity (FLOP/byte) where the roof turns flat: ``peak / bandwidth``.

    ``peak_tflops`` in TFLOP/s (10**12), ``bandwidth_gbps`` in GB/s (10**9), so the
    ridge is ``1000 * peak_tflops / bandwidth_gbps``.

    Raises:
        TypeError: either is not a number.
        ValueError: either is not positive.
    """
    peak, bandwidth = _rates(peak_tflops, bandwidth_gbps)
    return 1e3 * peak / bandwidth


def attainable_tflops(intensity: float, peak_tflops: float, bandwidth_gbps: float) -> float:
    """The roof at ``intensity`` (FLOP/byte): ``min(peak, intensity * bandwidth)`` in TFLOP/s.

    Raises:
        TypeError: an argument is not a number.
        ValueError: ``intensity`` is negative, or the peak or the bandwidth is not positive.
    """
    peak, bandwidth = _rates(peak_tflops, bandwidth_gbps)
    intensity = _number("intensity", intensity)
    if intensity < 0:
        raise ValueError(f"intensity must be >= 0, got {intensity}")
    return min(peak, intensity * bandwidth / 1e3)


@dataclass(frozen=True)
class Roof:
    """One roof: a compute peak and the bandwidth slope that meets it.

    Attributes:
        key: the compute ceiling (``"bf16_tflops"``), a key of
            :data:`gpuperf.bench.hardware.CEILINGS`.
        label: what was measured (``"cuBLAS bf16 matmul"``), or the datasheet's name for it.
        peak_tflops: the flat part, TFLOP/s.
        bandwidth_gbps: the slope, GB/s.
        source: ``"measured"`` (``hardware.json``) or ``"datasheet"``.
    """

    key: str
    label: str
    peak_tflops: float
    bandwidth_gbps: float
    source: str = "measured"

    @property
    def ridge(self) -> float:
        """The ridge point, FLOP/byte."""
        return ridge_point(self.peak_tflops, self.bandwidth_gbps)

    def attainable(self, intensity: float) -> float:
        """This roof at ``intensity`` (FLOP/byte), TFLOP/s."""
        return attainable_tflops(intensity, self.peak_tflops, self.bandwidth_gbps)


def memory_key(hardware: dict) -> str:
    """The ceiling of a ``hardware.json`` that is its memory roof: ``"stream_gbps"`` where it
    was measured, else ``"copy_gbps"``.

    Raises:
        ValueError: ``hardware`` holds no copy bandwidth.
    """
    ceilings = hardware.get("ceilings", {})
    if BANDWIDTH_KEY not in ceilings:
        raise ValueError(f"hardware.json must hold the ceiling {BANDWIDTH_KEY!r}, got {sorted(ceilings)}")
    return next(key for key in MEMORY_KEYS if key in ceilings)


def roofs(hardware: dict) -> dict[str, Roof]:
    """The measured roofs of a ``hardware.json``: one per compute ceiling it holds, each
    with the memory roof (:func:`memory_key`) as its slope, by ceiling key.

    Raises:
        ValueError: ``hardware`` holds no copy bandwidth.
    """
    ceilings = hardware.get("ceilings", {})
    bandwidth = ceilings[memory_key(hardware)]["value"]
    return {
        key: Roof(key, CEILINGS.get(key, (key,))[0], entry["value"], bandwidth)
        for key, entry in ceilings.items()
        if entry.get("unit") == "TFLOP/s"
    }


def datasheet_roofs(gpu: str) -> dict[str, Roof]:
    """The datasheet's roofs for the GPU named ``gpu`` (``'NVIDIA H100 80GB HBM3'``), by
    ceiling key; empty when :data:`~gpuperf.bench.hardware.DATASHEET` does not list it."""
    sheet = DATASHEET.get(gpu, {})
    if BANDWIDTH_KEY not in sheet:
        return {}
    return {
        key: Roof(key, f"datasheet {key.removesuffix('_tflops')}", value, sheet[BANDWIDTH_KEY], "datasheet")
        for key, value in sheet.items()
        if key != BANDWIDTH_KEY
    }


@dataclass(frozen=True)
class Point:
    """One record row placed on the roofline.

    Attributes:
        benchmark: the record's benchmark name.
        title: the record's title.
        provider: the provider key (its colour on every plot).
        label: the provider's label.
        role: ``"subject"`` (the benchmark's first provider, the kernel under
            study), ``"baseline"`` (its declared baseline) or ``"other"``.
        x: the row's x (a size, a shape as a tuple, a name).
        axes: the row's axis combination.
        n_bytes: bytes one call moves (the least any implementation must move).
        flops: FLOPs of one call.
        ms: median time of one call, milliseconds.
        roof: the compute ceiling it is read against (see the module's docstring).
        l2_resident: its traffic fits in the GPU's L2 cache (``l2_bytes`` of the provenance).
        ms_p80: the 80th percentile of its time, milliseconds (the slow end of its
            spread; None when the row has none).
    """

    benchmark: str
    title: str
    provider: str
    label: str
    role: str
    x: object
    axes: dict
    n_bytes: float
    flops: float
    ms: float
    roof: str
    l2_resident: bool
    ms_p80: float | None = None

    @property
    def intensity(self) -> float:
        """FLOP per byte."""
        return arithmetic_intensity(self.flops, self.n_bytes)

    @property
    def tflops(self) -> float:
        """The attained rate, TFLOP/s."""
        return self.flops / (self.ms * 1e-3) / 1e12

    @property
    def gbps(self) -> float:
        """The attained traffic, GB/s."""
        return self.n_bytes / (self.ms * 1e-3) / 1e9


@dataclass
class Placement:
    """Everything one GPU's records put on its roofline.

    Attributes:
        gpu: the GPU's name (``'NVIDIA H100 80GB HBM3'``).
        slug: its folder of the measurements folder (:func:`gpuperf.bench.records.measurements_dir`).
        hardware: its ``hardware.json``.
        roofs: measured roofs by ceiling key (:func:`roofs`).
        datasheet: datasheet roofs by ceiling key (:func:`datasheet_roofs`).
        points: every placed row.
        skipped: ``(benchmark, reason, rows)`` for what could not be placed.
        notes: what a reader must know (a stale record, say).
        provenance: ``{benchmark: provenance}`` of every record placed.
    """

    gpu: str
    slug: str
    hardware: dict
    roofs: dict[str, Roof]
    datasheet: dict[str, Roof]
    points: list[Point] = field(default_factory=list)
    skipped: list[tuple[str, str, int]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    provenance: dict[str, dict] = field(default_factory=dict)

    @property
    def bandwidth_gbps(self) -> float:
        """The measured copy bandwidth, GB/s."""
        return self.hardware["ceilings"][BANDWIDTH_KEY]["value"]

    @property
    def memory_key(self) -> str:
        """The ceiling the memory roof is (:func:`memory_key`): ``"stream_gbps"`` or ``"copy_gbps"``."""
        return memory_key(self.hardware)

    @property
    def memory_gbps(self) -> float:
        """The memory roof, GB/s: the stream bandwidth where measured, else the copy's."""
        return self.hardware["ceilings"][self.memory_key]["value"]

    def roof_of(self, point: Point) -> Roof:
        """The measured roof ``point`` is read against."""
        return self.roofs[point.roof]

    def fraction(self, point: Point) -> float:
        """``point``'s attained rate over its roof at its intensity (1.0: on the roof)."""
        return point.tflops / self.roof_of(point).attainable(point.intensity)

    def beyond_roof(self, point: Point) -> bool:
        """Whether ``point`` is above its roof by more than the spread of both
        measurements: its rate at the slow end of its time (80th percentile) is above
        its roof built from the fast ends of the ceilings (their 80th percentiles of
        rate). A row or ceiling without percentiles is taken at its median."""
        ceilings = self.hardware["ceilings"]
        peak, memory = ceilings[point.roof], ceilings[self.memory_key]
        high = attainable_tflops(
            point.intensity, peak.get("value_p80", peak["value"]), memory.get("value_p80", memory["value"])
        )
        slow_ms = point.ms_p80 if point.ms_p80 else point.ms
        return point.flops / (slow_ms * 1e-3) / 1e12 > high

    def launch_floor_ms(self) -> float | None:
        """The shortest kernel time among the points, ms: launching and draining a kernel
        that does almost nothing. None without points, or where the shortest is above
        :data:`MAX_LAUNCH_FLOOR_MS` (the GPU's records hold no near-empty kernel: a GPU
        with only attention's records, say, whose shortest call still does real work)."""
        floor = min((p.ms for p in self.points), default=None)
        return floor if floor is not None and floor <= MAX_LAUNCH_FLOOR_MS else None

    def launch_bound(self, point: Point) -> bool:
        """Whether ``point`` took less than :data:`LAUNCH_FACTOR` times :meth:`launch_floor_ms`."""
        floor = self.launch_floor_ms()
        return floor is not None and point.ms < LAUNCH_FACTOR * floor

    def find(self, benchmark: str, provider: str | None = None, x=None, **axes) -> list[Point]:
        """The points of ``benchmark`` (and ``provider``, ``x`` and the axis values given)."""
        return [
            p
            for p in self.points
            if p.benchmark == benchmark
            and (provider is None or p.provider == provider)
            and (x is None or p.x == x)
            and all(p.axes.get(k) == v for k, v in axes.items())
        ]

    def has(self, benchmark: str) -> bool:
        """Whether a current record of ``benchmark`` is placed here (a record of code that
        has changed since is placed only on the reference GPU, with a note)."""
        return benchmark in self.provenance

    def largest(self, benchmark: str, provider: str | None = None, **axes) -> Point | None:
        """Of :meth:`find`'s points, the one doing the most work (FLOPs, then bytes), or None."""
        found = self.find(benchmark, provider, **axes)
        return max(found, key=lambda p: (p.flops, p.n_bytes), default=None)


def _roof_key(row: dict, record: dict, benchmark=None) -> str:
    """The compute roof ``row`` is read against (see the module's docstring)."""
    key = row["ceiling"]
    if key is not None and record["ceilings"].get(key, {}).get("unit") == "TFLOP/s":
        return key
    if benchmark is not None:
        return benchmark.compute_roof_key(**row["axes"])
    return DEFAULT_ROOF


def _skip(skipped: list, benchmark: str, reason: str) -> None:
    for i, (name, why, n) in enumerate(skipped):
        if (name, why) == (benchmark, reason):
            skipped[i] = (name, why, n + 1)
            return
    skipped.append((benchmark, reason, 1))


def place_record(
    record: dict, roof_keys, l2_bytes: int | None = None, benchmark=None
) -> tuple[list[Point], list]:
    """Place one record's rows: ``(points, skipped)``, ``skipped`` as in :attr:`Placement.skipped`.

    Args:
        record: a record (:func:`gpuperf.bench.records.read`).
        roof_keys: the compute ceilings the GPU has roofs for; a row read against
            another is skipped.
        l2_bytes: the GPU's L2 size, bytes (None: no row is marked L2-resident).
        benchmark: the record's :class:`~gpuperf.bench.catalog.benchmark.Benchmark`, whose
            ``compute_roof`` names the roof of rows read against a bandwidth (None: a
            benchmark no catalog declares; such rows get :data:`DEFAULT_ROOF`).
    """
    name = record["benchmark"]
    skipped: list = []
    if record["metric"] not in PLACED_METRICS:
        what = {"us/call": "host time per call", "GiB": "peak memory"}.get(record["metric"], record["metric"])
        return [], [(name, f"{what}, not a GPU rate", len(record["rows"]))]
    subject = record["rows"][0]["provider"] if record["rows"] else None
    # The baseline as the benchmark declares it now (a record keeps the one of its run).
    baseline = benchmark.baseline if benchmark is not None else record["baseline"]
    points = []
    # Failed rows by status, with their providers (from the rows: a reader must not take a
    # baseline's failure for the kernel's).
    failed: dict[str, list[str]] = {}
    for row in record["rows"]:
        if row["status"] != "ok":
            failed.setdefault(row["status"], []).append(row["provider"])
            continue
        if not row["flops"] or not row["bytes"] or row["flops"] < 0 or row["bytes"] < 0:
            _skip(skipped, name, "zero FLOPs or bytes: no intensity")
            continue
        if not row["ms"] or row["ms"] <= 0:
            _skip(skipped, name, "no time")
            continue
        roof = _roof_key(row, record, benchmark)
        if roof not in roof_keys:
            _skip(skipped, name, f"no roof {roof!r} measured on this GPU")
            continue
        role = "other"
        if row["provider"] == subject:
            role = "subject"
        elif row["provider"] == baseline:
            role = "baseline"
        points.append(
            Point(
                benchmark=name,
                title=record["title"],
                provider=row["provider"],
                label=row["label"],
                role=role,
                x=row["x"],
                axes=dict(row["axes"]),
                n_bytes=row["bytes"],
                flops=row["flops"],
                ms=row["ms"],
                roof=roof,
                l2_resident=bool(l2_bytes) and row["bytes"] <= l2_bytes,
                ms_p80=row.get("ms_p80"),
            )
        )
    for status, providers in failed.items():
        names = ", ".join(sorted(set(providers)))
        skipped.insert(0, (name, f"status {status} ({names})", len(providers)))
    return points, skipped


def load_gpu(gpu: str, root: Path | None = None) -> Placement:
    """Place every record in the folder of ``gpu`` (a slug, ``'nvidia-h200'``) on its roofline.

    Every ``*.json`` beside ``hardware.json`` is read, whichever benchmark it holds, so
    a new benchmark's record is placed once it is committed. A record the catalog
    declares is checked for staleness: on the reference GPU a stale one is placed with a
    note, on another GPU it is skipped; a malformed one is skipped.

    Raises:
        FileNotFoundError: the folder has no ``hardware.json``.
    """
    from gpuperf.bench import catalog

    folder = (root or records.measurements_dir()) / gpu
    hw_path = folder / "hardware.json"
    if not hw_path.is_file():
        raise FileNotFoundError(f"no {hw_path}: the roofline needs the ceilings measured on {gpu}")
    hardware = json.loads(hw_path.read_text())
    name = hardware["provenance"]["gpu"]
    placement = Placement(name, gpu, hardware, roofs(hardware), datasheet_roofs(name))
    l2 = hardware["provenance"].get("l2_bytes")
    for path in sorted(folder.glob("*.json")):
        if path.name == "hardware.json":
            continue
        try:
            record = records.read(path)
        except (ValueError, KeyError) as err:
            _skip(placement.skipped, path.stem, f"malformed record ({str(err)[:80]})")
            continue
        try:
            benchmark = catalog.by_name(record["benchmark"])
        except KeyError:
            benchmark = None
        stale = [] if benchmark is None else records.staleness(record, benchmark)
        if stale and gpu != records.reference_gpu():
            # Another GPU's record of code that has changed since: it no longer describes it.
            placement.skipped.append((path.stem, "measured before its code changed", len(record["rows"])))
            continue
        points, skipped = place_record(record, placement.roofs, l2, benchmark)
        placement.points += points
        placement.skipped += skipped
        if not points:
            continue
        placement.provenance[record["benchmark"]] = record["provenance"]
        placement.notes += [f"STALE {record['benchmark']}: {reason}" for reason in stale]
    return placement


def gpus(root: Path | None = None) -> list[str]:
    """Slugs of the GPU folders with a ``hardware.json``: the reference GPU first, then by name."""
    root = root or records.measurements_dir()
    if not root.is_dir():
        return []
    found = sorted(p.name for p in root.iterdir() if (p / "hardware.json").is_file())
    return sorted(found, key=lambda slug: slug != records.reference_gpu())


# What the chart shows ---------------------------------------------------------------


@dataclass
class Series:
    """One provider of one benchmark in one axis combination, as the chart draws it.

    Attributes:
        benchmark: the benchmark's name.
        provider: the provider's key.
        role: as :attr:`Point.role`.
        axes: the axis combination.
        name: the chart's label for the benchmark in this combination
            (``'matmul float16'``; the axes named only where they tell the
            benchmark's drawn combinations apart).
        points: its points, in the record's order (sizes ascending, shapes as declared).
        pair: for the causal counterpart of a drawn combination, that combination's
            series of the same provider (None otherwise).
    """

    benchmark: str
    provider: str
    role: str
    axes: dict
    name: str
    points: list[Point]
    pair: Series | None = None

    @property
    def largest(self) -> Point:
        """The point doing the most work (FLOPs, then bytes)."""
        return max(self.points, key=lambda p: (p.flops, p.n_bytes))


#: Axis values as chart labels show them.
_SHORT = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32"}
#: Values of one axis that read otherwise there: matmul_fp8's float32 accumulation is
#: promoted FP8 accumulation, not a float32 product ("fp32" would name the CUDA-core roof).
_SHORT_BY_AXIS = {("accumulation", "float32"): "promoted"}


def _short(axis: str, value) -> str:
    """How a chart label shows ``value`` of ``axis``."""
    return _SHORT_BY_AXIS.get((axis, str(value)), _SHORT.get(str(value), str(value)))


def _drawn_combos(points: list[Point]) -> list[dict]:
    """A benchmark's combinations the chart draws, in the record's order: the first of each
    roof (a dtype axis whose dtypes have their own roofs shows each), and any other whose
    kernel under study reaches, at its largest size, an intensity more than
    :data:`SAME_INTENSITY` away from every one drawn on that roof (an elementwise kernel
    in two dtypes, say). A causal combination is left to its non-causal counterpart,
    which :func:`chart_series` pairs it with."""
    combos: list[dict] = []
    for p in points:
        if p.role == "subject" and p.axes not in combos:
            combos.append(p.axes)
    drawn: list[tuple[dict, Point]] = []
    for combo in combos:
        if combo.get("causal") is True and {**combo, "causal": False} in combos:
            continue
        top = max(
            (p for p in points if p.role == "subject" and p.axes == combo), key=lambda p: (p.flops, p.n_bytes)
        )
        if all(
            q.roof != top.roof or abs(math.log(q.intensity / top.intensity)) > math.log(SAME_INTENSITY)
            for _, q in drawn
        ):
            drawn.append((combo, top))
    return [combo for combo, _ in drawn]


def chart_series(placement: Placement) -> list[Series]:
    """What :func:`plot` draws of one GPU, chosen from the points alone.

    For each benchmark, the combinations of :func:`_drawn_combos`; in each, every
    provider (its points at every size); and, where the benchmark has a ``causal``
    axis, the kernel under study with ``causal`` flipped, paired with its
    counterpart so that the chart can join the two.
    """
    out: list[Series] = []
    benchmarks = list(dict.fromkeys(p.benchmark for p in placement.points))
    for bench in benchmarks:
        mine = [p for p in placement.points if p.benchmark == bench]
        drawn = _drawn_combos(mine)
        varying = [k for k in (drawn[0] if drawn else {}) if len({str(c[k]) for c in drawn}) > 1]
        for combo in drawn:
            name = " ".join([bench, *(_short(k, combo[k]) for k in varying)])
            providers = dict.fromkeys(p.provider for p in mine if p.axes == combo)
            made = {}
            for key in providers:
                pts = [p for p in mine if p.axes == combo and p.provider == key]
                made[key] = Series(bench, key, pts[0].role, combo, name, pts)
                out.append(made[key])
            if "causal" in combo:
                flipped = {**combo, "causal": not combo["causal"]}
                for key, series in made.items():
                    pts = [p for p in mine if p.axes == flipped and p.provider == key]
                    if series.role == "subject" and pts:
                        causal = "causal" if flipped["causal"] else "not causal"
                        out.append(Series(bench, key, "subject", flipped, f"{name}, {causal}", pts, series))
    return out


def bound_by(placement: Placement, point: Point) -> str:
    """``"memory"`` left of its roof's ridge point, ``"compute"`` from it on."""
    return "memory" if point.intensity < placement.roof_of(point).ridge else "compute"


#: Marks a share of the roof that is above it by more than the spread of the measurements.
BEYOND_MARK = "†"


def table(placements: list[Placement]) -> str:
    """The numbers behind the chart: for each GPU, the kernel under study and the baseline
    of every drawn series at its largest size, by intensity: FLOP/B, TFLOP/s, GB/s, the
    compute roof of the engine and dtype it runs on with that roof's ridge point, what
    bounds it there, and its share of the roof at its intensity (its rate over
    ``min(P, I * W)``: over ``I * W`` when memory-bound). A share above the roof by more
    than the spread of both measurements (:meth:`Placement.beyond_roof`) is marked
    :data:`BEYOND_MARK`, and a line under the table says what that means.

    Fixed-width text, or HTML when ``GPUPERF_TABLES=html`` (:mod:`gpuperf.pages.tables`).
    """
    from gpuperf.pages.plotting import format_combo, format_x, short_gpu_name
    from gpuperf.pages.tables import Cell, Section, render

    sections, beyond = [], []
    for placement in placements:
        section = Section(
            short_gpu_name(placement.gpu),
            [
                "benchmark",
                "axes",
                "provider",
                "largest x",
                "FLOP/B",
                "TFLOP/s",
                "GB/s",
                "roof (ridge FLOP/B)",
                "bound by",
                "% of roof",
            ],
        )
        shown = [s.largest for s in chart_series(placement) if s.role != "other"]
        for p in sorted(shown, key=lambda p: (p.intensity, p.benchmark, p.role != "subject")):
            frac = placement.fraction(p)
            mark = ""
            if placement.beyond_roof(p):
                mark = f" {BEYOND_MARK}"
                beyond.append(bound_by(placement, p))
            roof = placement.roof_of(p)
            section.rows.append(
                [
                    Cell(p.benchmark, p.benchmark),
                    Cell(format_combo(p.axes) or "-"),
                    Cell(p.provider + (" (ours)" if p.role == "subject" else ""), p.provider),
                    Cell(format_x(p.x), p.flops),
                    Cell(f"{p.intensity:.3g}", p.intensity),
                    Cell(f"{p.tflops:.3g}", p.tflops),
                    Cell(f"{p.gbps:.0f}", p.gbps),
                    Cell(f"{p.roof.removesuffix('_tflops')} ({roof.ridge:.0f})", p.roof),
                    Cell(bound_by(placement, p)),
                    Cell(f"{100 * frac:.0f}%{mark}", frac),
                ]
            )
        if section.rows:
            sections.append(section)
    notes = [note for p in placements for note in p.notes]
    if not sections:
        return render(sections, notes)
    memory = sorted({CEILINGS[p.memory_key][0] for p in placements})
    footer = (
        "roof: the compute roof of the unit and dtype the kernel's arithmetic runs on "
        "(fp32: the CUDA cores; bf16, fp16, fp8: the tensor cores); % of roof: the rate "
        f"over min(peak, intensity x {' or '.join(memory)})."
    )
    if beyond:
        footer += (
            f" {BEYOND_MARK}: above the roof by more than the spread of both measurements "
            "(the row's 80th-percentile time against the ceilings' 80th-percentile rates)"
        )
        if "memory" in beyond and any(p.memory_key == BANDWIDTH_KEY for p in placements):
            footer += (
                "; a memory-bound one streams faster than the copy that measured the "
                "bandwidth roof (reading A says which traffic does)"
            )
        footer += "."
    return render(sections, notes, footer)
