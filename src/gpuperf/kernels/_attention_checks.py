"""The argument checks that every attention shares (the forward, Triton's and Gluon's, and the
decode step).

``attention(q, k, v, *, causal, scale)`` takes SDPA's layout: ``q`` is ``(B, H, S_q, D)``,
``k`` and ``v`` are ``(B, H_kv, S_k, D)`` with ``H`` a multiple of ``H_kv`` (grouped-query
attention). :func:`check_attention` names the argument that breaks a rule, and the rule.
"""

from __future__ import annotations

import math

from gpuperf.kernels._validation import HALF_DTYPES, check_tensors


def check_attention(q, k, v, causal, scale, head_dims) -> float:
    """Check attention's arguments; return the scale (``1 / sqrt(D)`` when ``scale`` is None).

    Args:
        q, k, v: as :func:`gpuperf.kernels.attention` takes them.
        causal: must be a bool; ``True`` needs ``S_q == S_k``.
        scale: None, or a positive finite number.
        head_dims: the head dims ``D`` the kernel supports.

    Raises:
        TypeError: an input is not a tensor, its dtype is not float16 or bfloat16, the dtypes
            differ, ``causal`` is not a bool or ``scale`` not a number.
        ValueError: a tensor is not 4-D, the batch sizes, head dims or key and value shapes
            disagree, ``H`` is not a multiple of ``H_kv``, ``D`` is not in ``head_dims``,
            ``S_k`` is 0, ``causal`` with ``S_q != S_k``, ``scale`` is not positive and
            finite, or the tensors are on different devices.
    """
    check_tensors(("q", "k", "v"), (q, k, v), HALF_DTYPES)
    _, _, seq_q, head_dim, _, seq_k = check_shapes(q, k, v, head_dims)
    if seq_k == 0:
        raise ValueError("k and v must hold at least one key (S_k = 0: the softmax would be over nothing)")
    if type(causal) is not bool:
        raise TypeError(f"causal must be a bool, got {type(causal).__name__}")
    if causal and seq_q != seq_k:
        raise ValueError(
            f"causal=True needs as many queries as keys (S_q == S_k), got S_q {seq_q} and S_k {seq_k}"
        )
    return check_scale(scale, head_dim)


def check_shapes(
    q, k, v, head_dims, k_name: str = "k", v_name: str = "v", keys: str = "S_k"
) -> tuple[int, int, int, int, int, int]:
    """Check the shapes of attention's tensors (of any attention: the forward's keys, or a
    KV cache): ``q`` (B, H, S_q, D), ``k`` and ``v`` (B, H_kv, S_k, D), all 4-D, ``k`` and
    ``v`` of one shape, then :func:`check_heads`; return ``(B, H, S_q, D, H_kv, S_k)``.

    Args:
        q, k, v: tensors (their types and dtypes already checked).
        head_dims: the head dims ``D`` the kernel supports.
        k_name, v_name: what the messages call ``k`` and ``v`` (``"k_cache"``, say).
        keys: what the messages call the keys' sequence length (``"S_max"``, say).

    Raises:
        ValueError: naming the rule broken and the shapes.
    """
    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        raise ValueError(
            f"q must be (B, H, S_q, D) and {k_name}, {v_name} (B, H_kv, {keys}, D): each must be 4-D, got "
            f"q {tuple(q.shape)}, {k_name} {tuple(k.shape)}, {v_name} {tuple(v.shape)}"
        )
    if k.shape != v.shape:
        raise ValueError(
            f"{k_name} and {v_name} must have the same shape, got "
            f"{k_name} {tuple(k.shape)} and {v_name} {tuple(v.shape)}"
        )
    return check_heads(q, k, k_name, head_dims)


def check_heads(q, k, k_name: str, head_dims) -> tuple[int, int, int, int, int, int]:
    """Check that 4-D ``q`` (B, H, S_q, D) and ``k`` (named ``k_name``: the keys, or a KV
    cache, (B, H_kv, S_k, D)) agree on the batch and the head dim, that ``D`` is one of
    ``head_dims`` and ``H`` a multiple of ``H_kv`` (grouped-query attention); return
    ``(B, H, S_q, D, H_kv, S_k)``.

    Raises:
        ValueError: naming the rule broken and both values.
    """
    batch, n_heads, seq_q, head_dim = q.shape
    _, n_kv_heads, seq_k, head_dim_k = k.shape
    if k.shape[0] != batch:
        raise ValueError(f"q and {k_name} must have the same batch size, got {batch} and {k.shape[0]}")
    if head_dim_k != head_dim:
        raise ValueError(
            f"q and {k_name} must have the same head dim (last dimension), got {head_dim} and {head_dim_k}"
        )
    if head_dim not in head_dims:
        raise ValueError(f"head dim {head_dim} is not supported; supported head dims are {head_dims}")
    if n_kv_heads == 0 or n_heads % n_kv_heads:
        raise ValueError(
            f"the query heads ({n_heads}) must be a multiple of the key/value heads ({n_kv_heads})"
        )
    return batch, n_heads, seq_q, head_dim, n_kv_heads, seq_k


def check_scale(scale, head_dim: int) -> float:
    """The softmax scale: ``1 / sqrt(head_dim)`` when ``scale`` is None, else ``scale``.

    Raises:
        TypeError: ``scale`` is not a number (a bool is not).
        ValueError: ``scale`` is not positive and finite.
    """
    if scale is None:
        return 1.0 / math.sqrt(head_dim)
    if isinstance(scale, bool) or not isinstance(scale, (int, float)):
        raise TypeError(f"scale must be a number or None, got {type(scale).__name__}")
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be positive and finite, got {scale}")
    return float(scale)


__all__ = ["check_attention", "check_heads", "check_scale", "check_shapes"]
