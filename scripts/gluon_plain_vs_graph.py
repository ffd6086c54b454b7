"""Tutorial 08's FP8 matmul at 4096^3 timed the two ways a user can: plainly from Python with
``triton.testing.do_bench``, and replayed as a CUDA graph with ``do_bench_cudagraph``, which
leaves the host out. Where the plain time is within a few percent of the graph's, the host
path keeps up with the kernel.

Usage (a Hopper GPU): ``python scripts/gluon_plain_vs_graph.py [OUT.json]``. For per-tensor
and per-row scales, the Gluon kernel (``gluon.matmul_fp8_promoted``), Triton's tuned
``matmul_fp8`` and cuBLASLt (``torch._scaled_mm``) are each timed five times both ways with
the timers' defaults; it prints the medians, TFLOP/s and plain/graph, and writes them as
JSON with the GPU and versions.
"""

import json
import statistics
import sys

import torch
import triton
from triton.testing import do_bench, do_bench_cudagraph

from gpuperf.bench import metrics
from gpuperf.bench.catalog import GLUON_FP8

SHAPE = (4096, 4096, 4096)
PROVIDERS = ("gluon", "triton", "scaled_mm")
ROUNDS = 5


def main(out: str | None) -> None:
    result = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__}
    result |= {"shape": SHAPE, "rows": []}
    flops = metrics.matmul_flops(*SHAPE)
    for scaling in ("tensor", "row"):
        inputs = GLUON_FP8.make_inputs(SHAPE, torch.device("cuda"), scaling=scaling)
        for provider in (p for p in GLUON_FP8.providers if p.key in PROVIDERS):
            fn = provider.make(*inputs)
            fn()
            torch.cuda.synchronize()
            plain = statistics.median(do_bench(fn) for _ in range(ROUNDS))
            graph = statistics.median(do_bench_cudagraph(fn) for _ in range(ROUNDS))
            row = {"scaling": scaling, "provider": provider.key, "plain_ms": plain, "graph_ms": graph}
            result["rows"].append(row)
            plain_tflops, graph_tflops = flops / plain / 1e9, flops / graph / 1e9
            print(
                f"{scaling:6s} {provider.key:10s} plain {plain * 1e3:7.1f} us ({plain_tflops:6.0f} TFLOP/s)"
                f"  graph {graph * 1e3:7.1f} us ({graph_tflops:6.0f})  plain/graph {plain / graph:.3f}",
                flush=True,
            )
    if out:
        with open(out, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
