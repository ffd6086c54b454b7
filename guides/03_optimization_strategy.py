"""
Optimization strategy: ten steps, each measured
===============================================

**What you will learn**

* a method for making GPU code faster: measure, classify with the :term:`roofline`,
  then fuse, tile, fix the access pattern, use the :term:`tensor cores <tensor
  core>`, tune, and stop when the roof is reached;
* for each step, the measurement on this site that shows what it is worth,
  drawn from the tutorials' committed records rather than claimed;
* two fusion case studies (GELU, and add → ReLU → multiply): the eager formula,
  PyTorch's op, :term:`torch.compile` and one Triton kernel, with the bytes each
  moves;
* what ``torch.compile``'s modes cost and buy, how a :term:`graph break` and a
  recompilation show up, how each is removed, and the Triton code
  :term:`Inductor` writes;
* what uncoalesced access costs, measured.

Every number below is printed by code from a committed record or capture (its
GPU, software and commit named under it) or computed while this page was built.
"""

import torch
from gpuperf.bench import catalog as cat
from gpuperf.pages import captures, ceilings, hardware, run_or_load, show
from gpuperf.pages import strategy as page

print(page.in_one_paragraph())

# %%
# The method
# ----------
#
# 1. :ref:`Measure first <strategy-measure>`: find where the time goes before
#    changing anything.
# 2. :ref:`Classify with the roofline <strategy-classify>`: is the kernel bound by
#    memory or by arithmetic?
# 3. :ref:`Fuse <strategy-fuse>`: a memory-bound chain of operations should touch
#    memory once.
# 4. :ref:`Tile and reuse on chip <strategy-tile>`: a compute-bound kernel must
#    reuse what it loads.
# 5. :ref:`Coalesce <strategy-coalesce>`: neighbouring threads should read
#    neighbouring bytes.
# 6. :ref:`Tensor cores and precision <strategy-precision>`: the fastest units take
#    low precision.
# 7. :ref:`Occupancy, warps and stages <strategy-occupancy>`: enough work in
#    flight to hide latency.
# 8. :ref:`Autotune <strategy-autotune>`: the best configuration depends on the
#    shape and the GPU.
# 9. :ref:`Persistent kernels and TMA <strategy-persistent>`: on Hopper, fewer
#    program start-ups (one program per SM loops over the tiles; both grids are
#    one launch) and cheaper loads.
# 10. :ref:`Know when to stop <strategy-stop>`: at the roof, only moving less work
#     helps.
#
# Steps 1, 2 and 10 are the frame: the others are the moves, roughly in the
# order of what they are worth. The case studies on :ref:`torch.compile
# <strategy-compile>` show the same moves made by a compiler. A
# :ref:`checklist <strategy-checklist>` at the end links each step to its
# evidence. Everything below reads the same records as the tutorials, for every
# GPU that has them; the first is the reference GPU, or the GPU this page was
# built on.

# %%
# .. _strategy-measure:
#
# Step 1: measure first
# ---------------------
#
# Before changing code, find out what runs. The :ref:`profiling guide
# <sphx_glr_guides_01_profiling.py>` shows the tools; the smallest question they
# answer is *how many kernels does one call launch?* Here is the answer for GELU
# (the tanh approximation, ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x³)))``)
# written four ways, from ``torch.profiler`` on the GPU: the formula in eager
# PyTorch, PyTorch's ``F.gelu``, ``torch.compile`` of the eager formula, and
# this site's Triton kernel (C++ kernel names shortened to their functor).

_ = captures.show("kernels_per_call", page.kernels_table)

# %%
# Eight kernels for the eager formula, one for the others: each eager kernel reads
# its operands from memory and writes its result back. That count is the first
# thing a profile tells you, and it already says what to do (step 3).

# %%
# .. _strategy-classify:
#
# Step 2: classify with the roofline
# ----------------------------------
#
# A kernel that does :math:`F` FLOPs and must move :math:`B` bytes takes at least
# :math:`\max(F / P, B / W)`, with :math:`P` the peak arithmetic rate and
# :math:`W` the memory bandwidth. Its :term:`arithmetic intensity` :math:`F / B`
# against the GPU's :term:`ridge point` :math:`P / W` says which term wins: below
# the ridge the kernel is :term:`memory-bound` and its yardstick is GB/s against
# the :term:`stream bandwidth`, the fastest rate the memory was shown to stream
# (faster than a plain copy, the :term:`copy bandwidth`, for kernels that read more
# than they write); above, it is :term:`compute-bound` and its
# yardstick is TFLOP/s against :term:`cuBLAS`. The :ref:`roofline guide
# <sphx_glr_guides_02_roofline.py>` draws every kernel of the site on one chart.
# Two matmuls, by hand, against the ridge measured on this page's GPU:

ridge = ceilings().ridge_point("bf16")
for m, n, k in [(16, 14336, 4096), (8192, 8192, 8192)]:
    flops, n_bytes = 2 * m * n * k, 2 * (m * k + k * n + m * n)  # bf16: 2 bytes
    bound = "memory" if flops / n_bytes < ridge else "compute"
    print(f"{m}x{n}x{k}: {flops / n_bytes:.0f} FLOP/byte, ridge {ridge:.0f}: {bound}")

# %%
# And a few kernels of the site, each read as the :ref:`roofline guide
# <sphx_glr_guides_02_roofline.py>` reads it: the intensity from the byte and FLOP
# counts every record stores; the roof of the unit and dtype its arithmetic runs on
# (the CUDA cores' float32 for elementwise kernels and softmax, whatever they store;
# the tensor cores' in the kernel's dtype for matmuls and attention, the skinny one
# included), with that roof's ridge from the measured ceilings; and our kernel's
# rate as a share of that roof at its intensity, :math:`\min(P,\ I W)`: left of
# the ridge, a share of :math:`I W`.

print(page.classify_table())

# %%
# Everything elementwise, and softmax, sits far below even the CUDA cores'
# ridge: for those kernels only bytes matter, and the FLOPs are free. The skinny
# matmul (16 tokens, a decoding step) is memory-bound too, although it is a
# matmul on the tensor cores: it reads a whole weight matrix to do little with
# each element, so its yardstick is the bandwidth at its intensity, not the
# tensor cores' peak. Large matmuls and attention sit far above the ridge. The
# strategy differs on the two sides, which is why this step comes before any
# other.

# %%
# .. _strategy-fuse:
#
# Step 3: fuse
# ------------
#
# A memory-bound chain of operations costs the bytes it moves; each operation
# run as its own kernel writes its result to memory for the next to read back.
# :term:`Fusing <fusion>` the chain into one kernel makes it read its inputs once
# and write its output once. Tutorial 02 measured this for softmax: five eager
# kernels against one fused kernel.

softmax = run_or_load(cat.SOFTMAX)
print(page.fused_vs_eager(softmax, fused="triton", eager="naive"))

# %%
# The GELU case study
# ~~~~~~~~~~~~~~~~~~~
#
# GELU is the activation of GPT-2 and BERT; ``gpuperf.kernels.gelu`` computes it
# in one Triton kernel. It reads ``x`` once, evaluates the formula in float32
# (``0.5 (1 + tanh(u))`` as ``1 / (1 + exp(-2u))``, the same function with one
# exponential and no cancellation), and writes the result once:
#
# .. literalinclude:: ../../src/gpuperf/kernels/gelu.py
#    :pyobject: _gelu_kernel
#
# The eager formula it replaces, from ``gpuperf.reference``:
#
# .. literalinclude:: ../../src/gpuperf/reference.py
#    :pyobject: gelu_eager
#
# First, is it right? Checked against the float64 reference on shapes that
# cross every path, and on both tails of the curve; without a GPU, through
# Triton's :term:`interpreter` while this page was built:

from gpuperf.kernels import add_relu_mul, gelu
from gpuperf.pages import can_measure
from gpuperf.reference import add_relu_mul_ref, gelu_ref
from gpuperf.testing import assert_close

device = "cuda" if can_measure() else "cpu"
for shape in [(1,), (1000,), (1025,), (3, 5, 7)]:
    x, y, z = (torch.randn(shape, device=device) for _ in range(3))
    x = 4 * x
    assert_close(f"gelu {shape}", gelu_ref(x), gelu(x))
    ref, ours = add_relu_mul_ref(x, y, z), add_relu_mul(x, y, z)
    assert_close(f"add_relu_mul {shape}", ref, ours)
print(f"gelu and add_relu_mul match their float64 references on {device}")

# %%
# The bytes each version moves per element, from the formulas in
# ``gpuperf.bench.metrics``: the fused kernels read and write each element once;
# the eager formula reads and writes a tensor of ``x``'s size in every one of its
# kernels.

from gpuperf.bench import metrics

n = 2**28
fused = metrics.elementwise_bytes(n, 4, n_inputs=1)
eager = metrics.gelu_eager_bytes(n, 4)
print(f"2^28 float32: fused {fused / 2**30:.1f} GiB, eager {eager / 2**30:.1f} GiB")

# %%
# And the measurement, float32 and bfloat16, against the stream bandwidth
# measured in the same run (GB/s counts the fused kernel's bytes for every
# version, so a version that moves nine times the bytes shows at a ninth):

gelu_result = show(cat.GELU)

# %%
# What the numbers say, at the largest size (2^28 elements, far past :term:`L2`):

print(page.gelu_at_largest(gelu_result))

# %%
# Three lessons. The eager formula is not slow kernel by kernel: on the bytes it
# really moves, it runs near the roof (the share printed above); it is slow because
# it moves about nine times the bytes. Fusion is nearly the whole gain: the three
# fused versions (PyTorch's hand-written op, Inductor's kernel and the Triton
# kernel) reach about the same share of the roof, the shares in the table. A fused
# kernel is a necessary condition, not a sufficient one: where one fused version
# stays short of the others (compare them size by size in the plot), a profile of
# the kernels (the :ref:`profiling guide <sphx_glr_guides_01_profiling.py>` shows
# how) is the next step, not a guess.
# And in bfloat16 the eager formula is also *wrong*: every intermediate is
# rounded to bfloat16, and ``1 + tanh(u)`` cancels where ``tanh(u)`` is near -1,
# so the check against the reference refuses it (no time is recorded for a wrong
# answer). ``F.gelu``, ``torch.compile`` and the Triton kernel compute in float32
# and round once.
#
# At the smallest sizes every version is :term:`launch-bound <launch latency>`
# (a few microseconds per call whatever the size), and the eager formula pays
# for eight launches.
#
# Here is the kernel Inductor wrote for the eager formula, captured on the GPU
# (``torch._inductor.utils.run_and_get_code``): one pointwise kernel, the whole
# formula in :term:`registers` between one load and one store, ``tanh`` from
# libdevice.

_ = captures.show("inductor_elementwise", page.inductor_code("gelu_eager"))

# %%
# Add → ReLU → multiply
# ~~~~~~~~~~~~~~~~~~~~~
#
# ``relu(x + y) * z`` is the shape of a gated MLP's activation: three kernels in
# eager PyTorch, moving eight tensors' worth of bytes where one kernel moves four
# (three reads and a write). There is no PyTorch op for it; ``torch.compile``
# fuses it, and so does ``gpuperf.kernels.add_relu_mul``:
#
# .. literalinclude:: ../../src/gpuperf/kernels/add_relu_mul.py
#    :pyobject: _add_relu_mul_kernel

arm = show(cat.ADD_RELU_MUL)

# %%
print(page.add_relu_mul_at_largest(arm))
_ = captures.show("inductor_elementwise", page.inductor_code("add_relu_mul_eager"))

# %%
# The time ratio follows the byte ratio: three kernels that each stream near the
# roof take about twice as long as one that moves half the bytes. Where the table
# above finds a row above the roof beyond the spread of both timings, it says so
# under the table: the roof is the fastest of the streams timed, a rate the memory
# was shown to reach rather than its limit, which a kernel can edge past.

# %%
# .. _strategy-tile:
#
# Step 4: tile and reuse on chip
# ------------------------------
#
# A compute-bound kernel must reuse what it loads: tutorial 03's matmul gives
# each :term:`program` a :term:`tile` of the output and walks K, loading a tile
# of each operand per step and doing :math:`B_M B_N B_K` multiply-adds on it. Its
# intensity grows with the tile, and the measurement shows how close a tiled
# Triton kernel gets to cuBLAS:

matmul = run_or_load(cat.MATMUL)
print(page.matmul_vs_cublas(matmul))

# %%
# .. _strategy-coalesce:
#
# Step 5: coalesce
# ----------------
#
# The memory system serves a :term:`warp`'s loads in 32-byte sectors
# (:term:`coalescing`). When the 32 threads of a warp read 32 neighbouring
# float32 values, four sectors carry 128 useful bytes; when they read every
# eighth value, 32 sectors carry the same 128 useful bytes, and seven eighths of
# what the read fetches is waste. Tutorial 01's kernel reads neighbours and
# reaches its roof, the stream bandwidth:

vector_add = run_or_load(cat.VECTOR_ADD)
print(page.share_of_roof(vector_add))

# %%
# The counter-example is a copy with a :term:`stride`: output element ``i`` comes
# from input element ``i * stride`` (``gpuperf.kernels.strided_copy``). A copy
# reads one byte per byte it writes, so its yardstick is the :term:`copy
# bandwidth`, a plain contiguous copy measured in the same run. GB/s counts only
# the useful bytes (the output read once and written once), so the curve is what a
# strided access pattern leaves of the bandwidth:
#
# .. literalinclude:: ../../src/gpuperf/kernels/strided_copy.py
#    :pyobject: _strided_copy_kernel

strided = show(cat.STRIDED_COPY)

# %%
# Per stride, the bytes the memory system fetched for each 4-byte element read:
# at the copy bandwidth the time pays for the element's 4-byte write and for
# what serving its read fetched, ``copy GB/s × time / elements − 4``.

print(page.strided_table(strided))

# %%
# At a stride of 8, one sector per element read, the copy keeps more than an
# eighth of the bandwidth, and less than the sector size alone predicts:

print(page.strided_share(strided))

# %%
# The write is what keeps it above an eighth: each element written is contiguous
# with its neighbours, so only half of the useful bytes pay the stride. The
# measured time pays for more than one sector per read, which is the next
# paragraph's point.
#
# Up to a stride of 4 (16 bytes) the cost of each element read is the bytes the
# stride spans: the sectors are fetched whole and a stride of two uses half of
# each. Past one 32-byte sector the cost keeps growing: the memory system fetches
# more than a sector at a time, and the reads spread over ever more :term:`DRAM`
# pages, so at large strides each useful 4-byte element costs many times its
# size. PyTorch's own copy of the strided view lands in the same range: no kernel
# can fix this, the layout decides. The cure is in the data: transpose or repack
# once, so that the hot loop reads contiguous memory, or choose the loop order so
# that the fastest-moving index walks the contiguous dimension (tutorial 03's
# operands are loaded as tiles for this reason).

# %%
# .. _strategy-precision:
#
# Step 6: tensor cores and precision
# ----------------------------------
#
# On Hopper, the tensor cores do bf16 and fp16 products many times faster than
# the float32 units, and :term:`FP8` up to twice as fast again (its datasheet rate is
# twice bf16's). The ceilings measured on each GPU say how much; each is named under
# them, from its record, by its call and the shape that set it (for FP8, also how
# ``torch._scaled_mm`` accumulated: :term:`promoted accumulation` is the slower mode,
# and the :term:`fast accumulation` ceiling, where it was measured, is fp8_fast):

for gpu in hardware.gpus():
    c = ceilings(gpu)
    fp32, bf16, fp8 = c.tflops("fp32"), c.tflops("bf16"), c.tflops("fp8")
    print(f"{c.name}: fp32 {fp32:.0f}, bf16 {bf16:.0f}, fp8 {fp8:.0f} TFLOP/s;")
    print(f"    bf16 / fp32 = {bf16 / fp32:.0f}x, fp8 / bf16 = {fp8 / bf16:.1f}x")
    dtypes = ["fp32", "bf16", "fp8"]
    if "fp8_fast_tflops" in c.measured:
        fast = c.tflops("fp8_fast")
        print(f"    fp8_fast {fast:.0f} TFLOP/s: fp8_fast / bf16 = {fast / bf16:.1f}x")
        dtypes.append("fp8_fast")
    for dtype in dtypes:
        print(f"    {dtype}: {c.label(dtype)}")

# %%
# (cuBLAS's float32 matmul here is true float32; with TF32 allowed it would use
# the tensor cores at reduced precision.) Tutorial 05 measures what FP8 costs in
# accuracy and what its scales cost in time; our FP8 kernel against our bf16
# :term:`persistent <persistent kernel>` kernel:

fp8 = run_or_load(cat.MATMUL_FP8)
persistent = run_or_load(cat.MATMUL_PERSISTENT)
print(page.fp8_vs_bf16(fp8, persistent))

# %%
# Precision is paid for twice: once in the format of the operands, and once in
# how the products are summed. Hopper's FP8 tensor cores keep a reduced-precision
# accumulator (:term:`fast accumulation`); promoting the partial sums to float32
# in registers, the accurate way, costs instructions in the main loop. Tutorial
# 05 shows the accuracy each choice buys.

# %%
# .. _strategy-occupancy:
#
# Step 7: occupancy, warps and stages
# -----------------------------------
#
# A :term:`streaming multiprocessor <SM>` hides the latency of memory by
# switching among the warps it holds (:term:`occupancy`); a kernel's tile size,
# warps per program and pipeline stages (:term:`num_warps`, ``num_stages``)
# decide how many programs fit at once (registers and :term:`shared memory` are
# the limit) and how many loads each keeps in flight. The attention tuning sweep
# of tutorial 04 timed every candidate at one shape; laid out as tile against
# (warps, stages), the forward kernel at head dimension 128:

page.attention_sweep_figure()

# %%
# Read along a row: one tile, different warps and stages. The same tile can
# differ by tens of percent between its best and worst (warps, stages): too few
# warps leave the tensor cores waiting, too few stages leave loads exposed, and
# too many of either can push a program off the SM. The numbers, per GPU:

print(page.attention_sweep_spread())

# %%
# .. _strategy-autotune:
#
# Step 8: autotune
# ----------------
#
# No configuration wins everywhere (:term:`autotuning`). Tutorial 03's matmul
# sweep timed each candidate at each shape; drawn as a heatmap of % of the best at
# each shape (the winner outlined), the reference GPU, bfloat16:

page.matmul_sweep_figure("bfloat16")

# %%
# The winner moves from small tiles at small shapes to the largest at large
# ones, and a poor choice costs most of the speed. Tuning offline and keeping the
# result as data (``src/gpuperf/kernels/tuned/<gpu>/``) costs nothing at run
# time. How the tuned kernel compares with Inductor's own autotuner
# (``max-autotune-no-cudagraphs``, Triton templates only), from tutorial 03's
# benchmark, and how far apart each sweep's worst and best bf16 configs are:

print(page.tuned_vs_max_autotune(matmul))

# %%
# .. _strategy-persistent:
#
# Step 9: persistent kernels and TMA
# ----------------------------------
#
# On Hopper, tutorial 06 climbs from tutorial 03's kernel to a persistent grid
# (one program per SM, looping over tiles), then to loads by the :term:`Tensor
# Memory Accelerator <TMA>`, then to :term:`warp specialization`. The ladder at
# two shapes, each rung against cuBLAS:

print(page.persistent_ladder(persistent))

# %%
# .. _strategy-stop:
#
# Step 10: know when to stop
# --------------------------
#
# A kernel at its roof is done: a memory-bound kernel at the stream bandwidth can
# only get faster by moving fewer bytes (fusing it with its neighbours, or a
# smaller dtype), a compute-bound one at cuBLAS's rate only by doing fewer FLOPs
# or using faster units. Each kernel of the site, at its best measured point,
# as a share of the roof its benchmark measured in the same run (named in the last
# column): the roof of its own call and mode (the FP8 row runs with fast
# accumulation and is read against cuBLASLt's fast-accumulation ceiling, not the
# slower promoted one); for a memory-bound kernel the stream bandwidth, the fastest
# of the streams timed, from a copy to reads alone (a kernel that reads more
# than it writes streams faster than a copy, so against a copy's rate its share
# would read too high):

attention = run_or_load(cat.ATTENTION_FORWARD)
done = [vector_add, softmax, gelu_result, arm, matmul, persistent, fp8, attention]
print(page.roof_table(done))

# %%
# The elementwise kernels and the persistent matmuls stand at or near their
# roofs: more tuning would buy little, and their next gains are elsewhere
# (fusing them into their neighbours: the matmul :term:`epilogue` of tutorial 03).
# Attention sits further below its roof, and what is left there is a better
# *schedule* of the same algorithm, not a better configuration: the same
# FlashAttention arithmetic, with the softmax of one tile overlapped with the
# tensor cores' work on the next (:term:`warp specialization`). The :term:`cuDNN`
# backend of tutorial 04 shows how much that is worth, and :ref:`tutorial 08
# <sphx_glr_tutorials_08_gluon_hopper.py>` writes that schedule by hand.

# %%
# .. _strategy-compile:
#
# Case study: ``torch.compile``'s modes
# -------------------------------------
#
# ``torch.compile`` makes several of these moves for you: Inductor fuses
# elementwise chains and reductions into Triton kernels (step 3);
# ``reduce-overhead`` records the whole call as a :term:`CUDA graph`, so the host
# launches one graph instead of every kernel; and ``max-autotune`` times GEMM
# configurations (step 8), its Triton templates against cuBLAS, keeping the faster
# for each GEMM alone, *and* records CUDA graphs as ``reduce-overhead`` does
# (``max-autotune-no-cudagraphs`` is the mode without them). What each costs to
# compile and what it buys, on a pre-norm transformer MLP block in bfloat16
# (``layer_norm``, ``Linear(1024, 4096)``, GELU, ``Linear(4096, 1024)``,
# residual):
#
# .. literalinclude:: ../../src/gpuperf/bench/strategy.py
#    :pyobject: MLPBlock
#
# at 4096 tokens, where the matmuls keep the GPU busy, and at 8 tokens (a
# decoding step), where every kernel is tiny and launching them is the work.
# Each mode ran in a fresh process with empty compile caches, so compile time is
# what a first run pays; GPU time per call by :term:`do_bench` (host delays
# excluded) and :term:`host time per call` with the GPU kept busy (GPU time
# excluded). A loop of calls runs at about the larger of the two, and the table
# turns a gain into the number of calls needed before the compile time is repaid.

modes = captures.show("compile_modes", page.compile_table)

# %%
# Which modes paid for themselves, per GPU and case (time per call taken as the
# larger of GPU and host time):

_ = captures.show("compile_modes", page.compile_winners)

# %%
# What each mode did, case by case, read from the tables: its GPU and host time
# against eager's, which bounds a loop of its calls, who wrote its two GEMMs, and
# whether it copies ``x`` into a CUDA graph's input buffer
# (``multi_tensor_apply_kernel``, a kernel of its own on every call):

for capture in modes.values():
    print(page.compile_reading(capture))

# %%
# **At 4096 tokens** the GPU bounds eager PyTorch, and the two matmuls are most
# of its time. Default mode replaced the layer norm, the GELU and the residual
# add by Triton kernels of its own, but left both matmuls to cuBLAS (the same
# ``nvjet`` kernels as eager) and did not fuse the GELU into the first one's
# epilogue, so its GPU time stays close to eager's. Its host time per call went
# up (each call runs Dynamo's guards, then Inductor's wrapper launches the
# kernels from Python), and where it exceeds the GPU time a loop of calls is
# bound by the host, and slower than eager by the factor printed above, however
# little the GPU time moved. The CUDA-graph modes add the input copy to the
# GPU's work. Where ``max-autotune``'s Triton templates won their benchmarks of
# each GEMM alone, they replaced cuBLAS and ran slower in the block than cuBLAS
# did; where cuBLAS won, it kept cuBLAS: the kernel lists say which happened on
# which GPU. For a block whose time is large GEMMs there was little to gain, and
# the measurement says so before any effort is spent.
#
# **At 8 tokens** every mode is bound by the host (:term:`host overhead`): the
# GPU finishes the tiny kernels well before Python has launched them all. Default
# mode launches as many kernels as eager and adds its guards, and did not cut the
# host time. The CUDA-graph modes launch one graph in place of the kernels, and
# what they saved was not the same from GPU to GPU, nor from mode to mode: the
# ratios above, and the winners line, are what was measured, not a rule that
# small calls gain from CUDA graphs. Where a CUDA-graph mode's host time did not
# drop below eager's, the reading above says what that number asks. Host times on
# these virtual machines move by tens of percent between runs (see
# :doc:`../measuring`); compare the modes of one run. ``max-autotune`` takes
# several times longer to compile than the other modes (the table's first
# column): it times GEMM configurations while it compiles.
#
# Graph breaks
# ~~~~~~~~~~~~
#
# ``torch.compile`` can only fuse what Dynamo captures in one graph. A Python
# ``if`` on a tensor's *value* forces Python to know the value now, so Dynamo
# ends the graph there, runs the branch in Python, and starts another graph after
# it: two graphs, two compilations, and no fusion across the break.
#
# .. literalinclude:: ../../src/gpuperf/bench/strategy.py
#    :pyobject: gated_mlp_with_branch
#
# ``torch._dynamo.explain`` counts the graphs and says why each break happened
# (these run on this build's machine: Dynamo only traces here):

from gpuperf.bench import strategy

x, w1, w2 = torch.randn(8, 64), torch.randn(64, 256) / 8, torch.randn(256, 64) / 16
for fn in (strategy.gated_mlp_with_branch, strategy.gated_mlp_without_branch):
    found = strategy.explain_graph_breaks(fn, x, w1, w2)
    print(f"{fn.__name__}: {found['graphs']} graph(s), {found['breaks']} break(s)")
    for reason in found["reasons"]:
        print(f"    {reason}")

# %%
# The fix keeps the decision on the GPU as data: ``torch.where`` computes both
# sides and selects, one graph. (``torch.compile(..., fullgraph=True)`` turns any
# break into an error, which is how to make sure none comes back.)
#
# .. literalinclude:: ../../src/gpuperf/bench/strategy.py
#    :pyobject: gated_mlp_without_branch
#
# Recompilations
# ~~~~~~~~~~~~~~
#
# A compiled graph is guarded by what it assumed, the input shapes among them.
# Calling it with a new batch size fails a guard and compiles again. Counted by a
# backend that records each graph Dynamo hands it, for eight calls with batch
# sizes 2 to 9:

calls = [(torch.randn(b, 64), w1, w2) for b in range(2, 10)]
# sphinx_gallery_start_ignore
# count_graphs turns Dynamo's recompilation log on to read it: keep it off the page.
import contextlib
import io

hidden = contextlib.redirect_stderr(io.StringIO())
hidden.__enter__()
# sphinx_gallery_end_ignore
for label, kwargs in [
    ("dynamic=False (one graph per shape)", {"dynamic": False}),
    ("default (automatic dynamic shapes)", {}),
    ("mark_dynamic(x, 0) before each call", {"mark_dynamic": 0}),
]:
    counted = strategy.count_graphs(strategy.gated_mlp_without_branch, calls, **kwargs)
    print(f"{label:<40}: {counted['graphs']} graph(s) for {counted['calls']} calls")
    if counted["first_reason"]:
        print(f"{'':<42}first recompilation: {counted['first_reason']}")
# sphinx_gallery_start_ignore
hidden.__exit__(None, None, None)
# sphinx_gallery_end_ignore

# %%
# With static shapes every new batch size is a compilation (and after
# ``torch._dynamo.config.recompile_limit`` of them, Dynamo gives up and runs the
# function eagerly). By default, the second shape makes Dynamo recompile once
# with the batch dimension symbolic. Marking the dimension dynamic up front
# avoids even that recompilation; so does padding batches to a few fixed sizes,
# which keeps each graph static (what CUDA graphs need). ``TORCH_LOGS=recompiles``
# prints each guard failure as it happens.

# %%
# .. _strategy-checklist:
#
# Checklist
# ---------
#
# * **Profiled?** Count the kernels and where the time goes before changing
#   anything (:ref:`step 1 <strategy-measure>`, the :ref:`profiling guide
#   <sphx_glr_guides_01_profiling.py>`).
# * **Classified?** Arithmetic intensity against the ridge point decides the
#   yardstick: GB/s against the stream bandwidth, or TFLOP/s against cuBLAS
#   (:ref:`step 2 <strategy-classify>`, the :ref:`roofline guide
#   <sphx_glr_guides_02_roofline.py>`).
# * **Memory-bound chain fused?** One read and one write per element; eager
#   chains move several times the bytes (:ref:`step 3 <strategy-fuse>`: GELU,
#   add → ReLU → multiply, softmax in :ref:`tutorial 02
#   <sphx_glr_tutorials_02_fused_softmax.py>`).
# * **Compute-bound kernel tiled?** Reuse each loaded tile many times, and order
#   the programs for L2 (:ref:`step 4 <strategy-tile>`, :ref:`tutorial 03
#   <sphx_glr_tutorials_03_matmul.py>`).
# * **Contiguous access?** Neighbouring threads on neighbouring bytes; a read with
#   a stride of 32 bytes wastes most of every sector it fetches, and a copy reading
#   that way keeps the share of the bandwidth step 5 measures (:ref:`step 5
#   <strategy-coalesce>`, :ref:`tutorial 01 <sphx_glr_tutorials_01_vector_add.py>`).
# * **Tensor cores and the lowest precision that is accurate enough?**
#   (:ref:`step 6 <strategy-precision>`, :ref:`tutorial 05
#   <sphx_glr_tutorials_05_fp8_matmul.py>`).
# * **Warps and stages chosen by measurement?** (:ref:`step 7
#   <strategy-occupancy>`).
# * **Autotuned per shape and GPU, offline?** (:ref:`step 8 <strategy-autotune>`).
# * **On Hopper: persistent grid and TMA?** (:ref:`step 9 <strategy-persistent>`,
#   :ref:`tutorial 06 <sphx_glr_tutorials_06_tma_persistent_matmul.py>`).
# * **At the roof?** Then stop tuning and move less work instead (:ref:`step 10
#   <strategy-stop>`).
# * **Launch-bound?** Small batches: fewer, larger kernels, or CUDA graphs
#   (``reduce-overhead``, ``max-autotune``), with the host time per call measured
#   before and after (:ref:`torch.compile's modes <strategy-compile>`).
# * **One graph, no recompilations?** ``torch._dynamo.explain``,
#   ``fullgraph=True``, ``TORCH_LOGS=recompiles`` (:ref:`graph breaks and
#   recompilations <strategy-compile>`).

# %%
# What to take away
# -----------------
#
# * Measure and classify before changing code: the kernel count and the
#   arithmetic intensity against the ridge point say which moves can pay.
# * For memory-bound work, bytes are the cost: fusing a chain into one kernel
#   that reads and writes each element once is nearly the whole gain, and a
#   strided layout costs what no kernel can win back.
# * For compute-bound work, tiles, tensor cores, lower precision, tuning and (on
#   Hopper) persistent TMA kernels close the gap to cuBLAS; at the roof, stop
#   tuning and move less work.
# * ``torch.compile`` makes several of these moves for you, but measure what it
#   buys, GPU time and host time both: large GEMMs gain little, default mode can
#   make a call host-bound, and for small launch-bound calls what the CUDA-graph
#   modes saved differed by GPU and mode. Keep one graph without recompilations.
