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
* attention in the FlashAttention-3 way: a producer warp feeding two consumer
  warpgroups (:term:`warp specialization`), the softmax computed while the tensor
  cores run the next GEMM, against :doc:`tutorial 04 <04_fused_attention>`'s
  Triton kernel and cuDNN;
* how to read what the compiler made of a kernel without a GPU, and each ladder
  from Triton's schedule to the vendor's library, measured rung by rung.
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
# partial sum to a float32 accumulator at intervals along K
# (:term:`promoted accumulation`): :doc:`tutorial 05 <05_fp8_matmul>` found its
# default results clearly closer to the float64 product than its fast ones.
# NVIDIA does not document the interval; every 128 products is an inference from
# three things. CUTLASS's Hopper FP8 kernels promote every four wgmma
# instructions by default (``mma_promotion_interval = 4``: 128 products along
# K); the DeepSeek-V3 report chose the same interval, :math:`N_C = 128`,
# "equivalent to 4 WGMMAs", as the shortest that restores the precision without
# much overhead; and this page's kernel, promoting every 128 products, comes out
# no further from the float64 product than cuBLASLt on the same operands (a GPU
# test checks it). Tutorial 05 measured Triton's promoted kernel well short of
# cuBLASLt (the ladder below times both again), and found why: for every
# promotion, Triton waits until the chain of asynchronous :term:`wgmma`
# instructions has finished, adds on the CUDA cores, and only then starts the
# next multiply. How much that costs, for one
# program's 128 × 128 tile and one step of 128 products, counted in clocks of
# one SM so that both units run at the same clock, then in nanoseconds at the
# clock the page's measured FP8 ceiling implies (its FLOP/s over the SMs'
# tensor-core FLOPs a clock: a lower bound of the real clock, since no kernel
# keeps the tensor cores busy every clock):

from gpuperf.pages import ceilings
from gpuperf.pages.gluon import SM_PER_CLOCK, clock_ghz

hw = ceilings()
ghz = clock_ghz(hw, "fp8_tflops")
mma = 2 * 128 * 128 * 128 / SM_PER_CLOCK["fp8_tflops"]  # clocks of the tensor cores
add = 128 * 128 / SM_PER_CLOCK["fp32_add"]  # clocks of the CUDA cores
print(f"one step's MMA: {mma:.0f} clocks; its 16,384 float32 adds: {add:.0f} clocks")
print(f"at {ghz:.2f} GHz: {mma / ghz:.0f} ns and {add / ghz:.0f} ns")
print(f"idle tensor cores if the two take turns: {add / (mma + add):.0%}")

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

schedules = gluon.compile_schedules(
    gluon.compile_fp8_schedule,
    {
        "drain": GluonFP8Config(schedule="drain", persistent=False),
        "pingpong": GluonFP8Config(persistent=False),
        "pingpong, persistent": GluonFP8Config(),
    },
)
for name, schedule in schedules.items():
    print(f"{name}:\n    {schedule.line()}")

# %%
# The pingpong schedule waits with one MMA left in flight (``wait_group 1``);
# its three float32 tiles (the total and two partials, 64 × 128 each per
# :term:`warpgroup`) take most of a thread's 255 :term:`registers` (the count
# above), with nothing :term:`spilled <spill>`. ``ptxas`` is also the
# schedule's last judge: when a non-wgmma instruction touches an in-flight
# MMA's registers, it serializes every wgmma in the kernel (its note C7514) and
# the overlap is gone.
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
# operands: ours promotes every 128 products, as cuBLASLt does by the inference
# above, so the two should round alike.
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
print(gluon.overlap_against_arithmetic(ladder, hidden=(mma + add) / mma))

# %%
# Overlapping the promotion bought less than hiding every addition would by the
# arithmetic above: the overlapped kernel's tensor pipe is still idle for part
# of each step (the counters below). Persistence, then the TMA store, bought
# more (the opening paragraph gives each step's ratio): a tile stored from the
# registers kept every warp busy with scattered writes while the tensor cores
# waited for the next tile. The top rung runs ahead of Triton's tuned kernel
# and short of cuBLASLt (the table's ratios). Triton's kernel promotes once per
# step of its tuned ``BLOCK_K`` (its sweep's configs are in
# :doc:`tutorial 06 <06_tma_persistent_matmul>`); where that step is longer than
# this kernel's 128 products, it promotes less often, with more rounding error.
#
# What the counters say
# ---------------------
#
# Nsight Compute, one launch of each at the shape the table names
# (``scripts/gluon_capture.py``):
# how busy the tensor pipe was, how much the SMs read from :term:`L2`, and the
# largest reasons warps waited (percent of their active cycles):

from gpuperf.pages import captures

counters = captures.show("ncu_gluon_fp8", gluon.ncu_table)

# %%
# Each rung shows up in the counters. Draining before every promotion leaves
# the tensor pipe idle for much of the launch, and warps wait at the barrier of
# each step for a large share of their cycles; overlapping the promotion cuts
# those waits and raises the tensor pipe's share, and persistence and the TMA
# store raise it further. cuBLASLt's tensor pipe stays busier than any Gluon
# rung's.
#
# Is L2 what holds the Gluon kernel back? A tile's operands come from
# :term:`L2`, so the FLOPs a tile does per byte it loads say how many bytes must
# cross L2, and the L2 rate times those FLOPs per byte is the most L2 can feed.
# The arithmetic, from the capture and the benchmark's record:

print(gluon.l2_reading(counters, ladder))

# %%
# Check a counter against arithmetic before reading a limit from it. Every
# operand byte a Gluon tile loads crosses L2; where the tiles load more bytes
# than ncu's L2 rate times the launch's time (the lines above compare them, rung
# by rung, as the capture holds them), that product is not the traffic of the
# launch, and it cannot say whether L2 is the limit: counting the bytes
# themselves (``lts__t_bytes.sum``) in the same capture would. The tensor pipe's
# busy share (the last line) is what separates the Gluon rung from cuBLASLt's
# kernel, which these counters measure but do not explain.
#
# cuBLASLt's kernel name (the library table above) suggests how it keeps its
# pipe busy, but only suggests: NVIDIA does not document how its ``nvjet``
# kernel names read. Read by their pattern, ``144x128`` is an output tile wider
# than ours, and ``1x2`` a cluster of two programs, which on Hopper can share an
# operand tile through TMA multicast (each tile loaded once from L2 for both).
# That is an inference from the name; nothing measured here shows multicast at
# work. Multicast is not within reach here anyway: Gluon's Hopper TMA copy in
# Triton 3.6 (``tma.async_copy_global_to_shared``) takes no multicast mask. A
# wider tile is, with a register budget per partition (warp specialization):
# three float32 tiles of 64 × 256 would need 384 registers a thread, more than a
# thread has, so the promotion must change shape too. One variant tried in an
# exploratory run (its timings are not among the committed records) was slower
# than one step a slot: two steps' operands to a slot, one barrier wait and one
# refill for two promotions (a slot is refilled only once both its steps are
# done, so the ring runs shallower).
#
# Attention: the schedule of FlashAttention-3
# -------------------------------------------
#
# The second kernel where the schedule is the limit is attention. Per tile of
# 128 queries and 128 keys, :doc:`tutorial 04 <04_fused_attention>`'s kernel
# runs two GEMMs (:math:`QK^T` and :math:`PV`) and one softmax, whose
# exponentials run on the :term:`SFU`, an SM's unit for ``exp2``, at 16 a clock.
# How long each takes on one SM, at both head dims, in clocks and then in
# nanoseconds at the clock the page's measured float16 ceiling implies (as for
# the FP8 step above):

ghz16 = clock_ghz(hw, "fp16_tflops")
exp = 128 * 128 / SM_PER_CLOCK["exp2"]  # 16,384 exp2 on the SFUs
for d in (128, 64):
    gemm = 2 * (2 * 128 * 128 * d) / SM_PER_CLOCK["fp16_tflops"]
    idle = exp / (gemm + exp)  # the tensor cores' share if the two take turns
    print(
        f"D {d}: two GEMMs {gemm:.0f} clocks ({gemm / ghz16:.0f} ns), exp2 {exp:.0f} "
        f"clocks ({exp / ghz16:.0f} ns) at {ghz16:.2f} GHz; idle {idle:.0%}"
    )

# %%
# Triton's compiler makes each program's warps take turns: wait for the scores,
# compute the softmax while the tensor cores idle, then multiply. The tensor
# cores and the SFU are separate units, so FlashAttention-3 (Shah et al., 2024)
# keeps both busy with a schedule written by hand, in three steps, each a rung of
# this kernel (``gpuperf.kernels.gluon.attention_fa3``, forward only):
#
# 1. **Warp specialization.** One producer warp only issues :term:`TMA` copies
#    of K and V tiles into a ring of shared-memory slots; two consumer
#    :term:`warpgroups <warpgroup>`, 64 query rows each, only compute. The
#    producer needs few registers, so it gives them up (:term:`setmaxnreg`):
#    each consumer thread gets 240.
# 2. **Intra-warpgroup overlap.** A consumer issues :math:`QK_j^T` and
#    :math:`P_{j-1}V_{j-1}` as asynchronous wgmma, waits for the scores only,
#    and computes tile :math:`j`'s softmax while :math:`P_{j-1}V_{j-1}` runs.
# 3. **Ping-pong.** The two consumers take turns issuing their GEMMs
#    (:term:`ping-pong scheduling`), so that one's softmax runs while the
#    other's GEMMs hold the tensor cores.
#
# The producer: for each output tile, Q's two 64-row tiles once the consumers
# have stored the previous output through them, then K and V into the ring,
# each slot once both consumers have released it (its ``empty`` barrier counts
# two arrivals):
#
# .. literalinclude:: ../../src/gpuperf/kernels/gluon/attention.py
#    :pyobject: _producer
#
# One consumer's step over key tile ``j``: both GEMMs issued, the wait for the
# scores with one GEMM still in flight (``num_outstanding=1``), the
# :term:`online softmax` of tile ``j`` while :math:`P_{j-1}V_{j-1}` runs, then
# the slot released and the output rescaled. ``P`` never leaves the registers:
# it is the left operand of the second wgmma.
#
# .. literalinclude:: ../../src/gpuperf/kernels/gluon/attention.py
#    :pyobject: _step
#
# The kernel allocates the ring and its barriers, and forks: ``gl.warp_specialize``
# runs the first function in the launch's 4 warps and each other one in warps of
# its own, with the register budgets it is given:
#
# .. literalinclude:: ../../src/gpuperf/kernels/gluon/attention.py
#    :pyobject: _fa3_kernel
#
# Compiled for ``sm_90`` here, FlashAttention-2's order and the overlapped
# step:

from gpuperf.kernels.gluon import FA3Config, attention_fa3

schedules = gluon.compile_schedules(
    gluon.compile_attention_schedule,
    {
        "FlashAttention-2 order": FA3Config(overlap=False, persistent=False),
        "overlapped softmax": FA3Config(persistent=False),
    },
)
for name, schedule in schedules.items():
    print(f"{name}:\n    {schedule.line()}")

# %%
# The overlapped step waits with one GEMM in flight (``wait_group 1``). Its
# consumers hold the output tile, tile ``j``'s scores and tile ``j - 1``'s
# probabilities at once (64 + 64 + 32 registers a thread at D 128) in their 240,
# and ``ptxas`` spills a few bytes: the register budget, not the schedule, is
# this kernel's tightest constraint. Called like tutorial 04's ``attention``
# (same layout, grouped-query heads, ``causal``, the same errors):

q, k, v = (
    torch.randn(1, 8, 1024, 128, device=device, dtype=torch.float16) for _ in range(3)
)
try:
    out = attention_fa3(q, k, v, causal=True)
    print(f"on {torch.cuda.get_device_name()}: {tuple(out.shape)} {out.dtype}")
except RuntimeError as err:
    print(f"RuntimeError: {err}")

# %%
# The attention ladder, measured
# ------------------------------
#
# In one run per GPU, float16, 16,384 tokens a batch and :math:`H \cdot D = 2048`
# as in tutorial 04: the Gluon rungs (FlashAttention-2's order; the overlapped
# softmax; ping-pong on top of it; and the default, which keeps the overlap,
# leaves ping-pong out and is :term:`persistent <persistent kernel>` when not
# causal), tutorial 04's Triton kernel, SDPA's FlashAttention-2 backend and
# SDPA's :term:`cuDNN` backend (the baseline). TFLOP/s counts
# :math:`4 B H S^2 D`, half that when causal:

from gpuperf.bench.catalog import GLUON_ATTENTION

attention_ladder = run_or_load(GLUON_ATTENTION)
# TFLOP/s, and × cuDNN (above 1: faster)
print(gluon.attention_ladder_table(attention_ladder))
attention_ladder.plot()

# %%
# At D 128 the producer and consumers alone already run well ahead of Triton's
# kernel (the table's first and fifth rows); the overlapped softmax adds a
# little, and the default (persistent when not causal) runs at the ratios to
# cuDNN the opening paragraph gives. Ping-pong did not pay here (its step in the
# opening paragraph): with the overlap in place, making the two consumers take
# turns added waits at the barriers and took nothing off the tensor cores' idle
# time. Persistence helps where tiles are many and short (it loads the next
# tile's Q and K while this one is stored), and hurts causal attention, whose
# tiles differ in length: a fixed round robin leaves SMs idle at the end. An
# exploratory run of ``scripts/fa3_explore.py`` (its timings are not among the
# committed records) found the persistent causal kernel slower than a program
# per tile, so the default launches a program per tile there.
#
# At D 64 the GEMMs are half as long and the exponentials are not: the
# arithmetic above gives the exponentials as many clocks as the GEMMs. Where the
# kernel stands there, every length included (the opening paragraph counts
# S 4096 and longer only):

print(gluon.d64_reading(attention_ladder))

# %%
# The D 64 counters further down say where the time goes.
#
# The counters, one launch of each at the sequence length and head dim the
# table names (the "exp2 pipe" is the SFU's share of its peak):

captures.show("ncu_gluon_attention", gluon.ncu_table)

# %%
# The rungs raise the tensor pipe's share, from Triton's kernel through
# FlashAttention-2's order in Gluon to the overlap and persistence, to about
# cuDNN's; in the Gluon rungs the exp2 pipe is busy beside the tensor cores
# rather than between their GEMMs. cuDNN, too, launches one program per SM (its
# grid, in the table, is the SM count), with as many registers a thread at launch
# as this kernel's three warpgroups.
#
# At D 64, the same counters for the top rungs, Triton's kernel and cuDNN's:

captures.show("ncu_gluon_attention_d64", gluon.ncu_table)

# %%
# Here all three kernels stand in about the same place: the tensor pipe and
# the exp2 pipe each busy about as much as the other, neither near saturation.
# Each consumer warpgroup waits for its scores, exponentiates, then multiplies:
# with the GEMMs half as long, two warpgroups no longer have enough independent
# work in flight to keep both pipes fed, and this kernel's warps spend more of
# their cycles waiting at barriers than cuDNN's do. The lever is more softmax in
# flight per SM, not a different order of the same two: ``FA3Config(consumers=3)``
# runs three consumer warpgroups of 64 rows (four warpgroups share 128
# registers a thread: 160 for each consumer, 32 for the producer). An
# exploratory run of ``scripts/fa3_explore.py`` (not among the committed
# records; it prints each variant against cuDNN on a Hopper GPU) found it ahead
# of two consumers on long causal sequences but slower everywhere else, where
# fewer, taller tiles leave more SMs idle, so it is an option and two stay the
# default.
#
# What to take away
# -----------------
#
# * Drop below Triton when you can name a schedule its compiler will not
#   produce, and the kernel is worth owning: promoting FP8 partial sums while
#   the next multiply runs; computing attention's softmax while the tensor
#   cores run the next GEMM.
# * In Gluon the pipeline is explicit: a ring of shared-memory slots, a barrier
#   per slot with a phase that flips each round, asynchronous MMAs waited for by
#   count, and warps split into producer and consumers with their own register
#   budgets.
# * The compiler is still there: ``ptxas`` decides whether wgmma instructions
#   overlap, and a register move in the wrong place serializes them. Compile
#   for ``sm_90`` on any machine and read its report before timing anything.
# * Measure each rung against the vendor library in the same run, and keep only
#   what pays: FlashAttention-3's ping-pong bought nothing on top of the
#   overlap here, and persistence only where tiles are alike.
# * Read the counters for the next limit, and check them against arithmetic:
#   where the bytes the FP8 tiles must load through L2 exceed ncu's L2 rate
#   times the launch's time, that product does not settle whether L2 is the
#   limit; the gap to cuBLASLt shows as the tensor pipe's idle share. What
#   cuBLASLt does about it (a wider tile, a cluster sharing operands by
#   multicast) is read from its kernel's undocumented name: an inference.
#   Attention at D 64 needs more softmax in flight than two consumer
#   warpgroups give.
