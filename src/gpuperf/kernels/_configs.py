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
# H100 (scripts/explore_configs.py; the numbers are in tutorial 02): the best few
# configs of each row length lie within 1-2% of each other, and these rules land
# among them. Fixed rules rather than the autotuner keep every run on the same
# code and cost no tuning time on the first call.

#: Rows longer than this take the online (two-pass, chunked) kernel: a longer
#: fp32 row no longer fits in one program's registers without spilling.
SOFTMAX_MAX_FUSED_COLS = 32768

#: Elements each thread holds in the single-pass kernel: 64 fp32 registers of
#: data leave room for addresses and the reductions without spilling.
SOFTMAX_ELEMENTS_PER_THREAD = 64

#: Chunk length and warps of the online kernel: 32 elements per thread per chunk;
#: the sweep favoured 8192-column chunks over 1024-4096 by 3-10%.
SOFTMAX_ONLINE_BLOCK_N = 8192
SOFTMAX_ONLINE_NUM_WARPS = 8


def softmax_fused_launch(block_n: int) -> tuple[int, int]:
    """``(BLOCK_M, num_warps)`` for the single-pass kernel on rows padded to ``block_n``."""
    # Short rows: four per program, so each program moves at least 4 KB of fp32.
    block_m = 4 if block_n <= 1024 else 1
    # At most 64 elements per thread; at least 2 warps.
    num_warps = max(2, block_m * block_n // (32 * SOFTMAX_ELEMENTS_PER_THREAD))
    return block_m, num_warps
