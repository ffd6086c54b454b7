"""A probe of the Mixture-of-Experts kernels on a GPU, for tuning (not a benchmark: no records).

Usage (repo root, about 2 minutes on an H100; stops starting new work at ``--budget`` seconds)::

    PYTHONPATH=src python scripts/moe_gpu_check.py [--out DIR] [--budget 150] [--no-sweep]

Writes ``moe_gpu_check.json`` to ``--out`` (default ``$OUT``, else the current folder) and
prints what it measures:

1. **Correctness** at the shapes of Mixtral-8x7B, Qwen3-30B-A3B and DeepSeek-V3 (512
   tokens, their top-k, skewed routing): ``grouped_matmul`` against a float32 per-expert product and
   against ``F.grouped_mm``; ``matmul_fp8_blockwise`` at DeepSeek-V3's dense shapes against
   the float64 product of the dequantized operands.
2. **Grouped matmul timing**: the up (``K = d``, ``N = 2 * ffn``) and down (``K = ffn``,
   ``N = d``) products of each model's experts at decode (64 tokens) and prefill (4096
   tokens), routing uniform and skewed: ``grouped_matmul``, ``F.grouped_mm`` (or
   ``torch._grouped_mm``) and a loop of cuBLAS matmuls over experts.
3. **Block-scaled FP8 timing** at DeepSeek-V3's dense shapes: ``matmul_fp8_blockwise``,
   ``torch._scaled_mm`` and ``F.scaled_mm`` with 1x128 / 128x128 scales (cuBLASLt on SM90,
   where torch supports it: an error is recorded, not fatal), per-tensor ``matmul_fp8``
   (promoted), and bf16 cuBLAS.
4. **Config sweep** (unless ``--no-sweep``): each candidate of ``GROUPED_MATMUL_CANDIDATES``
   at each model's prefill up projection, and of ``FP8_BLOCKWISE_CANDIDATES`` at two
   DeepSeek-V3 shapes.

Timing: ``triton.testing.do_bench`` (``return_mode="median"``), milliseconds and TFLOP/s.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import traceback
from pathlib import Path

#: (name, experts, top-k, d, ffn) of the models whose MoE layers the probe runs.
MODELS = (
    ("mixtral-8x7b", 8, 2, 4096, 14336),
    ("qwen3-30b-a3b", 128, 8, 2048, 768),
    ("deepseek-v3", 256, 8, 7168, 2048),
)
#: Tokens of the correctness check, of decode and of prefill.
CHECK_TOKENS, DECODE_TOKENS, PREFILL_TOKENS = 512, 64, 4096
#: DeepSeek-V3's dense FP8 GEMMs (N, K), as DeepGEMM's tests list them, at M tokens (the
#: first M also checked against float64).
FP8_SHAPES = ((2112, 7168), (4096, 7168), (7168, 2048), (7168, 16384))
FP8_TOKENS = (128, 4096)
#: (M, N, K) of the FP8 config sweep: a prefill and a decode-sized product.
SWEEP_FP8 = ((4096, 7168, 2048), (128, 4096, 7168))
#: Where it runs (a test runs its steps on the CPU, through Triton's interpreter, at tiny sizes).
DEVICE = "cuda"


class Probe:
    def __init__(self, budget_s: float):
        self.start = time.monotonic()
        self.budget_s = budget_s
        self.result: dict = {"correctness": [], "grouped": [], "fp8": [], "sweep": [], "skipped": []}

    def over_budget(self, what: str) -> bool:
        if time.monotonic() - self.start > self.budget_s:
            self.result["skipped"].append(what)
            return True
        return False

    def log(self, section: str, row: dict) -> None:
        self.result[section].append(row)
        print(section, json.dumps(row), flush=True)


def bench(fn) -> dict:
    """``{"ms": median}`` of ``fn`` by ``do_bench``, or ``{"error": ...}`` if it raises."""
    import triton

    try:
        return {"ms": triton.testing.do_bench(fn, warmup=10, rep=50, return_mode="median")}
    except Exception as err:  # a provider that does not run here is recorded, not fatal
        return {"error": f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"[:400]}


def routing(tokens: int, experts: int, top_k: int, skewed: bool, seed: int = 0):
    """``offs`` (int32, on the GPU) of a routing: each token's ``top_k`` distinct experts,
    uniform or skewed (expert ``e`` chosen with weight ``1 / (e + 1)``)."""
    import torch

    from gpuperf.reference import sort_by_expert

    g = torch.Generator(device=DEVICE).manual_seed(seed)
    weights = (
        1.0 / torch.arange(1, experts + 1, device=DEVICE) if skewed else torch.ones(experts, device=DEVICE)
    )
    chosen = torch.multinomial(weights.expand(tokens, experts), top_k, replacement=False, generator=g)
    return sort_by_expert(chosen, experts)[1]


def grouped_mm_fn():
    import torch

    fn = getattr(torch.nn.functional, "grouped_mm", None)
    return fn if fn is not None else getattr(torch, "_grouped_mm", None)


def per_expert_loop(a, b, offs):
    """The cuBLAS loop with the offsets already on the host (the loop's own sync left out)."""
    import torch

    ends = offs.tolist()

    def run():
        out = torch.empty((a.shape[0], b.shape[2]), dtype=a.dtype, device=a.device)
        start = 0
        for e, end in enumerate(ends):
            if end > start:
                torch.mm(a[start:end], b[e], out=out[start:end])
            start = end
        return out

    return run


def _timed(row: dict, providers: dict, flops: int) -> None:
    for key, fn in providers.items():
        timing = bench(fn)
        if "ms" in timing:
            timing["tflops"] = flops / timing["ms"] / 1e9
        row[key] = timing


def _check_grouped_gemm(name, experts, top_k, gemm, k, n) -> dict:
    import torch

    from gpuperf.kernels import grouped_matmul
    from gpuperf.testing import assert_close

    offs = routing(CHECK_TOKENS, experts, top_k, skewed=True)
    rows = CHECK_TOKENS * top_k
    a = torch.randn(rows, k, device=DEVICE, dtype=torch.bfloat16)
    b = torch.randn(experts, k, n, device=DEVICE, dtype=torch.bfloat16).mul_(k**-0.5)
    out = grouped_matmul(a, b, offs)
    ref = torch.empty(rows, n, device=DEVICE)
    start = 0
    for e, end in enumerate(offs.tolist()):
        ref[start:end] = a[start:end].float() @ b[e].float()
        start = end
    row = {"model": name, "gemm": gemm, "rows": rows, "K": k, "N": n, "experts": experts}
    try:
        assert_close("grouped_matmul vs float32 loop", ref.double(), out, k=k)
        row["vs_float32"] = "ok"
    except AssertionError as err:
        row["vs_float32"] = str(err)[:400]
    row["max_abs_error"] = (out.float() - ref).abs().max().item()
    grouped_mm = grouped_mm_fn()
    if grouped_mm is not None:
        try:
            theirs = grouped_mm(a, b, offs=offs)
            row["max_abs_diff_vs_grouped_mm"] = (out.float() - theirs.float()).abs().max().item()
        except Exception as err:  # recorded: F.grouped_mm's own limits
            row["grouped_mm"] = f"{type(err).__name__}: {err}"[:400]
    return row


def check_grouped(probe: Probe) -> None:
    """``grouped_matmul`` against a float32 loop and ``F.grouped_mm``, skewed routing."""
    import torch

    for name, experts, top_k, d, ffn in MODELS:
        for gemm, k, n in (("up", d, 2 * ffn), ("down", ffn, d)):
            if probe.over_budget(f"correctness grouped {name} {gemm}"):
                return
            probe.log("correctness", _check_grouped_gemm(name, experts, top_k, gemm, k, n))
            torch.cuda.empty_cache()


def _time_grouped_gemm(probe: Probe, name, experts, top_k, gemm, k, n) -> None:
    import torch

    from gpuperf.kernels import grouped_matmul

    grouped_mm = grouped_mm_fn()
    b = torch.randn(experts, k, n, device=DEVICE, dtype=torch.bfloat16).mul_(k**-0.5)
    for tokens, skewed in ((DECODE_TOKENS, False), (PREFILL_TOKENS, False), (PREFILL_TOKENS, True)):
        if probe.over_budget(f"grouped {name} {gemm} {tokens} skewed={skewed}"):
            return
        offs = routing(tokens, experts, top_k, skewed)
        a = torch.randn(tokens * top_k, k, device=DEVICE, dtype=torch.bfloat16)
        providers = {
            "gpuperf": lambda a=a, offs=offs: grouped_matmul(a, b, offs),
            "cublas_loop": per_expert_loop(a, b, offs),
        }
        if grouped_mm is not None:
            providers["grouped_mm"] = lambda a=a, offs=offs: grouped_mm(a, b, offs=offs)
        row = {"model": name, "gemm": gemm, "tokens": tokens, "skewed": skewed, "K": k, "N": n}
        row["max_rows_per_expert"] = int(torch.diff(offs, prepend=offs.new_zeros(1)).max())
        _timed(row, providers, 2 * tokens * top_k * n * k)
        probe.log("grouped", row)


def time_grouped(probe: Probe) -> None:
    """``grouped_matmul``, ``F.grouped_mm`` and the cuBLAS loop, decode and prefill."""
    import torch

    for name, experts, top_k, d, ffn in MODELS:
        for gemm, k, n in (("up", d, 2 * ffn), ("down", ffn, d)):
            if probe.over_budget(f"grouped {name} {gemm}"):
                return
            _time_grouped_gemm(probe, name, experts, top_k, gemm, k, n)
            torch.cuda.empty_cache()


def fp8_operands(m: int, n: int, k: int):
    import torch

    from gpuperf.kernels import quantize_fp8_blockwise

    x = torch.randn(m, k, device=DEVICE)
    w = torch.randn(n, k, device=DEVICE) * k**-0.5
    a, scale_a = quantize_fp8_blockwise(x)
    b, scale_b = quantize_fp8_blockwise(w, (128, 128))
    return x, w, a, b, scale_a, scale_b


def _fp8_shape(m: int, n: int, k: int) -> dict:
    import torch

    from gpuperf.kernels import matmul_fp8, matmul_fp8_blockwise, to_fp8
    from gpuperf.reference import matmul_fp8_blockwise_ref

    x, w, a, b, scale_a, scale_b = fp8_operands(m, n, k)
    row = {"M": m, "N": n, "K": k}
    ours = matmul_fp8_blockwise(a, b, scale_a, scale_b)
    if m == FP8_TOKENS[0]:
        ref = matmul_fp8_blockwise_ref(a, b, scale_a, scale_b)
        try:
            torch.testing.assert_close(ours.double(), ref, rtol=2e-2, atol=2**-9 * k**0.5)
            row["vs_float64"] = "ok"
        except AssertionError as err:
            row["vs_float64"] = str(err)[:400]
        row["rel_error_vs_float64"] = ((ours.double() - ref).norm() / ref.norm()).item()
    # cuBLASLt's blockwise layout: scale_a (M, K/128) column-major, scale_b (K/128, N/128)
    # column-major (torch's meta checks for F.scaled_mm's 1x128 x 128x128 recipe).
    sa_col, sb_col = scale_a.t().contiguous().t(), scale_b.t()
    xb, wb = x.bfloat16(), w.bfloat16()
    a_t, sa_t = to_fp8(x)
    b_t, sb_t = to_fp8(w)
    providers = {
        "gpuperf_blockwise": lambda: matmul_fp8_blockwise(a, b, scale_a, scale_b),
        "scaled_mm_blockwise": lambda: torch._scaled_mm(a, b.t(), sa_col, sb_col, out_dtype=torch.bfloat16),
        "gpuperf_per_tensor_promoted": lambda: matmul_fp8(a_t, b_t.t(), sa_t, sb_t),
        "bf16_cublas": lambda: xb @ wb.t(),
    }
    scaled_mm_v2 = getattr(torch.nn.functional, "scaled_mm", None)
    recipe = getattr(torch.nn.functional, "ScalingType", None)
    if scaled_mm_v2 is not None and recipe is not None:
        providers["F.scaled_mm_blockwise"] = lambda: scaled_mm_v2(
            a,
            b.t(),
            sa_col,
            recipe.BlockWise1x128,
            sb_col,
            recipe.BlockWise128x128,
            output_dtype=torch.bfloat16,
        )
    _timed(row, providers, 2 * m * n * k)
    for key in ("scaled_mm_blockwise", "F.scaled_mm_blockwise"):
        if "ms" in row.get(key, {}):
            row[key]["max_abs_diff_vs_gpuperf"] = (providers[key]().float() - ours.float()).abs().max().item()
    return row


def check_and_time_fp8(probe: Probe) -> None:
    """``matmul_fp8_blockwise`` against float64 and beside the vendors' block-scaled paths."""
    import torch

    for n, k in FP8_SHAPES:
        for m in FP8_TOKENS:
            if probe.over_budget(f"fp8 {m}x{n}x{k}"):
                return
            probe.log("fp8", _fp8_shape(m, n, k))
            torch.cuda.empty_cache()


def _launching(make):
    """A function that launches what ``make()`` returns (an op's ``(out, launches)``)."""
    from gpuperf.kernels.launch import launcher

    launches = make()[1]

    def run():
        for kernel, grid, args, constexprs, num_warps, num_stages in launches:
            launcher(kernel)(grid, args, constexprs, num_warps=num_warps, num_stages=num_stages)

    return run


def _sweep_grouped(probe: Probe, name, experts, top_k, d, ffn) -> None:
    import torch

    from gpuperf.kernels.configs import GROUPED_MATMUL_CANDIDATES, moe_candidates
    from gpuperf.kernels.grouped_matmul import grouped_matmul_launches

    offs = routing(PREFILL_TOKENS, experts, top_k, skewed=False)
    a = torch.randn(PREFILL_TOKENS * top_k, d, device=DEVICE, dtype=torch.bfloat16)
    b = torch.randn(experts, d, 2 * ffn, device=DEVICE, dtype=torch.bfloat16).mul_(d**-0.5)
    for config in moe_candidates(GROUPED_MATMUL_CANDIDATES, 2):
        if probe.over_budget(f"sweep grouped {name} {config.label()}"):
            return
        row = {"kernel": "grouped_matmul", "model": name, "config": config.label()}
        run = _launching(lambda c=config: grouped_matmul_launches(a, b, offs, c))
        _timed(row, {"timing": run}, 2 * PREFILL_TOKENS * top_k * 2 * ffn * d)
        probe.log("sweep", row)


def _sweep_fp8(probe: Probe, m: int, n: int, k: int) -> None:
    from gpuperf.kernels.configs import FP8_BLOCKWISE_CANDIDATES, moe_candidates
    from gpuperf.kernels.matmul_fp8_blockwise import matmul_fp8_blockwise_launches

    _, _, a, b, scale_a, scale_b = fp8_operands(m, n, k)
    for config in moe_candidates(FP8_BLOCKWISE_CANDIDATES, 1):
        if probe.over_budget(f"sweep fp8 {m}x{n}x{k} {config.label()}"):
            return
        row = {"kernel": "matmul_fp8_blockwise", "shape": [m, n, k], "config": config.label()}
        run = _launching(lambda c=config: matmul_fp8_blockwise_launches(a, b, scale_a, scale_b, c))
        _timed(row, {"timing": run}, 2 * m * n * k)
        probe.log("sweep", row)


def sweep(probe: Probe) -> None:
    """Each candidate config at one prefill shape per model, and two DeepSeek-V3 FP8 shapes."""
    import torch

    for name, experts, top_k, d, ffn in MODELS:
        if probe.over_budget(f"sweep grouped {name}"):
            return
        _sweep_grouped(probe, name, experts, top_k, d, ffn)
        torch.cuda.empty_cache()
    for m, n, k in SWEEP_FP8:
        if probe.over_budget(f"sweep fp8 {m}x{n}x{k}"):
            return
        _sweep_fp8(probe, m, n, k)
        torch.cuda.empty_cache()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.environ.get("OUT", "."), help="folder for moe_gpu_check.json")
    parser.add_argument("--budget", type=float, default=150.0, help="seconds after which no new step starts")
    parser.add_argument("--no-sweep", action="store_true", help="skip the config sweep")
    args = parser.parse_args(argv)

    import torch
    import triton

    if not torch.cuda.is_available():
        print("moe_gpu_check: needs a CUDA GPU", file=sys.stderr)
        return 2
    probe = Probe(args.budget)
    probe.result["provenance"] = {
        "gpu": torch.cuda.get_device_name(),
        "capability": list(torch.cuda.get_device_capability()),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "triton": triton.__version__,
        "commit": os.environ.get("GPUPERF_COMMIT", "unknown"),
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "timing": "triton.testing.do_bench(warmup=10, rep=50, return_mode='median')",
    }
    print(json.dumps(probe.result["provenance"]), flush=True)
    steps = [check_grouped, time_grouped, check_and_time_fp8] + ([] if args.no_sweep else [sweep])
    for step in steps:
        try:
            step(probe)
        except Exception:  # one step's failure is recorded; the others still run
            probe.result.setdefault("errors", []).append(f"{step.__name__}: {traceback.format_exc()[-2000:]}")
            print(probe.result["errors"][-1], file=sys.stderr, flush=True)
    probe.result["wall_s"] = math.ceil(time.monotonic() - probe.start)
    out = Path(args.out) / "moe_gpu_check.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(probe.result, indent=1) + "\n")
    print(f"wrote {out} ({probe.result['wall_s']} s; skipped: {len(probe.result['skipped'])})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
