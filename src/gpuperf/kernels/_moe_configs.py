"""Launch parameters of the Mixture-of-Experts kernels, kept as data: the grouped matmul
(:mod:`gpuperf.kernels.grouped_matmul`) and the block-scaled FP8 matmul
(:mod:`gpuperf.kernels.matmul_fp8_blockwise`).

Each kernel has a default for a GPU, a small config for Triton's interpreter, and a short
list of candidates for a tuning sweep on the GPU, each pruned by the rules of
:func:`moe_candidates` (the pipeline's buffers must fit in shared memory; no more fp32
accumulators per thread than fit in registers). The configs are
:class:`~gpuperf.kernels._configs.MatmulConfig`: a tile ``block_m x block_n``, a step
``block_k`` along K, ``group_m`` rows of tiles per group of the tile order, warps and
pipeline stages.

Apart from the other config modules so that a change here marks only these kernels'
measurements stale.
"""

from __future__ import annotations

from gpuperf.kernels._configs import SHARED_MEMORY_BYTES, MatmulConfig
from gpuperf.kernels._persistent_configs import PersistentConfig
from gpuperf.kernels.gluon.matmul_fp8 import GluonFP8Config

# --- grouped matmul (bf16 / fp16) -------------------------------------------------------

#: The grouped matmul's config on a GPU until a sweep has chosen one: the tile of the dense
#: matmul's default (:data:`~gpuperf.kernels._configs.MATMUL_DEFAULT`), whose pipeline fits
#: the shared memory of any GPU since the A100. Not yet measured on the grouped kernel.
GROUPED_MATMUL_DEFAULT = MatmulConfig(128, 128, 64, group_m=8, num_warps=8, num_stages=4)

#: Under Triton's interpreter: a small tile, so that the test shapes cross tile edges and
#: each program takes several tiles, and the CPU runs few, cheap programs.
GROUPED_MATMUL_INTERPRETER = MatmulConfig(16, 32, 32, group_m=2, num_warps=4, num_stages=1)

#: Candidates of a sweep. Prefill gives each expert hundreds of rows (128x128 and larger
#: tiles); decode gives it a few (64-row tiles, the smallest a Hopper warpgroup's wgmma
#: takes, waste less of each tile on rows past the group's end).
GROUPED_MATMUL_CANDIDATES: tuple[MatmulConfig, ...] = (
    MatmulConfig(128, 256, 64, num_warps=8, num_stages=3),
    MatmulConfig(256, 128, 64, num_warps=8, num_stages=3),
    MatmulConfig(128, 128, 64, num_warps=8, num_stages=4),
    MatmulConfig(128, 128, 64, num_warps=4, num_stages=4),
    MatmulConfig(128, 128, 128, num_warps=8, num_stages=3),
    MatmulConfig(128, 64, 64, num_warps=4, num_stages=4),
    MatmulConfig(64, 128, 64, num_warps=4, num_stages=4),
    MatmulConfig(64, 256, 64, num_warps=8, num_stages=4),
    MatmulConfig(64, 64, 64, num_warps=4, num_stages=4),
)

#: The grouped matmul's TMA kernel on Hopper (:class:`~gpuperf.kernels.PersistentConfig`,
#: ``tma=True``): the best of the TMA sweep on the H100 (scripts/moe_gpu_check.py, torch
#: 2.11, Triton 3.6.0): 128 x 256 x 64, 8 warps, 4 stages, at 634, 603, 504, 442, 319 and
#: 329 TFLOP/s on the prefill up and down projections of Mixtral-8x7B, Qwen3-30B-A3B and
#: DeepSeek-V3 at 4096 tokens; 3 stages came second (597, 624, 450, 412, 343, 328), 2 %
#: slower in their geometric mean; every other tile was slower at five of the six.
GROUPED_MATMUL_TMA_DEFAULT = PersistentConfig(128, 256, 64, group_m=8, num_warps=8, num_stages=4)

#: The TMA kernel at decode, where the experts average at most
#: :data:`GROUPED_DECODE_ROWS_PER_EXPERT` rows: a 64-row tile (one warpgroup's wgmma), 128
#: columns and 128 deep, 3 stages. With a row or two per expert the product only streams
#: the weights, and the prefill tile's 256 columns leave SMs idle: Mixtral-8x7B's down
#: projection at 1 token (2 experts, N = 4096) has 32 such tiles for 132 SMs. On the H100
#: (scripts/moe_gpu_check.py --only sweep-grouped --sweep-tokens 1,16,64) this tile took
#: 126 us there instead of 179, and was 1.12x faster than the prefill tile in the geometric
#: mean of the three models' up and down products at 1 token (1.03x at 16 and 64 tokens,
#: slower at none); tiles of 32 or 64 columns were slower.
GROUPED_MATMUL_TMA_DECODE = PersistentConfig(64, 128, 128, group_m=8, num_warps=4, num_stages=3)

#: Below this many rows per expert on average (the decode tile's height), the TMA kernel
#: takes :data:`GROUPED_MATMUL_TMA_DECODE`.
GROUPED_DECODE_ROWS_PER_EXPERT = 64

#: The TMA kernel's schedule keeps every expert's offsets in registers (a vector of the
#: next power of two of E lanes): up to this many experts; more take computed pointers.
GROUPED_TMA_MAX_EXPERTS = 1024

#: Under Triton's interpreter, the TMA kernel (which the interpreter runs, descriptors and
#: all): a small tile, as :data:`GROUPED_MATMUL_INTERPRETER`.
GROUPED_MATMUL_TMA_INTERPRETER = PersistentConfig(16, 32, 32, group_m=2, num_warps=4, num_stages=1)

#: Candidates of the TMA kernel's sweep: the 128-row tiles two warpgroups share (one
#: wgmma covers 64 rows a warpgroup), 64 or 128 deep along K, 3 to 5 stages as shared
#: memory allows; and 64-row tiles, which waste fewer rows where an expert's rows end
#: inside a tile (DeepSeek-V3's 256 experts get about 128 rows each at 4096 tokens).
GROUPED_MATMUL_TMA_CANDIDATES: tuple[PersistentConfig, ...] = (
    PersistentConfig(128, 256, 64, num_warps=8, num_stages=3),
    PersistentConfig(128, 256, 64, num_warps=8, num_stages=4),
    PersistentConfig(256, 128, 64, num_warps=8, num_stages=3),
    PersistentConfig(128, 128, 64, num_warps=8, num_stages=4),
    PersistentConfig(128, 128, 64, num_warps=8, num_stages=5),
    PersistentConfig(128, 128, 128, num_warps=8, num_stages=3),
    PersistentConfig(64, 256, 64, num_warps=4, num_stages=4),
    PersistentConfig(128, 128, 64, num_warps=4, num_stages=4),
)

#: The grouped matmul's weight gradient (``grouped_matmul_wgrad``): ``(BLOCK_M, BLOCK_N,
#: BLOCK_K, num_warps, num_stages)``, BLOCK_M the rows summed per step. Not tuned yet: a
#: 64 x 64 tile of each expert's (K, N) gradient, the rows 64 at a time.
GROUPED_WGRAD_BLOCKS = (64, 64, 64, 4, 3)
#: Under Triton's interpreter: small tiles, so that the test shapes cross tile edges.
GROUPED_WGRAD_INTERPRETER = (16, 16, 16, 4, 1)

# --- block-scaled FP8 matmul ------------------------------------------------------------

#: The K extent of one scale block, and so the kernel's step along K: each step's partial
#: product is scaled by one scale of A's row and one of B's block and added into the
#: float32 accumulator (DeepSeek-V3's 1x128 / 128x128 blocks, arXiv:2412.19437, 3.3.2).
FP8_SCALE_BLOCK = 128

#: The block-scaled FP8 matmul's config on a GPU until a sweep has chosen one. One step
#: along K is a whole scale block (``block_k`` = :data:`FP8_SCALE_BLOCK`). Not yet measured.
FP8_BLOCKWISE_DEFAULT = MatmulConfig(128, 128, FP8_SCALE_BLOCK, group_m=8, num_warps=8, num_stages=4)

#: Under Triton's interpreter: small tiles in M and N (K's step stays a scale block).
FP8_BLOCKWISE_INTERPRETER = MatmulConfig(16, 32, FP8_SCALE_BLOCK, group_m=2, num_warps=4, num_stages=1)

#: Candidates of a sweep (DeepGEMM's Hopper kernels use 64- and 128-row tiles of 128 to 256
#: columns with a 128-deep step, https://github.com/deepseek-ai/DeepGEMM).
FP8_BLOCKWISE_CANDIDATES: tuple[MatmulConfig, ...] = (
    MatmulConfig(128, 128, FP8_SCALE_BLOCK, num_warps=8, num_stages=4),
    MatmulConfig(128, 128, FP8_SCALE_BLOCK, num_warps=4, num_stages=4),
    MatmulConfig(128, 256, FP8_SCALE_BLOCK, num_warps=8, num_stages=3),
    MatmulConfig(256, 128, FP8_SCALE_BLOCK, num_warps=8, num_stages=3),
    MatmulConfig(64, 128, FP8_SCALE_BLOCK, num_warps=4, num_stages=5),
    MatmulConfig(64, 256, FP8_SCALE_BLOCK, num_warps=8, num_stages=4),
)


#: The Triton TMA kernel's config (persistent, descriptors made on the device): the tile
#: whose pipeline compiles for the H100 without spilling (231 registers a thread).
FP8_BLOCKWISE_TMA_DEFAULT = PersistentConfig(128, 128, FP8_SCALE_BLOCK, num_warps=8, num_stages=4)

#: Candidates of the Triton TMA kernel's sweep.
FP8_BLOCKWISE_TMA_CANDIDATES: tuple[PersistentConfig, ...] = (
    PersistentConfig(128, 128, FP8_SCALE_BLOCK, num_warps=8, num_stages=4),
    PersistentConfig(128, 128, FP8_SCALE_BLOCK, num_warps=8, num_stages=5),
    PersistentConfig(64, 128, FP8_SCALE_BLOCK, num_warps=4, num_stages=6),
)

#: The Gluon kernel's configs (:mod:`gpuperf.kernels.gluon.matmul_fp8_blockwise`), largest
#: tile first: 128 x 128 (two warpgroups, the per-tensor Gluon kernel's tile), 128 x 64 and
#: 64 x 64 (one warpgroup), each with as many stages as fit beside the output tile.
#: :func:`fp8_blockwise_gluon_config` takes the first that gives every SM a tile.
FP8_BLOCKWISE_GLUON_BY_SIZE: tuple[GluonFP8Config, ...] = (
    GluonFP8Config(128, 128, FP8_SCALE_BLOCK, num_stages=5, num_warps=8),
    GluonFP8Config(128, 64, FP8_SCALE_BLOCK, num_stages=6, num_warps=8),
    GluonFP8Config(64, 64, FP8_SCALE_BLOCK, num_stages=8, num_warps=4),
)

#: Candidates of the Gluon kernel's sweep: the configs above, fewer stages, a 64 x 128 tile,
#: and Triton's schedule (each step's MMA waited for before it is scaled) as a reference.
FP8_BLOCKWISE_GLUON_CANDIDATES: tuple[GluonFP8Config, ...] = (
    *FP8_BLOCKWISE_GLUON_BY_SIZE,
    GluonFP8Config(128, 128, FP8_SCALE_BLOCK, num_stages=4, num_warps=8),
    GluonFP8Config(64, 128, FP8_SCALE_BLOCK, num_stages=6, num_warps=4),
    GluonFP8Config(128, 128, FP8_SCALE_BLOCK, num_stages=5, num_warps=8, schedule="drain"),
)


def fp8_blockwise_gluon_config(m: int, n: int, sms: int) -> GluonFP8Config:
    """The Gluon kernel's config for an ``(M, N)`` output on ``sms`` SMs: the largest tile of
    :data:`FP8_BLOCKWISE_GLUON_BY_SIZE` of which there are at least ``sms`` (each SM then
    has work: at M = 128 tokens, 128 x 128 tiles of DeepSeek-V3's N = 2112 would be 17
    programs), else the smallest."""
    for config in FP8_BLOCKWISE_GLUON_BY_SIZE:
        if -(-m // config.block_m) * -(-n // config.block_n) >= sms:
            return config
    return FP8_BLOCKWISE_GLUON_BY_SIZE[-1]


def moe_candidates(configs: tuple[MatmulConfig, ...], element_size: int) -> list[MatmulConfig]:
    """The configs of ``configs`` that can run on Hopper with operands of ``element_size``
    bytes (2 for bf16/fp16, 1 for FP8)."""
    kept = []
    for c in configs:
        # The pipeline's buffers must fit in shared memory, or the kernel will not launch.
        if (c.block_m + c.block_n) * c.block_k * element_size * c.num_stages > SHARED_MEMORY_BYTES:
            continue
        # Over 128 fp32 accumulators per thread spill to local memory.
        if c.block_m * c.block_n // (32 * c.num_warps) > 128:
            continue
        kept.append(c)
    return kept


__all__ = [
    "FP8_BLOCKWISE_CANDIDATES",
    "FP8_BLOCKWISE_DEFAULT",
    "FP8_BLOCKWISE_GLUON_BY_SIZE",
    "FP8_BLOCKWISE_GLUON_CANDIDATES",
    "FP8_BLOCKWISE_INTERPRETER",
    "FP8_BLOCKWISE_TMA_CANDIDATES",
    "FP8_BLOCKWISE_TMA_DEFAULT",
    "FP8_SCALE_BLOCK",
    "GROUPED_DECODE_ROWS_PER_EXPERT",
    "GROUPED_MATMUL_CANDIDATES",
    "GROUPED_MATMUL_DEFAULT",
    "GROUPED_MATMUL_INTERPRETER",
    "GROUPED_MATMUL_TMA_CANDIDATES",
    "GROUPED_MATMUL_TMA_DECODE",
    "GROUPED_MATMUL_TMA_DEFAULT",
    "GROUPED_MATMUL_TMA_INTERPRETER",
    "GROUPED_TMA_MAX_EXPERTS",
    "GROUPED_WGRAD_BLOCKS",
    "GROUPED_WGRAD_INTERPRETER",
    "fp8_blockwise_gluon_config",
    "moe_candidates",
]
