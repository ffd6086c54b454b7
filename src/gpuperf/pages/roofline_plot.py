"""The roofline chart: every benchmark record of each GPU on its measured roofs.

One figure for all GPUs, in two rows of panels (GPU beside GPU): the whole chart,
then its compute-bound corner magnified, where the matmuls and attention crowd
together. What is drawn is chosen by :func:`gpuperf.pages.roofline.chart_series`
from the records alone, so a new benchmark's record appears without code here.
Labels are placed where they overlap nothing drawn before them (a greedy search
over offsets around each point), joined to their point by a thin line when they
had to move.
"""

from __future__ import annotations

import math
import textwrap

from gpuperf.bench import records
from gpuperf.pages.plotting import _STYLE, format_rate, format_x, provider_color, short_gpu_name
from gpuperf.pages.roofline import LAUNCH_FACTOR, Placement, Point, Roof, Series, chart_series

#: Marker shapes, one per benchmark, handed out in order of intensity.
MARKERS = ("o", "s", "D", "^", "v", "P", "X", "*", "h", "p", "<", ">", "d", "8", "H")
_ROOF_COLOR = "#222222"
_SHEET_COLOR = "#8a8a8a"
_L2_FACE = "#f2d04b"
_OTHER_COLOR = "#b5b5b5"
_NOTE_COLOR = "#8a5a00"
_MARK_COLOR = "#b00020"
_TEXT_PT = 7.5

# Layout, in inches: two panels a row, about as wide as the page shows the figure.
_LEFT, _PANEL_W, _GAP, _RIGHT = 0.62, 3.7, 0.5, 0.12
_TOP, _TITLE_H, _PANEL_H, _BELOW = 0.4, 0.28, 4.2, 0.5
_LINE = 0.17


def markers(placements: list[Placement]) -> dict[str, str]:
    """``{benchmark: marker}``, shared by every panel, in order of the largest intensity."""
    reach: dict[str, float] = {}
    for placement in placements:
        for p in placement.points:
            reach[p.benchmark] = max(reach.get(p.benchmark, 0.0), p.intensity)
    ordered = sorted(reach, key=lambda b: (reach[b], b))
    return {b: MARKERS[i % len(MARKERS)] for i, b in enumerate(ordered)}


def _group(roof_list, within: float = 1.15) -> list[list[Roof]]:
    """Roofs whose peaks lie within ``within`` of each other, grouped (their tags would collide)."""
    groups: list[list[Roof]] = []
    for roof in sorted(roof_list, key=lambda r: r.peak_tflops):
        if groups and roof.peak_tflops <= groups[-1][0].peak_tflops * within:
            groups[-1].append(roof)
        else:
            groups.append([roof])
    return groups


def _dtype(key: str) -> str:
    return key.removesuffix("_tflops")


def fmt(value: float) -> str:
    """A rate or an intensity to two or three significant digits (``'724'``, ``'51.7'``, ``'0.083'``)."""
    if value >= 100:
        return f"{value:.0f}"
    if value >= 1:
        return f"{value:.3g}"
    return f"{value:.2g}"


#: Where a label may go around its point, in points, tried in order.
_OFFSETS = tuple(
    (sx * dx, sy * dy)
    for dx, dy in ((7, 2), (0, 8), (14, 12), (28, 0), (0, 22), (26, 26), (46, 12), (0, 38), (60, 30), (80, 0))
    for sx, sy in ((1, 1), (1, -1), (-1, 1), (-1, -1))
    if not (dx == 0 and sx < 0) and not (dy == 0 and sy < 0)
)


def _overlap(a, b) -> float:
    w = min(a.x1, b.x1) - max(a.x0, b.x0)
    h = min(a.y1, b.y1) - max(a.y0, b.y0)
    return w * h if w > 0 and h > 0 else 0.0


#: Where a letter may go beside its ring, in points, tried in order.
_LETTER_OFFSETS = ((-8, 8), (8, 8), (-8, -8), (8, -8), (-13, 0), (13, 0), (0, 13), (0, -13))


def _place_labels(ax, renderer, labels, obstacles: list, offsets=_OFFSETS, **style) -> None:
    """Put each ``(x, y, text, color)`` of ``labels`` at the first of ``offsets`` (points)
    from its point where it overlaps nothing in ``obstacles`` (display boxes) and stays
    inside the axes, joined to the point by a thin line when it had to move away; where
    it overlaps least otherwise. Each placed label joins ``obstacles``; ``style`` goes to
    the text (a font weight, say)."""
    frame = ax.get_window_extent(renderer)
    style = {"fontsize": _TEXT_PT, "zorder": 8} | style
    for x, y, text, color in labels:
        best = None
        for dx, dy in offsets:
            far = abs(dx) > 10 or abs(dy) > 10
            t = ax.annotate(
                text,
                (x, y),
                xytext=(dx, dy),
                textcoords="offset points",
                ha="left" if dx > 0 else "right" if dx < 0 else "center",
                va="bottom" if dy > 0 else "top" if dy < 0 else "center",
                color=color,
                arrowprops={"arrowstyle": "-", "lw": 0.5, "color": "#777777", "shrinkB": 4}
                if far and offsets is _OFFSETS
                else None,
                bbox={"boxstyle": "square,pad=0.05", "fc": "white", "ec": "none", "alpha": 0.8},
                **style,
            )
            box = t.get_window_extent(renderer)
            outside = box.width * box.height - _overlap(box, frame)
            cost = sum(_overlap(box, o) for o in obstacles) + 4 * outside
            if best is None or cost < best[0]:
                if best is not None:
                    best[1].remove()
                best = (cost, t, box)
            else:
                t.remove()
            if cost == 0:
                break
        obstacles.append(best[2])


def _box(ax, x, y, radius_px: float):
    from matplotlib.transforms import Bbox

    px, py = ax.transData.transform((x, y))
    return Bbox.from_extents(px - radius_px, py - radius_px, px + radius_px, py + radius_px)


def _segments(points: list[Point]) -> list[list[Point]]:
    """Runs of neighbouring points a trail may join: sizes, or square shapes (as the
    tutorials' plots join them); a lone shape (a model's product, say) stands alone."""
    from gpuperf.pages.plotting import _joined

    runs: list[list[Point]] = []
    for p in points:
        if runs and _joined(runs[-1][-1].x, p.x):
            runs[-1].append(p)
        else:
            runs.append([p])
    return runs


def _inside(p: Point, region) -> bool:
    (x0, x1), (y0, y1) = region
    return x0 <= p.intensity <= x1 and y0 <= p.tflops <= y1


def _decades(low: float, high: float) -> tuple[float, float]:
    return 10 ** math.floor(math.log10(low)), 10 ** math.ceil(math.log10(high))


def regions(placements: list[Placement], every: list[list[Series]]):
    """``(whole, corner)``, each ``(xlim, ylim)`` shared by every GPU: the whole chart in
    whole decades, and the compute-bound corner (from the highest measured ridge up,
    around the kernels under study and their baselines), or None when nothing is there."""
    drawn = [
        pt for series in every for s in series for pt in (s.points if s.role == "subject" else [s.largest])
    ]
    ridges = [r.ridge for p in placements for r in p.roofs.values()]
    peaks = [r.peak_tflops for p in placements for r in (*p.roofs.values(), *p.datasheet.values())]
    xs = [p.intensity for p in drawn] + ridges
    whole = (
        _decades(min(xs) / 2, max(xs) * 4),
        _decades(min(p.tflops for p in drawn) / 1.5, max(peaks) * 2),
    )
    ridge = max(ridges)
    main = [
        pt
        for series in every
        for s in series
        if s.role != "other"
        for pt in (s.points if s.role == "subject" and s.pair is None else [s.largest])
        if pt.intensity >= ridge
    ]
    if not main:
        return whole, None
    measured = [r.peak_tflops for p in placements for r in p.roofs.values()]
    corner = (
        (min(p.intensity for p in main) / 1.5, max(p.intensity for p in main) * 1.8),
        (min(p.tflops for p in main) / 1.25, max(measured + [p.tflops for p in main]) * 1.3),
    )
    return whole, corner


def _draw_roofs(ax, placement: Placement, xlim, *, corner: bool) -> list:
    """Draw the measured roofs (solid, ridges dotted) and the datasheet's (dotted); tag each
    at the right end (in the corner with its value, and the datasheet's too); return the tags."""
    lo, hi = xlim
    tags = []
    for roof_map, color, measured in (
        (placement.datasheet, _SHEET_COLOR, False),
        (placement.roofs, _ROOF_COLOR, True),
    ):
        shown = [r for k, r in roof_map.items() if k in placement.roofs]
        for roof in shown:
            xs = [lo, roof.ridge, hi] if lo < roof.ridge < hi else [lo, hi]
            ax.plot(
                xs,
                [roof.attainable(x) for x in xs],
                "-" if measured else ":",
                color=color,
                lw=1.3 if measured else 1.1,
                zorder=2,
            )
            if measured and lo < roof.ridge < hi:
                ax.plot([roof.ridge], [roof.peak_tflops], "o", ms=3.5, color=color, zorder=3)
        if not (measured or corner):
            continue
        for group in _group(shown):
            names = "/".join(_dtype(r.key) for r in group)
            if corner:
                same = len({round(r.peak_tflops) for r in group}) == 1
                names = (
                    f"{names} {fmt(group[0].peak_tflops)}"
                    if same
                    else " / ".join(f"{_dtype(r.key)} {fmt(r.peak_tflops)}" for r in group)
                )
            tags.append(
                ax.annotate(
                    names if measured else f"{names} (datasheet)",
                    (hi, max(r.peak_tflops for r in group)),
                    xytext=(-3, 1.5 if measured else -1.5),
                    textcoords="offset points",
                    ha="right",
                    va="bottom" if measured else "top",
                    fontsize=7,
                    color=color,
                    zorder=4,
                )
            )
    return tags


def _roof_table(ax, placement: Placement):
    """The roofs' numbers, measured (datasheet), in the chart's empty upper left corner
    (high rates at low intensity: above every roof)."""
    sheet = placement.datasheet
    lines = [f"copy {format_rate(placement.bandwidth_gbps, 'GB/s')}"]
    if sheet:
        lines[0] += f" ({format_rate(next(iter(sheet.values())).bandwidth_gbps, 'GB/s')})"
    for roof in sorted(placement.roofs.values(), key=lambda r: -r.peak_tflops):
        theirs = f" ({fmt(sheet[roof.key].peak_tflops)})" if roof.key in sheet else ""
        lines.append(f"{_dtype(roof.key)} {fmt(roof.peak_tflops)}{theirs} TFLOP/s, ridge {fmt(roof.ridge)}")
    return ax.text(
        0.02,
        0.98,
        "measured (datasheet)\n" + "\n".join(lines),
        transform=ax.transAxes,
        ha="left",
        va="top",
        fontsize=6.5,
        family="monospace",
        color=_ROOF_COLOR,
        bbox={"boxstyle": "round,pad=0.4", "fc": "white", "ec": "#cccccc"},
        zorder=9,
    )


def _draw_points(ax, placement: Placement, series: list[Series], shapes: dict) -> list:
    """Draw every series; return ``(point, kind, text)`` for what may be labelled, ``kind``
    one of ``"subject"``, ``"causal"``, ``"shape"`` (a lone shape of a trail) and
    ``"marker"`` (a large marker: not labelled, kept clear of labels)."""
    out = []
    for s in series:
        m = shapes[s.benchmark]
        color = provider_color(s.provider)
        top = s.largest
        if s.role == "other":
            ax.plot([top.intensity], [top.tflops], m, ms=4.5, color=_OTHER_COLOR, zorder=2)
            continue
        if s.role == "subject" and s.pair is None:
            for run in _segments(s.points):
                if len(run) > 1:
                    ax.plot(
                        [p.intensity for p in run],
                        [p.tflops for p in run],
                        "-",
                        lw=0.9,
                        color=color,
                        alpha=0.55,
                        zorder=3,
                    )
                elif run[0] is not top:
                    out.append((run[0], "shape", format_x(run[0].x)))
            for p in s.points:
                if p is not top:
                    face = "white" if placement.launch_bound(p) else _L2_FACE if p.l2_resident else color
                    ax.plot([p.intensity], [p.tflops], m, ms=4.5, mfc=face, mec=color, mew=0.9, zorder=4)
        if s.pair is not None:
            other = s.pair.largest
            ax.plot(
                [other.intensity, top.intensity],
                [other.tflops, top.tflops],
                ":",
                color=color,
                lw=1.1,
                zorder=3,
            )
        ax.plot(
            [top.intensity],
            [top.tflops],
            m,
            ms=8 if s.pair is None else 6.5,
            mfc=color,
            mec="black",
            mew=0.8,
            zorder=5,
        )
        if s.role != "subject":
            out.append((top, "marker", ""))
        else:
            out.append((top, "subject", s.name) if s.pair is None else (top, "causal", ""))
    return out


def limit_notes(placement: Placement, series: list[Series]) -> list[tuple[Point, str]]:
    """The model's limits where the chart shows them: the slowest launch-bound size of a
    kernel under study, its memory-bound L2-resident size nearest its roof, and the
    first causal kernel."""
    trail = [p for s in series if s.role == "subject" and s.pair is None for p in s.points]
    notes = []
    bound = [p for p in trail if placement.launch_bound(p)]
    if bound:
        p = min(bound, key=lambda p: p.tflops)
        notes.append((p, f"launch-bound: {p.ms * 1e3:.1f} µs a call"))
    cached = [
        p
        for p in trail
        if p.l2_resident and not placement.launch_bound(p) and p.intensity < placement.roof_of(p).ridge
    ]
    if cached:
        p = max(cached, key=placement.fraction)
        notes.append((p, f"traffic ≤ L2: {100 * placement.fraction(p):.0f}% of the HBM roof"))
    causal = [s for s in series if s.pair is not None and s.axes.get("causal")]
    if causal:
        notes.append((causal[0].largest, "causal: half the FLOPs counted"))
    return notes


def _panel(ax, renderer, placement, series, shapes, region, *, corner: bool, labelled, marks) -> None:
    """One panel: the whole chart, or (``corner``) the magnified compute-bound corner.
    Labels go to the points for which ``labelled(point)`` is true."""
    (x0, x1), (y0, y1) = region
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    ax.set_facecolor("white")
    ax.grid(True, which="major", color="#e4e4e4", lw=0.6)
    ax.set_axisbelow(True)
    ax.tick_params(labelsize=8)
    obstacles = [t.get_window_extent(renderer) for t in _draw_roofs(ax, placement, (x0, x1), corner=corner)]
    drawn = _draw_points(ax, placement, series, shapes)
    if not corner:
        obstacles.append(_roof_table(ax, placement).get_window_extent(renderer))
    obstacles += [_box(ax, p.intensity, p.tflops, 5) for p, kind, _ in drawn if kind != "shape"]
    rings = []
    for letter, (bench, provider, axes) in marks.items():
        p = placement.largest(bench, provider, **axes)
        if p is None or not labelled(p):
            continue
        ax.plot([p.intensity], [p.tflops], "o", ms=17, mfc="none", mec=_MARK_COLOR, mew=1.4, zorder=7)
        obstacles.append(_box(ax, p.intensity, p.tflops, 10))
        rings.append((p.intensity, p.tflops, letter, _MARK_COLOR))
    _place_labels(ax, renderer, rings, obstacles, _LETTER_OFFSETS, fontsize=10, fontweight="bold", zorder=9)
    order = {"subject": 0, "shape": 2}
    seen = set()
    labels = []
    for p, kind, text in sorted(drawn, key=lambda d: order.get(d[1], 3)):
        if kind not in order or not labelled(p) or (kind == "shape" and (corner or text in seen)):
            continue
        seen.add(text)
        labels.append((p.intensity, p.tflops, text, "#111111" if kind == "subject" else "#555555"))
    _place_labels(ax, renderer, labels, obstacles)
    notes = [
        (p.intensity, p.tflops, text, _NOTE_COLOR)
        for p, text in limit_notes(placement, series)
        if labelled(p)
    ]
    _place_labels(ax, renderer, notes, obstacles)
    if corner:
        from matplotlib.ticker import FuncFormatter, LogLocator

        for axis, subs in ((ax.xaxis, (1.0, 2.0, 5.0)), (ax.yaxis, (1.0, 2.0, 3.0, 5.0))):
            axis.set_major_locator(LogLocator(subs=subs))
            axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            axis.set_minor_formatter(FuncFormatter(lambda v, _: ""))


def _legend_handles(every: list[list[Series]]) -> list:
    from matplotlib.lines import Line2D

    ours = provider_color("triton")
    handles = [
        Line2D(
            [], [], ls="-", color=_ROOF_COLOR, label="measured roofs: copy, cuBLAS per dtype, cuBLASLt fp8"
        ),
        Line2D([], [], ls=":", color=_SHEET_COLOR, label="datasheet roofs"),
        Line2D(
            [], [], ls="", marker="o", ms=8, mfc=ours, mec="black", label="kernel under study, largest size"
        ),
        Line2D([], [], ls="-", lw=0.9, marker="o", ms=4.5, color=ours, label="the same at its smaller sizes"),
        Line2D([], [], ls="", marker="o", ms=4.5, mfc=_L2_FACE, mec=ours, label="traffic fits in L2"),
        Line2D(
            [],
            [],
            ls="",
            marker="o",
            ms=4.5,
            mfc="white",
            mec=ours,
            label=f"launch-bound: under {LAUNCH_FACTOR:g}× the GPU's shortest kernel time",
        ),
        Line2D(
            [],
            [],
            ls=":",
            marker="o",
            ms=6.5,
            mfc=ours,
            mec="black",
            color=ours,
            label="causal, joined to the same kernel not causal",
        ),
        Line2D([], [], ls="", marker="o", ms=4.5, color=_OTHER_COLOR, label="other providers, largest size"),
    ]
    baselines: dict[str, dict] = {}
    for series in every:
        for s in series:
            if s.role == "baseline":
                baselines.setdefault(s.provider, {})[s.points[0].label] = None
    for key, labels in baselines.items():
        text = "\n".join(textwrap.wrap("baseline: " + "; ".join(labels), 58, subsequent_indent="  "))
        handles.append(
            Line2D([], [], ls="", marker="o", ms=8, mfc=provider_color(key), mec="black", label=text)
        )
    return handles


def captions(placement: Placement) -> list[str]:
    """Provenance lines for one GPU: the run that measured its roofs, and the records' dates and commits."""
    hw = placement.hardware["provenance"]
    dates = sorted(p["date"][:10] for p in placement.provenance.values())
    commits = sorted({p["gpuperf_commit"] for p in placement.provenance.values()})
    lines = textwrap.wrap(f"{short_gpu_name(placement.gpu)} roofs: {records.caption(hw)}", 150)
    if dates:
        lines.append(
            f"    {len(placement.provenance)} records placed, measured {dates[0]} to {dates[-1]} "
            f"at gpuperf {', '.join(commits)}"
        )
    if placement.notes:
        lines.append(
            f"STALE ({short_gpu_name(placement.gpu)}): {len(placement.notes)} of the records were measured "
            "before their kernels last changed (the tutorials' pages say which)"
        )
    return lines


def plot(placements: list[Placement], *, marks: dict | None = None):
    """Every benchmark record of each GPU on its roofline; return the matplotlib ``Figure``.

    Two GPUs a row, each with its whole chart, and below them the compute-bound
    corner magnified; every panel of a kind shares its axes. Drawn: the measured
    roofs (solid, ridge points dotted) and the datasheet's (dotted), their numbers in
    a box; for each benchmark (one marker shape each) the kernel under study at its
    largest size (large, labelled) with a trail through its other sizes, the declared
    baseline at its largest size (large, in the provider's colour), every other
    provider at its largest size (small, grey); sizes whose traffic fits in L2
    (yellow) and sizes bound by launch latency (hollow) marked; causal attention
    joined to its non-causal counterpart. Under the panels: the legends and each
    GPU's provenance.

    Args:
        placements: one per GPU (:func:`gpuperf.pages.roofline.load_gpu`), in order.
        marks: ``{letter: (benchmark, provider, axes)}``: the largest size of each named
            series ringed and lettered, as a page's text reads them.

    Raises:
        ValueError: no placement has a point.
    """
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Rectangle

    placements = [p for p in placements if p.points]
    if not placements:
        raise ValueError("placements must hold at least one GPU with a placed record, got none")
    shapes = markers(placements)
    every = [chart_series(p) for p in placements]
    whole, corner = regions(placements, every)
    marks = marks or {}

    cols = min(2, len(placements))
    chunks = [list(range(i, min(i + cols, len(placements)))) for i in range(0, len(placements), cols)]
    kinds = ("whole", "corner") if corner else ("whole",)
    row_h = _TITLE_H + _PANEL_H + _BELOW
    width = _LEFT + cols * _PANEL_W + (cols - 1) * _GAP + _RIGHT
    handles = _legend_handles(every)
    shape_handles = [
        Line2D([], [], ls="", marker=m, ms=6, mfc="white", mec="black", label=b) for b, m in shapes.items()
    ]
    first_rows = max(
        sum(h.get_label().count("\n") + 1 for h in handles[: math.ceil(len(handles) / 2)]),
        sum(h.get_label().count("\n") + 1 for h in handles[math.ceil(len(handles) / 2) :]),
    )
    legend_h = 0.16 * (first_rows + math.ceil(len(shapes) / 3) + 1) + 0.2
    lines = [line for p in placements for line in captions(p)]
    caption_h = _LINE * len(lines) + 0.15
    height = _TOP + len(chunks) * len(kinds) * row_h + legend_h + caption_h

    with plt.rc_context(_STYLE):
        fig = plt.figure(figsize=(width, height), facecolor="white")
        renderer = fig.canvas.get_renderer()
        row = 0
        for chunk in chunks:
            for kind in kinds:
                top = height - _TOP - row * row_h - _TITLE_H
                for col, i in enumerate(chunk):
                    placement, series = placements[i], every[i]
                    x = _LEFT + col * (_PANEL_W + _GAP)
                    ax = fig.add_axes(
                        [x / width, (top - _PANEL_H) / height, _PANEL_W / width, _PANEL_H / height]
                    )
                    name = short_gpu_name(placement.gpu)
                    if kind == "whole":
                        ax.set_title(name, loc="left", fontsize=10, fontweight="bold")
                        region, labelled = whole, (lambda p: corner is None or not _inside(p, corner))
                    else:
                        ax.set_title(f"{name}: the dashed box magnified", loc="left", fontsize=9)
                        region, labelled = corner, (lambda p: _inside(p, corner))
                    _panel(
                        ax,
                        renderer,
                        placement,
                        series,
                        shapes,
                        region,
                        corner=kind == "corner",
                        labelled=labelled,
                        marks=marks,
                    )
                    if kind == "whole" and corner is not None:
                        (cx0, cx1), (cy0, cy1) = corner
                        box = Rectangle(
                            (cx0, cy0), cx1 - cx0, cy1 - cy0, fill=False, ec="#888888", lw=0.8, ls="--"
                        )
                        ax.add_patch(box)
                    ax.set_xlabel("arithmetic intensity, FLOP per byte (least traffic)", fontsize=8.5)
                    if col == 0:
                        ax.set_ylabel("attained TFLOP/s", fontsize=8.5)
                row += 1

        y = (caption_h + legend_h) / height
        common = {"loc": "upper left", "frameon": False, "fontsize": _TEXT_PT, "columnspacing": 1.2}
        first = fig.legend(handles=handles, bbox_to_anchor=(0.0, y), ncol=2, handlelength=1.8, **common)
        below = first.get_window_extent(renderer).y0 / fig.dpi / height
        title = {
            "title": "benchmarks, one marker shape each",
            "title_fontsize": _TEXT_PT,
            "alignment": "left",
        }
        second = fig.legend(handles=shape_handles, bbox_to_anchor=(0.0, below), ncol=3, **title, **common)
        fig.add_artist(first)
        fig.suptitle(
            "Every benchmark on its GPU's roofline, from the committed records",
            fontsize=11,
            x=0.01,
            ha="left",
            y=1 - 0.08 / height,
            va="top",
        )
        y = second.get_window_extent(renderer).y0 / fig.dpi - 0.05
        for line in lines:
            y -= _LINE
            fig.text(
                0.01,
                y / height,
                line,
                fontsize=7,
                color=_MARK_COLOR if line.startswith("STALE") else "#222222",
            )
    return fig
