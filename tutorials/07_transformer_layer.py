"""
A Llama decoder layer, end to end: prefill, decode and training
================================================================

**What you will learn**

* where the time of a real model layer goes, part by part, and what that bounds
  (:term:`Amdahl's law`): the projections are most of a :term:`prefill`, so the
  matmul decides it, and the fused kernels around it decide the rest;
* why :term:`prefill` is :term:`compute-bound` and :term:`decode` is
  :term:`memory-bound`, from the FLOPs and bytes per token of one layer;
* three new kernels a layer needs: :term:`RoPE` on queries and keys in one launch,
  :term:`SwiGLU` in the epilogue of one matmul over both weights, and
  :term:`Flash-Decoding` against a :term:`KV cache`;
* why a decode step at batch 1 is bound by launches, not by the GPU, and what a
  :term:`CUDA graph` does about it; and what a training step costs in time and memory.
"""

# %%
# In one paragraph, read from the committed records of every GPU measured:

from gpuperf.pages import llama as page

print(page.in_one_paragraph())

# %%
# The layer
# ---------
#
# Llama 3 8B has 32 such layers: hidden size 4096, 32 query heads and 8 key/value
# heads of 128 (:term:`grouped-query attention <GQA>`), an MLP of 14336, bfloat16.
# ``gpuperf.models.llama.DecoderLayer`` is one of them with random weights, and runs
# either PyTorch's operations (what a Hugging Face model does: cuBLAS, SDPA, eager
# :term:`RMSNorm` and RoPE) or this site's kernels, on the same weights. Its prefill:
#
# .. literalinclude:: ../../src/gpuperf/models/llama.py
#    :pyobject: DecoderLayer._project_qkv
#
# .. literalinclude:: ../../src/gpuperf/models/llama.py
#    :pyobject: DecoderLayer._finish
#
# Each ``with SECTIONS(...)`` block names a part of the step
# (:class:`gpuperf.models.sections.Sections`): an empty context normally, a
# ``torch.profiler`` range when the page's capture records where the time goes. With
# ``ops="gpuperf"``, the parts run ``gpuperf.kernels.rms_norm`` (tutorial 02's
# row reduction, for RMSNorm), ``matmul_persistent`` (tutorial 06; for a decode
# step's few rows, ``matmul_splitk``, which splits the weight's rows among
# programs), ``rope``,
# ``attention`` (tutorial 04) or ``attention_decode``, and ``swiglu``; with
# ``ops="pytorch"``, ``torch.matmul``, ``F.scaled_dot_product_attention`` and the eager
# norm, RoPE and SiLU of Hugging Face's ``LlamaDecoderLayer``.

# %%
# Work per token
# --------------
#
# A token's pass through a layer multiplies it by every weight, two FLOPs per weight,
# and in decode also reads every cached key and value of its sequence. In prefill
# thousands of tokens share each weight read, so the :term:`arithmetic intensity` is
# in the thousands. In decode a weight read serves one token per sequence, so the
# weights alone would give an intensity of the batch size; but each sequence's cached
# keys and values serve only that sequence's query heads (four per key/value head
# here), and they grow with the batch and the context. The intensity is therefore at
# most about the batch size, and falls further below it as the KV cache takes over the
# bytes (the KV-bound regime: the column "KV cache" is its share), far below the
# :term:`ridge point` either way:

print(page.work_per_token())

# %%
# So a prefill should run near the matmul peak and a decode step near the
# :term:`stream bandwidth`, the fastest rate the memory was shown to stream;
# everything on this page is read against those two roofs.
#
# The new kernels
# ---------------
#
# **RoPE** rotates each pair of channels ``(i, i + D/2)`` of every query and key head
# by an angle of the token's position. One program takes a block of tokens and a block
# of heads, of q or of k, so one launch covers both; the cos and sin rows are loaded
# once per token and reused by every head of the block:
#
# .. literalinclude:: ../../src/gpuperf/kernels/rope.py
#    :pyobject: _rotate_heads
#
# **SwiGLU**: the gate and up projections are one matrix ``[W_gate; W_up]`` in
# ``nn.Linear``'s layout. A 3-D tensor descriptor sees it as ``(2, N, K)``, so one
# :term:`TMA` copy brings the gate rows and the up rows of a K step as one operand
# of one dot, and the :term:`epilogue` splits the accumulator and gates it:
#
# .. literalinclude:: ../../src/gpuperf/kernels/swiglu.py
#    :pyobject: _swiglu_tma_tiles
#
# **Flash-Decoding**: one query per sequence and head is too little work for the
# tiles of tutorial 04. Each program takes one key/value head with all the query
# heads of its group as the rows of one tile (so each cache tile is read once per
# group), and one slice of the sequence's keys, read on the device from
# ``cache_seqlens``. Over its slice it runs tutorial 04's loop,
# ``online_softmax_tiles``, with the two flags the decode step needs:
# ``LAST_IN_RANGE`` (the causal mask alone keeps out keys past the sequence's
# end) and ``EMPTY_ROWS`` (a row may see no key of its slice). A second kernel
# merges the slices' partial softmaxes, each weighted by its log-sum-exp:
#
# .. literalinclude:: ../../src/gpuperf/kernels/attention_decode.py
#    :pyobject: _attention_decode_combine_kernel

# %%
# RMSNorm, RoPE and SwiGLU are also what `Liger-Kernel
# <https://github.com/linkedin/Liger-Kernel>`_, the Triton kernels most readers would
# install for a Llama, provides. Each beside it and :term:`torch.compile` of the eager
# formula, in one run: Liger's RoPE rotates contiguous copies of q and k (here views
# of the fused projection's output), and its SwiGLU gates a ``[g | u]`` that a cuBLAS
# matmul wrote to memory, where ours keeps both products on chip:

print(page.liger_table())
print(page.liger_reading())

# %%
# Correct first
# -------------
#
# The whole layer, ours against PyTorch's on the same weights, in prefill, and a
# decode step that continues it: the cache filled by decoding the first tokens, then
# one more token, which must equal the prefill's last row (on a CPU: a small layer in
# Triton's interpreter; on a GPU, Llama 3 8B's):

import torch
from gpuperf.models.llama import DecoderLayer, LlamaConfig, rotary_tables
from gpuperf.pages import can_measure

device = "cuda" if can_measure() else "cpu"
config = LlamaConfig() if device == "cuda" else LlamaConfig(64, 4, 2, 16, 96)
dtype = torch.bfloat16
layer = DecoderLayer(config, device=device, dtype=dtype)
b, s, h_kv, d = 2, 12, config.n_kv_heads, config.head_dim
torch.manual_seed(0)  # the same input, so the same printed differences, on every build
x = torch.randn(b, s + 1, config.hidden, device=device, dtype=dtype)
cos, sin = rotary_tables(torch.arange(s + 1, device=device).expand(b, -1), config)
zero = torch.zeros(b, dtype=torch.int32, device=device)
out = {}
with torch.no_grad():
    for ops in ("pytorch", "gpuperf"):
        layer.ops = ops
        out[ops] = layer(x, cos, sin)
        k, v = torch.zeros(2, b, h_kv, 32, d, device=device, dtype=dtype)
        layer.decode(x[:, :s], cos[:, :s], sin[:, :s], k, v, zero)  # s tokens cached
        step = layer.decode(x[:, s:], cos[:, s:], sin[:, s:], k, v, zero + s)
        err = (step - out[ops][:, s:]).abs().max() / out[ops].abs().max()
        print(f"{ops:>8}: decode step vs the prefill's last token: {err:.4f} of max")
err = (out["gpuperf"] - out["pytorch"]).abs().max() / out["pytorch"].abs().max()
print(f"ours vs PyTorch's prefill: largest difference {err:.4f} of the largest output")

# %%
# Both differ by the rounding of bfloat16 intermediates: the
# tests (``tests/test_llama.py``) hold them to 2% of the output's scale, training
# gradients included.
#
# Prefill
# -------
#
# A layer over batches of 2048-token prompts, without gradients, in one run per GPU:
# eager PyTorch, :term:`torch.compile`, our kernels, and our kernels under
# ``torch.compile``. Every provider is checked against the same layer in float32
# before it is timed. TFLOP/s counts the projections and causal attention:

from gpuperf.bench.catalog import LLAMA_PREFILL, LLAMA_PREFILL_AUTOTUNE
from gpuperf.pages import run_or_load, show

prefill = show(LLAMA_PREFILL)
print(page.prefill_table(prefill))

# %%
# ``torch.compile(mode="max-autotune")`` times Triton templates against cuBLAS for
# every matmul shape on its first call, which makes that call far longer than the
# others, so it has a benchmark of its own at one batch:

print(run_or_load(LLAMA_PREFILL_AUTOTUNE).table())
print(page.autotune_cost())

# %%
# Where the time goes, part by part (``torch.profiler``, every kernel added to the
# part whose range launched it), for eager PyTorch and ours, in prefill and in two
# decode steps:

page.plot_time_breakdown()
print(page.amdahl())

# %%
# In eager PyTorch the norms, RoPE and the SwiGLU's elementwise half each read and
# write whole activations several times; ours does each in one pass, and the MLP's
# gate costs nothing beyond its matmul. What is left is matmuls and attention, where
# ``torch.compile`` keeps cuBLAS and SDPA (SDPA's own choice of backend: on Hopper,
# cuDNN's when PyTorch's cuDNN is recent enough, as tutorial 04 explains), and
# where the parts listed above show what ours still loses to those libraries. From
# here, a faster layer needs faster matmuls and attention, not more fusion.
#
# Decode
# ------
#
# A decode step multiplies one token per sequence by every weight, and attends to
# the whole cache. The attention alone, ours against SDPA on the same cache, as GB/s
# of :term:`KV cache` read (batch 1, 8 and 64; Llama 3 8B's heads):

from gpuperf.bench.catalog import ATTENTION_DECODE, LLAMA_DECODE

kernel = show(ATTENTION_DECODE)

# %%
# The whole step, one token per sequence, timed as a decode loop runs it (steps back
# to back, the host included): eager PyTorch, ``torch.compile(mode="reduce-overhead")``
# (which records :term:`CUDA graphs <CUDA graph>`), ours launched one kernel at a time,
# and ours captured in one CUDA graph. GB/s counts the weights and the cache read:

decode = show(LLAMA_DECODE)
print(page.decode_table(decode, batch=1))

# %%
# At batch 1 the GPU needs a few hundred microseconds per step, and eager Python
# takes longer than that to launch the step's kernels: the GPU waits
# (:term:`host overhead`). The kernels' own time against the step's:

print(page.launch_bound())

# %%
# A CUDA graph replays the whole step with one launch, so the step costs what its
# kernels cost; then the matmuls must read the weights near the stream bandwidth
# even with one row of input. A tile of 128 columns leaves most :term:`SMs <SM>`
# idle (4096 columns are 32 tiles); ``matmul_splitk`` takes 32 columns a program,
# 128 programs for a wave of 132 SMs, and splits K (:term:`split-K`) where the
# columns alone are too few.
# A decode step's projections, as GB/s of weight read:

from gpuperf.bench.catalog import MATMUL_SMALL_M

small = show(MATMUL_SMALL_M)

# %%
# A training step
# ---------------
#
# Forward and backward of the layer at batch 4 of 2048 tokens (gradients of the
# input and every weight), and the peak memory of one step beyond the inputs. The
# check compares the gradients of the input and of the projections with the float32
# layer's norm-wise, ``||out - ref|| / ||ref||`` within 5%: each element sums thousands
# of bfloat16-rounded products, so eager PyTorch's own gradients sit 2-3% from
# float32's and no elementwise tolerance holds. A provider that misses it is not timed:

from gpuperf.bench.catalog import LLAMA_TRAIN, LLAMA_TRAIN_MEMORY

train = show(LLAMA_TRAIN)
memory = run_or_load(LLAMA_TRAIN_MEMORY)
print(page.training_summary(train, memory))

# %%
# On the roofline
# ---------------
#
# Each phase at its arithmetic intensity and achieved rate (the
# :ref:`roofline guide <sphx_glr_guides_02_roofline.py>` explains the chart):

page.plot_roofline()

import matplotlib.pyplot as plt

plt.show()  # run as a script: every figure of the page, in windows

# %%
# Prefill sits right of the ridge, under the compute roof; decode sits left of it, on
# the bandwidth slope, and moves right only as the batch grows. The
# :ref:`optimization-strategy guide <sphx_glr_guides_03_optimization_strategy.py>`'s
# loop, profile, classify, fuse and tune, is what this page did to a real layer.
#
# What to take away
# -----------------
#
# * Profile the layer before optimizing a kernel: the projections are most of a
#   prefill, so fusing the rest can only gain what Amdahl's law allows, and the
#   matmul's speed decides the remainder.
# * Prefill is compute-bound (thousands of FLOPs per byte) and decode memory-bound
#   (at most about the batch size, less once KV-cache reads dominate the bytes):
#   read each against its own roof.
# * Fusion pays where eager code re-reads activations: RMSNorm, RoPE and the SwiGLU
#   gate each become one pass, the gate inside its matmul's epilogue.
# * Decode at batch 1 is launch-bound: capture the step in a CUDA graph, then make
#   every kernel stream the weights and the cache near the stream bandwidth
#   (Flash-Decoding, enough programs per matmul to fill every SM).
