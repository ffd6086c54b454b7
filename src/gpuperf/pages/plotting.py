"""The house style for benchmark plots.

Opaque white background (readable in furo's dark mode), one colour per provider
across the whole site, log2 x-axis for sizes and categories in declared order
for shapes and names, one panel per axis combination (small multiples), the
measured ceiling drawn with the % of it on the right axis, the L2-resident sizes
shaded, and a caption naming where and when the numbers were measured.
"""

from __future__ import annotations

import itertools
import math
import textwrap

from gpuperf.bench.hardware import CEILINGS, FP8_ACCUMULATION, MATMUL_CALLS
from gpuperf.bench.metrics import LOWER_IS_BETTER
from gpuperf.bench.records import caption

#: The y-axis label of each metric (others are labelled with the metric's name).
Y_LABELS = {
    "us/call": "µs per call on the host (lower is better)",
    "GiB": "peak memory beyond the inputs, GiB (lower is better)",
}

#: Metrics whose panels turn to a log axis where their values span more than
#: :data:`LOG_SPAN` times (lower is better for both: the small values matter).
LOG_METRICS = ("GiB", "us/call")
LOG_SPAN = 20

#: One colour per provider key, the same on every page.
PROVIDER_COLORS = {
    "triton": "#1f77b4",
    "triton_rowmajor": "#17becf",
    "torch": "#ff7f0e",
    "compile": "#2ca02c",
    "naive": "#7f7f7f",
    "cublas": "#9467bd",
    "cudnn": "#8c564b",
    "flash": "#e377c2",
    "efficient": "#bcbd22",
    "math": "#393b79",
    "flex": "#d62728",
    "triton_t03": "#aec7e8",
    "triton_pointer": "#98df8a",
    "triton_tma": "#ffbb78",
    "triton_tma_ws": "#ff9896",
    "scaled_mm": "#637939",
    # The decode benchmark's SDPA: PyTorch's backend, FlashAttention's forced, and the
    # padded cache with a mask (light shades of cuDNN's, flash's and cuBLAS's).
    "sdpa": "#c49c94",
    "sdpa_flash": "#f7b6d2",
    "sdpa_masked": "#c5b0d5",
    # Tutorial 07's layer: eager PyTorch, torch.compile's modes, ours compiled and in a graph.
    "eager": "#e6550d",
    "compile_max": "#006d2c",
    "compile_ro": "#74c476",
    "triton_compile": "#6baed6",
    "triton_graph": "#08306b",
    "triton_persistent": "#c7e9c0",
    # Tutorial 08's Gluon ladder, darker at each rung: Triton's schedule, the promotion
    # overlapped, persistent, TMA store.
    "gluon": "#3f007d",
    "gluon_persistent": "#6a51a3",
    "gluon_pingpong": "#9e9ac8",
    "gluon_drain": "#cbc9e2",
}
_FALLBACK = ("#bcbd22", "#d62728", "#393b79")

# Layout, in inches. A figure is drawn about as wide as the page shows it (furo's
# content column, ~8 in at 92 px per inch), so 9-point text reads as ~11 px on screen.
_TOP = 0.42
_TITLE_H = 0.42  # a panel's title (GPU, axis combination): up to two lines
_LEFT = 0.75
_RIGHT = 0.75
_GAP = 1.1  # the left panel's % axis and the right panel's y ticks
_LINE = 0.19  # one line of caption or note
_LEGEND_ROW = 0.24
_CHAR = 0.075  # one character of a tick label
_CAPTION_PT = 9
_CAPTION_CHARS = 13.5  # characters of the caption per inch of figure width
_LEGEND_CHAR = 0.068  # one character of a legend label
_TITLE_PT = 11.5
_TITLE_LINE = 0.22  # one line of the figure's title
_TITLE_CHARS = 10.5  # characters of the title per inch of figure width
#: Matplotlib rc settings every plot of the site is drawn under (``plt.rc_context``).
PLOT_STYLE = {
    "font.size": 9,
    "axes.titlesize": 9.5,
    "axes.labelsize": 9.5,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "legend.fontsize": 9,
}


def provider_color(key: str) -> str:
    return PROVIDER_COLORS.get(key, _FALLBACK[sum(map(ord, key)) % len(_FALLBACK)])


def format_size(x: int) -> str:
    """Powers of two from 2^16 up as ``'2^20'``; smaller or other numbers as written (``'4096'``)."""
    x = int(x)
    if x >= 2**16 and x & (x - 1) == 0:
        return f"2^{x.bit_length() - 1}"
    return str(x)


def _size_tick(x: float) -> str:
    """A size on a log2 axis: a power of two as ``$2^{20}$`` (short, so it need not be
    rotated), any other size as :func:`format_size` writes it."""
    x = int(x)
    return f"$2^{{{x.bit_length() - 1}}}$" if x > 0 and x & (x - 1) == 0 else format_size(x)


def _thinned(xs: list, panel_w: float) -> set:
    """The sizes of ``xs`` that get a tick label: every one if their labels fit across a
    panel ``panel_w`` inches wide, else every second (third, ...) from the largest down,
    so that the labels of a long sweep of powers of two never touch."""
    widths = [_CHAR * len(_size_tick(x).strip("$").replace("{", "").replace("}", "")) + 0.2 for x in xs]
    step = 1
    while sum(widths[::step]) > 0.85 * panel_w and step < len(xs):
        step += 1
    return set(sorted(xs)[::-1][::step])


def format_x(x) -> str:
    """An x value as tables and axes show it.

    Sizes as :func:`format_size`; a shape whose three dimensions are equal as
    ``'4096³'``, any other shape as ``'8192×4096×14336'``; names as they are.
    """
    if isinstance(x, (tuple, list)):
        if len(x) == 3 and len(set(x)) == 1:
            return f"{x[0]}³"
        return "×".join(str(d) for d in x)
    if isinstance(x, str):
        return x
    return format_size(x)


def ceiling_label(key: str, entry: dict | None = None, *, name: bool = True) -> str:
    """What a ceiling is, as a page names it beside its value: the label of ``key`` in
    :data:`gpuperf.bench.hardware.CEILINGS` (library, dtype), then for a matmul the call it
    timed (:data:`~gpuperf.bench.hardware.MATMUL_CALLS`), for FP8 the accumulation mode, and
    the shape ``entry`` holds; for the stream bandwidth, the stream that set it.

    ``entry`` is the ceiling's entry in the record its value comes from (a record's
    ``ceilings[key]`` or ``hardware.json``'s): a label is formatted from the record the
    number beside it comes from, never typed. An entry without a ``shape`` (written before
    ceilings named theirs) says so rather than guessing one; an FP8 entry without an
    ``accumulation`` has its key's (:data:`~gpuperf.bench.hardware.FP8_ACCUMULATION`).

    >>> ceiling_label("bf16_tflops", {"shape": [4096, 4096, 4096]})
    'cuBLAS bf16 matmul (torch.matmul) at 4096³'
    >>> ceiling_label("fp8_tflops", {"shape": [6144, 6144, 6144]})
    'cuBLASLt fp8 matmul (torch._scaled_mm, promoted accumulation) at 6144³'
    >>> ceiling_label("fp8_fast_tflops", {"shape": [6144, 6144, 6144]})
    'cuBLASLt fp8 matmul (torch._scaled_mm, fast accumulation) at 6144³'
    >>> ceiling_label("fp16_tflops", {})
    'cuBLAS fp16 matmul (torch.matmul), shape not recorded'

    ``name=False`` leaves out the library and dtype, for a line that names them already:

    >>> ceiling_label("fp8_tflops", {"shape": [6144, 6144, 6144]}, name=False)
    'torch._scaled_mm, promoted accumulation, at 6144³'

    Raises:
        ValueError: ``key`` is not a key of :data:`~gpuperf.bench.hardware.CEILINGS`.
        TypeError: ``entry`` is neither a dict nor None.
    """
    if key not in CEILINGS:
        raise ValueError(f"key must be one of {list(CEILINGS)}, got {key!r}")
    if entry is not None and not isinstance(entry, dict):
        raise TypeError(f"entry must be a ceiling's entry (dict) or None, got {type(entry).__name__}")
    entry = entry or {}
    label = CEILINGS[key][0]
    if key not in MATMUL_CALLS:
        stream = entry.get("stream") if key == "stream_gbps" else None
        if not name:
            return stream or ""
        return f"{label} ({stream})" if stream else label
    how = MATMUL_CALLS[key]
    if key in FP8_ACCUMULATION:
        how += f", {entry.get('accumulation', FP8_ACCUMULATION[key])} accumulation"
    shape = entry.get("shape")
    if not name:
        at = f" at {format_x(tuple(shape))}" if shape else ", shape not recorded"
        return f"{how}{',' if ', ' in how and shape else ''}{at}"
    where = f" at {format_x(tuple(shape))}" if shape else ", shape not recorded"
    return f"{label} ({how}){where}"


def format_combo(axes: dict) -> str:
    """An axis combination as a heading: ``'dtype=bfloat16, causal=1'`` (empty without axes)."""
    return ", ".join(f"{name}={value}" for name, value in axes.items())


def format_rate(value: float, unit: str) -> str:
    if unit == "GB/s" and value >= 1000:
        return f"{value / 1000:.2f} TB/s"
    return f"{value:.0f} {unit}"


def x_order(xs, declared=()) -> list:
    """Distinct x values in drawing order: sizes ascending, shapes and names in the order
    of ``declared`` (the benchmark's x values; those it lacks after them, as first seen),
    or as first seen (a record's rows follow the declared order)."""
    distinct = list(dict.fromkeys(xs))
    if all(isinstance(x, int) for x in distinct):
        return sorted(distinct)
    rank = {x: i for i, x in enumerate(declared)}
    return sorted(distinct, key=lambda x: rank.get(x, len(rank)))


def combos(record: dict) -> list[dict]:
    """The record's axis combinations that have rows, in declared order (``[{}]`` without axes)."""
    names = list(record["axes"])
    every = [dict(zip(names, values, strict=True)) for values in itertools.product(*record["axes"].values())]
    return [c for c in every if any(r["axes"] == c for r in record["rows"])]


def _series(rows: list[dict]):
    for key in dict.fromkeys(r["provider"] for r in rows):
        mine = [r for r in rows if r["provider"] == key]
        yield key, mine[0]["label"], [r for r in mine if r["status"] == "ok"]


def may_join(a, b) -> bool:
    """Whether a line may join neighbouring x values ``a`` and ``b``: both sizes, or both square
    shapes. The benchmark plots and the roofline's trails join their points by this rule."""
    if isinstance(a, int) and isinstance(b, int):
        return True
    square = lambda x: isinstance(x, tuple) and len(set(x)) == 1
    return square(a) and square(b)


def _panel(ax, record: dict, rows: list[dict], panel_w: float) -> float:
    """Draw one axis combination's rows on ``ax``; return the inches its x tick labels
    and x label need below it."""
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    metric = record["metric"]
    xs = x_order(r["x"] for r in rows)
    bars = metric in LOWER_IS_BETTER
    categorical = bars or not all(isinstance(x, int) for x in xs)
    pos = {x: i for i, x in enumerate(xs)} if categorical else {x: x for x in xs}
    series = list(_series(rows))
    ymax = 0.0
    width = 0.8 / max(1, len(series))
    for j, (key, label, ok) in enumerate(series):
        if not ok:
            continue
        ok = sorted(ok, key=lambda r: xs.index(r["x"]))
        color = provider_color(key)
        at = [pos[r["x"]] for r in ok]
        value = [r["value"] for r in ok]
        lo = [r.get("value_p20", r["value"]) for r in ok]
        hi = [r.get("value_p80", r["value"]) for r in ok]
        if bars:
            ax.bar(
                [p - 0.4 + (j + 0.5) * width for p in at],
                value,
                width * 0.92,
                color=color,
                label=label,
                yerr=[
                    [v - a for v, a in zip(value, lo, strict=True)],
                    [b - v for v, b in zip(value, hi, strict=True)],
                ],
                error_kw={"lw": 0.8, "capsize": 2, "ecolor": "#333333"},
            )
        else:
            # A line joins neighbours of one family only (sizes, or square shapes); other
            # shapes, a model's products say, stand as points, unrelated to their neighbours.
            start = 0
            for end in range(1, len(ok) + 1):
                if end < len(ok) and may_join(ok[end - 1]["x"], ok[end]["x"]):
                    continue
                seg = slice(start, end)
                ax.plot(
                    at[seg],
                    value[seg],
                    marker="o",
                    ms=4,
                    lw=1.8,
                    color=color,
                    label=label if start == 0 else None,
                )
                ax.fill_between(at[seg], lo[seg], hi[seg], color=color, alpha=0.2, lw=0)
                if end - start == 1:
                    ax.errorbar(
                        at[seg],
                        value[seg],
                        yerr=[[value[start] - lo[start]], [hi[start] - value[start]]],
                        color=color,
                        lw=0.8,
                        capsize=2,
                    )
                start = end
        ymax = max(ymax, *hi)

    keys = {r["ceiling"] for r in rows} - {None}
    key = keys.pop() if len(keys) == 1 else None
    ceiling = record["ceilings"][key] if key is not None else None
    if ceiling is not None:
        c = ceiling["value"]
        ymax = max(ymax, c)
        named = ceiling_label(key, ceiling) if key in CEILINGS else ceiling["label"]
        secondary = draw_ceiling(
            ax, c, f"{named}, measured: {format_rate(c, ceiling['unit'])}", ceiling["label"]
        )

    l2 = record["provenance"].get("l2_bytes")
    if metric == "GB/s" and l2:
        n_bytes = {r["x"]: r["bytes"] for r in rows}
        cached = [x for x in xs if n_bytes[x] <= l2]
        label = f"traffic ≤ L2 ({l2 / 2**20:.0f} MiB): partly served by L2, not HBM"
        if cached and not categorical:
            ax.axvspan(min(xs) / 1.2, max(cached) * 1.2, color="#f2e6b3", alpha=0.5, lw=0, label=label)
        for i, x in enumerate(cached if categorical else ()):
            span = (pos[x] - 0.5, pos[x] + 0.5)
            ax.axvspan(*span, color="#f2e6b3", alpha=0.5, lw=0, label=None if i else label)

    labels = [format_x(x) for x in xs]
    if categorical:
        ax.set_xticks(range(len(xs)))
        ax.set_xticklabels(labels)
        ax.set_xlim(-0.5, len(xs) - 0.5)
        # Rotated when all the labels together, or the widest one in its own slot, would
        # not fit: a few long labels collide as surely as many short ones.
        widest = max(_CHAR * len(s) for s in labels) + 0.15
        rotate = sum(_CHAR * len(s) + 0.15 for s in labels) > 0.9 * panel_w or widest > 0.95 * panel_w / len(
            labels
        )
    else:
        ax.set_xscale("log", base=2)
        ax.set_xticks(xs)
        shown = _thinned(xs, panel_w)
        labels = [format_size(x) for x in shown]
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: _size_tick(v) if v in shown else ""))
        ax.xaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
        rotate = sum(_CHAR * len(s) + 0.15 for s in labels) > 0.9 * panel_w
    if rotate:
        ax.tick_params(axis="x", labelrotation=45)
        if categorical:
            for t in ax.get_xticklabels():
                t.set_horizontalalignment("right")
                t.set_rotation_mode("anchor")
    xlabel = textwrap.wrap(record["x_label"], max(20, int(panel_w / _CHAR)))
    ax.set_xlabel("\n".join(xlabel))
    ax.set_ylabel(Y_LABELS.get(metric, metric))
    lows = [r["value"] for r in rows if r["status"] == "ok" and r["value"] > 0]
    # Peak memory runs from megabytes (fused kernels) to tens of GB (the score matrix), and
    # host time from ten microseconds (one op) to a millisecond (a training step): where a
    # panel's values span more than LOG_SPAN, a linear axis would flatten the small ones.
    if metric in LOG_METRICS and lows and (ymax or 1.0) > LOG_SPAN * min(lows):
        ax.set_yscale("log")
        ax.set_ylim(min(lows) / 2, (ymax or 1.0) * 2)
    else:
        ax.set_ylim(0, (ymax or 1.0) * 1.08)
        if ceiling is not None:  # the % ticks inside the view only: none past the top
            top = 100 * ax.get_ylim()[1] / ceiling["value"]
            secondary.set_yticks([p for p in MaxNLocator(nbins=6).tick_values(0, top) if 0 <= p <= top])
    # Tick labels are made at draw time, outside any rc_context: size them here.
    ax.tick_params(labelsize=PLOT_STYLE["xtick.labelsize"])
    ax.set_facecolor("white")
    ax.grid(True, which="major", axis="y" if categorical else "both", color="#dddddd", lw=0.6)
    ax.set_axisbelow(True)
    # A label rotated by 45 degrees reaches down 0.71 of its length.
    return 0.65 + _LINE * (len(xlabel) - 1) + (0.71 * _CHAR * max(map(len, labels)) if rotate else 0.0)


def short_gpu_name(name: str) -> str:
    """A GPU's name without the vendor: ``'NVIDIA H100 80GB HBM3'`` -> ``'H100 80GB HBM3'``."""
    return name.removeprefix("NVIDIA ").strip() or name


def gpu_label(name: str, source: str = "committed") -> str:
    """How a page names one GPU's numbers: :func:`short_gpu_name`, followed by ``' (live)'``
    when ``source`` is ``"live"`` (measured in this run). A quick live build draws the same
    GPU's committed sweep beside its own points, and the two must not read alike."""
    return short_gpu_name(name) + (" (live)" if source == "live" else "")


def _layout(n_gpus: int, n_combos: int) -> tuple[int, int]:
    """(rows, columns) of panels: one column per GPU, one row per axis combination;
    a single GPU's combinations wrap two to a row."""
    if n_gpus > 1:
        return n_combos, n_gpus
    cols = min(2, n_combos)
    return math.ceil(n_combos / cols), cols


def _subtitle(where: list[str]) -> str:
    if all(w == "live" for w in where):
        return "measured live in this build"
    if all(w != "live" for w in where):
        return "committed measurements" if len(where) > 1 else "committed measurement"
    return "first GPU measured live in this build, the others committed"


def draw_ceiling(ax, value: float, label: str, of: str):
    """A measured ceiling on ``ax``: a dashed line at ``value`` (in the unit of ``ax``'s y
    axis, GB/s or TFLOP/s; positive) with the legend entry ``label``, and a right axis in %
    of it, titled "% of ``of``" (``"stream bandwidth"``); returns that axis (matplotlib's
    ``SecondaryAxis``).

    Raises:
        ValueError: ``value`` is not a positive number (the % axis divides by it).
    """
    if not value > 0:
        raise ValueError(f"value must be a positive rate, got {value!r}")
    ax.axhline(value, ls="--", lw=1.2, color="black", label=label)
    secondary = ax.secondary_yaxis("right", functions=(lambda v: 100 * v / value, lambda p: p * value / 100))
    secondary.set_ylabel(f"% of {of}")
    secondary.tick_params(labelsize=PLOT_STYLE["ytick.labelsize"])
    return secondary


def plot_records(records: list[dict], *, sources=(), notes=(), headlines=()):
    """Draw one benchmark measured on one or several GPUs; return the matplotlib ``Figure``.

    Small multiples: one column per GPU (in the order given) and one row per axis
    combination, the panels of a row sharing their y range so the GPUs compare at
    a glance; each panel has its GPU's own ceiling line and % axis. One legend for
    the figure, and under it each GPU's provenance.

    Args:
        records: records of one benchmark as written by :func:`gpuperf.bench.runner.run`,
            one per GPU.
        sources: per record, ``"live"`` (measured in this build) or ``"committed"``
            (default: all committed).
        notes: warnings (a stale record, say) printed in red under the plot.
        headlines: what to see, one line per GPU (``"H100: 1.01–1.83× the speed of
            torch.softmax; ..."``), printed under the title.

    Raises:
        ValueError: no records, records without a row, records of different benchmarks,
            or ``sources`` of another length.
    """
    import matplotlib.pyplot as plt

    if not records:
        raise ValueError("records must hold at least one record, got none")
    names = {r["benchmark"] for r in records}
    if len(names) > 1:
        raise ValueError(f"records must all be of one benchmark, got {sorted(names)}")
    sources = list(sources) or ["committed"] * len(records)
    if len(sources) != len(records):
        raise ValueError(f"sources must have one entry per record ({len(records)}), got {len(sources)}")

    first = records[0]
    panels = [c for c in combos(first)]
    for record in records[1:]:
        panels += [c for c in combos(record) if c not in panels]
    if not panels:
        raise ValueError(f"records of {first['benchmark']} hold no rows to draw")
    multi = len(records) > 1
    n_rows, n_cols = _layout(len(records), len(panels))
    single = n_rows * n_cols == 1
    panel_w = 6.2 if single else 3.1
    panel_h = 3.8 if single else 2.9
    width = _LEFT + n_cols * panel_w + (n_cols - 1) * _GAP + _RIGHT

    with plt.rc_context(PLOT_STYLE):
        fig, grid = plt.subplots(n_rows, n_cols, squeeze=False, facecolor="white")
        below_axes = 0.0  # tick labels and the x label
        drawn = []
        for i, combo in enumerate(panels):
            row_axes = []
            for j, record in enumerate(records):
                r, c = (i, j) if multi else divmod(i, n_cols)
                ax = grid[r][c]
                rows = [row for row in record["rows"] if row["axes"] == combo]
                if not rows:
                    ax.set_axis_off()
                    continue
                below_axes = max(below_axes, _panel(ax, record, rows, panel_w))
                title = [gpu_label(record["provenance"]["gpu"], sources[j])] if multi else []
                title += [format_combo(combo)] if combo else []
                ax.set_title("\n".join(title))
                if (multi and j) or (not multi and c):
                    # The panel to the left has the label, and its % axis stands where this one would.
                    ax.set_ylabel("")
                row_axes.append(ax)
                drawn.append(ax)
            _share_y(row_axes)
        for ax in grid.flat[len(panels) :] if not multi else ():
            ax.set_axis_off()

        handles = {}
        for ax in drawn:
            for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
                handles.setdefault(_legend_key(label, multi), handle)
        longest = max(map(len, handles), default=1)
        ncol = max(1, min(4, int((width - 0.3) / (_LEGEND_CHAR * longest + 0.6))))
        legend_rows = math.ceil(len(handles) / ncol)
        chars = int(_CAPTION_CHARS * width)
        lines = [
            line
            for record in records
            for line in textwrap.wrap(caption(record["provenance"]), chars, subsequent_indent="    ")
        ]
        notes = [line for note in notes for line in textwrap.wrap(note, chars)]

        # (Headlines are half a point larger than the caption: fewer characters to a line.)
        head_chars = int(chars * _CAPTION_PT / (_CAPTION_PT + 0.5))
        heads = [line for h in headlines for line in textwrap.wrap(h, head_chars, subsequent_indent="    ")]
        title = textwrap.wrap(f"{first['title']} ({_subtitle(sources)})", int(_TITLE_CHARS * width))
        top = _TOP + _TITLE_LINE * (len(title) - 1) + (_LINE * len(heads) + 0.12 if heads else 0.0)
        # One GPU and no axes: no panel title, but a gap for the top tick label's half-height.
        titles = _TITLE_H if multi or panels != [{}] else 0.15
        legend_h = _LEGEND_ROW * legend_rows + 0.15
        text_h = _LINE * (len(lines) + len(notes)) + 0.15
        row_h = titles + panel_h + below_axes
        height = top + n_rows * row_h + legend_h + text_h
        fig.set_size_inches(width, height)
        fig.subplots_adjust(
            left=_LEFT / width,
            right=1 - _RIGHT / width,
            top=1 - (top + titles) / height,
            bottom=(below_axes + legend_h + text_h) / height,
            wspace=_GAP / panel_w,
            hspace=(below_axes + titles) / panel_h,
        )
        fig.legend(
            list(handles.values()),
            list(handles),
            loc="upper center",
            bbox_to_anchor=(0.5, (legend_h + text_h) / height),
            ncol=ncol,
            frameon=False,
        )
        fig.suptitle("\n".join(title), fontsize=_TITLE_PT, y=1 - 0.12 / height, va="top")
        for i, line in enumerate(heads):
            y = 1 - (0.12 + 0.3 + _TITLE_LINE * (len(title) - 1) + _LINE * i) / height
            fig.text(0.5, y, line, ha="center", va="top", fontsize=_CAPTION_PT + 0.5, color="#333333")
        y = 0.08 / height
        for note in reversed(notes):
            fig.text(0.01, y, note, fontsize=_CAPTION_PT, color="#b00020")
            y += _LINE / height
        for line in reversed(lines):
            fig.text(0.01, y, line, fontsize=_CAPTION_PT, color="#222222")
            y += _LINE / height
    return fig


def _legend_key(label: str, multi: bool) -> str:
    """With several GPUs each has its own measured ceiling and L2 size: one legend
    entry names each of those, without a value, and without the call, shape or mode
    (:func:`ceiling_label`), which may differ between the GPUs."""
    if multi and ", measured: " in label:
        return label.split(", measured: ")[0].split(" (")[0].split(",")[0] + " (each GPU's, measured)"
    if multi and label.startswith("traffic ≤ L2"):
        return "traffic ≤ the GPU's L2: partly served by L2, not HBM"
    return label


def _share_y(axes: list) -> None:
    """Give the panels of one row the same y range (each keeps its own % axis)."""
    if len(axes) < 2:
        return
    lows, highs = zip(*(ax.get_ylim() for ax in axes), strict=True)
    for ax in axes:
        ax.set_ylim(min(lows), max(highs))


def plot_missing(title: str, message: str):
    """A placeholder figure that says which measurement is missing and how to make it."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8.0, 2.5), facecolor="white")
    ax.set_axis_off()
    ax.set_title(title, fontsize=11)
    ax.text(
        0.5,
        0.5,
        "\n".join(textwrap.wrap(message, 90)),
        ha="center",
        va="center",
        fontsize=9,
        color="#b00020",
        transform=ax.transAxes,
    )
    return fig


def overlapping_texts(fig) -> list[tuple[str, str]]:
    """The pairs of texts drawn on ``fig`` that overlap: ``[(text, text), ...]``, empty
    for a figure whose labels never collide.

    Every visible, non-empty text counts (titles, axis labels, tick labels matplotlib
    draws, annotations without their leader lines, legend entries, captions). Two tick
    labels of one axis rotated by the same angle are parallel strips: they collide when the gap between their
    ticks, across the strips, is less than the text's height, whatever their
    axis-aligned boxes do.
    """
    import itertools

    from matplotlib.text import Text

    # Laid out as drawn (the texts' sizes and places), without rendering a pixel.
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    tick_axis, drawn = {}, set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                tick_axis.update({id(tick.label1): axis, id(tick.label2): axis})
            for tick in axis._update_ticks():  # the ticks inside the view, which are drawn
                drawn.update({id(tick.label1), id(tick.label2)})
    texts = [
        t
        for t in fig.findobj(Text)
        if t.get_visible() and t.get_text().strip() and (id(t) not in tick_axis or id(t) in drawn)
    ]
    # A text's own box: an annotation's extent would include its leader line, which may
    # cross other texts without hiding them.
    boxes = [(t, Text.get_window_extent(t, renderer)) for t in texts]
    found = []
    for (a, box_a), (b, box_b) in itertools.combinations(boxes, 2):
        axis = tick_axis.get(id(a))
        angle = a.get_rotation() % 180
        if axis is not None and axis is tick_axis.get(id(b)) and angle and b.get_rotation() % 180 == angle:
            (ax_, ay_), (bx_, by_) = (t.get_transform().transform(t.get_position()) for t in (a, b))
            along = abs(ax_ - bx_) if axis.axis_name == "x" else abs(ay_ - by_)
            across = along * math.sin(math.radians(angle if axis.axis_name == "x" else 90 - angle))
            height = a.get_fontsize() * fig.dpi / 72
            if across < 0.9 * height:
                found.append((a.get_text(), b.get_text()))
            continue
        width = min(box_a.x1, box_b.x1) - max(box_a.x0, box_b.x0)
        height = min(box_a.y1, box_b.y1) - max(box_a.y0, box_b.y0)
        if width > 0.5 and height > 0.5:
            found.append((a.get_text(), b.get_text()))
    return found
