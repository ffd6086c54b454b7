"""Launch parameters, kept as data, each rule with its reason.

(Autotuned kernels keep their config lists here too; under Triton's interpreter
such a list must collapse to one config, since the autotuner would time each
with CUDA events the interpreter does not have.)
"""

from __future__ import annotations

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
# docs/measurements/nvidia-h100-80gb-hbm3/explore_configs.log): the best few
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
