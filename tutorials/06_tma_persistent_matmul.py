"""
Persistent matmul with TMA on Hopper
====================================

**What you will learn**

* what the Tensor Memory Accelerator (TMA) does, what a tensor descriptor is,
  and the 16-byte rules a tensor must follow to be loaded through one;
* what a persistent grid (one program per SM looping over the output tiles)
  saves (program start-ups, and the next tile's loads issued while this tile's
  epilogue runs) and what it does not: the tail of the last round, and an
  epilogue that still holds up the tensor cores;
* what warp specialization asks of the compiler, and whether it pays here;
* the ladder from tutorial 03's kernel to cuBLAS, measured rung by rung in
  bfloat16 and FP8, each step read against how far two timings of the same
  kernel differ, and which GPUs can run which rung.
"""

# %%
# The answer first, from the committed measurements of every GPU:

from gpuperf.pages import persistent

print(persistent.in_one_paragraph())

# %%
# Waves and tails
# ---------------
#
# :doc:`Tutorial 03 <03_matmul>` launches one :term:`program` per output
# :term:`tile`. The GPU runs them in :term:`waves <wave>` of one program per
# :term:`SM` (two, where :term:`registers` and :term:`shared memory` allow):
# each program fills its pipeline, runs, stores its tile, and exits, and the
# next starts from nothing. When the tile count is not a multiple of the SM
# count, the last wave runs partly empty. For the tile the tuning sweep chose on
# the page's GPU (the H100 has |h100-sms| SMs):

from gpuperf.bench.catalog import PERSISTENT_SHAPES
from gpuperf.pages import ceilings
from triton import cdiv

sms = ceilings().provenance["sm_count"]
block_m, block_n = persistent.tuned_tile()
print(f"{block_m} x {block_n} tiles on {sms} SMs")
print("shape (MxNxK)      tiles  waves  last wave busy")
for m, n, k in PERSISTENT_SHAPES:
    tiles = cdiv(m, block_m) * cdiv(n, block_n)
    waves = cdiv(tiles, sms)
    busy = tiles - (waves - 1) * sms
    shape = f"{m}x{n}x{k}"
    print(f"{shape:<16} {tiles:>7} {waves:>6} {busy:>11}/{sms}")

# %%
# A **persistent** kernel (:term:`persistent kernel`) launches exactly one
# program per SM (or fewer, if there are fewer tiles) and lets each loop over
# tiles ``pid, pid + P, pid + 2P, ...`` in the :term:`grouped order <grouped
# ordering>` of tutorial 03. What that saves: each program starts up once (its
# set-up and the prologue that fills its pipeline), not once per tile, and
# Triton's software pipeliner, given the two loops flattened into one
# (``tl.range(..., flatten=True)``), issues the first loads of the next tile
# while the last products and the stores of this one run, so the next tile's
# operands are on their way during the :term:`epilogue`. The tensor cores still
# wait for it: the same warps convert and store this tile before they can issue
# the next tile's products. An epilogue overlaps the next tile's products only
# when other warps run it (:term:`warp specialization`, below; CUTLASS's
# :term:`ping-pong <ping-pong scheduling>` Hopper kernels give two consumer
# warpgroups alternate tiles, so one stores while the other multiplies). What
# the persistent grid does not save either is the tail. With this static round
# robin, program ``pid`` gets every ``P``-th tile: when the tiles do not divide
# evenly, some programs get one tile more than others, and in the last round the
# SMs whose programs have finished sit idle, as in the last wave above.
# :doc:`Tutorial 08 <08_gluon_hopper>` meets that on causal attention, whose
# tiles also differ in length. Removing the tail takes dividing the work along
# K, not just the tiles: :term:`stream-K` (Osama et al., 2023) gives every
# program the same number of K steps, splitting some tiles' K loops between
# programs, and :term:`split-K` divides every tile's K loop; both then add up
# the partial sums of each split tile.
#
# The Tensor Memory Accelerator
# -----------------------------
#
# In tutorial 03 every thread computes the addresses of the elements it loads
# and the :term:`masks <mask>` at the edges, and issues its loads; the
# :term:`warps <warp>` that should be running the :term:`tensor cores <tensor
# core>` spend instructions on address arithmetic. Hopper's :term:`TMA` is a
# copy engine beside each SM: one thread hands it a **tensor
# descriptor** (the tensor's base address, shape, strides and the box to copy)
# and coordinates, and it moves the whole box from global to shared memory,
# computing addresses itself and filling what lies past the tensor's edges with
# zeros. A descriptor has rules (CUDA C++ Programming Guide, TMA): the base
# 16-byte aligned, the last dimension contiguous, every other stride a multiple
# of 16 bytes. ``tma_layout`` says whether and how a matrix can be described (a
# column-major matrix is described through its transpose):

import torch
from gpuperf.kernels.tma import tma_layout

h = torch.randn(64, 72, dtype=torch.float16)
examples = {
    "contiguous 64 x 72 fp16": h,
    "its transpose (column-major)": h.t(),
    "64 x 17 fp16 (rows of 34 bytes)": torch.randn(64, 17, dtype=torch.float16),
    "a slice starting 2 bytes in": h.view(-1)[1:4097].view(64, 64),
    "every other column": h[:, ::2],
}
for name, t in examples.items():
    print(f"{name:<34} {tma_layout(t)}")

# %%
# ``matmul_persistent`` refuses an operand TMA cannot describe, with a message
# that says why and what to do (``gpuperf.kernels.matmul`` takes any strides):

from gpuperf.kernels import matmul_persistent

a = torch.randn(32, 64, dtype=torch.float16)
try:
    matmul_persistent(a, torch.randn(64, 17, dtype=torch.float16))
except ValueError as err:
    print(f"ValueError: {err}")

# %%
# The kernel
# ----------
#
# The TMA version: descriptors are built on the host
# (``triton.tools.tensor_descriptor.TensorDescriptor``), so the kernel needs no
# scratch memory to build them; each step along K is two descriptor loads and
# one ``tl.dot``, with no masks and no pointer arithmetic. The epilogue
# (:doc:`tutorial 05 <05_fp8_matmul>` shows it) keeps its own tile counter, so
# the pipeliner need not carry the first loads' coordinates to the last store.
#
# .. literalinclude:: ../../src/gpuperf/kernels/matmul_persistent.py
#    :pyobject: _matmul_tma_persistent_kernel
#
# The rung below it, ``_matmul_persistent_kernel``, is the same loop with
# tutorial 03's computed pointers. Each rung matches the reference (here in
# float16; the tests check bfloat16 too, on the GPU and in Triton's
# :term:`interpreter`):

from gpuperf.kernels import PersistentConfig
from gpuperf.pages import can_measure
from gpuperf.reference import matmul_ref
from gpuperf.testing import assert_close

device = "cuda" if can_measure() else "cpu"
tile, stages = (128, 3) if device == "cuda" else (32, 1)
rungs = {
    "pointer": PersistentConfig(tile, tile, 32, 2, 4, stages, tma=False),
    "tma": PersistentConfig(tile, tile, 32, 2, 4, stages),
    "tma_ws": PersistentConfig(
        tile, tile, 32, 2, 4, max(stages, 2), warp_specialize=True
    ),
}
for m, n, k in [(1, 16, 32), (70, 48, 104), (130, 96, 64)]:
    a = torch.randn(m, k, device=device, dtype=torch.float16)
    b = torch.randn(k, n, device=device, dtype=torch.float16)
    for name, config in rungs.items():
        out = matmul_persistent(a, b, config=config)
        assert_close(f"{name} {m}x{n}x{k}", matmul_ref(a, b), out, k=k)
    print(f"{m}x{n}x{k}: every rung matches")

# %%
# Warp specialization
# -------------------
#
# In the kernels so far every warp does everything in turn: issue loads, wait,
# multiply, rescale. FlashAttention-3 and CUTLASS's Hopper GEMMs split the warps
# of a program into a *producer* that only issues TMA loads and *consumer*
# :term:`warpgroups <warpgroup>` that only run :term:`wgmma` and the epilogue,
# synchronised through barriers in shared memory, so the tensor cores never wait
# for an instruction slot: :term:`warp specialization`. It is also what lets an
# epilogue overlap the next tile's products, when the consumers take tiles in
# turn. Triton does a split of its own for a loop marked
# ``tl.range(..., warp_specialize=True)`` (``PersistentConfig.warp_specialize``);
# which warps it gives the epilogue is the compiler's choice, and the ladder
# below measures what the flag buys.
#
# Tuned once
# ----------
#
# ``nox -s bench`` times every candidate :term:`config <autotune config>`
# (tile, stages, warps, and each rung) at every benchmarked shape after checking
# its output, and commits the sweep under ``src/gpuperf/kernels/tuned/<gpu>/``.
# The best config of each rung at each shape on the page's GPU, in bfloat16 and
# in :term:`FP8` (e4m3, fast accumulation):

print(persistent.sweep_tables())

# %%
# The ladder, measured
# --------------------
#
# In one run per GPU, in bfloat16: tutorial 03's kernel (its own tuned config),
# then the persistent kernel with computed pointers, with TMA, and with TMA and
# warp specialization (each at its own best config from the sweep), the tuned
# persistent kernel (the rung the sweep picked per shape, timed again: the same kernel
# and config as one rung, so a gap between the two columns is timing spread), and
# :term:`cuBLAS`. :term:`TFLOP/s`
# counts :math:`2MNK`; the dashed line is the bf16 ceiling measured in the same
# run, named above the plot (each GPU's line) by its call and the shape that set
# it.

from gpuperf.bench.catalog import MATMUL_FP8, MATMUL_PERSISTENT
from gpuperf.pages import show

ladder = show(MATMUL_PERSISTENT)

# %%
# Rung by rung, each provider's time relative to cuBLAS (above 1: faster than
# cuBLAS), read from the record. The ``tuned`` column times again the kernel
# and config of one of the rungs, so where the two differ, the gap is how far
# two timings of the same thing can fall apart in one run: read a step between
# rungs as a gain only when it is larger than that (the opening paragraph does).

print(persistent.ladder_table(ladder))

# %%
# The same ladder in FP8 (e4m3, per-tensor scales, fast accumulation), against
# :term:`cuBLASLt` (``torch._scaled_mm``), from tutorial 05's benchmark:

show(MATMUL_FP8, scaling="tensor", accumulation="fast")

# %%
# Host time per call
# ------------------
#
# The persistent wrappers build two tensor descriptors on every call, and the
# driver encodes each into a TMA descriptor before the launch. They launch
# through the same cache of compiled kernels as tutorial 03's wrapper (a
# descriptor is keyed by its dtype and block shape, what Triton compiles for),
# which skips ``kernel[grid]``'s argument binding; the rows "launched by
# kernel[grid]" go the long way, for comparison. At small sizes this
# :term:`host time per call`, not the GPU, sets the pace (the GPU kept busy,
# 512³ products):

from gpuperf.bench.catalog import HOST_OVERHEAD
from gpuperf.pages import run_or_load

print(run_or_load(HOST_OVERHEAD).table())

# %%
# Which GPU runs which rung
# -------------------------
#
# .. list-table::
#    :header-rows: 1
#
#    * - GPU (capability)
#      - pointer
#      - TMA (+ warp spec.)
#      - FP8 (``matmul_fp8``)
#    * - A100 (8.0)
#      - yes
#      - no: ``RuntimeError``
#      - no: ``RuntimeError`` (no FP8 units)
#    * - L4, L40S, RTX 4090 (8.9)
#      - yes
#      - no: ``RuntimeError``
#      - yes, computed pointers (no TMA)
#    * - H100, H200 (9.0)
#      - yes
#      - yes
#      - yes, TMA, tuned here
#
# ``matmul_persistent`` with its default (TMA) config raises a ``RuntimeError``
# naming compute capability 9.0 on an older GPU, rather than quietly running
# another kernel: ``gpuperf.kernels.matmul`` is the portable one, and a config
# with ``tma=False`` runs anywhere Triton does. Only the H100 and the H200 were
# measured for these pages.
#
# See also the :ref:`optimization-strategy guide
# <sphx_glr_guides_03_optimization_strategy.py>`.
#
# What to take away
# -----------------
#
# * A one-program-per-tile launch runs in waves; a persistent grid of one
#   program per SM starts each program once and has the next tile's loads in
#   flight during this tile's epilogue, but the tensor cores still wait for
#   that epilogue (only warp specialization can overlap it with the next
#   tile's products), and with a static round robin it keeps the tail of the
#   last round: removing that takes dividing the work along K (stream-K,
#   split-K).
# * A persistent grid is not a speed-up by itself: read the ladder one step at
#   a time (``pointer`` against ``t03``, then ``tma`` against ``pointer``) to
#   see which change bought what; the opening paragraph does it from the records.
# * TMA moves whole boxes between global and shared memory from a descriptor:
#   no address arithmetic or masks in the loop, at the price of 16-byte rules
#   on the operands' layout.
# * Warp specialization is one flag in Triton; whether it pays depends on the
#   shape, so the sweep tries it like any other config.
# * A step smaller than the gap between two timings of the same kernel and
#   config is no measurable difference, however many digits the ratio has.
# * Each rung is checked against the reference and timed in the same run as
#   cuBLAS; the tuned kernel is the rung the sweep picked per shape, not a new kernel.
