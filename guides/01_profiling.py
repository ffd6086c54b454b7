"""
Profiling: timing GPU code without fooling yourself, and finding out why it is slow
===================================================================================

**What you will learn**

* why a host clock without synchronizing measures nothing about the GPU, and
  what each other way of timing (``torch.cuda.synchronize``, CUDA events,
  ``triton.testing.do_bench`` with and without its cache flush, CUDA graphs)
  actually answers, on one op measured all those ways;
* how to tell a launch-bound call (the host sets the pace) from a GPU-bound one;
* how to read ``torch.profiler``'s tables and its Chrome/Perfetto trace for a
  real training step, and what the trace's timeline says at a glance;
* how to ask Nsight Compute (``ncu``) *why* a kernel is slow, and what Triton's
  own profiler (proton) gives;
* how to build a CUDA C++ kernel from Python with
  ``torch.utils.cpp_extension.load_inline`` and compare it with Triton and
  PyTorch on the same op, a row mean.

Every table, counter and trace below was produced in one run of
``bash scripts/device_run.sh profiling`` (``scripts/profile_capture.py``) on an
H100 and committed as *captures*: JSON files with the same provenance as the
benchmark records (GPU, driver, CUDA, torch, triton, gpuperf commit, date,
method). This page reads them, so it builds on a machine without a GPU and
still shows real output; the caption under each says where it came from.
"""

# %%
# Reading the captures
# --------------------
#
# :func:`gpuperf.pages.profiling.load` returns a capture with the notes the page
# must show: that it is missing (and which command writes it), or that the
# kernel sources changed after it was taken.

from gpuperf.bench import captures
from gpuperf.pages import profiling


def show(name: str):
    capture, notes = profiling.load(name)
    for note in notes:
        print(note)
    if capture is not None:
        print(captures.caption(capture))
    return capture, notes


timing_cap, timing_notes = show("timing_methods")

# %%
# 1. Timing without fooling yourself
# ----------------------------------
#
# A CUDA call from Python returns as soon as the work is *queued*: the GPU runs
# it later, while the host moves on. So the time a Python line takes and the
# time its kernel takes are different quantities, and each way of timing below
# answers a different question. The capture times our fused softmax
# (:func:`gpuperf.kernels.softmax`, tutorial 02) each way, on a large input
# (4096 x 4096 float32: 64 MiB in, 64 MiB out) and on a tiny one (64 x 256).
#
# ``first call``
#     The very first call, with a fresh Triton cache: it compiles the kernel
#     (Triton to PTX to a GPU binary) before running it. Never time it as the
#     kernel; do report it if your users pay it (a server's first request).
# ``host clock, no synchronize``
#     ``time.perf_counter()`` around the call alone: how long Python took to
#     *queue* the launch. It says nothing about the kernel.
# ``host clock + torch.cuda.synchronize()``
#     The launch, the kernel, and the round trip of waiting for it: an upper
#     bound on the kernel, padded by the launch and the wake-up.
# ``CUDA events``
#     Timestamps the GPU itself writes before and after the work. Closer, but
#     when the host is slower than the kernel the first event fires and the GPU
#     then *waits for the launch*, and that wait is timed.
# ``loop``
#     Many calls back to back, one synchronize at the end: the rate a real
#     program gets, which is the slower of the host and the GPU.
# ``do_bench``
#     Triton's benchmark helper: CUDA events around each of many runs, with
#     256 MB written between runs to flush the 50 MB L2, median of the runs.
# ``do_bench without the L2 flush``
#     The same with the flush removed (the buffer shrunk to 4 bytes).
# ``do_bench_cudagraph``
#     The calls captured once in a CUDA graph and replayed: launches cost
#     (almost) nothing, so this is the kernel alone, with L2 as the previous
#     run left it.
# ``gpuperf.bench.timing.time_ms``
#     What every record on this site uses (see :doc:`../measuring`):
#     ``do_bench`` with a 1 GiB flush, best of three rounds.

print(profiling.timing_methods_table(timing_cap) if timing_cap else "")

# %%
# How far apart the answers are, from the table above:

if timing_cap:
    for op in timing_cap["payload"]["ops"]:
        us = {m["key"]: m["ms"] * 1e3 for m in op["methods"]}
        print(
            f"{op['op']}: first call {us['first_call'] / 1e3:,.0f} ms, "
            f"{us['first_call'] / us['do_bench_cudagraph']:,.0f}x the kernel (CUDA graph) time; "
            f"host clock without synchronize {us['host_no_sync']:.1f} us against "
            f"{us['do_bench_cudagraph']:.1f} us of kernel; do_bench {us['do_bench']:.1f} us, "
            f"without its flush {us['do_bench_no_flush']:.1f} us"
        )

# %%
# **Reading it.** On the large input the methods that time many runs agree
# closely (``do_bench`` with or without its flush, the CUDA graph, ``time_ms``,
# the loop): the kernel runs far longer than a launch takes, so the host keeps
# ahead. The single-call methods add the launch and the wait for it, and the
# unsynchronized host clock reports a fraction of the kernel: the launch only.
# The flush changes nothing there, because 64 MiB of input does not fit in L2
# anyway.
#
# On the tiny input the methods spread over an order of magnitude, and the
# reason is the host. The kernel itself takes a couple of microseconds (the
# CUDA-graph time). A Python launch takes longer than that, so whenever runs are
# launched back to back the GPU finishes each one and then waits for the next:
# single-call events and synchronized host clocks time the launch path, and
# ``do_bench`` *without* its flush times the host's launch rate, not the kernel.
# With the flush, the time the GPU spends clearing the buffer gives the host
# time to queue the next launch, so the events bracket the kernel (plus its
# ramp-up on a cold cache). This is why the site's
# :func:`~gpuperf.bench.timing.time_ms` clears 1 GiB rather than 256 MB
# (on the virtual machines these pages are measured on, the host sometimes
# stalled for longer than the smaller flush lasts) and keeps the best of three
# rounds by median (a stall only ever adds time). Which number is right depends
# on the question: the kernel's cost (CUDA graph, or ``do_bench``), or what a
# Python loop of these calls achieves (``loop``), which for a tiny kernel is the
# host's cost per call.

# %%
# 2. Launch-bound or GPU-bound?
# -----------------------------
#
# A call costs the host some microseconds (Python, PyTorch's dispatcher, the
# launcher, the driver) and the GPU some microseconds; they overlap, since the
# host queues the next launch while the GPU runs the last one. A loop of calls
# therefore runs at the slower of the two. The capture measures both for the
# softmax over rows of 1024 floats, from 16 rows to 65,536: host time with the
# GPU kept busy (:func:`~gpuperf.bench.timing.host_time_ms`), GPU time
# (:func:`~gpuperf.bench.timing.time_ms`), and the loop. Three callers: our
# wrapper with its cached launch, the same wrapper launching through Triton's
# ``kernel[grid](...)``, and ``torch.softmax``.

launch_cap, launch_notes = show("launch_bound")
if launch_cap:
    profiling.launch_bound_figure(launch_cap, launch_notes)

# %%

print(profiling.launch_bound_table(launch_cap) if launch_cap else "")

# %%
# Where the GPU takes over, and what the launch path costs:

if launch_cap:
    for key in ("triton", "torch"):
        row = profiling.crossover(launch_cap, key)
        if row:
            print(
                f"{row['label']}: GPU time first exceeds host time per call at {row['rows']} x "
                f"{row['cols']} ({row['bytes'] / 1e6:.0f} MB moved): host {row['host_ms'] * 1e3:.1f} us, "
                f"GPU {row['device_ms'] * 1e3:.1f} us"
            )
    cached = profiling.launch_bound_rows(launch_cap, "triton")
    jit = profiling.launch_bound_rows(launch_cap, "triton_jit")
    ratios = [j["host_ms"] / c["host_ms"] for c, j in zip(cached, jit, strict=True)]
    print(
        f"host time through kernel[grid] / through the cached launch: "
        f"{min(ratios):.1f}x to {max(ratios):.1f}x over the sizes"
    )

# %%
# Below the crossover the loop runs at the host's pace: making the kernel
# faster would change nothing, while every microsecond of Python per call
# counts. Above it, the host's cost hides behind the GPU's.
#
# **A worked example: our wrappers' host time.** This is how the wrappers got
# their launch path. The first measurement of host time per call (commit
# ``053b95f``) put our softmax wrapper at several times ``torch.softmax``. A
# profile of the call in Python (``cProfile``, then reading Triton's launcher)
# showed where the time went: computing the grid with ``triton.cdiv`` and
# ``triton.next_power_of_2`` (constexpr-function wrappers, several
# microseconds each; replaced by plain Python, :mod:`gpuperf.kernels._grid`,
# commit ``42a7a37``), and ``kernel[grid](...)`` itself, which binds the
# arguments, recomputes Triton's specialization key and looks the binary up on
# every call. :class:`gpuperf.kernels._launch.Launcher` keeps the compiled
# binaries by exactly that key, computed in a few lines, and calls Triton's C
# launcher directly; a wrapper then keeps a *plan* per input metadata (shape,
# strides, dtype, alignment) and skips its checks for inputs like ones already
# seen (commit ``b6e908f``). The host-time benchmark keeps the before and the
# after in the same record: ``triton_jit`` is the same wrapper launching
# through ``kernel[grid]``, the path before the change.

from gpuperf.bench.catalog import HOST_OVERHEAD
from gpuperf.pages import run_or_load

host = run_or_load(HOST_OVERHEAD)
print(host.table())

# %%

host_us = {p: host.values(p) for p in ("triton", "triton_jit", "torch")}
for op in ("vector_add", "softmax", "matmul"):
    ours, before, torch_us = (
        host_us[p].get(op) for p in ("triton", "triton_jit", "torch")
    )
    if None not in (ours, before, torch_us):
        print(
            f"{op}: {before:.1f} us per call through kernel[grid], {ours:.1f} us through the cached "
            f"launch ({before / ours:.1f}x less), PyTorch's op {torch_us:.1f} us"
        )

# %%
# 3. ``torch.profiler`` on a training step
# ----------------------------------------
#
# A timer says *how long*; a profiler says *where*. The workload: a pre-norm
# transformer MLP block (LayerNorm, a 4x up-projection, GELU, the
# down-projection, the residual) in bfloat16, built from ``torch.nn`` and trained
# with AdamW. Each phase of a step sits in a ``record_function`` range:
#
# .. literalinclude:: ../../scripts/profile_capture.py
#    :pyobject: training_step
#
# Two steps are profiled after three warm-up steps (cuBLAS handles, the
# optimizer's state and the allocator's cache are made during the first ones,
# and would otherwise dominate), with CUDA activity, input shapes and memory:
#
# .. literalinclude:: ../../scripts/profile_capture.py
#    :pyobject: profile_steps
#
# ``prof.key_averages().table(sort_by="cuda_time_total", row_limit=15)`` printed
# this on the H100:

prof_cap, prof_notes = show("torch_profiler")
if prof_cap:
    print(prof_cap["payload"]["table"])

# %%
# The same numbers as a sortable table (click a column header), the rows with the
# most CUDA time first:

print(profiling.key_averages_table(prof_cap, notes=prof_notes) if prof_cap else "")

# %%
# **Reading it.**
#
# * *Self* time is spent in the op itself; *total* includes the ops it called.
#   ``aten::linear`` has CUDA total but no self CUDA time: its kernels belong to
#   the ``aten::addmm`` it calls, whose GEMM kernels (the ``nvjet_sm90...`` rows:
#   cuBLAS's Hopper kernels) run on the GPU.
# * A ``record_function`` range appears twice: once as a CPU range (CPU total
#   time: how long the host spent inside it) and once as a GPU range (self CUDA
#   time: the span of the kernels it launched on the GPU). The ``Self CUDA %``
#   column therefore adds up to more than 100%.
# * The ``backward`` range has almost no CUDA time of its own: autograd runs the
#   backward pass on its own thread, and kernels launched there are not
#   attributed to a range opened on the main thread. Look for
#   ``autograd::engine::evaluate_function: ...`` rows instead.
# * With ``profile_memory=True``, *self CUDA Mem* is what an op allocated
#   (positive) or freed (negative) on the GPU: ``aten::mm`` in the backward pass
#   allocates the weight and input gradients.

if prof_cap:
    p = prof_cap["payload"]
    shapes = p["by_input_shape"][0]
    print(
        f"{p['model']['parameters']:,} parameters, {p['model']['tokens']} tokens of width "
        f"{p['model']['width']}; peak GPU memory during the profiled steps "
        f"{p['peak_memory_bytes'] / 2**20:.0f} MiB"
    )
    print(
        f"most CUDA time by op and input shape (key_averages(group_by_input_shape=True)): "
        f"{shapes['name']} {shapes['input_shapes']}, {shapes['cuda_total_us']:.0f} us over "
        f"{shapes['count']} calls"
    )

# %%
# The trace: download it and open it in Perfetto
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
#
# ``prof.export_chrome_trace("trace.json")`` writes every event with its start
# and duration. The one from this run is committed, gzipped:
# :download:`the trace </measurements/nvidia-h100-80gb-hbm3/captures/torch_profiler_trace.json.gz>`.
# Open https://ui.perfetto.dev in a browser, choose *Open trace file* and pick the
# downloaded file (Perfetto reads it gzipped, and the file never leaves your
# machine; ``chrome://tracing`` in Chrome works too). Press ``W``/``S`` to zoom
# and ``A``/``D`` to pan. The CPU threads sit on top (the main thread with its
# ``step``, ``forward`` and ``optimizer`` ranges, and autograd's thread for the
# backward pass), the GPU's stream below; arrows join each ``cudaLaunchKernel``
# to the kernel it queued.

if prof_cap:
    p = prof_cap["payload"]
    print(
        f"trace: {p['trace_bytes'] / 1e3:.0f} kB of JSON, {p['trace_gz_bytes'] / 1e3:.0f} kB gzipped "
        f"(two steps)"
    )

# %%
# One picture says what the tables cannot: *when* the GPU was busy. Here the
# trace's last step is drawn from its events (the CPU ranges, the CUDA runtime
# calls, and the GPU's kernels coloured by the phase that launched them):

from gpuperf.bench.records import reference_gpu

trace_path = captures.artifact_path("torch_profiler_trace", reference_gpu(), ".json.gz")
trace = profiling.read_trace(trace_path) if trace_path.exists() else None
if trace is not None and prof_cap:
    profiling.timeline_figure(
        trace,
        title="One training step of the bf16 MLP block under torch.profiler",
        caption=captures.caption(prof_cap),
    )
else:
    print(f"MISSING: no trace at {trace_path}")

# %%

if trace is not None:
    s = profiling.last_step_summary(trace)
    print(
        f"last step: {s['step_ms']:.2f} ms on the CPU, {s['kernels']} kernels; the GPU was busy "
        f"{s['busy_ms']:.2f} ms of the {s['gpu_ms']:.2f} ms from the step's start to its last "
        f"kernel ({100 * s['busy_fraction']:.0f}%)"
    )

# %%
# **Reading it.** The GPU's lane is mostly empty: each kernel finishes long
# before the host has queued the next, so this step, at this size, is bound by
# the host (Python, autograd, the optimizer's bookkeeping and, while profiling,
# the profiler itself), not by the GPU. The tables alone never said so. The cures
# are the ones of section 2 at the scale of a model: more work per launch (a
# larger batch), fewer launches (``torch.compile`` fuses the elementwise ops;
# a fused or ``foreach`` optimizer), or no launches at all (CUDA graphs,
# ``torch.compile(mode="reduce-overhead")``). Profile a few steps after warm-up,
# and remember that the profiler slows the host: confirm what a trace suggests
# with a plain timer.
#
# Nsight Systems (``nsys profile -t cuda,nvtx,osrt python train.py``) records
# the same kind of timeline for the whole program, including what PyTorch does
# not see (other libraries, the OS). It is not installed on the machines these
# pages were measured on, so this guide shows none of its output.

# %%
# 4. A reduction to profile: row mean, in Triton and in CUDA C++
# --------------------------------------------------------------
#
# To compare tools and languages on one kernel, take the simplest reduction: the
# mean of each row, :func:`gpuperf.kernels.row_mean`. Each program owns a few
# rows and walks them in chunks, adding each chunk into a float32 tile of
# partial sums, then reduces the tile along the row once:
#
# .. literalinclude:: ../../src/gpuperf/kernels/row_mean.py
#    :pyobject: _row_mean_kernel
#
# It is checked here, in this build, against the float64 reference (through
# Triton's interpreter when there is no GPU):

import torch

from gpuperf.kernels import row_mean
from gpuperf.pages.report import can_measure
from gpuperf.reference import row_mean_ref
from gpuperf.testing import assert_close

device = "cuda" if can_measure() else "cpu"
cases = {
    "one element": torch.randn(1, device=device),
    "5 x 1000": torch.randn(5, 1000, device=device) + 1,
    "2 x 3 x 129": torch.randn(2, 3, 129, device=device) - 2,
    "transposed 90 x 6": torch.randn(6, 90, device=device).t(),
}
for name, x in cases.items():
    assert_close(f"row_mean {name}", row_mean_ref(x), row_mean(x))
print(f"row_mean matches the float64 reference on {device} for: {', '.join(cases)}")

# %%
# The same op in CUDA C++, the way one writes it by hand: a block of 256
# threads per row, each thread summing a strided slice (neighbouring threads
# read neighbouring elements, so the loads coalesce), a warp-shuffle reduction
# in each warp, and one more across the warps through shared memory:
#
# .. literalinclude:: ../../src/gpuperf/kernels/row_mean_cuda.py
#    :language: cuda
#    :start-after: CUDA_SOURCE = r"""
#    :end-before: """.replace
#
# ``torch.utils.cpp_extension.load_inline`` writes the source to a folder,
# generates the Python binding for the functions named, compiles both with
# ``nvcc`` and ``ninja`` and imports the module
# (:func:`gpuperf.kernels.row_mean_cuda.extension`):
#
# .. literalinclude:: ../../src/gpuperf/kernels/row_mean_cuda.py
#    :pyobject: extension

from gpuperf.kernels.row_mean_cuda import can_build

why_not = can_build()
print(
    "the CUDA extension can be built here"
    if why_not is None
    else f"not built here: {why_not}"
)
ext_cap, ext_notes = show("cuda_extension")
if ext_cap:
    p = ext_cap["payload"]
    worst = {}
    for check in p["checks"]:
        worst[check["dtype"]] = max(
            worst.get(check["dtype"], 0.0), check["max_abs_err"]
        )
    print(
        f"on the GPU run: built in {p['build_s']:.0f} s ({p['nvcc'][0]}, TORCH_CUDA_ARCH_LIST="
        f"{p['torch_cuda_arch_list']}); a new process loaded the cached build in {p['cached_load_s']:.1f} s"
    )
    print(
        f"{len(p['checks'])} outputs matched the float64 reference; largest absolute error per dtype: "
        + ", ".join(f"{dtype} {err:.1e}" for dtype, err in worst.items())
    )

# %%
# The build takes tens of seconds, once: PyTorch caches it under
# ``~/.cache/torch_extensions`` and rebuilds only when the source or the flags
# change. Set ``TORCH_CUDA_ARCH_LIST`` (``"9.0"`` for an H100) to build for
# your GPU alone.
#
# The three versions on 4096 rows of growing length, against the measured copy
# bandwidth (the row mean reads each element once and writes one value per row,
# so it is memory-bound at every size):

from gpuperf.bench.catalog import ROW_MEAN

means = run_or_load(ROW_MEAN)
print(means.table())
means.plot()

# %%

names = {"triton": "Triton", "cuda": "CUDA C++", "torch": "x.mean"}
rates = {key: means.values(key) for key in names}
frac = means.fraction_of_ceiling()
if frac:
    print(
        "Triton, % of copy bandwidth: "
        + ", ".join(f"{x}: {100 * f:.0f}%" for x, f in frac.items())
    )
    for x in rates["triton"]:
        ranked = sorted((k for k in names if x in rates[k]), key=lambda k: -rates[k][x])
        print(
            f"{x} columns: "
            + " > ".join(f"{names[k]} {rates[k][x]:,.0f} GB/s" for k in ranked)
        )

# %%
# No version wins everywhere, and the reasons are in the code. The CUDA kernel
# gives each row a block of 256 threads: on short rows most threads add one or
# two elements and the block's fixed costs (the shuffles, the barrier, a block
# per row to schedule) dominate. The Triton kernel packs several short rows into
# one program instead. On long rows all three stream close to the copy
# bandwidth, since a memory-bound op needs only to read every byte once with
# coalesced loads and keep enough of them in flight. The counters in the next
# section show the difference at 4096 columns.

# %%
# 5. Nsight Compute: *why* is it slow?
# ------------------------------------
#
# ``ncu`` replays a kernel many times, reading a few of the GPU's hardware
# counters each time, and reports them as *sections*: speed of light (how close
# to the peak of memory and compute the kernel ran), launch statistics, occupancy,
# memory workload. The capture profiled one launch each of our softmax, both row
# means and PyTorch's, our bf16 matmul and cuBLAS's on 4096 x 4096 inputs:

ncu_cap, ncu_notes = show("ncu_kernels")
if ncu_cap:
    print(profiling.ncu_table(ncu_cap, notes=ncu_notes))

# %%
# How to read it, counter by counter:
#
# * **DRAM throughput, % of peak**: near the top (75-90% is what a streaming
#   kernel reaches) means memory-bound and close to done; low with a low compute
#   throughput too means neither unit is busy: latency-bound (too little work in
#   flight) or launch-bound.
# * **Compute (SM) throughput** and **tensor pipe**: for a matmul, how busy the
#   tensor cores are. Hopper's ``wgmma`` instructions are counted separately; a
#   matmul without them runs on the older, slower ``mma`` path.
# * **DRAM read / written**: the bytes that reached memory. Compare with what the
#   op must move (here 64 MiB of input): more means re-reads. A write can still
#   be in L2 when the kernel ends, so *written* can come out below the output's
#   size.
# * **Occupancy**: warps resident per SM, as a share of the most it can hold.
#   *Theoretical* is set by registers, shared memory and block size; *achieved*
#   by what really ran. Low occupancy matters when nothing else hides latency.
# * **Registers per thread** and **local-memory (spill) requests**: a kernel that
#   needs more registers than it may have spills to local memory, which is slow;
#   zero here.
# * **Waves per SM**: blocks over what the GPU holds at once. Below 1, some SMs
#   have nothing to do.

if ncu_cap:
    ours = profiling.ncu_launch(ncu_cap, "row_mean (Triton)")
    cuda = profiling.ncu_launch(ncu_cap, "row_mean (CUDA C++)")
    torch_mean = profiling.ncu_launch(ncu_cap, "x.mean(dim=-1) (PyTorch)")
    mm, cublas = (
        profiling.ncu_launch(ncu_cap, op) for op in ncu_cap["payload"]["ops"][-2:]
    )
    v = profiling.ncu_value
    print(
        f"row mean: Triton {v(ours, 'DRAM Throughput'):.0f}% of DRAM peak at "
        f"{v(ours, 'Achieved Occupancy'):.0f}% occupancy "
        f"({v(ours, 'Registers Per Thread'):.0f} registers a thread), CUDA C++ "
        f"{v(cuda, 'DRAM Throughput'):.0f}% at {v(cuda, 'Achieved Occupancy'):.0f}%, PyTorch "
        f"{v(torch_mean, 'DRAM Throughput'):.0f}% with {v(torch_mean, 'Grid Size'):.0f} blocks "
        f"({v(torch_mean, 'Waves Per SM'):.2f} waves)"
    )
    tensor = "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"
    print(
        f"matmul bf16 4096^3: Triton {v(mm, 'Duration', 1e-3):.0f} us, tensor pipe {v(mm, tensor):.0f}% "
        f"busy; cuBLAS {v(cublas, 'Duration', 1e-3):.0f} us, {v(cublas, tensor):.0f}%"
    )

# %%
# **Reading it.** The three row means read the 64 MiB input once (DRAM read
# matches it) and write almost nothing, so the differences are in how fast the
# reads stream. PyTorch's mean launches few, large blocks, less than one wave:
# some SMs get no block, and its DRAM throughput is the lowest. Our Triton row
# mean streams a little below the CUDA one, at lower occupancy: its registers
# (a 4096-element float32 tile of partial sums per program) cap how many
# programs fit on an SM. A smaller tile would raise the occupancy, and ncu
# would tell whether that pays. For the matmuls the question is the tensor
# pipe's activity, and the gap between ours and cuBLAS is the one tutorial 03
# measures.
#
# Registers and spills need no profiler: Triton's compiler reports them. Launching a
# ``@triton.jit`` kernel returns the compiled kernel, whose ``n_regs`` and
# ``n_spills`` are per thread (``metadata.shared``: shared memory per program, in
# bytes). The capture kept them for the two Triton kernels above:

if ncu_cap:
    for k in ncu_cap["payload"].get("triton_compiler", []):
        if "error" not in k:
            print(
                f"{k['kernel']} (BLOCK_M={k['block_m']}, BLOCK_N={k['block_n']}, "
                f"num_warps={k['num_warps']}): {k['registers']} registers, {k['spills']} spills, "
                f"{k['shared_bytes']} bytes of shared memory"
            )

# %%
# **Running it yourself.** ``ncu`` replays each profiled kernel, so keep the
# program short and name what to profile. The command the capture ran:

if ncu_cap:
    print(ncu_cap["tool"] + " python scripts/profile_capture.py --part ncu-inner")
    dropped = ncu_cap["payload"]["dropped_metrics"]
    if dropped:
        print(f"counters this ncu did not know (left out): {', '.join(dropped)}")

# %%
# ``--profile-from-start off`` profiles only between ``torch.cuda.profiler.start()``
# and ``stop()`` (the script warms every op up before starting, so no compilation
# or first-call work is profiled); ``--section`` picks the report's sections and
# ``--metrics`` adds raw counters (``ncu --query-metrics`` lists them);
# ``--clock-control none`` leaves the GPU's clocks as they are, as every other
# measurement here does (ncu locks them to base clock by default). ``-k regex:NAME``
# profiles only kernels whose name matches, ``-c N`` stops after N launches,
# ``--set full`` collects everything (slow), and ``-o report`` writes a file to
# open in the Nsight Compute GUI. Reading the counters needs permission: run as
# root or enable profiling for users (NVIDIA's ``ERR_NVGPUCTRPERM`` page says how).

# %%
# 6. Triton's own profiler: proton
# --------------------------------
#
# ``triton.profiler`` (proton) ships with Triton. It records every kernel launch
# through CUPTI, as ``torch.profiler`` does, into a tree of *scopes* that you
# open around regions of code, and with ``hook="triton"`` it names Triton
# kernels and can read their ``launch_metadata`` (FLOPs and bytes, if a kernel
# declares them). The capture ran it in a process of its own (two profilers
# cannot hold CUPTI at once):
#
# .. literalinclude:: ../../scripts/profile_capture.py
#    :pyobject: part_proton

proton_cap, proton_notes = show("proton")
if proton_cap:
    p = proton_cap["payload"]
    if p.get("ok"):
        print(profiling.proton_table(proton_cap, notes=proton_notes))
    else:
        print(f"proton did not run on the GPU machine: {p.get('error')}")
        print(p.get("traceback", "")[-1500:])

# %%
# While a launch hook is installed, :class:`~gpuperf.kernels._launch.Launcher`
# hands every launch to ``kernel[grid]`` so that the hook sees it; the times
# are the kernels' own, from CUPTI. proton's text viewer,
# ``proton-viewer -m time/us profile.hatchet``, draws the tree; it needs the
# ``llnl-hatchet`` package, which the GPU image lacks:

if proton_cap and proton_cap["payload"].get("viewer"):
    viewer = proton_cap["payload"]["viewer"]
    print(
        f"python -m triton.profiler.viewer exited with status {viewer['returncode']}:"
    )
    print(viewer["stdout"] or viewer["stderr"].strip().splitlines()[-1])

# %%
# The tree is plain JSON, though, and the table above was read from it directly.
#
# What to take away
# -----------------
#
# * Time the kernel with events around many runs (``do_bench``, CUDA graphs),
#   never with a host clock alone, never the first call; and measure the host's
#   cost per call on its own, because below a few tens of microseconds of GPU
#   work it, not the kernel, sets the pace.
# * Profile a warmed-up step with ``torch.profiler``: the table says where the
#   time goes, the trace says whether the GPU was ever idle.
# * Ask ``ncu`` why a kernel is slow: how close to the memory or compute peak it
#   ran, how much it really moved, and what limited its occupancy.
