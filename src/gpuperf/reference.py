"""PyTorch references for every kernel in :mod:`gpuperf.kernels`.

The ``*_ref`` functions compute in float64 and return float64, so a kernel's
error is measured against something more precise than the kernel itself. Tests,
tutorials and benchmarks all check against these.
"""

from __future__ import annotations

import torch


def vector_add_ref(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``x + y`` in float64. Shapes ``(...)``, any float dtype; returns float64."""
    return x.double() + y.double()


def softmax_ref(x: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dimension in float64. Shape ``(..., N)``; returns float64."""
    return torch.softmax(x.double(), dim=-1)


def softmax_naive(x: torch.Tensor) -> torch.Tensor:
    """Softmax as written naively in eager PyTorch, one kernel per line.

    Five kernels and about five passes over the data (max, subtract, exp, sum,
    divide): the unfused baseline that tutorial 02 measures. Same dtype as ``x``.
    """
    x_max = x.max(dim=-1, keepdim=True).values
    z = x - x_max
    numerator = torch.exp(z)
    denominator = numerator.sum(dim=-1, keepdim=True)
    return numerator / denominator
