"""The argument checks the matmuls share: ``a @ b`` of two matrices.

Apart from :mod:`gpuperf.kernels._validation` so that the checks the other ops share (and
the measurements keyed on them) do not change with the matmuls'.
"""

from __future__ import annotations

import torch


def check_matmul_shapes(a: torch.Tensor, b: torch.Tensor) -> None:
    """``ValueError`` unless ``a`` and ``b`` are 2-D with matching inner dimensions (``a @ b``)."""
    if a.dim() != 2 or b.dim() != 2:
        raise ValueError(f"a and b must be 2-D, got a {tuple(a.shape)} and b {tuple(b.shape)}")
    if a.shape[1] != b.shape[0]:
        raise ValueError(
            f"inner dimensions must match: a is {tuple(a.shape)} and b is {tuple(b.shape)} "
            f"({a.shape[1]} != {b.shape[0]})"
        )


__all__ = ["check_matmul_shapes"]
