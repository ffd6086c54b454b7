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
# Two formats of eight bits
# -------------------------
#
# Hopper's tensor cores multiply 8-bit floats at twice the rate of bfloat16.
# There are two formats (Micikevicius et al., 2022): **e4m3** (4 exponent bits,
# 3 mantissa bits; PyTorch's ``float8_e4m3fn``, which spends the infinities on
# more finite values) for weights and activations, and **e5m2** (5 and 2) for
# gradients, which need range more than precision. What each can hold, from
# ``torch.finfo``:

import torch

print("format          largest    smallest normal   smallest subnormal   relative step (2^-mantissa)")
for dtype, mantissa in ((torch.float8_e4m3fn, 3), (torch.float8_e5m2, 2), (torch.bfloat16, 7)):
    info = torch.finfo(dtype)
    subnormal = info.smallest_normal * 2.0**-mantissa
    print(
        f"{str(dtype).removeprefix('torch.'):<14} {info.max:>9.0f} {info.smallest_normal:>18.2e}"
        f" {subnormal:>20.2e} {2.0**-mantissa:>24}"
    )

# %%
# e4m3 spans about :math:`2^{-9}` to 448: eighteen binades, against bfloat16's
# 256. A tensor cast as it is loses whatever falls outside. Activations of a few
# thousandths, say, land among the subnormals and keep one or two bits:

x = torch.randn(4096, generator=torch.Generator().manual_seed(0)) * 1e-3
direct = x.to(torch.float8_e4m3fn).float()
print(f"cast directly: relative error {((direct - x).norm() / x.norm()).item():.3f}")

# %%
# So FP8 tensors travel with a **scale**: ``x ≈ x_fp8 * scale``, with the scale
# chosen so that the largest magnitude lands on the format's largest value.
# ``gpuperf.kernels.to_fp8`` computes it (per tensor, per row or per column),
# divides in float32, clamps to the format's range and rounds:

from gpuperf.kernels import to_fp8

x_fp8, scale = to_fp8(x)
scaled = x_fp8.float() * scale
print(f"with a scale of {scale.item():.2e}: relative error {((scaled - x).norm() / x.norm()).item():.4f}")

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
# :math:`10^5`, with the FP8 matmul of this page (run by Triton's interpreter
# when the page is built without a GPU), against the float64 product of the
# unquantized inputs (error on the 248 ordinary rows, and on all rows) and
# against the bfloat16 product:

from gpuperf.kernels import matmul_fp8
from gpuperf.pages.report import can_measure

device = "cuda" if can_measure() else "cpu"
m, n, k = (4096, 4096, 4096) if device == "cuda" else (256, 128, 256)


def relative_error(out, ref, rows=slice(None)):
    return ((out[rows].double() - ref[rows]).norm() / ref[rows].norm()).item()


def outlier_case(factor):
    """A (M, K) with 8 rows ``factor`` times larger than the rest, B (K, N), on ``device``."""
    g = torch.Generator().manual_seed(1)
    a = torch.randn(m, k, generator=g)
    a[:: m // 8] *= factor
    return a.to(device), torch.randn(k, n, generator=g).to(device)


ordinary = torch.ones(m, dtype=torch.bool, device=device)
ordinary[:: m // 8] = False
ratio_at = {}
print(f"A {m}x{k} with 8 outlier rows, B {k}x{n}, output bfloat16: relative error (Frobenius norm)")
print("outliers  scaling      vs float64: ordinary rows  all rows   vs bfloat16 result")
for factor in (1, 10**2, 10**3, 10**4, 10**5):
    a, b = outlier_case(factor)
    exact = a.double() @ b.double()
    in_bf16 = (a.bfloat16() @ b.bfloat16()).double()
    errors = {}
    for name, axis in (("per tensor", None), ("per row", -1)):
        a8, scale_a = to_fp8(a, axis=axis)
        bt8, scale_bt = to_fp8(b.t(), axis=axis)  # per column of B = per row of Bᵀ
        out = matmul_fp8(a8, bt8.t(), scale_a, scale_bt.t())
        errors[name] = relative_error(out, exact, ordinary)
        print(
            f"{factor:>8.0e}  {name:<11} {errors[name]:>26.4f} {relative_error(out, exact):>9.4f}"
            f" {relative_error(out, in_bf16):>20.4f}"
        )
    ratio_at[factor] = errors["per row"] / errors["per tensor"]
    print(f"{factor:>8.0e}  bfloat16    {relative_error(in_bf16, exact, ordinary):>26.4f}")
print("per-row error / per-tensor error on the ordinary rows: "
      + ", ".join(f"{r:.2f} at {f:.0e}" for f, r in ratio_at.items()))  # fmt: skip

# %%
# Up to outliers a thousand times larger, the two scalings give the same error:
# FP8 is floating point, so a row a thousand times smaller than the largest
# still sits among e4m3's normal numbers (eighteen binades) with all three
# mantissa bits, and the error is the format's own rounding, about 4% here.
# Per-tensor scaling starts to lose when the ordinary rows fall under e4m3's
# smallest normal number, :math:`2^{-6}`, about 1/29000 of its largest (448),
# into the subnormals, where each halving costs one more bit; per-row
# scaling is untouched. On this data it halves the error only once the outliers
# are between :math:`10^4` and :math:`10^5` times larger. (Scaling per block of 128 elements, as the
# DeepSeek-V3 report does, goes further in the same direction.) Either way FP8
# stays an order of magnitude less accurate than bfloat16: a trade of accuracy
# for speed, worth making where the model tolerates it.
#
# The kernel
# ----------
#
# ``matmul_fp8`` runs tutorial 06's persistent kernel on FP8 operands, and only
# its epilogue knows about scales: the float32 accumulator is multiplied by the
# scale of A (one number, or one per row) and of B (one, or one per column),
# then rounded once to the output dtype:
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
    bt8, scale_bt = to_fp8(torch.randn(n_, k_, device=device), axis=axis, dtype=b_dtype)
    out = matmul_fp8(a8, bt8.t(), scale_a, scale_bt.t())
    assert_close("matmul_fp8", matmul_fp8_ref(a8, bt8.t(), scale_a, scale_bt.t()), out, k=k_)
    print(f"{m_}x{n_}x{k_}, {'per tensor' if axis is None else 'per row'}, B {b_dtype}: matches")

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
# Hopper's FP8 ``wgmma`` instructions keep their running sum in a
# reduced-precision accumulator (about 14 significant bits, as the DeepSeek-V3
# report measured). Left alone across all of K, the truncation error grows with
# K; cuBLASLt therefore promotes the partial sums into a float32 accumulator at
# intervals, unless asked for ``use_fast_accum=True``. Triton exposes the same
# choice as ``tl.dot(..., max_num_imprecise_acc=n)``: promote every ``n``
# products. ``matmul_fp8`` promotes once per step along K by default (every
# ``BLOCK_K`` products: 128 or 256, whichever the sweep found faster) and not at
# all with ``fast_accum=True``. On the H100, at
# 8192 x 8192 x 4096, both libraries' fast results were off the float64
# reference by up to 2.3 (outputs of typical magnitude 64), twice the 1.0 of the
# promoted ones; the benchmark's correctness check allows fast accumulation an
# error bound that grows with K accordingly
# (``gpuperf.bench.catalog.FP8_FAST_ACCUM_K_FACTOR``).
#
# Speed
# -----
#
# Both scalings and both accumulation modes, in one run per GPU, against
# cuBLASLt through ``torch._scaled_mm`` with the same scales and the same
# accumulation mode. TFLOP/s counts :math:`2MNK`; the ceiling is
# ``torch._scaled_mm`` at :math:`8192^3`, measured in the same run. The
# ``pointer``, ``tma`` and ``tma_ws`` lines are the rungs of tutorial 06's
# ladder, each at its own best config.

import matplotlib.pyplot as plt

from gpuperf.bench.catalog import MATMUL_FP8
from gpuperf.pages import run_or_load

fp8 = run_or_load(MATMUL_FP8)
print(fp8.table(accumulation="fast"))
fp8.plot(accumulation="fast")
plt.show()

# %%
# With float32 promotion once per step along K:

print(fp8.table(accumulation="float32"))
fp8.plot(accumulation="float32")
plt.show()

# %%
# Where it stands, per scaling and accumulation mode (ratios are cuBLASLt's time
# over ours: above 1, ours is faster):

if fp8.record is not None:
    print(fp8.record["provenance"]["gpu"])
    print("scaling  accumulation   " + "  ".join(f"{'x'.join(map(str, s)):>15}" for s in MATMUL_FP8.x_values))
    for scaling in ("tensor", "row"):
        for accumulation in ("fast", "float32"):
            ratios = fp8.ratios(scaling=scaling, accumulation=accumulation)
            cells = "  ".join(
                f"{ratios[s]:>14.2f}x" if s in ratios else f"{'-':>15}" for s in MATMUL_FP8.x_values
            )
            print(f"{scaling:<8} {accumulation:<13}  {cells}")

# %%
# With fast accumulation, Triton's persistent TMA kernel keeps pace with
# cuBLASLt. With promotion it falls behind: each promotion waits for the
# asynchronous ``wgmma`` chain to finish before the float32 addition, so the
# tensor cores idle while it runs, where cuBLASLt's hand-scheduled kernels
# overlap the two with a second accumulator. Promoting less often helps, which
# is why this mode has its own sweep: it favours steps 256 deep along K (one
# promotion per 256 products; still within the float32-promoted error bound)
# and smaller output tiles than fast accumulation does. (Promoting after every
# instruction, ``max_num_imprecise_acc=0``, was slower still, at the same
# error.) What remains is a scheduling gap, not arithmetic. The configs the
# sweep chose for each mode, per shape:

if fp8.record is not None:
    from gpuperf.kernels import PersistentConfig

    for accumulation in ("fast", "float32"):
        chosen = {
            row["x"]: PersistentConfig(**row["config"]).label()
            for row in fp8.record["rows"]
            if row["provider"] == "triton"
            and row["axes"] == {"scaling": "tensor", "accumulation": accumulation}
            and row.get("config")
        }
        print(f"{accumulation:>8}: " + "; ".join(f"{'x'.join(map(str, x))} {c}" for x, c in chosen.items()))

# %%
# For the bfloat16 products at the same shapes, cuBLAS's results are on
# :doc:`tutorial 06 <06_tma_persistent_matmul>`'s page: FP8 with fast
# accumulation runs at about twice their TFLOP/s, as the hardware promises.
#
# See also the :ref:`optimization-strategy guide <sphx_glr_guides_03_optimization_strategy.py>`.
