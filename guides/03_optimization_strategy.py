"""
Optimization strategy: ten steps, each measured
===============================================

**What you will learn**

* a method for making GPU code faster: measure, classify with the roofline,
  then fuse, tile, fix the access pattern, use the tensor cores, tune, and stop
  when the roof is reached;
* for each step, the measurement on this site that shows what it is worth,
  drawn from the tutorials' committed records rather than claimed;
* two fusion case studies (GELU, and add → ReLU → multiply): the eager formula,
  PyTorch's op, ``torch.compile`` and one Triton kernel, with the bytes each moves;
* what ``torch.compile``'s modes cost and buy, how a graph break and a
  recompilation show up, how each is removed, and the Triton code Inductor writes;
* what uncoalesced access costs, measured.

Every number below is printed by code from a committed record or capture (its
GPU, software and commit named under it) or computed while this page was built.
"""

# %%
# The method
# ----------
#
# 1. :ref:`Measure first <strategy-measure>`: find where the time goes before changing anything.
# 2. :ref:`Classify with the roofline <strategy-classify>`: is the kernel bound by memory or by arithmetic?
# 3. :ref:`Fuse <strategy-fuse>`: a memory-bound chain of operations should touch memory once.
# 4. :ref:`Tile and reuse on chip <strategy-tile>`: a compute-bound kernel must reuse what it loads.
# 5. :ref:`Coalesce <strategy-coalesce>`: neighbouring threads should read neighbouring bytes.
# 6. :ref:`Tensor cores and precision <strategy-precision>`: the fastest units take low precision.
# 7. :ref:`Occupancy, warps and stages <strategy-occupancy>`: enough work in flight to hide latency.
# 8. :ref:`Autotune <strategy-autotune>`: the best configuration depends on the shape and the GPU.
# 9. :ref:`Persistent kernels and TMA <strategy-persistent>`: on Hopper, fewer launches and cheaper loads.
# 10. :ref:`Know when to stop <strategy-stop>`: at the roof, only moving less work helps.
#
# Steps 1, 2 and 10 are the frame: the others are the moves, roughly in the
# order of what they are worth. The case studies on :ref:`torch.compile
# <strategy-compile>` show the same moves made by a compiler. A
# :ref:`checklist <strategy-checklist>` at the end links each step to its evidence.
#
# Everything below reads the same records as the tutorials, for every GPU that
# has them; the first is the reference GPU, or the GPU this page was built on.

import json
import re

import matplotlib.pyplot as plt
import numpy as np
import torch

from gpuperf.bench import captures, records, tuning
from gpuperf.bench import catalog as cat
from gpuperf.pages import run_or_load, sweeps
from gpuperf.pages.plotting import format_x, short_gpu_name
from gpuperf.pages.report import can_measure

device = "cuda" if can_measure() else "cpu"


def hardware(gpu):
    """The ceilings measured on ``gpu`` (its ``hardware.json``)."""
    return json.loads((records.measurements_dir() / gpu / "hardware.json").read_text())


def gpus_with(benchmark):
    return records.gpus_with_record(benchmark.name)


def row(result, provider, x, **axes):
    """One row of ``result``'s record, or None."""
    for r in result.record["rows"] if result.record else ():
        if (
            r["provider"] == provider
            and r["x"] == x
            and all(r["axes"].get(k) == v for k, v in axes.items())
        ):
            return r
    return None


def show_capture(name, render):
    """Call ``render(capture)`` for each GPU holding the capture ``name``, then print its provenance."""
    gpus = captures.gpus_with(name)
    if not gpus:
        print(
            f"MISSING: no capture {name!r}; run `bash scripts/device_run.sh strategy` on a GPU and commit it"
        )
    for gpu in gpus:
        cap = captures.load(name, gpu)
        print(f"--- {short_gpu_name(cap['provenance']['gpu'])}")
        render(cap)
        for reason in captures.staleness(cap):
            print(f"STALE: {reason}")
        print(captures.caption(cap), end="\n\n")


print("GPUs with records:", ", ".join(gpus_with(cat.VECTOR_ADD)))

# %%
# .. _strategy-measure:
#
# Step 1: measure first
# ---------------------
#
# Before changing code, find out what runs. The :ref:`profiling guide
# <sphx_glr_guides_01_profiling.py>` shows the tools; the smallest question they
# answer is *how many kernels does one call launch?* Here is the answer for GELU
# (the tanh approximation, ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x³)))``)
# written four ways, from ``torch.profiler`` on the GPU: the formula in eager
# PyTorch, PyTorch's ``F.gelu``, ``torch.compile`` of the eager formula, and
# this site's Triton kernel.


_NOT_NAMES = {
    "void",
    "at",
    "native",
    "anonymous",
    "namespace",
    "vectorized_elementwise_kernel",
    "float",
}
_NOT_NAMES |= {
    "AUnaryFunctor",
    "BinaryFunctor",
    "c10",
    "std",
    "binary_internal",
    "cublasLt",
}


def short_kernel(name):
    """A kernel's name without C++ decoration: ATen's functor or kernel, or the name as it is."""
    if not name.startswith("void "):
        return name
    words = [w for w in re.findall(r"[A-Za-z_]\w*", name) if w not in _NOT_NAMES]
    return words[0] if words else name[:40]


def kernels_table(cap):
    for bench, providers in cap["payload"]["benchmarks"].items():
        for entry in providers.values():
            names = entry["kernels"]
            shown = ", ".join(short_kernel(n) for n in names)
            print(
                f"{bench:>13} {entry['label'][:36]:<36} {len(names):>2} kernel(s): {shown}"
            )


show_capture("kernels_per_call", kernels_table)

# %%
# Eight kernels for the eager formula, one for the others: each eager kernel reads
# its operands from memory and writes its result back. That count is the first
# thing a profile tells you, and it already says what to do (step 3).

# %%
# .. _strategy-classify:
#
# Step 2: classify with the roofline
# ----------------------------------
#
# A kernel that does :math:`F` FLOPs and must move :math:`B` bytes takes at least
# :math:`\max(F / P, B / W)`, with :math:`P` the peak arithmetic rate and
# :math:`W` the memory bandwidth. Its arithmetic intensity :math:`F / B` against
# the GPU's *ridge point* :math:`P / W` says which term wins: below the ridge the
# kernel is memory-bound and its yardstick is GB/s against the copy bandwidth;
# above, it is compute-bound and its yardstick is TFLOP/s against cuBLAS. The
# :ref:`roofline guide <sphx_glr_guides_02_roofline.py>` draws every kernel of the
# site on one chart; here are a few, with the intensity taken from the byte and
# FLOP counts every record stores and the ridge from the ceilings measured in
# the same runs.

CLASSIFY = [
    (cat.VECTOR_ADD, 2**28, {}),
    (cat.GELU, 2**28, {"dtype": "float32"}),
    (cat.SOFTMAX, 8192, {}),
    (cat.MATMUL, (16, 14336, 4096), {"dtype": "bfloat16"}),
    (cat.MATMUL, (8192, 8192, 8192), {"dtype": "bfloat16"}),
    (
        cat.ATTENTION_FORWARD,
        8192,
        {"dtype": "float16", "head_dim": 128, "causal": False},
    ),
]
for gpu in gpus_with(cat.VECTOR_ADD):
    ceilings = hardware(gpu)["ceilings"]
    ridge = (
        ceilings["bf16_tflops"]["value"] * 1e12 / (ceilings["copy_gbps"]["value"] * 1e9)
    )
    print(
        f"--- {gpu}: ridge point (bf16 cuBLAS / copy bandwidth) = {ridge:.0f} FLOP/byte"
    )
    print(f"{'kernel':>18} {'x':>16} {'FLOP/byte':>10}  bound by  ours, % of that roof")
    for bench, x, axes in CLASSIFY:
        path = records.record_path(bench.name, gpu)
        try:
            rec = records.read(path) if path.exists() else None
        except ValueError:
            rec = None
        if rec is None:
            print(f"{bench.name:>18} (no record)")
            continue
        mine = [
            r
            for r in rec["rows"]
            if r["x"] == x
            and r["provider"] == bench.subject.key
            and all(r["axes"][k] == v for k, v in axes.items())
        ]
        if not mine:
            continue
        r = mine[0]
        intensity = r["flops"] / r["bytes"]
        bound = "memory" if intensity < ridge else "compute"
        roof = (
            f"{100 * r['value'] / rec['ceilings'][r['ceiling']]['value']:.0f}% of {r['ceiling']}"
            if r["status"] == "ok" and r["ceiling"]
            else r["status"]
        )
        print(
            f"{bench.name:>18} {format_x(x):>16} {intensity:>10.1f}  {bound:>8}  {roof}"
        )

# %%
# Everything elementwise, and softmax, sits orders of magnitude below the
# ridge: for those kernels only bytes matter, and the FLOPs are free. The skinny
# matmul (16 tokens, a decoding step) is memory-bound too, although it is a
# matmul: it reads a whole weight matrix to do little with each element. Large
# matmuls and attention sit far above the ridge. The strategy differs on the
# two sides, which is why this step comes before any other.

# %%
# .. _strategy-fuse:
#
# Step 3: fuse
# ------------
#
# A memory-bound chain of operations costs the bytes it moves; each operation
# run as its own kernel writes its result to memory for the next to read back.
# Fusing the chain into one kernel makes it read its inputs once and write its
# output once. Tutorial 02 measured this for softmax: five eager kernels against
# one fused kernel.

softmax = run_or_load(cat.SOFTMAX)
for result in softmax.gpus():
    speedups = result.ratios("triton")
    naive = result.ratios("naive")
    ratio = {x: speedups[x] / naive[x] for x in speedups if x in naive}
    if ratio:
        print(
            f"{short_gpu_name(result.gpu)}: fused softmax is {min(ratio.values()):.1f}x to "
            f"{max(ratio.values()):.1f}x faster than the naive eager version "
            f"({cat.SOFTMAX_ROWS} rows, {min(ratio)} to {max(ratio)} columns)"
        )

# %%
# The GELU case study
# ~~~~~~~~~~~~~~~~~~~
#
# GELU is the activation of GPT-2 and BERT; ``gpuperf.kernels.gelu`` computes it
# in one Triton kernel. It reads ``x`` once, evaluates the formula in float32
# (``0.5 (1 + tanh(u))`` as ``1 / (1 + exp(-2u))``, the same function with one
# exponential and no cancellation), and writes the result once:
#
# .. literalinclude:: ../../src/gpuperf/kernels/gelu.py
#    :pyobject: _gelu_kernel
#
# The eager formula it replaces, from ``gpuperf.reference``:
#
# .. literalinclude:: ../../src/gpuperf/reference.py
#    :pyobject: gelu_eager
#
# First, is it right? Checked against the float64 reference on shapes that
# cross every path, and on both tails of the curve; without a GPU, through
# Triton's interpreter while this page was built:

from gpuperf.kernels import add_relu_mul, gelu
from gpuperf.reference import add_relu_mul_ref, gelu_ref
from gpuperf.testing import assert_close

for shape in [(1,), (1000,), (1025,), (3, 5, 7)]:
    x = 4 * torch.randn(shape, device=device)
    assert_close(f"gelu {shape}", gelu_ref(x), gelu(x))
    y, z = torch.randn(shape, device=device), torch.randn(shape, device=device)
    assert_close(
        f"add_relu_mul {shape}", add_relu_mul_ref(x, y, z), add_relu_mul(x, y, z)
    )
print(f"gelu and add_relu_mul match their float64 references on {device}")

# %%
# The bytes each version moves per element, from the formulas in
# ``gpuperf.bench.metrics``: the fused kernels read and write each element once;
# the eager formula reads and writes a tensor of ``x``'s size in every one of its
# kernels.

from gpuperf.bench import metrics

n = 2**28
for label, n_bytes in [
    (
        "fused (ours, F.gelu, torch.compile)",
        metrics.elementwise_bytes(n, 4, n_inputs=1),
    ),
    ("eager formula, 8 kernels", metrics.gelu_eager_bytes(n, 4)),
]:
    print(f"GELU, 2^28 float32, {label:<36}: {n_bytes / 2**30:5.1f} GiB")

# %%
# And the measurement, float32 and bfloat16, against the copy bandwidth
# measured in the same run (GB/s counts the fused kernel's bytes for every
# version, so a version that moves nine times the bytes shows at a ninth):

gelu_result = run_or_load(cat.GELU)
print(gelu_result.table())
gelu_result.plot()

# %%
# What the numbers say, at the largest size (2^28 elements, far past L2):

for result in gelu_result.gpus():
    ceiling = result.record["ceilings"]["copy_gbps"]["value"]
    for dtype in cat.ELEMENTWISE_DTYPES:
        parts = []
        for key in ("triton", "torch", "compile", "naive"):
            r = row(result, key, 2**28, dtype=dtype)
            if r and r["status"] == "ok":
                parts.append(
                    f"{key} {r['ms'] * 1e3:.0f} us ({100 * r['value'] / ceiling:.0f}% of copy)"
                )
            elif r:
                parts.append(f"{key} {r['status']}")
        print(f"{short_gpu_name(result.gpu)}, {dtype}: " + "; ".join(parts))
    naive = row(result, "naive", 2**28, dtype="float32")
    if naive and naive["status"] == "ok":
        moved = metrics.gelu_eager_bytes(2**28, 4)
        real = metrics.gb_per_s(moved, naive["ms"]) / ceiling
        print(
            f"  the eager formula, float32, moves {moved / 2**30:.0f} GiB in {naive['ms']:.2f} ms: "
            f"{real:.0%} of copy bandwidth on the bytes it really moves"
        )
    bf16 = row(result, "naive", 2**28, dtype="bfloat16")
    if bf16 and bf16["status"] != "ok":
        print(
            f"  the eager formula in bfloat16: {bf16['status']}: {bf16['message'].splitlines()[0][:150]}"
        )

# %%
# Three lessons. The eager formula is not slow kernel by kernel: on the bytes it
# really moves, it runs near the copy bandwidth; it is slow because it moves
# about nine times the bytes. Fusion is nearly the whole gain: in float32 the
# three fused versions (PyTorch's hand-written op, Inductor's kernel and the
# Triton kernel) reach the copy bandwidth alike. Not always, though: in bfloat16
# on the H200, the GPU with the most bandwidth, ``F.gelu`` and Inductor's kernel
# stay short of it at the largest sizes while the Triton kernel reaches it (the
# plot's lower right panel). A fused kernel is a necessary condition, not a
# sufficient one; a profile of the two kernels (the :ref:`profiling guide
# <sphx_glr_guides_01_profiling.py>` shows how)
# is the next step, not a guess. And in
# bfloat16 the eager formula is also *wrong*: every intermediate is rounded to
# bfloat16, and ``1 + tanh(u)`` cancels where ``tanh(u)`` is near -1, so the check
# against the reference refuses it (no time is recorded for a wrong answer).
# ``F.gelu``, ``torch.compile`` and the Triton kernel compute in float32 and round
# once.
#
# At the smallest sizes every version is launch-bound (a few microseconds per
# call whatever the size), and the eager formula pays for eight launches.
#
# Here is the kernel Inductor wrote for the eager formula, captured on the GPU
# (``torch._inductor.utils.run_and_get_code``): one pointwise kernel, the whole
# formula in registers between one load and one store, ``tanh`` from libdevice.


def print_code(name):
    """Render the Inductor code of ``name``; a GPU whose code is the same as the last one's says so."""
    shown = []

    def render(cap):
        code = cap["payload"]["code"][name]
        if shown and code == shown[-1]:
            print("(the same code as above)")
            return
        shown.append(code)
        for source in code:
            # The decorator's metadata lines run long: cut them, the kernel's own lines are short.
            print(
                "\n".join(
                    line if len(line) <= 120 else line[:116] + " ..."
                    for line in source.splitlines()
                )
            )

    return render


show_capture("inductor_elementwise", print_code("gelu_eager"))

# %%
# Add → ReLU → multiply
# ~~~~~~~~~~~~~~~~~~~~~
#
# ``relu(x + y) * z`` is the shape of a gated MLP's activation: three kernels in
# eager PyTorch, moving eight tensors' worth of bytes where one kernel moves four
# (three reads and a write). There is no PyTorch op for it; ``torch.compile``
# fuses it, and so does ``gpuperf.kernels.add_relu_mul``:
#
# .. literalinclude:: ../../src/gpuperf/kernels/add_relu_mul.py
#    :pyobject: _add_relu_mul_kernel

arm = run_or_load(cat.ADD_RELU_MUL)
print(arm.table())
arm.plot()

# %%
for result in arm.gpus():
    for dtype in cat.ELEMENTWISE_DTYPES:
        r = {
            k: row(result, k, 2**28, dtype=dtype)
            for k in ("triton", "compile", "naive")
        }
        if all(v and v["status"] == "ok" for v in r.values()):
            eager, compiled = (
                r["naive"]["ms"] / r["triton"]["ms"],
                r["compile"]["ms"] / r["triton"]["ms"],
            )
            byte_ratio = metrics.add_relu_mul_eager_bytes(
                1, 2
            ) / metrics.elementwise_bytes(1, 2, 3)
            print(
                f"{short_gpu_name(result.gpu)}, {dtype}, 2^28: eager / ours {eager:.2f}x "
                f"(bytes: {byte_ratio:.0f}x), compile / ours {compiled:.2f}x"
            )

show_capture("inductor_elementwise", print_code("add_relu_mul_eager"))

# %%
# The time ratio follows the byte ratio: three kernels that each stream at the
# copy bandwidth take about twice as long as one that moves half the bytes.

# %%
# .. _strategy-tile:
#
# Step 4: tile and reuse on chip
# ------------------------------
#
# A compute-bound kernel must reuse what it loads: tutorial 03's matmul gives
# each program a tile of the output and walks K, loading a tile of each operand
# per step and doing :math:`B_M B_N B_K` multiply-adds on it. Its intensity grows
# with the tile, and the measurement shows how close a tiled Triton kernel gets
# to cuBLAS:

matmul = run_or_load(cat.MATMUL)
for result in matmul.gpus():
    ratios = result.ratios(dtype="bfloat16")
    fractions = result.fraction_of_ceiling(dtype="bfloat16")
    for x in [(4096, 4096, 4096), (8192, 8192, 8192), (8192, 14336, 4096)]:
        if x in ratios:
            print(
                f"{short_gpu_name(result.gpu)}, bf16 {format_x(x):>15}: ours / cuBLAS {ratios[x]:.2f}x, "
                f"{100 * fractions[x]:.0f}% of cuBLAS's 8192³ rate"
            )

# %%
# .. _strategy-coalesce:
#
# Step 5: coalesce
# ----------------
#
# The memory system serves a warp's loads in 32-byte sectors. When the 32
# threads of a warp read 32 neighbouring float32 values, four sectors carry 128
# useful bytes; when they read every eighth value, 32 sectors carry the same
# 128 useful bytes, and seven eighths of the traffic is waste. Tutorial 01's
# kernel reads neighbours and reaches the copy bandwidth:

va = run_or_load(cat.VECTOR_ADD)
for result in va.gpus():
    f = result.fraction_of_ceiling().get(2**28)
    if f:
        print(
            f"{short_gpu_name(result.gpu)}: vector add at 2^28, {100 * f:.0f}% of copy bandwidth"
        )

# %%
# The counter-example is the same copy with a stride: output element ``i`` comes
# from input element ``i * stride`` (``gpuperf.kernels.strided_copy``). GB/s counts
# only the useful bytes (the output read once and written once), so the curve is
# what a strided access pattern leaves of the bandwidth:
#
# .. literalinclude:: ../../src/gpuperf/kernels/strided_copy.py
#    :pyobject: _strided_copy_kernel

strided = run_or_load(cat.STRIDED_COPY)
print(strided.table())
strided.plot()

# %%
for result in strided.gpus():
    copy = result.record["ceilings"]["copy_gbps"]["value"] * 1e9
    print(f"--- {short_gpu_name(result.gpu)}")
    print(" stride  useful % of copy  bytes fetched per float32 read  ours / PyTorch")
    ratios = result.ratios()
    for stride, fraction in sorted(result.fraction_of_ceiling().items()):
        r = row(result, "triton", stride)
        # At the copy bandwidth, the time pays for the 4-byte write of each element
        # (contiguous) and for what the memory system fetches to serve its read.
        fetched = copy * r["ms"] * 1e-3 / cat.STRIDED_COPY_ELEMENTS - 4
        print(
            f"{stride:>7} {100 * fraction:>17.0f} {fetched:>31.0f} {ratios.get(stride, float('nan')):>14.2f}"
        )

# %%
# Up to a stride of 4 (16 bytes) the cost of each element read is the bytes the
# stride spans: the sectors are fetched whole and a stride of two uses half of each.
# Past one 32-byte sector the cost keeps growing: the memory system fetches more
# than a sector at a time, and the reads spread over ever more DRAM pages, so at
# large strides each useful 4-byte element costs many times its size. PyTorch's
# own copy of the strided view lands in the same range: no kernel can fix this, the
# layout decides. The cure is in the data: transpose or repack once, so that the
# hot loop reads contiguous memory, or choose the loop order so that the
# fastest-moving index walks the contiguous dimension (tutorial 03's operands are
# loaded as tiles for this reason).

# %%
# .. _strategy-precision:
#
# Step 6: tensor cores and precision
# ----------------------------------
#
# On Hopper, the tensor cores do bf16 and fp16 products many times faster than
# the float32 units, and FP8 twice as fast again. The ceilings measured on each
# GPU (cuBLAS at 8192³, ``torch._scaled_mm`` for FP8) say how much:

for gpu in gpus_with(cat.VECTOR_ADD):
    c = hardware(gpu)["ceilings"]
    fp32 = c["fp32_tflops"]["value"]
    shown = ", ".join(
        f"{k.split('_')[0]} {c[k]['value']:.0f}"
        for k in ("fp32_tflops", "bf16_tflops", "fp8_tflops")
    )
    print(
        f"{gpu}: {shown} TFLOP/s; bf16 / fp32 = {c['bf16_tflops']['value'] / fp32:.0f}x, "
        f"fp8 / bf16 = {c['fp8_tflops']['value'] / c['bf16_tflops']['value']:.1f}x"
    )

# %%
# (cuBLAS's float32 matmul here is true float32; with TF32 allowed it would use the
# tensor cores at reduced precision.) Tutorial 05 measures what FP8 costs in accuracy
# and what its scales cost in time; our FP8 kernel against our bf16 persistent kernel:

fp8 = run_or_load(cat.MATMUL_FP8)
persistent = run_or_load(cat.MATMUL_PERSISTENT)
for r8 in fp8.gpus():
    try:
        rb = persistent.on(r8.gpu)
    except ValueError:
        continue
    fast = r8.values(scaling="tensor", accumulation="fast")
    promoted = r8.values(scaling="tensor", accumulation="float32")
    vb = rb.values()
    for x in [(4096, 4096, 4096), (8192, 8192, 8192)]:
        if x in fast and x in promoted and x in vb:
            print(
                f"{short_gpu_name(r8.gpu)} {format_x(x)}: bf16 {vb[x]:.0f} TFLOP/s; FP8 with the fast "
                f"accumulator {fast[x]:.0f} ({fast[x] / vb[x]:.2f}x), promoted to float32 "
                f"{promoted[x]:.0f} ({promoted[x] / vb[x]:.2f}x)"
            )

# %%
# Precision is paid for twice: once in the format of the operands, and once in
# how the products are summed. Hopper's FP8 tensor cores keep a reduced-precision
# accumulator; promoting the partial sums to float32 in registers, the accurate
# way, costs instructions in the main loop. Tutorial 05 shows the accuracy each
# choice buys.

# %%
# .. _strategy-occupancy:
#
# Step 7: occupancy, warps and stages
# -----------------------------------
#
# A streaming multiprocessor hides the latency of memory by switching among the
# warps it holds; a kernel's tile size, warps per program and pipeline stages
# decide how many programs fit at once (registers and shared memory are the
# limit) and how many loads each keeps in flight. The attention tuning sweep of
# tutorial 04 timed every candidate at one shape; laid out as tile against
# (warps, stages), the forward kernel at head dimension 128:


sweep_gpus = [
    g
    for g in gpus_with(cat.ATTENTION_FORWARD)
    if tuning.read_tuning(g, kernel="attention")
]
sweeps_of = {g: tuning.read_tuning(g, kernel="attention") for g in sweep_gpus}
# Forward kernel, D = 128, non-causal: tile (rows) against warps and stages (columns).
grids = {
    g: sweeps.config_grid(
        sweep["trials"], ("block_m", "block_n"), ("num_warps", "num_stages"),
        kernel="forward", head_dim=128, causal=False,
    )
    for g, sweep in sweeps_of.items()
}  # fmt: skip
fig, axes = plt.subplots(
    1,
    max(1, len(sweep_gpus)),
    figsize=(5.2 * max(1, len(sweep_gpus)), 3.9),
    facecolor="white",
)
axes = np.atleast_1d(axes)
for ax, gpu in zip(axes, sweep_gpus, strict=False):
    sweep, grid = sweeps_of[gpu], grids[gpu]
    values = np.array([[np.nan if v is None else v for v in r] for r in grid["tflops"]])
    image = ax.imshow(
        values, cmap="viridis", aspect="auto", vmin=0, vmax=np.nanmax(values)
    )
    for i, j in np.argwhere(~np.isnan(values)):
        color = "white" if values[i, j] < 0.6 * np.nanmax(values) else "black"
        ax.text(
            j,
            i,
            f"{values[i, j]:.0f}",
            ha="center",
            va="center",
            fontsize=9,
            color=color,
        )
    ax.set_xticks(
        range(len(grid["cols"])),
        [f"{w} warps\n{s} stages" for w, s in grid["cols"]],
        fontsize=8,
    )
    ax.set_yticks(
        range(len(grid["rows"])), [f"{m}x{n}" for m, n in grid["rows"]], fontsize=8
    )
    ax.set_ylabel("tile: BLOCK_M x BLOCK_N")
    ax.set_title(
        f"{short_gpu_name(sweep['provenance']['gpu'])}: TFLOP/s (blank: not tried)",
        fontsize=9.5,
    )
    fig.colorbar(image, ax=ax, fraction=0.05, pad=0.02)
fig.suptitle(
    "Attention forward, fp16, D = 128, S = 4096: tile vs warps and stages", fontsize=11
)
shown = [sweeps.sweep_caption(sweeps_of[g]) for g in sweep_gpus]
fig.text(0.01, 0.005, "\n".join(shown) or "no sweep", fontsize=6.5, color="#333333")
fig.subplots_adjust(
    left=0.1, right=0.97, top=0.84, bottom=0.2 + 0.04 * len(shown), wspace=0.3
)

# %%
# Read along a row: one tile, different warps and stages. The same tile can
# differ by tens of percent between its best and worst (warps, stages): too few
# warps leave the tensor cores waiting, too few stages leave loads exposed, and
# too many of either can push a program off the SM. The numbers, per GPU:

for gpu in sweep_gpus:
    grid = grids[gpu]
    for tile, values in zip(grid["rows"], grid["tflops"], strict=True):
        tried = [v for v in values if v is not None]
        if len(tried) > 1:
            print(
                f"{gpu}: tile {tile[0]}x{tile[1]}, {len(tried)} (warps, stages) tried: "
                f"worst / best = {min(tried) / max(tried):.2f}"
            )

# %%
# .. _strategy-autotune:
#
# Step 8: autotune
# ----------------
#
# No configuration wins everywhere. Tutorial 03's matmul sweep timed each
# candidate at each shape; drawn as a heatmap of % of the best at each shape
# (the winner outlined), the reference GPU, bfloat16:

ref_sweep = tuning.read_tuning(records.reference_gpu())
if ref_sweep:
    sweeps.plot_sweep(ref_sweep, "bfloat16")

# %%
# The winner moves from small tiles at small shapes to the largest at large ones,
# and a poor choice costs most of the speed. Tuning offline and keeping the result
# as data (``src/gpuperf/kernels/tuned/<gpu>/``) costs nothing at run time. How
# the tuned kernel compares with Inductor's own autotuner (``max-autotune``,
# Triton templates only), from tutorial 03's benchmark:

for result in matmul.gpus():
    vs_compile = {}
    for x in cat.MATMUL_SQUARE[2:]:
        mine, theirs = (
            row(result, "triton", x, dtype="bfloat16"),
            row(result, "compile", x, dtype="bfloat16"),
        )
        if mine and theirs and mine["status"] == theirs["status"] == "ok":
            vs_compile[x] = theirs["ms"] / mine["ms"]
    if vs_compile:
        print(
            f"{short_gpu_name(result.gpu)}: ours / max-autotune, bf16, 1024³ to 8192³: "
            f"{min(vs_compile.values()):.2f}x to {max(vs_compile.values()):.2f}x"
        )
for gpu in gpus_with(cat.MATMUL):
    sweep = tuning.read_tuning(gpu)
    if sweep:
        spreads = []
        for shape in [(4096, 4096, 4096), (8192, 8192, 8192)]:
            ok = [
                t["tflops"]
                for t in sweep["trials"]
                if tuple(t["shape"]) == shape and t["status"] == "ok"
            ]
            if ok:
                spreads.append(
                    f"{format_x(shape)}: worst / best = {min(ok) / max(ok):.2f} over {len(ok)} configs"
                )
        print(f"{gpu}: " + "; ".join(spreads))

# %%
# .. _strategy-persistent:
#
# Step 9: persistent kernels and TMA
# ----------------------------------
#
# On Hopper, tutorial 06 climbs from tutorial 03's kernel to a persistent grid
# (one program per SM, looping over tiles), then to loads by the Tensor Memory
# Accelerator, then to warp specialization. The ladder at two shapes, each rung
# against cuBLAS:

for result in persistent.gpus():
    for x in [(4096, 4096, 4096), (8192, 8192, 8192)]:
        rungs = []
        for key in (
            "triton_t03",
            "triton_pointer",
            "triton_tma",
            "triton_tma_ws",
            "triton",
        ):
            ratio = result.ratios(key).get(x)
            if ratio is not None:
                rungs.append(
                    f"{key.removeprefix('triton_') if key != 'triton' else 'tuned'} {ratio:.2f}"
                )
        print(
            f"{short_gpu_name(result.gpu)} {format_x(x)} (x cuBLAS): "
            + ", ".join(rungs)
        )

# %%
# .. _strategy-stop:
#
# Step 10: know when to stop
# --------------------------
#
# A kernel at its roof is done: a memory-bound kernel at the copy bandwidth can
# only get faster by moving fewer bytes (fusing it with its neighbours, or a
# smaller dtype), a compute-bound one at cuBLAS's rate only by doing fewer FLOPs
# or using faster units. Each kernel of the site, at its best measured point,
# as a share of its measured roof:

STOP = [
    cat.VECTOR_ADD,
    cat.SOFTMAX,
    cat.GELU,
    cat.ADD_RELU_MUL,
    cat.MATMUL,
    cat.MATMUL_PERSISTENT,
    cat.MATMUL_FP8,
    cat.ATTENTION_FORWARD,
]
for bench in STOP:
    result = run_or_load(bench)
    for r in result.gpus():
        best = max(
            (
                (v, x, c)
                for c in bench.combos()
                for x, v in r.fraction_of_ceiling(**c).items()
            ),
            default=None,
            key=lambda item: item[0],
        )
        if best:
            v, x, c = best
            where = ", ".join([format_x(x), *(f"{k}={val}" for k, val in c.items())])
            print(
                f"{bench.name:>18} {short_gpu_name(r.gpu):>15}: {100 * v:4.0f}% of its roof (at {where})"
            )

# %%
# The elementwise kernels and the persistent matmuls stand at or near their
# roofs: more tuning would buy little, and their next gains are elsewhere (fusing
# them into their neighbours: the matmul epilogue of tutorial 03). Attention sits
# further below its roof, where a faster algorithm, not a better
# configuration, is what is left (the cuDNN backend of tutorial 04 shows how much).

# %%
# .. _strategy-compile:
#
# Case study: ``torch.compile``'s modes
# -------------------------------------
#
# ``torch.compile`` makes several of these moves for you: Inductor fuses
# elementwise chains and reductions into Triton kernels (step 3), ``max-autotune``
# times GEMM configurations (step 8), and ``reduce-overhead`` records the whole
# call as a CUDA graph, so the host launches one graph instead of every kernel.
# What each costs to compile and what it buys, on a pre-norm transformer MLP block
# in bfloat16 (``layer_norm``, ``Linear(1024, 4096)``, GELU, ``Linear(4096, 1024)``,
# residual):
#
# .. literalinclude:: ../../src/gpuperf/bench/strategy.py
#    :pyobject: MLPBlock
#
# at 4096 tokens, where the matmuls keep the GPU busy, and at 8 tokens (a
# decoding step), where every kernel is tiny and launching them is the work.
# Each mode ran in a fresh process with empty compile caches, so compile time is
# what a first run pays; GPU time per call by ``do_bench`` (host delays excluded)
# and host time per call with the GPU kept busy (GPU time excluded). A loop of
# calls runs at about the larger of the two.


def compile_table(cap):
    payload = cap["payload"]
    for case, shape in payload["cases"].items():
        results = payload["results"][case]
        eager = results.get("eager", {})
        base = (
            max(eager["gpu_ms"], eager["host_ms"])
            if eager.get("status") == "ok"
            else None
        )
        print(
            f"{case}: tokens={shape['tokens']}, dim={shape['dim']}, hidden={shape['hidden']}, bfloat16"
        )
        heads = ("compile s", "GPU us", "host us", "bound by", "kernels", "vs eager")
        print(f"  {'mode':>16} " + " ".join(f"{h:>9}" for h in heads))
        for mode in payload["modes"]:
            e = results.get(mode, {"status": "missing"})
            if e["status"] != "ok":
                print(f"  {mode:>16} {e['status']}: {e.get('message', '')[-120:]}")
                continue
            per_call = max(e["gpu_ms"], e["host_ms"])
            bound = "host" if e["host_ms"] > e["gpu_ms"] else "GPU"
            kernels = "-" if e["kernels"] is None else str(len(e["kernels"]))
            speedup = f"{base / per_call:.2f}x" if base else "-"
            print(
                f"  {mode:>16} {e['compile_s']:>9.1f} {e['gpu_ms'] * 1e3:>9.1f} {e['host_ms'] * 1e3:>9.1f} "
                f"{bound:>9} {kernels:>9} {speedup:>9}"
            )
            if e["kernels"]:
                print(
                    f"  {'':>16} kernels: "
                    + ", ".join(short_kernel(k) for k in e["kernels"])
                )
            if base and mode != "eager" and per_call < base:
                calls = e["compile_s"] / ((base - per_call) * 1e-3)
                print(f"  {'':>16} compile time repaid after {calls:,.0f} calls")


show_capture("compile_modes", compile_table)

# %%
# Which modes paid for themselves, per GPU and case (time per call taken as the
# larger of GPU and host time):


def winners(cap):
    results = cap["payload"]["results"]
    for case, modes in results.items():
        ok = {
            m: max(e["gpu_ms"], e["host_ms"])
            for m, e in modes.items()
            if e["status"] == "ok"
        }
        if "eager" not in ok:
            continue
        faster = [
            f"{m} ({ok['eager'] / t:.2f}x)"
            for m, t in ok.items()
            if m != "eager" and t < ok["eager"]
        ]
        print(f"{case}: faster than eager: {', '.join(faster) or 'none'}")


show_capture("compile_modes", winners)

# %%
# **At 4096 tokens** the GPU bounds eager PyTorch, and the two matmuls are most
# of its time. The kernel lists show what Inductor did: it replaced the layer
# norm, the GELU and the residual add by Triton kernels of its own, but left both
# matmuls to cuBLAS (the same ``nvjet`` kernels as eager) and did not fuse the
# GELU into the first one's epilogue, so there was little left to gain and the
# GPU time barely moves. ``reduce-overhead`` adds a kernel: the copy of ``x`` into
# the CUDA graph's own input buffer (``multi_tensor_apply_kernel``), paid on every
# call. ``max-autotune`` replaced cuBLAS by its Triton GEMM templates
# (``triton_tem_...``), which won its benchmark of each GEMM alone and still ran
# slower in the block as timed here. For a block whose time is large GEMMs,
# compiling buys little, and the measurement says so before any effort is spent.
#
# **At 8 tokens** every mode is bound by the host: the GPU finishes the six tiny
# kernels well before Python has launched them all. Default mode does not reduce
# the host's work (Dynamo's guards and Inductor's launches cost about what eager's
# dispatch does). The CUDA-graph modes replace the launches by one graph replay,
# but the replay has host bookkeeping of its own (checking the graph's state,
# copying ``x`` in), so what they save depends on how fast the host is: the runs
# above show it GPU by GPU. Host times on these virtual machines move by tens of
# percent between runs (see :doc:`../measuring`); compare the modes of one run.
# Compile times differ by an order of magnitude: ``max-autotune`` times many GEMM
# configurations while it compiles, and the table turns a gain into the number of
# calls needed before the compile time is repaid.
#
# Graph breaks
# ~~~~~~~~~~~~
#
# ``torch.compile`` can only fuse what Dynamo captures in one graph. A Python
# ``if`` on a tensor's *value* forces Python to know the value now, so Dynamo
# ends the graph there, runs the branch in Python, and starts another graph after
# it: two graphs, two compilations, and no fusion across the break.
#
# .. literalinclude:: ../../src/gpuperf/bench/strategy.py
#    :pyobject: gated_mlp_with_branch
#
# ``torch._dynamo.explain`` counts the graphs and says why each break happened
# (these run on this build's machine: Dynamo only traces here):

from gpuperf.bench import strategy

x, w1, w2 = torch.randn(8, 64), torch.randn(64, 256) / 8, torch.randn(256, 64) / 16
for fn in (strategy.gated_mlp_with_branch, strategy.gated_mlp_without_branch):
    found = strategy.explain_graph_breaks(fn, x, w1, w2)
    print(
        f"{fn.__name__}: {found['graphs']} graph(s), {found['breaks']} graph break(s)"
    )
    for reason in found["reasons"]:
        print(f"    {reason}")

# %%
# The fix keeps the decision on the GPU as data: ``torch.where`` computes both
# sides and selects, one graph. (``torch.compile(..., fullgraph=True)`` turns any
# break into an error, which is how to make sure none comes back.)
#
# .. literalinclude:: ../../src/gpuperf/bench/strategy.py
#    :pyobject: gated_mlp_without_branch
#
# Recompilations
# ~~~~~~~~~~~~~~
#
# A compiled graph is guarded by what it assumed, the input shapes among them.
# Calling it with a new batch size fails a guard and compiles again. Counted by a
# backend that records each graph Dynamo hands it, for eight calls with batch
# sizes 2 to 9:

calls = [(torch.randn(b, 64), w1, w2) for b in range(2, 10)]
fn = strategy.gated_mlp_without_branch
for label, kwargs in [
    ("dynamic=False (one graph per shape)", {"dynamic": False}),
    ("default (automatic dynamic shapes)", {}),
    ("mark_dynamic(x, 0) before each call", {"mark_dynamic": 0}),
]:
    counted = strategy.count_graphs(fn, calls, **kwargs)
    print(f"{label:<40}: {counted['graphs']} graph(s) for {counted['calls']} calls")
    if counted["first_reason"]:
        print(f"{'':<42}first recompilation: {counted['first_reason']}")

# %%
# With static shapes every new batch size is a compilation (and after
# ``torch._dynamo.config.recompile_limit`` of them, Dynamo gives up and runs the
# function eagerly). By default, the second shape makes Dynamo recompile once
# with the batch dimension symbolic. Marking the dimension dynamic up front
# avoids even that recompilation; so does padding batches to a few fixed sizes,
# which keeps each graph static (what CUDA graphs need). ``TORCH_LOGS=recompiles``
# prints each guard failure as it happens.

# %%
# .. _strategy-checklist:
#
# Checklist
# ---------
#
# * **Profiled?** Count the kernels and where the time goes before changing
#   anything (:ref:`step 1 <strategy-measure>`, the :ref:`profiling guide
#   <sphx_glr_guides_01_profiling.py>`).
# * **Classified?** Arithmetic intensity against the ridge point decides the
#   yardstick: GB/s against copy, or TFLOP/s against cuBLAS (:ref:`step 2
#   <strategy-classify>`, the :ref:`roofline guide <sphx_glr_guides_02_roofline.py>`).
# * **Memory-bound chain fused?** One read and one write per element; eager chains
#   move several times the bytes (:ref:`step 3 <strategy-fuse>`: GELU,
#   add → ReLU → multiply, softmax in :ref:`tutorial 02
#   <sphx_glr_tutorials_02_fused_softmax.py>`).
# * **Compute-bound kernel tiled?** Reuse each loaded tile many times, and order the
#   programs for L2 (:ref:`step 4 <strategy-tile>`, :ref:`tutorial 03
#   <sphx_glr_tutorials_03_matmul.py>`).
# * **Contiguous access?** Neighbouring threads on neighbouring bytes; a stride of
#   32 bytes leaves an eighth of the bandwidth (:ref:`step 5 <strategy-coalesce>`,
#   :ref:`tutorial 01 <sphx_glr_tutorials_01_vector_add.py>`).
# * **Tensor cores and the lowest precision that is accurate enough?**
#   (:ref:`step 6 <strategy-precision>`, :ref:`tutorial 05 <sphx_glr_tutorials_05_fp8_matmul.py>`).
# * **Warps and stages chosen by measurement?** (:ref:`step 7 <strategy-occupancy>`).
# * **Autotuned per shape and GPU, offline?** (:ref:`step 8 <strategy-autotune>`).
# * **On Hopper: persistent grid and TMA?** (:ref:`step 9 <strategy-persistent>`,
#   :ref:`tutorial 06 <sphx_glr_tutorials_06_tma_persistent_matmul.py>`).
# * **At the roof?** Then stop tuning and move less work instead (:ref:`step 10
#   <strategy-stop>`).
# * **Launch-bound?** Small batches: CUDA graphs (``reduce-overhead``) or fewer,
#   larger kernels (:ref:`torch.compile's modes <strategy-compile>`).
# * **One graph, no recompilations?** ``torch._dynamo.explain``,
#   ``fullgraph=True``, ``TORCH_LOGS=recompiles`` (:ref:`graph breaks and
#   recompilations <strategy-compile>`).
