"""
Persistent matmul with TMA on Hopper
====================================

**What you will learn**

* what the Tensor Memory Accelerator (TMA) does, what a tensor descriptor is,
  and the 16-byte rules a tensor must follow to be loaded through one;
* why a persistent grid (one program per SM looping over the output tiles)
  helps: launch and tail effects, and the next tile's loads overlapping this
  tile's epilogue;
* what warp specialization asks of the compiler, and whether it pays here;
* the ladder from tutorial 03's kernel to cuBLAS, measured rung by rung in
  bfloat16 and FP8, and which GPUs can run which rung.
"""

# %%
# Waves and tails
# ---------------
#
# :doc:`Tutorial 03 <03_matmul>` launches one program per output tile. The GPU
# runs them in *waves* of one program per SM (two, where registers and shared
# memory allow): each program fills its pipeline, runs, stores its tile, and
# exits, and the next starts from nothing. When the tile count is not a multiple
# of the SM count, the last wave runs partly empty. For the 128 x 256 tiles the
# tuning sweeps choose on an H100 (132 SMs):

from gpuperf.bench.catalog import PERSISTENT_SHAPES
from gpuperf.kernels._grid import cdiv

sms = 132
print("shape (MxNxK)       tiles  waves  last wave busy")
for m, n, k in PERSISTENT_SHAPES:
    tiles = cdiv(m, 128) * cdiv(n, 256)
    waves = cdiv(tiles, sms)
    busy = tiles - (waves - 1) * sms
    print(f"{m}x{n}x{k:<8} {tiles:>8} {waves:>6} {busy:>8}/{sms}")

# %%
# A **persistent** kernel launches exactly one program per SM (or fewer, if
# there are fewer tiles) and lets each loop over tiles ``pid, pid + P, pid + 2P,
# ...`` in the grouped order of tutorial 03. Each program sets up once, and
# Triton's software pipeliner, given the two loops flattened into one
# (``tl.range(..., flatten=True)``), issues the first loads of the next tile
# while the last products and the stores of this one run: the epilogue no
# longer leaves the SM idle. The tail does not vanish (the tile count is what it
# is) but it is paid once per program, not once per wave of fresh programs.
#
# The Tensor Memory Accelerator
# -----------------------------
#
# In tutorial 03 every thread computes the addresses of the elements it loads
# and the masks at the edges, and issues its loads; the warps that should be
# running the tensor cores spend instructions on address arithmetic. Hopper's
# TMA is a copy engine beside each SM: one thread hands it a **tensor
# descriptor** (the tensor's base address, shape, strides and the box to copy)
# and coordinates, and it moves the whole box from global to shared memory,
# computing addresses itself and filling what lies past the tensor's edges with
# zeros. A descriptor has rules (CUDA C++ Programming Guide, TMA): the base
# 16-byte aligned, the last dimension contiguous, every other stride a multiple
# of 16 bytes. ``tma_layout`` says whether and how a matrix can be described (a
# column-major matrix is described through its transpose):

import torch

from gpuperf.kernels.matmul_persistent import tma_layout

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

try:
    matmul_persistent(torch.randn(32, 64, dtype=torch.float16), torch.randn(64, 17, dtype=torch.float16))
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
# float16, which Triton's interpreter computes correctly without a GPU):

from gpuperf.kernels import PersistentConfig
from gpuperf.pages.report import can_measure
from gpuperf.reference import matmul_ref
from gpuperf.testing import assert_close

device = "cuda" if can_measure() else "cpu"
tile = 128 if device == "cuda" else 32
rungs = {
    "pointer": PersistentConfig(tile, tile, 32, 2, 4, 1 if device == "cpu" else 3, tma=False),
    "tma": PersistentConfig(tile, tile, 32, 2, 4, 1 if device == "cpu" else 3),
    "tma_ws": PersistentConfig(tile, tile, 32, 2, 4, 2 if device == "cpu" else 3, warp_specialize=True),
}
for m, n, k in [(1, 16, 32), (70, 48, 104), (130, 96, 64)]:
    a = torch.randn(m, k, device=device, dtype=torch.float16)
    b = torch.randn(k, n, device=device, dtype=torch.float16)
    for name, config in rungs.items():
        assert_close(f"{name} {m}x{n}x{k}", matmul_ref(a, b), matmul_persistent(a, b, config=config), k=k)
    print(f"{m}x{n}x{k}: every rung matches")

# %%
# Warp specialization
# -------------------
#
# In the kernels so far every warp does everything in turn: issue loads, wait,
# multiply, rescale. FlashAttention-3 and CUTLASS's Hopper GEMMs split the warps
# of a program into a *producer* that only issues TMA loads and *consumer*
# warpgroups that only run ``wgmma`` and the epilogue, synchronised through
# barriers in shared memory, so the tensor cores never wait for an instruction
# slot. Triton does this split itself for a loop marked
# ``tl.range(..., warp_specialize=True)`` (``PersistentConfig.warp_specialize``).
#
# Tuned once
# ----------
#
# ``nox -s bench`` times every candidate config (tile, stages, warps, and each
# rung) at every benchmarked shape after checking its output, and commits the
# sweep under ``src/gpuperf/kernels/tuned/<gpu>/``. The best config of each rung
# at each shape, in bfloat16 and in FP8 (e4m3, fast accumulation):

from gpuperf.bench import records, tuning
from gpuperf.pages import sweeps

gpu = records.gpu_slug(torch.cuda.get_device_name()) if can_measure() else records.reference_gpu()
for kernel in ("matmul_persistent", "matmul_fp8"):
    sweep = tuning.read_tuning(gpu, kernel=kernel)
    if sweep is None:
        print(f"MISSING: no {kernel} sweep for {gpu}; run `nox -s bench` on that GPU.")
        continue
    print(f"{kernel}: {sweeps.sweep_caption(sweep)}")
    print(sweeps.persistent_sweep_table(sweep))
    print()

# %%
# The ladder, measured
# --------------------
#
# In one run per GPU, in bfloat16: tutorial 03's kernel (its own tuned config),
# then the persistent kernel with computed pointers, with TMA, and with TMA and
# warp specialization (each at its own best config from the sweep), the tuned
# persistent kernel (the fastest of them), and cuBLAS. TFLOP/s counts
# :math:`2MNK`; the ceiling is cuBLAS at :math:`8192^3` in the same run.

import matplotlib.pyplot as plt

from gpuperf.bench.catalog import MATMUL_FP8, MATMUL_PERSISTENT
from gpuperf.pages import run_or_load

ladder = run_or_load(MATMUL_PERSISTENT)
print(ladder.table())
ladder.plot()
plt.show()

# %%
# Rung by rung, each provider's time relative to cuBLAS (above 1: faster than
# cuBLAS), read from the record:

if ladder.record is not None:
    keys = ("triton_t03", "triton_pointer", "triton_tma", "triton_tma_ws", "triton")
    print(ladder.record["provenance"]["gpu"])
    print(f"{'shape':>16}  " + "  ".join(f"{k.removeprefix('triton_') or 'tuned':>9}" for k in keys))
    ratios = {k: ladder.ratios(k) for k in keys}
    for x in MATMUL_PERSISTENT.x_values:
        cells = "  ".join(f"{ratios[k][x]:>8.2f}x" if x in ratios[k] else f"{'-':>9}" for k in keys)
        print(f"{'x'.join(map(str, x)):>16}  {cells}")

# %%
# The same ladder in FP8 (e4m3, per-tensor scales, fast accumulation), against
# cuBLASLt (``torch._scaled_mm``), from tutorial 05's benchmark:

fp8 = run_or_load(MATMUL_FP8)
print(fp8.table(scaling="tensor", accumulation="fast"))
fp8.plot(scaling="tensor", accumulation="fast")
plt.show()

# %%
# Host time per call
# ------------------
#
# The persistent wrappers build two tensor descriptors on every call, and the
# driver encodes each into a TMA descriptor before the launch. They launch
# through the same cache of compiled kernels as tutorial 03's wrapper (a
# descriptor is keyed by its dtype and block shape, what Triton compiles for),
# which skips ``kernel[grid]``'s argument binding; the rows "launched by
# kernel[grid]" go the long way, for comparison. At small sizes this host time, not
# the GPU, sets the pace (the GPU kept busy, 512³ products):

from gpuperf.bench.catalog import HOST_OVERHEAD

host = run_or_load(HOST_OVERHEAD)
print(host.table())

# %%
# Which GPU runs which rung
# -------------------------
#
# ====================  ==========  =====================  ====================================
# GPU (capability)      pointer     TMA (+ warp spec.)     FP8 (``matmul_fp8``)
# ====================  ==========  =====================  ====================================
# A100 (8.0)            yes         no: ``RuntimeError``   no: ``RuntimeError`` (no FP8 units)
# L4, L40S, RTX 4090    yes         no: ``RuntimeError``   yes, computed pointers (no TMA)
# (8.9)
# H100, H200 (9.0)      yes         yes                    yes, TMA, tuned here
# ====================  ==========  =====================  ====================================
#
# ``matmul_persistent`` with its default (TMA) config raises a ``RuntimeError``
# naming compute capability 9.0 on an older GPU, rather than quietly running
# another kernel: ``gpuperf.kernels.matmul`` is the portable one, and a config
# with ``tma=False`` runs anywhere Triton does. Only the H100 and the H200 were
# measured for these pages.
#
# See also the :ref:`optimization-strategy guide <sphx_glr_guides_03_optimization_strategy.py>`.
