"""
The roofline model: every kernel against its GPU
================================================

**What you will learn**

* the roofline model from first principles: why a kernel's speed is bounded by
  :math:`\\min(\\text{peak compute},\\ \\text{intensity} \\times \\text{bandwidth})`,
  and what the *ridge point* tells you before you write a line of code;
* why the roofs on this site are *measured* (the fastest of a few streaming ops
  for bandwidth, cuBLAS per dtype, ``torch._scaled_mm`` for FP8) and the
  datasheet's figures only drawn beside them;
* how to read a chart that holds every benchmark of every tutorial, one chart
  per GPU with current records (each chart's title names its GPU): which kernels
  sit on their roof, which do not, and what the distance means;
* where the model stops being true (caches, launch latency, uneven work), each
  shown on the chart.

Everything here is computed while the page builds, from the committed records
that the tutorials plot (:mod:`gpuperf.pages.roofline`); a benchmark added
later appears on the chart as soon as its records are committed.
"""

# sphinx_gallery_multi_image = "single"
from gpuperf.pages import roofline, roofline_plot
from gpuperf.pages import roofline_readings as readings

places = readings.placements()
print(readings.in_one_paragraph(places))


# %%
# The model from first principles
# -------------------------------
#
# A kernel that performs :math:`F` floating-point operations and moves :math:`B`
# bytes between the GPU and its memory (:term:`HBM`) cannot finish before the slower
# of two jobs is done: computing (at the chip's peak :math:`P` FLOP/s) and moving
# data (at the memory bandwidth :math:`W` bytes/s). So its time is at least
# :math:`\max(F/P,\ B/W)`, and its rate :math:`F/t` is at most
#
# .. math::
#
#    \text{attainable}(I) = \min(P,\ I \cdot W), \qquad I = \frac{F}{B}
#    \ \text{(arithmetic intensity, FLOP per byte)}.
#
# On a log-log plot of rate against :math:`I` this bound is a :term:`roofline`: a
# slope of one (the bandwidth) that meets a flat ceiling (the compute peak) at the
# :term:`ridge point` :math:`I^* = P / W`. A kernel left of the ridge is
# :term:`memory-bound`: only moving fewer bytes makes it faster. A kernel right of
# it is :term:`compute-bound`: only doing fewer or cheaper operations does.
# (Williams, Waterman and Patterson, "Roofline: an insightful visual performance
# model for multicore architectures", CACM 2009.)
#
# The :term:`arithmetic intensity` of a kernel follows from its algorithm, before
# any code: the bytes any implementation must move (each input read once, each
# output written once) and the FLOPs it must do (:mod:`gpuperf.bench.metrics`,
# the formulas every benchmark here uses).

from gpuperf.bench import metrics

n, rows, cols = 2**28, 4096, 32768
examples = {
    "vector add, fp32": (n, 3 * 4 * n),
    "softmax 4096 x 32768, fp32": (
        metrics.softmax_flops(rows, cols),
        metrics.softmax_bytes(rows, cols, 4),
    ),
    "matmul 16 x 14336 x 4096 (decode), bf16": (
        2 * 16 * 14336 * 4096,
        metrics.matmul_bytes(16, 14336, 4096, 2),
    ),
    "matmul 8192^3, bf16": (2 * 8192**3, 3 * 2 * 8192**2),
    "attention forward, S 16384, fp16": (
        metrics.attention_flops(1, 32, 16384, 64),
        metrics.attention_bytes(1, 32, 16384, 64, 2),
    ),
}
for name, (flops, n_bytes) in examples.items():
    print(f"{name:<42} {flops / n_bytes:>10.3g} FLOP/B")

# %%
# An elementwise op does a fixed handful of operations per element whatever the
# size: its intensity is a constant, far below one. A square matmul of side
# :math:`n` does :math:`2n^3` operations on :math:`3n^2` elements, so its
# intensity grows as :math:`n/3` (bf16); a matmul with one small dimension (16
# tokens at decode time) stays low however large the others are. Attention's
# intensity grows with the sequence length: :math:`4S^2D` FLOPs on
# :math:`4SD` elements.
#
# The roofs, measured
# -------------------
#
# Which :math:`P` and :math:`W`? The datasheet gives peaks: for the H100 SXM, 989 dense
# bf16 TFLOP/s and 3.35 TB/s. No kernel reaches them: the bandwidth figure is the memory
# interface's raw rate, before refreshes, page switches and read-write turnarounds, and
# the :term:`tensor core` figure assumes a clock the chip does not hold under a
# sustained matmul within its power limit. So every roof here is measured on the same
# GPU with the same timer as the kernels, in a run of its own (``hardware.json``,
# :mod:`gpuperf.bench.hardware`; each benchmark also measures the ceilings it is read
# against in its own run): for :math:`W`, the fastest of a few streams (the
# :term:`stream bandwidth`): a copy, which reads one byte per byte it writes (the
# :term:`copy bandwidth`), an add (two), a multiply-add (three) and reads alone.
# For :math:`P`, the vendor's matmul on large squares, its best median among a few sizes
# (each line gives the size that set it, where the ceilings record it): :term:`cuBLAS`
# per dtype, and cuBLASLt through ``torch._scaled_mm`` for FP8, which has two roofs
# where both were measured: one with :term:`promoted accumulation` (the partial sums
# added into float32 at intervals, ``_scaled_mm``'s default) and a faster one with
# :term:`fast accumulation` (``use_fast_accum=True``, the tensor cores' own
# reduced-precision sum), labelled ``fp8_fast``. An FP8 kernel is read against the roof
# of the mode it sums in: fast accumulation skips work that promotion does, so the
# promoted roof does not bound it. The memory roof is the fastest stream rather than the
# copy because how fast memory streams depends on the mix of reads and writes: a kernel
# that reads two or three bytes per byte written can outrun a copy, and a roof should
# bound the kernels read against it. The fastest stream is the highest rate the memory
# was shown to reach, not a limit of the hardware: a kernel can still edge past it, and
# reading A below says whether any row does (where a GPU's ceilings hold no stream
# bandwidth, the copy is its roof, and the lines below say which). The float32 roof is
# cuBLAS's float32 matmul, which runs on the CUDA cores that elementwise kernels and
# reductions compute on. The datasheet's figures are drawn beside the measured ones,
# dotted.

print(readings.roofs(places))

# %%
# The ridge points are high: a kernel must do hundreds of FLOPs per byte before
# the tensor cores become its limit, and more than ten even for the CUDA cores;
# almost everything but a large matmul or attention is memory-bound. The H200 has
# the H100's chip with faster memory: the datasheet gives both the same compute
# peaks, and the H200 more bandwidth. On a log-log plot the bandwidth roof
# :math:`I \cdot W` is a line of slope one whatever :math:`W` is: more bandwidth
# does not make it steeper, it shifts it up by the ratio of the bandwidths. So it
# meets a flat roof further left (the H200's ridges sit left of the H100's), a
# memory-bound kernel runs faster on it by the ratio of the bandwidths, and a
# compute-bound one does not.
#
# Every kernel on one chart per GPU
# ---------------------------------
#
# Each record row is one point: its intensity from the bytes and FLOPs in the
# row, its rate from the row's measured time. The kernel under study in each
# benchmark (gpuperf's) is drawn at its largest size, labelled, with a trail
# through its smaller sizes; the benchmark's baseline (PyTorch, cuBLAS,
# :term:`FlashAttention`-2, cuBLASLt) at its largest size in dark grey, every other
# provider in light grey, each with the marker shape of its kernel. Benchmarks
# with a dtype axis appear once per dtype (each has its own roof). The x-axis
# counts the *least* traffic: a kernel that moves more bytes than it must is drawn
# at the ideal intensity and sits below its roof by the extra traffic. The
# distance is the waste. The letters mark the three kernels read below.

for place in readings.charted(places):
    roofline_plot.overview(place, shared=places, marks=readings.MARKS)

# %%
# The compute-bound corner, where the matmuls and attention crowd together, gets
# a figure of its own per GPU, with the roofs' values:

for place in readings.charted(places):
    roofline_plot.compute_bound(place, shared=places, marks=readings.MARKS)

# %%
# The numbers behind the charts: every kernel under study and its baseline at
# its largest size, sorted by intensity. Each is read against the roof of the unit
# and dtype its arithmetic runs on: the CUDA cores' float32 for elementwise kernels
# and reductions, whatever dtype they store; the tensor cores' roof of their dtype
# for matmuls and attention, the skinny decode-time ones included. That roof's
# ridge says which side the kernel falls on, and its share of the roof is
# :math:`\text{rate} / \min(P,\ I W)`: left of the ridge, a share of
# :math:`I W`, the bandwidth at the kernel's intensity.

print(roofline.table(places))

# %%
# Reading the charts
# ------------------
#
# **A: memory-bound, on its roof.** Vector add does one addition per 12 bytes.
# At its largest size the kernel of :ref:`tutorial 01
# <sphx_glr_tutorials_01_vector_add.py>` sits on the bandwidth slope:

print(readings.memory_bound(places))

# %%
# At or near 100%, the distance to the roof is nil. How near a streaming kernel
# can come depends on what it streams. The streams the stream bandwidth was chosen
# from, each moving the same number of bytes, show it first:

print(readings.streams(places))

# %%
# Each record keeps, beside the stream bandwidth, the copy bandwidth measured in the
# same run: against that copy, kernels that read more than they write sit above it by
# more than the spread of the two measurements (a †: the kernel's slow end against
# the copy's fast end). The streaming kernels at their largest size, by bytes read
# per byte written, against the roof and against the copy; then every row placed
# above the stream roof itself beyond that spread:

print(readings.read_mix(places))

# %%
# Streams and kernels tell the same story, on the GPUs counted above: the more
# they read per byte they write, the faster they stream. A likely reason for the
# order, inferred from it rather than measured in the memory itself: :term:`DRAM`
# loses cycles turning its bus around between reads and writes, and a read-heavier
# stream turns it around less often. The mix is not all, though: streams that
# only read need not stream alike (the lines on the streams say where each falls),
# likely because how the reads are spread over the memory and how many are in
# flight count too. So a kernel a few percent under the stream roof that writes as
# much as it reads is on its own roof, and one a few percent over a copy roof is
# too. The stream roof is the fastest stream measured, not the memory's limit: a
# kernel whose access pattern suits the memory better still can pass it by a
# little, and the last lines above say whether any row does beyond the spread.
#
# On its roof, tuning a kernel is wasted effort. What remains is to move the
# point, not raise it: fewer bytes per FLOP (a lower-precision dtype halves the
# traffic), or more FLOPs per byte by :term:`fusion` with the kernel that produces
# or consumes its operands. A GPU with faster memory (the H200) shifts the
# bandwidth roof up, and the model predicts that a memory-bound kernel's rate
# follows it by the ratio of the bandwidths (where two GPUs hold a current record
# of vector add, the reading above compares them).
#
# **B: compute-bound, close to its roof.** A square bf16 matmul of side
# :math:`n` does :math:`n/3` FLOPs per byte; at the largest size that is an order
# of magnitude right of the ridge. :ref:`Tutorial 03
# <sphx_glr_tutorials_03_matmul.py>`'s kernel, then the matmuls with one small
# dimension (the decode-time projections):

print(readings.compute_bound(places))

# %%
# Right of the ridge, the *least* traffic no longer bounds the kernel: moved once,
# the bytes take less time than the arithmetic. The traffic the kernel really
# moves still can. Each element loaded into :term:`shared memory` is reused across
# a whole :term:`tile` of outputs, and the :term:`L2` cache serves repeated loads,
# if the order in which the programs run lets it; when it does not, the same
# operands come from DRAM again and again. Tutorial 03's Nsight Compute counters
# of one kernel launched in two program orders (fp16, its largest profiled shape)
# count the bytes each read from DRAM:

print(readings.real_traffic(places))

# %%
# The chart draws both orders at one intensity, the least traffic's. Counted
# against the bytes it really read, the row-major order falls left of the ridge
# (the lines above say where, GPU by GPU): the same kernel is then bound by
# memory, its DRAM reads near the memory roof, and it sits further below
# its roof than in grouped order. Right of the ridge, bandwidth still matters
# whenever reuse fails; only counters, not the chart, show it.
#
# When the order keeps the reuse, the distance left is time the tensor cores
# wait: on loads not issued early enough, on the pipeline filling and draining
# around each tile, on the last :term:`wave` of tiles that leaves some
# :term:`SMs <SM>` idle. Tutorial 06 attacks it with a :term:`persistent kernel`,
# :term:`TMA` loads and :term:`warp specialization`. The roof itself has a spread
# (its percentiles above), so "on the roof" means within that band. Past it, only
# a different roof helps: :term:`FP8` (:ref:`tutorial 05
# <sphx_glr_tutorials_05_fp8_matmul.py>`), whose datasheet peak is twice bf16's (the
# measured fp8 roofs above, one per accumulation mode, say how much of that is reached).
#
# The skinny matmuls do about as many FLOPs per byte as their small dimension is
# long (:math:`2MNK` over about :math:`2NK` bytes of weights). Their products run
# on the tensor cores, so the bf16 roof sets their ridge, and they fall left of
# it: their share is of :math:`I W`, their time is the time to stream the weights,
# and what helps is what helps any memory-bound kernel (FP8 weights, or more
# tokens per read).
#
# **C: far below its roof.** Softmax written naively in eager PyTorch
# (:ref:`tutorial 02 <sphx_glr_tutorials_02_fused_softmax.py>`), five kernels, on
# its longest rows, drawn at softmax's intensity, like the fused kernel:

print(readings.far_below(places))

# %%
# Against the bytes it really moves, the naive code streams near the stream
# bandwidth: most of its distance to the roof is *extra traffic*, every
# intermediate making a round trip to memory. No tuning of those five kernels
# closes it; fusing them does, by hand in Triton or by ``torch.compile``. A point
# far below a memory roof means bytes that need not move.
#
# The model's limits, on the chart
# --------------------------------
#
# **Launch latency (hollow markers).** Every kernel pays a fixed cost to launch
# and drain, whatever its size (:term:`launch latency`). Vector add's intensity is
# the same at every size, so its trail is a vertical line: at small sizes the
# time is the fixed cost, not the bytes. Hollow markers are calls under twice the
# shortest kernel time measured on that GPU:

print(readings.launch_bound(places))

# %%
# The cure is not in the kernel: more work per launch (batching, fusion) or fewer
# launches (a :term:`CUDA graph`, ``torch.compile``'s ``reduce-overhead``).
#
# **Caches (yellow markers).** The slope is HBM's bandwidth. A kernel whose
# traffic fits in L2 can be served partly from it and sit *above* the HBM roof.
# The benchmarks flush L2 before each call, so only what a kernel writes can stay
# there; the yellow markers are sizes whose whole traffic fits in L2:

print(readings.l2_resident(places))

# %%
# In a real model it goes further: an activation written by one kernel and read
# by the next is still in L2. Read points under a few tens of megabytes against
# an L2 roof (Nsight Compute's memory counters say which level served the bytes).
#
# **Uneven work (causal attention, dotted pairs).** Causal attention lets each
# query see only the keys before it: the FLOP count halves while the bytes stay,
# so its point moves to half the intensity, still far right of the ridge. The
# model predicts the same rate in half the time:

print(readings.causal(places))

# %%
# What the causal kernel loses comes from what the model cannot see: the tiles
# on the diagonal are computed whole and half masked, and the programs are
# uneven, so the grid's last wave can run a few long programs on a mostly idle
# GPU (:ref:`tutorial 04 <sphx_glr_tutorials_04_fused_attention.py>` launches the
# longest first).
#
# **Units the chart does not draw.** Even without a mask attention sits well
# under the tensor-core roof. Its softmax runs its exponentials on the
# :term:`special function units <SFU>`, whose throughput is a small fraction of
# the tensor cores' (FlashAttention-3, Shah et al., 2024, arXiv:2407.08608). The
# exponentials per score are fixed while the matmul FLOPs grow with the head
# dimension, so a small head dim should suffer more:

print(readings.head_dims(places))

# %%
# When a kernel sits far below its roof at a sound intensity, look for the unit or
# the schedule the chart does not draw. Host time per call and peak memory are not
# rates of the GPU, and failed rows have no time; the charts skip them:

print(readings.skipped(places))

# %%
# What to take away
# -----------------
#
# * Compute a kernel's arithmetic intensity before writing it; against the ridge
#   point it says which resource bounds it and what kind of change can help.
# * Measure the roofs: the datasheet's are never reached, and a kernel "at 80% of
#   peak" may be on its real roof.
# * Left of the ridge, count bytes: fuse, use smaller dtypes, keep data in L2.
#   Right of it, keep the tensor cores fed: tiling, pipelining, persistence.
# * Read each kernel against the roof of the unit and dtype it computes on; left
#   of that roof's ridge its share is of intensity times bandwidth.
# * Right of the ridge, bandwidth still bounds a kernel whose reuse fails: count
#   the bytes it really reads (Nsight Compute), not only the least.
# * Below the roof at small sizes is launch latency, not the kernel; above the
#   HBM roof is L2; above a copy's rate by a few percent is a kernel that reads
#   more than it writes. The roof of memory is the fastest stream measured, a rate
#   the memory was shown to reach, which a kernel may pass by a little.
# * The tutorials this chart draws on: :ref:`01 <sphx_glr_tutorials_01_vector_add.py>`,
#   :ref:`02 <sphx_glr_tutorials_02_fused_softmax.py>`,
#   :ref:`03 <sphx_glr_tutorials_03_matmul.py>`,
#   :ref:`04 <sphx_glr_tutorials_04_fused_attention.py>`,
#   :ref:`05 <sphx_glr_tutorials_05_fp8_matmul.py>`,
#   :ref:`06 <sphx_glr_tutorials_06_tma_persistent_matmul.py>`; how every time was
#   measured: :doc:`../measuring`; your own GPU: after ``nox -s bench``,
#   ``nox -s docs`` draws its charts here from its own roofs.
