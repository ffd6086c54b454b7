"""
Fused softmax: one pass over memory, and what to do when a row does not fit
===========================================================================

**What you will learn**

* how to count the :term:`DRAM` traffic of a chain of PyTorch operations, and
  why :term:`fusing <fusion>` them into one kernel is worth several times its
  speed;
* how a Triton :term:`program` reduces along rows (``tl.max``, ``tl.sum``) with
  the whole row in :term:`registers`;
* the :term:`online softmax`: a running maximum and a rescaled running sum, for
  rows too long to hold on chip;
* how the result compares with ``torch.softmax``, naive eager PyTorch and
  :term:`torch.compile`, against the measured :term:`stream bandwidth` (the fastest
  rate the memory was shown to stream).

The answer first, read from the records of every GPU measured:
"""

from gpuperf.pages import softmax as page

print(page.in_one_paragraph())

# %%
# Counting bytes
# --------------
#
# Softmax over the last dimension, :math:`y_{ij} = e^{x_{ij} - m_i} / \sum_k
# e^{x_{ik} - m_i}` with :math:`m_i = \max_k x_{ik}` (subtracting the maximum
# keeps :math:`e^x` from overflowing), written the obvious way in PyTorch, is
# five kernels:
#
# .. literalinclude:: ../../src/gpuperf/reference.py
#    :pyobject: softmax_naive
#
# Each kernel reads its input from DRAM and writes its output back. For an
# :math:`M \times N` input, ``max`` reads :math:`MN` elements, the subtraction
# reads :math:`MN` and writes :math:`MN`, ``exp`` the same, ``sum`` reads
# :math:`MN`, and the division reads and writes :math:`MN` (the per-row vectors
# of length :math:`M` are negligible): :math:`8MN` elements moved. A fused kernel
# that reads each row once and writes it once moves :math:`2MN`: four times
# fewer bytes, so for a :term:`memory-bound` operation about four times faster,
# and more where the naive code's own five kernels stream below the stream
# bandwidth (the opening paragraph's ratios to the naive code go past four).

rows, cols, fp32 = 4096, 8192, 4
naive_mib = 8 * rows * cols * fp32 / 2**20
fused_mib = 2 * rows * cols * fp32 / 2**20
print(f"{rows} x {cols} fp32: naive {naive_mib:.0f} MiB, fused {fused_mib:.0f} MiB")

# %%
# The single-pass kernel
# ----------------------
#
# Each program loads a :term:`tile` of ``BLOCK_M`` whole rows (padded to
# ``BLOCK_N``, the next power of two) into registers, reduces each row to its
# maximum, then to its sum of exponentials, normalises and stores. Padding
# lanes load ``-inf``: they never win the maximum and add
# :math:`e^{-\infty} = 0` to the sum. The arithmetic is in float32 whatever the
# input dtype, rounded once at the store.
#
# .. literalinclude:: ../../src/gpuperf/kernels/softmax.py
#    :pyobject: _softmax_kernel
#
# How many rows per program and how many warps? Short rows pack up to eight to
# a program, aiming at 4096 elements (16 KB of fp32) per program, so that no
# program is mostly start-up cost; 8 :term:`warps <warp>`, more when a thread
# would otherwise hold over 64 values (the most that stays in registers with
# room for addresses, short of a :term:`spill`).
#
# .. literalinclude:: ../../src/gpuperf/kernels/_configs.py
#    :pyobject: softmax_fused_launch
#
# These rules came from measuring every configuration on an H100 with
# ``scripts/explore_configs.py``, whose output is committed beside the records.
# At most row lengths the rule ranks near the top and the best few
# configurations lie close together, while too many rows or warps per program
# lose far more; the rules stay out of that corner:

print(page.config_sweep())

# %%
# Rows too long for registers: the online softmax
# -----------------------------------------------
#
# A row of 65,536 float32 values is 256 KiB, as large as the whole register
# file of an H100 :term:`SM` (65,536 32-bit :term:`registers`), which must also
# hold every thread's addresses, indices and partial results: no program can keep
# such a row in registers. The classic way out reads the row three times: once
# for the maximum, once for the sum, once to write the output. Milakov and Gimelshein's
# *online softmax* (`arXiv:1805.02867 <https://arxiv.org/abs/1805.02867>`_)
# merges the first two: walk the row in chunks keeping a running maximum
# :math:`m` and a running sum :math:`s` of :math:`e^{x - m}`; when a chunk raises
# the maximum to :math:`m'`, the old sum is rescaled by :math:`e^{m - m'}`:
#
# .. math:: s' = s \, e^{m - m'} + \textstyle\sum_{\text{chunk}} e^{x - m'}.
#
# The same trick is the heart of :term:`FlashAttention`. Our kernel keeps :math:`m` and
# :math:`s` per lane (one per position in the chunk) and combines the lanes at
# the end. A second walk writes :math:`e^{x - m} / s`. It runs *backwards*, so it
# starts on the chunks the first walk read last, the ones most likely still in
# :term:`L2`; the first walk's loads ask L2 to keep the row (``evict_last``), the second
# walk's ask it not to (``evict_first``). While a lane has seen only
# :math:`-\infty` its shift is taken as 0, so the rescaling never computes
# :math:`-\infty - (-\infty)`.
#
# .. literalinclude:: ../../src/gpuperf/kernels/softmax.py
#    :pyobject: _softmax_online_kernel
#
# The wrapper checks its input, allocates the output, views the input as a
# matrix of rows (without copying when its strides allow), and returns the
# output with the one launch that fills it: the kernel picked by row length, its
# grid, its arguments (the strides passed through) and its warps. It launches
# nothing itself. The decorator ``@op`` (:mod:`gpuperf.kernels.launch`) builds
# the rest from this one function: the launch, the ``torch.library`` op
# ``torch.ops.gpuperf.softmax`` that ``torch.compile`` sees, and a *plan*. The
# first call on inputs of a new layout (shape, strides, dtype, device, and the
# address's 16-byte alignment, which Triton specializes on) runs the function
# and launches; when that launch read the input in place, it is kept bound to
# everything but the input's and the output's addresses. A later call with the
# same layout allocates the output and calls that bound launch, skipping the
# checks, the launch configuration and Triton's own argument handling; a call
# whose input had to be copied keeps no plan and runs the function every time.
# That is the :term:`host time per call` the :ref:`profiling guide
# <sphx_glr_guides_01_profiling.py>` measures:
#
# .. literalinclude:: ../../src/gpuperf/kernels/softmax.py
#    :pyobject: softmax

# %%
# Is it right?
# ------------
#
# Odd shapes, several dimensions, a transposed (non-contiguous) input, a row
# just past the single-pass limit and rows containing ``-inf``, each against the
# float64 reference. Without a GPU the kernels run in Triton's
# :term:`interpreter`.

import torch
from gpuperf.kernels import softmax
from gpuperf.kernels.configs import SOFTMAX_MAX_FUSED_COLS
from gpuperf.pages.report import can_measure
from gpuperf.reference import softmax_ref
from gpuperf.testing import assert_close

device = "cuda" if can_measure() else "cpu"
cases = {
    "one element": torch.randn(1, device=device),
    "3 x 7": torch.randn(3, 7, device=device),
    "2 x 3 x 1000": torch.randn(2, 3, 1000, device=device),
    "transposed 129 x 33": torch.randn(33, 129, device=device).t(),
    "longest single-pass row": torch.randn(2, SOFTMAX_MAX_FUSED_COLS, device=device),
    "online: 2 x 40,000": torch.randn(2, 40_000, device=device),
}
for name, x in cases.items():
    assert_close(f"softmax {name}", softmax_ref(x), softmax(x))
print(f"softmax matches the float64 reference on {device} for: {', '.join(cases)}")

x = torch.randn(3, 500, device=device)
x[0, :100] = -float("inf")  # masked positions get probability 0
x[1] = -float("inf")  # a fully masked row is NaN, as in torch.softmax
out, expected = softmax(x), torch.softmax(x, dim=-1)
assert torch.equal(out.isnan(), expected.isnan()) and (out[0, :100] == 0).all()
assert_close("softmax with -inf", softmax_ref(x), out)
print("rows with -inf match torch.softmax, NaNs included")

# %%
# Benchmark: 4096 rows, 256 to 32,768 columns
# -------------------------------------------
#
# Four providers in one run: the Triton kernel, ``torch.softmax`` (PyTorch's
# hand-written CUDA kernel), the naive five-kernel version above, and that same
# naive code through ``torch.compile`` (which fuses it into generated Triton),
# compiled once per size. GB/s counts the fused minimum, :math:`2MN \times 4`
# bytes, for every provider: the naive version's lower GB/s is exactly its
# extra traffic.

from gpuperf.bench.catalog import SOFTMAX, SOFTMAX_LONG
from gpuperf.pages import show

short = show(SOFTMAX)

# %%
# Reading the curves
# ------------------
#
# At 256 columns the whole tensor is 4 MB: the kernel is over in a few
# microseconds and :term:`launch latency` and ramp-up dominate, as in tutorial
# 01. From there the fused kernels climb towards the stream bandwidth as the
# tensor grows past L2 (the shaded region) and each program has more bytes to
# stream. The naive version stays near a quarter of the others, as the byte
# count predicted.

print(page.bandwidth_and_speedups(short))

# %%
# Two effects shape the Triton curve. At 1,024 columns the tensor is 16 MB in
# and 16 MB out, about ten microseconds at full bandwidth, so the fixed costs of
# a launch (start-up, ramp, drain) are a visible fraction of it: no kernel
# reaches the roof there, which is measured on far larger tensors. Vector add in
# tutorial 01 shows the same curve at the same traffic. As rows grow, one or a
# few rows per program stream ever closer to the roof (the shares printed
# above): the kernel does exactly one read and one write of every element, and
# the exponentials hide under the memory time.
#
# ``torch.softmax``'s curve is not smooth: PyTorch picks among several CUDA
# kernels by row length, and some of them fall well short of the bandwidth.
# ``torch.compile`` turns the naive five-kernel code into one fused Triton
# kernel much like ours and lands close to it on these rows (the last line
# printed above); the gaps between the two come from the launch configuration
# each picks for a size.
#
# Long rows
# ---------
#
# 1024 rows of 65,536 to 262,144 columns take the online kernel.

long = show(SOFTMAX_LONG)

# %%
# The online kernel reads each row twice and writes it once. If the second read
# came entirely from HBM it would move 1.5 times the minimum traffic, capping it
# at two thirds of the stream bandwidth. Above that share beyond the timings'
# spread, L2 served part of the second read: the reversed walk and the L2 hints
# win most on the shortest of these rows, and less as rows outgrow their share of
# the cache. Row length by row length, whether the kernel is above the three-pass
# share, within the spread of both timings of it, or below:

print(page.online_against_three_passes(long))

# %%
# Against PyTorch, on these rows:

print(page.bandwidth_and_speedups(long))

# %%
# Here ``torch.compile`` does not keep up: on rows this long its kernel runs at
# about the speed of ``torch.softmax``, well behind the online kernel (the last
# line printed). The records time that kernel without showing the loop
# Inductor wrote for these rows; ``TORCH_LOGS=output_code`` prints it, and that
# is where to look before trusting a compiler's fusion on rows that do not fit
# on chip.

# %%
# The :ref:`roofline guide <sphx_glr_guides_02_roofline.py>` reads the naive
# and the fused softmax against the same roof: the distance between them is the
# extra traffic. The :ref:`optimization-strategy guide
# <sphx_glr_guides_03_optimization_strategy.py>` turns these steps into a
# checklist for a kernel of your own.
#
# What to take away
# -----------------
#
# * Count the bytes each kernel of a chain moves: fusion removes the
#   intermediate round trips to DRAM, here four times fewer bytes.
# * A fused memory-bound kernel is done when it reaches the stream bandwidth, the
#   fastest rate the memory was shown to stream; on rows that fit in registers
#   ``torch.compile`` fuses the naive code into a kernel much like ours, and on
#   longer rows it falls behind.
# * When the data a program needs does not fit on chip, restructure the
#   algorithm (the online softmax) so it needs fewer passes, and order the
#   passes so the cache serves what it can.
