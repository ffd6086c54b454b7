"""A probe of the Mixture-of-Experts kernels on a GPU, for tuning (not a benchmark: no records).

Usage (repo root; stops starting new work at ``--budget`` seconds)::

    PYTHONPATH=src python scripts/moe_gpu_check.py [--out DIR] [--budget 150]
        [--only check,grouped,fp8,sweep-grouped,sweep-fp8] [--models mixtral-8x7b,...]
        [--grouped-configs "tma 128x256x64 g8 w8 s4; pointer 128x256x64 g8 w8 s3"]
        [--fp8-configs "gluon 128x128x128 g8 w8 s5; tma 128x128x128 g8 w8 s4"]

Writes ``moe_gpu_check.json`` to ``--out`` (default ``$OUT``, else the current folder) after
every measurement (a run cut short keeps what it measured) and prints each row. Steps
(``--only`` picks some; all by default):

1. ``check``: correctness at the shapes of Mixtral-8x7B, Qwen3-30B-A3B and DeepSeek-V3 (512
   tokens, their top-k, skewed routing): ``grouped_matmul`` (its default kernel, and every
   kernel it has: computed pointers, TMA with row-major and with ``nn.Linear``-layout
   weights) against a float32 per-expert product and ``F.grouped_mm``.
2. ``grouped``: the up (``K = d``, ``N = 2 * ffn``) and down (``K = ffn``, ``N = d``)
   products of each model's experts at decode (64 tokens) and prefill (4096 tokens),
   routing uniform and skewed: ``grouped_matmul`` (default, and the computed-pointer
   kernel at its default), ``F.grouped_mm`` and a loop of cuBLAS matmuls over experts.
3. ``fp8``: DeepSeek-V3's dense shapes at 128 and 4096 tokens: ``matmul_fp8_blockwise``
   with each of its kernels (its default, the Triton TMA kernel, computed pointers; each
   checked against the float64 product at 128 tokens and against cuBLASLt),
   ``torch._scaled_mm`` and ``F.scaled_mm`` with 1x128 / 128x128 scales (cuBLASLt on SM90,
   where torch supports it: an error is recorded, not fatal), per-tensor promoted FP8
   (``matmul_fp8`` and the Gluon ``matmul_fp8_promoted``), and bf16 cuBLAS.
4. ``sweep-grouped``: each config (default: ``GROUPED_MATMUL_TMA_CANDIDATES`` and the
   computed-pointer kernel's best) at each model's prefill up and down products, its output
   compared with ``F.grouped_mm``'s.
5. ``sweep-fp8``: each config (default: the TMA and Gluon candidates and the
   computed-pointer default) at two DeepSeek-V3 shapes, its output compared with cuBLASLt's.

A config is written as its label (:func:`config_label`): the kernel (``pointer``, ``tma``,
``gluon``), the tile ``MxNxK``, ``g`` group rows, ``w`` warps, ``s`` stages, then ``ws``
(warp specialization) or a Gluon schedule (``pingpong``, ``drain``).

Timing: ``triton.testing.do_bench`` (``return_mode="median"``), milliseconds and TFLOP/s.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import subprocess
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
#: (M, N, K) of the FP8 config sweep: two prefill and two decode-sized products.
SWEEP_FP8 = ((4096, 7168, 2048), (4096, 2112, 7168), (128, 4096, 7168), (128, 2112, 7168))
#: Where it runs (a test runs its steps on the CPU, through Triton's interpreter, at tiny sizes).
DEVICE = "cuda"
#: The steps, in the order they run.
STEPS = ("check", "grouped", "fp8", "sweep-grouped", "sweep-fp8")


def config_label(config) -> str:
    """``"<kernel> MxNxK gG wW sS[ ws| <schedule>]"`` of a grouped or block-scaled config:
    ``pointer`` (a ``MatmulConfig``, or a ``PersistentConfig`` without TMA), ``tma``, ``gluon``."""
    from gpuperf.kernels.gluon.matmul_fp8 import GluonFP8Config
    from gpuperf.kernels.matmul_persistent import PersistentConfig

    tile = (
        f"{config.block_m}x{config.block_n}x{config.block_k} g{config.group_m} "
        f"w{config.num_warps} s{config.num_stages}"
    )
    if isinstance(config, GluonFP8Config):
        return f"gluon {tile} {config.schedule}"
    if isinstance(config, PersistentConfig) and config.tma:
        return f"tma {tile}" + (" ws" if config.warp_specialize else "")
    return f"pointer {tile}"


def parse_config(label: str):
    """The config :func:`config_label` writes as ``label`` (group rows 8 unless given).

    Raises:
        ValueError: ``label`` is not of that form.
    """
    from gpuperf.kernels import MatmulConfig, PersistentConfig
    from gpuperf.kernels.gluon.matmul_fp8 import GluonFP8Config

    words = label.split()
    if len(words) < 2 or words[0] not in ("pointer", "tma", "gluon"):
        raise ValueError(f"a config label starts with pointer, tma or gluon and a tile MxNxK: {label!r}")
    try:
        bm, bn, bk = (int(v) for v in words[1].split("x"))
        fields = {"g": 8, "w": 8, "s": 3}
        flags = []
        for word in words[2:]:
            if word[0] in fields and word[1:].isdigit():
                fields[word[0]] = int(word[1:])
            else:
                flags.append(word)
    except ValueError as err:
        raise ValueError(f"cannot read the config label {label!r}: {err}") from None
    g, w, st = fields["g"], fields["w"], fields["s"]
    if words[0] == "gluon":
        schedule = flags[0] if flags else "pingpong"
        return GluonFP8Config(bm, bn, bk, num_stages=st, group_m=g, num_warps=w, schedule=schedule)
    if words[0] == "tma":
        return PersistentConfig(bm, bn, bk, g, w, st, tma=True, warp_specialize="ws" in flags)
    return MatmulConfig(bm, bn, bk, g, w, st)


class Probe:
    def __init__(
        self,
        budget_s: float,
        out: Path | None = None,
        models=None,
        grouped_configs=None,
        fp8_configs=None,
        sweep_tokens=None,
    ):
        self.start = time.monotonic()
        self.budget_s = budget_s
        self.out = out
        self.models = [m for m in MODELS if models is None or m[0] in models]
        self.grouped_configs = grouped_configs
        self.fp8_configs = fp8_configs
        # (Read when the probe is made, not when the module is: a test shrinks PREFILL_TOKENS.)
        self.sweep_tokens = (PREFILL_TOKENS,) if sweep_tokens is None else tuple(sweep_tokens)
        self.result: dict = {"correctness": [], "grouped": [], "fp8": [], "sweep": [], "skipped": []}

    def save(self) -> None:
        """Write the JSON as it stands (after every row: a run cut short keeps its rows)."""
        if self.out is not None:
            self.result["wall_s"] = math.ceil(time.monotonic() - self.start)
            self.out.parent.mkdir(parents=True, exist_ok=True)
            self.out.write_text(json.dumps(self.result, indent=1) + "\n")

    def over_budget(self, what: str) -> bool:
        if time.monotonic() - self.start > self.budget_s:
            self.result["skipped"].append(what)
            return True
        return False

    def log(self, section: str, row: dict) -> None:
        self.result[section].append(row)
        print(section, json.dumps(row), flush=True)
        self.save()


def bench(fn) -> dict:
    """``{"ms": median}`` of ``fn`` by ``do_bench``, or ``{"error": ...}`` if it raises; on the
    CPU (a test's run through Triton's interpreter) ``{"error": ...}`` without timing: there
    is nothing to time, and do_bench would first run the interpreted kernel for seconds."""
    import triton

    if DEVICE == "cpu":
        return {"error": "no CUDA GPU: not timed"}

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


def run_launches(out_and_launches):
    """Launch what an op's ``*_launches`` function returned; return its output."""
    from gpuperf.kernels.launch import launcher

    out, launches = out_and_launches
    for kernel, grid, args, constexprs, num_warps, num_stages in launches:
        launcher(kernel)(grid, args, constexprs, num_warps=num_warps, num_stages=num_stages)
    return out


def grouped_variants() -> dict:
    """The grouped matmul's kernels the probe checks and times beside its default:
    ``{name: config}`` (the interpreter's small tiles on the CPU)."""
    from gpuperf.kernels import configs

    if DEVICE == "cpu":
        return {"pointer": configs.GROUPED_MATMUL_INTERPRETER, "tma": configs.GROUPED_MATMUL_TMA_INTERPRETER}
    return {"pointer": configs.GROUPED_MATMUL_DEFAULT, "tma": configs.GROUPED_MATMUL_TMA_DEFAULT}


def _compare(row: dict, ref, out, k: int) -> None:
    from gpuperf.testing import assert_close

    try:
        assert_close("grouped_matmul vs float32 loop", ref.double(), out, k=k)
        row["vs_float32"] = "ok"
    except AssertionError as err:
        row["vs_float32"] = str(err)[:400]
    row["max_abs_error"] = (out.float() - ref).abs().max().item()


def _check_grouped_gemm(name, experts, top_k, gemm, k, n) -> dict:
    import torch

    from gpuperf.kernels import grouped_matmul
    from gpuperf.kernels.grouped_matmul import grouped_matmul_config, grouped_matmul_launches

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
    row["default"] = config_label(grouped_matmul_config(a, b))
    _compare(row, ref, out, k)
    # Each kernel, and the TMA kernel on weights stored (E, N, K) as nn.Linear keeps them.
    b_linear = b.transpose(1, 2).contiguous().transpose(1, 2)
    variants = [(name, config, b) for name, config in grouped_variants().items()]
    variants.append(("tma_linear_weights", grouped_variants()["tma"], b_linear))
    for variant, config, weights in variants:
        checked = {"config": config_label(config)}
        try:
            _compare(checked, ref, run_launches(grouped_matmul_launches(a, weights, offs, config)), k)
        except Exception as err:  # recorded: the other variants still run
            checked["error"] = f"{type(err).__name__}: {err}"[:400]
        row[variant] = checked
    del b_linear
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

    for name, experts, top_k, d, ffn in probe.models:
        for gemm, k, n in (("up", d, 2 * ffn), ("down", ffn, d)):
            if probe.over_budget(f"correctness grouped {name} {gemm}"):
                return
            probe.log("correctness", _check_grouped_gemm(name, experts, top_k, gemm, k, n))
            torch.cuda.empty_cache()


def _time_grouped_gemm(probe: Probe, name, experts, top_k, gemm, k, n) -> None:
    import torch

    from gpuperf.kernels import grouped_matmul
    from gpuperf.kernels.grouped_matmul import grouped_matmul_config, grouped_matmul_launches

    grouped_mm = grouped_mm_fn()
    b = torch.randn(experts, k, n, device=DEVICE, dtype=torch.bfloat16).mul_(k**-0.5)
    for tokens, skewed in ((DECODE_TOKENS, False), (PREFILL_TOKENS, False), (PREFILL_TOKENS, True)):
        if probe.over_budget(f"grouped {name} {gemm} {tokens} skewed={skewed}"):
            return
        offs = routing(tokens, experts, top_k, skewed)
        a = torch.randn(tokens * top_k, k, device=DEVICE, dtype=torch.bfloat16)
        pointer = grouped_variants()["pointer"]
        providers = {
            "gpuperf": lambda a=a, offs=offs: grouped_matmul(a, b, offs),
            "gpuperf_pointer": _launching(
                lambda a=a, offs=offs: grouped_matmul_launches(a, b, offs, pointer)
            ),
            "cublas_loop": per_expert_loop(a, b, offs),
        }
        if grouped_mm is not None:
            providers["grouped_mm"] = lambda a=a, offs=offs: grouped_mm(a, b, offs=offs)
        row = {"model": name, "gemm": gemm, "tokens": tokens, "skewed": skewed, "K": k, "N": n}
        row["default"] = config_label(grouped_matmul_config(a, b))
        row["max_rows_per_expert"] = int(torch.diff(offs, prepend=offs.new_zeros(1)).max())
        _timed(row, providers, 2 * tokens * top_k * n * k)
        probe.log("grouped", row)


def time_grouped(probe: Probe) -> None:
    """``grouped_matmul``, ``F.grouped_mm`` and the cuBLAS loop, decode and prefill."""
    import torch

    for name, experts, top_k, d, ffn in probe.models:
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


def fp8_variants() -> dict:
    """The block-scaled kernels the probe checks and times beside the op's default:
    ``{name: config}`` (the interpreter's small tiles on the CPU)."""
    from gpuperf.kernels import PersistentConfig, configs

    if DEVICE == "cpu":
        tma = PersistentConfig(16, 32, configs.FP8_SCALE_BLOCK, group_m=2, num_warps=4, num_stages=1)
        return {"tma": tma, "pointer": configs.FP8_BLOCKWISE_INTERPRETER}
    return {"tma": configs.FP8_BLOCKWISE_TMA_DEFAULT, "pointer": configs.FP8_BLOCKWISE_DEFAULT}


def _fp8_shape(m: int, n: int, k: int) -> dict:
    import torch

    from gpuperf.kernels import matmul_fp8, matmul_fp8_blockwise, to_fp8
    from gpuperf.kernels.matmul_fp8_blockwise import fp8_blockwise_config, matmul_fp8_blockwise_launches
    from gpuperf.reference import matmul_fp8_blockwise_ref

    x, w, a, b, scale_a, scale_b = fp8_operands(m, n, k)
    row = {"M": m, "N": n, "K": k, "default": config_label(fp8_blockwise_config(a, b))}
    outputs, providers = {}, {}
    for variant, config in fp8_variants().items():
        key = f"gpuperf_blockwise_{variant}"
        try:
            outputs[key] = run_launches(matmul_fp8_blockwise_launches(a, b, scale_a, scale_b, config))
            providers[key] = _launching(
                lambda c=config: matmul_fp8_blockwise_launches(a, b, scale_a, scale_b, c)
            )
        except Exception as err:  # recorded: the other kernels still run
            row[key] = {"error": f"{type(err).__name__}: {err}"[:400]}
    # The default (the Gluon kernel on Hopper) after the others: a kernel that faulted the GPU
    # would take every later launch of this process with it.
    outputs["gpuperf_blockwise"] = matmul_fp8_blockwise(a, b, scale_a, scale_b)
    providers["gpuperf_blockwise"] = lambda: matmul_fp8_blockwise(a, b, scale_a, scale_b)
    if m == FP8_TOKENS[0]:
        ref = matmul_fp8_blockwise_ref(a, b, scale_a, scale_b)
        for key, out in outputs.items():
            checked = row.setdefault("vs_float64", {})
            try:
                torch.testing.assert_close(out.double(), ref, rtol=2e-2, atol=2**-9 * k**0.5)
                checked[key] = "ok"
            except AssertionError as err:
                checked[key] = str(err)[:400]
            row.setdefault("rel_error_vs_float64", {})[key] = (
                (out.double() - ref).norm() / ref.norm()
            ).item()
    # cuBLASLt's blockwise layout: scale_a (M, K/128) column-major, scale_b (K/128, N/128)
    # column-major (torch's meta checks for F.scaled_mm's 1x128 x 128x128 recipe).
    sa_col, sb_col = scale_a.t().contiguous().t(), scale_b.t()
    xb, wb = x.bfloat16(), w.bfloat16()
    a_t, sa_t = to_fp8(x)
    b_t, sb_t = to_fp8(w)
    providers.update(
        {
            "scaled_mm_blockwise": lambda: torch._scaled_mm(
                a, b.t(), sa_col, sb_col, out_dtype=torch.bfloat16
            ),
            "gpuperf_per_tensor_promoted": lambda: matmul_fp8(a_t, b_t.t(), sa_t, sb_t),
            "bf16_cublas": lambda: xb @ wb.t(),
        }
    )
    if DEVICE == "cuda":
        from gpuperf.kernels.gluon import matmul_fp8_promoted

        providers["gluon_per_tensor_promoted"] = lambda: matmul_fp8_promoted(a_t, b_t.t(), sa_t, sb_t)
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
    if "ms" in row.get("scaled_mm_blockwise", {}):
        theirs = providers["scaled_mm_blockwise"]().float()
        for key, out in outputs.items():
            row[key]["max_abs_diff_vs_scaled_mm"] = (out.float() - theirs).abs().max().item()
    return row


#: Shapes (M, N, K) of the Gluon smoke test: partial tiles, a partial step, odd and even steps.
GLUON_SMOKE_SHAPES = ((256, 384, 512), (100, 200, 464), (130, 64, 128))


def gluon_smoke() -> int:
    """Each Gluon config once at small shapes against float64 (the ``--gluon-smoke`` process):
    0 if all match, 1 if one does not (printed)."""
    import torch

    from gpuperf.kernels import configs
    from gpuperf.kernels.matmul_fp8_blockwise import matmul_fp8_blockwise_launches
    from gpuperf.reference import matmul_fp8_blockwise_ref

    failed = 0
    for m, n, k in GLUON_SMOKE_SHAPES:
        _, _, a, b, scale_a, scale_b = fp8_operands(m, n, k)
        ref = matmul_fp8_blockwise_ref(a, b, scale_a, scale_b)
        for config in configs.FP8_BLOCKWISE_GLUON_CANDIDATES:
            out = run_launches(matmul_fp8_blockwise_launches(a, b, scale_a, scale_b, config))
            torch.cuda.synchronize()
            error = ((out.double() - ref).norm() / ref.norm()).item()
            ok = error < 1e-2
            failed += not ok
            print(f"gluon smoke {m}x{n}x{k} {config_label(config)}: relative error {error:.2e}", flush=True)
    return 1 if failed else 0


def _without_gluon() -> None:
    """Make the op's default the Triton TMA kernel wherever it would be the Gluon one."""
    import importlib

    from gpuperf.kernels import configs
    from gpuperf.kernels.gluon.matmul_fp8 import GluonFP8Config

    # (The module: gpuperf.kernels.matmul_fp8_blockwise, the package's attribute, is the op.)
    module = importlib.import_module("gpuperf.kernels.matmul_fp8_blockwise")
    chosen = module.fp8_blockwise_config

    def without(a, b=None):
        config = chosen(a, b)
        return configs.FP8_BLOCKWISE_TMA_DEFAULT if isinstance(config, GluonFP8Config) else config

    module.fp8_blockwise_config = without


def gluon_runs(probe: Probe) -> bool:
    """Whether the Gluon kernels ran right in a process of their own (``--gluon-smoke``, at most
    two minutes): a kernel that hangs or faults the GPU there costs this run nothing. If not,
    the op's default here becomes the Triton TMA kernel and the sweeps leave Gluon out; the
    reason is recorded as ``gluon_smoke``."""
    if "gluon_smoke" not in probe.result:
        try:
            done = subprocess.run(
                [sys.executable, str(Path(__file__).resolve()), "--gluon-smoke"],
                capture_output=True,
                text=True,
                timeout=120,
            )
            status = "ok" if done.returncode == 0 else (done.stdout + done.stderr)[-2000:]
            probe.result["gluon_smoke_log"] = done.stdout[-3000:]
        except subprocess.TimeoutExpired:
            status = "timed out after 120 s"
        probe.result["gluon_smoke"] = status
        print("gluon smoke:", status, flush=True)
        if status != "ok":
            _without_gluon()
        probe.save()
    return probe.result["gluon_smoke"] == "ok"


def check_and_time_fp8(probe: Probe) -> None:
    """``matmul_fp8_blockwise``'s kernels against float64, and beside the vendors' block-scaled
    paths and the per-tensor promoted kernels."""
    import torch

    if DEVICE == "cuda":
        gluon_runs(probe)
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


def sweep_configs(probe: Probe, kind: str) -> list:
    """The configs a sweep of ``kind`` (``"grouped"`` or ``"fp8"``) times: those given on the
    command line; else on the CPU the interpreter's (one of each kernel that runs there);
    else the TMA and Gluon candidates and the computed-pointer kernel's reference config."""
    from gpuperf.kernels import MatmulConfig, configs

    given = probe.grouped_configs if kind == "grouped" else probe.fp8_configs
    if given is not None:
        return list(given)
    if kind == "grouped":
        if DEVICE == "cpu":
            return [configs.GROUPED_MATMUL_INTERPRETER, configs.GROUPED_MATMUL_TMA_INTERPRETER]
        pointer_best = MatmulConfig(128, 256, 64, group_m=8, num_warps=8, num_stages=3)
        return [*configs.moe_candidates(configs.GROUPED_MATMUL_TMA_CANDIDATES, 2), pointer_best]
    if DEVICE == "cpu":
        return [configs.FP8_BLOCKWISE_INTERPRETER, *fp8_variants().values()][:2]
    return [
        *configs.moe_candidates(configs.FP8_BLOCKWISE_TMA_CANDIDATES, 1),
        *configs.moe_candidates(configs.FP8_BLOCKWISE_GLUON_CANDIDATES, 1),
        configs.FP8_BLOCKWISE_DEFAULT,
    ]


def _sweep_row(probe: Probe, row: dict, make, flops: int, reference) -> None:
    """Time ``make``'s launches into ``row`` and compare their output with ``reference``."""
    try:
        out = run_launches(make())
        if reference is not None:
            row["max_abs_diff_vs_vendor"] = (out.float() - reference.float()).abs().max().item()
        _timed(row, {"timing": _launching(make)}, flops)
    except Exception as err:  # a config that does not compile or launch is recorded
        row["timing"] = {
            "error": f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"[:400]
        }
    probe.log("sweep", row)


def _sweep_grouped(probe: Probe, name, experts, top_k, d, ffn) -> None:
    for tokens in probe.sweep_tokens:
        _sweep_grouped_at(probe, tokens, name, experts, top_k, d, ffn)


def _sweep_grouped_at(probe: Probe, tokens: int, name, experts, top_k, d, ffn) -> None:
    import torch

    from gpuperf.kernels.grouped_matmul import grouped_matmul_launches

    offs = routing(tokens, experts, top_k, skewed=False)
    rows = tokens * top_k
    # The weight bytes the product must read: the experts the routing gave any row.
    counts = torch.diff(offs, prepend=offs.new_zeros(1))
    active = int((counts > 0).sum())
    grouped_mm = grouped_mm_fn()
    for gemm, k, n in (("up", d, 2 * ffn), ("down", ffn, d)):
        a = torch.randn(rows, k, device=DEVICE, dtype=torch.bfloat16)
        b = torch.randn(experts, k, n, device=DEVICE, dtype=torch.bfloat16).mul_(k**-0.5)
        reference = None
        if grouped_mm is not None and DEVICE == "cuda":
            reference = grouped_mm(a, b, offs=offs)
        for config in sweep_configs(probe, "grouped"):
            label = config_label(config)
            if probe.over_budget(f"sweep grouped {name} {gemm} {label}"):
                return
            row = {"kernel": "grouped_matmul", "model": name, "tokens": tokens, "gemm": gemm, "config": label}
            row["weight_bytes"] = active * k * n * 2
            make = functools.partial(grouped_matmul_launches, a, b, offs, config)
            _sweep_row(probe, row, make, 2 * rows * n * k, reference)
        a = b = reference = None  # (freed before the next product's operands are made)
        torch.cuda.empty_cache()


def _sweep_fp8(probe: Probe, m: int, n: int, k: int) -> None:
    import torch

    from gpuperf.kernels.gluon.matmul_fp8 import GluonFP8Config
    from gpuperf.kernels.matmul_fp8_blockwise import matmul_fp8_blockwise_launches

    gluon = DEVICE == "cuda" and gluon_runs(probe)

    _, _, a, b, scale_a, scale_b = fp8_operands(m, n, k)
    reference = None
    if DEVICE == "cuda":
        try:
            sa_col, sb_col = scale_a.t().contiguous().t(), scale_b.t()
            reference = torch._scaled_mm(a, b.t(), sa_col, sb_col, out_dtype=torch.bfloat16)
        except Exception:  # (no blockwise cuBLASLt here: no comparison)
            reference = None
    for config in sweep_configs(probe, "fp8"):
        label = config_label(config)
        if isinstance(config, GluonFP8Config) and not gluon:
            continue
        if probe.over_budget(f"sweep fp8 {m}x{n}x{k} {label}"):
            return
        row = {"kernel": "matmul_fp8_blockwise", "shape": [m, n, k], "config": label}
        make = functools.partial(matmul_fp8_blockwise_launches, a, b, scale_a, scale_b, config)
        _sweep_row(probe, row, make, 2 * m * n * k, reference)


def sweep_grouped(probe: Probe) -> None:
    """Each grouped config at each model's prefill up and down products."""
    import torch

    for name, experts, top_k, d, ffn in probe.models:
        if probe.over_budget(f"sweep grouped {name}"):
            return
        _sweep_grouped(probe, name, experts, top_k, d, ffn)
        torch.cuda.empty_cache()


def sweep_fp8(probe: Probe) -> None:
    """Each block-scaled config at DeepSeek-V3 shapes (:data:`SWEEP_FP8`)."""
    import torch

    for m, n, k in SWEEP_FP8:
        if probe.over_budget(f"sweep fp8 {m}x{n}x{k}"):
            return
        _sweep_fp8(probe, m, n, k)
        torch.cuda.empty_cache()


def _configs_arg(text: str | None):
    return None if text is None else [parse_config(label) for label in text.split(";") if label.strip()]


def sweep(probe: Probe) -> None:
    """Both sweeps: grouped, then block-scaled FP8."""
    sweep_grouped(probe)
    sweep_fp8(probe)


#: Each step's function, by its ``--only`` name.
STEP_FUNCTIONS = {
    "check": "check_grouped",
    "grouped": "time_grouped",
    "fp8": "check_and_time_fp8",
    "sweep-grouped": "sweep_grouped",
    "sweep-fp8": "sweep_fp8",
}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.environ.get("OUT", "."), help="folder for moe_gpu_check.json")
    parser.add_argument("--budget", type=float, default=150.0, help="seconds after which no new step starts")
    parser.add_argument("--only", default=",".join(STEPS), help=f"steps to run, comma-separated, of {STEPS}")
    parser.add_argument("--no-sweep", action="store_true", help="skip both sweeps")
    parser.add_argument("--models", default=None, help="models to run, comma-separated (default: all)")
    parser.add_argument(
        "--grouped-configs", default=None, help="configs of sweep-grouped, ';'-separated labels"
    )
    parser.add_argument("--fp8-configs", default=None, help="configs of sweep-fp8, ';'-separated labels")
    parser.add_argument(
        "--sweep-tokens",
        default=str(PREFILL_TOKENS),
        help=f"tokens of sweep-grouped, comma-separated (default {PREFILL_TOKENS})",
    )
    parser.add_argument("--gluon-smoke", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.gluon_smoke:
        return gluon_smoke()
    only = [step.strip() for step in args.only.split(",") if step.strip()]
    unknown = sorted(set(only) - set(STEPS))
    if unknown:
        parser.error(f"--only: unknown steps {unknown}; the steps are {STEPS}")
    if args.no_sweep:
        only = [step for step in only if not step.startswith("sweep")]
    models = None if args.models is None else {m.strip() for m in args.models.split(",")}
    if models is not None and not models <= {m[0] for m in MODELS}:
        parser.error(f"--models: unknown {sorted(models - {m[0] for m in MODELS})}")

    import torch
    import triton

    if not torch.cuda.is_available():
        print("moe_gpu_check: needs a CUDA GPU", file=sys.stderr)
        return 2
    try:
        grouped_configs, fp8_configs = _configs_arg(args.grouped_configs), _configs_arg(args.fp8_configs)
    except ValueError as err:
        parser.error(str(err))
    out = Path(args.out) / "moe_gpu_check.json"
    sweep_tokens = [int(t) for t in args.sweep_tokens.split(",")]
    probe = Probe(args.budget, out, models, grouped_configs, fp8_configs, sweep_tokens)
    probe.result["provenance"] = {
        "gpu": torch.cuda.get_device_name(),
        "capability": list(torch.cuda.get_device_capability()),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "triton": triton.__version__,
        "commit": os.environ.get("GPUPERF_COMMIT", "unknown"),
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "timing": "triton.testing.do_bench(warmup=10, rep=50, return_mode='median')",
        "argv": sys.argv[1:] if argv is None else list(argv),
    }
    print(json.dumps(probe.result["provenance"]), flush=True)
    for name in (step for step in STEPS if step in only):
        step = globals()[STEP_FUNCTIONS[name]]
        try:
            step(probe)
        except Exception:  # one step's failure is recorded; the others still run
            probe.result.setdefault("errors", []).append(f"{name}: {traceback.format_exc()[-2000:]}")
            print(probe.result["errors"][-1], file=sys.stderr, flush=True)
        probe.save()
    probe.save()
    print(f"wrote {out} ({probe.result['wall_s']} s; skipped: {len(probe.result['skipped'])})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
