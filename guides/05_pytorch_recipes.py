"""
PyTorch's performance recipes, measured
=======================================

The PyTorch performance-tuning guide lists recipes that make training faster without
writing a :term:`kernel`: feed the GPU from worker processes and :term:`pinned memory
<pinned memory>`, let float32 matmuls use :term:`TF32` or run under :term:`autocast`,
skip a memset in ``zero_grad``, stop making the host wait for the GPU, let cuDNN pick
its convolution algorithms on an NHWC layout, trade compute for memory with
checkpointing, and compile the step. Each is worth what it saves on your model and
your GPU, which can be nothing. This guide measures each one as a user meets it: a
whole training step (forward, loss, backward, optimizer), timed on the host's clock
between two :term:`synchronizations <synchronize>`, host included.

**What you will learn**

* what each recipe changes underneath (a DMA copy, a tensor-core format, a kernel
  skipped, a wait removed, an algorithm search, a memory layout, a recomputation, a
  :term:`fusion`), and so where it can pay off and where it cannot;
* how to find the synchronizations in your own loop with
  ``torch.cuda.set_sync_debug_mode("warn")``;
* what each recipe costs: accuracy (TF32, bfloat16), a first step's seconds
  (``cudnn.benchmark``, ``torch.compile``), step time (checkpointing).

Every number comes from one run of ``scripts/recipes_capture.py`` on a GPU, kept as
captures with where and when they were measured. The answer first:
"""

from gpuperf.pages import recipes as page

print(page.in_one_paragraph())

# %%
# How each recipe is measured
# ---------------------------
#
# The unit of every recipe is one training step of a small model, the same function
# everywhere: zero the gradients, run the forward and the loss (under autocast when
# asked), the backward and the optimizer (AdamW):
#
# .. literalinclude:: ../../scripts/recipes_capture.py
#    :pyobject: train_step
#
# Its time is what a training loop sees: a few warm-up steps, then rounds of steps
# between two ``torch.cuda.synchronize()`` calls on the host's clock, divided by the
# steps. The median of the rounds is reported with their 20th and 80th percentiles. A
# recipe's speed is the baseline's median over its own; the percentiles give that ratio
# a spread, from the baseline's 20th percentile over the recipe's 80th to the baseline's
# 80th over the recipe's 20th. Where the spread holds 1, or the medians are within a few
# percent of each other (``gpuperf.pages.recipes.NOISE``), the difference cannot be told
# from the run-to-run noise, and the page says **no measurable gain** (**no measurable
# difference** where the median is the slower); a ratio whose whole spread lies below 1
# is a slowdown. A single call (a matmul, one copy) is timed with :term:`do_bench`
# instead.
#
# .. literalinclude:: ../../scripts/recipes_capture.py
#    :pyobject: step_ms
#
# 1. Feed the GPU: DataLoader workers and pinned memory
# -----------------------------------------------------
#
# With ``num_workers=0`` the training process builds each batch itself (read, decode,
# crop, normalize, collate) between steps, and the GPU idles once it has run the work
# already queued. With ``num_workers=N``,
# N worker processes build whole batches in parallel with the loop, a few batches
# ahead.
#
# The copy to the GPU is the second half, and two settings change it, each in its own
# way. **Where the batch lives**: a GPU's copy engine reads host memory by DMA, and only
# from pages the operating system will not move, **pinned** ones. From ordinary
# (pageable) memory the CUDA driver first copies the batch into a pinned staging buffer
# and sends it from there; ``pin_memory=True`` has the loader pin each batch in a
# background thread, so the copy engine reads it directly. **Whether the host waits**:
# ``.to("cuda")`` queues the copy on the GPU's stream and then, unless
# ``non_blocking=True``, synchronizes with that stream (PyTorch's `guide to non_blocking
# and pin_memory <https://docs.pytorch.org/tutorials/intermediate/pinmem_nonblock.html>`_):
# the host waits until the GPU has run everything queued before the copy, the last
# step's backward and optimizer included, and the copy itself. Until then it cannot
# queue the next step, and once it does, the GPU idles while Python and autograd launch
# it. With ``non_blocking=True`` and a pinned batch the call returns at once, and the
# host goes on queueing the step while the GPU still works on the last one. From
# pageable memory the staging copy may still hold the host: CUDA documents such a copy
# as one that "might be synchronous with respect to host" (`API synchronization behavior
# <https://docs.nvidia.com/cuda/cuda-runtime-api/api-sync-behavior.html>`_). The capture
# measures the two settings apart and together at each ``num_workers``, and how long
# each way of copying holds the host while the GPU is busy.
#
# .. literalinclude:: ../../scripts/recipes_capture.py
#    :pyobject: make_loader
#
# .. literalinclude:: ../../scripts/recipes_capture.py
#    :pyobject: train_from_loader
#
# How long a copy holds the host is timed on the host's clock, with a few milliseconds
# of matmuls queued on the GPU ahead of it:
#
# .. literalinclude:: ../../scripts/recipes_capture.py
#    :pyobject: host_wait_ms
#
# The dataset makes each sample on the host (crop, flip and normalize a uint8 image)
# and feeds a small conv net in bfloat16:

shown = page.show(page.DATA_LOADING)

# %%

page.figure(page.DATA_LOADING)

# %%

print(page.data_loading_reading(shown))

# %%
# **Reading it.** The workers can pay off only as far as making a batch took longer
# than the step: once the loader keeps up, the step on resident data (the dashed line)
# is the floor. The copy's two settings act on different costs. Pinning makes the copy
# itself faster, by the milliseconds per batch the lines above give, and in a loader
# with workers it also moves each batch's hand-over from the workers onto the loader's
# pin-memory thread, off the training thread. ``non_blocking`` removes the host's wait
# only for a pinned batch: from pageable memory the copy holds the host anyway, so on
# its own it changes little. The wait is worth removing because a copy that makes the
# host wait costs more than its own time: the host's work for the next step (Python,
# autograd, the launches) no longer overlaps the GPU's work on the last one, and the
# step becomes the sum of the two. Where a setting reads no measurable gain, it was not
# what the step waited for: the lines above say when it was the making of the batch.
#
# 2. Tensor cores for float32: TF32, and bfloat16 autocast
# --------------------------------------------------------
#
# A float32 matmul runs on the CUDA cores by default, at a small fraction of what the
# :term:`tensor cores <tensor core>` do. TF32 keeps float32's 8 exponent bits but
# rounds each input to 10 mantissa bits, so the tensor cores can multiply it,
# accumulating in float32; the tensors stay float32. One line allows it for matmuls
# (``torch.backends.cuda.matmul.fp32_precision = "tf32"`` is the newer spelling;
# mixing the old and the new flags can raise an error in recent PyTorch):
#
# .. literalinclude:: ../../scripts/recipes_capture.py
#    :pyobject: float32_matmul_precision
#
# Autocast goes further: inside ``torch.autocast("cuda", dtype=torch.bfloat16)`` the
# matmuls take bfloat16 inputs (7 mantissa bits), half the bytes of float32, while
# norms, softmax and losses stay float32 (``train_step`` above). The model is a stack
# of pre-norm MLP blocks:
#
# .. literalinclude:: ../../scripts/recipes_capture.py
#    :pyobject: Block

shown = page.show(page.PRECISION)

# %%

page.figure(page.PRECISION)

# %%

print(page.precision_reading(shown))

# %%
# **Reading it.** Where the step gains less than the matmul alone, the rest of the step
# is why: the LayerNorms, GELUs, residual additions and AdamW's update over every
# weight do not run on tensor cores at all, and their share of the step grows as the
# matmuls shrink. The speed has a price in rounding: TF32 keeps 10 bits of each
# operand's mantissa and bfloat16 7, against float32's 23, which most training
# tolerates and a numerical check against float32 does not.
#
# 3. ``zero_grad(set_to_none=True)``
# ----------------------------------
#
# ``optimizer.zero_grad()`` either writes zeros into every gradient
# (``set_to_none=False``: a ``zero_`` per gradient, or one fused ``_foreach_zero_`` per
# group of tensors when the optimizer was built with ``foreach=True``) or drops the
# gradients (``True``, the default since PyTorch 2.0). Dropping saves more than the
# zeros: when the backward finds no gradient it takes the new one as it is, while a
# zeroed gradient must be added to (``grad += new``), one more kernel per parameter
# that reads and writes the whole gradient. Measured on a model of many small layers
# and one of a few large ones, with the work ``torch.profiler``
# saw one step put on the GPU: its kernels, copies and memsets, and the time at least
# one of them was running (ranges the profiler annotates on the GPU's timeline, such as
# ``Optimizer.step#AdamW.step``, span that work and are not counted again):

shown = page.show(page.ZERO_GRAD)

# %%

page.figure(page.ZERO_GRAD)

# %%

print(page.zero_grad_reading(shown))

# %%
# **Reading it.** What ``set_to_none=True`` skips has two parts: memory traffic, a
# write of zeros and a read-add-write per gradient, which grows with the parameters'
# bytes; and launches, a few per parameter tensor, which grow with their number. It
# shows only where the step is short of what it skips: GPU time where the GPU sets the
# step's pace, the host's launches where the host does, and only when the saving is
# larger than the step's run-to-run spread. The default is already ``True``, so the
# recipe is mostly about not turning it off.
#
# 4. Host-device synchronizations
# -------------------------------
#
# The host queues kernels and returns at once, so a training loop normally runs ahead
# of the GPU, queueing the next step while the current one computes. Anything that
# needs a value on the host makes it wait until every queued kernel has finished:
# ``.item()``, ``print(tensor)``, ``if tensor:``, ``.tolist()``, ``.cpu()``, and ops
# whose output size depends on the data (``nonzero``, boolean indexing). After the
# wait the queue is empty, and the GPU idles while Python prepares and launches the
# next kernels. A loop as it is often written, and the same loop reading its losses
# once, at the end:
#
# .. literalinclude:: ../../scripts/recipes_capture.py
#    :pyobject: train_with_syncs
#
# .. literalinclude:: ../../scripts/recipes_capture.py
#    :pyobject: train_without_syncs
#
# ``torch.cuda.set_sync_debug_mode("warn")`` makes PyTorch warn at each synchronizing
# call (``"error"`` raises instead); this captures the warnings and keeps the line of
# the loop that caused each:
#
# .. literalinclude:: ../../scripts/recipes_capture.py
#    :pyobject: find_syncs

shown = page.show(page.SYNCS)

# %%

page.figure(page.SYNCS)

# %%

print(page.syncs_reading(shown))

# %%
# **Reading it.** A synchronization costs the host's wait for the GPU, then the GPU's
# idle time after it, while the host queues work again: without the waits each would
# hide behind the other, which pays most where the host's time per step and the GPU's
# are alike. The lines that synchronize also do work of their own on the host: a copy
# of the value from the GPU for each ``.item()`` and ``if tensor:``, and for
# ``print(tensor)`` the formatting, which reads the tensor several times. Where the
# GPU is busy a small share of the step, the waits are short, and the difference left
# can be smaller than the run-to-run spread of a loop that stops several times a step;
# the lines above give each width's busy time, and the rounds' range where the
# difference is lost in them. The debug mode sees the synchronizations PyTorch
# makes itself, a blocking ``.to("cuda")`` included; a wait inside the CUDA driver (a
# ``non_blocking`` copy from pageable memory may hold the host, section 1) is not
# reported.
#
# 5. ``cudnn.benchmark`` and ``channels_last``
# --------------------------------------------
#
# cuDNN has several algorithms for each convolution (implicit GEMM variants, FFT,
# Winograd) whose speeds depend on the shapes. By default PyTorch takes the one cuDNN's
# heuristics suggest; with ``torch.backends.cudnn.benchmark = True``, the first call
# at each new input shape times them all and keeps the fastest, so a model whose input
# shapes change every step pays that search again and again. PyTorch keeps the choice
# for each convolution's shapes and layout for the rest of the process, however it was
# made: set ``cudnn.benchmark`` before the first step, since shapes that already ran
# without it keep the heuristic's algorithms. (So the capture runs each setting in a
# fresh process.) The layout matters too:
# tensor-core convolution kernels want a pixel's channels side by side in memory (NHWC).
# PyTorch's default is NCHW; :term:`channels_last` keeps the shape and changes the
# strides:
#
# .. literalinclude:: ../../scripts/recipes_capture.py
#    :pyobject: to_channels_last
#
# .. literalinclude:: ../../scripts/recipes_capture.py
#    :pyobject: conv_net

shown = page.show(page.CONV)

# %%

page.figure(page.CONV)

# %%

print(page.conv_reading(shown))

# %%
# **Reading it.** A layout or an algorithm choice can only help where the convolutions
# are the step's time; with small images and channels, launches and BatchNorm's memory
# traffic can weigh as much. Where ``cudnn.benchmark``, run in a process of its own,
# reads no measurable gain, the algorithms it picked saved too little of the step to
# show: the heuristic's were about as fast, for these shapes, or the convolutions were
# too small a share of the step.
#
# 6. Gradient checkpointing
# -------------------------
#
# The backward pass needs the forward's activations, so by default all of them stay in
# memory until it runs: for a transformer's MLP block, the normalized input, the 4x
# wider hidden layer before and after GELU. :term:`Gradient checkpointing <gradient
# checkpointing>` keeps only a block's input and runs the block's forward again during
# the backward pass to get the rest back:
#
# .. literalinclude:: ../../scripts/recipes_capture.py
#    :pyobject: checkpointed
#
# .. literalinclude:: ../../scripts/recipes_capture.py
#    :pyobject: MLP

shown = page.show(page.CHECKPOINTING)

# %%

page.figure(page.CHECKPOINTING)

# %%

print(page.checkpointing_reading(shown))

# %%
# **Reading it.** Checkpointing never makes a step faster: it buys memory with compute.
# The memory freed is worth it when it lets a larger batch or model fit, or makes room
# for a larger batch that keeps the GPU busier; otherwise it is a cost.
#
# 7. ``torch.compile``
# --------------------
#
# :term:`torch.compile` captures the model's forward as a graph, derives the backward
# from it, and has :term:`Inductor` generate Triton kernels that :term:`fuse <fusion>`
# the elementwise work (LayerNorm, GELU, bias, residual) so each activation is read
# and written once; in the default mode the matmuls stay cuBLAS's. The first call
# compiles, for the shapes it sees; later calls with the same shapes run the compiled
# code:
#
# .. literalinclude:: ../../scripts/recipes_capture.py
#    :pyobject: compiled

shown = page.show(page.COMPILE)

# %%

page.figure(page.COMPILE)

# %%

print(page.compile_reading(shown))

# %%
# **Reading it.** Fusion saves memory traffic between the matmuls, so the gain is at
# most the share of the step that traffic was; the compile time is paid again in every
# new process (Inductor's cache, under ``/tmp`` by default, shortens it where it is
# kept) and for every new input shape. The
# :doc:`optimization guide <03_optimization_strategy>` compares the compile modes.
#
# What to take away
# -----------------
#
# * Time the whole step as your loop runs it, host included, and compare against a
#   baseline measured the same way; a recipe inside the run-to-run spread is no gain.
# * Keep the GPU fed: enough DataLoader workers that loading a batch takes less than a
#   step, pinned batches with ``non_blocking`` copies, so that the copy neither goes
#   through a staging buffer nor makes the host wait for the GPU.
# * Put matmuls on the tensor cores: bfloat16 autocast, or at least TF32 for float32
#   models, after checking the error your model can take.
# * Leave ``zero_grad``'s default (``set_to_none=True``), and find your loop's
#   synchronizations with ``torch.cuda.set_sync_debug_mode("warn")``: read losses and
#   metrics every N steps, or keep them on the GPU.
# * For convolutions, try ``channels_last``, and ``cudnn.benchmark`` (set before the
#   first step) when the input shapes are fixed; measure each, since the heuristics are
#   often right.
# * Checkpoint when memory, not time, is what limits you; compile when the step runs
#   long enough to win the compile time back.
