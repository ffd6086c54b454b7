"""
Below Triton: Gluon on Hopper
=============================

**What you will learn**

* what Gluon is (the language beneath Triton, where layouts, shared memory, TMA
  copies, barriers and asynchronous tensor-core instructions are yours to write),
  and when dropping to it pays: when the schedule you need is one Triton's
  compiler will not produce;
* the FP8 matmul of :doc:`tutorial 05 <05_fp8_matmul>`, whose float32 promotion
  stalls the tensor cores under Triton, rewritten so that each promotion runs
  while the next multiply is in flight;
* a TMA + :term:`mbarrier` pipeline and a persistent loop written by hand;
* how to read what the compiler made of a kernel without a GPU, and the ladder
  from Triton's schedule to cuBLASLt, measured rung by rung.
"""

# %%
# The answer first, from the committed measurements of every GPU:

from gpuperf.pages import gluon

print(gluon.in_one_paragraph())

# %%
# When Triton's schedule is the limit
# -----------------------------------
#
# Hopper's :term:`FP8` :term:`tensor cores <tensor core>` add products in an
# accumulator of about 14 significant bits. cuBLASLt, by default, hands that
# partial sum to a float32 accumulator every 128 products along K
# (:term:`promoted accumulation`). :doc:`Tutorial 05 <05_fp8_matmul>` measured
# Triton's version of the same at about 0.8× cuBLASLt, and found why: for every
# promotion, Triton waits until the chain of asynchronous :term:`wgmma`
# instructions has finished, adds on the CUDA cores, and only then starts the
# next multiply. How much that costs, for one program's 128 × 128 tile and one
# step of 128 products, on the page's GPU:

from gpuperf.pages import ceilings

hw = ceilings()
sms = hw.provenance["sm_count"]
per_sm = hw.measured["fp8_tflops"] * 1e12 / sms  # FP8 FLOP/s of one SM's tensor cores
mma_ns = 2 * 128 * 128 * 128 / per_sm * 1e9
add_ns = 128 * 128 / 128 / 1.98  # an SM adds 128 floats a clock; 1.98 GHz boost
print(f"one step's MMA: {mma_ns:.0f} ns; its 16,384 float32 additions: {add_ns:.0f} ns")
print(f"idle tensor cores if the two take turns: {add_ns / (mma_ns + add_ns):.0%}")

# %%
# Plus the wait itself: the tensor cores' pipeline drains and refills at every
# step. The additions need not take turns with the multiplies: the CUDA cores and
# the tensor cores are different units. The schedule that overlaps them keeps
# **two** partial accumulators: while the tensor cores fill one with step
# ``k + 1``, the CUDA cores add the other (step ``k``) into the float32 total.
# Triton's language has no way to say this: ``tl.dot`` hides the accumulator's
# registers and the wait. Gluon does not.
#
# Gluon in one screen
# -------------------
#
# Gluon (``triton.experimental.gluon``) ships with Triton 3.6. A Gluon kernel
# is Python like a Triton kernel, compiled by the same compiler from a later
# stage: there is no automatic pipelining, layout choice or memory allocation.
# You write
#
# * **layouts**: how a tile's elements are spread over threads and registers.
#   ``NVMMADistributedLayout`` is the one wgmma writes its results in;
#   ``NVMMASharedLayout`` the swizzled one it reads shared memory in.
# * **shared memory**: ``gl.allocate_shared_memory(dtype, [stages, rows, cols],
#   layout)``, indexed by slot.
# * **TMA copies and barriers**: ``tma.async_copy_global_to_shared`` moves a box
#   described by a tensor descriptor (:doc:`tutorial 06 <06_tma_persistent_matmul>`)
#   and arrives on an :term:`mbarrier` in shared memory when its bytes have
#   landed; ``mbarrier.wait`` blocks until they have.
# * **asynchronous MMAs**: ``warpgroup_mma(a, b, acc, is_async=True)`` starts a
#   wgmma and returns at once; ``warpgroup_mma_wait(num_outstanding=n)`` returns
#   when at most ``n`` are still running.
#
# The cost is that all of it is yours: the pipeline, the phases of each barrier,
# the register budget. Drop to Gluon for a kernel that matters and a schedule you
# can name; for anything else, Triton's compiler does this work well.
#
# The loads: a ring of slots
# --------------------------
#
# Each step's A and B tiles (128 × 128 FP8 each) land in one of four slots of a
# ring in shared memory. The copy engine is told how many bytes to expect and
# arrives on the slot's barrier when they have all landed:
#
# .. literalinclude:: ../../src/gpuperf/kernels/gluon/matmul_fp8.py
#    :pyobject: _load_at
#
# A step waits on its slot's barrier (its phase flips each time the ring comes
# round) and starts its MMA from zero (``use_acc=False``) into the registers of a
# partial sum that has already been promoted:
#
# .. literalinclude:: ../../src/gpuperf/kernels/gluon/matmul_fp8.py
#    :pyobject: _issue
#
# The kernel
# ----------
#
# Steps go in pairs, ``x`` then ``y``. After starting step ``k``, the kernel
# waits until one MMA is left running (``num_outstanding=1``: step ``k - 1`` has
# finished), adds that partial into the float32 accumulator while step ``k``
# runs, and refills the slot step ``k - 1`` read. The kernel is
# :term:`persistent <persistent kernel>`: one program per :term:`SM` takes
# output tiles in :term:`grouped order <grouped ordering>`, and its steps count
# on from one tile to the next, so the next tile's loads are in flight while
# this tile is scaled. The scaled tile goes to shared memory and leaves by a
# TMA store, which the copy engine finishes while the next tile is computed:
# the program waits for it only before it reuses the buffer, a tile later.
# With ``schedule="drain"`` it waits for every MMA before promoting it,
# Triton's schedule, kept as the ladder's first rung.
#
# .. literalinclude:: ../../src/gpuperf/kernels/gluon/matmul_fp8.py
#    :pyobject: _fp8_promoted_kernel
#
# What the compiler made of it
# ----------------------------
#
# Gluon kernels run only on the hardware (never in Triton's
# :term:`interpreter`), but they compile anywhere: Triton's wheel carries
# ``ptxas``, NVIDIA's assembler. Compiled here for ``sm_90``, each schedule's
# waits, registers and shared memory, and whether ``ptxas`` kept the wgmma
# instructions asynchronous:

from gpuperf.kernels.gluon import GluonFP8Config

for name, config in {
    "drain": GluonFP8Config(schedule="drain", persistent=False),
    "pingpong": GluonFP8Config(persistent=False),
    "pingpong, persistent": GluonFP8Config(),
}.items():
    print(f"{name:>20}: {gluon.compile_fp8_schedule(config).line()}")

# %%
# The pingpong schedule waits with one MMA left in flight (``wait_group 1``);
# its three float32 tiles (the total and two partials, 64 × 128 each per
# :term:`warpgroup`) take about 200 of a thread's 255 :term:`registers`, with
# nothing :term:`spilled <spill>`. ``ptxas`` is also the schedule's last judge:
# when a non-wgmma instruction touches an in-flight MMA's registers, it
# serializes every wgmma in the kernel (its note C7514) and the overlap is gone.
# Two first drafts here did that: one that moved the newest partial into the
# other's place at the end of each step (hence the pairs, whose partials never
# move), and one that chose the next tile's coordinates with a branch inside the
# loop (hence arithmetic). ``tests/test_gluon_matmul_fp8.py`` compiles the kernel
# on every CI run and fails if the note comes back.
#
# On a machine without a Hopper GPU the kernel refuses to run, with a message
# that says why, rather than running something else:

import torch
from gpuperf.kernels import to_fp8
from gpuperf.kernels.gluon import matmul_fp8_promoted
from gpuperf.pages import can_measure

device = "cuda" if can_measure() else "cpu"
a, scale_a = to_fp8(torch.randn(256, 512, device=device))
bt, scale_bt = to_fp8(torch.randn(384, 512, device=device))
try:
    out = matmul_fp8_promoted(a, bt.t(), scale_a, scale_bt)
    print(f"on {torch.cuda.get_device_name()}: {tuple(out.shape)} {out.dtype}")
except RuntimeError as err:
    print(f"RuntimeError: {err}")

# %%
# On a Hopper GPU the tests check it at odd shapes against the float64 product,
# and check that its error is no larger than ``torch._scaled_mm``'s on the same
# operands: both promote every 128 products, so they round alike.
#
# The ladder, measured
# --------------------
#
# In one run per GPU: the Gluon kernel with Triton's schedule, with the
# promotion beside the next MMA, persistent, and with TMA stores (the rungs
# below it store from the registers); Triton's tuned ``matmul_fp8``
# (tutorial 05: persistent, warp-specialized where its sweep chose); and
# :term:`cuBLASLt` (``torch._scaled_mm``, default accumulation). :term:`TFLOP/s`
# counts :math:`2MNK`:

from gpuperf.bench.catalog import GLUON_FP8
from gpuperf.pages import run_or_load

ladder = run_or_load(GLUON_FP8)
print(gluon.fp8_ladder_table(ladder))  # TFLOP/s, and × cuBLASLt (above 1: faster)
ladder.plot()

# %%
# Overlapping the promotion bought what the arithmetic above predicted, a little
# more than a tenth; persistence a few percent more; and the TMA store another
# tenth: a tile stored from the registers kept every warp busy with scattered
# writes while the tensor cores waited for the next tile. The kernel now runs
# a tenth faster than Triton's tuned one (which promotes half as often, every
# 256 products, so with more rounding error) and stays short of cuBLASLt.
#
# What the counters say
# ---------------------
#
# Nsight Compute, one launch of each at :math:`8192^3` (``scripts/gluon_capture.py``):
# how busy the tensor pipe was, how much the SMs read from :term:`L2`, and the
# largest reasons warps waited (percent of their active cycles):

from gpuperf.pages import captures

captures.show("ncu_gluon_fp8", gluon.ncu_table)

# %%
# Each rung shows up in the counters. Draining before every promotion leaves
# the tensor pipe busy about half the time, and warps wait at the barrier of
# each step for half their cycles; overlapping the promotion cuts those waits
# by two thirds and raises the tensor pipe's share; persistence and the TMA
# store raise it to about three quarters. cuBLASLt keeps its tensor pipe busy
# over 90% of the time while reading L2 at about three quarters of its peak,
# as the Gluon rungs do: it does more work per byte it reads. Its kernel's
# name says how: a 144 × 128 tile, and a cluster of two programs (``1x2``)
# that share operand tiles through TMA multicast, each loaded once from L2 for
# both. A 128 × 128
# FP8 tile does 128 FLOPs per byte of operands; at that L2 rate the Gluon
# kernel could not feed the tensor cores much faster than it does. The next
# rungs must read fewer bytes per FLOP. Multicast is not within reach: Gluon's
# Hopper TMA copy in Triton 3.6 (``tma.async_copy_global_to_shared``) takes no
# multicast mask. A wider tile is, with a register budget per partition (warp
# specialization): three float32 tiles of 64 × 256 would need 384 registers a
# thread, more than a thread has, so the promotion must change shape too. One
# rung tried here did not pay: two steps' operands to a slot, one barrier wait
# and one refill for two promotions, ran at 0.85-0.89× one step a slot (a slot
# is refilled only once both its steps are done, so the ring runs shallower).
#
# What to take away
# -----------------
#
# * Drop below Triton when you can name a schedule its compiler will not
#   produce, and the kernel is worth owning: here, promoting FP8 partial sums
#   while the next multiply runs.
# * In Gluon the pipeline is explicit: a ring of shared-memory slots, a barrier
#   per slot with a phase that flips each round, asynchronous MMAs waited for by
#   count.
# * The compiler is still there: ``ptxas`` decides whether wgmma instructions
#   overlap, and a register move in the wrong place serializes them. Compile
#   for ``sm_90`` on any machine and read its report before timing anything.
# * Measure each rung against the vendor library in the same run, and read the
#   counters for the next limit: this ladder stands at about 0.9× cuBLASLt with
#   L2 nearly as busy as cuBLASLt's, so the next rung must read fewer bytes per
#   FLOP.
# * Know what the lower level exposes before planning on it: cuBLASLt's cluster
#   multicast is one instruction Gluon on Hopper does not offer yet.
