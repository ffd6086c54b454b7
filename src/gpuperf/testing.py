"""Comparing a kernel's output with its reference: one tolerance table per dtype."""

from __future__ import annotations

import torch

#: (rtol, atol) per output dtype. The output is rounded to its dtype once, so the
#: error budget is about one unit in the last place plus fp32 accumulation error.
TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float64: (1e-10, 1e-12),
    torch.float32: (1e-5, 1e-6),
    torch.float16: (2e-3, 1e-5),
    torch.bfloat16: (1.6e-2, 1e-4),
}


def tolerance(dtype: torch.dtype) -> tuple[float, float]:
    """Return ``(rtol, atol)`` for outputs of ``dtype``; ``TypeError`` if there is none."""
    try:
        return TOLERANCES[dtype]
    except KeyError:
        raise TypeError(f"no tolerance for dtype {dtype}; known: {list(TOLERANCES)}") from None


def reduction_atol(dtype: torch.dtype, k: int) -> float:
    """Absolute tolerance for outputs that each sum ``k`` products (a matmul's K).

    The two results add the same ``k`` terms in different orders, and the inputs
    were rounded to ``dtype``: the difference grows like ``sqrt(k)`` times the
    dtype's rounding unit (``torch.finfo(dtype).eps``) for terms of order one, as
    random normal inputs give. This matters for outputs near zero, where the
    relative tolerance allows almost nothing.
    """
    return max(tolerance(dtype)[1], torch.finfo(dtype).eps * max(k, 1) ** 0.5)


def assert_close(name: str, ref: torch.Tensor, out: torch.Tensor, *, k: int | None = None) -> None:
    """Raise ``AssertionError`` unless ``out`` matches ``ref`` within ``out.dtype``'s tolerance.

    ``ref`` may be in higher precision; it is compared on ``out``'s device after
    both are cast to float64. NaNs must sit in the same places. ``name`` prefixes
    the message, so a failure says which check failed. For a reduction over
    ``k`` products (a matmul), pass ``k``: the absolute tolerance then grows as
    :func:`reduction_atol` says.
    """
    if out.shape != ref.shape:
        raise AssertionError(f"{name}: shape {tuple(out.shape)} != reference {tuple(ref.shape)}")
    rtol, atol = tolerance(out.dtype)
    if k is not None:
        atol = reduction_atol(out.dtype, k)
    torch.testing.assert_close(
        out.double(),
        ref.to(device=out.device, dtype=torch.float64),
        rtol=rtol,
        atol=atol,
        equal_nan=True,
        msg=lambda detail: f"{name} ({out.dtype}): {detail}",
    )
