"""
Profiling: timing GPU code without fooling yourself, and finding out why it is slow
===================================================================================

**What you will learn**

* why a host clock without synchronizing measures nothing about the GPU, and
  what each other way of timing (``torch.cuda.synchronize``, CUDA events,
  :term:`do_bench` with and without its cache flush, :term:`CUDA graphs <CUDA graph>`)
  actually answers, on one op measured all those ways;
* how to tell a launch-bound call (the host sets the pace: :term:`host overhead`)
  from a GPU-bound one;
* how to read ``torch.profiler``'s tables and its Chrome/Perfetto trace for a
  real training step, and what the trace's timeline says at a glance;
* how to ask Nsight Compute (``ncu``) *why* a kernel is slow, and what Triton's
  own profiler (proton) gives;
* how to build a CUDA C++ kernel from Python with
  ``torch.utils.cpp_extension.load_inline`` and compare it with Triton and
  PyTorch on the same op, a row mean.

Every table, counter and trace below was measured on an H100 (by ``python
scripts/profile_capture.py``, ``python scripts/host_breakdown.py`` and the
benchmarks) and committed as *captures* or benchmark records: JSON files with their
provenance (GPU, driver, CUDA, torch, triton, gpuperf commit, date, method),
printed under each table. They come from several runs: compare numbers within one
table. This page reads them, so it builds on a
machine without a GPU and still shows real output.
:func:`gpuperf.pages.captures.show` prints each GPU's capture through a function
of :mod:`gpuperf.pages.profiling`, then where and when it was taken, and a note
when it is missing or its sources have changed since. The headline numbers
first:
"""

from gpuperf.pages import captures, profiling

print(profiling.in_one_paragraph())

# %%
# .. _profiling-timing:
#
# 1. Timing without fooling yourself
# ----------------------------------
#
# A CUDA call from Python returns as soon as the work is *queued*: the GPU runs
# it later, while the host moves on. So the time a Python line takes and the
# time its kernel takes are different quantities, and each way of timing below
# answers a different question. This section sets them side by side on one op,
# and says why the flush between runs matters beyond L2; how to call the three
# you will use on a kernel of your own (``do_bench``, CUDA events, CUDA graphs),
# and what each does step by step, is the :ref:`benchmarking guide
# <benchmark-do-bench>`'s subject. The capture times our fused softmax
# (:func:`gpuperf.kernels.softmax`, tutorial 02) each way, on a large input,
# larger than the L2, and on a tiny one (each table's title gives its shape).
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
#     Timestamps the GPU itself writes before and after the work
#     (:ref:`how to use them <benchmark-events>`). Closer, but when the host is
#     slower than the kernel the first event fires and the GPU then *waits for
#     the launch*, and that wait is timed.
# ``loop``
#     Many calls back to back, one synchronize at the end: the rate a real
#     program gets, which is the slower of the host and the GPU.
# ``do_bench``
#     Triton's benchmark helper: CUDA events around each of many runs, with
#     256 MiB written between runs to flush the |h100-l2| :term:`L2`; asked here
#     for the median of the runs (its default is the mean; its steps and
#     arguments: the :ref:`benchmarking guide <benchmark-do-bench>`).
# ``do_bench without the L2 flush``
#     The same with the flush removed (the buffer shrunk to 4 bytes).
# ``do_bench_cudagraph``
#     The calls captured once in a CUDA graph and replayed: launches cost
#     (almost) nothing, so this is the kernel alone, with L2 as the previous
#     run left it (:ref:`when that is the number you want <benchmark-cuda-graphs>`).
# ``gpuperf.bench.timing.time_ms``
#     What every record on this site uses (see :doc:`../measuring`):
#     ``do_bench`` with a 1 GiB flush, best of three rounds.

timing = captures.show("timing_methods", profiling.timing_methods_table)

# %%
# How far apart the answers are, from the table above:

for capture in timing.values():
    print(profiling.timing_gaps(capture))

# %%
# **Reading it.** On the large input the methods that time many runs agree
# closely (``do_bench`` with or without its flush, the CUDA graph, ``time_ms``,
# the loop): the kernel runs far longer than a launch takes, so the host keeps
# ahead. The single-call methods add the launch and the wait for it, and the
# unsynchronized host clock reports a fraction of the kernel: the launch only.
# The flush changes nothing there, because the input does not fit in L2
# anyway.
#
# On the tiny input the methods spread over an order of magnitude, and the
# reason is the host. The kernel itself takes only the CUDA-graph time. A
# Python launch (its :term:`launch latency`) takes longer, so whenever runs are
# launched back to back the GPU finishes each one and then waits for the next:
# single-call events, synchronized host clocks and ``do_bench`` *without* its
# flush all time the host's path between their two readings (the launch, and
# the recording of the events themselves), not the kernel.
# With the flush, the time the GPU spends clearing the buffer gives the host
# time to queue the next launch, so the events bracket the kernel (plus its
# ramp-up on a cold cache). This is why the site's
# :func:`~gpuperf.bench.timing.time_ms` clears 1 GiB rather than 256 MiB
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
# therefore runs at the slower of the two. A call is *launch-bound* when a
# back-to-back loop of it runs at the host's pace, each call taking about the
# :term:`host time per call` (the :term:`host overhead`) while the GPU idles
# between kernels; it is *GPU-bound* when the loop runs at the GPU's pace, slower
# than the host issues the calls. The capture measures the softmax over a growing
# number of rows of one length (the table's first column gives each input):
# host time per call with the GPU kept busy
# (:func:`~gpuperf.bench.timing.host_time_ms`), GPU time
# (:func:`~gpuperf.bench.timing.time_ms`), and the loop. Three callers: our
# wrapper with its cached launch, the same wrapper launching through Triton's
# ``kernel[grid](...)`` (the same kernel, so its GPU time is not measured
# again), and ``torch.softmax``. Which one sets the pace is read
# from the loop, not from the GPU time: ``time_ms`` flushes the L2 before each
# call, while in the loop an input that fits in the L2 stays there, so the kernel
# runs faster than that column says. The figure draws the host's time and the
# loop's; the table adds the GPU time.

launch = captures.show("launch_bound", profiling.plot_launch_bound)

# %%

for capture in launch.values():
    print(profiling.launch_bound_table(capture))

# %%
# Where the GPU takes over, and what the launch path costs. The crossover is the
# first size from which the loop takes a clear multiple of the host's time per
# call (the rule is printed first): the host then waits for the GPU for much of
# every call. A smaller margin could be noise: the host clock and the loop are
# measured apart, and they differ even at the smallest sizes, where the GPU idles.

for capture in launch.values():
    print(profiling.crossovers(capture))

# %%
# Well below the crossover the loop runs at the host's pace: making the kernel
# faster would change nothing, while every microsecond of Python per call
# counts. From the crossover on, the host's cost hides behind the GPU's; near it,
# both count. The slower the launch path, the more work a call needs before the
# GPU sets the pace. The rule's margin is a safe reading, not the exact switch:
# ``kernel[grid]`` runs the cached launch's kernel, so where its loop takes as
# long as the cached launch's GPU-bound loop, the GPU already sets its pace
# too, though the loop is within the margin of its slower host (the lines above
# say where that happens).
#
# **A worked example: our wrappers' host time.** This is how the wrappers got
# their launch path. Measured first, our softmax wrapper spent several times
# ``torch.softmax``'s host time per call. A profile of the call in Python
# (``cProfile``, then reading Triton's launcher) showed where the time went:
# computing the grid with ``triton.cdiv`` and ``triton.next_power_of_2``
# (constexpr-function wrappers, a few microseconds each; replaced by plain
# Python, :mod:`gpuperf.kernels._grid`), and ``kernel[grid](...)`` itself,
# which binds the arguments, recomputes Triton's specialization key and looks
# the binary up on every call. :class:`gpuperf.kernels.launch.Launcher` keeps
# the compiled binaries by exactly that key, computed in a few lines, and
# calls Triton's C launcher directly; each op then keeps a *plan* per input
# layout (shape, strides, dtype, device, 16-byte alignment) and skips its checks
# for inputs like ones already seen. Every op gets its plans from the decorator
# :func:`gpuperf.kernels.launch.op` (tutorial 02 shows softmax written for it):
# the matmuls, attention and the other ops with a backward, an optional tensor or
# tensor descriptors, and the Gluon kernels, all over the same ``Launcher``.
# The host-time benchmark keeps the before and the after
# in the same record: ``triton_jit`` is the same wrapper launching through
# ``kernel[grid]``, the path before the change; ``triton`` is the wrapper with its
# cached launch and ``torch`` the PyTorch op. The table's last column divides
# PyTorch's time by ours (below 1x, ours takes longer), the other way round from
# the target table further down.

from gpuperf.bench.catalog import HOST_OVERHEAD
from gpuperf.pages import show

host = show(HOST_OVERHEAD)

# %%

print(profiling.host_time_per_call(host))

# %%
# The ops a model calls in a loop have a target: a ceiling on their host time as
# a multiple of the host time of the PyTorch op a user would call instead (the
# table's target column), so that a :term:`decode` step or a
# short prompt built of these kernels is not host-bound where PyTorch's is not.
# ``attention_train`` is one training step's attention, forward and backward,
# against :term:`SDPA`'s. Host times on a shared virtual machine move by tens of
# percent from run to run, and even a ratio moves between runs: compare times
# only within one run, and read a ratio near its target as too close to call:

from gpuperf.pages.host import targets_reading, targets_table

print(targets_table(host))
print(targets_reading(host))

# %%
# Every op here launches from a *plan* for inputs like ones already checked: a
# repeat call skips the checks and the launch configuration, and pays for the
# call's key, the output's allocation and the launch itself. A call that
# autograd records (grad mode on, an input that requires grad) pays more: it
# reaches its plan through a ``torch.autograd.Function``, which keeps what the
# backward needs, and the backward's own launches come on top. Where the training
# step's microseconds go, each part timed alone with the same timer, in a run of
# its own:

from gpuperf.pages.host import show_training_step

show_training_step(host)

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
# Two steps are profiled after three warm-up steps (:term:`cuBLAS` handles, the
# optimizer's state and the allocator's cache are made during the first ones,
# and would otherwise dominate), with CUDA activity, input shapes and memory:
#
# .. literalinclude:: ../../scripts/profile_capture.py
#    :pyobject: profile_steps
#
# ``prof.key_averages().table(sort_by="cuda_time_total", row_limit=15)`` printed
# this on the H100:

prof = captures.show("torch_profiler", profiling.profiler_table)

# %%
# The same numbers as a sortable table (click a column header), the rows with the
# most CUDA time first:

for capture in prof.values():
    print(profiling.key_averages_table(capture))

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

for capture in prof.values():
    print(profiling.step_facts(capture))

# %%
# The trace: download it and open it in Perfetto
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
#
# ``prof.export_chrome_trace("trace.json")`` writes every event with its start
# and duration. The one from this run is committed, gzipped:
# :download:`the trace
# </../src/gpuperf/measurements/\
# nvidia-h100-80gb-hbm3/captures/torch_profiler_trace.json.gz>`.
# Open https://ui.perfetto.dev in a browser, choose *Open trace file* and pick the
# downloaded file (Perfetto reads it gzipped, and the file never leaves your
# machine; ``chrome://tracing`` in Chrome works too). Press ``W``/``S`` to zoom
# and ``A``/``D`` to pan. The CPU threads sit on top (the main thread with its
# ``step``, ``forward`` and ``optimizer`` ranges, and autograd's thread for the
# backward pass), the GPU's stream below; arrows join each ``cudaLaunchKernel``
# to the kernel it queued.

for capture in prof.values():
    print(profiling.trace_size(capture))

# %%
# One picture says what the tables cannot: *when* the GPU was busy. Here the
# trace's last step is drawn from its events (the CPU ranges, the CUDA runtime
# calls, and the GPU's kernels coloured by the phase that launched them):

for capture in prof.values():
    print(profiling.timeline(capture))

# %%
# **Reading it.** The GPU's lane is mostly empty: each kernel finishes long
# before the host has queued the next, so this step, at this size, is bound by
# the host (Python, autograd, the optimizer's bookkeeping and, while profiling,
# the profiler itself), not by the GPU. The tables alone never said so. The cures
# are the ones of section 2 at the scale of a model: more work per launch (a
# larger batch), fewer launches (:term:`torch.compile` fuses the elementwise ops;
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
# mean of each row, :func:`gpuperf.kernels.row_mean`. Each :term:`program` owns a
# few rows and walks them in chunks, adding each chunk into a float32
# :term:`tile` of partial sums, then reduces the tile along the row once:
#
# .. literalinclude:: ../../src/gpuperf/kernels/row_mean.py
#    :pyobject: _row_mean_kernel
#
# It is checked here, in this build, against the float64 reference (through
# Triton's :term:`interpreter` when there is no GPU):

import torch
from gpuperf.kernels import row_mean
from gpuperf.pages import can_measure
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
    print(f"row_mean, {name}: matches the float64 reference on {device}")

# %%
# The same op in CUDA C++, the way one writes it by hand: a :term:`block` of 256
# threads per row, each thread summing a strided slice (neighbouring threads
# read neighbouring elements, so the loads :term:`coalesce <coalescing>`), a
# warp-shuffle reduction in each :term:`warp`, and one more across the warps
# through :term:`shared memory`:
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
print("the CUDA extension builds here" if why_not is None else f"not here: {why_not}")
extension = captures.show("cuda_extension", profiling.extension_summary)

# %%
# The build takes a while (the time above), once: PyTorch caches it in
# ``$TORCH_EXTENSIONS_DIR`` (``~/.cache/torch_extensions`` unless set; a docs
# build sets it to ``~/.cache/gpuperf/torch_extensions``) and rebuilds only when
# the source or the flags change. Set ``TORCH_CUDA_ARCH_LIST`` (``"9.0"`` for
# an H100) to build for your GPU alone.
#
# The three versions on 4096 rows of growing length, against the measured
# :term:`stream bandwidth`, the fastest rate the memory was shown to stream (the
# row mean reads each element once and writes one value per row, so it is
# :term:`memory-bound` at every size, and reads far more than it writes, a mix a
# plain copy does not measure):

from gpuperf.bench.catalog import ROW_MEAN

means = show(ROW_MEAN)

# %%

print(profiling.row_mean_ranking(means))

# %%
# No version wins everywhere, and the reasons are in the code. The CUDA kernel
# gives each row a block of 256 threads: on short rows most threads add one or
# two elements and the block's fixed costs (the shuffles, the barrier, a block
# per row to schedule) dominate. The Triton kernel packs several short rows into
# one program instead. On long rows all three stream close to the stream
# bandwidth, since a memory-bound op needs only to read every byte once with
# coalesced loads and keep enough of them in flight. The next section asks ncu
# about all three at 4096 columns.

# %%
# 5. Nsight Compute: *why* is it slow?
# ------------------------------------
#
# ``ncu`` replays a kernel many times, reading a few of the GPU's hardware
# counters each time, and reports them as *sections*: speed of light (how close
# to the peak of memory and compute the kernel ran), launch statistics, occupancy,
# memory workload. The capture profiled one launch each of our softmax, both row
# means and PyTorch's, our bf16 matmul and cuBLAS's on 4096 x 4096 inputs:

ncu = captures.show("ncu_kernels", profiling.ncu_table)

# %%
# How to read it, counter by counter:
#
# * **DRAM throughput, % of peak** (:term:`DRAM`: the GPU's memory): near the top
#   (the streaming kernels in the table show how near one comes) means memory-bound
#   and close to done;
#   low with a low compute throughput too means neither unit is busy: latency-bound (too
#   little work in flight) or launch-bound.
# * **Compute (SM) throughput** and **tensor pipe**: for a matmul, how busy the
#   :term:`tensor cores <tensor core>` are. Hopper's :term:`wgmma` instructions are
#   counted separately; a matmul without them runs on the older, slower ``mma`` path.
# * **DRAM read / written**: the bytes that reached memory. Compare with what the op
#   must move (here 64 MiB of input): more means re-reads. A write can still be in L2
#   when the kernel ends, so *written* can come out below the output's size.
# * **Occupancy** (:term:`occupancy`): warps resident per :term:`SM`, as a share of the
#   most it can hold. *Theoretical* is set by :term:`registers`, shared memory and block
#   size; *achieved* by what really ran. Low occupancy matters when nothing else hides
#   latency.
# * **Registers per thread** and **local-memory (spill) requests**: a kernel that needs
#   more registers than it may have :term:`spills <spill>` to local memory, which is
#   slow.
# * **Waves per SM** (:term:`wave`): blocks over what the GPU holds at once (the SMs
#   times the blocks each can hold). Below 1, the grid does not fill the GPU: the
#   SMs hold fewer blocks, so fewer warps, than they could, and occupancy is low
#   whatever its theoretical value. Only when there are fewer blocks than SMs do
#   some SMs get none.

for capture in ncu.values():
    print(profiling.ncu_findings(capture))

# %%
# **Reading it.** The three row means read the 64 MiB input once (DRAM read
# matches it) and write almost nothing, so the differences are in how fast the
# reads stream. PyTorch's mean launches few, large blocks, less than one wave: its
# blocks spread over the SMs as the line above says, each SM holding fewer than it
# could, so its achieved occupancy is low, fewer loads are in flight to hide
# DRAM's latency, and its DRAM throughput is the lowest. Under ncu our Triton row
# mean streams as fast as the CUDA one (the line above) at lower occupancy: its
# registers (a 4096-element float32 tile of partial sums per program) cap how
# many programs fit on an SM. A smaller tile would raise the occupancy, and ncu
# would tell whether that pays. For the matmuls the question is the tensor pipe's
# activity, and the gap between ours and cuBLAS is the one tutorial 03 measures.
#
# Registers and spills need no profiler: Triton's compiler reports them. Launching a
# ``@triton.jit`` kernel returns the compiled kernel, whose ``n_regs`` and
# ``n_spills`` are per thread (``metadata.shared``: shared memory per program, in
# bytes). The capture kept them for the two Triton kernels above:

for capture in ncu.values():
    print(profiling.compiler_stats(capture))

# %%
# **Running it yourself.** ``ncu`` replays each profiled kernel, so keep the
# program short and name what to profile. The command the capture ran:

for capture in ncu.values():
    print(profiling.ncu_command(capture))

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

proton = captures.show("proton", profiling.proton_report)

# %%
# While a launch hook is installed, the plans are off and
# :class:`~gpuperf.kernels.launch.Launcher` hands every launch to
# ``kernel[grid]``, so that the hook sees it; the times are the kernels' own,
# from CUPTI. proton's text viewer,
# ``proton-viewer -m time/us profile.hatchet`` (it needs the ``llnl-hatchet``
# package, ``pip install llnl-hatchet``), draws the same tree, each kernel's
# microseconds summed over its calls in the scope:

for capture in proton.values():
    print(profiling.proton_viewer(capture))

# %%
# The tree is plain JSON: the table above was read from it directly, without the
# viewer.
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
# * Compare a kernel with the alternatives on the same op and sizes (PyTorch's op, a
#   CUDA C++ version built with ``load_inline``): writing it by hand is no promise of
#   speed, and the counters say why one version wins where it does.
