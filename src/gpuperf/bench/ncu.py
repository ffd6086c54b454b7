"""Nsight Compute's counters of a script's kernel launches, read from its CSV output.

The scripts that capture counters (``scripts/ncu_matmul_order.py``,
``scripts/gluon_capture.py``) run themselves under ``ncu`` with ``--inner`` and read
back one entry per profiled launch. ``--clock-control none`` leaves the GPU's clocks as
they are, as every other measurement here does.
"""

from __future__ import annotations

import csv
import io
import shutil
import subprocess
import sys


def profile(script: str, metrics, options=(), args=()) -> tuple[list[str], list[dict]]:
    """Run ``python script --inner *args`` under ``ncu --csv --clock-control none`` with
    ``options`` (``("-k", "regex:_matmul_kernel")``, say), collecting ``metrics``.

    Returns:
        The ``ncu`` command (without the profiled program), and one dict per profiled launch
        in launch order: ``{"kernel": name, "metrics": {name: {"value": float, "unit": str}}}``
        (values as ncu's CSV prints them: base units, nanoseconds and bytes).

    Raises:
        RuntimeError: ``ncu`` is not on the PATH, or it failed (its output's tail attached).
    """
    ncu = shutil.which("ncu")
    if ncu is None:
        raise RuntimeError("ncu (Nsight Compute) is not on the PATH")
    cmd = [ncu, "--csv", "--clock-control", "none", *options, "--metrics", ",".join(metrics)]
    done = subprocess.run([*cmd, sys.executable, script, "--inner", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"ncu failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return cmd, parse_csv(done.stdout)


def parse_csv(output: str) -> list[dict]:
    """The launches in ``ncu --csv``'s output (whatever the program printed before its
    table is skipped), in launch order, as :func:`profile` returns them.

    Raises:
        ValueError: the output holds no ncu table.
    """
    if '"ID"' not in output:
        raise ValueError(f"no ncu CSV table in the output: {output[-500:]!r}")
    text = output[output.index('"ID"') :]
    launches: dict[int, dict] = {}
    for row in csv.DictReader(io.StringIO(text)):
        launch = launches.setdefault(int(row["ID"]), {"kernel": row["Kernel Name"], "metrics": {}})
        value = float(row["Metric Value"].replace(",", ""))
        launch["metrics"][row["Metric Name"]] = {"value": value, "unit": row["Metric Unit"]}
    return [launches[i] for i in sorted(launches)]
