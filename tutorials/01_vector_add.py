"""
Vector add: programs, blocks and the bandwidth ceiling
======================================================

**What you will learn**

* how a Triton kernel splits work into :term:`programs <program>`, each owning
  one :term:`block` of elements, and how a :term:`mask` guards the last, partial
  block;
* how the launch :term:`grid` is computed from the problem size;
* how to turn a time into :term:`GB/s`, and why GB/s against the measured
  :term:`stream bandwidth`, the fastest rate the memory was shown to stream, is the
  right yardstick for a :term:`memory-bound` kernel, and why a plain copy (the
  :term:`copy bandwidth`) streams slower than this kernel can;
* why small launches are slow whatever the kernel does (:term:`launch latency`),
  and why the bandwidth keeps climbing through sizes whose tensors fit in
  :term:`L2`, flattening only once they are far larger.

The answer first, read from the records of every GPU measured:
"""

from gpuperf.pages import vector_add as page

print(page.in_one_paragraph())

# %%
# The arithmetic first
# --------------------
#
# ``out = x + y`` on :math:`N` float32 elements does :math:`N` additions and moves
# :math:`3 \cdot 4N` bytes: two tensors read, one written, one addition per 12
# bytes: its :term:`arithmetic intensity` is 1/12 FLOP per byte. A GPU does
# many float32 operations in the time its memory (:term:`HBM`) delivers one
# byte; on the datasheet of the GPU this page describes:

from gpuperf.bench.metrics import elementwise_bytes
from gpuperf.pages import ceilings

print(page.flops_per_byte())

# %%
# So the additions are free, and the only question is how close we get to the memory
# system's limit. That limit is measured, not taken from the datasheet: the plots
# below draw the :term:`stream bandwidth` measured in the same run, the fastest of a
# few streams timed over large tensors: a copy (one byte read per byte written), an
# add (two, like this kernel), a multiply-add (three) and reads alone. It is the
# fastest rate this memory was shown to stream, not a limit of the hardware, so the
# time it gives is a floor in practice: a kernel that beats it does so by a hair,
# and the tables under the plots say where one does.
#
# For :math:`N = 2^{28}` the kernel must move 3 GiB; at the measured stream
# bandwidth of the GPU this page describes, that takes at least this long,
# however clever the code:

n = 2**28
moved = elementwise_bytes(n, element_size=4)
gpu = ceilings()  # measured on the GPU this page describes
roof = gpu.memory_gbps  # the fastest rate its memory was shown to stream
floor_ms = moved / (roof * 1e9) * 1e3
print(f"bytes moved for N = 2^28 fp32: {moved / 2**30:.1f} GiB")
print(f"lower bound on the {gpu.name} at {roof:.0f} GB/s: {floor_ms:.2f} ms")
print(f"roof: {gpu.memory_label}; a plain copy: {gpu.copy_gbps:.0f} GB/s")

# %%
# The kernel
# ----------
#
# A Triton kernel is written for one *program*; the launch runs one program per
# entry of the grid. Program ``pid`` owns elements ``[pid * BLOCK_SIZE, (pid + 1)
# * BLOCK_SIZE)``; ``tl.arange`` makes the block of offsets, and the mask turns
# off the lanes past the end of the tensor so the last program neither reads nor
# writes out of bounds. :term:`BLOCK_SIZE` is a ``tl.constexpr``: a compile-time
# constant, so the compiler can lay the block out over the program's threads as
# 16-byte vector loads, neighbouring threads on neighbouring addresses
# (:term:`coalescing`).
#
# This is the kernel exactly as it lives in ``src/gpuperf/kernels/vector_add.py``:
#
# .. literalinclude:: ../../src/gpuperf/kernels/vector_add.py
#    :pyobject: add_kernel
#
# The offsets are computed in int64: ``pid * BLOCK_SIZE`` overflows 32 bits for
# tensors of more than :math:`2^{31}` elements (8 GiB of float32), which fit on
# these GPUs.
#
# Launching it
# ------------
#
# A launch names the grid in square brackets and passes the arguments: tensors
# become pointers to their first element, and ``BLOCK_SIZE`` is given by
# keyword. One program per block, so the grid is ``cdiv(N, BLOCK_SIZE)``
# programs. That is the whole wrapper:

import torch
import triton
from gpuperf.kernels.vector_add import add_kernel


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = out.numel()
    grid = (triton.cdiv(n, 1024),)
    add_kernel[grid](x, y, out, n, BLOCK_SIZE=1024)
    return out


# %%
# Is it right?
# ------------
#
# Before any timing, the kernel must agree with the reference on shapes that
# exercise every path: one element, a partial block, exactly one block, sizes
# that are not powers of two, and several dimensions. Without a GPU this cell
# runs the very same kernel through Triton's :term:`interpreter` on the CPU.

from gpuperf.pages.report import can_measure
from gpuperf.reference import vector_add_ref
from gpuperf.testing import assert_close

device = "cuda" if can_measure() else "cpu"
for shape in [(1,), (1000,), (1024,), (1025,), (98_449,), (3, 5, 7)]:
    x = torch.randn(shape, device=device)
    y = torch.randn(shape, device=device)
    assert_close(f"add {shape}", vector_add_ref(x, y), add(x, y))
print(f"add matches the float64 reference on {device} for all shapes")

# %%
# ``add`` trusts its caller: tensors of different sizes, or a strided view,
# would read past the end or read the wrong elements. The library's
# :func:`gpuperf.kernels.vector_add` launches the same kernel after checking
# shapes, dtypes and devices, and copies strided inputs first; bad input is
# refused with a message that says what was expected:

from gpuperf.kernels import vector_add

try:
    vector_add(torch.randn(4, device=device), torch.randn(5, device=device))
except ValueError as err:
    print(f"ValueError: {err}")

# %%
# Benchmark: Triton against ``x + y``
# -----------------------------------
#
# One timing is one call of :term:`do_bench`, which runs the function many
# times, flushing the :term:`L2` cache before each run, and returns one time in
# milliseconds; bytes moved over that time is the bandwidth. Ask for the median:
# Triton 3.6's ``do_bench`` returns the *mean* unless told otherwise
# (``return_mode="mean"``), and a mean moves with every stall:
#
# .. code-block:: python
#
#    from triton.testing import do_bench
#
#    x, y = torch.randn(2**24, device="cuda"), torch.randn(2**24, device="cuda")
#    ms = do_bench(lambda: add(x, y), return_mode="median")
#    gbps = 3 * x.numel() * x.element_size() / (ms * 1e-3) / 1e9
#
# The benchmark below does this (with a 1 GiB flush, keeping the best of three
# rounds by median: :doc:`../measuring`) for :math:`N` from :math:`2^{12}` to
# :math:`2^{28}` float32 elements, for the Triton kernel and for PyTorch's
# ``x + y`` in the same run, and keeps the 20th and 80th percentiles too. With a
# GPU this cell measures live; without one it shows the committed measurements
# of every GPU, named under the plot.

from gpuperf.bench.catalog import VECTOR_ADD
from gpuperf.pages import show

result = show(VECTOR_ADD)

# %%
# Reading the curves
# ------------------
#
# Three regimes show up, from left to right.
#
# **Launch-bound.** For the smallest sizes the time per call hardly changes with
# :math:`N`: it is the fixed cost of launching a kernel and of the GPU ramping
# up and draining, a few microseconds. GB/s there grows in proportion to
# :math:`N`, and no kernel tuning helps: only doing more work per launch
# (:term:`fusion`, batching) or removing launches (:term:`CUDA graphs <CUDA
# graph>`) does. The GPU time per call at the smallest size:

print(page.launch_bound(result))

# %%
# Those are GPU times: the timing keeps the host out of them (see
# :doc:`../measuring`). The host pays its own cost for every launch, the
# Python and driver work of the call: its :term:`host time per call`, timed
# with the GPU kept busy so that only the host's work counts. For a small
# vector add, through the library's op (which keeps each launch it has checked
# bound to everything but the tensors' addresses: tutorial 02 shows how),
# through ``kernel[grid]`` as the ``add`` above launches, and for PyTorch:

print(page.host_time())

# %%
# Each is several times the GPU time of the smallest launch printed above: a
# kernel shorter than its host time leaves the GPU waiting on Python. The
# :ref:`profiling guide <sphx_glr_guides_01_profiling.py>` measures that
# host time for every kernel on the site against the PyTorch op it replaces.
# The cures are the same as for launch latency: more work per launch, or
# capturing many launches in a CUDA graph.
#
# **L2.** In the shaded region the three tensors together are smaller than the
# :term:`L2 cache`. ``do_bench`` flushes L2 before each run, so inputs come from HBM,
# but the written output can stay in L2 and drain after the kernel ends; the
# curve climbs steeply through this region as launch overhead is amortised.
#
# **HBM-bound.** From about :math:`2^{24}` elements (200 MB of traffic) the curves
# flatten against the stream bandwidth: both kernels do the one thing that costs
# anything, moving bytes, as fast as the memory system allows. Here is how close
# the Triton kernel comes (to the roof its record reads it against, and to the copy
# bandwidth measured beside it), and how it compares with PyTorch at every size
# from :math:`2^{20}` up:

print(page.hbm_bound(result))

# %%
# Why the roof is the fastest stream and not the copy: how fast :term:`DRAM`
# streams depends on the mix of reads and writes. A likely reason, inferred from
# the measurements rather than seen in the memory itself, is that the bus loses
# cycles each time it turns around between reading and writing, and a copy, one
# read per write, turns it around the most. Vector add reads two bytes per byte
# it writes, so it can stream faster than a copy, as the line above shows; read
# against the copy it would seem to beat the memory. Against the fastest stream,
# reaching the roof means the kernel leaves almost nothing on the table. On large
# tensors the two kernels are the same program, a coalesced
# streaming loop, written in two languages, and their ratio stays close to 1.0.
# The larger gaps in the headline's range come at sizes where a call lasts
# only microseconds, so that a fraction of a microsecond of launch and
# ramp-up moves the ratio by several percent; read them against the shaded
# 20th-80th percentile bands of each curve.
#
# The :ref:`roofline guide <sphx_glr_guides_02_roofline.py>` draws this kernel
# beside every other one on the site, against the same measured roofs; the
# :ref:`optimization-strategy guide
# <sphx_glr_guides_03_optimization_strategy.py>` says which of these regimes a
# kernel of yours is in and what to do about it.
#
# What to take away
# -----------------
#
# * For a memory-bound kernel, count the bytes, divide by the measured stream
#   bandwidth (the fastest rate the memory was shown to stream, not a copy's,
#   which read-heavy kernels pass), and compare the time you get with that floor.
# * A kernel that reaches the floor is done: the only way to go faster is to
#   move fewer bytes, which is what fusion (the next tutorial) is about.
# * Small launches are bound by launch latency on the GPU and by host overhead
#   on the CPU, not by the kernel: do more work per launch, or replay launches
#   in a CUDA graph.
