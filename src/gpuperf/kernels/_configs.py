"""Launch parameters, kept as data, each rule with its reason.

The fixed rules of the memory-bound kernels, and the matmul's candidate configs
with the pruning rules of :func:`matmul_candidates`. The matmul is tuned once per
benchmarked shape by ``nox -s bench``; the sweep is committed under
``kernels/tuned/<gpu>/matmul.json`` and :func:`matmul_config` reads it. Under
Triton's interpreter one small config is used, since timing configs needs a GPU.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

from gpuperf.kernels._validation import check_launch_config

# --- vector add --------------------------------------------------------------------

#: Elements per program and warps per program for ``vector_add``: 1024 fp32
#: elements over 8 warps gives each thread one 16-byte load per input, and at
#: 2**20 elements all 1024 programs are resident at once. On an H100 and an H200,
#: block sizes 512 to 4096 with 2 to 8 warps measured within the run-to-run spread
#: of each other from 2**22 elements up (scripts/explore_configs.py); at 2**20 this
#: one tied x + y in both H100 runs; 8192 and up lose 5-15% below 2**24 elements.
VECTOR_ADD_BLOCK_SIZE = 1024
VECTOR_ADD_NUM_WARPS = 8

# --- softmax -----------------------------------------------------------------------
# Chosen from a sweep of every (rows per program, warps) and (chunk, warps) on an
# H100 (scripts/explore_configs.py; its output is committed as
# src/gpuperf/measurements/nvidia-h100-80gb-hbm3/explore_configs.log): the best few
# configs of each row length lie within 1-2% of each other, and these rules land
# among them. Fixed rules rather than the autotuner keep every run on the same
# code and cost no tuning time on the first call (an autotuned version picked
# configs that differed from run to run, one of them 3x slower than the best).

#: Rows longer than this take the online (two-pass, chunked) kernel: a longer
#: fp32 row no longer fits in one program's registers without spilling.
SOFTMAX_MAX_FUSED_COLS = 32768

#: Elements per program the single-pass kernel aims for on short rows: 16 KB of
#: fp32, several rows per program, so no program is mostly launch overhead.
SOFTMAX_TILE_ELEMENTS = 4096

#: Most elements each thread holds in the single-pass kernel: 64 fp32 registers
#: of data leave room for addresses and the reductions without spilling.
SOFTMAX_ELEMENTS_PER_THREAD = 64

#: Chunk length and warps of the online kernel: 32 elements per thread per chunk.
#: On the H100, 16384-column chunks beat 8192 by 3-20% and 1024-4096 by more.
SOFTMAX_ONLINE_BLOCK_N = 16384
SOFTMAX_ONLINE_NUM_WARPS = 16


def softmax_fused_launch(block_n: int) -> tuple[int, int]:
    """``(BLOCK_M, num_warps)`` for the single-pass kernel on rows padded to ``block_n``."""
    # Short rows: up to 8 per program, to reach SOFTMAX_TILE_ELEMENTS per program.
    block_m = min(8, max(1, SOFTMAX_TILE_ELEMENTS // block_n))
    # 8 warps, more when a thread would hold over 64 elements.
    num_warps = max(8, block_m * block_n // (32 * SOFTMAX_ELEMENTS_PER_THREAD))
    return block_m, num_warps


# --- matmul ------------------------------------------------------------------------


@dataclass(frozen=True)
class MatmulConfig:
    """One launch configuration of :func:`gpuperf.kernels.matmul`.

    Attributes:
        block_m, block_n, block_k: the tile each program computes (BLOCK_M x BLOCK_N
            of C) and the depth of each step along K; powers of two, at least 16.
        group_m: rows of tiles per group in the grouped launch order (1: row-major).
        num_warps: warps per program (4 or 8: one or two Hopper warpgroups).
        num_stages: depth of the software pipeline (tiles of A and B in flight).
    """

    block_m: int
    block_n: int
    block_k: int
    group_m: int = 8
    num_warps: int = 8
    num_stages: int = 3

    def __post_init__(self):
        check_launch_config(self, ("block_m", "block_n", "block_k"), ("group_m", "num_warps", "num_stages"))

    def as_dict(self) -> dict:
        return asdict(self)

    def label(self) -> str:
        """Short form for tables: ``'128x256x64 g8 w8 s3'``."""
        return (
            f"{self.block_m}x{self.block_n}x{self.block_k} g{self.group_m} "
            f"w{self.num_warps} s{self.num_stages}"
        )


#: The candidates ``nox -s bench`` times at every benchmarked shape (the sweep
#: is committed under kernels/tuned/<gpu>/matmul.json). Large tiles for large
#: products: a 128x256 tile does 2*128*256*64 FLOPs per 48 KB of fp16 loaded
#: per K step, 85 FLOP/B; smaller tiles for small or skinny
#: products, where a large tile leaves SMs idle or computes padding. 8 warps
#: give two warpgroups to share a 128-row tile on Hopper's wgmma.
MATMUL_CONFIGS: tuple[MatmulConfig, ...] = (
    MatmulConfig(128, 256, 64, num_warps=8, num_stages=3),
    MatmulConfig(128, 256, 64, num_warps=8, num_stages=4),
    MatmulConfig(256, 128, 64, num_warps=8, num_stages=3),
    MatmulConfig(256, 128, 64, num_warps=8, num_stages=4),
    MatmulConfig(128, 128, 64, num_warps=8, num_stages=4),
    MatmulConfig(128, 128, 64, num_warps=4, num_stages=4),
    MatmulConfig(128, 128, 128, num_warps=8, num_stages=3),
    MatmulConfig(128, 64, 64, num_warps=4, num_stages=4),
    MatmulConfig(64, 128, 64, num_warps=4, num_stages=4),
    MatmulConfig(64, 256, 64, num_warps=4, num_stages=4),
    MatmulConfig(64, 64, 64, num_warps=4, num_stages=4),
    MatmulConfig(64, 64, 128, num_warps=4, num_stages=3),
    MatmulConfig(32, 32, 64, num_warps=4, num_stages=4),
    MatmulConfig(32, 64, 64, num_warps=4, num_stages=4),
    MatmulConfig(32, 64, 128, num_warps=4, num_stages=4),
    MatmulConfig(16, 64, 128, num_warps=4, num_stages=4),
    MatmulConfig(16, 128, 128, num_warps=4, num_stages=4),
    MatmulConfig(16, 256, 64, num_warps=4, num_stages=4),
)

#: The config for a GPU without a committed sweep: a middle-sized tile whose
#: pipeline fits the shared memory of any GPU since the A100 (128 KB). On the
#: H100 it ran at 80-85% of the best config at 4096^3 and 8192^3 (first sweep).
MATMUL_DEFAULT = MatmulConfig(128, 128, 64, num_warps=8, num_stages=4)

#: Under Triton's interpreter: one small tile, so the CPU runs few, cheap programs.
MATMUL_INTERPRETER = MatmulConfig(32, 32, 32, group_m=4, num_warps=4, num_stages=1)

#: Shared memory one program may use on Hopper (227 KB; the A100 has 163 KB).
SHARED_MEMORY_BYTES = 227 * 1024


def matmul_candidates(m: int, n: int, k: int, element_size: int = 2) -> list[MatmulConfig]:
    """The configs of :data:`MATMUL_CONFIGS` worth timing for an ``(M, K) @ (K, N)`` product."""
    kept = []
    for c in MATMUL_CONFIGS:
        # A tile over twice the matrix computes mostly padding.
        if c.block_m > 2 * max(16, m) or c.block_n > 2 * max(16, n) or c.block_k > 2 * max(16, k):
            continue
        # The pipeline's buffers must fit in shared memory, or the kernel will not launch.
        if (c.block_m + c.block_n) * c.block_k * element_size * c.num_stages > SHARED_MEMORY_BYTES:
            continue
        # Over 128 fp32 accumulators per thread spill to local memory.
        if c.block_m * c.block_n // (32 * c.num_warps) > 128:
            continue
        kept.append(c)
    return kept


@functools.cache
def _tuned_table(gpu_slug: str) -> dict:
    """``{dtype name: [((M, N, K), MatmulConfig), ...]}`` from the committed sweep of one GPU."""
    path = TUNED_DIR / gpu_slug / "matmul.json"
    if not path.exists():
        return {}
    table: dict[str, list] = {}
    for entry in json.loads(path.read_text())["best"]:
        table.setdefault(entry["dtype"], []).append((tuple(entry["shape"]), MatmulConfig(**entry["config"])))
    return table


#: Where the committed sweeps live: kernels/tuned/<gpu folder>/matmul.json.
TUNED_DIR = Path(__file__).resolve().parent / "tuned"


def matmul_config(gpu_slug: str | None, dtype_name: str, m: int, n: int, k: int) -> MatmulConfig:
    """The tuned config for the nearest benchmarked shape on this GPU and dtype.

    Nearest means the smallest sum of ``|log2(size / tuned size)|`` over M, N and K.
    Falls back to :data:`MATMUL_DEFAULT` for a GPU without a committed sweep, and
    to :data:`MATMUL_INTERPRETER` when ``gpu_slug`` is None (the interpreter).
    """
    if gpu_slug is None:
        return MATMUL_INTERPRETER
    entries = _tuned_table(gpu_slug).get(dtype_name)
    if not entries:
        return MATMUL_DEFAULT

    def distance(shape):
        return sum(abs(math.log2(max(a, 1) / b)) for a, b in zip((m, n, k), shape, strict=True))

    return min(entries, key=lambda e: distance(e[0]))[1]
