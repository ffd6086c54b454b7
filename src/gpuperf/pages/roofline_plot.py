"""The roofline charts: every benchmark record of a GPU on its measured roofs.

Two figures per GPU: :func:`overview`, the whole chart, and :func:`compute_bound`, its
compute-bound corner magnified, where the matmuls and attention crowd together. What is
drawn is chosen by :func:`gpuperf.pages.roofline.chart_series` from the records alone,
so a new benchmark's record appears without code here. Labels are placed where they
overlap no other text and as few markers as possible (a greedy search over offsets
around each point), joined to their point by a thin line when they had to move; a label
with no such place goes to a column beside the panel. No two texts of a figure overlap
(tested with :func:`gpuperf.pages.plotting.overlapping_texts`).
"""

from __future__ import annotations

import itertools
import math
import textwrap

from matplotlib.text import Text

from gpuperf.bench import records
from gpuperf.pages.plotting import PLOT_STYLE, format_rate, format_x, provider_color, short_gpu_name
from gpuperf.pages.roofline import LAUNCH_FACTOR, Placement, Point, Roof, Series, chart_series

#: Marker shapes, one per benchmark, handed out in order of intensity.
MARKERS = ("o", "s", "D", "^", "v", "P", "X", "*", "h", "p", "<", ">", "d", "8", "H")
_ROOF_COLOR = "#222222"
_SHEET_COLOR = "#8a8a8a"
_L2_FACE = "#f2d04b"
_OTHER_COLOR = "#b5b5b5"
_NOTE_COLOR = "#8a5a00"
_MARK_COLOR = "#b00020"
_BASELINE_COLOR = "#4d4d4d"
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


def _place_labels(
    ax, renderer, labels, obstacles: list, texts: list, parked: list, offsets=_OFFSETS, **style
):
    """Put each ``(x, y, text, color)`` of ``labels`` at the first of ``offsets`` (points)
    from its point where it overlaps no text in ``texts`` (display boxes), stays inside
    the axes, and overlaps least of ``obstacles`` (markers), joined to the point by a thin
    line when it had to move away. A label with no such place joins ``parked`` (for
    :func:`_park`) instead: labels never collide. Each placed label joins ``texts`` and
    ``obstacles``; ``style`` goes to the text (a font weight, say)."""
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
            box = _text_box(t, renderer)
            inside = _overlap(box, frame) >= 0.999 * box.width * box.height
            if not inside or any(_overlap(box, o) > 0 for o in texts):
                t.remove()
                continue
            cost = sum(_overlap(box, o) for o in obstacles)
            if best is None or cost < best[0]:
                if best is not None:
                    best[1].remove()
                best = (cost, t, box)
            else:
                t.remove()
            if cost == 0:
                break
        if best is None:
            parked.append((x, y, text, color, style))
            continue
        obstacles.append(best[2])
        texts.append(best[2])


def _park(ax, renderer, parked: list) -> None:
    """The labels that found no room beside their point, in a column right of the axes at
    about their point's height, moved apart until none overlaps another, each joined to
    its point by a thin line."""
    if not parked:
        return
    frame = ax.get_window_extent(renderer)
    gap = 2.0
    items = []
    for x, y, text, color, style in parked:
        t = ax.annotate(
            "\n".join(textwrap.wrap(text, 22)),
            (x, y),
            xytext=(1.03, 0.5),
            textcoords="axes fraction",
            ha="left",
            va="center",
            color=color,
            annotation_clip=False,
            arrowprops={"arrowstyle": "-", "lw": 0.5, "color": "#999999", "shrinkB": 4},
            **style,
        )
        height = _text_box(t, renderer).height
        want = min(max(ax.transData.transform((x, y))[1], frame.y0), frame.y1)
        items.append([want, height, t])
    items.sort(key=lambda item: -item[0])
    for above, below in itertools.pairwise(items):  # top down: push apart
        below[0] = min(below[0], above[0] - (above[1] + below[1]) / 2 - gap)
    shift = frame.y0 + items[-1][1] / 2 - items[-1][0]
    if shift > 0:  # ran below the axes: move the column up
        for item in items:
            item[0] += shift
    for centre, _, t in items:
        t.set_position((1.03, (centre - frame.y0) / frame.height))


def _text_box(annotation, renderer):
    """The display box of an annotation's text, without its leader line."""
    annotation.update_positions(renderer)
    return Text.get_window_extent(annotation, renderer)


def _box(ax, x, y, radius_px: float):
    from matplotlib.transforms import Bbox

    px, py = ax.transData.transform((x, y))
    return Bbox.from_extents(px - radius_px, py - radius_px, px + radius_px, py + radius_px)


def _table_box(ax, table, renderer):
    """The display box (at ``renderer``'s dpi) of the roof table's frame, padding included,
    large enough at every resolution the pages save: its eight lines of small text come out
    relatively wider at 200 dpi and taller at 100."""
    from matplotlib.transforms import Bbox

    fig = ax.figure
    layout_dpi, boxes = fig.dpi, []
    for dpi in sorted({layout_dpi, 100, _LAYOUT_DPI}):
        fig.set_dpi(dpi)
        r = fig.canvas.get_renderer()
        table.update_bbox_position_size(r)
        box = table.get_bbox_patch().get_window_extent(r)
        boxes.append(Bbox(box.get_points() * (layout_dpi / dpi)))
    fig.set_dpi(layout_dpi)
    table.update_bbox_position_size(renderer)
    return Bbox.union(boxes)


def _frame_edges(ax, box, width_px: float = 3.0) -> list:
    """The four edges of the dashed ``box`` (``((x0, x1), (y0, y1))`` in data), each a thin
    display box: obstacles, so that a label's white background does not cut the frame
    where another place is as good."""
    from matplotlib.transforms import Bbox

    (x0, x1), (y0, y1) = box
    (px0, py0), (px1, py1) = ax.transData.transform([(x0, y0), (x1, y1)])
    w = width_px / 2
    return [
        Bbox.from_extents(px0 - w, py0 - w, px1 + w, py0 + w),
        Bbox.from_extents(px0 - w, py1 - w, px1 + w, py1 + w),
        Bbox.from_extents(px0 - w, py0 - w, px0 + w, py1 + w),
        Bbox.from_extents(px1 - w, py0 - w, px1 + w, py1 + w),
    ]


def _segments(points: list[Point]) -> list[list[Point]]:
    """Runs of neighbouring points a trail may join: sizes, or square shapes (as the
    tutorials' plots join them); a lone shape (a model's product, say) stands alone."""
    from gpuperf.pages.plotting import may_join

    runs: list[list[Point]] = []
    for p in points:
        if runs and may_join(runs[-1][-1].x, p.x):
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
    at the right end, on a white box that no other line strikes through (in the corner with
    its value, and the datasheet's too); return the tags."""
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
                    # On white: a datasheet roof or the corner's outline may run through the
                    # tag's height, and would strike its text through.
                    bbox={"boxstyle": "square,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.9},
                    zorder=4,
                )
            )
    return _spread_tags(ax, tags)


def _spread_tags(ax, tags: list) -> list:
    """Move each roof tag that overlaps one before it (measured roofs' tags come first)
    leftward along its roof until it overlaps none; drop a datasheet tag that cannot."""
    renderer = ax.figure.canvas.get_renderer()
    kept, boxes = [], []
    for tag in sorted(tags, key=lambda t: "datasheet" in t.get_text()):
        dx, dy = tag.xyann
        for shift in range(8):
            tag.xyann = (dx - 70 * shift, dy)
            box = _text_box(tag, renderer)
            if not any(_overlap(box, b) > 0 for b in boxes):
                break
        else:
            if "datasheet" in tag.get_text():
                tag.remove()
                continue
        kept.append(tag)
        boxes.append(box)
    return kept


def _roof_table(ax, placement: Placement):
    """The roofs' numbers, measured (datasheet), in the chart's empty upper left corner
    (high rates at low intensity: above every roof)."""
    sheet = placement.datasheet
    lines = [f"copy {format_rate(placement.bandwidth_gbps, 'GB/s')}"]
    if sheet:
        lines[0] += f" ({format_rate(next(iter(sheet.values())).bandwidth_gbps, 'GB/s')})"
    if placement.memory_key != "copy_gbps":
        # The memory roof the slopes are drawn at, above the copy (the datasheet has one figure).
        lines.insert(0, f"stream {format_rate(placement.memory_gbps, 'GB/s')} (roof)")
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
        color = _BASELINE_COLOR if s.role == "baseline" else provider_color(s.provider)
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


def _panel(
    ax, renderer, placement, series, shapes, region, *, corner: bool, labelled, marks, box=None
) -> None:
    """One panel: the whole chart, or (``corner``) the magnified compute-bound corner.
    Labels go to the points for which ``labelled(point)`` is true; ``box`` (the whole chart's
    ``((x0, x1), (y0, y1))`` of the corner) is drawn dashed, with its note placed before the
    labels so that none lands on it."""
    (x0, x1), (y0, y1) = region
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    ax.set_facecolor("white")
    ax.grid(True, which="major", color="#e4e4e4", lw=0.6)
    ax.set_axisbelow(True)
    ax.tick_params(labelsize=8)
    texts = [t.get_window_extent(renderer) for t in _draw_roofs(ax, placement, (x0, x1), corner=corner)]
    drawn = _draw_points(ax, placement, series, shapes)
    if not corner:
        texts.append(_table_box(ax, _roof_table(ax, placement), renderer))
    edges = []
    if box is not None:
        from matplotlib.patches import Rectangle

        (cx0, cx1), (cy0, cy1) = box
        ax.add_patch(Rectangle((cx0, cy0), cx1 - cx0, cy1 - cy0, fill=False, ec="#888888", lw=0.8, ls="--"))
        note = ax.text(cx0, cy1, " magnified below", fontsize=7, color="#666666", va="bottom", ha="left")
        texts.append(note.get_window_extent(renderer))
        edges = _frame_edges(ax, box)
    obstacles = list(texts) + edges
    parked: list = []
    obstacles += [_box(ax, p.intensity, p.tflops, 5) for p, kind, _ in drawn if kind != "shape"]
    rings = []
    for letter, (bench, provider, axes) in marks.items():
        p = placement.largest(bench, provider, **axes)
        if p is None or not labelled(p):
            continue
        ax.plot([p.intensity], [p.tflops], "o", ms=17, mfc="none", mec=_MARK_COLOR, mew=1.4, zorder=7)
        obstacles.append(_box(ax, p.intensity, p.tflops, 10))
        rings.append((p.intensity, p.tflops, letter, _MARK_COLOR))
    _place_labels(
        ax,
        renderer,
        rings,
        obstacles,
        texts,
        parked,
        _LETTER_OFFSETS,
        fontsize=10,
        fontweight="bold",
        zorder=9,
    )
    order = {"subject": 0, "shape": 2}
    seen = set()
    labels = []
    for p, kind, text in sorted(drawn, key=lambda d: order.get(d[1], 3)):
        if kind not in order or not labelled(p) or (kind == "shape" and (corner or text in seen)):
            continue
        seen.add(text)
        labels.append((p.intensity, p.tflops, text, "#111111" if kind == "subject" else "#555555"))
    _place_labels(ax, renderer, labels, obstacles, texts, parked)
    notes = [
        (p.intensity, p.tflops, text, _NOTE_COLOR)
        for p, text in limit_notes(placement, series)
        if labelled(p)
    ]
    _place_labels(ax, renderer, notes, obstacles, texts, parked)
    _park(ax, renderer, parked)
    if corner:
        from matplotlib.ticker import FuncFormatter, LogLocator

        for axis, subs in ((ax.xaxis, (1.0, 2.0, 5.0)), (ax.yaxis, (1.0, 2.0, 3.0, 5.0))):
            axis.set_major_locator(LogLocator(subs=subs))
            axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            axis.set_minor_formatter(FuncFormatter(lambda v, _: ""))


def _legend_handles(kind: str) -> list:
    """The legend of a figure of ``kind`` (``"overview"`` or ``"corner"``): at most nine
    entries. Benchmarks are not in it: each kernel under study is labelled on the chart,
    and its baseline and other providers share its marker shape."""
    from matplotlib.lines import Line2D

    ours = provider_color("triton")
    dot = {"ls": "", "marker": "o"}
    handles = [
        Line2D([], [], ls="-", color=_ROOF_COLOR, label="measured roofs (memory; cuBLAS, cuBLASLt)"),
        Line2D([], [], ls=":", color=_SHEET_COLOR, label="datasheet roofs"),
        Line2D([], [], **dot, ms=8, mfc=ours, mec="black", label="gpuperf kernel, largest size"),
    ]
    if kind == "overview":
        handles += [
            Line2D([], [], ls="-", lw=0.9, marker="o", ms=4.5, color=ours, label="its smaller sizes"),
            Line2D([], [], **dot, ms=4.5, mfc=_L2_FACE, mec=ours, label="traffic fits in L2"),
            Line2D(
                [],
                [],
                **dot,
                ms=4.5,
                mfc="white",
                mec=ours,
                label=f"launch-bound (< {LAUNCH_FACTOR:g}× shortest kernel)",
            ),
        ]
    handles += [
        Line2D(
            [], [], ls=":", marker="o", ms=6.5, mfc=ours, mec="black", color=ours, label="causal ⋯ not causal"
        ),
        Line2D([], [], **dot, ms=7, mfc=_BASELINE_COLOR, mec="black", label="its baseline (same shape)"),
        Line2D([], [], **dot, ms=4.5, color=_OTHER_COLOR, label="other providers (same shape)"),
    ]
    return handles


def captions(placement: Placement) -> list[str]:
    """Provenance lines for one GPU: the run that measured its roofs, and the records' dates and commits."""
    hw = placement.hardware["provenance"]
    dates = sorted(p["date"][:10] for p in placement.provenance.values())
    commits = sorted({records.short_commit(p["gpuperf_commit"]) for p in placement.provenance.values()})
    lines = [f"{short_gpu_name(placement.gpu)} roofs: {records.caption(hw)}"]
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


#: The resolution the labels are placed at (the docs' 2x images: twice the figure's 100 dpi).
_LAYOUT_DPI = 200

#: The figures' layout, in inches: one panel, a column for the labels that found no
#: room beside their point, the legend and the captions below.
_FIG_LEFT, _FIG_PANEL_W, _FIG_COLUMN, _FIG_TOP, _FIG_PANEL_H = 0.62, 5.5, 1.45, 0.62, 4.6


def _figure(placement: Placement, kind: str, shared: list[Placement], marks: dict):
    import matplotlib.pyplot as plt

    shared = [p for p in (shared or [placement]) if p.points]
    if not placement.points or placement not in shared:
        raise ValueError(
            f"placement must hold a placed record and be one of shared, got {len(placement.points)} points"
        )
    shapes = markers(shared)
    every = [chart_series(p) for p in shared]
    series = every[shared.index(placement)]
    whole, corner = regions(shared, every)
    if kind == "corner" and corner is None:
        raise ValueError("no kernel is compute-bound on these GPUs: there is no corner to magnify")
    handles = _legend_handles(kind)
    lines = [
        part
        for line in captions(placement)
        for part in textwrap.wrap(line.replace("\n", " "), 125, subsequent_indent="    ")
    ]
    legend_h = 0.19 * math.ceil(len(handles) / 2) + 0.15
    below = 0.5 + legend_h + _LINE * len(lines) + 0.1
    width = _FIG_LEFT + _FIG_PANEL_W + _FIG_COLUMN
    height = _FIG_TOP + _FIG_PANEL_H + below
    name = short_gpu_name(placement.gpu)
    with plt.rc_context(PLOT_STYLE):
        fig = plt.figure(figsize=(width, height), facecolor="white")
        # Laid out at the largest resolution the pages save (their 2x images): small text
        # renders relatively wider there than at the figure's own dpi, so places found free
        # there are free at every smaller resolution too.
        shown_dpi = fig.dpi
        fig.set_dpi(max(shown_dpi, _LAYOUT_DPI))
        renderer = fig.canvas.get_renderer()
        ax = fig.add_axes([_FIG_LEFT / width, below / height, _FIG_PANEL_W / width, _FIG_PANEL_H / height])
        if kind == "overview":
            region, labelled = whole, (lambda p: corner is None or not _inside(p, corner))
        else:
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
            box=corner if kind == "overview" else None,
        )
        ax.set_xlabel("arithmetic intensity, FLOP per byte (least traffic)", fontsize=8.5)
        ax.set_ylabel("attained TFLOP/s", fontsize=8.5)
        title, what = (
            (f"{name}: every benchmark on its measured roofline", _OVERVIEW_SEE)
            if kind == "overview"
            else (f"{name}: the compute-bound corner, magnified", _CORNER_SEE)
        )
        fig.text(0.01, 1 - 0.1 / height, title, fontsize=11, fontweight="bold", va="top")
        fig.text(0.01, 1 - 0.34 / height, what, fontsize=8, color="#444444", va="top")
        legend = fig.legend(
            handles=handles,
            loc="upper left",
            bbox_to_anchor=(0.0, (below - 0.5) / height),
            ncol=2,
            frameon=False,
            fontsize=_TEXT_PT,
            handlelength=1.8,
            columnspacing=1.5,
        )
        y = legend.get_window_extent(renderer).y0 / fig.dpi - 0.05
        for line in lines:
            y -= _LINE
            color = _MARK_COLOR if line.startswith("STALE") else "#222222"
            fig.text(0.01, y / height, line, fontsize=6.5, color=color)
        fig.set_dpi(shown_dpi)
    return fig


_OVERVIEW_SEE = (
    "Left of a ridge only bandwidth matters, right of it only compute: "
    "a point's distance below its roof is what is left to gain."
)
_CORNER_SEE = "Matmuls and attention against the tensor-core roofs of their dtype."


def overview(placement: Placement, *, shared: list[Placement] | None = None, marks: dict | None = None):
    """One GPU's roofline with every benchmark record on it; return the ``Figure``.

    Drawn: the measured roofs (solid, ridge points dotted) and the datasheet's
    (dotted), their numbers in a box; for each benchmark (one marker shape each) the
    gpuperf kernel at its largest size (large, labelled) with a trail through its other
    sizes, its baseline at its largest size (dark grey), every other provider at its
    largest size (light grey); sizes whose traffic fits in L2 (yellow) and sizes bound
    by launch latency (hollow); causal attention joined to its non-causal
    counterpart. The compute-bound corner, where matmuls and attention crowd, is a
    dashed box here and its own figure (:func:`compute_bound`). No two texts overlap:
    a label that finds no room beside its point goes to a column right of the panel,
    joined to it by a line. The legend has nine entries; each GPU's provenance is
    printed under it.

    Args:
        placement: the GPU to draw (:func:`gpuperf.pages.roofline.load_gpu`).
        shared: the GPUs whose charts must share axes, ``placement`` among them (default:
            ``placement`` alone).
        marks: ``{letter: (benchmark, provider, axes)}``: the largest size of each named
            series ringed and lettered, as a page's text reads them.

    Raises:
        ValueError: ``placement`` has no placed record, or is not in ``shared``.
    """
    return _figure(placement, "overview", shared, marks or {})


def compute_bound(placement: Placement, *, shared: list[Placement] | None = None, marks: dict | None = None):
    """The compute-bound corner of :func:`overview` (from the highest measured ridge up),
    magnified, with the roofs' values; arguments as for :func:`overview`.

    Raises:
        ValueError: as :func:`overview`, or no kernel on ``shared`` is compute-bound.
    """
    return _figure(placement, "corner", shared, marks or {})
