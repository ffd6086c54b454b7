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
"""

# %%
# Arithmetic intensity of a tile
# ------------------------------
#
# :math:`C = AB` with :math:`A` of :math:`M \times K` and :math:`B` of
# :math:`K \times N` does :math:`2MNK` FLOPs (a multiply and an add per term). A
# kernel that computed each output element on its own would load a row of
# :math:`A` and a column of :math:`B` for it: two values, four bytes in float16,
# for every multiply-add, half a FLOP per byte. A data-center GPU's tensor cores
# do hundreds of FLOPs in the time its memory delivers one byte, so that
# kernel would wait on memory all the time.
#
# A tiled kernel gives each program a :math:`B_M \times B_N` tile of :math:`C`.
# It walks :math:`K` in steps of :math:`B_K`, each time loading a
# :math:`B_M \times B_K` tile of :math:`A` and a :math:`B_K \times B_N` tile of
# :math:`B` into shared memory (SRAM on the chip), and multiplies them:
# :math:`2 B_M B_N B_K` FLOPs for :math:`(B_M + B_N) B_K` elements loaded. Every
# element loaded is used :math:`B_N` (or :math:`B_M`) times from SRAM, so the
# FLOPs per byte grow with the tile, as :math:`B_M B_N / (B_M + B_N)` in float16:

from gpuperf.bench.metrics import matmul_bytes, matmul_flops
from gpuperf.pages.plotting import format_x


def tile_intensity(block_m: int, block_n: int, block_k: int, element_size: int = 2) -> float:
    """FLOPs per byte loaded by one K step of a BLOCK_M x BLOCK_N tile."""
    return 2 * block_m * block_n * block_k / ((block_m + block_n) * block_k * element_size)


print("tile (BK = 64)   bytes loaded per K step   FLOP/B")
for bm, bn in [(1, 1), (16, 16), (64, 64), (128, 128), (128, 256)]:
    loaded = (bm + bn) * 64 * 2
    print(f"{f'{bm} x {bn}':>14}   {loaded:>21,}   {tile_intensity(bm, bn, 64):6.1f}")
largest_tile = tile_intensity(128, 256, 64)

# %%
# The tile's intensity counts the bytes it loads from global memory, whether they
# come from DRAM or from the L2 cache in front of it. The whole product has an
# upper bound of its own: if every element of :math:`A`, :math:`B` and :math:`C`
# crossed the DRAM bus exactly once, :math:`2MNK / (2(MK + KN + MN))` FLOPs per
# byte. For large square products that bound is far above any tile's; for the
# skinny product of a model at decode time (16 tokens) it is tiny, whatever the
# kernel does:

print("shape (M×N×K)    whole-matrix FLOP/B")
for shape in [(1024,) * 3, (4096,) * 3, (8192,) * 3, (8192, 14336, 4096), (16, 14336, 4096)]:
    intensity = matmul_flops(*shape) / matmul_bytes(*shape, element_size=2)
    print(f"{format_x(shape):>15}  {intensity:19.1f}")

# %%
# Which side of the line a kernel falls on depends on the GPU's *ridge point*:
# its peak FLOP/s divided by its memory bandwidth. Below it, a kernel cannot
# keep the tensor cores fed; above it, memory can keep up. Here it is from the
# ceilings measured on the GPU these pages show (a large cuBLAS matmul and a
# 1 GiB copy, in the same run) and from the datasheet:

import json

import torch

from gpuperf.bench import records
from gpuperf.bench.hardware import DATASHEET
from gpuperf.pages.report import can_measure

device = "cuda" if can_measure() else "cpu"
# The GPU these pages describe: the one present when measuring live, else the reference GPU.
gpu = records.gpu_slug(torch.cuda.get_device_name()) if can_measure() else records.reference_gpu()
hardware_path = records.measurements_dir() / gpu / "hardware.json"
hw = json.loads(hardware_path.read_text()) if hardware_path.exists() else None
ridges = {}
if hw is None:
    print(f"MISSING: no measured ceilings for {gpu} (expected {hardware_path}); run `nox -s bench`.")
else:
    ceilings, sheet = hw["ceilings"], DATASHEET.get(hw["provenance"]["gpu"], {})
    copy_gbps = ceilings["copy_gbps"]["value"]
    print(f"{hw['provenance']['gpu']}, measured {hw['provenance']['date'][:10]}:")
    for key in ("fp16_tflops", "bf16_tflops"):
        tflops = ceilings[key]["value"]
        ridge = ridges[key] = tflops * 1e12 / (copy_gbps * 1e9)
        line = f"  {key[:4]}: {tflops:.0f} TFLOP/s / {copy_gbps / 1e3:.2f} TB/s = ridge at {ridge:.0f} FLOP/B"
        if key in sheet:
            sheet_ridge = sheet[key] * 1e12 / (sheet["copy_gbps"] * 1e9)
            line += (
                f" (datasheet: {sheet[key]:.0f} TFLOP/s / {sheet['copy_gbps'] / 1e3:.2f} TB/s"
                f" = {sheet_ridge:.0f} FLOP/B)"
            )
        print(line)
    below = largest_tile < min(ridges.values())
    print(
        f"The largest tile, 128 x 256, does {largest_tile:.0f} FLOP/B: "
        + (
            "below the ridge, so if all its loads came from DRAM even it would be memory-bound."
            if below
            else "above the ridge, so the tile alone makes the loop compute-bound."
        )
    )

# %%
# Tiling is what turns a memory-bound loop into a compute-bound one: a value
# loaded once into SRAM feeds a whole row or column of the tile's multiply-adds,
# which the tensor cores run straight out of SRAM and registers. The tile's size
# is bounded by the chip (the tiles of every pipeline stage must fit in shared
# memory, the float32 accumulators in registers), so the tile alone does not
# always clear the ridge. The rest comes from the L2 cache: the tile of
# :math:`A` one program loads is also needed by every other program in the same
# row of tiles of :math:`C` (:math:`N / B_N` of them), and when those programs run
# at the same time, all but the first find it in L2. How often that happens
# depends on the order the programs run in (below). These three levels, the
# tile in SRAM, its neighbours in L2 and the whole matrix in DRAM, are the
# roofline model that the roofline guide draws for every kernel on this site.
#
# The kernel
# ----------
#
# This is the kernel exactly as it lives in ``src/gpuperf/kernels/matmul.py``:
#
# .. literalinclude:: ../../src/gpuperf/kernels/matmul.py
#    :pyobject: _matmul_kernel
#
# **Grouped program order.** The grid is one-dimensional, one program per tile of
# :math:`C`; the first lines turn the program id into a tile's row and column.
# Plain row-major order would run every tile of the first row of :math:`C`, then
# the second, and so on. Grouped order walks ``GROUP_M`` rows of tiles column by
# column instead, so the programs running at the same time cover a compact block
# of :math:`C` and share its few rows of :math:`A` tiles and columns of
# :math:`B` tiles in L2 (the last group may have fewer rows, hence
# ``group_size_m``). The effect is measured below.
#
# **Wrapping instead of masking.** Row and column indices past the edge of the
# matrix wrap around (``% M``, ``% N``): every load stays in bounds and needs no
# mask, and the store's mask drops the rows and columns computed from wrapped
# indices. Along :math:`K` a wrap would be wrong (it would add real products to
# the sum), so there the loads are masked with zeros, which add nothing. The
# wrapper tells the kernel whether :math:`K` is a multiple of ``BLOCK_K`` as the
# constexpr ``EVEN_K``, so a loop that never needs the mask is compiled without
# it.
#
# **64-bit offsets.** ``row * stride_am`` passes :math:`2^{31}` once a matrix has
# over 2 G elements (4 GiB of float16, which these GPUs hold easily), so the
# offsets are computed in int64.
#
# **float32 accumulation.** ``acc`` is float32 whatever the input dtype:
# ``tl.dot(a, b, acc)`` multiplies float16 or bfloat16 tiles on the tensor cores
# and adds into float32. Summing thousands of products in float16 would lose
# most of the digits the inputs have.
#
# **Fused epilogue.** After the loop the tile of :math:`C` is in registers, still
# in float32. Adding a bias and applying an activation there costs a few
# instructions per element and no memory traffic; done afterwards by separate
# kernels it costs whole passes over :math:`C` in DRAM (counted below). ReLU and
# leaky ReLU are a ``maximum`` and a ``where``. GELU uses the tanh form, as
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
# ``matmul`` validates its inputs, picks a launch configuration, allocates
# :math:`C` and launches. Inputs like ones it has already checked skip straight
# to a stored launch plan (the section on host time explains):
#
# .. literalinclude:: ../../src/gpuperf/kernels/matmul.py
#    :pyobject: matmul
#
# ``_matmul_into`` computes the grid, passes the strides (any layout is read in
# place) and the constexprs, and handles :math:`K = 0`, where the loop runs zero
# times and only the epilogue runs:
#
# .. literalinclude:: ../../src/gpuperf/kernels/matmul.py
#    :pyobject: _matmul_into
#
# Which configuration does a call use? Tile sizes, group size, warps and
# pipeline stages were timed once per benchmarked shape on each GPU (the
# *tuning sweep*, below), and the winners are committed with the package. A call
# takes the winner of the nearest benchmarked shape, nearest in
# :math:`\log_2` of each dimension:
#
# .. literalinclude:: ../../src/gpuperf/kernels/_configs.py
#    :pyobject: matmul_config

from gpuperf.kernels import _configs
from gpuperf.kernels.matmul import matmul_config

a = torch.randn(100, 64, device=device, dtype=torch.float16)
b = torch.randn(64, 80, device=device, dtype=torch.float16)
print(f"this build ({device}): matmul_config(a, b) = {matmul_config(a, b).label()}")
print(f"what a call on {gpu} picks (bfloat16):")
for shape in [(4096, 4096, 4096), (3000, 5000, 1000), (16, 14336, 4096), (100, 80, 64)]:
    print(f"  {format_x(shape):>15}: {_configs.matmul_config(gpu, 'bfloat16', *shape).label()}")

# %%
# Under Triton's interpreter there is no timing to tune on, and one small tile
# keeps the CPU's work down; a GPU without a committed sweep gets a middle-sized
# default that fits any recent GPU's shared memory.
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
# interpreter, in float16 only: the interpreter's ``tl.dot`` gets bfloat16 wrong
# (it multiplies the raw bits), so bfloat16 is checked on a GPU.

from gpuperf.kernels import matmul
from gpuperf.kernels.matmul import ACTIVATIONS
from gpuperf.reference import matmul_ref
from gpuperf.testing import assert_close

dtypes = [torch.float16, torch.bfloat16] if can_measure() else [torch.float16]
shapes = [(1, 1, 1), (17, 33, 65), (64, 96, 128), (70, 45, 100)]
if can_measure():
    shapes += [(1000, 1500, 700), (4096, 4096, 4096)]  # the tuned configs' paths
for dtype in dtypes:
    for m, n, k in shapes:
        a = torch.randn(m, k, device=device, dtype=dtype)
        b = torch.randn(k, n, device=device, dtype=dtype)
        assert_close(f"matmul {m}x{n}x{k}", matmul_ref(a, b), matmul(a, b), k=k)

    a_t = torch.randn(45, 37, device=device, dtype=dtype).t()  # (37, 45), strides (1, 37)
    b_t = torch.randn(29, 45, device=device, dtype=dtype).t()  # (45, 29), strides (1, 45)
    assert_close("matmul transposed", matmul_ref(a_t, b_t), matmul(a_t, b_t), k=45)

    bias = torch.randn(7, device=device, dtype=dtype)
    empty_a = torch.empty(5, 0, device=device, dtype=dtype)
    empty_b = torch.empty(0, 7, device=device, dtype=dtype)
    assert torch.equal(matmul(empty_a, empty_b), torch.zeros(5, 7, device=device, dtype=dtype))
    out = matmul(empty_a, empty_b, bias=bias, activation="gelu")
    assert_close("matmul K = 0", matmul_ref(empty_a, empty_b, bias, "gelu"), out)

    a = torch.randn(33, 70, device=device, dtype=dtype)
    b = torch.randn(70, 50, device=device, dtype=dtype)
    bias = torch.randn(50, device=device, dtype=dtype)
    for activation in ACTIVATIONS:
        out = matmul(a, b, bias=bias, activation=activation)
        assert_close(f"matmul bias {activation}", matmul_ref(a, b, bias, activation), out, k=70)
names = ", ".join(str(d).removeprefix("torch.") for d in dtypes)
print(f"matmul matches the reference on {device} ({names}) for shapes {shapes},")
print(f"transposed operands (strides {a_t.stride()} and {b_t.stride()}), K = 0, bias + {ACTIVATIONS}")

# %%
# One rounding instead of three shows in the error. Against the float64 chain,
# the fused kernel and the eager chain (``torch.matmul``, then ``+ bias``, then
# GELU, each rounding to float16):

from gpuperf.reference import matmul_epilogue_eager

torch.manual_seed(0)
a = torch.randn(256, 512, device=device, dtype=torch.float16)
b = torch.randn(512, 128, device=device, dtype=torch.float16)
bias = torch.randn(128, device=device, dtype=torch.float16)
exact = torch.nn.functional.gelu(a.double() @ b.double() + bias.double(), approximate="tanh")
errors = {
    "fused (one rounding)": matmul(a, b, bias=bias, activation="gelu"),
    "eager chain (three)": matmul_epilogue_eager(a, b, bias),
}
for name, out in errors.items():
    errors[name] = (out.double() - exact).abs().mean().item()
    print(f"{name:>21}: mean absolute error {errors[name]:.2e}")
fused_err, eager_err = errors.values()
print(
    f"The fused kernel's error is {fused_err / eager_err:.2f} times the eager chain's"
    + (": rounding once is more accurate." if fused_err < eager_err else ".")
)

# %%
# Bad input is refused before anything runs, with a message that says what was
# expected:

try:
    matmul(a, torch.randn(500, 128, device=device, dtype=torch.float16))
except ValueError as err:
    print(f"ValueError: {err}")

# %%
# Program order: grouped against row-major
# ----------------------------------------
#
# Here is the order in which the kernel's first lines hand out tiles of
# :math:`C`, for a grid of 6 by 8 tiles: each number is the program id that
# computes the tile, row-major on the left, grouped with ``GROUP_M = 4`` on the
# right (the last group has only two rows). This is the kernel's own arithmetic,
# copied into Python:


def tile_of(pid: int, num_pid_m: int, num_pid_n: int, group_m: int) -> tuple[int, int]:
    """(row, column) of the tile that program ``pid`` computes, as in ``_matmul_kernel``."""
    num_pid_in_group = group_m * num_pid_n
    first_pid_m = pid // num_pid_in_group * group_m
    group_size_m = min(num_pid_m - first_pid_m, group_m)
    return first_pid_m + pid % num_pid_in_group % group_size_m, pid % num_pid_in_group // group_size_m


def launch_order(num_pid_m: int, num_pid_n: int, group_m: int) -> list[list[int]]:
    grid = [[0] * num_pid_n for _ in range(num_pid_m)]
    for pid in range(num_pid_m * num_pid_n):
        row, col = tile_of(pid, num_pid_m, num_pid_n, group_m)
        grid[row][col] = pid
    return grid


for row_major, grouped in zip(launch_order(6, 8, 1), launch_order(6, 8, 4), strict=True):
    print(" ".join(f"{p:2d}" for p in row_major), "   |   ", " ".join(f"{p:2d}" for p in grouped))

# %%
# A GPU runs as many programs at once as fit on its SMs, a *wave*. For the
# large tiles the tuned config uses, one program's pipeline takes most of an
# SM's shared memory, so a wave is one program per SM. Which tiles of :math:`A` (rows of
# tiles) and of :math:`B` (columns of tiles) does the first wave need? Each
# load of a tile that another program of the wave also loads can be served by
# L2. With the configs the benchmark below ran:

from gpuperf.bench.catalog import MATMUL_ORDER
from gpuperf.kernels import MatmulConfig
from gpuperf.pages import run_or_load

order = run_or_load(MATMUL_ORDER)
if order.record is not None:
    sms = order.record["provenance"]["sm_count"]
    grouped_rows = [r for r in order.record["rows"] if r["provider"] == "triton" and r["config"]]
    print(f"first wave on {sms} SMs: the rows and columns of tiles it needs")
    print("          shape  tiles (rows x cols)  programs  row-major: rows, cols  grouped: rows, cols")
    for r in grouped_rows:
        config, (m, n, _) = MatmulConfig(**r["config"]), r["x"]
        # Programs per SM as far as shared memory goes: the pipeline's A and B tiles, fp16.
        smem = (config.block_m + config.block_n) * config.block_k * 2 * config.num_stages
        wave_size = sms * max(1, _configs.SHARED_MEMORY_BYTES // smem)
        num_pid_m, num_pid_n = -(-m // config.block_m), -(-n // config.block_n)
        cells = []
        for group_m in (1, config.group_m):
            wave = [tile_of(p, num_pid_m, num_pid_n, group_m) for p in range(wave_size)]
            cells.append(f"{len({r for r, _ in wave}):>4}, {len({c for _, c in wave}):>3}")
        print(
            f"{format_x(r['x']):>15}  {f'{num_pid_m} x {num_pid_n}':>19}  {wave_size:>8}"
            f"  {cells[0]:>21}  {cells[1]:>19}"
        )

# %%
# Row-major order needs every column of :math:`B` tiles in each wave once a row
# of tiles is shorter than a wave, so from one wave to the next all of
# :math:`B` passes through L2 again; the larger :math:`N`, the fewer programs
# share each of those tiles. Grouped order keeps a wave on a compact block of
# ``GROUP_M`` rows. The benchmark runs the same kernel with the same tuned
# tiles, ``GROUP_M = 8`` against ``GROUP_M = 1``, in float16:

import matplotlib.pyplot as plt

print(order.table())
order.plot()
plt.show()

# %%
# How much grouping wins, shape by shape:

order_ratios = order.ratios()
for shape, ratio in order_ratios.items():
    verdict = "a tie (within 3%)" if abs(ratio - 1) < 0.03 else f"grouped {ratio:.2f}x as fast"
    print(f"{format_x(shape):>15}: {verdict}")

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
# in each order:

from gpuperf.bench.records import caption

ncu_path = records.measurements_dir() / gpu / "ncu" / "matmul_order.json"
if not ncu_path.exists():
    print(f"MISSING: no Nsight Compute counters for {gpu} (expected {ncu_path});")
    print("run `python scripts/ncu_matmul_order.py` on that GPU and commit what it writes.")
    ncu = None
else:
    ncu = json.loads(ncu_path.read_text())
    # Counters of one profiled launch each, as the tool line says (the first committed
    # counters' provenance named the benchmarks' timing method instead).
    method = "Nsight Compute counters, one profiled launch each"
    print(caption({**ncu["provenance"], "timing_method": method}))
    print(f"tool: {ncu['tool']}")
    print()
    header = ["shape", "order", "L2 hit", "DRAM read", "x minimum", "time", "DRAM GB/s", "% of copy"]
    print("{:>15}  {:>9}  {:>6}  {:>9}  {:>9}  {:>8}  {:>9}  {:>9}".format(*header))
    for row in ncu["rows"]:
        m, n, k = row["shape"]
        dram = row["dram__bytes_read.sum"]["value"]
        seconds = row["gpu__time_duration.sum"]["value"] * 1e-9
        minimum = (m * k + k * n) * 2  # A and B read once each
        gbps = dram / seconds / 1e9
        share = f"{100 * gbps / copy_gbps:.0f}%" if hw else "-"
        print(
            f"{format_x(row['shape']):>15}  {row['order']:>9}  "
            f"{row['lts__t_sector_hit_rate.pct']['value']:5.1f}%  {dram / 1e9:6.1f} GB  "
            f"{dram / minimum:8.1f}x  {seconds * 1e3:5.2f} ms  {gbps:9.0f}  {share:>9}"
        )

# %%
# "x minimum" is how many times, on average, each byte of :math:`A` and
# :math:`B` came from DRAM (the least possible is once). In grouped order most
# loads hit L2 and DRAM delivers far less than the copy bandwidth: the kernel is
# bound by the tensor cores, not by memory. The largest shape in row-major
# order is the other regime:

if ncu is not None and hw is not None:
    rows = {(tuple(r["shape"]), r["order"]): r for r in ncu["rows"]}
    largest = max(shape for shape, _ in rows)
    slow, fast = rows[(largest, "row-major")], rows[(largest, "grouped")]
    read = {o: r["dram__bytes_read.sum"]["value"] for o, r in (("row", slow), ("grouped", fast))}
    rate = read["row"] / (slow["gpu__time_duration.sum"]["value"] * 1e-9) / 1e9
    print(
        f"At {format_x(largest)}, row-major order reads {read['row'] / read['grouped']:.1f} times "
        f"as many bytes from DRAM as grouped order, at {100 * rate / copy_gbps:.0f}% of the copy bandwidth: "
        + (
            "it is memory-bound, the tensor cores waiting on DRAM."
            if rate > 0.8 * copy_gbps
            else "more traffic, but not yet at the memory system's limit."
        )
    )

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
#    ncu --clock-control none -k regex:_matmul_kernel \
#        --metrics lts__t_sector_hit_rate.pct,dram__bytes_read.sum,gpu__time_duration.sum \
#        python my_script.py
#
# ``--clock-control none`` leaves the GPU's clocks as they are (ncu locks them
# to the base clock by default, which makes every kernel slower than it runs in
# practice), and ``-k`` picks the kernels to profile by name. ncu replays each
# kernel several times to read all the counters, and by default flushes the
# caches before each replay, so its duration is of one cold launch, not
# ``do_bench``'s median.
#
# Autotuning, visible
# -------------------
#
# Which tile is best depends on the shape: a large tile has the highest
# intensity, but a 256³ product has only a handful of 128 x 256 tiles to
# spread over more than a hundred SMs, and a 16-row product would compute
# mostly padding. ``nox -s bench`` (``python -m gpuperf.bench``) times every
# candidate config at every benchmarked shape and dtype before it measures the
# matmul benchmarks, checking each candidate's output against the reference
# first, and commits every trial under
# ``src/gpuperf/kernels/tuned/<gpu>/matmul.json``. Nothing is tuned when the
# docs build or when a program calls ``matmul``: both read that file.
#
# Candidates that cannot win, or cannot run, are pruned before timing, each
# rule with its reason:
#
# .. literalinclude:: ../../src/gpuperf/kernels/_configs.py
#    :pyobject: matmul_candidates
#
# What the sweep on this page's GPU tried and found:

import math

from gpuperf.bench import tuning
from gpuperf.pages import sweeps

sweep = tuning.read_tuning(gpu)
if sweep is None:
    print(f"MISSING: no tuning sweep for {gpu}; run `nox -s bench` on that GPU and commit what it writes.")
else:
    print(f"{sweeps.sweep_caption(sweep)}; {len(sweep['candidates'])} candidate configs\n")
    print(sweeps.sweep_table(sweep))

# %%
# The whole sweep for one dtype, each config's TFLOP/s as a percentage of the
# best config at that shape (blank: pruned, not timed; outlined: the winner):

if sweep is not None:
    sweeps.plot_sweep(sweep, sweep["trials"][0]["dtype"])
    plt.show()

# %%
# How to read it. Down a column, the large products favour the large tiles, and
# the small tiles fall far behind there: their intensity is too low to keep the
# tensor cores fed. The small products go the other way: a 256³ product has
# only two 128 x 256 tiles for more than a hundred SMs, so small tiles, many
# programs, win. The worst-to-best column of the table says how much a wrong
# choice costs at each shape. And where several configs lie within a few
# percent of the best (the last column of the table), the differences among
# them are about the run-to-run spread of one ``do_bench`` round: the sweep's
# choice among those is partly chance, which is harmless, since any of them
# would do.
#
# Fusing the epilogue
# -------------------
#
# ``act(A @ B + bias)`` written in eager PyTorch is three kernels: the matmul
# writes :math:`C`, the bias add reads :math:`C` and writes it again, GELU reads
# it and writes the output. Five passes over the :math:`M \times N` output
# where the fused kernel makes one, the final write:

from gpuperf.bench.catalog import MATMUL_EPILOGUE

m = n = k = 4096
c_bytes = m * n * 2  # one bfloat16 pass over C
extra = 5 * c_bytes - c_bytes
print(
    f"{format_x((m, n, k))} bf16: C is {c_bytes / 2**20:.0f} MiB; the unfused epilogue moves 5 x that, "
    f"the fused one 1 x: {extra / 2**20:.0f} MiB more"
)
if hw is not None:
    extra_us = extra / (copy_gbps * 1e9) * 1e6
    product_us = matmul_flops(m, n, k) / (ceilings["bf16_tflops"]["value"] * 1e12) * 1e6
    print(
        f"  at the measured copy bandwidth that is {extra_us:.0f} us, against {product_us:.0f} us for the "
        f"product at the measured bf16 ceiling: {100 * extra_us / product_us:.0f}% on top"
    )

# %%
# Three providers: our fused kernel, the eager chain (cuBLAS, then two
# elementwise kernels), and ``torch.compile`` of that same eager code, which
# keeps the product on cuBLAS and generates one Triton kernel for bias and GELU
# together: one extra pass over :math:`C` instead of two.

epilogue = run_or_load(MATMUL_EPILOGUE)
print(epilogue.table())
epilogue.plot()
plt.show()

# %%
# The ratios, from the record:

fused_vs_eager = epilogue.ratios()
compiled_tflops = epilogue.values("compile")
fused_vs_compile = {x: v / compiled_tflops[x] for x, v in epilogue.values().items() if x in compiled_tflops}
for shape in fused_vs_eager:
    print(
        f"{format_x(shape):>15}: fused / eager {fused_vs_eager[shape]:.2f}x, "
        f"fused / torch.compile {fused_vs_compile[shape]:.2f}x"
    )
if fused_vs_compile:
    wins = sum(r > 1 for r in fused_vs_compile.values())
    print(
        f"The fused kernel beats the eager chain at {sum(r > 1 for r in fused_vs_eager.values())} of "
        f"{len(fused_vs_eager)} shapes and torch.compile at {wins} of {len(fused_vs_compile)}."
        + (
            " Against torch.compile, what fusing saves must make up for running the product on our main "
            "loop instead of cuBLAS's, and here it does not everywhere."
            if wins < len(fused_vs_compile)
            else " What fusing saves makes up for our main loop's distance from cuBLAS's."
        )
    )

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

from gpuperf.bench.catalog import MATMUL

result = run_or_load(MATMUL)
print(result.table())
result.plot()
# sphinx_gallery_thumbnail_number = 4
plt.show()

# %%
# Per dtype, from the record: the ratio to cuBLAS at the large squares, its
# geometric mean over the squares from 1024³ to 8192³, and how close the kernel
# comes to the measured ceiling (cuBLAS at 8192³, measured at the start of the
# run) and to the datasheet's dense peak.

if result.record is not None:
    sheet = DATASHEET.get(result.record["provenance"]["gpu"], {})
    squares = [(s, s, s) for s in (1024, 2048, 4096, 8192)]
    for dtype, key in (("float16", "fp16_tflops"), ("bfloat16", "bf16_tflops")):
        ratios, values = result.ratios(dtype=dtype), result.values(dtype=dtype)
        fractions = result.fraction_of_ceiling(dtype=dtype)
        cublas_fractions = result.fraction_of_ceiling("cublas", dtype=dtype)
        present = [s for s in squares if s in ratios]
        geomean = math.exp(sum(math.log(ratios[s]) for s in present) / len(present)) if present else math.nan
        print(f"{dtype}:")
        for s in [(4096,) * 3, (8192,) * 3]:
            if s not in ratios:
                continue
            line = (
                f"  {format_x(s)}: {ratios[s]:.2f}x cuBLAS's speed, {values[s]:.0f} TFLOP/s = "
                f"{100 * fractions[s]:.0f}% of the measured ceiling"
            )
            if key in sheet:
                line += f", {100 * values[s] / sheet[key]:.0f}% of the datasheet's {sheet[key]:.0f}"
            print(line)
        print(f"  geometric mean of the ratio to cuBLAS over 1024³-8192³: {geomean:.2f}x")
        if (8192,) * 3 in cublas_fractions:
            share = 100 * cublas_fractions[(8192,) * 3]
            print(
                f"  (cuBLAS itself reached {share:.0f}% of that ceiling at 8192³ in this benchmark: "
                "the same call, measured later in the run)"
            )

# %%
# Small products are launch-bound: the whole product is over in a few
# microseconds, and every provider spends most of it starting up and draining
# the GPU, as the smallest vector add in tutorial 01 did.

if result.record is not None:
    small = min(result.values(dtype="float16"), key=lambda s: matmul_flops(*s))
    for provider in ("triton", "cublas", "compile"):
        row = next(
            r
            for r in result.record["rows"]
            if tuple(r["x"]) == small and r["provider"] == provider and r["axes"]["dtype"] == "float16"
        )
        print(f"{format_x(small)} float16, {provider:>8}: {row['ms'] * 1e3:.1f} us per call")

# %%
# Against ``torch.compile``
# ~~~~~~~~~~~~~~~~~~~~~~~~~
#
# Both are Triton. Inductor's ``max-autotune`` generates its matmul from a
# template and, the first time it compiles a shape, times the configs on its
# own list that suit the shape, in the compiling process; ours chooses from its
# own candidate list, once, by the sweep above, and a call reads the winner from
# the committed file. Inductor's template walks K the same way and launches its
# programs in the same grouped order. Ours over ``torch.compile``, shape by
# shape:

if result.record is not None:
    print(f"{'shape':>15}  {'float16':>8}  {'bfloat16':>8}")
    for shape in result.values(dtype="float16"):
        cells = []
        for dtype in ("float16", "bfloat16"):
            ours, theirs = result.values(dtype=dtype), result.values("compile", dtype=dtype)
            cells.append(f"{ours[shape] / theirs[shape]:.2f}x" if shape in ours and shape in theirs else "-")
        print(f"{format_x(shape):>15}  {cells[0]:>8}  {cells[1]:>8}")

# %%
# The two kernels are the same algorithm; where they differ, it is in the config
# each picked for the shape (tile sizes, stages, warps) and in the timing noise each tuner had to pick
# through. A tuning sweep and a benchmark are separate runs, and the same
# config's speed moves between them:

if result.record is not None and sweep is not None:
    best = {(e["dtype"], tuple(e["shape"])): e for e in sweep["best"]}
    drift = []
    for r in result.record["rows"]:
        entry = best.get((r["axes"]["dtype"], tuple(r["x"])))
        if r["provider"] == "triton" and r["status"] == "ok" and entry and r["config"] == entry["config"]:
            drift.append((r["value"] / entry["tflops"], r["axes"]["dtype"], tuple(r["x"])))
    if drift:
        lo, hi = min(drift), max(drift)
        print(
            f"the winner's TFLOP/s in the benchmark run / in the sweep, same config: "
            f"{lo[0]:.2f}x ({lo[1]} {format_x(lo[2])}) to {hi[0]:.2f}x ({hi[1]} {format_x(hi[2])})"
        )

# %%
# Back to the epilogue. ``torch.compile`` of the eager code is cuBLAS's product
# followed by one generated kernel for bias and GELU; our fused kernel is our
# product with the epilogue in its registers. Each can be split into the plain
# product (the baseline record above, bfloat16) and what the epilogue adds on
# top of it (the epilogue record's time minus the product's):

if result.record is not None and epilogue.record is not None:
    plain_ms = {
        (tuple(r["x"]), r["provider"]): r["ms"]
        for r in result.record["rows"]
        if r["axes"]["dtype"] == "bfloat16" and r["status"] == "ok"
    }
    fused_ms = {(tuple(r["x"]), r["provider"]): r["ms"] for r in epilogue.record["rows"] if r["ms"]}
    print("                   product (us)       epilogue adds (us)")
    print(f"{'shape':>15}    ours  cuBLAS    ours  torch.compile   fused / torch.compile")
    gaps = {}
    for shape, ratio in fused_vs_compile.items():
        if not all((shape, p) in plain_ms for p in ("triton", "cublas")):
            continue
        ours, lib = plain_ms[(shape, "triton")] * 1e3, plain_ms[(shape, "cublas")] * 1e3
        ours_epi, lib_epi = fused_ms[(shape, "triton")] * 1e3 - ours, fused_ms[(shape, "compile")] * 1e3 - lib
        gaps[shape] = (ours - lib, ours_epi - lib_epi, lib)
        print(
            f"{format_x(shape):>15}  {ours:6.0f}  {lib:6.0f}  {ours_epi:6.0f}  {lib_epi:13.0f}"
            f"  {ratio:20.2f}x"
        )
    if gaps:
        # Differences under 2% of the product's time are within the noise between two runs.
        slower = sum(product > 0.02 * lib for product, _, lib in gaps.values())
        less = [format_x(s) for s, (_, epi, lib) in gaps.items() if epi < -0.02 * lib]
        more = [format_x(s) for s, (_, epi, lib) in gaps.items() if epi > 0.02 * lib]
        print(
            f"Our product is slower than cuBLAS's by over 2% at {slower} of {len(gaps)} shapes. "
            f"Our fused epilogue adds less than torch.compile's separate one at {len(less)} of "
            f"{len(gaps)} shapes, more at {len(more)}"
            + (f" ({', '.join(more)})" if more else "")
            + ", and about the same (within 2% of the product's time) at the rest."
        )

# %%
# The two records are separate runs, minutes apart, and the same kernel's time
# moves by several percent between runs (the sweep against the benchmark,
# above), so read the epilogue columns as estimates: a difference of a few
# percent of the product's time is within that noise. What does not depend on
# the noise is the bound: fusion can win back at most the epilogue's passes
# over :math:`C`, a small fraction of a large product's time (computed at the
# start of the previous section), so a fused kernel beats cuBLAS plus a
# separate epilogue only if its main loop is within that margin of cuBLAS's.
# Fusing is worth most where the product is fast and the output is large
# relative to the work, and against an unfused eager chain, which pays for two
# passes and two more launches.
#
# Host time per call
# ------------------
#
# Everything above is GPU time. Python pays its own cost for every call, and a
# 512³ product takes only microseconds on the GPU, so a wrapper that spends tens
# of microseconds in Python would make the GPU wait. The host-overhead benchmark
# times calls on the host with the GPU kept busy, so only the host's work counts:
# our wrapper, the same wrapper launching through Triton's ``kernel[grid](...)``,
# and the PyTorch op:

from gpuperf.bench.catalog import HOST_OVERHEAD

host = run_or_load(HOST_OVERHEAD)
print(host.table())
host.plot()
plt.show()

# %%
# For the matmul, from the record:

host_us = {p: host.values(p).get("matmul") for p in ("triton", "triton_jit", "torch")}
if all(v is not None for v in host_us.values()):
    print(
        f"matmul: {host_us['triton']:.1f} us per call through the launch cache, "
        f"{host_us['triton_jit']:.1f} us through kernel[grid] "
        f"({host_us['triton_jit'] / host_us['triton']:.1f}x as long), torch.matmul {host_us['torch']:.1f} us"
    )

# %%
# ``kernel[grid](...)`` works out on every call which compiled binary the
# arguments need: Triton specializes a kernel on each pointer's 16-byte
# alignment and on each integer being 1, being divisible by 16, or needing 64
# bits, besides the constexprs. ``Launcher``
# (in ``src/gpuperf/kernels/_launch.py``) computes exactly that key in one pass
# over the arguments, turning each tensor into its address on the way:
#
# .. literalinclude:: ../../src/gpuperf/kernels/_launch.py
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
# everything fixed but the tensors' addresses is kept as a ``Bound`` in the
# op's ``Plans``, keyed by what the checks and the planning read:
#
# .. literalinclude:: ../../src/gpuperf/kernels/matmul.py
#    :pyobject: _plan_key
#
# A later call whose inputs match that key (same shapes, strides, dtypes,
# devices, alignment, activation and config) allocates the output and
# launches from the plan, skipping the checks, the config lookup and the key.
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
# compiles into one graph with no break (``fullgraph=True`` would raise on one),
# and on a GPU Inductor sees the Triton kernel inside the op and schedules it
# with the rest of the graph. Here is a layer compiled whole; without a GPU the
# captured graph runs as it is (the ``eager`` backend, since Inductor would
# generate CPU code around an interpreted kernel):

graphs = []


def show_graph(gm, example_inputs):
    """A torch.compile backend that keeps the captured graph and runs it as it is."""
    graphs.append(gm)
    return gm.forward


def layer(x, w, bias):
    return matmul(torch.relu(x), w, bias=bias, activation="gelu")


x = torch.randn(24, 64, device=device, dtype=torch.float16)
w = torch.randn(64, 48, device=device, dtype=torch.float16)
bias = torch.randn(48, device=device, dtype=torch.float16)

torch._dynamo.reset()
compiled = torch.compile(layer, fullgraph=True, backend="inductor" if can_measure() else "eager")
assert_close("compiled layer", matmul_ref(torch.relu(x), w, bias, "gelu"), compiled(x, w, bias), k=64)
torch.compile(layer, fullgraph=True, backend=show_graph)(x, w, bias)


def op_name(target) -> str:
    name = str(target).removesuffix(".default")
    return f"torch.ops.{name}" if name.startswith("gpuperf.") else f"{target.__module__}.{target.__name__}"


ops = [op_name(node.target) for node in graphs[0].graph.nodes if node.op == "call_function"]
print(f"compiled without a graph break; the graph calls: {', '.join(ops)}")
assert "torch.ops.gpuperf.matmul" in ops

# %%
# What to take away
# -----------------
#
# A matmul is compute-bound only if each byte it loads is used many times: the
# tile sets how many times from SRAM, the launch order how many times from L2,
# and the whole product bounds both. Compute the tile's FLOPs per byte and
# compare it with the GPU's ridge point before tuning anything. Order the
# programs so that the ones running together share their tiles, and read the
# L2 hit rate and DRAM bytes in Nsight Compute to check that they do. Tune the
# configuration per shape, once, and keep the sweep as data, so that a reader
# can see how much the choice mattered. Fuse the elementwise epilogue into the
# tile while it is in registers: it saves whole passes over the output, but
# against a baseline whose main loop is faster, fusion alone does not close the
# gap. And measure the host's cost per call as well as the GPU's, because below
# a few tens of microseconds of GPU work it is the host that sets the pace.
#
# The :ref:`roofline guide <sphx_glr_guides_02_roofline.py>` places every size of
# this kernel against the measured roofs, from launch-bound to compute-bound.
#
# See also the :ref:`optimization-strategy guide <sphx_glr_guides_03_optimization_strategy.py>`.
