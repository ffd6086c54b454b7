"""Nsight Compute's view of tutorial 08's ladders: tensor-pipe activity, L2 and DRAM traffic
and why warps stalled, for each rung and for the vendor's kernel. Two captures:

* ``fp8``: the FP8 matmul with float32 promotion at 8192^3 (per-tensor scales), the Gluon
  rungs, Triton's ``matmul_fp8`` and cuBLASLt: ``ncu_gluon_fp8``.
* ``attention``: the attention forward at S = 8192, D = 128, float16, not causal, the
  Gluon rungs, Triton's (tutorial 04) and SDPA's cuDNN backend: ``ncu_gluon_attention``.
* ``attention64``: the same at D = 64 (where the softmax's exponentials weigh twice as
  much against the GEMMs), the top Gluon rungs, Triton's and cuDNN's:
  ``ncu_gluon_attention_d64``.

Usage (a Hopper GPU with ``ncu`` on the PATH): ``python scripts/gluon_capture.py [fp8]
[attention] [attention64] [--out DIR]`` (all by default). Each runs this script under ``ncu`` with
``--inner NAME``, which warms every provider up and then, between ``cudaProfilerStart`` and
``cudaProfilerStop``, calls each once; it reads ncu's CSV (base units: nanoseconds, bytes)
and writes the capture (``<out>/<gpu>/captures/<name>.json``: provenance, the metrics, one
row per provider). ``--clock-control none`` leaves the GPU's clocks as they are, as every
other measurement here does.
"""

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

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


@dataclass(frozen=True)
class Capture:
    """One ladder profiled: the benchmark's inputs at ``x`` and ``axes``, its ``providers``
    called in this order, and what the capture records."""

    name: str
    benchmark: str
    x: object
    axes: dict
    providers: tuple[str, ...]
    sources: tuple[str, ...]  # (relative to src/gpuperf: the capture reads as stale when one changes)
    payload: dict
    extra_metrics: tuple[str, ...] = ()  # besides METRICS

    @property
    def metrics(self) -> tuple[str, ...]:
        return METRICS + self.extra_metrics


CAPTURES = {
    "fp8": Capture(
        name="ncu_gluon_fp8",
        benchmark="GLUON_FP8",
        x=(8192, 8192, 8192),
        axes={"scaling": "tensor"},
        providers=("gluon_drain", "gluon_pingpong", "gluon_persistent", "gluon", "triton", "scaled_mm"),
        sources=("kernels/gluon/matmul_fp8.py", "kernels/matmul_fp8.py"),
        payload={"shape": [8192, 8192, 8192], "scaling": "tensor"},
    ),
    "attention": Capture(
        name="ncu_gluon_attention",
        benchmark="GLUON_ATTENTION",
        x=8192,
        axes={"head_dim": 128, "causal": False},
        providers=("gluon_ws", "gluon_overlap", "gluon_pingpong", "gluon", "triton", "cudnn"),
        sources=("kernels/gluon/attention.py", "kernels/attention.py"),
        payload={"seq_len": 8192, "head_dim": 128, "causal": False, "dtype": "float16"},
        # The transcendental pipe (MUFU: the softmax's exp2) beside the tensor pipe.
        extra_metrics=("sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active",),
    ),
    "attention64": Capture(
        name="ncu_gluon_attention_d64",
        benchmark="GLUON_ATTENTION",
        x=8192,
        axes={"head_dim": 64, "causal": False},
        providers=("gluon_overlap", "gluon", "triton", "cudnn"),
        sources=("kernels/gluon/attention.py", "kernels/attention.py"),
        payload={"seq_len": 8192, "head_dim": 64, "causal": False, "dtype": "float16"},
        extra_metrics=("sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active",),
    ),
}


def inner(spec: Capture):
    import torch

    from gpuperf.bench import catalog

    benchmark = getattr(catalog, spec.benchmark)
    inputs = benchmark.make_inputs(spec.x, torch.device("cuda"), **spec.axes)
    providers = {p.key: p for p in benchmark.providers}
    calls = [providers[key].make(*inputs) for key in spec.providers]
    for fn in calls:  # compile, tune and warm up outside the profiled range
        fn()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for fn in calls:
        fn()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()


def outer(key: str, out: Path | None):
    from gpuperf.bench import captures
    from gpuperf.bench.ncu import profile

    spec = CAPTURES[key]
    try:
        cmd, launches = profile(__file__, spec.metrics, ("--profile-from-start", "off"), (key,))
    except RuntimeError as err:
        sys.exit(str(err))
    if len(launches) != len(spec.providers):
        kernels = [launch["kernel"][:60] for launch in launches]
        sys.exit(f"{key}: expected {len(spec.providers)} profiled launches, one per provider, got {kernels}")
    rows = []
    for provider, launch in zip(spec.providers, launches, strict=True):
        rows.append({"provider": provider, **launch})
        shown = {name: f"{m['value']:g} {m['unit']}" for name, m in launch["metrics"].items()}
        print(provider, launch["kernel"][:50], shown, flush=True)
    capture = captures.build(
        spec.name,
        tool="ncu " + " ".join(cmd[1:]),
        payload={**spec.payload, "metrics": list(spec.metrics), "rows": rows},
        sources=spec.sources,
        method="Nsight Compute counters of one profiled launch per provider (kernel replay, own clocks)",
    )
    print("wrote", captures.write(capture, out), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("captures", nargs="*", help=f"of {list(CAPTURES)} (all by default)")
    parser.add_argument("--inner", choices=list(CAPTURES), help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=None, help="measurements folder")
    args = parser.parse_args()
    unknown = sorted(set(args.captures) - set(CAPTURES))
    if unknown:
        parser.error(f"unknown captures {unknown}; known: {list(CAPTURES)}")
    if args.inner:
        inner(CAPTURES[args.inner])
    else:
        for key in args.captures or CAPTURES:
            outer(key, args.out)
