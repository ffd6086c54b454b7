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


def assert_close(name: str, ref: torch.Tensor, out: torch.Tensor) -> None:
    """Raise ``AssertionError`` unless ``out`` matches ``ref`` within ``out.dtype``'s tolerance.

    ``ref`` may be in higher precision; it is compared on ``out``'s device after
    both are cast to float64. NaNs must sit in the same places. ``name`` prefixes
    the message, so a failure says which check failed.
    """
    if out.shape != ref.shape:
        raise AssertionError(f"{name}: shape {tuple(out.shape)} != reference {tuple(ref.shape)}")
    rtol, atol = tolerance(out.dtype)
    torch.testing.assert_close(
        out.double(),
        ref.to(device=out.device, dtype=torch.float64),
        rtol=rtol,
        atol=atol,
        equal_nan=True,
        msg=lambda detail: f"{name} ({out.dtype}): {detail}",
    )
