"""Autotuning, done once on the GPU and kept as data.

For every shape and dtype the matmul benchmarks measure, :func:`tune_matmul` times
each candidate of :func:`gpuperf.kernels._configs.matmul_candidates` (after
checking its output against the reference) and keeps every trial, so a reader can
see what was tried and how far the worst was from the best. :func:`write_tuning`
stores the sweep as ``src/gpuperf/kernels/tuned/<gpu>/matmul.json``, where
:func:`gpuperf.kernels.matmul` finds its configs: the docs and the kernel read
the same file, and nothing is tuned at run time.
"""

from __future__ import annotations

import functools
import importlib
import itertools
import json
from collections.abc import Callable
from pathlib import Path

#: A sweep times more candidates than a benchmark times providers: one do_bench round each.
SWEEP_WARMUP_MS = 10
SWEEP_REP_MS = 40


def _time_trial(trial: dict, check: Callable[[], None], fn: Callable[[], object], work: float) -> dict:
    """Fill in ``trial`` for one candidate config: ``check()`` (which raises
    ``AssertionError`` on a wrong output), then time ``fn``; a mismatch, or a config
    that does not compile or launch, is recorded with its message rather than raised.
    ``work`` is the FLOPs of one call. Returns ``trial``."""
    from gpuperf.bench import metrics
    from gpuperf.bench.timing import time_ms

    try:
        check()
        t = time_ms(fn, warmup=SWEEP_WARMUP_MS, rep=SWEEP_REP_MS, rounds=1)
    except AssertionError as err:
        trial.update(status="mismatch", message=str(err)[:300])
    except Exception as err:  # a config that does not compile or launch is recorded
        trial.update(status="error", message=f"{type(err).__name__}: {err}"[:300])
    else:
        trial.update(status="ok", ms=t.ms, tflops=metrics.tflop_per_s(work, t.ms))
    return trial


def tune_matmul(shapes, dtypes, *, log: Callable[[str], None] = print) -> dict:
    """Time every candidate config of the matmul at each ``(M, N, K)`` in ``shapes`` and dtype name.

    Returns the sweep: provenance, the candidates, one trial per (dtype, shape,
    config) with its status and time, and the best config per (dtype, shape).

    Raises:
        RuntimeError: no CUDA device is available.
    """
    import torch

    from gpuperf.bench import metrics, records
    from gpuperf.bench.timing import require_cuda
    from gpuperf.kernels import configs, matmul
    from gpuperf.reference import matmul_ref
    from gpuperf.testing import assert_close

    require_cuda()
    trials, best = [], []
    for dtype in dtypes:
        for m, n, k in shapes:
            torch.manual_seed(m + n + k)
            a = torch.randn(m, k, device="cuda", dtype=getattr(torch, dtype))
            b = torch.randn(k, n, device="cuda", dtype=getattr(torch, dtype))
            expected = matmul_ref(a, b)
            shape_trials = []
            for config in configs.matmul_candidates(m, n, k):
                trial = {"dtype": dtype, "shape": [m, n, k], "config": config.as_dict()}
                fn = lambda a=a, b=b, c=config: matmul(a, b, config=c)
                check = lambda fn=fn, ref=expected, k=k: assert_close("matmul sweep", ref, fn(), k=k)
                shape_trials.append(_time_trial(trial, check, fn, metrics.matmul_flops(m, n, k)))
            ok = [t for t in shape_trials if t["status"] == "ok"]
            if ok:
                winner = min(ok, key=lambda t: t["ms"])
                best.append({key: winner[key] for key in ("dtype", "shape", "config", "ms", "tflops")})
                worst = max(ok, key=lambda t: t["ms"])
                log(
                    f"tuned matmul {dtype} {m}x{n}x{k}: {len(ok)} configs, best "
                    f"{configs.MatmulConfig(**winner['config']).label()} {winner['tflops']:.0f} TFLOP/s, "
                    f"worst {worst['tflops']:.0f}"
                )
            trials += shape_trials
            del a, b, expected
            torch.cuda.empty_cache()
    timing = f"one do_bench round per config (warmup={SWEEP_WARMUP_MS} ms, rep={SWEEP_REP_MS} ms), median"
    return {
        "schema_version": 1,
        "kernel": "matmul",
        "provenance": records.collect_provenance(method=timing),
        "timing": timing,
        "candidates": [c.as_dict() for c in configs.MATMUL_CONFIGS],
        "trials": trials,
        "best": best,
    }


def _persistent_case(kernel: str, shape, device="cuda", accumulation="fast"):
    """``(run(config), reference, k for the check)`` for one shape of a persistent kernel's sweep: bfloat16
    operands for ``matmul_persistent``; for ``swiglu``, those of its benchmark (the weight
    in ``nn.Linear``'s layout); for ``matmul_fp8``, e4m3 operands in the layout
    ``torch._scaled_mm`` takes (B column-major) with per-tensor scales, summed with
    ``accumulation`` (``"fast"`` or ``"float32"``)."""
    import torch

    from gpuperf.bench.catalog import fp8_check_k
    from gpuperf.kernels import matmul_fp8, matmul_persistent, to_fp8
    from gpuperf.reference import matmul_fp8_ref, matmul_ref

    m, n, k = shape
    torch.manual_seed(m + n + k)
    if kernel == "swiglu":
        from gpuperf.bench.catalog.matmul import swiglu_operands
        from gpuperf.kernels import swiglu
        from gpuperf.reference import swiglu_ref

        x, w = swiglu_operands(shape, device)
        return (lambda c: swiglu(x, w, config=c)), swiglu_ref(x, w[:, :n], w[:, n:]), k
    if kernel == "matmul_persistent":
        a = torch.randn(m, k, device=device, dtype=torch.bfloat16)
        b = torch.randn(k, n, device=device, dtype=torch.bfloat16)
        return (lambda c: matmul_persistent(a, b, config=c)), matmul_ref(a, b), k
    a, scale_a = to_fp8(torch.randn(m, k, device=device))
    bt, scale_b = to_fp8(torch.randn(n, k, device=device))
    b = bt.t()
    fast = accumulation == "fast"
    run = lambda c: matmul_fp8(a, b, scale_a, scale_b, fast_accum=fast, config=c)
    return run, matmul_fp8_ref(a, b, scale_a, scale_b), fp8_check_k(k, accumulation)


def tune_persistent(kernel: str, shapes, *, log: Callable[[str], None] = print) -> dict:
    """Time every candidate config of a persistent matmul (``"matmul_persistent"``,
    ``"matmul_fp8"`` or ``"swiglu"``, whose shapes are its output's ``(M, N, K)``) at each
    ``(M, N, K)`` in ``shapes``, after checking its output.

    Returns the sweep: provenance, candidates, every trial, and per shape the fastest
    config overall (``variant: "best"``) and of each rung of tutorial 06's ladder
    (``"pointer"``, ``"tma"``, ``"tma_ws"``). The sweep runs in bfloat16 (or e4m3 for
    FP8, per-tensor scales) and serves the kernel's other dtypes too. FP8 is swept
    once per accumulation (fast, float32-promoted), each over its own candidates, and
    every trial and winner names its ``accumulation``.

    Raises:
        RuntimeError: no CUDA device is available.
    """
    import torch

    from gpuperf.bench import metrics, records
    from gpuperf.bench.timing import require_cuda
    from gpuperf.kernels import configs
    from gpuperf.testing import assert_close

    require_cuda()
    trials, best = [], []
    fp8 = kernel == "matmul_fp8"
    dtype = "float8_e4m3fn" if fp8 else "bfloat16"
    accumulations = configs.ACCUMULATIONS if fp8 else ("fast",)
    if kernel == "swiglu":
        # (gpuperf.kernels.swiglu is the function; the module is looked up by name.)
        op = importlib.import_module("gpuperf.kernels.swiglu")
        pool = [c.as_dict() for c in op.SWIGLU_CANDIDATES]
        candidates = lambda m, n, k, accumulation: op.candidates(m, n, k)
        flops = metrics.swiglu_flops
    else:
        pool = [c.as_dict() for a in accumulations for c in configs.candidate_pool(kernel, a)]
        candidates = functools.partial(configs.candidates, kernel)
        flops = metrics.matmul_flops
    for shape, accumulation in itertools.product(shapes, accumulations):
        m, n, k = shape
        run, expected, check_k = _persistent_case(kernel, shape, accumulation=accumulation)
        shape_trials = []
        for config in candidates(m, n, k, accumulation):
            trial = {"dtype": dtype, "shape": list(shape), "variant": configs.variant(config)}
            trial["accumulation"] = accumulation
            trial["config"] = config.as_dict()
            fn = lambda c=config, r=run: r(c)
            check = lambda fn=fn, ref=expected, k=check_k: assert_close(f"{kernel} sweep", ref, fn(), k=k)
            shape_trials.append(_time_trial(trial, check, fn, flops(m, n, k)))
        for which in ("best", *configs.VARIANTS):
            ok = [t for t in shape_trials if t["status"] == "ok" and which in ("best", t["variant"])]
            if ok:
                winner = min(ok, key=lambda t: t["ms"])
                keys = ("accumulation", "shape", "config", "ms", "tflops")
                best.append({"variant": which, **{key: winner[key] for key in keys}})
        ok = [t for t in shape_trials if t["status"] == "ok"]
        if ok:
            winner = min(ok, key=lambda t: t["ms"])
            log(
                f"tuned {kernel} {m}x{n}x{k}{f' ({accumulation} accumulation)' if fp8 else ''}: {len(ok)} of "
                f"{len(shape_trials)} configs ran, best "
                f"{configs.PersistentConfig(**winner['config']).label()} {winner['tflops']:.0f} TFLOP/s"
            )
        trials += shape_trials
        torch.cuda.empty_cache()
    timing = f"one do_bench round per config (warmup={SWEEP_WARMUP_MS} ms, rep={SWEEP_REP_MS} ms), median"
    return {
        "schema_version": 1,
        "kernel": kernel,
        "provenance": records.collect_provenance(method=timing),
        "timing": timing,
        "candidates": list({json.dumps(c, sort_keys=True): c for c in pool}.values()),
        "trials": trials,
        "best": best,
    }


def write_tuning(sweep: dict, root: Path | None = None) -> Path:
    """Write ``sweep`` to ``<root>/<gpu>/<kernel>.json`` (default root: the package's
    ``kernels/tuned``) and make the next call of that kernel's op use it."""
    import importlib

    from gpuperf._runtime import gpu_slug
    from gpuperf.kernels import configs

    root = root or configs.TUNED_DIR
    path = root / gpu_slug(sweep["provenance"]["gpu"]) / f"{sweep['kernel']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(sweep, indent=1) + "\n")
    # (gpuperf.kernels.<op> is the function; the module is looked up by name.)
    importlib.import_module(f"gpuperf.kernels.{sweep['kernel']}").forget_tuned_configs()
    return path


def read_tuning(gpu_slug: str, root: Path | None = None, kernel: str = "matmul") -> dict | None:
    """The committed sweep of ``kernel`` on ``gpu_slug`` (None when there is none)."""
    from gpuperf.kernels import configs

    path = (root or configs.TUNED_DIR) / gpu_slug / f"{kernel}.json"
    return json.loads(path.read_text()) if path.exists() else None


#: Where the attention sweep times its candidates: tokens per batch and model width
#: as the attention benchmarks (B * S = 16384, H * D = 2048), at S = 4096, float16.
ATTENTION_SWEEP_SEQ_LEN = 4096


def tune_attention(head_dims=(64, 128), *, log: Callable[[str], None] = print) -> dict:
    """Time each candidate config of the three attention kernels for every head dim, causal or not.

    The forward candidates are timed on the forward pass; the dK/dV candidates on
    the whole backward with the default dQ config, then the dQ candidates with the
    best dK/dV config. Every candidate's output is first checked against the
    float32 reference. Returns the sweep (provenance, candidates, trials, and the
    best ``(forward, dkdv, dq)`` per head dim and masking).

    Raises:
        RuntimeError: no CUDA device is available.
    """
    import torch

    from gpuperf.bench import records
    from gpuperf.bench.timing import require_cuda
    from gpuperf.kernels import configs

    require_cuda()
    candidates = {
        "forward": configs.ATTENTION_FORWARD_CANDIDATES,
        "dkdv": configs.ATTENTION_DKDV_CANDIDATES,
        "dq": configs.ATTENTION_DQ_CANDIDATES,
    }
    trials, best = [], []
    for head_dim in head_dims:
        for causal in (False, True):
            case_trials, chosen = _tune_attention_case(head_dim, causal, candidates, log)
            trials += case_trials
            best.append(
                {"head_dim": head_dim, "causal": causal, **{n: c.as_dict() for n, c in chosen.items()}}
            )
            torch.cuda.empty_cache()
    timing = f"one do_bench round per config (warmup={SWEEP_WARMUP_MS} ms, rep={SWEEP_REP_MS} ms), median"
    return {
        "schema_version": 1,
        "kernel": "attention",
        "provenance": records.collect_provenance(method=timing),
        "timing": timing,
        "shape": {
            "seq_len": ATTENTION_SWEEP_SEQ_LEN,
            "tokens": 16384,
            "model_width": 2048,
            "dtype": "float16",
        },
        "candidates": {name: [c.as_dict() for c in pool] for name, pool in candidates.items()},
        "trials": trials,
        "best": best,
    }


def _tune_attention_case(head_dim: int, causal: bool, candidates: dict, log) -> tuple[list, dict]:
    """The trials of every candidate at one head dim and masking, and the chosen configs."""
    import importlib

    import torch

    from gpuperf.bench import metrics
    from gpuperf.kernels import configs
    from gpuperf.reference import attention_grads_ref, attention_ref
    from gpuperf.testing import assert_close

    ops = importlib.import_module("gpuperf.kernels.attention")
    seq = ATTENTION_SWEEP_SEQ_LEN
    batch, heads = 16384 // seq, 2048 // head_dim
    torch.manual_seed(head_dim + causal)
    q, k, v, grad_out = (
        torch.randn(batch, heads, seq, head_dim, device="cuda", dtype=torch.float16) for _ in range(4)
    )
    scale = head_dim**-0.5
    expected = attention_ref(q, k, v, causal)
    expected_grads = attention_grads_ref(q, k, v, grad_out, causal)
    flops = metrics.attention_flops(batch, heads, seq, head_dim, causal=causal)
    o = torch.empty_like(q)
    lse = torch.empty(batch, heads, seq, device="cuda")
    grads = tuple(torch.empty_like(t) for t in (q, k, v))
    chosen = dict(zip(configs.ATTENTION_KERNELS, configs.ATTENTION_DEFAULT[head_dim], strict=True))

    def forward(config):
        ops.forward_into(o, lse, q, k, v, causal, scale, config)
        return o

    def backward(dkdv, dq):
        ops.backward_into(*grads, grad_out, q, k, v, o, lse, causal, scale, (None, dkdv, dq))
        return grads

    trials = []
    for kernel in configs.ATTENTION_KERNELS:
        forward(chosen["forward"])  # the backward reads o and lse
        kernel_trials = []
        for config in candidates[kernel]:
            trial = {"kernel": kernel, "head_dim": head_dim, "causal": causal, "config": config.as_dict()}
            if kernel == "forward":
                fn, work = (lambda c=config: forward(c)), flops
            elif kernel == "dkdv":
                fn, work = (lambda c=config: backward(c, chosen["dq"])), 2.5 * flops
            else:
                fn, work = (lambda c=config: backward(chosen["dkdv"], c)), 2.5 * flops

            def check(kernel=kernel, fn=fn):
                if kernel == "forward":
                    assert_close("attention sweep", expected, fn(), k=seq)
                    return
                for name, ref, got in zip(("dq", "dk", "dv"), expected_grads, fn(), strict=True):
                    assert_close(f"attention sweep {name}", ref, got, k=seq)

            kernel_trials.append(_time_trial(trial, check, fn, work))
        ok = [t for t in kernel_trials if t["status"] == "ok"]
        if ok:
            winner = min(ok, key=lambda t: t["ms"])
            chosen[kernel] = configs.AttentionConfig(**winner["config"])
            log(
                f"tuned attention {kernel} D={head_dim} causal={causal}: {len(ok)} configs, best "
                f"{chosen[kernel].label()} {winner['tflops']:.0f} TFLOP/s, "
                f"worst {min(t['tflops'] for t in ok):.0f}"
            )
        trials += kernel_trials
    return trials, chosen
