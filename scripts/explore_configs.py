"""Measure the launch configurations behind the kernels' defaults (GPU only).

* vector add: GB/s for each (block size, warps), next to ``x + y``;
* softmax, single pass: every (rows per program, warps) that holds 4 to 64
  elements per thread, per benchmarked row length, beside the default rule's pick;
* softmax, online: every (chunk, warps), with the second pass reversed or not;

Usage: ``python scripts/explore_configs.py [--out FOLDER]``; the output
is also written to ``<out>/<gpu>/explore_configs.log`` under a provenance line.
"""

import argparse

import torch
import triton

from gpuperf.bench import metrics, records
from gpuperf.bench.catalog import SOFTMAX, SOFTMAX_LONG, SOFTMAX_LONG_ROWS, SOFTMAX_ROWS
from gpuperf.bench.timing import time_ms
from gpuperf.kernels import configs as _configs
from gpuperf.kernels import vector_add
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None, help="measurements folder (default: src/gpuperf/measurements)")
    args = parser.parse_args()
    about = records.collect_provenance()
    emit(records.caption(about))
    vector_add_sweep()
    fused_sweep()
    online_sweep()
    root = records.output_dir(args.out)
    path = root / records.gpu_slug(about["gpu"]) / "explore_configs.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(LINES) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
