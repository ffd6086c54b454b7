"""What the elementwise ops (GELU, add-ReLU-multiply, strided copy) share: their launch
configuration and the checks of their common arguments.

An elementwise kernel gives each program ``BLOCK_SIZE`` consecutive elements, so
the threads of a warp read consecutive addresses (coalesced, 16-byte vector
loads) and the grid is ``cdiv(N, BLOCK_SIZE)`` programs, as in tutorial 01.
"""

from __future__ import annotations

#: Elements per program: 1024 float32 elements are 8 per thread at 4 warps, two
#: 16-byte loads each; large enough that a program does real work, small enough
#: that even 2**12 elements spread over several SMs.
BLOCK_SIZE = 1024
#: Warps per program.
NUM_WARPS = 4


def check_launch(block_size, num_warps) -> None:
    """Raise unless ``block_size`` and ``num_warps`` are positive powers of two.

    Raises:
        TypeError: ``block_size`` or ``num_warps`` is not an int.
        ValueError: either is not a positive power of two.
    """
    for name, value in (("block_size", block_size), ("num_warps", num_warps)):
        if type(value) is not int:
            raise TypeError(f"{name} must be an int, got {type(value).__name__}")
        if value < 1 or value & (value - 1):
            raise ValueError(f"{name} must be a power of two, got {value}")
