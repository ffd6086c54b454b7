"""Nsight Compute's view of tutorial 08's FP8 ladder: tensor-pipe activity, L2 and DRAM
traffic and why warps stalled, for each rung and for cuBLASLt, at 8192^3.

Usage (a Hopper GPU with ``ncu`` on the PATH): ``python scripts/gluon_capture.py [--out DIR]``.
It runs itself under ``ncu`` with ``--inner``, which warms every provider up and then,
between ``cudaProfilerStart`` and ``cudaProfilerStop``, calls each once; it reads ncu's
CSV (base units: nanoseconds, bytes) and writes the capture ``ncu_gluon_fp8``
(``<out>/<gpu>/captures/ncu_gluon_fp8.json``: provenance, the metrics, one row per
provider). ``--clock-control none`` leaves the GPU's clocks as they are, as every other
measurement here does.
"""

import argparse
import sys
from pathlib import Path

SHAPE = (8192, 8192, 8192)
#: The providers profiled, in the order they are called (the ladder, then the vendor's).
PROVIDERS = ("gluon_drain", "gluon_pingpong", "gluon_persistent", "gluon", "triton", "scaled_mm")
METRICS = (
    "gpu__time_duration.sum",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
    "lts__t_bytes.sum.per_second",
    "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__bytes_read.sum",
    "launch__registers_per_thread",
    "launch__grid_size",
    "smsp__warp_issue_stalled_barrier_per_warp_active.pct",
    "smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct",
    "smsp__warp_issue_stalled_wait_per_warp_active.pct",
    "smsp__warp_issue_stalled_math_pipe_throttle_per_warp_active.pct",
    "smsp__warp_issue_stalled_mio_throttle_per_warp_active.pct",
    "smsp__warp_issue_stalled_selected_per_warp_active.pct",
)
#: The sources the capture describes: it reads as stale when one changes.
SOURCES = (
    "kernels/gluon/matmul_fp8.py",
    "kernels/matmul_fp8.py",
    "kernels/matmul_persistent.py",
    "kernels/_persistent_configs.py",
)


def inner():
    import torch

    from gpuperf.bench.catalog import GLUON_FP8

    a, b, scale_a, scale_b = GLUON_FP8.make_inputs(SHAPE, torch.device("cuda"), scaling="tensor")
    providers = {p.key: p for p in GLUON_FP8.providers}
    calls = [providers[key].make(a, b, scale_a, scale_b) for key in PROVIDERS]
    for fn in calls:  # compile, tune and warm up outside the profiled range
        fn()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for fn in calls:
        fn()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()


def outer(out: Path | None):
    from gpuperf.bench import captures
    from gpuperf.bench.ncu import profile

    try:
        cmd, launches = profile(__file__, METRICS, ("--profile-from-start", "off"))
    except RuntimeError as err:
        sys.exit(str(err))
    if len(launches) != len(PROVIDERS):
        kernels = [launch["kernel"][:60] for launch in launches]
        sys.exit(f"expected {len(PROVIDERS)} profiled launches, one per provider, got {kernels}")
    rows = []
    for key, launch in zip(PROVIDERS, launches, strict=True):
        rows.append({"provider": key, **launch})
        shown = {name: f"{m['value']:g} {m['unit']}" for name, m in launch["metrics"].items()}
        print(key, launch["kernel"][:50], shown, flush=True)
    capture = captures.build(
        "ncu_gluon_fp8",
        tool="ncu " + " ".join(cmd[1:]),
        payload={"shape": list(SHAPE), "scaling": "tensor", "metrics": list(METRICS), "rows": rows},
        sources=SOURCES,
        method="Nsight Compute counters of one profiled launch per provider (kernel replay, own clocks)",
    )
    print("wrote", captures.write(capture, out), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=None, help="measurements folder")
    args = parser.parse_args()
    inner() if args.inner else outer(args.out)
