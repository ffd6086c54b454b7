"""
Fused attention: FlashAttention-2, forward and backward
=======================================================

**What you will learn**

* why attention written as three PyTorch lines is :term:`memory-bound`: the
  :math:`S \\times S` score matrix it writes and reads back, in bytes, measured
  in time and in peak memory;
* how the :term:`FlashAttention`-2 forward keeps a :term:`tile` of queries on
  chip, streams the keys and values past it, and normalises with the
  :term:`online softmax` of :doc:`tutorial 02 <02_fused_softmax>`, skipping the
  tiles a causal mask hides;
* how the backward pass recomputes the probabilities from one number per row
  instead of storing them, and splits the work between two kernels so that
  grouped-query attention needs no atomics, at the price of two matrix
  products computed in both;
* how our kernel (``gpuperf.kernels.attention``, a differentiable op usable in
  place of ``scaled_dot_product_attention``) compares with every :term:`SDPA`
  backend, FlexAttention and the naive version, forward, backward and in memory.
"""

# %%
# In one paragraph, read from the committed records of every GPU measured:

from gpuperf.pages import attention as page

print(page.in_one_paragraph())

# %%
# The score matrix
# ----------------
#
# Attention computes :math:`O = \mathrm{softmax}(QK^T \cdot s)\,V` for each batch
# and head, with :math:`Q` of :math:`S_q \times D`, :math:`K` and :math:`V` of
# :math:`S_k \times D`, and the scale :math:`s = 1/\sqrt{D}`. Written the obvious
# way, it materialises the scores :math:`QK^T` and the probabilities, both
# :math:`S_q \times S_k` per head, in memory (:term:`HBM`):

import inspect

from gpuperf import reference

print(inspect.getsource(reference.attention_rows))

# %%
# The work is two matrix products, :math:`4 S_q S_k D` FLOPs per head, and the
# inputs and output are only :math:`4 S D` elements, so the
# :term:`arithmetic intensity` of the ideal kernel is high. The score matrix is
# :math:`S^2` elements per head: at the shapes this page measures (as the
# FlashAttention papers do, :math:`B \cdot S = 16384` tokens per batch and
# :math:`H \cdot D = 2048`), it passes the size of everything else by far, and
# each elementwise step over it (scale, mask, softmax's passes) reads and writes
# it again:

from gpuperf.bench.catalog import ATTENTION_SEQ_LENS, attention_shape
from gpuperf.bench.metrics import attention_bytes, attention_flops

for s in ATTENTION_SEQ_LENS:
    b, h, _, d = attention_shape(s, 128)
    io = attention_bytes(b, h, s, d, element_size=2)  # Q, K, V and O in fp16
    scores = b * h * s * s * 2  # one fp16 score matrix per head
    intensity = attention_flops(b, h, s, d) / io
    print(
        f"S={s:>5} B={b:>2} H={h}: Q, K, V, O {io / 2**20:.0f} MiB, "
        f"scores {scores / 2**20:>4.0f} MiB, {intensity:>4.0f} FLOP/byte of Q, K, V, O"
    )

# %%
# Reading and writing each element of the scores a few times costs far more
# than the FLOPs: the naive version is memory-bound, running at the speed
# of memory, not of the :term:`tensor cores <tensor core>`. Measured (the forward
# benchmark's time and the peak memory of one training step, every GPU):

from gpuperf.bench.catalog import ATTENTION_FORWARD, ATTENTION_MEMORY
from gpuperf.pages import run_or_load

forward = run_or_load(ATTENTION_FORWARD)
memory = run_or_load(ATTENTION_MEMORY)
print(page.naive_vs_fused(forward, memory))

# %%
# The naive version's peak memory doubles with :math:`S` (the batch halves while
# each head's matrix grows fourfold); the fused kernel's stays at what the
# output and the gradients themselves need.
#
# The forward pass, fused
# -----------------------
#
# FlashAttention (Dao et al., 2022) never writes the scores. Each
# :term:`program` of the forward kernel owns a tile of ``BLOCK_M``
# queries, loaded once into :term:`registers`, and walks the keys and values in
# tiles of ``BLOCK_N``. For each tile it computes the block of scores
# :math:`Q_i K_j^T` on the tensor cores, and folds it into a running row maximum
# :math:`m`, a running row sum :math:`\ell` and an unnormalised output
# accumulator:
#
# .. math::
#
#    m' = \max(m, \max_j s_{ij}), \qquad
#    \ell' = \ell\, e^{m - m'} + \sum_j e^{s_{ij} - m'}, \qquad
#    \mathrm{acc}' = \mathrm{acc}\, e^{m - m'} + e^{s_{ij} - m'} V_j
#
# This is the online softmax of :doc:`tutorial 02 <02_fused_softmax>`'s
# long-row kernel, with a matrix product in each step: whenever the maximum
# grows, what was summed so far is rescaled. At the end the program divides by
# :math:`\ell` and writes :math:`O` once, and it writes one more number per row,
# the log-sum-exp, for the backward pass. The kernel works in base 2 (the first
# detail below): it keeps the scores as :math:`t_{ij} = s_{ij} \log_2 e` and
# its exponentials as :math:`2^{t_{ij} - m}`, so its :math:`m` is the maximum of
# :math:`t` and the number it stores is :math:`m + \log_2 \ell`, the
# log-sum-exp in base-2 units (the natural one times :math:`\log_2 e`), which
# the backward uses as it is. FlashAttention-2
# (Dao, 2023) puts the query tile in the outer loop, as here, so each program
# writes its own rows and needs no synchronisation. The loop over one range of
# key tiles, which the decode step of :doc:`tutorial 07 <07_transformer_layer>`
# shares (its flags ``LAST_IN_RANGE`` and ``EMPTY_ROWS`` are the decode step's;
# the forward leaves them off, and a constexpr flag that is off compiles to
# nothing):
#
# .. literalinclude:: ../../src/gpuperf/kernels/online_softmax.py
#    :pyobject: online_softmax_tiles
#
# Three details make it fast:
#
# * ``exp2`` instead of ``exp``: the scale is multiplied by :math:`\log_2 e`
#   once, and the hardware's base-2 exponential (the :term:`SFU`) does the rest;
# * the probabilities are rounded to the input dtype before the second product,
#   so both products run on the tensor cores, accumulating in float32;
# * the :term:`masks <mask>` cost nothing where they are not needed. Causal, the
#   kernel calls this loop once over the key tiles wholly below the query tile's
#   diagonal (``CAUSAL`` and ``MASK_KEYS`` off: no mask at all) and once over the
#   tiles the diagonal crosses (``CAUSAL`` on), and never visits the tiles above
#   it, half of the work. Not causal, it calls it once over the whole tiles and,
#   when the sequence is not a multiple of ``BLOCK_N``, once more over the
#   partial last tile, the only one with ``MASK_KEYS`` on (masked loads).
#
# .. literalinclude:: ../../src/gpuperf/kernels/attention.py
#    :pyobject: _attention_forward_kernel
#
# Causal programs are launched longest first (``pid_m`` reversed), so that the
# short ones fill the gaps when the :term:`grid` runs out.
#
# The backward pass, recomputed
# -----------------------------
#
# With :math:`P = \mathrm{softmax}(QK^T s)` and the output gradient :math:`dO`:
#
# .. math::
#
#    dV = P^T dO, \quad dP = dO\,V^T, \quad dS = P \circ (dP - \delta), \quad
#    dQ = s\, dS\, K, \quad dK = s\, dS^T Q, \qquad \delta_i = \sum_d dO_{id} O_{id}
#
# Every term needs :math:`P`, which the forward never stored: storing it would
# bring back the :math:`S^2` memory. Instead the backward recomputes each tile
# of it as :math:`2^{Q K^T s \log_2 e - \mathrm{lse}}` from the saved
# log-sum-exp: one more product of a tile of queries with a tile of keys, far
# cheaper than reading :math:`P` from memory. One small kernel computes
# :math:`\delta`; then one program per tile of *keys* accumulates :math:`dK` and
# :math:`dV` over all the queries that see it, and one program per tile of
# *queries* accumulates :math:`dQ` over the keys. With grouped-query attention,
# the dK/dV program walks the queries of every head in its group, so the sum
# over the group happens in registers, with no atomic adds and no second
# reduction:
#
# .. literalinclude:: ../../src/gpuperf/kernels/attention.py
#    :pyobject: _dkdv_tiles
#
# .. literalinclude:: ../../src/gpuperf/kernels/attention.py
#    :pyobject: _dq_tiles
#
# The split has a price in FLOPs. Each kernel needs :math:`P` and :math:`dP`
# for its own gradients, so both compute :math:`QK^T` (to recompute :math:`P`)
# and :math:`dO\,V^T` (that is :math:`dP`). FlashAttention-2's backward computes
# every product once, in one kernel whose programs own tiles of keys, and adds
# each program's share of :math:`dQ` into memory with atomic adds. The products
# in the two loops above, counted from their source:

print(page.backward_work())

# %%
# The split trades those extra products for sums without atomics (and the same
# bits on every run). The backward's TFLOP/s on this page counts
# FlashAttention-2's products for every implementation, ours included, so that
# the same time reads as the same speed; our kernels do more arithmetic in it
# than the count says.
#
# The op registers both passes with ``torch.library``
# (``torch.ops.gpuperf.attention``, returning the output and the log-sum-exp, and
# ``torch.ops.gpuperf.attention_backward``, its three launches), so
# ``torch.compile(fullgraph=True)`` sees one op with a backward
# (``tests/test_library.py`` trains through it compiled). Both are written once,
# as functions that return their outputs and the launches that fill them
# (:mod:`gpuperf.kernels.launch`). When a gradient is recorded, the call goes
# through the registered op, so that autograd records its backward; without one,
# the same kernels launch without the op's dispatch, which costs host time on
# every call, from a plan kept for inputs like ones already checked. Same
# kernels, same configs: the same bits.
#
# Correct first
# -------------
#
# Against the float32 reference (``gpuperf.reference.attention_ref``, the naive
# version on upcast inputs), on shapes that are not multiples of any tile,
# ``S_q != S_k``, grouped and multi-query heads, causal masking, and queries
# read through strides (the ``(B, S, H, D)`` layout a fused QKV projection
# gives), forward and backward, in float16 and bfloat16. Under Triton's
# interpreter (this build, when it has no GPU) the shapes are small.

import torch
from gpuperf.kernels import attention
from gpuperf.pages import can_measure
from gpuperf.reference import attention_grads_ref, attention_ref
from gpuperf.testing import assert_close

device = "cuda" if can_measure() else "cpu"
dtypes = (torch.float16, torch.bfloat16)
cases = [  # (B, H, H_kv, S_q, S_k, D, causal)
    (2, 4, 4, 77, 77, 32, False),
    (1, 4, 2, 50, 50, 16, True),
    (1, 4, 1, 40, 97, 64, False),
]
if device == "cuda":
    cases += [(2, 16, 4, 1000, 1000, 128, True), (1, 8, 8, 2048, 2048, 64, False)]
torch.manual_seed(0)
for dtype in dtypes:
    for b, h, h_kv, s_q, s_k, d, causal in cases:
        q = torch.randn(b, s_q, h, d, device=device, dtype=dtype).transpose(1, 2)
        k, v = (torch.randn(b, h_kv, s_k, d, device=device, dtype=dtype) for _ in "kv")
        q, k, v = (t.requires_grad_() for t in (q, k, v))
        out = attention(q, k, v, causal=causal)
        assert_close("attention", attention_ref(q, k, v, causal), out, k=s_k)
        grad_out = torch.randn_like(out)
        out.backward(grad_out)
        dq, dk, dv = attention_grads_ref(q, k, v, grad_out, causal)
        rows = h // h_kv * s_q  # dK and dV sum over every query row of the group
        assert_close("dq", dq, q.grad, k=s_k)
        assert_close("dk", dk, k.grad, k=rows)
        assert_close("dv", dv, v.grad, k=rows)
        print(f"{dtype} {b=} {h=} {h_kv=} {s_q=} {s_k=} {d=} {causal=}: all match")

# %%
# Bad input gets an error that says what was expected:

q = torch.randn(1, 2, 8, 32, dtype=torch.float16)
for bad in [
    lambda: attention(torch.randn(1, 3, 8, 32, dtype=torch.float16), q, q),
    lambda: attention(q[..., :24], q[..., :24], q[..., :24]),
    lambda: attention(q, q, q, causal="yes"),
]:
    try:
        bad()
    except (TypeError, ValueError) as err:
        print(f"{type(err).__name__}: {err}")

# %%
# Tuned once
# ----------
#
# The three kernels each have their own tile sizes, :term:`num_warps` and
# pipeline depth. ``nox -s bench`` times every candidate
# :term:`autotune config` (after checking its output) at :math:`S = 4096` for
# each head dim, causal or not, and commits the sweep under
# ``src/gpuperf/kernels/tuned/<gpu>/attention.json``, which the op reads. Every
# GPU's sweep:

print(page.tuning_table())

# %%
# A backward kernel's TFLOP/s counts the whole backward's FLOPs (2.5 times the
# forward's, FlashAttention-2's five products; ours run more, as counted above)
# over its time with the other kernel at its chosen config. The
# spread between the best and the worst candidate is as wide as the gap to
# any baseline below: the config is half of the result.
#
# Against everything a reader would pick instead
# ----------------------------------------------
#
# In one run per GPU: SDPA with each backend forced
# (``torch.nn.attention.sdpa_kernel``): FlashAttention-2, cuDNN,
# memory-efficient and math; FlexAttention compiled by :term:`torch.compile`
# (which generates Triton kernels too, here with dynamic shapes so one
# compilation serves every :math:`S`); and the naive version. Every provider's
# output is checked against the reference before it is timed; a backend that
# cannot run a case gets an ``error`` row, not a gap. TFLOP/s counts
# :math:`4BHS^2D` for the forward (half when causal).

print(forward.table(dtype="float16"))
forward.plot(dtype="float16")

# %%
# And in bfloat16, which runs the same kernels:

forward.plot(dtype="bfloat16")

# %%
# The backward pass alone (the forward ran once; each timed call differentiates
# its graph), :math:`2.5\times` the forward's FLOPs:

from gpuperf.bench.catalog import ATTENTION_BACKWARD
from gpuperf.pages import show

backward = show(ATTENTION_BACKWARD, dtype="float16")

# %%

backward.plot(dtype="bfloat16")

# %%
# Where the numbers stand for :math:`S \geq 4096`, each GPU: the other
# provider's time over ours, above 1 meaning ours is faster:

print(page.speedups(forward, backward))

# %%
# Against SDPA's FlashAttention-2 backend the fused Triton kernel is faster in
# every case at these sizes. Against its cuDNN backend it is not, and cuDNN is
# the one to beat: given no backend, SDPA need not run FlashAttention-2. On
# Hopper, PyTorch's backend selection tries cuDNN first when its cuDNN is recent
# enough (``check_prefer_cudnn_attention``), and in the build measured here
# SDPA's own choice and the forced FlashAttention-2 backend run at different
# speeds (:doc:`tutorial 07 <07_transformer_layer>`'s decode benchmark times
# both). cuDNN's kernels are closed
# source, so what they do is an inference: :doc:`tutorial 08 <08_gluon_hopper>`'s
# Nsight Compute counters show that its kernel's name includes ``wgmma`` and
# that it launches one program per SM with as many registers a thread as
# tutorial 08's own kernel of three warpgroups (a producer and two consumers).
# That fits the schedule FlashAttention-3 describes (Shah et al., 2024):
# :term:`warp specialization` (a producer warp loading tiles with :term:`TMA`
# while consumer :term:`warpgroups <warpgroup>` compute), the softmax
# overlapped with the matrix products (within a warpgroup, or ping-pong between
# two), and asynchronous :term:`wgmma`. Which of those cuDNN uses, ping-pong
# included, nothing measured here shows. Our kernel is plain Triton: the
# compiler pipelines its loads and issues ``wgmma``, but the softmax's
# exponentials and the products still take turns. Closing that gap is tutorial
# 08's subject: it writes that schedule by hand in Gluon and measures each step
# against cuDNN.
#
# Memory
# ------
#
# Peak memory of one training step (forward, then gradients of :math:`q, k, v`)
# beyond the inputs:

print(memory.table())
memory.plot()
# sphinx_gallery_thumbnail_number = 5

# %%
# Ours holds the output, the float32 log-sum-exp and :math:`\delta` (one number
# per row) and the three gradients in the input dtype; FlashAttention-2's
# backward also allocates float32 buffers, among them an accumulator for dQ,
# which it sums with atomic adds across key tiles. How many times our kernel's
# memory each needs, and one score matrix for comparison:

print(page.memory_saving(memory))
gib = 16 * 16384**2 * 2 / 2**30  # 16 heads of 16384 x 16384 fp16 scores
print(f"one score matrix at S = 16384: {gib:.0f} GiB")

import matplotlib.pyplot as plt

plt.show()  # run as a script: every figure of the page, in windows

# %%
# Using it
# --------
#
# ``attention(q, k, v, causal=..., scale=...)`` takes the layout of
# ``torch.nn.functional.scaled_dot_product_attention`` (with ``enable_gqa=True``
# for grouped heads), float16 or bfloat16, head dims 16 to 128, and any strides;
# it differentiates with respect to ``q``, ``k`` and ``v``. It has no dropout, no
# arbitrary mask and no bias: FlexAttention is the tool for those.
#
# The :ref:`roofline guide <sphx_glr_guides_02_roofline.py>` shows causal and
# non-causal attention side by side against the tensor cores' roof, and what the
# model cannot see in them. See also the
# :ref:`optimization-strategy guide <sphx_glr_guides_03_optimization_strategy.py>`.
#
# What to take away
# -----------------
#
# * Naive attention is memory-bound: its :math:`S \times S` scores cost time and
#   memory that grow with :math:`S^2`, while the FLOPs could run on the tensor
#   cores.
# * FlashAttention keeps a query tile on chip and streams keys and values past it
#   with an online softmax, so the scores never reach HBM; the backward recomputes
#   them from one log-sum-exp per row rather than storing them.
# * Splitting the backward into a dK/dV kernel and a dQ kernel removes atomics,
#   even with grouped-query attention, but both kernels compute :math:`QK^T` and
#   :math:`dO\,V^T`: more products than FlashAttention-2's single kernel, for
#   the same gradients.
# * Tile sizes and warps, tuned per GPU, are half of the result; what separates
#   plain Triton from cuDNN on Hopper is overlap (warp specialization, TMA,
#   asynchronous wgmma), the subject of tutorial 08.
