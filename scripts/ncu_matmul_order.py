"""L2 hit rate and DRAM traffic of the matmul in grouped and row-major order, from Nsight Compute.

Usage (GPU with ``ncu`` on the PATH): ``python scripts/ncu_matmul_order.py [--out FOLDER]``.
It runs itself under ``ncu`` with ``--inner``, which launches the kernel once per
(shape, order), reads ncu's CSV and writes ``<out>/<gpu>/ncu/matmul_order.json``
(provenance, the metrics, one row per launch). ``--clock-control none`` leaves the
GPU's clocks as they are, as every other measurement here does.
"""

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

SHAPES = ((8192, 8192, 8192), (16384, 16384, 16384))
ORDERS = (("grouped", 8), ("row-major", 1))
METRICS = ("lts__t_sector_hit_rate.pct", "dram__bytes_read.sum", "gpu__time_duration.sum")


def inner():
    import torch

    from gpuperf.kernels import matmul
    from gpuperf.kernels.matmul import matmul_config

    for m, n, k in SHAPES:
        a = torch.randn(m, k, device="cuda", dtype=torch.float16)
        b = torch.randn(k, n, device="cuda", dtype=torch.float16)
        for _, group_m in ORDERS:
            matmul(a, b, config=replace(matmul_config(a, b), group_m=group_m))
        torch.cuda.synchronize()


def outer(out: Path | None):
    from gpuperf.bench import records
    from gpuperf.bench.ncu import profile

    try:
        cmd, profiled = profile(__file__, METRICS, ("-k", "regex:_matmul_kernel"))
    except RuntimeError as err:
        sys.exit(str(err))
    launches = [(shape, order, g) for shape in SHAPES for order, g in ORDERS]
    if len(profiled) != len(launches):
        sys.exit(f"expected {len(launches)} profiled launches, got {len(profiled)}")
    rows = []
    for (shape, order, group_m), launch in zip(launches, profiled, strict=True):
        row = {"shape": list(shape), "dtype": "float16", "order": order, "group_m": group_m}
        row.update(launch["metrics"])
        rows.append(row)
        print(shape, order, {name: f"{m['value']:g} {m['unit']}" for name, m in launch["metrics"].items()})
    record = {
        "schema_version": 1,
        "tool": "ncu " + " ".join(cmd[1:]),
        "provenance": records.collect_provenance(
            method="Nsight Compute counters of one profiled launch (kernel replay, --clock-control none)"
        ),
        "metrics": list(METRICS),
        "rows": rows,
    }
    root = records.output_dir(out)
    path = root / records.gpu_slug(record["provenance"]["gpu"]) / "ncu" / "matmul_order.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=None, help="measurements folder")
    args = parser.parse_args()
    inner() if args.inner else outer(args.out)
