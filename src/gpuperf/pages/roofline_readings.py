"""What the roofline guide reads off its charts, as sentences printed from the records.

Each function takes the GPUs' placements (:func:`gpuperf.pages.roofline.load_gpu`) and
returns the lines the guide prints for one of its readings, naming the GPUs that hold a
current record of what it reads (another GPU's record of code that has changed since is
not placed, so that GPU is left out of the readings that need it): the roofs measured against
the datasheet's, the three marked kernels (memory-bound on its roof, compute-bound near
it, far below it), and the model's limits (launch latency, L2, uneven work, units the
chart does not draw). :func:`in_one_paragraph` opens the guide with its answer. Nothing
here is typed by hand: every number comes from a record.
"""

from __future__ import annotations

import itertools

from gpuperf.bench import catalog, records
from gpuperf.bench.hardware import CEILINGS, STREAMS
from gpuperf.pages import roofline
from gpuperf.pages.plotting import ceiling_label, format_rate, format_x, short_gpu_name
from gpuperf.pages.prose import Paragraph, fill, paragraph, percent
from gpuperf.pages.report import stream_mix
from gpuperf.pages.roofline import Placement

#: Streaming kernels by how many bytes they read per byte they write (the tensors each
#: reads per tensor it writes: ``n_inputs`` of their byte counts in the catalog):
#: ``(benchmark, axes, reads per write)``. The copy that measures the bandwidth roof
#: reads one byte per byte written.
READ_MIX = (
    ("gelu", {"dtype": "float32"}, 1),
    ("vector_add", {}, 2),
    ("add_relu_mul", {"dtype": "float32"}, 3),
)

#: The kernels the guide rings and reads: ``{letter: (benchmark, provider, axes)}``.
MARKS = {
    "A": ("vector_add", "triton", {}),
    "B": ("matmul", "triton", {"dtype": "bfloat16"}),
    "C": ("softmax", "naive", {}),
}


def placements() -> list[Placement]:
    """Every GPU with committed ceilings and records, placed on its roofline."""
    return [roofline.load_gpu(gpu) for gpu in roofline.gpus()]


def charted(places: list[Placement]) -> list[Placement]:
    """The GPUs of ``places`` with a record to draw: a GPU whose every record was measured
    before its code changed has no point to place, and no chart (:func:`skipped` lists its
    records and why)."""
    return [p for p in places if p.points]


def marked(placement: Placement, letter: str):
    """The point ringed with ``letter`` (:data:`MARKS`) on ``placement``, or None.

    Raises:
        ValueError: ``letter`` is not one of :data:`MARKS`.
    """
    if letter not in MARKS:
        raise ValueError(f"letter must be one of {sorted(MARKS)}, got {letter!r}")
    bench, provider, axes = MARKS[letter]
    return placement.largest(bench, provider, **axes)


def _lines(out: list[str]) -> str:
    """The lines joined, each wrapped at 88 columns (a code cell's output on the site)."""
    return fill(out, " " * 16)


def _name(placement: Placement) -> str:
    return f"{short_gpu_name(placement.gpu):<15}"


def in_one_paragraph(places: list[Placement] | None = None) -> Paragraph:
    """The guide's answer: per GPU, the ridge point, and how close the marked
    memory-bound and compute-bound kernels come to their roofs.

    A GPU is read on the marked kernels it has a current record of, and left out without
    either; only the reference GPU (:func:`gpuperf.bench.records.reference_gpu`) gets a
    note for a missing one, and for its stale records."""
    places = placements() if places is None else places
    sentences, notes = [], []
    for p in places:
        a, b = marked(p, "A"), marked(p, "B")
        bf16 = p.roofs.get("bf16_tflops")
        if p.slug == records.reference_gpu():
            notes += [f"{short_gpu_name(p.gpu)}: {n}" for n in p.notes]
            if a is None or b is None or bf16 is None:
                notes.append(f"{short_gpu_name(p.gpu)}: the vector add or bf16 matmul record is missing")
        # Another GPU without a current record of a marked kernel is read on the others alone.
        if bf16 is None or (a is None and b is None):
            continue
        clauses = []
        if a is not None:
            clauses.append(
                f"vector add ({a.intensity:.3f} FLOP/B) reaches {percent(p.fraction(a))} of its roof"
            )
        if b is not None:
            share = percent(p.fraction(b)) if clauses else f"reaches {percent(p.fraction(b))} of its roof"
            clauses.append(f"the bf16 matmul at {format_x(b.x)} ({b.intensity:.0f} FLOP/B) {share}")
        sentences.append(
            f"On the {short_gpu_name(p.gpu)} the measured bf16 roof meets the "
            f"{_memory_label(p)} ({format_rate(p.memory_gbps, 'GB/s')}) at {bf16.ridge:.0f} FLOP/B: "
            + " and ".join(clauses)
            + "."
        )
    if sentences:
        sentences.append(
            "Almost everything but large matmuls and attention is memory-bound, and a "
            "kernel on its roof can only go faster by moving fewer bytes."
        )
    return paragraph(*sentences, notes=notes)


def _memory_label(placement: Placement) -> str:
    """``'stream bandwidth'`` or ``'copy bandwidth'``: what the memory roof of ``placement`` is."""
    return CEILINGS[placement.memory_key][0]


def roofs(places: list[Placement]) -> str:
    """Each GPU's measured roofs beside the datasheet's: the stream bandwidth (where
    measured: the memory roof, else the copy is; with the stream that set it) and the copy
    bandwidth, and per dtype the peak TFLOP/s and ridge point, with the measured share of
    the datasheet figure and what the roof was measured with
    (:func:`~gpuperf.pages.plotting.ceiling_label`: the call, the shape that set it and,
    FP8's, the accumulation mode)."""
    out = []
    for p in places:
        sheet = p.datasheet
        theirs = next(iter(sheet.values())).bandwidth_gbps if sheet else None
        out.append(f"{p.gpu}, measured {p.hardware['provenance']['date'][:10]} (datasheet):")
        for key in roofline.MEMORY_KEYS:
            if key not in p.hardware["ceilings"]:
                continue
            value = p.hardware["ceilings"][key]["value"]
            line = f"  {CEILINGS[key][0]:<19} {format_rate(value, 'GB/s'):>10}"
            if theirs:
                line += f" ({format_rate(theirs, 'GB/s')}: {value / theirs:.0%})"
            stream = p.hardware["ceilings"][key].get("stream")
            if stream:
                line += f", by {stream}"
            out.append(line + (", the memory roof" if key == p.memory_key else ""))
        for key, roof in sorted(p.roofs.items(), key=lambda item: -item[1].peak_tflops):
            line = f"  {roof.label:<18} {roof.peak_tflops:>5.0f} TFLOP/s"
            if key in sheet:
                line += f" ({sheet[key].peak_tflops:.0f}: {roof.peak_tflops / sheet[key].peak_tflops:.0%})"
            line += f", ridge {roof.ridge:.0f} FLOP/B"
            if key in sheet:
                line += f" ({sheet[key].ridge:.0f})"
            out.append(line)
            # What the roof was measured with, from its entry: the call, the shape that set it
            # and, FP8's, the accumulation mode (a roof only for what runs the same way).
            if key in CEILINGS:
                under = " " * 23  # under the roof's numbers
                out.append(under + ceiling_label(key, p.hardware["ceilings"][key], name=False))
    return "\n".join(out)


def memory_bound(places: list[Placement]) -> str:
    """Reading A: vector add at its largest size against the bandwidth slope, per GPU with
    a current record of it, and the rate from the first such GPU to the second against the
    ratio of their copy bandwidths."""
    out = []
    for p in places:
        a = marked(p, "A")
        if a is None:
            continue
        out.append(
            f"{_name(p)} vector add {format_x(a.x)}: {a.gbps:,.0f} GB/s = {a.tflops:.3f} TFLOP/s, "
            f"{percent(p.fraction(a))} of the roof at {a.intensity:.3f} FLOP/B "
            f"({roofline.bound_by(p, a)}-bound: the ridge is at "
            f"{p.roof_of(a).ridge / a.intensity:,.0f}x its intensity)"
        )
    pairs = [(p, a) for p in places if (a := marked(p, "A")) is not None][:2]
    if len(pairs) == 2:
        (first, a1), (second, a2) = pairs
        out.append(
            f"{short_gpu_name(second.gpu)} / {short_gpu_name(first.gpu)}: "
            f"{a2.tflops / a1.tflops:.2f}x the rate, with "
            f"{second.bandwidth_gbps / first.bandwidth_gbps:.2f}x the copy bandwidth"
        )
    return _lines(out)


def read_mix(places: list[Placement]) -> str:
    """The streaming kernels of :data:`READ_MIX` at their largest size, per GPU: bytes
    read per byte written against the share of the bandwidth roof, each share marked
    :data:`~gpuperf.pages.roofline.BEYOND_MARK` when it is above the roof by more than
    the spread of both measurements; then the same kernels against the copy bandwidth
    their records measured beside the roof in the same run (:func:`copy_shares`), which
    those reading more than they write pass; whether the shares rise with the reads per
    write; and every placed row above the memory roof beyond the spread
    (:func:`above_memory_roof`)."""
    out = []
    for p in places:
        parts = []
        for bench, axes, reads in READ_MIX:
            point = p.largest(bench, "triton", **axes)
            if point is None:
                continue
            mark = roofline.BEYOND_MARK if p.beyond_roof(point) else ""
            parts.append(f"{bench} {reads}:1 {percent(p.fraction(point))}{mark}")
        if parts:
            roof = _memory_label(p).removesuffix(" bandwidth")
            out.append(f"{_name(p)} read:write, share of the {roof} roof: " + ", ".join(parts))
            copies = copy_shares(p)
            if copies and p.memory_key != roofline.BANDWIDTH_KEY:
                each = ", ".join(
                    f"{bench} {percent(share)}{roofline.BEYOND_MARK if beyond else ''}"
                    for bench, share, beyond in copies
                )
                out.append(f"{'':<15} of the copy bandwidth measured in the same run: {each}")
    rising = [_rises_with_reads(p) for p in places]
    rising = [r for r in rising if r is not None]
    if rising:
        out.append(
            f"the share rises with the bytes read per byte written on {sum(rising)} of {len(rising)} GPUs"
        )
    out += above_memory_roof(places)
    return _lines(out)


def streams(places: list[Placement]) -> str:
    """The streams the stream bandwidth is the fastest of, per GPU whose ``hardware.json``
    holds them (``streams`` of its ``stream_gbps`` entry): each stream's median rate and its
    mix of reads and writes (:func:`~gpuperf.pages.report.stream_mix`), slowest first, the
    one that set the roof marked; then whether the rate rises with the reads per write
    among the streams that write, and where the streams that only read fall. ``''`` where
    no GPU holds them."""
    out = []
    for p in places:
        entry = p.hardware["ceilings"].get("stream_gbps") or {}
        rates = {name: v for name, v in (entry.get("streams") or {}).items() if name in STREAMS}
        if not rates:
            continue
        order = sorted(rates, key=rates.get)
        each = ", ".join(
            f"{name} ({stream_mix(name)}) {format_rate(rates[name], 'GB/s')}"
            + (", the roof" if name == entry.get("stream") else "")
            for name in order
        )
        out.append(f"{_name(p)} streams, slowest first: {each}")
        writing = [name for name in STREAMS if STREAMS[name] is not None and name in rates]
        if len(writing) >= 2:
            rising = all(rates[a] < rates[b] for a, b in itertools.pairwise(writing))
            out.append(
                f"{'':<15} the streams that write: {'faster' if rising else 'not always faster'} "
                "with more reads per write"
            )
        alone = [name for name in STREAMS if STREAMS[name] is None and name in rates]
        if alone and writing:
            fastest_writer = max(writing, key=rates.get)
            above = [n for n in alone if rates[n] > rates[fastest_writer]]
            below = [n for n in alone if rates[n] <= rates[fastest_writer]]
            parts = []
            if above:
                parts.append(f"{' and '.join(above)} above every stream that writes")
            if below:
                parts.append(f"{' and '.join(below)} below {fastest_writer}")
            out.append(f"{'':<15} the streams that only read: " + "; ".join(parts))
    return _lines(out)


def copy_shares(placement: Placement) -> list[tuple[str, float, bool]]:
    """``(benchmark, share, beyond)`` for each kernel of :data:`READ_MIX` (its kernel under
    study at its largest size) whose record holds the copy bandwidth measured in the same
    run: its rate over that copy's, and whether it is above it beyond the spread of both
    timings (the row's 20th percentile above the copy's 80th). ``[]`` where no record
    holds one (records read against the copy itself, say)."""
    from gpuperf.pages.report import load

    found = []
    for bench, axes, _ in READ_MIX:
        point = placement.largest(bench, "triton", **axes)
        if point is None:
            continue
        result = load(catalog.by_name(bench), placement.slug)
        copy = (result.record or {}).get("ceilings", {}).get("copy_gbps")
        row = result.rows(**axes).get(point.x) if result.record else None
        if copy is None or row is None:
            continue
        beyond = row.get("value_p20", row["value"]) > copy.get("value_p80", copy["value"])
        found.append((bench, row["value"] / copy["value"], beyond))
    return found


def above_memory_roof(places: list[Placement]) -> list[str]:
    """One line per GPU naming every placed row, of any provider, that sits above the
    memory roof beyond the spread of both measurements
    (:meth:`~gpuperf.pages.roofline.Placement.beyond_roof`), with its share to a tenth of a
    percent: the roof is the fastest stream measured, a rate the memory was shown to
    reach rather than its limit. Where no row is, one line per GPU whose memory roof is the
    stream bandwidth and which has memory-bound rows, saying so."""
    out = []
    for p in places:
        above = [
            point for point in p.points if roofline.bound_by(p, point) == "memory" and p.beyond_roof(point)
        ]
        roof = ceiling_label(p.memory_key, p.hardware["ceilings"][p.memory_key])
        if not above:
            if p.memory_key == "stream_gbps" and any(roofline.bound_by(p, q) == "memory" for q in p.points):
                out.append(f"{_name(p)} no row above the {roof} beyond the spread of both timings")
            continue
        each = ", ".join(
            " ".join([point.benchmark, point.provider, format_x(point.x), *_axes(point.axes)])
            + f" ({100 * p.fraction(point):.1f}%)"
            for point in above
        )
        out.append(f"{_name(p)} above the {roof} beyond the spread of both timings: {each}")
    return out


def _axes(axes: dict) -> list[str]:
    return [f"{k}={v}" for k, v in axes.items()]


def _rises_with_reads(placement: Placement) -> bool | None:
    """Whether the :data:`READ_MIX` kernels' shares of the memory roof rise with their reads
    per write on ``placement`` (None without at least two of them)."""
    shares = []
    for bench, axes, _ in READ_MIX:
        point = placement.largest(bench, "triton", **axes)
        if point is not None:
            shares.append(placement.fraction(point))
    if len(shares) < 2:
        return None
    return all(a < b for a, b in itertools.pairwise(shares))


def compute_bound(places: list[Placement]) -> str:
    """Reading B: the bf16 matmul at its largest size against its roof (and the roof's own
    spread), cuBLAS in the same run and tutorial 06's persistent kernel; then the matmuls
    with one small dimension, which fall left of the ridge."""
    out = []
    for p in places:
        b = marked(p, "B")
        if b is None:
            continue
        roof = p.roof_of(b)
        spread = p.hardware["ceilings"][b.roof]
        line = (
            f"{_name(p)} matmul bf16 {format_x(b.x)}: {b.intensity:.0f} FLOP/B, "
            f"{b.tflops:.0f} TFLOP/s, {percent(p.fraction(b))} of the {roof.label} roof "
            f"({roof.peak_tflops:.0f}; its 20th-80th percentiles "
            f"{spread['value_p20']:.0f}-{spread['value_p80']:.0f})"
        )
        cublas = p.largest("matmul", "cublas", dtype="bfloat16")
        persistent = p.largest("matmul_persistent", "triton")
        if cublas is not None:
            line += f"; cuBLAS {cublas.tflops:.0f}"
        if persistent is not None:
            line += f"; tutorial 06's persistent kernel {percent(p.fraction(persistent))}"
        out.append(line)
    for p in places:
        for s in p.find("matmul", "triton", dtype="bfloat16"):
            if min(s.x) < 64:
                roof = p.roof_of(s)
                out.append(
                    f"{_name(p)} matmul bf16 {format_x(s.x)}: {s.intensity:.1f} FLOP/B, "
                    f"{roofline.bound_by(p, s)}-bound (the {roof.label} roof's ridge is at "
                    f"{roof.ridge:.0f}), {s.gbps:,.0f} GB/s = {percent(p.fraction(s))} of its roof"
                )
    return _lines(out)


def real_traffic(places: list[Placement]) -> str:
    """Tutorial 03's program-order matmul (fp16) at its largest profiled shape, per GPU
    with Nsight Compute counters: the bytes each order really read from DRAM, the FLOPs
    per byte read against the ridge of the roof the matmul is read against, the DRAM
    read rate as a share of the GPU's memory roof (named from its entry: the stream
    bandwidth where measured, a rate reads alone can reach, else the copy's), and the
    share of the roof each reached (:func:`gpuperf.pages.matmul.counter_rows`)."""
    from gpuperf.pages import matmul

    out = []
    for p in places:
        ncu = matmul.ncu_record(p.slug)
        if ncu is None:
            continue
        rows = {(r["shape"], r["order"]): r for r in matmul.counter_rows(ncu, p.memory_gbps)}
        memory = ceiling_label(p.memory_key, p.hardware["ceilings"][p.memory_key])
        shape = max({s for s, _ in rows}, key=lambda s: s[0] * s[1] * s[2])
        for order, provider in (("grouped", "triton"), ("row-major", "triton_rowmajor")):
            counted, found = rows.get((shape, order)), p.find("matmul_order", provider, x=shape)
            if counted is None or not found:
                continue
            point = found[0]
            roof = p.roof_of(point)
            real = point.flops / counted["dram"]
            side = "right" if real >= roof.ridge else "left"
            out.append(
                f"{_name(p)} {format_x(shape)} {order:<9}: {counted['dram'] / 1e9:.1f} GB read from "
                f"DRAM ({counted['times_minimum']:.0f}x the least), {real:.0f} FLOP per byte read, "
                f"{side} of the {roof.key.removesuffix('_tflops')} ridge ({roof.ridge:.0f}); "
                f"DRAM reads at {percent(counted['of_copy'])} of the {memory}; "
                f"{percent(p.fraction(point))} of the roof"
            )
    return _lines(out)


def far_below(places: list[Placement]) -> str:
    """Reading C: eager softmax (five kernels) against the fused Triton kernel and
    ``torch.compile``, and the traffic it really moves (tutorial 02's count: 8 passes over
    the data where 2 would do) streamed as a share of the memory roof, named from its
    entry (the stream bandwidth, the fastest rate the memory was shown to stream)."""
    out = []
    rows = catalog.SOFTMAX_ROWS
    for p in places:
        naive, fused = marked(p, "C"), p.largest("softmax", "triton")
        if naive is None or fused is None:
            continue
        # Eight passes over the data where the least traffic (the row's bytes) is two.
        moved = naive.n_bytes * 8 / 2
        streamed = moved / (naive.ms * 1e-3) / 1e9 / p.memory_gbps
        roof = ceiling_label(p.memory_key, p.hardware["ceilings"][p.memory_key])
        out.append(
            f"{_name(p)} naive softmax {rows} x {naive.x}: {percent(p.fraction(naive))} of the "
            f"roof; fused {percent(p.fraction(fused))}, {naive.ms / fused.ms:.1f}x faster; "
            f"the naive code moves {moved / naive.n_bytes:.0f}x the least traffic, streamed at "
            f"{percent(streamed)} of the {roof}"
        )
        compiled = p.largest("softmax", "compile")
        if compiled is not None:
            out.append(f"{'':<15} torch.compile of the naive code: {percent(p.fraction(compiled))}")
    return _lines(out)


def launch_bound(places: list[Placement]) -> str:
    """The vector add sizes bound by launch latency (under
    :data:`~gpuperf.pages.roofline.LAUNCH_FACTOR` times the GPU's shortest kernel)."""
    out = []
    for p in places:
        floor = p.launch_floor_ms()
        bound = [s for s in p.find("vector_add", "triton") if p.launch_bound(s)]
        if floor is None or not bound:
            continue
        shares = [100 * p.fraction(s) for s in bound]
        out.append(
            f"{_name(p)} shortest kernel {floor * 1e3:.1f} us; vector add launch-bound from "
            f"{format_x(min(s.x for s in bound))} to {format_x(max(s.x for s in bound))} "
            f"elements ({min(s.ms for s in bound) * 1e3:.1f}-{max(s.ms for s in bound) * 1e3:.1f}"
            f" us a call, {min(shares):.2f}-{max(shares):.1f}% of the roof)"
        )
    return _lines(out)


def l2_resident(places: list[Placement]) -> str:
    """The memory-bound sizes of kernels under study whose traffic fits in L2 and that are
    not launch-bound: how many, how many sit above the HBM roof, and the highest."""
    out = []
    for p in places:
        cached = [
            s
            for s in p.points
            if s.role == "subject"
            and s.l2_resident
            and not p.launch_bound(s)
            and roofline.bound_by(p, s) == "memory"
        ]
        if not cached:
            continue
        top = max(cached, key=p.fraction)
        above = sum(p.fraction(s) > 1 for s in cached)
        l2 = p.hardware["provenance"]["l2_bytes"]
        out.append(
            f"{_name(p)} L2 {l2 / 2**20:.0f} MiB: {len(cached)} memory-bound sizes fit in it; "
            f"{above} above the HBM roof; the highest, {top.benchmark} at {format_x(top.x)}, "
            f"{percent(p.fraction(top))} of the HBM roof"
        )
    return _lines(out)


def causal(places: list[Placement]) -> str:
    """Each causal attention kernel at its largest size against the same kernel without
    the mask: its rate, and its time for half the FLOPs."""
    out = []
    for p in places:
        for series in roofline.chart_series(p):
            if series.pair is None:
                continue
            half, full = series.largest, series.pair.largest
            axes = ", ".join(f"{k}={v}" for k, v in full.axes.items() if k != "causal")
            out.append(
                f"{_name(p)} {half.benchmark:<18} {axes}, S={half.x}: causal "
                f"{half.tflops:.0f} TFLOP/s, not causal {full.tflops:.0f} "
                f"({half.tflops / full.tflops:.0%}); {half.ms / full.ms:.0%} of the time"
            )
    return _lines(out)


def head_dims(places: list[Placement]) -> str:
    """Attention forward (fp16, not causal, each implementation's longest sequence): its
    share of the roof at head dim 64 and at 128, labelled with the benchmark, dtype, mask
    and sequence length of the rows the shares come from."""
    out = []
    for p in places:
        shares: dict[str, dict[int, float]] = {}
        chosen = []
        for d in (64, 128):
            for s in p.find("attention_forward", dtype="float16", head_dim=d, causal=False):
                if s.x == max(q.x for q in p.find("attention_forward", s.provider)):
                    shares.setdefault(s.provider, {})[d] = p.fraction(s)
                    chosen.append(s)
        both = {k: v for k, v in shares.items() if len(v) == 2}
        if not both:
            continue
        used = [s for s in chosen if s.provider in both]
        dtypes = sorted({s.axes["dtype"] for s in used})
        masks = sorted({"causal" if s.axes["causal"] else "not causal" for s in used})
        lengths = sorted({s.x for s in used})
        where = f"S={lengths[0]}" if len(lengths) == 1 else "each at its longest S"
        lower = sum(v[64] < v[128] for v in both.values())
        out.append(
            f"{short_gpu_name(p.gpu)}, {used[0].benchmark} {'/'.join(dtypes)}, {'/'.join(masks)}, "
            f"{where}: share of the roof at D = 64 / D = 128:"
        )
        out.append("  " + ", ".join(f"{k} {percent(v[64])} / {percent(v[128])}" for k, v in both.items()))
        out.append(f"  lower at D = 64 for {lower} of {len(both)} implementations")
    return _lines(out)


def skipped(places: list[Placement]) -> str:
    """The rows the chart does not place (host time, peak memory, failed rows), and why."""
    return _lines([f"{_name(p)} {b:<20} {n:>4} rows: {why}" for p in places for b, why, n in p.skipped])
