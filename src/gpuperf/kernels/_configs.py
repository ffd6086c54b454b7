"""Autotune configs and launch parameters, kept as data.

Under Triton's interpreter the autotuner would time every config with CUDA
events it does not have, so each list collapses to one small config there.
Every pruning rule carries a one-line reason.
"""

from __future__ import annotations

import triton

from gpuperf._runtime import is_interpreter

# --- vector add --------------------------------------------------------------------

#: Elements per program and warps per program for ``vector_add``: 1024 fp32
#: elements over 4 warps gives each thread two 16-byte loads per input. On an
#: H200, block sizes 512 to 4096 with 2 to 16 warps measured within the run-to-run
#: spread of each other (scripts/explore_configs.py); 8192 and up lose 5-15%
#: below 2**24 elements (too few programs to spread over 132 SMs).
VECTOR_ADD_BLOCK_SIZE = 1024
VECTOR_ADD_NUM_WARPS = 4

# --- softmax -----------------------------------------------------------------------

#: Rows longer than this take the online (two-pass, chunked) kernel: a longer
#: fp32 row no longer fits in one program's registers without spilling.
SOFTMAX_MAX_FUSED_COLS = 32768

#: Largest tile (rows x padded columns) one program of the single-pass kernel holds.
_SOFTMAX_MAX_TILE = 32768
#: Most elements per thread before registers spill (64 fp32 values plus addresses).
_SOFTMAX_MAX_PER_THREAD = 64
#: Fewest elements per thread: below 4, loads are narrower than 16 bytes.
_SOFTMAX_MIN_PER_THREAD = 4


def softmax_fused_configs() -> list[triton.Config]:
    """Candidates for the single-pass kernel: rows per program x warps."""
    if is_interpreter():
        # Two rows per program still exercises the row mask under the interpreter.
        return [triton.Config({"BLOCK_M": 2}, num_warps=1)]
    return [
        triton.Config({"BLOCK_M": block_m}, num_warps=num_warps)
        for block_m in (1, 2, 4, 8, 16, 32, 64)
        for num_warps in (2, 4, 8, 16, 32)
    ]


def prune_softmax_fused(configs, named_args, **kwargs):
    """Keep the configs whose tile fits the row length of this call.

    The autotuner caches its choice per row length (``key=["n_cols"]``) and dtype,
    so the first call with a given row length decides for later ones.
    """
    block_n = kwargs.get("BLOCK_N", named_args.get("BLOCK_N"))
    kept = []
    for config in configs:
        block_m = config.kwargs["BLOCK_M"]
        tile = block_m * block_n
        per_thread = tile // (config.num_warps * 32)
        if tile > max(_SOFTMAX_MAX_TILE, block_n):
            continue  # the tile would not fit in registers
        if per_thread > _SOFTMAX_MAX_PER_THREAD or per_thread < _SOFTMAX_MIN_PER_THREAD:
            continue  # spills above, narrow loads below
        kept.append(config)
    # The smallest tile always works; it covers rows too short or too few for the rules.
    return kept or [min(configs, key=lambda c: (c.kwargs["BLOCK_M"], c.num_warps))]


def softmax_online_configs() -> list[triton.Config]:
    """Candidates for the online kernel: columns per chunk x warps, one row per program."""
    if is_interpreter():
        return [triton.Config({"BLOCK_N": 4096}, num_warps=1)]
    return [
        triton.Config({"BLOCK_N": block_n}, num_warps=num_warps)
        for block_n in (1024, 2048, 4096, 8192)
        for num_warps in (4, 8, 16)
        # 4..32 elements per thread: wide loads, and the running max and sum fit too.
        if 4 <= block_n // (num_warps * 32) <= 32
    ]
