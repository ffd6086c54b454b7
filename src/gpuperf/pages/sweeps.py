"""The committed tuning sweeps (``src/gpuperf/kernels/tuned/<gpu>/*.json``) as a page shows
them: the matmul sweep's table and heatmap, and any sweep's trials on a grid of two config
fields (how one kernel's speed moves with its warps and stages); the persistent and FP8
ladders' table is :func:`gpuperf.pages.persistent.sweep_section`. :mod:`gpuperf.bench.tuning`
runs the sweeps."""

from __future__ import annotations

from collections.abc import Sequence


def config_grid(trials: Sequence[dict], rows: Sequence[str], cols: Sequence[str], **where) -> dict:
    """Arrange the timed trials of a tuning sweep (``src/gpuperf/kernels/tuned/<gpu>/*.json``)
    on a grid: one row per value of the config fields ``rows`` (the tile, say), one column
    per value of ``cols`` (warps and stages), each cell the trial's TFLOP/s.

    Args:
        trials: the sweep's ``"trials"``; each has ``"config"`` (a dict), ``"status"`` and,
            when ``"ok"``, ``"tflops"``.
        rows, cols: config field names.
        where: keep only trials whose top-level fields have these values
            (``kernel="forward", head_dim=128``).

    Returns:
        ``{"rows": [tuple], "cols": [tuple], "tflops": [[float | None]]}``, rows and
        columns sorted, None where no trial ran.

    Raises:
        ValueError: no trial matches ``where``, or a field is missing from a config.
    """
    kept = [t for t in trials if all(t.get(k) == v for k, v in where.items())]
    if not kept:
        raise ValueError(f"no trial matches {where}")
    try:
        row_of = lambda t: tuple(t["config"][f] for f in rows)
        col_of = lambda t: tuple(t["config"][f] for f in cols)
        row_keys = sorted({row_of(t) for t in kept}, reverse=True)
        col_keys = sorted({col_of(t) for t in kept})
    except KeyError as err:
        raise ValueError(f"config field {err} is missing; fields: {sorted(kept[0]['config'])}") from None
    grid = [[None] * len(col_keys) for _ in row_keys]
    for t in kept:
        if t["status"] == "ok":
            i, j = row_keys.index(row_of(t)), col_keys.index(col_of(t))
            grid[i][j] = max(grid[i][j] or 0.0, t["tflops"])
    return {"rows": row_keys, "cols": col_keys, "tflops": grid}


def sweep_caption(sweep: dict) -> str:
    """Where and when the sweep ran, and how each config was timed (its ``"timing"``)."""
    from gpuperf.bench.records import caption

    return caption({**sweep["provenance"], "timing_method": sweep["timing"]})


def sweep_table(sweep: dict) -> str:
    """Per dtype and shape: configs timed, the winner, best and worst TFLOP/s, worst/best,
    and how many configs came within 3% of the best (a plain-text table)."""
    from gpuperf.kernels.configs import MatmulConfig
    from gpuperf.pages.plotting import format_x

    best = {(e["dtype"], tuple(e["shape"])): e for e in sweep["best"]}
    trials: dict[tuple, list] = {}
    for t in sweep["trials"]:
        trials.setdefault((t["dtype"], tuple(t["shape"])), []).append(t)
    lines = []
    for dtype in dict.fromkeys(d for d, _ in trials):
        lines += [
            f"dtype={dtype}",
            f"{'shape':>15}  tried  {'winner':>20}  best TFLOP/s  worst TFLOP/s  worst/best  within 3%",
        ]
        for (d, shape), tried in trials.items():
            ok = [t["tflops"] for t in tried if t["status"] == "ok"]
            if d != dtype or not ok:
                continue
            winner = MatmulConfig(**best[(d, shape)]["config"]).label()
            close = sum(v >= 0.97 * max(ok) for v in ok)
            lines.append(
                f"{format_x(shape):>15}  {len(tried):>5}  {winner:>20}  {max(ok):12.0f}  {min(ok):13.0f}"
                f"  {min(ok) / max(ok):10.2f}  {close:>9}"
            )
        lines.append("")
    return "\n".join(lines)


def plot_sweep(sweep: dict, dtype: str):
    """Heatmap of the sweep for one dtype: configs x shapes, each config's TFLOP/s as % of
    the best at that shape (blank: pruned, not timed; outlined: the winner). Returns the figure."""
    import matplotlib.pyplot as plt
    import numpy as np

    from gpuperf.kernels.configs import MatmulConfig
    from gpuperf.pages.plotting import format_x

    configs = [MatmulConfig(**c) for c in sweep["candidates"]]
    shapes = list(dict.fromkeys(tuple(t["shape"]) for t in sweep["trials"] if t["dtype"] == dtype))
    shapes.sort(key=lambda s: (len(set(s)) != 1, s[0] if len(set(s)) == 1 else 0))  # squares first
    pct = np.full((len(configs), len(shapes)), np.nan)
    for t in sweep["trials"]:
        if t["dtype"] == dtype and t["status"] == "ok":
            pct[configs.index(MatmulConfig(**t["config"])), shapes.index(tuple(t["shape"]))] = t["tflops"]
    pct = 100 * pct / np.nanmax(pct, axis=0)
    winners = {tuple(e["shape"]): MatmulConfig(**e["config"]) for e in sweep["best"] if e["dtype"] == dtype}

    fig, ax = plt.subplots(figsize=(11, 8.6), facecolor="white")
    cmap = plt.get_cmap("viridis").with_extremes(bad="white")
    image = ax.imshow(pct, cmap=cmap, vmin=0, vmax=100, aspect="auto")
    for i, j in np.argwhere(~np.isnan(pct)):
        color = "white" if pct[i, j] < 60 else "black"
        ax.text(j, i, f"{pct[i, j]:.0f}", ha="center", va="center", fontsize=7.5, color=color)
        if winners.get(shapes[j]) == configs[i]:
            ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, ec="#d62728", lw=2))
    ax.set_xticks(range(len(shapes)), [format_x(s) for s in shapes], rotation=35, ha="right")
    ax.set_yticks(range(len(configs)), [c.label() for c in configs], fontsize=8)
    ax.set_xlabel("shape (M×N×K)")
    ax.set_ylabel("config: BLOCK_M x BLOCK_N x BLOCK_K, GROUP_M, warps, stages")
    fig.colorbar(image, ax=ax, fraction=0.03, pad=0.02, label="% of the best config's TFLOP/s at this shape")
    ax.set_title(f"Matmul tuning sweep, {dtype}: every candidate config at every shape", fontsize=11)
    fig.subplots_adjust(left=0.2, right=0.93, top=0.95, bottom=0.2)
    fig.text(0.01, 0.015, sweep_caption(sweep), fontsize=7, color="#333333")
    return fig
