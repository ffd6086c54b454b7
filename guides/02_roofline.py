"""
The roofline model: every kernel against its GPU
================================================

**What you will learn**

* the roofline model from first principles: why a kernel's speed is bounded by
  :math:`\\min(\\text{peak compute},\\ \\text{intensity} \\times \\text{bandwidth})`,
  and what the *ridge point* tells you before you write a line of code;
* why the roofs on this site are *measured* (a copy for bandwidth, cuBLAS per
  dtype, ``torch._scaled_mm`` for FP8) and the datasheet's figures only drawn
  beside them;
* how to read one chart that holds every benchmark of every tutorial, on the
  H100 and the H200: which kernels sit on their roof, which do not, and what
  the distance means;
* where the model stops being true (caches, launch latency, uneven work), each
  shown on the chart.

Everything here is computed while the page builds, from the committed records
that the tutorials plot (:mod:`gpuperf.pages.roofline`); a benchmark added
later appears on the chart as soon as its records are committed.
"""

# %%
# The model from first principles
# -------------------------------
#
# A kernel that performs :math:`F` floating-point operations and moves :math:`B`
# bytes between the GPU and its memory cannot finish before the slower of two
# jobs is done: computing (at the chip's peak :math:`P` FLOP/s) and moving data
# (at the memory bandwidth :math:`W` bytes/s). So its time is at least
# :math:`\max(F/P,\ B/W)`, and its rate :math:`F/t` is at most
#
# .. math::
#
#    \text{attainable}(I) = \min(P,\ I \cdot W), \qquad I = \frac{F}{B}
#    \ \text{(arithmetic intensity, FLOP per byte)}.
#
# On a log-log plot of rate against :math:`I` this bound is a roof: a slope of
# one (the bandwidth) that meets a flat ceiling (the compute peak) at the
# **ridge point** :math:`I^* = P / W`. A kernel left of the ridge is
# *memory-bound*: only moving fewer bytes makes it faster. A kernel right of it
# is *compute-bound*: only doing fewer or cheaper operations does. (Williams,
# Waterman and Patterson, "Roofline: an insightful visual performance model for
# multicore architectures", CACM 2009.)
#
# The intensity of a kernel follows from its algorithm, before any code. The
# formulas are the ones every benchmark on this site uses
# (:mod:`gpuperf.bench.metrics`): the bytes any implementation must move (each
# input read once, each output written once) and the FLOPs it must do.

from gpuperf.bench import metrics
from gpuperf.pages.roofline import arithmetic_intensity

examples = {
    "vector add, float32": (metrics.vector_add_flops(2**28), metrics.elementwise_bytes(2**28, 4)),
    "softmax 4096 x 32768, float32": (
        metrics.softmax_flops(4096, 32768),
        metrics.softmax_bytes(4096, 32768, 4),
    ),
    "matmul 16 x 14336 x 4096 (decode), bf16": (
        metrics.matmul_flops(16, 14336, 4096),
        metrics.matmul_bytes(16, 14336, 4096, 2),
    ),
    "matmul 8192^3, bf16": (
        metrics.matmul_flops(8192, 8192, 8192),
        metrics.matmul_bytes(8192, 8192, 8192, 2),
    ),
    "attention forward, S = 16384, fp16": (
        metrics.attention_flops(1, 32, 16384, 64),
        metrics.attention_bytes(1, 32, 16384, 64, 2),
    ),
}
for name, (flops, n_bytes) in examples.items():
    print(f"{name:<42} {arithmetic_intensity(flops, n_bytes):>10.3g} FLOP/B")

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
# Which :math:`P` and :math:`W`? The datasheet gives peaks: for the H100 SXM,
# 3.35 TB/s and 989 dense bf16 TFLOP/s. No kernel reaches them: the bandwidth
# figure is the memory interface's raw rate, before the cost of refreshes,
# page switches and read-write turnarounds, and the tensor-core figure assumes a
# clock that the chip typically does not hold under a sustained matmul within
# its power limit. So every roof on this site is measured on the GPU, in the same run as
# the kernels (:mod:`gpuperf.bench.hardware`): the copy of 1 GiB from one
# buffer to another for :math:`W` (the simplest possible stream), and the
# vendor's best matmul at :math:`8192^3` for :math:`P`: cuBLAS per dtype, and
# cuBLASLt through ``torch._scaled_mm`` for FP8. The float32 roof is cuBLAS's
# float32 matmul, which runs on the CUDA cores (the units elementwise kernels
# and reductions compute on); kernels that are not matmuls are read against it.
# The datasheet's figures are drawn beside the measured ones, dotted.

from gpuperf.bench import records
from gpuperf.pages import roofline
from gpuperf.pages.plotting import format_rate, short_gpu_name

placements = [roofline.load_gpu(gpu) for gpu in roofline.gpus()]
for placement in placements:
    sheet = placement.datasheet
    print(f"{placement.gpu}, roofs measured {placement.hardware['provenance']['date'][:10]}:")
    line = f"  copy bandwidth  {format_rate(placement.bandwidth_gbps, 'GB/s'):>10}"
    if sheet:
        theirs = next(iter(sheet.values())).bandwidth_gbps
        share = placement.bandwidth_gbps / theirs
        line += f"   datasheet {format_rate(theirs, 'GB/s'):>9}   measured/datasheet {share:.0%}"
    print(line)
    for key, roof in sorted(placement.roofs.items(), key=lambda item: -item[1].peak_tflops):
        line = f"  {roof.label:<20} {roof.peak_tflops:>6.0f} TFLOP/s   ridge {roof.ridge:>5.0f} FLOP/B"
        if key in sheet:
            line += (
                f"   datasheet {sheet[key].peak_tflops:>5.0f} TFLOP/s, ridge {sheet[key].ridge:>4.0f}"
                f"   measured/datasheet {roof.peak_tflops / sheet[key].peak_tflops:.0%}"
            )
        print(line)

# %%
# Two things to take from these numbers. The ridge points are high: a kernel
# must do hundreds of FLOPs per byte it moves before the tensor cores become its
# limit, and more than ten even for the CUDA cores; almost everything but a
# large matmul or attention is memory-bound. And the H200 has the H100's chip
# with faster memory: the same compute roofs, a steeper slope, so its ridges sit
# further left and a memory-bound kernel runs faster on it by the ratio of the
# bandwidths, while a compute-bound one does not.
#
# Every kernel on one chart
# -------------------------
#
# Each record row is one point: its intensity from the bytes and FLOPs stored
# in the row, its rate from the row's measured time. The kernel under study in
# each benchmark (gpuperf's own) is drawn at its largest size, labelled, with a
# trail through its smaller sizes; the benchmark's declared baseline (PyTorch,
# cuBLAS, FlashAttention-2, cuBLASLt) at its largest size in its own colour;
# every other provider at its largest size in grey. One marker shape per
# benchmark; one roof per compute dtype. Benchmarks with a dtype axis appear
# once per dtype (each has its own roof), and causal attention beside its
# non-causal counterpart. The compute-bound corner, where the matmuls and
# attention crowd together, is magnified under each GPU's chart.
#
# The x-axis counts the *least* traffic, not what a kernel really moved: a
# kernel that moves more bytes than it must (re-reading its input, writing
# intermediates) is drawn at the ideal intensity and sits below its roof by the
# extra traffic. That is a feature: the distance is the waste.
#
# The letters mark the three kernels read below.

import matplotlib.pyplot as plt

from gpuperf.pages import roofline_plot

MARKS = {
    "A": ("vector_add", "triton", {}),
    "B": ("matmul", "triton", {"dtype": "bfloat16"}),
    "C": ("softmax", "naive", {}),
}
if any(placement.points for placement in placements):
    roofline_plot.plot(placements, marks=MARKS)
    plt.show()
else:
    print(
        f"MISSING: no GPU under {records.measurements_dir()} has ceilings and records to place; "
        "run `nox -s bench` on a GPU and commit what it writes."
    )

# %%
# The numbers behind the chart: every kernel under study and its baseline at
# its largest size, sorted by intensity, with the roof it is read against,
# which side of that roof's ridge it falls on, and its share of the roof at its
# intensity (:math:`\text{rate} / \min(P,\ I \cdot W)`).

print(roofline.table(placements))

# %%
# Reading the chart
# -----------------
#
# **A: memory-bound, on its roof.** Vector add does one addition per 12 bytes.
# At its largest size the Triton kernel of :ref:`tutorial 01
# <sphx_glr_tutorials_01_vector_add.py>` sits on the bandwidth slope:


from gpuperf.bench import catalog
from gpuperf.pages.plotting import format_x


def largest(placement, key):
    bench, provider, axes = MARKS[key]
    return placement.largest(bench, provider, **axes)


for placement in placements:
    p = largest(placement, "A")
    if p is None:
        continue
    print(
        f"{short_gpu_name(placement.gpu):<15} vector add {format_x(p.x)}: {p.gbps:,.0f} GB/s = "
        f"{p.tflops:.3f} TFLOP/s, "
        f"{100 * placement.fraction(p):.0f}% of the roof at {p.intensity:.3f} FLOP/B "
        f"({roofline.bound_by(placement, p)}-bound: its roof's ridge is at "
        f"{placement.roof_of(p).ridge / p.intensity:,.0f}x its intensity)"
    )
if len(placements) > 1 and all(largest(p, "A") for p in placements[:2]):
    first, second = placements[:2]
    speed = largest(second, "A").tflops / largest(first, "A").tflops
    bandwidth = second.bandwidth_gbps / first.bandwidth_gbps
    print(
        f"{short_gpu_name(second.gpu)} / {short_gpu_name(first.gpu)}: {speed:.2f}x the rate, "
        f"with {bandwidth:.2f}x the copy bandwidth"
    )

# %%
# At or near 100%, the distance to the roof is nil (a little over 100% means
# the kernel streams a little better than the copy that measured the roof,
# within their spread). Nothing inside the kernel can close a gap that is not
# there; tuning it is wasted effort. What remains is to move the point, not to raise it: fewer
# bytes per FLOP (a lower-precision dtype halves the traffic), or more FLOPs
# per byte, by fusing the add into the kernel that produces or consumes its
# operands so that they never make the round trip to memory. Moving to the
# H200 raises the slope itself, and the rate follows the bandwidth, as the
# model predicts for a memory-bound kernel.
#
# **B: compute-bound, close to its roof.** A square bf16 matmul of side
# :math:`n` does :math:`n/3` FLOPs per byte; at the largest size measured that
# is an order of magnitude right of the ridge. :ref:`Tutorial 03
# <sphx_glr_tutorials_03_matmul.py>`'s kernel:

for placement in placements:
    p = largest(placement, "B")
    if p is None:
        continue
    roof = placement.roof_of(p)
    spread = placement.hardware["ceilings"][p.roof]
    cublas = placement.largest("matmul", "cublas", dtype="bfloat16")
    persistent = placement.largest("matmul_persistent", "triton")
    line = (
        f"{short_gpu_name(placement.gpu):<15} matmul bf16 {format_x(p.x)}: {p.intensity:.0f} FLOP/B, "
        f"{p.tflops:.0f} TFLOP/s, "
        f"{100 * placement.fraction(p):.0f}% of the {roof.label} roof ({roof.peak_tflops:.0f}; its own "
        f"20th-80th percentiles {spread['value_p20']:.0f}-{spread['value_p80']:.0f})"
    )
    if cublas is not None:
        line += f"; cuBLAS in the same run {cublas.tflops:.0f}"
    if persistent is not None:
        line += f"; tutorial 06's persistent kernel {100 * placement.fraction(persistent):.0f}% of its roof"
    print(line)

# %%
# Right of the ridge, bandwidth no longer matters: each element the kernel
# loads into shared memory is reused across a whole tile of outputs from shared
# memory and registers (the tiling of tutorial 03), and the L2 cache serves most
# of the tiles' repeated loads. The distance that remains is time the
# tensor cores spend waiting: on loads that were not issued early enough, on
# the pipeline filling and draining around each tile, on the last wave of
# tiles that leaves some SMs idle. Tutorial 06 attacks it with a
# persistent grid (one program per SM, so the tail of one tile overlaps the
# start of the next), TMA loads and warp specialization (its share of the roof
# is printed above). The roof is itself a measurement with a spread (its
# percentiles above), so "on the roof" means within that band. Past it, only a
# different roof helps: FP8 (:ref:`tutorial 05
# <sphx_glr_tutorials_05_fp8_matmul.py>`) doubles the tensor cores' peak, and
# the fp8 roof sits above every bf16 one.
#
# Not every matmul is compute-bound. The same kernel on a product with one
# small dimension, the decode-time projection labelled on the chart, does about
# as many FLOPs per byte as that dimension is long (:math:`2MNK` over about
# :math:`2NK` bytes of weights) and falls left of the ridge, on the slope:

for placement in placements:
    skinny = [p for p in placement.find("matmul", "triton", dtype="bfloat16") if min(p.x) < 64]
    for p in skinny:
        print(
            f"{short_gpu_name(placement.gpu):<15} matmul bf16 {format_x(p.x)}: {p.intensity:.1f} FLOP/B, "
            f"{roofline.bound_by(placement, p)}-bound, {p.gbps:,.0f} GB/s = "
            f"{100 * placement.fraction(p):.0f}% of its roof"
        )

# %%
# There the weights are read once and used for a handful of tokens only: the
# time is the time to stream the weight matrix, and what helps is what helps
# any memory-bound kernel (fewer bytes per weight, FP8 weights say, or more
# tokens per read by batching requests).
#
# **C: far below its roof.** Softmax written naively in eager PyTorch
# (:ref:`tutorial 02 <sphx_glr_tutorials_02_fused_softmax.py>`), five kernels,
# on its longest rows. It is drawn at softmax's intensity, 5 FLOPs per 8 bytes
# of float32, the same point as the fused Triton kernel:

rows = catalog.SOFTMAX_ROWS
for placement in placements:
    naive, fused = largest(placement, "C"), placement.largest("softmax", "triton")
    if naive is None or fused is None:
        continue
    cols = naive.x
    # Tutorial 02's count: max reads, subtract reads and writes, exp reads and writes,
    # sum reads, divide reads and writes: 8 passes over the data where 2 would do.
    moved = 8 * rows * cols * 4
    print(
        f"{short_gpu_name(placement.gpu):<15} naive softmax {rows} x {cols}: "
        f"{100 * placement.fraction(naive):.0f}% of the roof; the fused kernel "
        f"{100 * placement.fraction(fused):.0f}%, {naive.ms / fused.ms:.1f}x faster. "
        f"The naive code moves {moved / naive.n_bytes:.0f}x the least traffic, and streams it at "
        f"{100 * moved / (naive.ms * 1e-3) / 1e9 / placement.bandwidth_gbps:.0f}% of the copy bandwidth."
    )
    compiled = placement.largest("softmax", "compile")
    if compiled is not None:
        print(
            f"{'':<15} torch.compile of the naive code: {100 * placement.fraction(compiled):.0f}% of the roof"
        )

# %%
# Against the least traffic, the naive code reaches only the share of the roof
# above; against the bytes it really moves, its kernels stream at a rate much
# nearer the copy bandwidth. Most of the distance to the roof is therefore not
# slow code but *extra traffic*: every intermediate (the row maxima subtracted,
# the exponentials) makes a round trip to memory. No tuning of those five
# kernels can close it; fusing them can: the Triton kernel (one read, one write
# per element) and ``torch.compile`` of the same naive code (grey, beside it)
# are the fused versions, with their shares of the roof printed above. This is
# the most common reading of a roofline in practice: a point far below a memory
# roof means bytes that need not move.
#
# The model's limits, on the chart
# --------------------------------
#
# The roofline bounds the rate of a kernel by its intensity alone. Three things
# on the chart break that assumption, and the chart marks each.
#
# **Launch latency (hollow markers).** Every kernel pays a fixed cost to launch
# and drain, a few microseconds, whatever its size. Vector add's intensity is
# the same at every size, so its trail is a vertical line: at small sizes the
# point drops far below the roof, because the time is the fixed cost and not
# the bytes. The model has no term for it. Markers are hollow where a call took
# less than twice the shortest kernel time measured on that GPU:

for placement in placements:
    floor = placement.launch_floor_ms()
    trail = placement.find("vector_add", "triton")
    bound = [p for p in trail if placement.launch_bound(p)]
    if floor is None or not bound:
        continue
    shares = [100 * placement.fraction(p) for p in bound]
    print(
        f"{short_gpu_name(placement.gpu):<15} shortest kernel {floor * 1e3:.1f} us; vector add launch-bound "
        f"from {format_x(min(p.x for p in bound))} to {format_x(max(p.x for p in bound))} elements "
        f"({min(p.ms for p in bound) * 1e3:.1f}-{max(p.ms for p in bound) * 1e3:.1f} us a call, "
        f"{min(shares):.2f}-{max(shares):.1f}% of the roof)"
    )

# %%
# The same shows in the matmul trails, whose smallest products fall far below
# the slope. The cure is not in the kernel: more work per launch (batching,
# fusion) or fewer launches (CUDA graphs, ``torch.compile``'s
# ``reduce-overhead``).
#
# **Caches (yellow markers).** The slope is the bandwidth of HBM. A kernel
# whose traffic fits in the L2 cache can be served partly from it, at a higher
# bandwidth the chart does not draw, and its point can sit *above* the HBM
# roof. The benchmarks flush L2 before each timed call, so only what a kernel
# writes can stay there; the yellow markers are the sizes whose whole traffic
# fits in L2. At the small end the launch cost hides the effect; how high the
# L2-resident sizes that are not launch-bound reach:

for placement in placements:
    l2 = placement.hardware["provenance"]["l2_bytes"]
    cached = [
        p
        for p in placement.points
        if p.role == "subject"
        and p.l2_resident
        and not placement.launch_bound(p)
        and roofline.bound_by(placement, p) == "memory"
    ]
    if not cached:
        continue
    top = max(cached, key=placement.fraction)
    above = sum(placement.fraction(p) > 1 for p in cached)
    print(
        f"{short_gpu_name(placement.gpu):<15} L2 {l2 / 2**20:.0f} MiB: {len(cached)} memory-bound sizes fit "
        f"in it, not launch-bound; {above} of them above the HBM roof; the highest, {top.benchmark} at "
        f"{format_x(top.x)}, reaches {100 * placement.fraction(top):.0f}% of it"
    )

# %%
# In a real model it goes further: a small activation written by one kernel
# and read by the next is still in L2, and the second kernel can beat the HBM
# roof. Read points at sizes under a few tens of megabytes against an L2 roof,
# not the HBM one (Nsight Compute's memory counters say which level served the
# bytes).
#
# **Uneven work (causal attention, dotted pairs).** Causal attention lets each
# query see only the keys before it: half the score matrix. The FLOP count
# halves (the convention every attention benchmark uses) while the bytes stay
# the same, so its point moves left, to half the intensity, still far right of
# the ridge: the model predicts the same rate in half the time. The dotted
# pairs on the chart show how close each kernel comes:

for placement in placements:
    for series in roofline.chart_series(placement):
        if series.pair is None:
            continue
        half, full = series.largest, series.pair.largest
        axes = ", ".join(f"{k}={v}" for k, v in full.axes.items() if k != "causal")
        print(
            f"{short_gpu_name(placement.gpu):<15} {half.benchmark:<18} {axes}, S={half.x}: causal "
            f"{half.tflops:.0f} TFLOP/s, not causal {full.tflops:.0f} ({half.tflops / full.tflops:.0%}); "
            f"{half.ms / full.ms:.0%} of the time for half the FLOPs"
        )

# %%
# Whatever the causal kernel loses against its non-causal self comes from what
# the model cannot see. The tiles on the diagonal are computed whole and half
# masked, work that the FLOP count does not credit. And the programs are
# uneven: the first block of queries visits one tile of keys, the last visits
# all of them, so the grid's last wave can run a few long programs on a mostly
# idle GPU (our kernel launches the longest first to shorten that tail,
# :ref:`tutorial 04 <sphx_glr_tutorials_04_fused_attention.py>`).
#
# Attention also shows a limit of the chart's roofs themselves. Even without a
# mask it sits well under the tensor-core roof, at an intensity far right of
# the ridge. Its softmax runs its exponentials on the special-function units,
# whose throughput is a small fraction of the tensor cores' and which no roof
# here draws; the FlashAttention-3 paper (Shah et al., 2024, arXiv:2407.08608)
# makes that the reason for overlapping the softmax of one tile with the
# matmuls of the next. The exponentials per score are fixed while the matmul
# FLOPs per score grow with the head dimension, so a small head dim should
# suffer more; compare the shares of the roof that each implementation reaches
# at the two head dims, at the longest sequence:

for placement in placements:
    shares = {}
    for head_dim in (64, 128):
        for p in placement.find("attention_forward", dtype="float16", head_dim=head_dim, causal=False):
            if p.x == max(q.x for q in placement.find("attention_forward", p.provider)):
                shares.setdefault(p.provider, {})[head_dim] = placement.fraction(p)
    both = {k: v for k, v in shares.items() if len(v) == 2}
    if not both:
        continue
    cells = ", ".join(f"{k} {100 * v[64]:.0f}% / {100 * v[128]:.0f}%" for k, v in both.items())
    lower = sum(v[64] < v[128] for v in both.values())
    print(f"{short_gpu_name(placement.gpu)}, attention forward fp16, share of the roof at D = 64 / D = 128:")
    print(f"  {cells}")
    print(f"  lower at D = 64 for {lower} of {len(both)} implementations")

# %%
# (The naive and math implementations write the score matrix to memory; they
# lose at a small head dim for another reason too: their traffic per FLOP
# doubles.) A roofline is one bound among several: when a kernel sits far below it at a
# sound intensity, look for the unit or the schedule the chart does not draw.
#
# What the chart leaves out
# -------------------------
#
# Host time per call and peak memory are not rates of the GPU; failed rows
# have no time. The chart skips them, and says so:

for placement in placements:
    for bench, reason, n in placement.skipped:
        print(f"{short_gpu_name(placement.gpu):<15} {bench:<20} {n:>4} rows: {reason}")

# %%
# Where to go next
# ----------------
#
# * The tutorials this chart draws on, each with its own plot against the same
#   roofs: :ref:`01 vector add <sphx_glr_tutorials_01_vector_add.py>`,
#   :ref:`02 fused softmax <sphx_glr_tutorials_02_fused_softmax.py>`,
#   :ref:`03 matmul <sphx_glr_tutorials_03_matmul.py>`,
#   :ref:`04 fused attention <sphx_glr_tutorials_04_fused_attention.py>`,
#   :ref:`05 FP8 matmul <sphx_glr_tutorials_05_fp8_matmul.py>`,
#   :ref:`06 TMA persistent matmul <sphx_glr_tutorials_06_tma_persistent_matmul.py>`.
# * :doc:`../measuring`: how every time on this chart was measured.
# * Your own GPU: after ``nox -s bench``, ``nox -s docs`` draws it here as one
#   more panel, from its own measured roofs.
# * The code: :mod:`gpuperf.pages.roofline` (the model and the records' points)
#   and :mod:`gpuperf.pages.roofline_plot` (this chart).
