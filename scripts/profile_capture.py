"""Everything the profiling guide shows, captured in one run on a GPU.

Usage (GPU with ``nvcc``, ``ninja`` and ``ncu``): ``python scripts/profile_capture.py [--out DIR]``.
Writes, under ``<out>/<gpu>/`` (default ``src/gpuperf/measurements``):

* ``row_mean.json``: the row-mean benchmark (Triton, CUDA C++ via ``load_inline``, PyTorch);
* ``captures/cuda_extension.json``: the build of the CUDA row mean (time, nvcc) and its checks;
* ``captures/timing_methods.json``: one op timed seven ways;
* ``captures/launch_bound.json``: host time per call against GPU time, as the size grows;
* ``captures/torch_profiler.json`` and ``captures/torch_profiler_trace.json.gz``: a bf16
  MLP block's forward, backward and optimizer step under ``torch.profiler``;
* ``captures/ncu_kernels.json``: Nsight Compute's counters of softmax, matmul and row mean;
* ``captures/proton.json``: Triton's profiler (proton) on the same kernels, or why it failed.

Each part is written as soon as it is done, and a part that fails is reported and
skipped, so one failure loses nothing else. The Nsight Compute and proton parts run in
child processes of this script (``--part ncu-inner``, ``--part proton``): a profiler
holds the GPU's counters for its whole process.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

# Triton compiles into a fresh cache and load_inline builds into a fresh folder, so the
# first calls timed below really compile. Set before Triton or the kernels are imported.
#: Kept when given by GPUPERF_PROFILE_SCRATCH (a later step may reuse the builds), else removed at the end.
_OWN_SCRATCH = "GPUPERF_PROFILE_SCRATCH" not in os.environ
_SCRATCH = Path(os.environ.setdefault("GPUPERF_PROFILE_SCRATCH", tempfile.mkdtemp(prefix="gpuperf-profile-")))
os.environ.setdefault("TRITON_CACHE_DIR", str(_SCRATCH / "triton-cache"))
os.environ.setdefault("TORCH_EXTENSIONS_DIR", str(_SCRATCH / "torch-extensions"))

#: The two softmax inputs timed every way: one large (64 MiB in, 64 MiB out), one tiny.
TIMING_SHAPES = ((4096, 4096), (64, 256))
#: Rows of the launch-bound sweep; every row has LAUNCH_COLS float32 columns.
LAUNCH_ROWS = tuple(2**p for p in range(4, 17, 2))
LAUNCH_COLS = 1024
#: Samples of the single-call timings (host clock, CUDA events).
SAMPLES = 200
#: The MLP block profiled: tokens, model width, hidden width (4x), bf16.
MLP_TOKENS, MLP_WIDTH = 4096, 1024
#: ncu: the shape of the memory-bound ops and of the matmuls.
NCU_SHAPE = (4096, 4096)
NCU_MATMUL = 4096
NCU_SECTIONS = ("SpeedOfLight", "LaunchStats", "Occupancy", "MemoryWorkloadAnalysis")
#: Counters asked for beside the sections; those this ncu does not know are left out
#: (``ncu --query-metrics`` decides), and the record says which.
NCU_EXTRA_METRICS = (
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_tensor_op_gmma.sum",
    "l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum",
    "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum",
    "smsp__sass_inst_executed_op_local_ld.sum",
    "smsp__sass_inst_executed_op_local_st.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
)
#: The ops profiled by ncu, in launch order, each with a pattern its kernel's name matches.
NCU_OPS = (
    ("softmax (Triton)", r"_softmax_kernel"),
    ("row_mean (Triton)", r"_row_mean_kernel"),
    ("row_mean (CUDA C++)", r"^(void )?row_mean_kernel"),
    ("x.mean(dim=-1) (PyTorch)", r"reduce"),
    ("matmul bf16 (Triton)", r"_matmul_kernel"),
    ("torch.matmul bf16 (cuBLAS)", r"gemm|gmma|xmma|nvjet|cutlass|sm90"),
)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def log(message: str) -> None:
    print(message, flush=True)


def _quantiles(values: list[float]) -> dict:
    from gpuperf.bench.timing import quantile as _quantile

    return {
        "ms": statistics.median(values),
        "ms_p20": _quantile(values, 0.2),
        "ms_p80": _quantile(values, 0.8),
        "n": len(values),
    }


# --- the CUDA extension ---------------------------------------------------------------


def part_cuda_extension(out: Path | None) -> None:
    import torch

    from gpuperf.bench import captures
    from gpuperf.kernels import row_mean_cuda as rmc
    from gpuperf.reference import row_mean_ref

    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    version = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout.strip().splitlines()
    start = time.perf_counter()
    rmc.extension()
    build_s = time.perf_counter() - start
    checks = []
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        for shape in ((4096, 4096), (3, 1000), (1, 1), (1000, 333)):
            x = torch.randn(shape, device="cuda", dtype=dtype) + 1
            got = rmc.row_mean_cuda(x)
            err = (got.double() - row_mean_ref(x)).abs().max().item()
            checks.append(
                {"dtype": str(dtype).removeprefix("torch."), "shape": list(shape), "max_abs_err": err}
            )
            from gpuperf.testing import assert_close

            assert_close(f"row_mean_cuda {shape} {dtype}", row_mean_ref(x), got)
    # A second process finds the build and only loads it: time a load in a child.
    child = (
        "import time, sys; sys.path.insert(0, 'src'); t = time.perf_counter(); "
        "from gpuperf.kernels import row_mean_cuda as r; r.extension(); print(time.perf_counter() - t)"
    )
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, cwd=ROOT)
    load_s = float(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else None
    payload = {
        "build_s": build_s,
        "cached_load_s": load_s,
        "nvcc": version[-2:] if version else [],
        "torch_cuda_arch_list": os.environ.get("TORCH_CUDA_ARCH_LIST"),
        "threads_per_block": rmc.THREADS,
        "checks": checks,
    }
    cap = captures.build(
        "cuda_extension",
        tool="torch.utils.cpp_extension.load_inline (nvcc, ninja)",
        payload=payload,
        sources=("kernels/row_mean_cuda.py",),
        method="wall clock of the first build into an empty extensions folder, and of a cached load "
        "in a new process; outputs checked against the float64 reference",
    )
    log(f"cuda_extension: built in {build_s:.1f} s, cached load {load_s} s -> {captures.write(cap, out)}")


# --- timing methods -------------------------------------------------------------------


def _single_call_ms(fn, *, sync_after: bool) -> list[float]:
    """Host clock around one call each, the GPU idle before every call."""
    import torch

    times = []
    for _ in range(SAMPLES):
        torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        if sync_after:
            torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1e3)
    return times


def _events_ms(fn) -> list[float]:
    import torch

    times = []
    for _ in range(SAMPLES):
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        begin.record()
        fn()
        end.record()
        end.synchronize()
        times.append(begin.elapsed_time(end))
    return times


def _loop_ms(fn, calls: int = 200) -> list[float]:
    """Wall time per call of ``calls`` back-to-back calls, synchronized once at the end."""
    import torch

    per_call = []
    for _ in range(5):
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        per_call.append((time.perf_counter() - start) * 1e3 / calls)
    return per_call


def _do_bench(fn, *, flush_bytes: int | None) -> dict:
    """``do_bench`` quantiles; ``flush_bytes`` replaces its 256 MiB flush buffer (None: keep it)."""
    import torch
    from triton.runtime import driver
    from triton.testing import do_bench

    active = driver.active
    if flush_bytes is not None:
        buffer = torch.empty(max(flush_bytes // 4, 1), dtype=torch.int32, device="cuda")
        active.get_empty_cache_for_benchmark = lambda: buffer
    try:
        median, p20, p80 = do_bench(fn, quantiles=[0.5, 0.2, 0.8])
    finally:
        if flush_bytes is not None:
            del active.get_empty_cache_for_benchmark
    return {"ms": median, "ms_p20": p20, "ms_p80": p80}


def part_timing_methods(out: Path | None) -> None:
    import torch
    from triton.testing import do_bench_cudagraph

    from gpuperf.bench import captures, timing
    from gpuperf.kernels import softmax

    ops = []
    for shape in TIMING_SHAPES:
        x = torch.randn(shape, device="cuda")
        fn = lambda x=x: softmax(x)
        methods = []

        def add(key, label, result):
            methods.append({"key": key, "label": label, **result})
            log(f"  softmax {shape} {key}: {result.get('ms')}")

        torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        add(
            "first_call",
            "first call (host clock, synchronized): compiles",
            {"ms": (time.perf_counter() - start) * 1e3},
        )
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        add(
            "second_call",
            "second call (host clock, synchronized)",
            {"ms": (time.perf_counter() - start) * 1e3},
        )
        add("host_no_sync", "host clock, no synchronize", _quantiles(_single_call_ms(fn, sync_after=False)))
        add(
            "host_sync",
            "host clock + torch.cuda.synchronize()",
            _quantiles(_single_call_ms(fn, sync_after=True)),
        )
        add("cuda_events", "CUDA events around one call", _quantiles(_events_ms(fn)))
        add("loop", "host clock over 200 calls in a loop, per call", _quantiles(_loop_ms(fn)))
        add("do_bench", "triton.testing.do_bench (256 MiB L2 flush)", _do_bench(fn, flush_bytes=None))
        add("do_bench_no_flush", "do_bench without the L2 flush", _do_bench(fn, flush_bytes=4))
        median, p20, p80 = do_bench_cudagraph(fn, quantiles=[0.5, 0.2, 0.8])
        add(
            "do_bench_cudagraph",
            "triton.testing.do_bench_cudagraph",
            {"ms": median, "ms_p20": p20, "ms_p80": p80},
        )
        t = timing.time_ms(fn)
        add(
            "gpuperf",
            "gpuperf.bench.timing.time_ms (1 GiB flush, best of 3)",
            {"ms": t.ms, "ms_p20": t.ms_p20, "ms_p80": t.ms_p80},
        )
        ops.append(
            {
                "op": f"gpuperf.kernels.softmax, {shape[0]} x {shape[1]} float32",
                "shape": list(shape),
                "bytes": 2 * shape[0] * shape[1] * 4,
                "methods": methods,
            }
        )
    cap = captures.build(
        "timing_methods",
        tool="time.perf_counter, torch.cuda.Event, triton.testing.do_bench, do_bench_cudagraph",
        payload={"samples": SAMPLES, "ops": ops},
        sources=("kernels/softmax.py", "kernels/_configs.py", "kernels/launch.py"),
        method="one op timed seven ways in one process: medians with 20th and 80th percentiles "
        f"({SAMPLES} single calls for the host clock and CUDA events)",
    )
    log(f"timing_methods -> {captures.write(cap, out)}")


# --- launch-bound vs GPU-bound -------------------------------------------------------


def part_launch_bound(out: Path | None) -> None:
    import torch

    from gpuperf.bench import captures, timing
    from gpuperf.kernels import softmax
    from gpuperf.kernels.launch import uncached

    def ours_uncached(x):
        with uncached():
            return softmax(x)

    providers = (
        ("triton", "gpuperf.kernels.softmax (cached launch)", softmax),
        ("triton_jit", "the same, launched by kernel[grid]", ours_uncached),
        ("torch", "torch.softmax", lambda x: torch.softmax(x, dim=-1)),
    )
    rows = []
    for n_rows in LAUNCH_ROWS:
        x = torch.randn(n_rows, LAUNCH_COLS, device="cuda")
        for key, label, op in providers:
            fn = lambda op=op, x=x: op(x)
            host = timing.host_time_ms(fn)
            device = timing.time_ms(fn, rounds=1) if key != "triton_jit" else None
            loop = _quantiles(_loop_ms(fn))
            rows.append(
                {
                    "rows": n_rows,
                    "cols": LAUNCH_COLS,
                    "bytes": 2 * n_rows * LAUNCH_COLS * 4,
                    "provider": key,
                    "label": label,
                    "host_ms": host.ms,
                    "host_ms_p20": host.ms_p20,
                    "host_ms_p80": host.ms_p80,
                    "device_ms": device.ms if device else None,
                    "device_ms_p20": device.ms_p20 if device else None,
                    "device_ms_p80": device.ms_p80 if device else None,
                    "loop_ms": loop["ms"],
                    "loop_ms_p20": loop["ms_p20"],
                    "loop_ms_p80": loop["ms_p80"],
                }
            )
            log(
                f"  launch_bound {n_rows}x{LAUNCH_COLS} {key}: host {host.ms * 1e3:.1f} us, "
                f"device {device.ms * 1e3 if device else float('nan'):.1f} us, loop {loop['ms'] * 1e3:.1f} us"
            )
    cap = captures.build(
        "launch_bound",
        tool="gpuperf.bench.timing.host_time_ms and time_ms, and a timed loop",
        payload={"cols": LAUNCH_COLS, "rows": rows, "host_method": timing.HOST_TIMING_METHOD},
        sources=("kernels/softmax.py", "kernels/_configs.py", "kernels/launch.py", "kernels/_validation.py"),
        method="per size and provider: host time per call with the GPU kept busy (host_time_ms), "
        "GPU time (time_ms, one round), and wall time per call of 200 back-to-back calls",
    )
    log(f"launch_bound -> {captures.write(cap, out)}")


# --- torch.profiler -------------------------------------------------------------------


def _mlp_block():
    import torch
    from torch import nn

    class MLPBlock(nn.Module):
        """Pre-norm transformer MLP block: x + W2 gelu(W1 layernorm(x))."""

        def __init__(self, width: int):
            super().__init__()
            self.norm = nn.LayerNorm(width)
            self.up = nn.Linear(width, 4 * width)
            self.act = nn.GELU(approximate="tanh")
            self.down = nn.Linear(4 * width, width)

        def forward(self, x):
            return x + self.down(self.act(self.up(self.norm(x))))

    return MLPBlock(MLP_WIDTH).to(device="cuda", dtype=torch.bfloat16)


def _avg_row(e) -> dict:
    def get(*names):
        for name in names:
            value = getattr(e, name, None)
            if value is not None:
                return value
        return None

    return {
        "name": e.key,
        "count": e.count,
        "cpu_total_us": get("cpu_time_total"),
        "self_cpu_us": get("self_cpu_time_total"),
        "cuda_total_us": get("device_time_total", "cuda_time_total"),
        "self_cuda_us": get("self_device_time_total", "self_cuda_time_total"),
        "cuda_memory_bytes": get("device_memory_usage", "cuda_memory_usage"),
        "self_cuda_memory_bytes": get("self_device_memory_usage", "self_cuda_memory_usage"),
    }


def training_step(model, optimizer, x) -> None:
    """One step of the block, each phase in a ``record_function`` range of its own."""
    from torch.profiler import record_function

    with record_function("forward"):
        loss = model(x).float().square().mean()
    with record_function("backward"):
        loss.backward()
    with record_function("optimizer"):
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)


def profile_steps(step, n_steps: int = 2):
    """Run ``step()`` ``n_steps`` times under ``torch.profiler``; return the profiler."""
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    with profile(
        activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
        record_shapes=True,  # input shapes of every op: key_averages(group_by_input_shape=True)
        profile_memory=True,  # allocations and frees of every op
    ) as prof:
        for i in range(n_steps):
            with record_function(f"step {i}"):
                step()
        torch.cuda.synchronize()  # the GPU's work belongs to the profiled steps
    return prof


def part_torch_profiler(out: Path | None) -> None:
    import torch

    from gpuperf.bench import captures, records

    torch.manual_seed(0)
    model = _mlp_block()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(MLP_TOKENS, MLP_WIDTH, device="cuda", dtype=torch.bfloat16)

    def step():
        training_step(model, optimizer, x)

    for _ in range(3):  # warm-up: cuBLAS handles, the optimizer's state, the allocator's cache
        step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    prof = profile_steps(step)
    peak = torch.cuda.max_memory_allocated()
    averages = prof.key_averages()
    rows = [_avg_row(e) for e in averages]
    try:
        table = averages.table(sort_by="cuda_time_total", row_limit=15, max_name_column_width=40)
    except Exception:  # the sort key's name changed in newer PyTorch
        table = averages.table(sort_by="device_time_total", row_limit=15, max_name_column_width=40)
    by_shape = prof.key_averages(group_by_input_shape=True)
    shaped = sorted(
        (
            {**_avg_row(e), "input_shapes": str(e.input_shapes)}
            for e in by_shape
            if e.key.startswith("aten::")
        ),
        key=lambda r: -(r["cuda_total_us"] or 0),
    )[:12]

    gpu = records.gpu_slug(torch.cuda.get_device_name())
    trace_path = captures.artifact_path("torch_profiler_trace", gpu, ".json.gz", records.output_dir(out))
    trace_path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "trace.json"
        prof.export_chrome_trace(str(raw))
        raw_bytes = raw.stat().st_size
        with open(raw, "rb") as src, gzip.GzipFile(trace_path, "wb", mtime=0) as dst:
            shutil.copyfileobj(src, dst)
    payload = {
        "model": {
            "description": "pre-norm MLP block x + Linear(4d->d)(GELU(Linear(d->4d)(LayerNorm(x)))), "
            "AdamW, bfloat16",
            "tokens": MLP_TOKENS,
            "width": MLP_WIDTH,
            "hidden": 4 * MLP_WIDTH,
            "parameters": sum(p.numel() for p in model.parameters()),
        },
        "steps": 2,
        "peak_memory_bytes": peak,
        "key_averages": rows,
        "by_input_shape": shaped,
        "table": table,
        "trace_file": trace_path.name,
        "trace_bytes": raw_bytes,
        "trace_gz_bytes": trace_path.stat().st_size,
    }
    cap = captures.build(
        "torch_profiler",
        tool="torch.profiler.profile(activities=[CPU, CUDA], record_shapes=True, profile_memory=True)",
        payload=payload,
        method="two training steps of the block after three warm-up steps, profiled; "
        "times from the profiler's CPU and CUDA (CUPTI) events",
    )
    log(table)
    log(
        f"torch_profiler -> {captures.write(cap, out)}; "
        f"trace {raw_bytes} B, {trace_path.stat().st_size} B gzipped"
    )


# --- Nsight Compute -------------------------------------------------------------------


def _ncu_inputs():
    import torch

    from gpuperf.kernels import matmul, row_mean, softmax
    from gpuperf.kernels.row_mean_cuda import row_mean_cuda

    x = torch.randn(NCU_SHAPE, device="cuda")
    a = torch.randn(NCU_MATMUL, NCU_MATMUL, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(NCU_MATMUL, NCU_MATMUL, device="cuda", dtype=torch.bfloat16)
    return [
        lambda: softmax(x),
        lambda: row_mean(x),
        lambda: row_mean_cuda(x),
        lambda: x.mean(dim=-1),
        lambda: matmul(a, b),
        lambda: torch.matmul(a, b),
    ]


def part_ncu_inner() -> None:
    """Run under ncu: warm every op up, then run each once between profiler start and stop."""
    import torch

    ops = _ncu_inputs()
    for fn in ops:
        fn()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for fn in ops:
        fn()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()


def _number(text: str):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return text


def _triton_compiler_report() -> list[dict]:
    """Registers, spills and shared memory of the Triton kernels, from the compiler."""
    import importlib

    import torch

    from gpuperf.kernels.row_mean import _row_mean_kernel, row_mean_launch

    # The module, not the function gpuperf.kernels.softmax that shadows it as an attribute.
    softmax_module = importlib.import_module("gpuperf.kernels.softmax")

    x = torch.randn(NCU_SHAPE, device="cuda")
    y = torch.empty_like(x)
    report = []
    kernel, block_n, block_m, num_warps = softmax_module._launch_config(NCU_SHAPE[1])
    compiled = kernel[(NCU_SHAPE[0] // block_m,)](
        x,
        y,
        NCU_SHAPE[0],
        NCU_SHAPE[1],
        *x.stride(),
        y.stride(0),
        BLOCK_N=block_n,
        BLOCK_M=block_m,
        num_warps=num_warps,
    )
    report.append(
        {
            "kernel": "_softmax_kernel",
            "block_m": block_m,
            "block_n": block_n,
            "num_warps": num_warps,
            "compiled": compiled,
        }
    )
    bm, bn, nw = row_mean_launch(*NCU_SHAPE)
    out = torch.empty(NCU_SHAPE[0], device="cuda")
    compiled = _row_mean_kernel[(NCU_SHAPE[0] // bm,)](
        x, out, NCU_SHAPE[0], NCU_SHAPE[1], *x.stride(), BLOCK_M=bm, BLOCK_N=bn, num_warps=nw
    )
    report.append(
        {"kernel": "_row_mean_kernel", "block_m": bm, "block_n": bn, "num_warps": nw, "compiled": compiled}
    )
    torch.cuda.synchronize()
    rows = []
    for entry in report:
        compiled = entry.pop("compiled")
        rows.append(
            {
                **entry,
                "registers": getattr(compiled, "n_regs", None),
                "spills": getattr(compiled, "n_spills", None),
                "shared_bytes": getattr(compiled.metadata, "shared", None),
            }
        )
    return rows


def part_ncu(out: Path | None) -> None:
    from gpuperf.bench import captures

    ncu = shutil.which("ncu") or (
        "/usr/local/cuda/bin/ncu" if Path("/usr/local/cuda/bin/ncu").exists() else None
    )
    if ncu is None:
        raise RuntimeError("ncu (Nsight Compute) is not on the PATH")
    query = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True)
    known = {line.split()[0] for line in query.stdout.splitlines() if line.strip()}
    extras = [m for m in NCU_EXTRA_METRICS if m.split(".")[0] in known]
    dropped = [m for m in NCU_EXTRA_METRICS if m not in extras]
    base = [ncu, "--csv", "--page", "details", "--clock-control", "none", "--profile-from-start", "off"]
    for section in NCU_SECTIONS:
        base += ["--section", section]
    inner = [sys.executable, __file__, "--part", "ncu-inner"]
    cmd = base + (["--metrics", ",".join(extras)] if extras else [])
    done = subprocess.run(cmd + inner, capture_output=True, text=True, cwd=ROOT, timeout=240)
    if (done.returncode != 0 or '"ID"' not in done.stdout) and extras:
        log(
            f"ncu with the extra metrics failed ({done.returncode}); again with the sections only:\n"
            f"{done.stdout[-1500:]}\n{done.stderr[-1500:]}"
        )
        dropped, extras, cmd = list(NCU_EXTRA_METRICS), [], base
        done = subprocess.run(cmd + inner, capture_output=True, text=True, cwd=ROOT, timeout=240)
    if done.returncode != 0 or '"ID"' not in done.stdout:
        raise RuntimeError(f"ncu failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    text = done.stdout[done.stdout.index('"ID"') :]
    kernels: dict[int, dict] = {}
    for row in csv.DictReader(io.StringIO(text)):
        if not row.get("ID") or not row.get("Metric Name"):
            continue
        entry = kernels.setdefault(
            int(row["ID"]),
            {
                "kernel": row.get("Kernel Name", ""),
                "block_size": row.get("Block Size"),
                "grid_size": row.get("Grid Size"),
                "metrics": {},
            },
        )
        entry["metrics"][row["Metric Name"]] = {
            "section": row.get("Section Name", ""),
            "unit": row.get("Metric Unit", ""),
            "value": _number(row.get("Metric Value", "")),
        }
    launches = [kernels[k] for k in sorted(kernels)]
    pending = list(NCU_OPS)
    for launch in launches:
        launch["op"] = None
        if pending and re.search(pending[0][1], launch["kernel"]):
            launch["op"] = pending.pop(0)[0]
    for launch in launches:
        log(f"  ncu {launch['op']}: {launch['kernel'][:60]} ({len(launch['metrics'])} metrics)")
    try:
        compiler = _triton_compiler_report()
    except Exception as err:  # the counters stand without it
        compiler = [{"error": f"{type(err).__name__}: {err}"}]
    tool = "ncu " + " ".join(cmd[1:])
    cap = captures.build(
        "ncu_kernels",
        tool=tool,
        payload={
            "ops": [name for name, _ in NCU_OPS],
            "unmatched_ops": [name for name, _ in pending],
            "shape": list(NCU_SHAPE),
            "matmul": NCU_MATMUL,
            "sections": list(NCU_SECTIONS),
            "extra_metrics": extras,
            "dropped_metrics": dropped,
            "launches": launches,
            "triton_compiler": compiler,
        },
        sources=(
            "kernels/softmax.py",
            "kernels/matmul.py",
            "kernels/row_mean.py",
            "kernels/row_mean_cuda.py",
        ),
        method="Nsight Compute counters of one profiled launch per op (kernel replay, --clock-control none), "
        "after a warm-up call of each",
    )
    log(f"ncu_kernels -> {captures.write(cap, out)}")


# --- proton ---------------------------------------------------------------------------


def _flatten(node: dict, path: tuple = ()) -> list[dict]:
    name = node.get("frame", {}).get("name", "?")
    here = (*path, name)
    rows = [{"path": list(here), "name": name, "metrics": node.get("metrics", {})}]
    for child in node.get("children", []):
        rows += _flatten(child, here)
    return rows


def part_proton(result_path: Path) -> None:
    """Run in a child process: profile the kernels with proton; write what it gave (or why not)."""
    out = {"ok": False, "steps": []}
    try:
        import torch
        import triton.profiler as proton

        from gpuperf.kernels import matmul, row_mean, softmax

        out["steps"].append("imported triton.profiler")
        x = torch.randn(NCU_SHAPE, device="cuda")
        a = torch.randn(NCU_MATMUL, NCU_MATMUL, device="cuda", dtype=torch.bfloat16)
        for fn in (lambda: softmax(x), lambda: row_mean(x), lambda: matmul(a, a)):
            fn()
        torch.cuda.synchronize()
        name = str(result_path.with_suffix(""))
        proton.start(name, hook="triton")
        out["steps"].append("proton.start(name, hook='triton')")
        for label, fn in (
            ("softmax", lambda: softmax(x)),
            ("row_mean", lambda: row_mean(x)),
            ("matmul", lambda: matmul(a, a)),
        ):
            with proton.scope(label):
                for _ in range(10):
                    fn()
        torch.cuda.synchronize()
        proton.finalize()
        out["steps"].append("proton.finalize()")
        hatchet = Path(name + ".hatchet")
        database = json.loads(hatchet.read_text())
        out["frames"] = _flatten(database[0])
        out["device_info"] = database[1] if len(database) > 1 else None
        viewer = subprocess.run(
            [sys.executable, "-m", "triton.profiler.viewer", "-m", "time/us", str(hatchet)],
            capture_output=True,
            text=True,
        )
        out["viewer"] = {
            "returncode": viewer.returncode,
            "stdout": viewer.stdout[-4000:],
            "stderr": viewer.stderr[-2000:],
        }
        out["ok"] = True
    except BaseException as err:  # the guide says why, from this text
        out["error"] = f"{type(err).__name__}: {err}"
        out["traceback"] = traceback.format_exc()[-3000:]
    result_path.with_suffix(".result.json").write_text(json.dumps(out, indent=1, default=str))


def part_proton_outer(out: Path | None) -> None:
    import triton

    from gpuperf.bench import captures

    with tempfile.TemporaryDirectory() as tmp:
        result = Path(tmp) / "guide"
        done = subprocess.run(
            [sys.executable, __file__, "--part", "proton", "--proton-path", str(result)],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=240,
        )
        produced = result.with_suffix(".result.json")
        payload = json.loads(produced.read_text()) if produced.exists() else {"ok": False, "steps": []}
    payload["returncode"] = done.returncode
    payload["output"] = (done.stdout[-2000:] + done.stderr[-3000:]).strip()
    if not payload.get("ok") and "error" not in payload:
        payload["error"] = (
            f"the proton child process exited with status {done.returncode} before writing a result"
        )
    payload["triton"] = triton.__version__
    cap = captures.build(
        "proton",
        tool="triton.profiler (proton): proton.start(name, hook='triton'), proton.scope, proton.finalize",
        payload=payload,
        sources=("kernels/softmax.py", "kernels/matmul.py", "kernels/row_mean.py"),
        method="proton's CUPTI backend over 10 calls of each kernel, each in a scope, in a child process",
    )
    log(f"proton ok={payload.get('ok')} {payload.get('error', '')} -> {captures.write(cap, out)}")


# --- the row-mean benchmark ---------------------------------------------------------


def part_row_mean_benchmark(out: Path | None) -> None:
    from gpuperf.bench import catalog, records
    from gpuperf.bench.runner import run

    record = run(catalog.ROW_MEAN, log=log)
    log(f"row_mean -> {records.write(record, out)}")


PARTS = {
    "cuda": part_cuda_extension,
    "benchmark": part_row_mean_benchmark,
    "timing": part_timing_methods,
    "launch": part_launch_bound,
    "profiler": part_torch_profiler,
    "proton": part_proton_outer,
    "ncu": part_ncu,
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, default=None, help="measurements folder (default: src/gpuperf/measurements)"
    )
    parser.add_argument("--part", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--proton-path", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument(
        "--only", nargs="*", default=list(PARTS), help=f"parts to run (default: all of {list(PARTS)})"
    )
    args = parser.parse_args()
    if args.part == "ncu-inner":
        part_ncu_inner()
        return 0
    if args.part == "proton":
        part_proton(args.proton_path)
        return 0
    import torch

    if not torch.cuda.is_available():
        print(
            "profile_capture.py needs a CUDA GPU; without one the guide renders the committed captures.",
            file=sys.stderr,
        )
        return 2
    failed = []
    for name in args.only:
        log(f"== {name}")
        start = time.perf_counter()
        try:
            PARTS[name](args.out)
        except Exception:
            failed.append(name)
            log(f"{name} FAILED:\n{traceback.format_exc()}")
        log(f"   {name}: {time.perf_counter() - start:.1f} s")
    if _OWN_SCRATCH:
        shutil.rmtree(_SCRATCH, ignore_errors=True)
    if failed:
        log(f"failed parts: {failed}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
