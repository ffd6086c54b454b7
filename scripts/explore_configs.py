"""Measure the launch configurations behind the kernels' defaults (GPU only).

* vector add: GB/s for each (block size, warps), next to ``x + y``;
* softmax, single pass: every (rows per program, warps) that holds 4 to 64
  elements per thread, per benchmarked row length, beside the default rule's pick;
* softmax, online: every (chunk, warps), with the second pass reversed or not;
* the host time one call costs, for the wrappers and for PyTorch's ops.

Usage: ``python scripts/explore_configs.py [--out docs/measurements]``; the output
is also written to ``<out>/<gpu>/explore_configs.log`` under a provenance line.
"""

import argparse
from pathlib import Path

import torch
import triton

from gpuperf.bench import metrics, records
from gpuperf.bench.catalog import SOFTMAX, SOFTMAX_LONG, SOFTMAX_LONG_ROWS, SOFTMAX_ROWS
from gpuperf.bench.timing import time_ms
from gpuperf.kernels import _configs, softmax, vector_add
from gpuperf.kernels.softmax import _softmax_kernel, _softmax_online_kernel

LINES: list[str] = []


def emit(line: str) -> None:
    print(line, flush=True)
    LINES.append(line)


def vector_add_sweep():
    for n in (2**20, 2**20, 2**22, 2**24):  # 2**20 twice: its run-to-run spread
        x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
        work = metrics.elementwise_bytes(n, 4)
        base = time_ms(lambda: x + y).ms
        emit(f"vector add n=2^{n.bit_length() - 1}: torch {metrics.gb_per_s(work, base):.0f} GB/s")
        for block in (512, 1024, 2048, 4096):
            cells = []
            for warps in (2, 4, 8):
                ms = time_ms(lambda: vector_add(x, y, block_size=block, num_warps=warps)).ms
                cells.append(f"{metrics.gb_per_s(work, ms):5.0f}")
            emit(f"  block {block:>5}: " + " ".join(cells) + "   (GB/s at 2, 4, 8 warps)")


def fused_sweep():
    for n in SOFTMAX.x_values:
        x = torch.randn(SOFTMAX_ROWS, n, device="cuda")
        y = torch.empty_like(x)
        work = metrics.softmax_bytes(SOFTMAX_ROWS, n, 4)
        block_n = triton.next_power_of_2(n)
        results = []
        for bm in (1, 2, 4, 8, 16):
            for warps in (2, 4, 8, 16, 32):
                if not 4 <= bm * block_n // (32 * warps) <= 64:
                    continue
                grid = (triton.cdiv(SOFTMAX_ROWS, bm),)
                fn = lambda: _softmax_kernel[grid](
                    x, y, SOFTMAX_ROWS, n, n, 1, n, BLOCK_N=block_n, BLOCK_M=bm, num_warps=warps
                )
                results.append((metrics.gb_per_s(work, time_ms(fn).ms), bm, warps))
        results.sort(reverse=True)
        chosen = _configs.softmax_fused_launch(block_n)
        rank = [(bm, w) for _, bm, w in results].index(chosen) + 1
        top = ", ".join(f"M{bm}/w{w}: {v:.0f}" for v, bm, w in results[:5])
        emit(
            f"softmax n_cols={n}: default M{chosen[0]}/w{chosen[1]} ranks {rank} of {len(results)}; "
            f"best {top}; worst M{results[-1][1]}/w{results[-1][2]}: {results[-1][0]:.0f}"
        )


def online_sweep():
    for n in SOFTMAX_LONG.x_values:
        x = torch.randn(SOFTMAX_LONG_ROWS, n, device="cuda")
        y = torch.empty_like(x)
        work = metrics.softmax_bytes(SOFTMAX_LONG_ROWS, n, 4)
        results = []
        for block_n in (4096, 8192, 16384, 32768):
            for warps in (4, 8, 16, 32):
                if not 4 <= block_n // (32 * warps) <= 64:
                    continue
                for reverse in (True, False):
                    fn = lambda: _softmax_online_kernel[(SOFTMAX_LONG_ROWS,)](
                        x, y, n, n, 1, n, BLOCK_N=block_n, REVERSE_SECOND_PASS=reverse, num_warps=warps
                    )
                    results.append((metrics.gb_per_s(work, time_ms(fn).ms), block_n, warps, reverse))
        results.sort(reverse=True)
        emit(
            f"softmax online n_cols={n}: "
            + ", ".join(f"N{bn}/w{w}/{'rev' if r else 'fwd'}: {v:.0f}" for v, bn, w, r in results)
        )


def host_overhead():
    """Host time per call, with the GPU kept busy so the launch queue never throttles the host."""
    import time

    emit("host times: time.perf_counter over 200 calls, GPU kept busy by torch.cuda._sleep")

    x = torch.randn(SOFTMAX_ROWS, 256, device="cuda")
    y = torch.empty_like(x)
    a, b = torch.randn(2**12, device="cuda"), torch.randn(2**12, device="cuda")
    block_m, warps = _configs.softmax_fused_launch(256)
    grid = (triton.cdiv(SOFTMAX_ROWS, block_m),)
    calls = {
        "torch.softmax": lambda: torch.softmax(x, dim=-1),
        "x + y": lambda: a + b,
        "_softmax_kernel[grid](...)": lambda: _softmax_kernel[grid](
            x, y, SOFTMAX_ROWS, 256, 256, 1, 256, BLOCK_N=256, BLOCK_M=block_m, num_warps=warps
        ),
        "gpuperf.kernels.softmax": lambda: softmax(x),
        "gpuperf.kernels.vector_add": lambda: vector_add(a, b),
    }
    for name, fn in calls.items():
        fn()
        torch.cuda.synchronize()
        torch.cuda._sleep(2_000_000_000)  # about a second of GPU time: the queue never drains
        start = time.perf_counter()
        for _ in range(200):
            fn()
        per_call = (time.perf_counter() - start) / 200 * 1e6
        torch.cuda.synchronize()
        emit(f"host time per call, {name}: {per_call:.1f} us")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None, help="measurements folder (default: docs/measurements)")
    parser.add_argument("--only", choices=["host"], help="run only the host-overhead measurement")
    args = parser.parse_args()
    about = records.collect_provenance()
    emit(records.caption(about))
    host_overhead()
    if args.only != "host":
        vector_add_sweep()
        fused_sweep()
        online_sweep()
    root = records.measurements_dir() if args.out is None else Path(args.out)
    name = "host_overhead.log" if args.only == "host" else "explore_configs.log"
    path = root / records.gpu_slug(about["gpu"]) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(LINES) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
