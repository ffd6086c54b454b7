"""
FP8 matmul: scaling, accuracy and speed
=======================================

**What you will learn**

* what the two FP8 formats can hold (range and precision), and why a tensor
  stored in FP8 needs a scale;
* per-tensor against per-row scaling, measured on inputs with outlier rows: the
  error of each against the bfloat16 result and the float64 reference;
* the one change FP8 asks of tutorial 03's matmul: an epilogue that applies the
  scales before the single rounding;
* Hopper's fast FP8 accumulation: what it buys and what it costs, measured;
* how ``gpuperf.kernels.matmul_fp8`` compares with cuBLASLt
  (``torch._scaled_mm``), against the GPU's measured FP8 ceiling.
"""

# %%
# The answer first, from the committed measurements of every GPU:

from gpuperf.pages import fp8

print(fp8.in_one_paragraph())

# %%
# Two formats of eight bits
# -------------------------
#
# Hopper's :term:`tensor cores <tensor core>` multiply 8-bit floats
# (:term:`FP8`) at twice the rate of bfloat16. There are two formats
# (Micikevicius et al., 2022): **e4m3** (4 exponent bits, 3 mantissa bits;
# PyTorch's ``float8_e4m3fn``, which spends the infinities on more finite
# values) for weights and activations, and **e5m2** (5 and 2) for gradients,
# which need range more than precision. What each can hold, from
# ``torch.finfo`` (``eps``, the relative step, is :math:`2^{-mantissa}`; the
# smallest subnormal is the smallest normal times ``eps``):

import torch

print(f"{'format':<13} {'largest':>9} {'min normal':>10} {'min subnormal':>13}  step")
for dtype in (torch.float8_e4m3fn, torch.float8_e5m2, torch.bfloat16):
    info, name = torch.finfo(dtype), str(dtype).removeprefix("torch.")
    normal, step = info.smallest_normal, info.eps
    print(f"{name:<13} {info.max:9.3g} {normal:10.2e} {normal * step:13.2e}  {step}")

# %%
# e4m3 spans about :math:`2^{-9}` to 448: eighteen binades, against bfloat16's
# 256. A tensor cast as it is loses whatever falls outside. Activations of a few
# thousandths, say, land among the subnormals and keep one or two bits:

x = torch.randn(4096, generator=torch.Generator().manual_seed(0)) * 1e-3
direct = x.to(torch.float8_e4m3fn).float()
print(f"cast directly: relative error {fp8.relative_error(direct, x):.3f}")

# %%
# So FP8 tensors travel with a **scale**: ``x ≈ x_fp8 * scale``, with the scale
# chosen so that the largest magnitude lands on the format's largest value.
# ``gpuperf.kernels.to_fp8`` computes it (per tensor, per row or per column),
# divides in float32, clamps to the format's range and rounds:

from gpuperf.kernels import to_fp8

x_fp8, scale = to_fp8(x)
error = fp8.relative_error(x_fp8.float() * scale, x)
print(f"with a scale of {scale.item():.2e}: relative error {error:.4f}")

# %%
# The error left is the format's own: a relative step of :math:`2^{-3}` in e4m3,
# so half of that, about 6%, at worst per element and about 2-3% on average.
#
# Per tensor or per row
# ---------------------
#
# One scale per tensor is cheap, but a single large row sets it for all rows:
# the others shrink towards the bottom of the format. Real activations have
# such rows (outlier tokens are well documented in large language models). One
# scale per row of A (and per column of B) keeps each row's own range. Measured
# here on A with 8 of 256 rows made larger than the rest by a factor from 1 to
# :math:`10^5`, with the FP8 matmul of this page (run by Triton's
# :term:`interpreter` when the page is built without a GPU), against the float64
# product of the unquantized inputs (error on the 248 ordinary rows, and on all
# rows) and against the bfloat16 product:

from gpuperf.kernels import matmul_fp8
from gpuperf.pages import can_measure

device = "cuda" if can_measure() else "cpu"
shape = (4096, 4096, 4096) if device == "cuda" else (256, 128, 256)


def fp8_matmul(a, b, axis):
    """A @ B in FP8: a scale per tensor (axis=None) or per row of A and column of B."""
    a8, scale_a = to_fp8(a, axis=axis)
    bt8, scale_bt = to_fp8(b.t(), axis=axis)  # per column of B = per row of Bᵀ
    return matmul_fp8(a8, bt8.t(), scale_a, scale_bt.t())


errors = fp8.ErrorTable(shape)
for factor in (1, 10**2, 10**3, 10**4, 10**5):
    a, b = fp8.outlier_case(factor, shape, device)
    exact = a.double() @ b.double()
    errors.add(factor, "bfloat16", a.bfloat16() @ b.bfloat16(), exact)
    errors.add(factor, "per tensor", fp8_matmul(a, b, axis=None), exact)
    errors.add(factor, "per row", fp8_matmul(a, b, axis=-1), exact)
print(errors)

# %%
# Up to outliers a thousand times larger, the two scalings give the same error:
# FP8 is floating point, so a row a thousand times smaller than the largest
# still sits among e4m3's normal numbers (eighteen binades) with all three
# mantissa bits, and the error is the format's own rounding (the first rows of
# the table). Per-tensor scaling starts to lose when the ordinary rows fall
# under e4m3's smallest normal number, :math:`2^{-6}`, about 1/29000 of its
# largest (448), into the subnormals, where each halving costs one more bit;
# per-row scaling is untouched. On this data it halves the error only once the
# outliers are between :math:`10^4` and :math:`10^5` times larger. (The
# DeepSeek-V3 report goes further in the same direction: a scale per
# :math:`1 \times 128` tile of activations, 128 consecutive elements of a row
# along K, and per :math:`128 \times 128` block of weights.) Either way FP8
# stays an order of magnitude less accurate than
# bfloat16: a trade of accuracy for speed, worth making where the model
# tolerates it.
#
# The kernel
# ----------
#
# ``matmul_fp8`` is tutorial 03's tiled matmul made :term:`persistent
# <persistent kernel>`: it launches one :term:`program` per :term:`SM`, each
# looping over output tiles in tutorial 03's grouped order, and on Hopper it
# loads its tiles through the :term:`TMA` copy engine instead of computed
# pointers. :doc:`Tutorial 06 <06_tma_persistent_matmul>` builds that kernel up
# step by step in bfloat16 and measures what each step buys; for FP8, only its
# :term:`epilogue` knows about scales: the float32 accumulator of each output
# :term:`tile` is multiplied by the scale of A (one number, or one per row) and
# of B (one, or one per column), then rounded once to the output dtype:
#
# .. literalinclude:: ../../src/gpuperf/kernels/matmul_persistent.py
#    :pyobject: _store_tile
#
# Hopper's FP8 tensor cores read both operands K-major: A row-major and B
# column-major, the layout ``torch._scaled_mm`` insists on. ``matmul_fp8`` takes
# any layout and copies an operand into that one when it must (a copy of
# :math:`K \times N` bytes beside a matmul of :math:`2MNK` FLOPs). The result
# matches the float64 reference on odd shapes, both scalings and both formats:

from gpuperf.reference import matmul_fp8_ref
from gpuperf.testing import assert_close

for (m_, n_, k_), axis, b_dtype in [
    ((1, 16, 32), None, torch.float8_e4m3fn),
    ((37, 48, 64), -1, torch.float8_e4m3fn),
    ((70, 17, 96), -1, torch.float8_e5m2),
]:
    a8, scale_a = to_fp8(torch.randn(m_, k_, device=device), axis=axis)
    b = torch.randn(n_, k_, device=device)
    bt8, scale_bt = to_fp8(b, axis=axis, dtype=b_dtype)
    out = matmul_fp8(a8, bt8.t(), scale_a, scale_bt.t())
    ref = matmul_fp8_ref(a8, bt8.t(), scale_a, scale_bt.t())
    assert_close("matmul_fp8", ref, out, k=k_)
    scaling = "per tensor" if axis is None else "per row"
    print(f"{m_}x{n_}x{k_}, {scaling}, B {b_dtype}: matches")

# %%
# Bad input gets an error that says what was expected:

a8, scale_a = to_fp8(torch.randn(8, 32, device=device))
bt8, scale_bt = to_fp8(torch.randn(16, 32, device=device))
for bad in [
    lambda: matmul_fp8(a8.float(), bt8.t(), scale_a, scale_bt),
    lambda: matmul_fp8(a8, bt8.t(), torch.ones(8, device=device), scale_bt),
    lambda: matmul_fp8(a8, bt8.t(), scale_a, scale_bt, out_dtype=torch.float8_e4m3fn),
    lambda: to_fp8(torch.tensor([1.0, float("inf")])),
]:
    try:
        bad()
    except (TypeError, ValueError) as err:
        print(f"{type(err).__name__}: {err}")

# %%
# Fast accumulation
# -----------------
#
# Hopper's FP8 :term:`wgmma` instructions keep their running sum in a
# reduced-precision accumulator (about 14 significant bits, as the DeepSeek-V3
# report measured). Left alone across all of K, the truncation error grows with
# K; :term:`cuBLASLt` therefore promotes the partial sums into a float32
# accumulator at intervals (:term:`promoted accumulation`), unless asked for
# ``use_fast_accum=True`` (:term:`fast accumulation`). Triton exposes the same
# choice as ``tl.dot(..., max_num_imprecise_acc=n)``: promote every ``n``
# products. ``matmul_fp8`` promotes once per step along K by default (every
# ``BLOCK_K`` products: 128 or 256, whichever the sweep found faster) and not at
# all with ``fast_accum=True``. On the H100, at 8192 x 8192 x 4096, both
# libraries' fast results were off the float64 reference by clearly more than
# the promoted ones (the probe's numbers are in the comment on
# ``gpuperf.bench.catalog.FP8_FAST_ACCUM_K_FACTOR``); the benchmark's
# correctness check allows fast accumulation an error bound that grows with K
# accordingly.
#
# Speed
# -----
#
# Both scalings and both accumulation modes, in one run per GPU, against
# cuBLASLt through ``torch._scaled_mm`` with the same scales and the same
# accumulation mode. :term:`TFLOP/s` counts :math:`2MNK`; the dashed line is
# the FP8 ceiling of the same accumulation mode, cuBLASLt's own rate measured in
# the same run and named above the plot (each GPU's line) by its call, the shape
# that set it and its mode. A ceiling is a roof only for the mode it was measured
# in: fast accumulation skips the promotions and runs past the promoted one,
# so each mode is drawn under its own. The ``pointer``, ``tma`` and ``tma_ws``
# lines are variants of the same persistent kernel, each at its own best
# config: loading through computed pointers, through TMA, and through TMA with
# the program's warps split into loaders and multipliers (warp specialization);
# tutorial 06 explains each. The tuned line is one of those variants at the config the
# tuning sweep picked per shape, timed again in this run: where another variant's line
# runs above it, the sweep's pick lost in this run, and tutorial 06 reads such gaps
# against how far two timings of the same kernel fall apart.

from gpuperf.bench.catalog import MATMUL_FP8
from gpuperf.pages import run_or_load

bench = run_or_load(MATMUL_FP8)
bench.show(accumulation="fast")

# %%
# With float32 promotion once per step along K:

bench.show(accumulation="float32")

# %%
# Where it stands, per scaling and accumulation mode (ratios are cuBLASLt's time
# over ours: above 1, ours is faster):

print(fp8.ratio_table(bench))

# %%
# With fast accumulation, Triton's persistent TMA kernel keeps pace with
# cuBLASLt. With promotion it falls behind: each promotion waits for the
# asynchronous ``wgmma`` chain to finish before the float32 addition, so the
# tensor cores idle while it runs. cuBLASLt loses far less to promotion
# (compare its TFLOP/s in the two plots), so its kernels, which are closed,
# evidently hide most of that work; :doc:`tutorial 08 <08_gluon_hopper>` writes
# one schedule that does, with a second partial accumulator filled by the
# tensor cores while the CUDA cores add the first. Promoting less often helps,
# which is why this mode has its own sweep: it favours steps 256 deep along K
# (one promotion per 256 products; still within the float32-promoted error
# bound) and smaller output tiles than fast accumulation does. (Promoting after every
# instruction, ``max_num_imprecise_acc=0``, was slower still, at the same error, in an
# exploratory run whose timings are not among the committed records.) What remains is
# a scheduling gap, not arithmetic. The configs the
# sweep chose for each mode, per shape:

print(fp8.chosen_configs(bench))

# %%
# For the bfloat16 products at the same shapes, cuBLAS's results are on
# :doc:`tutorial 06 <06_tma_persistent_matmul>`'s page; the opening paragraph
# puts FP8 with fast accumulation against them at :math:`8192^3`.
#
# What to take away
# -----------------
#
# * FP8 halves the bytes and doubles the tensor-core rate, but a tensor needs a
#   scale to land in e4m3's eighteen binades; per-row (per-column) scales protect
#   ordinary rows from outliers, at little cost in speed.
# * Scales belong in the epilogue: the kernel multiplies the float32
#   accumulator once, before the single rounding to the output dtype.
# * Fast accumulation is where the FP8 speed is; promoting to float32 buys
#   accuracy and costs a scheduling gap that cuBLASLt hides better than Triton.
# * FP8 stays an order of magnitude less accurate than bfloat16: use it where
#   the model tolerates that.
#
# See also the :ref:`optimization-strategy guide
# <sphx_glr_guides_03_optimization_strategy.py>`.
