"""
The GPU a kernel runs on: SMs, warps, memory and launches
=========================================================

Every later page measures kernels against this machine, so meet it first. A GPU is
a row of identical processors, the :term:`SMs <SM>`; a kernel is launched as a
:term:`grid` of :term:`programs <program>`, and each program runs on one SM as a
:term:`thread block` of :term:`warps <warp>`, 32 :term:`threads <thread>` each.
What the program reads comes from four levels of memory, from the few hundred
kilobytes of :term:`registers` and :term:`shared memory` on each SM to the
:term:`L2` cache they share and the gigabytes of :term:`HBM` beside the chip.

**What you will learn**

* how a Triton program maps onto the hardware: one program is one thread block (a
  CTA) of ``num_warps`` warps, the grid is how many of them a launch runs, and the
  program's :term:`block` of ``BLOCK_SIZE`` elements is spread over its threads;
* the memory hierarchy, with the sizes the GPU reports and the bandwidths measured
  here, and how fast data that fits in L2 moves against data that does not;
* :term:`occupancy`: how the registers per thread and the shared memory per program
  of a real kernel limit the warps an SM holds, worked out from what Triton's
  compiler reports;
* why a launch costs microseconds, and how many bytes HBM could have moved meanwhile.

Every number from a GPU was measured in one run of ``python
scripts/execution_model_capture.py`` and committed as a *capture* with its
provenance; the kernels on this page run here, through Triton's
:term:`interpreter` when there is no GPU. The answer first:
"""

from gpuperf.pages import execution_model as page

print(page.in_one_paragraph())

# %%
# 1. The chip: SMs, warps and threads
# -----------------------------------
#
# A GPU runs thousands of threads at once by running them in lockstep groups. The
# smallest is the **warp**: 32 threads that execute one instruction at a time
# together, each on its own data. An **SM** (streaming multiprocessor) holds many
# warps at once, each with its own registers, and each clock its four warp
# schedulers pick warps that are ready: while one warp waits hundreds of cycles for
# memory, others compute. That is how a GPU hides latency: not with large caches,
# but with many warps in flight.
#
# Warps are grouped into **thread blocks** (CUDA's *cooperative thread arrays*,
# CTAs): the threads of one block start together on one SM, share its shared
# memory and can wait for each other at a barrier. A block never moves between
# SMs, and no barrier spans two blocks (Hopper's thread-block clusters, which Triton's
# ``num_ctas`` asks for, are the exception, unused on this site). What one SM can
# hold, as the GPU reports it (``torch.cuda.get_device_properties``, and the CUDA
# driver's ``cuDeviceGetAttribute`` for what PyTorch does not give):

from gpuperf.pages import captures

chip = captures.show("execution_model", page.device_table)

# %%
# 2. A Triton program on the chip
# -------------------------------
#
# CUDA code is written for one thread; Triton code is written for one
# **program**, and a program *is* a thread block: the launch
# ``kernel[grid](..., num_warps=8)`` starts ``grid`` thread blocks of 8 warps
# (256 threads) each, spread over the SMs as room allows. Inside the program, a
# tensor of ``BLOCK_SIZE`` elements is not one thread's data: the compiler spreads
# it over the program's threads (its :term:`layout`), a few neighbouring elements
# per thread, so each thread issues wide vector loads and a warp's loads cover
# one contiguous stretch of memory (:term:`coalescing`). Here is the smallest
# real kernel of this site, gpuperf's vector add:
#
# .. literalinclude:: ../../src/gpuperf/kernels/vector_add.py
#    :pyobject: add_kernel
#
# The grid is arithmetic on the problem size: one program per block of
# ``BLOCK_SIZE`` elements, rounded up, and a mask for the last, partial block.

import torch
import triton
from gpuperf.kernels.vector_add import add_kernel
from gpuperf.pages import can_measure

device = "cuda" if can_measure() else "cpu"
n, block_size, num_warps = 10_000, 1024, 8
x, y = torch.randn(n, device=device), torch.randn(n, device=device)
out = torch.empty_like(x)
grid = (triton.cdiv(n, block_size),)
add_kernel[grid](x, y, out, n, BLOCK_SIZE=block_size, num_warps=num_warps)
torch.testing.assert_close(out, x + y)

threads = num_warps * 32
print(f"{n:,} elements / {block_size} per program -> a grid of {grid[0]} programs")
print(f"each program: {num_warps} warps x 32 = {threads} threads, ", end="")
print(f"{block_size // threads} elements per thread")
print(f"the last program's mask keeps {n - (grid[0] - 1) * block_size} of its lanes")

# %%
# Which program owned which element? A kernel of five lines writes each program's
# index, ``tl.program_id(0)``, into the elements it owns:

import triton.language as tl


@triton.jit
def whose(out_ptr, n, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    tl.store(out_ptr + offsets, pid, mask=offsets < n)


owner = torch.empty(10, dtype=torch.int32, device=device)
whose[(triton.cdiv(10, 4),)](owner, 10, BLOCK_SIZE=4)
print(owner.tolist())

# %%
# Programs run in no promised order and on whichever SM has room; the only thing a
# program knows is its index. On the GPU, the capture read what Triton's compiler
# made of ``gpuperf.kernels.vector_add`` at the size it benchmarks: how many
# programs the launch ran, and the layout that spreads each block over the threads
# (from the kernel's Triton GPU IR, ``compiled.asm["ttgir"]``):

print(page.program_reading(chip))

# %%
# 3. The memory hierarchy
# -----------------------
#
# A program's data lives at four levels, each larger and slower than the last:
#
# * **registers**: each thread's own values (a matmul's accumulator); the fastest
#   storage there is, split among the warps an SM holds;
# * **shared memory**: on-chip memory of each SM, shared by the threads of one
#   program (a matmul's tiles, staged there by ``tl.dot``'s pipeline);
# * **L2**: one cache for all the SMs, between them and HBM; every byte to or from
#   HBM passes through it;
# * **HBM**: the GPU's main memory, where every tensor lives.
#
# The sizes are what the GPU reports; the bandwidths are measured: HBM's by the
# site's ceilings (a 1 GiB copy and the fastest of a few streams), L2's by the
# sweep below. Registers and shared memory are not measured on this site.

memory = captures.show("execution_model", page.hierarchy_table)

# %%
# **Measuring L2.** A copy kernel (one read and one write of every byte) was timed
# on buffers from 1 MiB to 1 GiB, two ways. With :term:`do_bench`'s L2 flush before
# each run, as every benchmark on this site, the source always comes from HBM.
# Without the flush, what is still in L2 from the copy before is read from there: the
# copies were replayed back to back in a :term:`CUDA graph`
# (``triton.testing.do_bench_cudagraph``: one graph of as many copies as fill tens of
# milliseconds, replayed a few times, each replay timed whole and divided by its
# copies; the median of those replays), which also takes the host out: ``do_bench``
# without its flush would time, for the small copies, how fast Python launches them
# (the :ref:`profiling guide <sphx_glr_guides_01_profiling.py>` shows this). Each
# point of that series is a mean over many copies, so its band is narrow by
# construction. The kernel, as it ran:
#
# .. literalinclude:: ../../scripts/execution_model_capture.py
#    :pyobject: copy_kernel

sweep = captures.show("execution_model", page.plot_copy_sweep)

# %%

print(page.memory_reading(sweep))

# %%
# **Reading it.** In the shaded sizes both buffers would fit in the L2 the GPU reports,
# and the smaller of them do stay there: a replayed copy reads and writes L2 instead of
# HBM, faster than HBM streams even at its fastest (the stream bandwidth in the table
# above). But the rate falls before the shading ends: a copy keeps its buffers in L2
# only short of its full size. A cache this large is not one pool: NVIDIA builds it in
# two partitions, each caching data for the SMs beside it (the A100 whitepaper describes
# the design), so a line read by SMs on both sides can be held twice, and a
# set-associative cache evicts lines before it is full. Far past the shaded region
# nothing survives from one copy to the next, and both ways of timing read HBM's rate.
# At the smallest sizes neither way moves enough bytes to be limited by memory: a kernel
# of a few microseconds is mostly the cost of starting and finishing it (section 5),
# which is also why the peak rate is a floor for L2's own bandwidth, not a measure of
# it.
#
# The benchmarks flush L2 because a kernel timed on warm inputs looks faster than it
# will run inside a model, whose other layers have filled L2 with their own data. And
# fusion pays for the same reason: data kept in registers or shared memory between two
# steps never makes the round trip to HBM.

# %%
# 4. Occupancy: how many warps an SM holds
# ----------------------------------------
#
# An SM holds a program only if it has room for all of it: its warps, its
# registers (every thread's, allocated per warp) and its shared memory. The
# scarcest of the four resources sets how many programs an SM holds at once, and
# so how many warps it has to switch between while loads are in flight: the
# **occupancy**, warps resident over the most an SM can hold. Triton's compiler
# reports what each kernel needs (``compiled.n_regs``: registers per thread;
# ``compiled.metadata.shared``: shared memory per program, in bytes), and the
# arithmetic is NVIDIA's occupancy calculator's:
#
# .. literalinclude:: ../../src/gpuperf/pages/execution_model.py
#    :pyobject: occupancy
#
# For gpuperf's kernels, as they compiled on the GPU (a :term:`wave` is
# one round of programs filling every SM):

kernels = captures.show("execution_model", page.occupancy_table)

# %%
# The arithmetic, limit by limit:

print(page.occupancy_worked(kernels))

# %%
# Nsight Compute reports the same quantity as *Theoretical Occupancy*. The
# profiling guide's capture holds its reading of the kernels it profiled on the
# same GPU (gpuperf's, cuBLAS's, PyTorch's and a CUDA C++ one); here is the
# arithmetic above, fed what Nsight Compute reported for each, beside its answer:

print(page.ncu_agreement(kernels))

# %%
# **Reading it.** A memory-bound kernel wants many warps per SM: each thread does
# little but wait for its loads, and only other warps' loads fill that wait, so its
# registers and shared memory should stay small enough not to cap the warps (the
# row mean's registers do, as the profiling guide found). A matmul needs few: its
# tiles fill the shared memory and its accumulators the registers, so an SM holds
# few of its programs, yet each warp has a whole tile of independent
# multiply-adds to issue, and its loads are asynchronous copies into shared
# memory issued stages ahead (``num_stages``). Occupancy is a means, not a goal:
# enough warps, or enough independent work per warp, to keep loads in flight;
# past that, more buys nothing.

# %%
# 5. Why a launch costs microseconds
# ----------------------------------
#
# A kernel launch is not free on either side. The host runs Python, Triton's
# launcher and the CUDA driver to queue it; the GPU fetches the launch, starts the
# programs on the SMs and waits for the last to finish before the next kernel
# starts. The capture timed a kernel that does nothing:
#
# .. literalinclude:: ../../scripts/execution_model_capture.py
#    :pyobject: empty_kernel
#
# launched through ``kernel[grid]``, through the compiled kernel that launch
# returns, once followed by a synchronize, and on the GPU alone (the
# :term:`launch latency`):

launches = captures.show("execution_model", page.launch_table)

# %%

print(page.launch_reading(launches))

# %%
# **Reading it.** While the host spends microseconds on one launch, HBM could have
# moved megabytes: any kernel that moves less than that is bound by its launch,
# not by memory or compute, and the GPU sits idle between kernels when the host
# cannot keep ahead (:term:`host overhead`). The cures are the ones the rest of the
# site measures: more work per launch (:term:`fusion`, larger batches), and fewer
# launches from Python (CUDA graphs, ``torch.compile``).
#
# What to take away
# -----------------
#
# * A Triton program is a thread block of ``num_warps`` warps of 32 threads on one
#   SM; the grid is how many programs a launch runs, and the compiler spreads each
#   program's block over its threads as vector loads.
# * Memory is a hierarchy: registers and shared memory on each SM, L2 shared by
#   all, HBM beside the chip. Data that stays in L2 moves faster than HBM allows,
#   which is why benchmarks flush it and why fusion pays.
# * Registers per thread and shared memory per program decide how many warps an SM
#   holds; compute occupancy from what the compiler reports, and read it as a
#   means to keep loads in flight.
# * A launch costs microseconds of host time and some of GPU time whatever the
#   kernel does: below that much work, launches, not bytes, set the pace.
#
# Next: :ref:`tutorial 01 <sphx_glr_tutorials_01_vector_add.py>` times the vector
# add against the measured stream bandwidth, the fastest rate HBM was shown to
# stream, and sets it beside the copy's.
