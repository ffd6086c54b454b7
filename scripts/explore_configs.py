"""Measure the launch configurations behind the kernels' defaults (GPU only).

* vector add: GB/s for each (block size, warps), next to ``x + y``;
* softmax, single pass: every (rows per program, warps) the pruning rules keep,
  per benchmarked row length, with the autotuner's own pick;
* softmax, online: every (chunk, warps), with the second pass reversed or not.

Usage: ``PYTHONPATH=src python scripts/explore_configs.py``.
"""

import torch
import triton

from gpuperf.bench import metrics
from gpuperf.bench.catalog import SOFTMAX, SOFTMAX_LONG, SOFTMAX_LONG_ROWS, SOFTMAX_ROWS
from gpuperf.bench.timing import time_ms
from gpuperf.kernels import _configs, softmax, vector_add
from gpuperf.kernels.softmax import _softmax_kernel, _softmax_online_kernel


def vector_add_sweep():
    for n in (2**20, 2**20, 2**22, 2**24):  # 2**20 twice: its run-to-run spread
        x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
        work = metrics.elementwise_bytes(n, 4)
        base = time_ms(lambda: x + y).ms
        print(f"vector add n=2^{n.bit_length() - 1}: torch {metrics.gb_per_s(work, base):.0f} GB/s")
        for block in (512, 1024, 2048, 4096):
            cells = []
            for warps in (2, 4, 8):
                ms = time_ms(lambda: vector_add(x, y, block_size=block, num_warps=warps)).ms
                cells.append(f"{metrics.gb_per_s(work, ms):5.0f}")
            print(f"  block {block:>5}: " + " ".join(cells) + "   (GB/s at 2, 4, 8 warps)")


def fused_sweep():
    for n in SOFTMAX.x_values:
        x = torch.randn(SOFTMAX_ROWS, n, device="cuda")
        y = torch.empty_like(x)
        work = metrics.softmax_bytes(SOFTMAX_ROWS, n, 4)
        block_n = triton.next_power_of_2(n)
        configs = _configs.prune_softmax_fused(_configs.softmax_fused_configs(), {"BLOCK_N": block_n})
        results = []
        for c in configs:
            bm = c.kwargs["BLOCK_M"]
            grid = (triton.cdiv(SOFTMAX_ROWS, bm),)
            fn = lambda: _softmax_kernel.fn[grid](x, y, SOFTMAX_ROWS, n, n, 1, n, BLOCK_N=block_n,
                                                  BLOCK_M=bm, num_warps=c.num_warps)
            results.append((metrics.gb_per_s(work, time_ms(fn).ms), bm, c.num_warps))
        results.sort(reverse=True)
        softmax(x)
        top = ", ".join(f"M{bm}/w{w}: {v:.0f}" for v, bm, w in results[:6])
        worst = ", ".join(f"M{bm}/w{w}: {v:.0f}" for v, bm, w in results[-2:])
        print(f"softmax n_cols={n} ({len(results)} configs) best {top} | worst {worst} | "
              f"autotuner: M{_softmax_kernel.best_config.kwargs['BLOCK_M']}/w{_softmax_kernel.best_config.num_warps}")


def online_sweep():
    for n in SOFTMAX_LONG.x_values:
        x = torch.randn(SOFTMAX_LONG_ROWS, n, device="cuda")
        y = torch.empty_like(x)
        work = metrics.softmax_bytes(SOFTMAX_LONG_ROWS, n, 4)
        results = []
        for c in _configs.softmax_online_configs():
            for reverse in (True, False):
                fn = lambda: _softmax_online_kernel.fn[(SOFTMAX_LONG_ROWS,)](
                    x, y, n, n, 1, n, BLOCK_N=c.kwargs["BLOCK_N"], REVERSE_SECOND_PASS=reverse,
                    num_warps=c.num_warps)
                results.append((metrics.gb_per_s(work, time_ms(fn).ms), c.kwargs["BLOCK_N"], c.num_warps, reverse))
        results.sort(reverse=True)
        print(f"softmax online n_cols={n}: " + ", ".join(
            f"N{bn}/w{w}/{'rev' if r else 'fwd'}: {v:.0f}" for v, bn, w, r in results))


if __name__ == "__main__":
    vector_add_sweep()
    fused_sweep()
    online_sweep()
