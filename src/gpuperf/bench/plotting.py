"""The house style for benchmark plots.

Opaque white background (readable in furo's dark mode), one colour per provider
across the whole site, log2 x-axis for sizes, the measured ceiling drawn with the
% of it on the right axis, the L2-resident sizes shaded, and a caption naming
where and when the numbers were measured.
"""

from __future__ import annotations

import textwrap

from gpuperf.bench.provenance import caption

#: One colour per provider key, the same on every page.
PROVIDER_COLORS = {
    "triton": "#1f77b4",
    "torch": "#ff7f0e",
    "compile": "#2ca02c",
    "naive": "#7f7f7f",
    "cublas": "#9467bd",
    "cudnn": "#8c564b",
    "flash": "#e377c2",
}
_FALLBACK = ("#17becf", "#bcbd22", "#d62728")


def provider_color(key: str) -> str:
    return PROVIDER_COLORS.get(key, _FALLBACK[sum(map(ord, key)) % len(_FALLBACK)])


def format_size(x: int) -> str:
    """Powers of two from 2^16 up as ``'2^20'``; smaller or other numbers as written (``'4096'``)."""
    x = int(x)
    if x >= 2**16 and x & (x - 1) == 0:
        return f"2^{x.bit_length() - 1}"
    return str(x)


def format_rate(value: float, unit: str) -> str:
    if unit == "GB/s" and value >= 1000:
        return f"{value / 1000:.2f} TB/s"
    return f"{value:.0f} {unit}"


def _series(record: dict):
    order = list(dict.fromkeys(r["provider"] for r in record["rows"]))
    for key in order:
        rows = sorted(
            (r for r in record["rows"] if r["provider"] == key and r["status"] == "ok"), key=lambda r: r["x"]
        )
        label = next(r["label"] for r in record["rows"] if r["provider"] == key)
        yield key, label, rows


def plot_record(record: dict, *, source: str = "committed", notes=()):
    """Draw one benchmark record; return the matplotlib ``Figure``.

    Args:
        record: a record as written by :func:`gpuperf.bench.runner.run`.
        source: ``"live"`` (measured in this build) or ``"committed"``.
        notes: warnings (a stale record, say) printed in red under the plot.
    """
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    fig, ax = plt.subplots(figsize=(8.0, 6.2), facecolor="white")
    ax.set_facecolor("white")
    ceiling = record["ceiling"]
    c = ceiling["value"]
    ymax = c
    for key, label, rows in _series(record):
        if not rows:
            continue
        xs = [r["x"] for r in rows]
        color = provider_color(key)
        ax.plot(xs, [r["value"] for r in rows], marker="o", ms=4, lw=1.8, color=color, label=label)
        lo = [r.get("value_p20", r["value"]) for r in rows]
        hi = [r.get("value_p80", r["value"]) for r in rows]
        ax.fill_between(xs, lo, hi, color=color, alpha=0.2, lw=0)
        ymax = max(ymax, *hi)
    ax.axhline(
        c,
        ls="--",
        lw=1.2,
        color="black",
        label=f"{ceiling['label']}, measured: {format_rate(c, ceiling['unit'])}",
    )

    l2 = record["provenance"].get("l2_bytes")
    if record["metric"] == "GB/s" and l2:
        cached = sorted({r["x"] for r in record["rows"] if r["work"] <= l2})
        if cached:
            ax.axvspan(
                min(r["x"] for r in record["rows"]) / 1.2,
                cached[-1] * 1.2,
                color="#f2e6b3",
                alpha=0.5,
                lw=0,
                label=f"traffic ≤ L2 ({l2 / 2**20:.0f} MiB): partly served by L2, not HBM",
            )

    ax.set_xscale("log", base=2)
    xs_all = sorted({r["x"] for r in record["rows"]})
    ax.set_xticks(xs_all)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: format_size(v)))
    ax.xaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
    rotate = len(xs_all) > 10
    ax.tick_params(axis="x", labelrotation=45 if rotate else 0)
    ax.set_xlabel(record["x_label"])
    ax.set_ylabel(record["metric"])
    ax.set_ylim(0, ymax * 1.08)
    secondary = ax.secondary_yaxis("right", functions=(lambda v: 100 * v / c, lambda p: p * c / 100))
    secondary.set_ylabel(f"% of {ceiling['label']}")
    ax.grid(True, which="major", color="#dddddd", lw=0.6)
    ax.legend(
        fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2 if rotate else -0.12), ncol=2, frameon=False
    )
    where = "measured live in this build" if source == "live" else "committed measurement"
    ax.set_title(f"{record['title']} ({where})", fontsize=11)

    lines = textwrap.wrap(caption(record["provenance"]), 120)
    fig.subplots_adjust(top=0.93, bottom=0.36 + 0.025 * max(0, len(lines) + len(notes) - 3))
    y = 0.01
    for note in reversed(notes):
        fig.text(0.01, y, textwrap.shorten(note, 130), fontsize=7, color="#b00020")
        y += 0.025
    for line in reversed(lines):
        fig.text(0.01, y, line, fontsize=7, color="#333333")
        y += 0.025
    return fig


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
