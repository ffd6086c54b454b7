"""
Matmul: tiles, program order, autotuning and a fused epilogue
=============================================================

**What you will learn**

* why a matrix multiply is compute-bound only if it reuses what it loads: the
  *arithmetic intensity* of a tile, and the *ridge point* of the GPU it runs on;
* how a Triton matmul walks K in tiles, accumulates in float32 on the tensor
  cores, and applies bias and activation while the tile is still in registers;
* why the order in which programs are launched changes DRAM traffic several
  times over, read from Nsight Compute's hardware counters;
* what autotuning tried, what it chose and how much the choice matters;
* how the kernel compares with cuBLAS and with ``torch.compile``'s Triton
  templates, and what its Python wrapper costs per call.

The answer first, read from the records of every GPU measured:
"""

from gpuperf.bench.catalog import HOST_OVERHEAD, MATMUL, MATMUL_EPILOGUE, MATMUL_ORDER
from gpuperf.pages import can_measure, ceilings, page_gpu, run_or_load, show
from gpuperf.pages import matmul as page

print(page.in_one_paragraph())

# %%
# Arithmetic intensity of a tile
# ------------------------------
#
# :math:`C = AB` with :math:`A` of :math:`M \times K` and :math:`B` of
# :math:`K \times N` does :math:`2MNK` FLOPs (a multiply and an add per term). A
# kernel that computed each output element on its own would load a row of
# :math:`A` and a column of :math:`B` for it: two values, four bytes in float16,
# for every multiply-add, half a FLOP per byte. A data-center GPU's
# :term:`tensor cores <tensor core>` do hundreds of FLOPs in the time its memory
# delivers one byte, so that kernel would wait on memory all the time.
#
# A tiled kernel gives each :term:`program` a :math:`B_M \times B_N`
# :term:`tile` of :math:`C`. It walks :math:`K` in steps of :math:`B_K`, each
# time loading a :math:`B_M \times B_K` tile of :math:`A` and a
# :math:`B_K \times B_N` tile of :math:`B` into :term:`shared memory` (SRAM on
# the chip), and multiplies them: :math:`2 B_M B_N B_K` FLOPs for
# :math:`(B_M + B_N) B_K` elements loaded. Every element loaded is used
# :math:`B_N` (or :math:`B_M`) times from SRAM, so the FLOPs per byte, the
# :term:`arithmetic intensity`, grow with the tile, as
# :math:`B_M B_N / (B_M + B_N)` in float16:

from gpuperf.bench.metrics import matmul_bytes, matmul_flops
from gpuperf.pages.plotting import format_x


def tile_intensity(block_m: int, block_n: int, block_k: int, size: int = 2) -> float:
    """FLOPs per byte loaded by one K step of a BLOCK_M x BLOCK_N tile."""
    return 2 * block_m * block_n * block_k / ((block_m + block_n) * block_k * size)


print("tile (BK = 64)   bytes loaded per K step   FLOP/B")
for bm, bn in [(1, 1), (16, 16), (64, 64), (128, 128), (128, 256)]:
    loaded = (bm + bn) * 64 * 2
    print(f"{f'{bm} x {bn}':>14}   {loaded:>21,}   {tile_intensity(bm, bn, 64):6.1f}")

# %%
# The tile's intensity counts the bytes it loads from global memory, whether they
# come from :term:`DRAM` or from the :term:`L2` cache in front of it. The whole
# product has an upper bound of its own: if every element of :math:`A`,
# :math:`B` and :math:`C` crossed the DRAM bus exactly once,
# :math:`2MNK / (2(MK + KN + MN))` FLOPs per byte. For large square products
# that bound is far above any tile's; for the skinny product of a model at
# decode time (16 tokens) it is tiny, whatever the kernel does:

print("shape (M×N×K)    whole-matrix FLOP/B")
squares = [(1024,) * 3, (4096,) * 3, (8192,) * 3]
for shape in [*squares, (8192, 14336, 4096), (16, 14336, 4096)]:
    intensity = matmul_flops(*shape) / matmul_bytes(*shape, element_size=2)
    print(f"{format_x(shape):>15}  {intensity:19.1f}")

# %%
# Which side of the line a kernel falls on depends on the GPU's
# :term:`ridge point`: its peak FLOP/s divided by its memory bandwidth. Below
# it, a kernel cannot keep the tensor cores fed (:term:`memory-bound`); above
# it, memory can keep up (:term:`compute-bound`). Here are the ceilings
# measured on the GPU these pages show (a :term:`cuBLAS` matmul per dtype at a
# few large squares, the fastest kept and named with its shape, a 1 GiB copy and
# the fastest of a few 1 GiB streams, the :term:`stream bandwidth` the ridge is
# taken against, in the same run), the datasheet's in brackets, and where the
# largest tile falls. Every benchmark run measures these ceilings again at its
# start and its record keeps them: the percentages further down are taken of the
# matmul run's own, which the page prints beside these.

hw = ceilings()
print(hw)
print(f"the 128 x 256 tile: {tile_intensity(128, 256, 64):.0f} FLOP/B")
print(f"the bf16 ridge point: {hw.ridge_point('bf16'):.0f} FLOP/B")

# %%
# A tile below the ridge would be memory-bound if all its loads came from DRAM.
# Tiling is what turns a memory-bound loop into a
# compute-bound one: a value loaded once into SRAM feeds a whole row or column
# of the tile's multiply-adds, which the tensor cores run straight out of SRAM
# and :term:`registers`. The tile's size is bounded by the chip (the tiles of
# every pipeline stage must fit in shared memory, the float32 accumulators in
# registers), so the tile alone does not always clear the ridge. The rest comes
# from the L2 cache: the tile of :math:`A` one program loads is also needed by
# every other program in the same row of tiles of :math:`C` (:math:`N / B_N` of
# them), and when those programs run at the same time, all but the first find
# it in L2. How often that happens depends on the order the programs run in
# (below). These three levels, the tile in SRAM, its neighbours in L2 and the
# whole matrix in DRAM, are the :term:`roofline` model that the roofline guide
# draws for every kernel on this site.
#
# The kernel
# ----------
#
# This is the kernel exactly as it lives in ``src/gpuperf/kernels/matmul.py``:
#
# .. literalinclude:: ../../src/gpuperf/kernels/matmul.py
#    :pyobject: _matmul_kernel
#
# **Grouped program order.** The :term:`grid` is one-dimensional, one program
# per tile of :math:`C`; the first lines turn the program id into a tile's row
# and column. Plain row-major order would run every tile of the first row of
# :math:`C`, then the second, and so on. :term:`Grouped order <grouped
# ordering>` walks ``GROUP_M`` rows of tiles column by column instead, so the
# programs running at the same time cover a compact block of :math:`C` and
# share its few rows of :math:`A` tiles and columns of :math:`B` tiles in L2
# (the last group may have fewer rows, hence ``group_size_m``). The effect is
# measured below.
#
# **Wrapping instead of masking.** Row and column indices past the edge of the
# matrix wrap around (``% M``, ``% N``): every load stays in bounds and needs no
# :term:`mask`, and the store's mask drops the rows and columns computed from
# wrapped indices. Along :math:`K` a wrap would be wrong (it would add real
# products to the sum), so there the loads are masked with zeros, which add
# nothing. The wrapper tells the kernel whether :math:`K` is a multiple of
# ``BLOCK_K`` as the constexpr ``EVEN_K``, so a loop that never needs the mask
# is compiled without it.
#
# **64-bit offsets.** ``row * stride_am`` passes :math:`2^{31}` once a matrix has
# over 2 G elements (4 GiB of float16, which these GPUs hold easily), so the
# offsets (:term:`strides <stride>` times indices) are computed in int64.
#
# **float32 accumulation.** ``acc`` is float32 whatever the input dtype:
# ``tl.dot(a, b, acc)`` multiplies float16 or bfloat16 tiles on the tensor cores
# and adds into float32. Summing thousands of products in float16 would lose
# most of the digits the inputs have.
#
# **Fused epilogue.** After the loop the tile of :math:`C` is in registers, still
# in float32. Adding a bias and applying an activation there (the
# :term:`epilogue`) costs a few instructions per element and no memory traffic;
# done afterwards by separate kernels it costs whole passes over :math:`C` in
# DRAM (counted below). ReLU and leaky ReLU are a ``maximum`` and a ``where``.
# GELU uses the tanh form, as
# ``torch.nn.functional.gelu(x, approximate="tanh")``, rewritten with
# :math:`\tfrac12(1 + \tanh u) = \sigma(2u)`:
#
# .. math:: \mathrm{gelu}(x) = x\,\sigma(2u) = \frac{x}{1 + 2^{-2u \log_2 e}},
#    \qquad u = \sqrt{2/\pi}\,(x + 0.044715\,x^3),
#
# one ``exp2`` (a single hardware instruction) and a division. For very negative
# :math:`x` the power overflows to infinity and :math:`x / \infty` is the right
# limit, 0 (the interpreter warns about the overflow; the GPU does not).
#
# **One rounding.** The product, the bias and the activation are all computed
# in float32 and rounded to the output dtype once, at the store. The unfused
# chain rounds three times: after the product, after the bias, after GELU.
#
# The wrapper
# -----------
#
# ``matmul`` is one plain function, decorated with ``@op``
# (``src/gpuperf/kernels/launch.py``, the launch path of every op in the
# package; tutorial 02 shows it on softmax). It validates the inputs, picks a
# launch configuration, allocates :math:`C` and returns it with the launch that
# fills it (kernel, grid, runtime arguments, constexprs, warps, stages); it
# launches nothing itself. The grid is one program per tile, the strides pass as
# they are (any layout is read in place), and at :math:`K = 0` the loop runs
# zero times and only the epilogue runs, the output standing in for :math:`A`
# and :math:`B`. From that one function ``@op`` builds the eager call, the
# ``torch.library`` op and the plan that later calls with inputs like these
# skip straight to (the section on host time explains):
#
# .. literalinclude:: ../../src/gpuperf/kernels/matmul.py
#    :start-at: if bias is None:
#    :end-before: __all__
#
# Which configuration does a call use? Tile sizes, group size, warps and
# pipeline stages (an :term:`autotune config`) were timed once per benchmarked
# shape on each GPU (the *tuning sweep*, below), and the winners are committed
# with the package. A call takes the winner of the nearest benchmarked shape,
# nearest in :math:`\log_2` of each dimension:
#
# .. literalinclude:: ../../src/gpuperf/kernels/_configs.py
#    :pyobject: matmul_config

from functools import partial

import torch
from gpuperf.kernels import configs
from gpuperf.kernels.matmul import matmul_config

device = "cuda" if can_measure() else "cpu"
half = partial(torch.randn, device=device, dtype=torch.float16)
print(f"this build ({device}): {matmul_config(half(100, 64), half(64, 80)).label()}")
print(f"what a call on the {hw.name} picks (bfloat16):")
for shape in [(4096, 4096, 4096), (3000, 5000, 1000), (16, 14336, 4096), (100, 80, 64)]:
    config = configs.matmul_config(page_gpu(), "bfloat16", *shape)
    print(f"  {format_x(shape):>15}: {config.label()}")

# %%
# Under Triton's :term:`interpreter` there is no timing to tune on, and one
# small tile keeps the CPU's work down; a GPU without a committed sweep gets a
# middle-sized default that fits any recent GPU's shared memory.
#
# Is it right?
# ------------
#
# Every path of the kernel against the float32 reference: one element, sizes
# off every tile edge, :math:`K` a multiple of ``BLOCK_K`` and not, transposed
# operands (views with swapped strides, read in place without a copy), an empty
# :math:`K`, and the bias with each activation. The tolerance grows with
# :math:`\sqrt{K}`, since the kernel and the reference add the same :math:`K`
# products in different orders. Without a GPU the kernel runs in Triton's
# interpreter, on small shapes, in both dtypes.

from gpuperf.kernels import matmul
from gpuperf.kernels.matmul import ACTIVATIONS
from gpuperf.reference import matmul_ref
from gpuperf.testing import assert_close

dtypes = [torch.float16, torch.bfloat16]
shapes = [(1, 1, 1), (17, 33, 65), (64, 96, 128), (70, 45, 100)]
if can_measure():
    shapes += [(1000, 1500, 700), (4096, 4096, 4096)]  # the tuned configs' paths
for dtype in dtypes:
    new = partial(torch.randn, device=device, dtype=dtype)
    for m, n, k in shapes:
        a, b = new(m, k), new(k, n)
        assert_close(f"matmul {m}x{n}x{k}", matmul_ref(a, b), matmul(a, b), k=k)
    a_t, b_t = new(45, 37).t(), new(29, 45).t()  # strides (1, 37) and (1, 45)
    assert_close("matmul transposed", matmul_ref(a_t, b_t), matmul(a_t, b_t), k=45)
    empty_a, empty_b, bias = new(5, 0), new(0, 7), new(7)
    assert torch.equal(matmul(empty_a, empty_b), empty_a.new_zeros(5, 7))
    out = matmul(empty_a, empty_b, bias=bias, activation="gelu")
    assert_close("matmul K = 0", matmul_ref(empty_a, empty_b, bias, "gelu"), out)
    a, b, bias = new(33, 70), new(70, 50), new(50)
    for act in ACTIVATIONS:
        out = matmul(a, b, bias=bias, activation=act)
        assert_close(f"matmul bias {act}", matmul_ref(a, b, bias, act), out, k=70)
print(f"matmul matches the reference on {device}: {dtypes}, {shapes}, transposed, K=0")

# %%
# One rounding instead of three shows in the error. Against the float64 chain,
# the fused kernel and the eager chain (``torch.matmul``, then ``+ bias``, then
# GELU, each rounding to float16):

from gpuperf.reference import matmul_epilogue_eager

torch.manual_seed(0)
a, b, bias = half(256, 512), half(512, 128), half(128)
product = a.double() @ b.double() + bias.double()
exact = torch.nn.functional.gelu(product, approximate="tanh")
outs = matmul(a, b, bias=bias, activation="gelu"), matmul_epilogue_eager(a, b, bias)
fused_err, eager_err = ((out.double() - exact).abs().mean() for out in outs)
print(f"mean absolute error: fused {fused_err:.2e}, eager chain {eager_err:.2e}")
print(f"the fused kernel's error is {fused_err / eager_err:.2f}x the eager chain's")

# %%
# Bad input is refused before anything runs, with a message that says what was
# expected:

try:
    matmul(a, half(500, 128))
except ValueError as err:
    print(f"ValueError: {err}")

# %%
# Program order: grouped against row-major
# ----------------------------------------
#
# Here is the order in which the kernel's first lines hand out tiles of
# :math:`C` (its :term:`program order`), copied into Python:
#
# .. literalinclude:: ../../src/gpuperf/pages/matmul.py
#    :pyobject: tile_of
#
# For a grid of 6 by 8 tiles, each number is the program id that computes the
# tile, row-major on the left, grouped with ``GROUP_M = 4`` on the right (the
# last group has only two rows):

row_major, grouped = page.launch_order(6, 8, 1), page.launch_order(6, 8, 4)
for pair in zip(row_major, grouped, strict=True):
    print(*(" ".join(f"{p:2d}" for p in row) for row in pair), sep="   |   ")

# %%
# A GPU runs as many programs at once as fit on its :term:`SMs <SM>`, a
# :term:`wave`. For the large tiles the tuned config uses, one program's
# pipeline takes most of an SM's shared memory, so a wave is one program per
# SM. Which tiles of :math:`A` (rows of tiles) and of :math:`B` (columns of
# tiles) does the first wave need? Each load of a tile that another program of
# the wave also loads can be served by L2. With the configs the benchmark below
# ran (``page.first_wave`` runs ``tile_of`` over the wave's program ids):

order = run_or_load(MATMUL_ORDER)
print(page.first_wave(order))

# %%
# Row-major order needs every column of :math:`B` tiles in each wave once a row
# of tiles is shorter than a wave, so from one wave to the next all of
# :math:`B` passes through L2 again; the larger :math:`N`, the fewer programs
# share each of those tiles. Grouped order keeps a wave on a compact block of
# ``GROUP_M`` rows. The benchmark runs the same kernel with the same tuned
# tiles, ``GROUP_M = 8`` against ``GROUP_M = 1``, in float16:

order.show()
print(page.order_verdicts(order))

# %%
# Where row-major order already holds several whole rows of tiles in one wave,
# both orders share the same tiles and tie. As :math:`N` grows, a wave holds
# fewer rows of row-major tiles and the gap opens.
#
# What the hardware counters say
# ------------------------------
#
# Nsight Compute (``ncu``) reads the GPU's performance counters while a kernel
# runs. Three of them tell this story: the L2 hit rate
# (``lts__t_sector_hit_rate.pct``: the share of L2 requests that found their
# data there), the bytes read from DRAM (``dram__bytes_read.sum``) and the
# kernel's duration (``gpu__time_duration.sum``). Each launch was profiled once
# in each order; the last column compares the DRAM read rate with the GPU's
# measured :term:`copy bandwidth`:

print(page.counters())

# %%
# "x minimum" is how many times, on average, each byte of :math:`A` and
# :math:`B` came from DRAM (the least possible is once). In grouped order most
# loads hit L2 and DRAM delivers far less than the copy bandwidth: the kernel is
# bound by the tensor cores, not by memory. The largest shape in row-major
# order is the other regime:

print(page.row_major_verdict())

# %%
# Each B tile that a wave needs is needed again by later waves; in row-major
# order at this size the tiles of :math:`B` a wave loads have left L2 before a
# later wave returns to them, so :math:`B` streams from DRAM over and over.
# Grouping is what lets the tile intensity computed at the top count at all on
# the large products: without it, the L2 turns into a pass-through and the
# loop falls back below the ridge.
#
# To read the counters yourself on a machine with an NVIDIA GPU and Nsight
# Compute, ``python scripts/ncu_matmul_order.py`` profiles each launch above and
# writes the record this page reads. By hand, for any script:
#
# .. code-block:: bash
#
#    METRICS=lts__t_sector_hit_rate.pct,dram__bytes_read.sum,gpu__time_duration.sum
#    ncu --clock-control none -k regex:_matmul_kernel --metrics $METRICS \
#        python my_script.py
#
# ``--clock-control none`` leaves the GPU's clocks as they are (ncu locks them
# to the base clock by default, which makes every kernel slower than it runs in
# practice), and ``-k`` picks the kernels to profile by name. ncu replays each
# kernel several times to read all the counters, and by default flushes the
# caches before each replay, so its duration is of one cold launch, not
# :term:`do_bench`'s median.
#
# Autotuning, visible
# -------------------
#
# Which tile is best depends on the shape: a large tile has the highest
# intensity, but a 256³ product has only a handful of 128 x 256 tiles to
# spread over the H100's |h100-sms| SMs, and a 16-row product would compute
# mostly padding. ``nox -s bench`` (``python -m gpuperf.bench``) times every
# candidate config at every benchmarked shape and dtype before it measures the
# matmul benchmarks (:term:`autotuning`, done once, ahead of time), checking
# each candidate's output against the reference first, and commits every trial
# under ``src/gpuperf/kernels/tuned/<gpu>/matmul.json``. Nothing is tuned when
# the docs build or when a program calls ``matmul``: both read that file.
#
# Candidates that cannot win, or cannot run, are pruned before timing, each
# rule with its reason:
#
# .. literalinclude:: ../../src/gpuperf/kernels/_configs.py
#    :pyobject: matmul_candidates
#
# What the sweep on each GPU tried and found:

print(page.sweep_tables())

# %%
# The whole sweep for one dtype on this page's GPU, each config's TFLOP/s as a
# percentage of the best config at that shape (blank: pruned, not timed;
# outlined: the winner):

page.sweep_figure("float16")

# %%
# How to read it. Down a column, the large products favour the large tiles, and
# the small tiles fall far behind there: their intensity is too low to keep the
# tensor cores fed. The small products go the other way: a 256³ product has
# only two 128 x 256 tiles for |h100-sms| SMs, so small tiles, many programs,
# win. The worst-to-best column of the table says how much a wrong choice costs
# at each shape. And where several configs lie within a few percent of the
# best (the last column of the table), the differences among them are about the
# run-to-run spread of one ``do_bench`` round: the sweep's choice among those is
# partly chance, which is harmless, since any of them would do.
#
# Fusing the epilogue
# -------------------
#
# ``act(A @ B + bias)`` written in eager PyTorch is three kernels: the matmul
# writes :math:`C`, the bias add reads :math:`C` and writes it again, GELU reads
# it and writes the output. Five passes over the :math:`M \times N` output
# where the fused kernel (:term:`kernel fusion`) makes one, the final write.
# At this GPU's measured copy bandwidth and bf16 ceiling:

m = n = k = 4096
c_bytes = m * n * 2  # one bfloat16 pass over C
extra = 4 * c_bytes  # four more passes than the fused kernel's one
extra_us = extra / (hw.copy_gbps * 1e9) * 1e6
product_us = matmul_flops(m, n, k) / (hw.tflops("bf16") * 1e12) * 1e6
print(f"C: {c_bytes / 2**20:.0f} MiB; 4 more passes at copy speed: {extra_us:.0f} us")
print(f"= {extra_us / product_us:.0%} of the product's {product_us:.0f} us at its peak")

# %%
# Three providers: our fused kernel, the eager chain (cuBLAS, then two
# elementwise kernels), and :term:`torch.compile` of that same eager code, which
# keeps the product on cuBLAS and generates one Triton kernel for bias and GELU
# together: three passes over :math:`C` (cuBLAS's write, then one read and one
# write) where the eager chain makes five and the fused kernel one.

epilogue = show(MATMUL_EPILOGUE)
print(page.epilogue_ratios(epilogue))

# %%
# Whether fusing pays against ``torch.compile`` comes down to a subtraction:
# the time the fusion saves (one read and one write of :math:`C`) against the
# time our main loop loses to cuBLAS's. The next section measures the second;
# we come back to the sum at its end.
#
# Baselines in one run
# --------------------
#
# The kernel against cuBLAS (``torch.matmul``) and against ``torch.compile`` in
# ``max-autotune`` mode with its matmul templates restricted to Triton, in
# float16 and bfloat16, on square products and the three products of a
# Llama-3-8B layer named in the catalog (the MLP up-projection and the fused QKV
# projection over 8192 tokens, and the up-projection at decode time, 16 tokens):

result = show(MATMUL)
# sphinx_gallery_thumbnail_number = 4

# %%
# Per dtype, from the records: the ceiling the percentages are taken of (named
# by its call and the shape that set it, measured at the start of this
# benchmark's run and kept in its record, not the one printed with the ridge
# points), the ratio to cuBLAS at the large squares, its geometric mean over the
# squares from 1024³ to 8192³ that the run measured (each line names them), how
# close the kernel comes to that ceiling and to the datasheet's dense peak, and
# last, cuBLAS's own rows read against the same ceiling.

print(page.against_cublas(result))

# %%
# A ceiling is cuBLAS timed at a few large squares, the fastest kept, and its
# record names the shape. cuBLAS's own row at that shape repeats the ceiling's
# call and shape later in the same run: the gap between the two is how far one
# measurement moves within a run. Its rows at the other squares are other
# products, and their gap to the ceiling is how cuBLAS's rate changes with the
# shape, not drift; at those squares the kernel's ratio to cuBLAS says more
# than its share of the ceiling.
#
# The ceilings of two runs are the same measurement, ``torch.matmul`` of random
# square matrices timed like every benchmark: the run whose ceilings were
# printed with the ridge points, and the matmul benchmark's own. Side by side,
# with the 20th and 80th percentiles of each median and the shape that set it:

print(page.ceilings_by_run(result))

# %%
# Where both runs' ceiling was set by the same shape, the last line is how far
# the same measurement moves from one run to the next, which is why a kernel is
# read against the ceiling of its own run. The datasheet gives
# float16 and bfloat16 the same dense tensor-core peak (its last column), yet
# cuBLAS's float16 product measured slower than its bfloat16 one: the lines
# under each table say in which runs, and whether the gap exceeds the spread of
# the two medians. The records time the call; they do not show why the two
# dtypes differ, so this page does not guess, and reads each dtype only against
# its own ceiling.

# %%
# Small products are launch-bound: the whole product is over in a few
# microseconds, and every provider spends most of it starting up and draining
# the GPU, as the smallest vector add in tutorial 01 did.

print(page.smallest_product(result))

# %%
# Against ``torch.compile``
# ~~~~~~~~~~~~~~~~~~~~~~~~~
#
# Both are Triton. :term:`Inductor`'s ``max-autotune`` generates its matmul from
# a template and, the first time it compiles a shape, times the configs on its
# own list that suit the shape, in the compiling process; ours chooses from its
# own candidate list, once, by the sweep above, and a call reads the winner from
# the committed file. Inductor's template walks K the same way and launches its
# programs in the same grouped order. Ours over ``torch.compile``, shape by
# shape:

print(page.against_compile(result))

# %%
# The two kernels are the same algorithm; where they differ, it is in the
# config each picked for the shape (tile sizes, stages, warps) and in the
# timing noise each tuner had to pick through. A tuning sweep and a benchmark
# are separate runs, and the same config's speed moves between them:

print(page.sweep_drift(result))

# %%
# Back to the epilogue. ``torch.compile`` of the eager code is cuBLAS's product
# followed by one generated kernel for bias and GELU; our fused kernel is our
# product with the epilogue in its registers. Each can be split into the plain
# product (the baseline record above, bfloat16) and what the epilogue adds on
# top of it (the epilogue record's time minus the product's):

print(page.epilogue_split(result, epilogue))

# %%
# The two records are separate runs, minutes apart, and the same kernel's time
# moves by several percent between runs (the sweep against the benchmark,
# above), so read the epilogue columns as estimates: a difference of a few
# percent of the product's time is within that noise. What does not depend on
# the noise is the bound: fusion can win back at most the epilogue's passes
# over :math:`C` (the start of the previous section computed what four of them
# cost against the product at its peak; ``torch.compile`` leaves two of them),
# so a fused kernel beats cuBLAS plus a separate epilogue only if its main loop
# is within that margin of cuBLAS's.
# Fusing is worth most where the product is fast and the output is large
# relative to the work, and against an unfused eager chain, which pays for four
# more passes and two more launches.
#
# Host time per call
# ------------------
#
# Everything above is GPU time. Python pays its own cost for every call (the
# :term:`host overhead`), and a 512³ product takes only microseconds on the
# GPU, so a wrapper that spends tens of microseconds in Python would make the
# GPU wait. The host-overhead benchmark times calls on the host with the GPU
# kept busy, so only the host's work counts: our wrapper, the same wrapper
# launching through Triton's ``kernel[grid](...)``, and the PyTorch op:

host = show(HOST_OVERHEAD)
print(page.host_time(host))

# %%
# ``kernel[grid](...)`` works out on every call which compiled binary the
# arguments need: Triton specializes a kernel on each pointer's 16-byte
# alignment and on each integer being 1, being divisible by 16, or needing 64
# bits, besides the constexprs. ``Launcher``
# (in ``src/gpuperf/kernels/launch.py``) computes exactly that key in one pass
# over the arguments, turning each tensor into its address on the way:
#
# .. literalinclude:: ../../src/gpuperf/kernels/launch.py
#    :pyobject: Launcher._key_and_args
#
# The first call with a new key goes through ``kernel[grid]``, which compiles
# (or finds the binary in Triton's cache) and launches; the launcher keeps the
# compiled kernel under that key, and later calls with the same key hand the
# addresses straight to its C launch function. Since the key holds everything
# Triton specializes on, a cached binary never runs on arguments Triton would
# have compiled differently.
#
# The wrapper goes one step further. Once a call's inputs have passed the
# checks and been planned (config, grid, strides, key), the launch with
# everything fixed but the tensors' addresses is kept as a ``Bound``: ``@op``
# keeps that plan under the key of the call, everything the checks and the
# planning read: for each tensor input (the bias, or its absence, included)
# its type, shape, strides, dtype, device and address modulo 16, which inputs
# share an address, then every other argument with its type:
#
# .. literalinclude:: ../../src/gpuperf/kernels/launch.py
#    :pyobject: layout_key
#
# ``matmul`` names its tensor inputs (``a``, ``b`` and the optional ``bias``)
# rather than taking them first, so ``@op`` writes this same key out for its
# own parameters, a bias of None keyed as None.
#
# A later call with the same key (same shapes, strides, dtypes, devices,
# alignment, and the same activation and config, each of the same type)
# allocates the output and launches from the plan, skipping the checks, the
# config lookup and the launcher's key.
# Anything new, including every bad input, takes the full path with its
# checks and error messages. The ``triton_jit`` column is the very same wrapper
# with both caches off, launching through ``kernel[grid]``: the difference is
# what they save.
#
# Using it in a model
# -------------------
#
# ``matmul`` is also registered as a PyTorch operator,
# ``torch.ops.gpuperf.matmul``, with ``torch.library.triton_op``: inside
# ``torch.compile`` the wrapper calls that op, so a model that uses the kernel
# compiles into one graph with no :term:`graph break` (``fullgraph=True`` would
# raise on one), and on a GPU Inductor sees the Triton kernel inside the op and
# schedules it with the rest of the graph. Here is a layer compiled whole;
# without a GPU the captured graph runs as it is (the ``eager`` backend, since
# Inductor would generate CPU code around an interpreted kernel):


def layer(x, w, bias):
    return matmul(torch.relu(x), w, bias=bias, activation="gelu")


x, w, bias = half(24, 64), half(64, 48), half(48)
backend = "inductor" if can_measure() else "eager"
compiled = torch.compile(layer, fullgraph=True, backend=backend)
expected = matmul_ref(torch.relu(x), w, bias, "gelu")
assert_close("compiled layer", expected, compiled(x, w, bias), k=64)
explained = torch._dynamo.explain(layer)(x, w, bias)
ops = page.graph_ops(explained.graphs[0])
print(f"{explained.graph_break_count} graph breaks; the graph calls: {', '.join(ops)}")
assert "torch.ops.gpuperf.matmul" in ops

# sphinx_gallery_start_ignore
import matplotlib.pyplot as plt

plt.show()  # run as a script, this shows every figure drawn above
# sphinx_gallery_end_ignore

# %%
# What to take away
# -----------------
#
# * A matmul is compute-bound only if each byte it loads is used many times: the
#   tile sets how many times from SRAM, the launch order how many times from L2,
#   and the whole product bounds both. Compute the tile's FLOPs per byte and
#   compare it with the GPU's ridge point before tuning anything.
# * Order the programs so that the ones running together share their tiles, and
#   read the L2 hit rate and DRAM bytes in Nsight Compute to check that they do.
# * Tune the configuration per shape, once, and keep the sweep as data, so that a
#   reader can see how much the choice mattered.
# * Fuse the elementwise epilogue into the tile while it is in registers: it
#   saves whole passes over the output, but against a baseline whose main loop
#   is faster, fusion alone does not close the gap.
# * Measure the host's cost per call as well as the GPU's: below a few tens of
#   microseconds of GPU work, the host sets the pace.
#
# The :ref:`roofline guide <sphx_glr_guides_02_roofline.py>` places every size of
# this kernel against the measured roofs, from launch-bound to compute-bound;
# see also the :ref:`optimization-strategy guide
# <sphx_glr_guides_03_optimization_strategy.py>`.
