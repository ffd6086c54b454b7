"""
Benchmarking your own kernel: honest numbers in five steps
==========================================================

You wrote a kernel and want to know how fast it is. The honest answer is a GPU time
from many runs, each starting from a cold :term:`L2`, reported as a median with its
spread, turned into :term:`GB/s` or :term:`TFLOP/s`, and read against what the
hardware can do: for a :term:`memory-bound` kernel, the measured :term:`stream
bandwidth`, the fastest rate the memory was shown to stream. This guide takes one small
kernel through every step.

**What you will learn**

* what :term:`do_bench` does (warm-up, repetitions, the L2 flush between runs) and
  what it returns (quantiles, ``return_mode``);
* how to time with CUDA events yourself, and why one launch timed alone measures the
  launch more than the kernel;
* what timing inside a :term:`CUDA graph` removes (the host's cost of launching), and
  when that is the number you want;
* how to declare your kernel as a :class:`~gpuperf.bench.catalog.Benchmark` (providers,
  bytes, FLOPs, a ceiling) and get its table and its plot against the memory roof;
* how ``@triton.autotune`` picks a :term:`config <autotune config>`, what
  ``TRITON_PRINT_AUTOTUNING=1`` prints, and why its choices belong in a cache or in
  your code as data.

Everything a GPU had to measure comes from a committed record or capture, with where
and when it was measured; on a GPU the benchmark measures live. The answer first:
"""

from gpuperf.pages import benchmarking as page

print(page.in_one_paragraph())

# %%
# The kernel
# ----------
#
# A kernel a reader might write: ``y = x * scale + shift``, with one ``scale`` and one
# ``shift`` per column broadcast over the rows (the affine map at the end of
# LayerNorm, or a BatchNorm folded for inference). In eager PyTorch it is two
# kernels, the product written to memory and read back by the addition; one Triton
# kernel reads ``x`` once and writes ``y`` once. Each :term:`program` owns a
# :term:`tile` of ``BLOCK_M`` rows by ``BLOCK_N`` columns and loads its columns of
# ``scale`` and ``shift`` once for all its rows:
#
# .. literalinclude:: ../../src/gpuperf/kernels/scale_shift.py
#    :pyobject: _scale_shift_kernel
#
# The public function checks its inputs, so a wrong call fails with a message rather
# than a wrong answer or a crash, and launches a 2-D grid of tiles:
#
# .. literalinclude:: ../../src/gpuperf/kernels/scale_shift.py
#    :pyobject: scale_shift
#
# **Check before you time.** A fast wrong kernel is worth nothing, and a benchmark
# that only runs the sizes it times misses the partial tiles. Without a GPU this runs
# the very same kernel in Triton's :term:`interpreter`:

import torch
from gpuperf.kernels import scale_shift
from gpuperf.pages import can_measure
from gpuperf.reference import scale_shift_ref
from gpuperf.testing import assert_close

device = "cuda" if can_measure() else "cpu"
for rows, cols in [(1, 1), (9, 257), (33, 4096)]:
    x = torch.randn(rows, cols, device=device)
    scale, shift = torch.randn(cols, device=device), torch.randn(cols, device=device)
    y = scale_shift(x, scale, shift)
    assert_close(f"scale_shift {rows}x{cols}", scale_shift_ref(x, scale, shift), y)
print(f"scale_shift matches the float64 reference on {device}")

# %%
# **Count the bytes before timing anything.** The kernel must read ``x`` and write
# ``y`` (4 bytes each per element in float32) and read ``scale`` and ``shift`` once;
# its two FLOPs per element are nothing beside that. A floor on time takes the fastest
# rate the memory was shown to stream: the stream bandwidth, the fastest of a few
# streams with different mixes of reads and writes (a copy, an add, a multiply-add,
# reads alone), which the benchmark below is read against too. At it, the sizes
# benchmarked below cannot take less than:

from gpuperf.bench.catalog import SCALE_SHIFT
from gpuperf.pages import ceilings

gpu = ceilings()  # measured on the GPU this page describes
print(f"on the {gpu.name}, at the {gpu.memory_label}, {gpu.memory_gbps:.0f} GB/s:")
for rows in SCALE_SHIFT.x_values:
    moved = SCALE_SHIFT.bytes(rows)
    floor_us = moved / (gpu.memory_gbps * 1e9) * 1e6
    print(f"{rows:>6} rows: {moved / 1e6:7.1f} MB, at least {floor_us:7.1f} µs")

# %%
# .. _benchmark-do-bench:
#
# 1. ``triton.testing.do_bench``, with the L2 flush
# -------------------------------------------------
#
# This guide is where the three timers you will use on a kernel of your own are
# explained and called; the :ref:`profiling guide <profiling-timing>` sets every
# way of timing side by side on one op (host clocks, the first call, a loop),
# and says what each answers.
#
# ``do_bench(fn)`` calls ``fn`` once and waits (so a first, compiling call is never
# timed), then estimates one run, flush included, from five more calls. From that
# estimate it sizes the rest: ``warmup`` divided by it untimed calls (without flushes,
# so they take less than ``warmup`` milliseconds), then ``rep`` divided by it timed
# runs (for a call much shorter than the flush, most of those milliseconds are
# flushes). Before each timed run it writes zeros over a 256 MiB buffer: that evicts
# everything from L2 (|h100-l2| on an H100), so each run reads its inputs from
# :term:`HBM`, as it would in a model whose other layers have filled L2 with their own
# data. A pair of CUDA events brackets each run. It returns the mean of the runs by
# default; ``quantiles`` asks for percentiles instead (then ``return_mode`` is
# ignored), and ``return_mode`` takes ``"min"``, ``"max"``, ``"median"`` or ``"all"``
# (every run's time):
#
# .. literalinclude:: ../../scripts/benchmark_guide_capture.py
#    :pyobject: do_bench_readings
#
# What it read on the kernel at three sizes (``no flush``: the same with the buffer
# shrunk to 4 bytes, so the runs can find their data in L2; zeroing those 4 bytes is
# a tiny kernel, over before the host has launched the next run):

from gpuperf.pages import captures

timing = captures.show("timing_scale_shift", page.do_bench_table)

# %%

print(page.flush_effect(timing))

# %%
# **Reading it.** Report the median with the 20th and 80th percentiles: a mean is pulled
# up by any slow run (a clock change, the host late with a launch), and a minimum is the
# luckiest run, which a real program rarely gets. The flush does two things. It evicts
# L2, which can only matter for an input that fits in L2 (the lines above say which do).
# And it keeps the GPU busy between runs: while the GPU clears the buffer, Python queues
# the next launch (the :ref:`profiling guide <profiling-timing>` measures it beside
# every other way of timing). Without it, a kernel shorter than a launch takes from
# Python finishes, the GPU idles until the next launch arrives, and the events bracket
# that wait: where the lines above say "slower without the flush", the unflushed median
# is the host's launch rate, not the kernel, and hides whatever L2 gains. An input far
# larger than L2 finds nothing there and outlasts any launch, so there the two agree.
# The smallest input moves so few bytes that its flushed time is mostly the fixed cost
# of any launch on the GPU (its :term:`launch latency`). The site's own timing
# (:func:`gpuperf.bench.timing.time_ms`) flushes 1 GiB and keeps the best of three
# rounds, for reasons the :ref:`profiling guide <profiling-timing>` measures.
#
# .. _benchmark-events:
#
# 2. CUDA events
# --------------
#
# ``do_bench`` is built on CUDA events, which you can use directly. An event is a
# marker in the GPU's stream of work: ``record()`` queues it, the GPU stamps the time
# when it reaches it, and ``elapsed_time`` gives the milliseconds between two stamps.
# The host must wait (``synchronize``) before reading them. Around one call:
#
# .. literalinclude:: ../../scripts/benchmark_guide_capture.py
#    :pyobject: one_call_ms
#
# and around many calls launched back to back:
#
# .. literalinclude:: ../../scripts/benchmark_guide_capture.py
#    :pyobject: many_calls_ms

print(page.events_table(timing))

# %%

print(page.launch_share(timing))

# %%
# **Reading it.** With the GPU idle, the start event is stamped as soon as it is queued;
# the GPU then waits while Python checks the arguments and launches the kernel, and that
# wait is timed with it. The shorter the kernel, the larger the share of a one-call
# reading that is the launch (the :term:`host overhead`), as the lines above show
# against ``do_bench``, whose flush hides the launch. (That share is a lower bound: one
# call after another finds an input that fits in L2 still there, while ``do_bench``
# reads it from HBM.) Back-to-back calls hide the launches behind the running kernels
# only when each kernel takes longer than a launch; where it does not, the loop runs at
# the host's pace, not the GPU's. So time many runs, never one, and leave the first
# (compiling) call out.
#
# .. _benchmark-cuda-graphs:
#
# 3. Timing inside a CUDA graph
# -----------------------------
#
# A CUDA graph records a sequence of launches once and replays it with one call: the
# host does no per-kernel work. ``do_bench_cudagraph(fn, rep=...)`` calls ``fn`` once,
# then times five calls launched back to back (no flush) to estimate one, and captures
# ``rep`` divided by that estimate calls, unrolled, in one graph. It replays the graph
# ten times, each replay bracketed by CUDA events and divided by the number of calls
# in it; its quantiles are those of the ten averages, a far narrower spread than
# ``do_bench``'s single runs. Two consequences. Where an eager call is launch-bound, the
# estimate is the launch's time, so the graph holds fewer calls than ``rep``
# milliseconds of GPU work would. And nothing is flushed between the calls, so an input
# that fits in L2 is read from L2:
#
# .. literalinclude:: ../../scripts/benchmark_guide_capture.py
#    :pyobject: cuda_graph_ms

print(page.graph_table(timing))

# %%

print(page.graph_gain(timing))

# %%
# **Reading it.** The graph removes the host's launch cost, and it does not flush L2
# between calls. So it is the GPU's time on warm caches, not the kernel's time on a cold
# input: where the input fits in L2 it can beat what HBM allows, as the lines above say
# where it does. It is the number to use when your kernel will itself run inside a graph
# (``torch.compile(mode="reduce-overhead")``, a serving engine's decode step) on data
# that stays in L2, or to see the GPU's time apart from the host's. It is not what a
# Python loop of eager calls gets: for small calls that loop is bound by the host, and
# making the kernel faster changes nothing there. On the largest input a launch is small
# beside the kernel and L2 holds little of it, so the ways of timing should agree there;
# the table says how closely they do.
#
# 4. Declaring your own benchmark
# -------------------------------
#
# One declaration says what to compare, on what, and how to read it: the providers
# (yours first), the sizes, an input generator (random data, never zeros, which run
# faster and hide bugs), a float64 reference every provider must match before it is
# timed, the bytes and FLOPs of one call (so the time becomes GB/s and the record can
# be placed on a :term:`roofline`), and the measured ceiling to read it against. The
# inputs:
#
# .. literalinclude:: ../../src/gpuperf/bench/catalog/memory_bound.py
#    :pyobject: _scale_shift_inputs
#
# and the declaration, in :mod:`gpuperf.bench.catalog` beside the site's others:
#
# .. literalinclude:: ../../src/gpuperf/bench/catalog/memory_bound.py
#    :start-at: SCALE_SHIFT = Benchmark(
#    :end-before: # (the guide on benchmarking
#
# The two baselines are eager PyTorch (the formula as written, two kernels) and
# :term:`torch.compile` of the same formula, which :term:`fuses <fusion>` it into one
# generated Triton kernel: the first thing your kernel must beat. With a GPU,
# ``show`` measures every provider at every size (each checked, then timed with the
# site's ``do_bench``) and draws the result; without one it draws the committed
# record. ``python -m gpuperf.bench scale_shift`` measures it and writes the record.

from gpuperf.pages import show

result = show(SCALE_SHIFT)

# %%

print(page.against_the_roof(result))

# %%
# **Reading it.** The plot's horizontal line is the measured stream bandwidth, named
# in its legend with the stream that set it: the fastest rate the memory was shown to
# stream, which a memory-bound kernel cannot beat by much, since it moves at least its
# bytes. This kernel reads one byte per byte it writes, as a copy does, so the copy's
# rate (the :term:`copy bandwidth`, measured in the same run, below the stream that
# set the roof; the last line above reads each version against it) is about the most
# it can expect. Small calls fall below it because a
# launch costs the same whatever it moves; in the shaded region the data fit in L2.
# Where the data are far larger than L2 (the sizes the lines above read against the
# roof), the share of the roof says whether anything is left to gain, more than a
# speed-up over eager PyTorch does: the eager formula moves twice the bytes (the
# product is written and read back), so a fused kernel should beat it whether or not
# it is any good. Where ``torch.compile``'s generated kernel comes closer to the roof
# than yours, the two compute the same thing with different code: how the work is
# split over programs (the tile, the warps), which section 5 lets the autotuner
# search, and how each program indexes and loads its data, which no tile changes.
# Section 5 measures how much of the gap the tiles close. Your own benchmark needs no
# catalog entry: declare a ``Benchmark`` in your script and pass it to
# :func:`gpuperf.pages.show` on a GPU.
#
# 5. ``@triton.autotune`` and ``TRITON_PRINT_AUTOTUNING``
# -------------------------------------------------------
#
# The tile (``BLOCK_M`` x ``BLOCK_N``) and :term:`num_warps` above were picked by hand.
# ``@triton.autotune`` times a list of configs on the first call and keeps the fastest.
# Decorating the kernel, as one writes ``@triton.autotune(...)`` above ``@triton.jit``:
#
# .. literalinclude:: ../../scripts/benchmark_guide_capture.py
#    :start-at: TILES = (
#    :end-before: #: Rows of the autotuned calls
#
# .. literalinclude:: ../../scripts/benchmark_guide_capture.py
#    :pyobject: autotuned_scale_shift
#
# The tile is no longer the caller's to choose, so the grid becomes a function of
# the config the autotuner picked (``meta``):
#
# .. literalinclude:: ../../scripts/benchmark_guide_capture.py
#    :pyobject: launch_tuned
#
# ``key=["n_rows", "n_cols"]`` says when to tune again: on the first call with values
# of those arguments not seen before (the dtype of every tensor argument joins the
# key too). With ``TRITON_PRINT_AUTOTUNING=1`` in the environment, Triton prints each
# config as it times it, then the key, the time the tuning took and the winner. Here
# is what it printed, and every config's time, from two tunings of each size:

autotune = captures.show("autotune_scale_shift", page.autotune_log)

# %%

print(page.autotune_findings(autotune))

# %%
#
# And the fastest tile against ``torch.compile``'s kernel of section 4:

print(page.tiles_against_compile(autotune, result))

# %%
# **Reading it.** The first call with a new key compiles and times every config, a
# cost paid again in every new process and for every new shape in the key (a
# server's first request of each length pays it); the lines above give that cost
# against a second call's. Configs whose times lie within the run-to-run spread of
# each other can swap places from one tuning to the next, so the winner is a sample,
# not a fact about the kernel. And each config runs the kernel many times, so
# a kernel that adds into its output needs ``reset_to_zero`` or ``restore_value``.
# Hence: keep the results. ``cache_results=True`` (or ``TRITON_CACHE_AUTOTUNING=1``)
# stores the timings in Triton's cache, keyed by the kernel's source, the configs, the
# GPU and Triton's version; or tune once, offline, and keep the winners as data in
# your code, as this site does (:doc:`tutorial 03 <../tutorials/03_matmul>` shows its
# sweep). Choose ``key`` with care: a key on a size that takes many values (the number
# of tokens) tunes again for each one, so round such sizes to a few buckets first.
#
# What to take away
# -----------------
#
# * Check the output against a reference at awkward sizes before timing anything.
# * Count the bytes and FLOPs of one call and compare the time with the floor the
#   measured stream bandwidth (or compute peak) sets: the fastest rate the memory
#   was shown to reach, not a copy's, which kernels that read more than they write
#   can pass.
# * Time many runs, not one, with ``do_bench``: L2 flushed, first call excluded,
#   median with the 20th and 80th percentiles. One call under CUDA events times
#   the launch.
# * Use ``do_bench_cudagraph`` when the kernel will run inside a graph, or to see the
#   GPU's time without the host's launches (on a warm L2, so not the time on a cold
#   input); measure the host's cost per call separately when calls are small.
# * Compare against ``torch.compile``, not only eager PyTorch, and read the result as a
#   share of the roof.
# * Autotune once and keep the choices (a cache or data in your code); key on few
#   distinct values.
