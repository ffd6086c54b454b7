"""Integer helpers for launch grids, in plain Python.

``triton.cdiv`` and ``triton.next_power_of_2`` are ``constexpr_function``s: each
call from Python goes through a wrapper that unwraps constexprs, about 10 us of
host time apiece on the machines these docs measure on, paid on every launch.
"""


def cdiv(a: int, b: int) -> int:
    """Ceiling division for non-negative ``a`` and positive ``b``."""
    return -(-a // b)


def next_power_of_2(n: int) -> int:
    """The smallest power of two >= ``n`` for ``n >= 1``; 0 for 0, as Triton's."""
    return 0 if n <= 0 else 1 << (n - 1).bit_length()
