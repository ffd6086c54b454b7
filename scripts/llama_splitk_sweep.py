"""Launch-rule sweep of gpuperf.kernels.matmul_splitk at a decode step's projections (GPU only).

Usage: ``python scripts/llama_splitk_sweep.py``. For Llama-3-8B's QKV, output and down
projections at M = 1 (bfloat16), prints GB/s of the weight read for each (programs per
SM, stages, BLOCK_N, BLOCK_K) beside cuBLAS's, and what the committed rule picks.
"""

import importlib
import itertools
import sys


def main() -> int:
    import torch

    from gpuperf.bench import metrics
    from gpuperf.bench.timing import time_ms

    if not torch.cuda.is_available():
        print("llama_splitk_sweep: needs a CUDA GPU", file=sys.stderr)
        return 2
    mod = importlib.import_module("gpuperf.kernels.matmul_splitk")
    names = ("SPLITK_PROGRAMS_PER_SM", "SPLITK_NUM_STAGES", "SPLITK_BLOCK_N", "SPLITK_BLOCK_K")
    saved = {n: getattr(mod, n) for n in names}
    for m, n, k in ((1, 6144, 4096), (1, 4096, 4096), (1, 4096, 14336), (8, 4096, 14336)):
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
        gbps = lambda fn: metrics.matmul_bytes(m, n, k, 2) / time_ms(fn, rounds=1).ms / 1e6
        rule = mod.splitk_launch(m, n, k, 0)
        print(f"{m}x{n}x{k}: cuBLAS {gbps(lambda: a @ b):.0f} GB/s; rule {tuple(rule)}: "
              f"{gbps(lambda: mod.matmul_splitk(a, b)):.0f}", flush=True)  # fmt: skip
        results = []
        for per_sm, stages, block_n, block_k in itertools.product(
            (1, 2, 4), (3, 4, 6), (32, 64, 128), (128, 256)
        ):
            for name, value in zip(names, (per_sm, stages, block_n, block_k), strict=True):
                setattr(mod, name, value)
            mod.splitk_launch.cache_clear()
            mod.matmul_splitk.plans.clear()
            try:
                results.append((gbps(lambda: mod.matmul_splitk(a, b)), per_sm, stages, block_n, block_k))
            except Exception as err:  # a config that does not fit is reported, not fatal
                print(f"   {per_sm} {stages} {block_n} {block_k}: {type(err).__name__}", flush=True)
        for name, value in saved.items():
            setattr(mod, name, value)
        mod.splitk_launch.cache_clear()
        mod.matmul_splitk.plans.clear()
        results.sort(reverse=True)
        for value, *config in results[:6]:
            print(f"   per_sm, stages, BLOCK_N, BLOCK_K = {tuple(config)}: {value:.0f} GB/s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
