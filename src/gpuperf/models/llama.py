"""A Llama-3-style decoder layer whose operations are PyTorch's or gpuperf's, on one set
of weights.

The layer (Touvron et al., "LLaMA", arXiv:2302.13971; Llama 3's shapes: Grattafiori et
al., "The Llama 3 Herd of Models", arXiv:2407.21783; the reference implementation is
``LlamaDecoderLayer`` in Hugging Face transformers)::

    h = x + W_o · attention(rope(W_q · rmsnorm(x)), rope(W_k · rmsnorm(x)), W_v · rmsnorm(x))
    y = h + W_down · (silu(W_gate · rmsnorm(h)) * (W_up · rmsnorm(h)))

with grouped-query attention (``n_kv_heads`` key/value heads shared by ``n_heads``
query heads), causal over the sequence in prefill and against a KV cache in decode.
Its six operations come from an :class:`Ops` table: :data:`PYTORCH_OPS` (what a
PyTorch model writes: ``torch.matmul``, the eager RMSNorm and RoPE of transformers,
``F.scaled_dot_product_attention``, ``F.silu(x @ W_gate) * (x @ W_up)``) or
:data:`GPUPERF_OPS` (gpuperf's kernels: :func:`~gpuperf.kernels.rms_norm`,
:func:`~gpuperf.kernels.matmul_persistent` on Hopper (:func:`~gpuperf.kernels.matmul_splitk`
for a decode step's few rows, :func:`~gpuperf.kernels.matmul` elsewhere and under
``torch.compile``), :func:`~gpuperf.kernels.rope`,
:func:`~gpuperf.kernels.attention`, :func:`~gpuperf.kernels.attention_decode`,
:func:`~gpuperf.kernels.swiglu`). Both train: the projections get their backward here,
from the same matmuls; every other op has its own.

Weights are stored as ``(in, out)`` matrices so that a projection is ``x @ W``: the
query, key and value projections as one ``(hidden, (H + 2 H_kv) · D)`` matrix (one
matmul instead of three). The gate and up projections are one matrix too, kept as
``nn.Linear`` (and a fused ``gate_up_proj``) keeps it, ``(2 · mlp, hidden)`` row-major,
``[W_gate; W_up]``, and used as its transpose ``[W_gate | W_up]`` (:attr:`DecoderLayer.gate_up`):
in that layout one tensor-descriptor copy brings a gate tile and its up tile to the
fused SwiGLU as one operand (:mod:`gpuperf.kernels.swiglu`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from gpuperf import reference
from gpuperf.models.sections import Sections


@dataclass(frozen=True)
class LlamaConfig:
    """The shapes of one decoder layer.

    Attributes:
        hidden: the model width.
        n_heads: query heads.
        n_kv_heads: key/value heads; ``n_heads`` must be a multiple.
        head_dim: the width of a head (even: RoPE rotates pairs).
        mlp: the MLP's inner width.
        eps: RMSNorm's epsilon.
        rope_base: RoPE's frequency base (Llama 3: 500,000; no frequency scaling).

    Raises:
        TypeError: a size is not an int, or ``eps``/``rope_base`` not a number.
        ValueError: a size is not positive, ``n_heads`` is not a multiple of
            ``n_kv_heads``, ``head_dim`` is odd, or ``eps``/``rope_base`` not positive.
    """

    hidden: int = 4096
    n_heads: int = 32
    n_kv_heads: int = 8
    head_dim: int = 128
    mlp: int = 14336
    eps: float = 1e-5
    rope_base: float = 500000.0

    def __post_init__(self):
        for name in ("hidden", "n_heads", "n_kv_heads", "head_dim", "mlp"):
            value = getattr(self, name)
            if type(value) is not int:
                raise TypeError(f"{name} must be an int, got {type(value).__name__}")
            if value <= 0:
                raise ValueError(f"{name} must be positive, got {value}")
        if self.n_heads % self.n_kv_heads:
            raise ValueError(
                f"n_heads must be a multiple of n_kv_heads, got {self.n_heads} and {self.n_kv_heads}"
            )
        if self.head_dim % 2:
            raise ValueError(f"head_dim must be even (RoPE rotates pairs), got {self.head_dim}")
        for name in ("eps", "rope_base"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"{name} must be a number, got {type(value).__name__}")
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be positive and finite, got {value}")

    @property
    def qkv_width(self) -> int:
        """The fused QKV projection's output width, ``(H + 2 H_kv) · D``."""
        return (self.n_heads + 2 * self.n_kv_heads) * self.head_dim


#: Llama 3 8B's layer: hidden 4096, 32 query heads, 8 key/value heads of 128, MLP 14336.
LLAMA_3_8B = LlamaConfig()


@dataclass(frozen=True)
class Ops:
    """The six operations of a decoder layer, by name (:data:`PYTORCH_OPS`,
    :data:`GPUPERF_OPS`).

    Attributes:
        name: how pages and benchmarks call the table (``"pytorch"``, ``"gpuperf"``).
        rms_norm: ``(x (..., N), weight (N,), eps) -> (..., N)``.
        linear: ``(x (M, K), w (K, N)) -> (M, N)``.
        rope: ``(q (B, H, S, D), k (B, H_kv, S, D), cos, sin) -> (q, k)`` rotated,
            ``cos``/``sin`` ``(B, S, D)``.
        attention: ``(q, k, v) -> (B, H, S, D)``, causal, grouped-query.
        attention_decode: ``(q (B, H, S_q, D), k_cache, v_cache, cache_seqlens) ->
            (B, H, S_q, D)``: the last ``S_q`` queries of each sequence against its
            ``cache_seqlens[b]`` cached keys.
        swiglu: ``(x (M, K), w_gate_up (K, 2 N)) -> silu(x @ W_gate) * (x @ W_up)``.
    """

    name: str
    rms_norm: Callable
    linear: Callable
    rope: Callable
    attention: Callable
    attention_decode: Callable
    swiglu: Callable


def _split_gate_up(w_gate_up: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    n = w_gate_up.shape[1] // 2
    return w_gate_up[:, :n], w_gate_up[:, n:]


def _torch_attention(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)


def _torch_swiglu(x, w_gate_up):
    return reference.swiglu_eager(x, *_split_gate_up(w_gate_up))


#: What a PyTorch model writes (Hugging Face transformers' Llama): eager RMSNorm and
#: RoPE, ``torch.matmul`` (cuBLAS), ``F.scaled_dot_product_attention`` (FlashAttention-2
#: or cuDNN backend), and in decode SDPA with a mask over the padded cache.
PYTORCH_OPS = Ops(
    name="pytorch",
    rms_norm=reference.rms_norm_eager,
    linear=torch.matmul,
    rope=reference.rope_eager,
    attention=_torch_attention,
    attention_decode=reference.attention_decode_sdpa,
    swiglu=_torch_swiglu,
)


def _matmul(a, b):
    """``a @ b`` by gpuperf's fastest matmul for these operands: for a few rows (a decode
    step) the split-K kernel, which spreads the weight's read over every SM; else the
    persistent TMA kernel (tutorial 06) on Hopper when tensor descriptors can describe
    both operands; else tutorial 03's kernel (which also runs inside ``torch.compile``,
    being a registered op)."""
    from gpuperf.kernels import matmul, matmul_persistent, matmul_splitk
    from gpuperf.kernels.device import capability
    from gpuperf.kernels.matmul_splitk import SPLITK_MAX_M
    from gpuperf.kernels.tma import tma_layout

    # A weight is an nn.Parameter; the kernels' plans (a repeat call skips the checks)
    # take plain tensors only. Here no gradient is recorded (inference, or inside
    # _Linear), so the detached view is the same data.
    a, b = a.detach(), b.detach()
    if a.is_cuda and not torch.compiler.is_compiling():
        if a.shape[0] <= SPLITK_MAX_M:
            return matmul_splitk(a, b)
        if capability(a.get_device())[0] >= 9 and tma_layout(a) is not None and tma_layout(b) is not None:
            return matmul_persistent(a, b)
    return matmul(a, b)


class _Linear(torch.autograd.Function):
    """``x @ w`` by gpuperf's matmul, forward and backward (``dx = dy @ wᵀ``,
    ``dw = xᵀ @ dy``: transposed views the kernels read in place)."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return _matmul(x, w)

    @staticmethod
    def backward(ctx, dy):
        x, w = ctx.saved_tensors
        dx = _matmul(dy, w.t()) if ctx.needs_input_grad[0] else None
        dw = _matmul(x.t(), dy) if ctx.needs_input_grad[1] else None
        return dx, dw


def _gpuperf_linear(x, w):
    if torch.is_grad_enabled() and (x.requires_grad or w.requires_grad):
        return _Linear.apply(x, w)
    return _matmul(x, w)


def _gpuperf_swiglu(x, w_gate_up):
    from gpuperf.kernels import swiglu

    return swiglu(x, w_gate_up)


def _gpuperf_rms_norm(x, weight, eps):
    from gpuperf.kernels import rms_norm

    if not (torch.is_grad_enabled() and (x.requires_grad or weight.requires_grad)):
        weight = weight.detach()  # a plain tensor: repeat calls launch from a plan
    return rms_norm(x, weight, eps=eps)


def _gpuperf_rope(q, k, cos, sin):
    from gpuperf.kernels import rope

    return rope(q, k, cos, sin)


def _gpuperf_attention(q, k, v):
    from gpuperf.kernels import attention

    return attention(q, k, v, causal=True)


def _gpuperf_attention_decode(q, k_cache, v_cache, cache_seqlens):
    from gpuperf.kernels import attention_decode

    return attention_decode(q, k_cache, v_cache, cache_seqlens)


#: gpuperf's kernels: RMSNorm in one pass, the tiled matmul, RoPE on q and k in one
#: launch, FlashAttention-style attention, Flash-Decoding against the cache, and SwiGLU
#: as one matmul with ``silu(g) * u`` in its epilogue.
GPUPERF_OPS = Ops(
    name="gpuperf",
    rms_norm=_gpuperf_rms_norm,
    linear=_gpuperf_linear,
    rope=_gpuperf_rope,
    attention=_gpuperf_attention,
    attention_decode=_gpuperf_attention_decode,
    swiglu=_gpuperf_swiglu,
)

_OPS = {ops.name: ops for ops in (PYTORCH_OPS, GPUPERF_OPS)}

#: The parts of a layer's step, in order, as a profiler sees them (``llama.<part>`` ranges
#: inside ``SECTIONS.recording()``; :mod:`gpuperf.models.sections`): the norms, each
#: projection, RoPE, the KV-cache write and attention.
SECTIONS = Sections(
    "llama.",
    ("attn_norm", "qkv_proj", "rope", "kv_cache_write", "attention", "o_proj", "mlp_norm", "gate_up", "down"),
)


class DecoderLayer(nn.Module):
    """One Llama-style decoder layer with random weights (a fixed seed) and a choice of
    operations.

    Args:
        config: the shapes (:data:`LLAMA_3_8B` by default).
        ops: ``"pytorch"``, ``"gpuperf"`` or an :class:`Ops` table; may be changed
            later (``layer.ops = GPUPERF_OPS``): the weights stay.
        device, dtype: where the weights live and their dtype (bfloat16 by default).
        seed: the seed of the weights: projections ``N(0, 0.02²)``, norm weights
            ``1 + N(0, 0.1²)``.

    Raises:
        TypeError: ``config`` is not a :class:`LlamaConfig`, or ``ops`` neither a name
            nor an :class:`Ops`.
        ValueError: ``ops`` is an unknown name.
    """

    def __init__(
        self,
        config: LlamaConfig = LLAMA_3_8B,
        *,
        ops="pytorch",
        device=None,
        dtype=torch.bfloat16,
        seed: int = 0,
    ):
        super().__init__()
        if not isinstance(config, LlamaConfig):
            raise TypeError(f"config must be a LlamaConfig, got {type(config).__name__}")
        self.config = config
        self.ops = ops
        c = config
        gen = torch.Generator().manual_seed(seed)

        def weight(*shape, mean=0.0, std=0.02):
            return nn.Parameter((mean + std * torch.randn(*shape, generator=gen)).to(device, dtype))

        self.attn_norm = weight(c.hidden, mean=1.0, std=0.1)
        self.w_qkv = weight(c.hidden, c.qkv_width)
        self.w_o = weight(c.n_heads * c.head_dim, c.hidden)
        self.mlp_norm = weight(c.hidden, mean=1.0, std=0.1)
        self.w_gate_up = weight(2 * c.mlp, c.hidden)  # nn.Linear's layout: (out, in)
        self.w_down = weight(c.mlp, c.hidden)

    @property
    def gate_up(self) -> torch.Tensor:
        """``[W_gate | W_up]``, ``(hidden, 2 · mlp)``: the transposed view of the stored weight."""
        return self.w_gate_up.t()

    @property
    def ops(self) -> Ops:
        """The operations the layer runs (settable by name or :class:`Ops`)."""
        return self._ops

    @ops.setter
    def ops(self, ops) -> None:
        if isinstance(ops, str):
            if ops not in _OPS:
                raise ValueError(f"ops must be one of {sorted(_OPS)}, got {ops!r}")
            ops = _OPS[ops]
        if not isinstance(ops, Ops):
            raise TypeError(f"ops must be a name or an Ops table, got {type(ops).__name__}")
        self._ops = ops

    def _project_qkv(self, x, cos, sin):
        c, ops = self.config, self.ops
        b, s, _ = x.shape
        with SECTIONS("attn_norm"):
            h = ops.rms_norm(x, self.attn_norm, c.eps)
        with SECTIONS("qkv_proj"):
            qkv = ops.linear(h.reshape(b * s, c.hidden), self.w_qkv).view(b, s, -1, c.head_dim)
        q, k, v = qkv.split([c.n_heads, c.n_kv_heads, c.n_kv_heads], dim=2)
        with SECTIONS("rope"):
            q, k = ops.rope(q.transpose(1, 2), k.transpose(1, 2), cos, sin)
        return q, k, v.transpose(1, 2)

    def _finish(self, x, o):
        c, ops = self.config, self.ops
        b, s, _ = x.shape
        with SECTIONS("o_proj"):
            o = o.transpose(1, 2).reshape(b * s, c.n_heads * c.head_dim)
            x = x + ops.linear(o, self.w_o).view(b, s, c.hidden)
        with SECTIONS("mlp_norm"):
            h = ops.rms_norm(x, self.mlp_norm, c.eps).reshape(b * s, c.hidden)
        with SECTIONS("gate_up"):
            g = ops.swiglu(h, self.gate_up)
        with SECTIONS("down"):
            return x + ops.linear(g, self.w_down).view(b, s, c.hidden)

    def _check(self, x, cos, sin) -> None:
        c = self.config
        if not isinstance(x, torch.Tensor) or x.dim() != 3 or x.shape[-1] != c.hidden:
            got = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
            raise ValueError(f"x must be (B, S, {c.hidden}), got {got}")
        want = (x.shape[0], x.shape[1], c.head_dim)
        for name, t in (("cos", cos), ("sin", sin)):
            if not isinstance(t, torch.Tensor) or tuple(t.shape) != want:
                got = tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
                raise ValueError(f"{name} must be {want} (B, S, head_dim), got {got}")

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        """Prefill: the layer over whole sequences, attention causal.

        Args:
            x: ``(B, S, hidden)`` in the weights' dtype.
            cos, sin: ``(B, S, head_dim)`` float32, the rotary tables at each token's
                position (:func:`rotary_tables`).

        Returns:
            ``(B, S, hidden)``; differentiable with respect to ``x`` and the weights.

        Raises:
            ValueError: a shape does not match the config.
        """
        self._check(x, cos, sin)
        q, k, v = self._project_qkv(x, cos, sin)
        with SECTIONS("attention"):
            o = self.ops.attention(q, k, v)
        return self._finish(x, o)

    def decode(self, x, cos, sin, k_cache, v_cache, cache_seqlens) -> torch.Tensor:
        """One decode step: ``S_q`` new tokens per sequence against the KV cache.

        Writes the new tokens' keys and values into the caches at positions
        ``cache_seqlens[b] .. cache_seqlens[b] + S_q - 1`` (no host synchronisation:
        the step can be captured in a CUDA graph), then attends over
        ``cache_seqlens[b] + S_q`` keys. ``cache_seqlens`` itself is not changed.

        Args:
            x: ``(B, S_q, hidden)``.
            cos, sin: ``(B, S_q, head_dim)`` float32 at the new tokens' positions.
            k_cache, v_cache: ``(B, H_kv, S_max, head_dim)`` in the weights' dtype.
            cache_seqlens: ``(B,)`` int32, the tokens already cached per sequence.

        Returns:
            ``(B, S_q, hidden)``.

        Raises:
            ValueError: a shape does not match the config.
        """
        self._check(x, cos, sin)
        c = self.config
        b, s_q, _ = x.shape
        want = (b, c.n_kv_heads, None, c.head_dim)
        for name, t in (("k_cache", k_cache), ("v_cache", v_cache)):
            if t.dim() != 4 or any(w is not None and w != g for w, g in zip(want, t.shape, strict=True)):
                raise ValueError(f"{name} must be (B, H_kv, S_max, head_dim) = {want}, got {tuple(t.shape)}")
        q, k, v = self._project_qkv(x, cos, sin)
        with SECTIONS("kv_cache_write"):
            positions = cache_seqlens.long()[:, None] + torch.arange(s_q, device=x.device)
            rows = torch.arange(b, device=x.device)[:, None]
            k_cache[rows, :, positions] = k.transpose(1, 2)
            v_cache[rows, :, positions] = v.transpose(1, 2)
        with SECTIONS("attention"):
            o = self.ops.attention_decode(q, k_cache, v_cache, cache_seqlens + s_q)
        return self._finish(x, o)


def rotary_tables(positions: torch.Tensor, config: LlamaConfig = LLAMA_3_8B):
    """``(cos, sin)``, each ``positions.shape + (head_dim,)`` float32: the rotary tables
    at ``positions`` (int, any shape, e.g. ``(B, S)``) for ``config``'s head dim and
    base (:func:`gpuperf.kernels.rope_cos_sin`)."""
    from gpuperf.kernels import rope_cos_sin

    return rope_cos_sin(positions, config.head_dim, base=config.rope_base, dtype=torch.float32)
