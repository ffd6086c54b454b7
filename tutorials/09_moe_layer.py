"""
A Mixture-of-Experts layer on Hopper: grouped GEMM and block-scaled FP8
=======================================================================

**What you will learn**

* what a :term:`Mixture of Experts` layer computes: a :term:`router` sends each token
  to a few :term:`experts <expert>` (:term:`top-k routing`), each a small MLP;
* why a loop over experts is slow, and how one :term:`grouped GEMM` runs every expert's
  rows in one :term:`persistent <persistent kernel>` launch, its tile schedule computed
  on the device from the offsets of the sorted tokens (:term:`token permutation`);
* what uneven routing (:term:`load imbalance`) costs that schedule;
* DeepSeek-V3's :term:`block-scaled FP8`: one scale per 1 x 128 tile of activations and
  per 128 x 128 block of weights, its accuracy and its speed against
  :term:`cuBLASLt` and DeepGEMM (DeepSeek's CUDA library of such matmuls);
* the whole layer in :term:`prefill` and :term:`decode`, read against the
  :term:`roofline`'s roofs, and where its time goes.
"""

# %%
# The answer first, from the committed measurements:

from gpuperf.pages import moe as page

print(page.in_one_paragraph())

# %%
# The layer
# ---------
#
# A :term:`Mixture of Experts` layer replaces a transformer's MLP by ``E`` MLPs, the
# experts (:term:`SwiGLU` each, as in tutorial 07), and a router, a ``d x E`` matrix
# whose scores pick each token's ``k`` experts and weigh their outputs. Each token pays
# for ``k`` experts, not ``E`` (DeepSeek-V3 adds a shared expert every token takes).
# The three models this page measures:

from gpuperf.bench.catalog.moe import MOE_MODELS

for model, (d, ffn, n_experts, top_k) in MOE_MODELS.items():
    print(f"{model}: d={d}, expert ffn={ffn}, {top_k} of {n_experts} experts per token")

# %%
# ``gpuperf.models.moe.MoELayer`` is that block; with ``ops="gpuperf"`` its experts run:
#
# .. literalinclude:: ../../src/gpuperf/models/moe.py
#    :pyobject: MoELayer._experts_gpuperf
#
# Why not a loop over experts
# ---------------------------
#
# A PyTorch model loops: for each expert, gather its tokens, three matmuls, add back.
# Each expert's matmul has only its own rows, a few hundred or fewer when there are
# many experts: too few tiles to fill the GPU's :term:`SMs <SM>`, and each costs a
# launch and a host :term:`synchronization` to find its rows. The grouped matmuls of
# each model's prefill (gate and up together, then down), in :term:`TFLOP/s`: a loop of
# one ``torch.mm`` (:term:`cuBLAS`) per expert (after one synchronization that reads all
# the offsets), against PyTorch's own :term:`grouped GEMM`,
# ``torch.nn.functional.grouped_mm`` (``F.grouped_mm``, one launch for all experts), and
# ours:

from gpuperf.bench.catalog import GROUPED_MATMUL
from gpuperf.pages import show

grouped = show(GROUPED_MATMUL)
print(page.loop_table(grouped))
print(page.loop_reading(grouped))

# %%
# With a few large experts the loop is as good as anything: each matmul fills the GPU.
# With many small matmuls it falls behind (Qwen3-30B-A3B's, few rows times a narrow
# expert, are the smallest), and the launches and small tiles, not the arithmetic, are
# what it pays for.
#
# Sorting tokens by expert
# ------------------------
#
# A grouped GEMM wants each expert's rows side by side. ``moe_permute`` sorts the
# ``T * k`` (token, expert) pairs by expert with a counting sort on the GPU, gathers
# their activations, and returns ``offs``, each expert's cumulative row end: expert
# ``e`` owns rows ``offs[e-1]`` to ``offs[e]``. A tiny routing (run by Triton's
# :term:`interpreter` when there is no GPU):

import torch
from gpuperf.kernels.moe_permute import moe_permute

tokens, k, experts = 6, 2, 4
g = torch.Generator().manual_seed(0)
scores = torch.rand(tokens, experts, generator=g)  # a router's scores, made up
topk_ids = scores.topk(k, dim=-1).indices
x = torch.arange(tokens, dtype=torch.float32)[:, None].repeat(1, 8)  # row t holds t
x_sorted, order, rows, offs = moe_permute(x, topk_ids, experts)
print("experts of each token:", topk_ids.tolist())
print("order (pair t*k+j per sorted row):", order.tolist())
print("token of each sorted row:", x_sorted[:, 0].int().tolist())
print("offs:", offs.tolist())

# %%
# The offsets stay on the GPU: nothing reads them back to the host.
#
# The grouped kernel and its tile schedule
# ----------------------------------------
#
# Each expert's output is cut into tiles, and the tiles of all experts form one list,
# expert after expert. The grid is :term:`persistent <persistent kernel>` (one program
# per SM); program ``p`` of ``P`` takes tiles ``p, p + P, p + 2P, ...``. On Hopper each
# program loads the ``E`` offsets once, as a vector, and finds the expert that owns a
# tile by reductions over it, no loop and no branch:
#
# .. literalinclude:: ../../src/gpuperf/kernels/grouped_matmul.py
#    :pyobject: _expert_tiles
#
# .. literalinclude:: ../../src/gpuperf/kernels/grouped_matmul.py
#    :pyobject: _owner
#
# An expert with many rows owns many tiles and one with none owns none, so the work
# spreads over every SM whatever the group sizes; no SM waits for a large expert while
# the others have nothing to do, beyond the last :term:`wave`. What the schedule cannot
# do is fill a tile: an expert's last tile holds only its leftover rows, and an expert
# with a handful of rows gets one mostly empty tile.
#
# Load imbalance
# --------------
#
# A trained router is not uniform. The benchmark's skewed routing chooses expert ``e``
# with weight ``1 / (e + 1)``; the rows per expert it gives (fewest, mean, most),
# drawn by the benchmark's routing function (here on the CPU, whose random numbers
# differ from the GPU's: counts like the benchmark's, not the same):

for model in MOE_MODELS:
    print(model, page.routing_counts(model))

print(page.imbalance_table(grouped))
print(page.imbalance_reading(grouped))

# %%
# Block-scaled FP8
# ----------------
#
# :doc:`Tutorial 05 <05_fp8_matmul>` scaled :term:`FP8` per tensor or per row.
# DeepSeek-V3 scales each 1 x 128 tile of an activation (one token, 128 channels) and
# each 128 x 128 block of a weight by its own float32 scale, so an outlier costs
# precision only to the values of its block. An experiment on activations ``A`` with
# two outlier channels, ``10**3`` or ``10**5`` times larger than the rest (the outlier
# features of large language models' activations): for each way of storing ``A``, the
# relative error of the stored values on the other, ordinary channels (what the
# scaling keeps of them), and of the product ``A @ W.T``, both against the unquantized
# float32 values:

from gpuperf.kernels import matmul_fp8_blockwise, quantize_fp8_blockwise, to_fp8
from gpuperf.kernels.matmul_fp8_blockwise import WEIGHT_BLOCK
from gpuperf.reference import dequantize_fp8_blockwise_ref as dequantize
from gpuperf.reference import matmul_fp8_blockwise_ref, matmul_fp8_ref

errors = page.ScalingErrors(shape=(64, 256, 512))
for factor in (1, 10**3, 10**5):
    a, w = page.outlier_channels(factor, errors.shape)
    exact = a @ w.T
    a16 = a.bfloat16()
    errors.add(factor, "bfloat16", a16, a, a16 @ w.bfloat16().T, exact)
    a8, sa = to_fp8(a)
    w8, sw = to_fp8(w)
    out = matmul_fp8_ref(a8, w8.T, sa, sw)
    errors.add(factor, "FP8 per tensor", a8.float() * sa, a, out, exact)
    ab, sab = quantize_fp8_blockwise(a)
    wb, swb = quantize_fp8_blockwise(w, WEIGHT_BLOCK)
    ref = matmul_fp8_blockwise_ref(ab, wb, sab, swb)
    errors.add(factor, "FP8 blockwise", dequantize(ab, sab, (1, 128)), a, ref, exact)
print(errors)
out = matmul_fp8_blockwise(ab, wb, sab, swb)  # the kernel itself, on the last operands
print(f"kernel vs its float64 reference: {page.relative_error(out, ref):.4f}")

# %%
# The outlier channels carry most of the product's norm, so the product's error says
# little on its own; what each scaling keeps of the ordinary channels says more. One
# scale per tensor, set by the outliers, pushes them into :term:`e4m3`'s subnormals
# once the outliers are large enough (below ``2**-6`` the format keeps a fixed step of
# ``2**-9``, so a small value keeps few significant bits or none): at ``10**3`` they
# still lose no more than without outliers, at ``10**5`` they do. Blocks lose only the
# values that share a tile with an outlier (here the first tile of each row).
# The matmul applies the scales inside its K loop: each step's partial product times
# its two scales, added in float32 (which also :term:`promotes <promoted accumulation>`
# the tensor cores' accumulator once per step). Its speed at DeepSeek-V3's shapes,
# against cuBLASLt's blockwise ``torch._scaled_mm``, our per-tensor kernel on the same
# FP8 values (a Triton kernel, also promoted, that applies its two scales once after
# the K loop; the block-scaled one on Hopper is written in :term:`Gluon`), and
# DeepGEMM's published figures (another GPU):

from gpuperf.bench.catalog import MATMUL_FP8_BLOCKWISE
from gpuperf.pages import run_or_load

fp8 = run_or_load(MATMUL_FP8_BLOCKWISE)
print(page.fp8_table(fp8))
page.plot_fp8_blockwise(fp8)
print(page.deepgemm_reading(fp8))

# %%
# The whole layer
# ---------------
#
# A prefill: ours, the same layer on ``F.grouped_mm`` (PyTorch's sort and
# gather around it; the strongest other path, so the baseline every ratio below is
# taken against), and ``torch.compile`` of the loop over experts:

from gpuperf.bench.catalog import MOE_LAYER, MOE_LAYER_DECODE

layer = show(MOE_LAYER)

# %%
# A decode step of a few tokens must read every active expert's weights, so it is
# read against the :term:`stream bandwidth`. Its :term:`GB/s` count the weights of the
# experts the step's tokens would touch if routed uniformly (``k`` experts at one token;
# ``E * (1 - (1 - k / E) ** T)`` on average at ``T`` tokens), the shared expert's and
# the router's weights, and the tokens in and out:

decode = show(MOE_LAYER_DECODE)
print(page.decode_reading(decode))

# %%
# Where the time goes
# -------------------
#
# Each part of the layer under ``torch.profiler``, every kernel added to the part that
# launched it, for ours and the ``F.grouped_mm`` layer. The table adds the step's time
# as a loop of eager steps runs it (the host included, no L2 flush), ours replayed from
# one :term:`CUDA graph`, and the memory a step allocates above the weights and the
# input (peak):

page.plot_time_breakdown()
print(page.breakdown_table())

# %%
# At one token the GPU waits for the host: a step launches tens of kernels (the table's
# kernels column) through Python, and the kernels together take less time than
# launching them does (:term:`host overhead`). One CUDA graph replays them all with one
# host call:

print(page.launch_bound_reading())

import matplotlib.pyplot as plt

plt.show()  # run as a script: every figure of the page, in windows

# %%
# What to take away
# -----------------
#
# * A loop over experts is fine with a few large experts and slow with many small ones:
#   one grouped GEMM runs them all in one launch, with no host synchronization.
# * Sort the tokens by expert once (a counting sort) and keep the offsets on the GPU; a
#   persistent kernel can compute its (expert, tile) schedule from them.
# * A flat list of tiles over all experts keeps every SM busy when routing is uneven.
# * Block-scaled FP8 confines an outlier's damage to its block, and its scales belong
#   inside the K loop, where DeepGEMM-class kernels hide their cost.
# * Decode is a weight-streaming problem: read it against the memory roof, and count
#   the experts a step actually touches.
