"""Reading the committed tuning sweeps (``src/gpuperf/kernels/tuned/<gpu>/*.json``) for plots
that the tutorials do not draw: how one kernel's speed moves with its warps and stages."""

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
