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


def matmul_ref(
    a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor | None = None, activation: str | None = None
) -> torch.Tensor:
    """``activation(a @ b + bias)`` in float32 on the inputs upcast; returns float32.

    Shapes ``(M, K) @ (K, N)``, ``bias`` ``(N,)``; ``activation`` as
    :func:`gpuperf.kernels.matmul` (``None``, ``"relu"``, ``"leaky_relu"``, ``"gelu"``).
    """
    out = a.float() @ b.float()
    if bias is not None:
        out = out + bias.float()
    return apply_activation(out, activation)


def apply_activation(x: torch.Tensor, activation: str | None) -> torch.Tensor:
    """The epilogue activations of :func:`gpuperf.kernels.matmul`, in PyTorch.

    Raises:
        ValueError: ``activation`` is not one of the names above.
    """
    if activation is None:
        return x
    if activation == "relu":
        return torch.relu(x)
    if activation == "leaky_relu":
        return torch.nn.functional.leaky_relu(x, 0.01)
    if activation == "gelu":
        return torch.nn.functional.gelu(x, approximate="tanh")
    raise ValueError(f"activation must be None, 'relu', 'leaky_relu' or 'gelu', got {activation!r}")


def matmul_epilogue_eager(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor, activation: str = "gelu"):
    """The unfused epilogue as written in eager PyTorch: cuBLAS, then one kernel per op.

    ``torch.matmul`` writes C, the bias add reads it and writes it again, the
    activation reads and writes it once more: five passes over the ``M * N``
    output where the fused kernel makes one (its final write). Same dtype as the inputs.
    """
    return apply_activation(torch.matmul(a, b) + bias, activation)
