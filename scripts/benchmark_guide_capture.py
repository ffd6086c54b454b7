"""What the guide on benchmarking your own kernel shows from a GPU, captured in one run.

Usage (a CUDA GPU): ``python scripts/benchmark_guide_capture.py [--out DIR]``. Writes, under
``<out>/<gpu>/captures/`` (default ``src/gpuperf/measurements``):

* ``timing_scale_shift.json``: :func:`gpuperf.kernels.scale_shift` at three sizes, timed
  each way the guide teaches: ``do_bench`` (its quantiles and return modes, with and
  without its L2 flush), CUDA events around one call and around many, and
  ``do_bench_cudagraph``;
* ``autotune_scale_shift.json``: the same kernel under ``@triton.autotune`` with
  ``TRITON_PRINT_AUTOTUNING=1``: what it printed, each config's time, and a second
  tuning of the same keys.

The functions the guide shows (:func:`do_bench_readings`, :func:`one_call_ms`,
:func:`many_calls_ms`, :func:`cuda_graph_ms`, :func:`autotuned_scale_shift`) are the
ones that measured. Each part is written as soon as it is done; a part that fails is
reported and skipped.
"""

from __future__ import annotations

import contextlib
import io
import os
import statistics
import sys
import time
import traceback
from pathlib import Path

# Read by the autotuner at each tuning: set before anything is tuned.
os.environ["TRITON_PRINT_AUTOTUNING"] = "1"

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import torch  # noqa: E402
import triton  # noqa: E402
from triton.testing import do_bench, do_bench_cudagraph  # noqa: E402

#: Rows of the inputs timed, each of SCALE_SHIFT_COLS float32 columns: a launch-bound
#: call (256 KB moved), one whose 16 MB fit in L2, and one of 1 GiB.
TIMING_ROWS = (16, 512, 32768)
#: Single calls timed with CUDA events, and rounds of many calls.
SAMPLES = 200
ROUNDS = 10
#: The tiles the autotuner tries, (BLOCK_M, BLOCK_N, num_warps); the wrapper's default
#: (8, 256, 4) among them.
TILES = (
    (1, 1024, 4),
    (4, 256, 4),
    (8, 256, 4),
    (16, 256, 8),
    (4, 1024, 8),
    (32, 128, 8),
    (16, 512, 8),
    (64, 64, 4),
)
#: Rows of the autotuned calls: the small and the large size above.
AUTOTUNE_ROWS = (512, 32768)
SOURCES = ("kernels/scale_shift.py",)


def log(message: str) -> None:
    print(message, flush=True)


# --- the snippets the guide shows ----------------------------------------------------


def do_bench_readings(fn) -> dict:
    """``triton.testing.do_bench`` on ``fn``, every way of asking (times in ms)."""
    median, p20, p80 = do_bench(fn, warmup=25, rep=100, quantiles=[0.5, 0.2, 0.8])
    return {
        "median": median,
        "p20": p20,
        "p80": p80,
        "mean": do_bench(fn),  # return_mode="mean" is the default
        "min": do_bench(fn, return_mode="min"),
        "runs": len(do_bench(fn, return_mode="all")),  # "all": every run's time
    }


def one_call_ms(fn) -> float:
    """CUDA events around a single call of ``fn``, in ms."""
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()  # the GPU is idle: start is stamped at once
    start.record()
    fn()
    end.record()
    end.synchronize()  # wait until the GPU has passed the end event
    return start.elapsed_time(end)


def many_calls_ms(fn, calls: int = 100) -> float:
    """CUDA events around ``calls`` back-to-back calls of ``fn``, in ms per call."""
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    fn()  # compile and warm up outside the timed region
    torch.cuda.synchronize()
    start.record()
    for _ in range(calls):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / calls


def cuda_graph_ms(fn) -> dict:
    """``fn`` timed by ``do_bench_cudagraph``: calls replayed from a CUDA graph, with no
    launch from the host and no L2 flush between them; the quantiles of ten replays' time
    per call, in ms."""
    median, p20, p80 = do_bench_cudagraph(fn, rep=100, quantiles=[0.5, 0.2, 0.8])
    return {"median": median, "p20": p20, "p80": p80}


def autotuned_scale_shift(kernel):
    """``kernel`` under ``@triton.autotune``: each config of :data:`TILES` is timed on
    the first call with new values of ``n_rows`` and ``n_cols``, and the fastest kept."""
    configs = [triton.Config({"BLOCK_M": m, "BLOCK_N": n}, num_warps=w) for m, n, w in TILES]
    return triton.autotune(configs=configs, key=["n_rows", "n_cols"])(kernel)


def launch_tuned(tuned, x, scale, shift):
    """``y = x * scale + shift`` through the autotuned kernel; the grid reads the tile
    the autotuner picked from ``meta``."""
    y = torch.empty_like(x)
    n_rows, n_cols = x.shape
    grid = lambda meta: (triton.cdiv(n_rows, meta["BLOCK_M"]), triton.cdiv(n_cols, meta["BLOCK_N"]))
    tuned[grid](x, scale, shift, y, n_rows, n_cols)
    return y


# --- the parts -----------------------------------------------------------------------


def _inputs(rows: int):
    from gpuperf.bench.catalog import SCALE_SHIFT

    return SCALE_SHIFT.make_inputs(rows, "cuda")


def _spread(values: list[float]) -> dict:
    from gpuperf.bench.timing import quantile

    return {"median": statistics.median(values), "p20": quantile(values, 0.2), "p80": quantile(values, 0.8)}


def _without_flush(fn) -> dict:
    """``do_bench`` quantiles with its 256 MiB flush buffer shrunk to 4 bytes: L2 stays warm."""
    from triton.runtime import driver

    active = driver.active
    buffer = torch.empty(1, dtype=torch.int32, device="cuda")
    active.get_empty_cache_for_benchmark = lambda: buffer
    try:
        median, p20, p80 = do_bench(fn, quantiles=[0.5, 0.2, 0.8])
    finally:
        del active.get_empty_cache_for_benchmark
    return {"median": median, "p20": p20, "p80": p80}


def part_timing(out: Path | None) -> None:
    from gpuperf.bench import captures
    from gpuperf.bench.catalog import SCALE_SHIFT, SCALE_SHIFT_COLS
    from gpuperf.kernels import scale_shift
    from gpuperf.testing import assert_close

    sizes = []
    for rows in TIMING_ROWS:
        x, scale, shift = _inputs(rows)
        assert_close(
            f"scale_shift {rows} rows", SCALE_SHIFT.reference(x, scale, shift), scale_shift(x, scale, shift)
        )
        fn = lambda x=x, scale=scale, shift=shift: scale_shift(x, scale, shift)
        readings = {
            "do_bench": do_bench_readings(fn),
            "do_bench_no_flush": _without_flush(fn),
            "one_call": _spread([one_call_ms(fn) for _ in range(SAMPLES)]),
            "many_calls": _spread([many_calls_ms(fn) for _ in range(ROUNDS)]),
            "cuda_graph": cuda_graph_ms(fn),
        }
        log(f"  {rows} rows: " + ", ".join(f"{k} {v['median'] * 1e3:.1f} us" for k, v in readings.items()))
        sizes.append({"rows": rows, "bytes": SCALE_SHIFT.bytes(rows), "readings": readings})
    cap = captures.build(
        "timing_scale_shift",
        tool="triton.testing.do_bench, torch.cuda.Event, triton.testing.do_bench_cudagraph",
        payload={
            "cols": SCALE_SHIFT_COLS,
            "dtype": "float32",
            "samples": SAMPLES,
            "rounds": ROUNDS,
            "calls": 100,
            "sizes": sizes,
        },
        sources=SOURCES,
        method=f"one kernel timed each way in one process: medians with 20th and 80th percentiles "
        f"({SAMPLES} single calls for the events around one call, {ROUNDS} rounds of 100 calls)",
    )
    log(f"timing_scale_shift -> {captures.write(cap, out)}")


def _tune(kernel, rows: int) -> dict:
    """Tune a fresh autotuner at ``rows`` and call it again: what it printed, how long the
    first call took, each config's median and the winner."""
    from gpuperf.bench.catalog import SCALE_SHIFT
    from gpuperf.testing import assert_close

    x, scale, shift = _inputs(rows)
    tuned = autotuned_scale_shift(kernel)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        torch.cuda.synchronize()
        start = time.perf_counter()
        y = launch_tuned(tuned, x, scale, shift)
        torch.cuda.synchronize()
        first_s = time.perf_counter() - start
        first = printed.getvalue()
        start = time.perf_counter()
        launch_tuned(tuned, x, scale, shift)
        torch.cuda.synchronize()
        second_s = time.perf_counter() - start
    assert_close(f"autotuned scale_shift {rows} rows", SCALE_SHIFT.reference(x, scale, shift), y)
    timings = [
        {
            "BLOCK_M": config.kwargs["BLOCK_M"],
            "BLOCK_N": config.kwargs["BLOCK_N"],
            "num_warps": config.num_warps,
            "ms": times[0] if isinstance(times, list) else times,
        }
        for config, times in tuned.configs_timings.items()
    ]
    best = tuned.best_config
    return {
        "rows": rows,
        "printed": first,
        "printed_second_call": printed.getvalue()[len(first) :],
        "first_call_s": first_s,
        "second_call_s": second_s,
        "bench_time_s": tuned.bench_time,
        "timings": timings,
        "best": {
            "BLOCK_M": best.kwargs["BLOCK_M"],
            "BLOCK_N": best.kwargs["BLOCK_N"],
            "num_warps": best.num_warps,
        },
    }


def part_autotune(out: Path | None) -> None:
    from gpuperf.bench import captures
    from gpuperf.bench.catalog import SCALE_SHIFT_COLS
    from gpuperf.kernels.scale_shift import BLOCK_M, BLOCK_N, NUM_WARPS
    from gpuperf.kernels.scale_shift import _scale_shift_kernel as kernel

    tunings = []
    for attempt in (1, 2):  # two independent tunings of the same keys
        for rows in AUTOTUNE_ROWS:
            tuning = _tune(kernel, rows)
            tuning["attempt"] = attempt
            log(f"  tuning {attempt}, {rows} rows: best {tuning['best']} in {tuning['first_call_s']:.2f} s")
            tunings.append(tuning)
    cap = captures.build(
        "autotune_scale_shift",
        tool="triton.autotune with TRITON_PRINT_AUTOTUNING=1",
        payload={
            "cols": SCALE_SHIFT_COLS,
            "dtype": "float32",
            "tiles": [list(t) for t in TILES],
            "default": {"BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N, "num_warps": NUM_WARPS},
            "tunings": tunings,
        },
        sources=SOURCES,
        method="the autotuner's own timing (do_bench, L2 flushed, median) of each config, "
        "tuned twice per size in one process",
    )
    log(f"autotune_scale_shift -> {captures.write(cap, out)}")


PARTS = {"timing": part_timing, "autotune": part_autotune}


def main(argv: list[str] | None = None) -> int:
    from gpuperf.bench import captures

    parser = captures.script_parser(__doc__.splitlines()[0], PARTS)
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        log("no CUDA GPU: nothing to capture")
        return 1
    failed = False
    for name in args.part or PARTS:
        log(f"--- {name}")
        try:
            PARTS[name](args.out)
        except Exception:
            traceback.print_exc()
            log(f"{name} failed; the other parts go on")
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
