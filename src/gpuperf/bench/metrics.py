"""Work formulas: how many bytes a kernel must move and how many FLOPs it must do.

One set of formulas for every plot and record on the site. Bytes count each
element read once plus each element written once (the minimum any
implementation must move); FLOPs count a multiply-add as two.
"""

from __future__ import annotations

GB = 1e9
TFLOP = 1e12


def elementwise_bytes(n_elements: int, element_size: int, n_inputs: int = 2, n_outputs: int = 1) -> int:
    """Bytes moved by an elementwise op: ``(n_inputs + n_outputs) * N * element_size``.

    Vector add reads two tensors and writes one: ``3 * N * element_size``.
    """
    return (n_inputs + n_outputs) * n_elements * element_size


def softmax_bytes(n_rows: int, n_cols: int, element_size: int) -> int:
    """Bytes moved by a row softmax: the input read once and the output written once."""
    return 2 * n_rows * n_cols * element_size


def copy_bytes(n_bytes: int) -> int:
    """Bytes moved by a device-to-device copy of ``n_bytes``: read once, written once."""
    return 2 * n_bytes


def matmul_flops(m: int, n: int, k: int) -> int:
    """FLOPs of ``(M, K) @ (K, N)``: ``2 * M * N * K`` (one multiply and one add per term)."""
    return 2 * m * n * k


def attention_flops(
    batch: int, heads: int, seq_len: int, head_dim: int, *, causal: bool = False, backward: bool = False
) -> float:
    """FLOPs of attention: ``4 * B * H * S**2 * D`` forward (two matmuls), half when
    causal, 2.5 times the forward for the backward pass (five matmuls instead of two)."""
    flops = 4.0 * batch * heads * seq_len * seq_len * head_dim
    if causal:
        flops /= 2
    if backward:
        flops *= 2.5
    return flops


def gb_per_s(n_bytes: float, ms: float) -> float:
    """Bandwidth in GB/s (10**9 bytes per second) for ``n_bytes`` moved in ``ms`` milliseconds."""
    return n_bytes / (ms * 1e-3) / GB


def tflop_per_s(flops: float, ms: float) -> float:
    """Throughput in TFLOP/s (10**12 per second) for ``flops`` done in ``ms`` milliseconds."""
    return flops / (ms * 1e-3) / TFLOP


#: Unit name -> converter from (work, ms) to the unit.
RATE = {"GB/s": gb_per_s, "TFLOP/s": tflop_per_s}


def rate(metric: str, work: float, ms: float) -> float:
    """Convert ``work`` (bytes for GB/s, FLOPs for TFLOP/s) done in ``ms`` into ``metric``."""
    try:
        return RATE[metric](work, ms)
    except KeyError:
        raise ValueError(f"metric must be one of {sorted(RATE)}, got {metric!r}") from None
