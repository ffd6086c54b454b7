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

import json
from collections.abc import Callable
from pathlib import Path

#: A sweep times more candidates than a benchmark times providers: one do_bench round each.
SWEEP_WARMUP_MS = 10
SWEEP_REP_MS = 40


def tune_matmul(shapes, dtypes, *, log: Callable[[str], None] = print) -> dict:
    """Time every candidate config of the matmul at each ``(M, N, K)`` in ``shapes`` and dtype name.

    Returns the sweep: provenance, the candidates, one trial per (dtype, shape,
    config) with its status and time, and the best config per (dtype, shape).

    Raises:
        RuntimeError: no CUDA device is available.
    """
    import torch

    from gpuperf.bench import metrics, records
    from gpuperf.bench.timing import require_cuda, time_ms
    from gpuperf.kernels import _configs, matmul
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
            for config in _configs.matmul_candidates(m, n, k):
                trial = {"dtype": dtype, "shape": [m, n, k], "config": config.as_dict(), "status": "ok"}
                try:
                    assert_close("matmul sweep", expected, matmul(a, b, config=config), k=k)
                    t = time_ms(
                        lambda a=a, b=b, c=config: matmul(a, b, config=c),
                        warmup=SWEEP_WARMUP_MS,
                        rep=SWEEP_REP_MS,
                        rounds=1,
                    )
                except AssertionError as err:
                    trial.update(status="mismatch", message=str(err)[:300])
                except Exception as err:  # a config that does not compile or launch is recorded
                    trial.update(status="error", message=f"{type(err).__name__}: {err}"[:300])
                else:
                    trial.update(ms=t.ms, tflops=metrics.tflop_per_s(metrics.matmul_flops(m, n, k), t.ms))
                shape_trials.append(trial)
            ok = [t for t in shape_trials if t["status"] == "ok"]
            if ok:
                winner = min(ok, key=lambda t: t["ms"])
                best.append({key: winner[key] for key in ("dtype", "shape", "config", "ms", "tflops")})
                worst = max(ok, key=lambda t: t["ms"])
                log(
                    f"tuned matmul {dtype} {m}x{n}x{k}: {len(ok)} configs, best "
                    f"{_configs.MatmulConfig(**winner['config']).label()} {winner['tflops']:.0f} TFLOP/s, "
                    f"worst {worst['tflops']:.0f}"
                )
            trials += shape_trials
            del a, b, expected
            torch.cuda.empty_cache()
    return {
        "schema_version": 1,
        "kernel": "matmul",
        "provenance": records.collect_provenance(),
        "timing": (
            f"one do_bench round per config (warmup={SWEEP_WARMUP_MS} ms, rep={SWEEP_REP_MS} ms), median"
        ),
        "candidates": [c.as_dict() for c in _configs.MATMUL_CONFIGS],
        "trials": trials,
        "best": best,
    }


def write_tuning(sweep: dict, root: Path | None = None) -> Path:
    """Write ``sweep`` to ``<root>/<gpu>/matmul.json`` (default root: the package's ``kernels/tuned``)
    and make the next :func:`gpuperf.kernels.matmul` call use it."""
    import importlib

    from gpuperf._runtime import gpu_slug
    from gpuperf.kernels import _configs

    root = root or _configs.TUNED_DIR
    path = root / gpu_slug(sweep["provenance"]["gpu"]) / "matmul.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(sweep, indent=1) + "\n")
    # (gpuperf.kernels.matmul is the function; the module is looked up by name.)
    importlib.import_module("gpuperf.kernels.matmul").forget_tuned_configs()
    return path


def read_tuning(gpu_slug: str, root: Path | None = None) -> dict | None:
    """The committed sweep of ``gpu_slug`` (None when there is none)."""
    from gpuperf.kernels import _configs

    path = (root or _configs.TUNED_DIR) / gpu_slug / "matmul.json"
    return json.loads(path.read_text()) if path.exists() else None
