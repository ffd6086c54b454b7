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
    "FP8_BLOCKWISE_INTERPRETER",
    "FP8_SCALE_BLOCK",
    "GROUPED_MATMUL_CANDIDATES",
    "GROUPED_MATMUL_DEFAULT",
    "GROUPED_MATMUL_INTERPRETER",
    "moe_candidates",
]
