"""Print the launch configurations behind the committed numbers (GPU only).

* vector add: GB/s for each (block size, warps) at 2**24 and 2**26 fp32 elements,
  next to ``x + y``, to choose the default block size in ``kernels/_configs.py``;
* softmax: the config the autotuner picked for each benchmarked row length.

Usage: ``PYTHONPATH=src python scripts/explore_configs.py``.
"""

import torch

from gpuperf.bench import metrics
from gpuperf.bench.catalog import SOFTMAX, SOFTMAX_LONG
from gpuperf.bench.timing import time_ms
from gpuperf.kernels import softmax, vector_add
from gpuperf.kernels.softmax import _softmax_kernel, _softmax_online_kernel


def main():
    for n in (2**20, 2**20, 2**22, 2**24):  # 2**20 twice: its run-to-run spread
        x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
        work = metrics.elementwise_bytes(n, 4)
        base = time_ms(lambda: x + y).ms
        print(f"vector add n=2^{n.bit_length() - 1}: torch {metrics.gb_per_s(work, base):.0f} GB/s")
        for block in (512, 1024, 2048, 4096, 8192, 16384):
            cells = []
            for warps in (2, 4, 8, 16):
                if block // (warps * 32) < 4:
                    cells.append("    -")
                    continue
                ms = time_ms(lambda: vector_add(x, y, block_size=block, num_warps=warps)).ms
                cells.append(f"{metrics.gb_per_s(work, ms):5.0f}")
            print(f"  block {block:>5}: " + " ".join(cells) + "   (GB/s at 2, 4, 8, 16 warps)")
    for bench, kernel in ((SOFTMAX, _softmax_kernel), (SOFTMAX_LONG, _softmax_online_kernel)):
        for n in bench.x_values:
            (x,) = bench.make_inputs(n, torch.device("cuda"))
            softmax(x)
            print(f"softmax n_cols={n}: {kernel.best_config}")


if __name__ == "__main__":
    main()
