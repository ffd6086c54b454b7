"""The persistent tile loop's schedule, shared by the persistent matmul (and FP8 through it),
SwiGLU, the grouped matmul and the block-scaled FP8 matmul: which output tile a program
computes next (:func:`tile_coords`), and how many programs a persistent grid launches.

A persistent kernel launches one program per SM (or fewer, when there are fewer tiles);
program ``p`` of ``P`` walks the output tiles ``p, p + P, p + 2P, ...``. The tiles are
numbered in grouped order (:func:`tile_coords`): ``GROUP_M`` rows of tiles column by
column, so the tiles in flight at once share rows of A and columns of B in L2
(tutorial 03's ordering). Source: Triton's persistent-matmul tutorial
(https://triton-lang.org/main/getting-started/tutorials/09-persistent-matmul.html).
"""

from __future__ import annotations

import triton
import triton.language as tl

from gpuperf.kernels.device import num_sms


@triton.jit
def tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    """(row, column) of output tile ``tile_id`` in grouped order: GROUP_M rows of tiles
    column by column, so the tiles in flight together share A and B in L2."""
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = tile_id // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + (tile_id % num_pid_in_group) % group_size_m
    pid_n = (tile_id % num_pid_in_group) // group_size_m
    return pid_m, pid_n


def persistent_programs(device_index: int, tiles: int) -> int:
    """Programs of a persistent launch over ``tiles`` output tiles on device ``device_index``:
    one per SM (:func:`gpuperf.kernels.device.num_sms`), or one per tile when there are fewer."""
    return min(num_sms(device_index), tiles)


__all__ = ["persistent_programs", "tile_coords"]
