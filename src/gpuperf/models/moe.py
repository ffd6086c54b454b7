"""A Mixture-of-Experts feed-forward block (Mixtral, Qwen3-MoE, DeepSeek-V3) whose
operations are gpuperf's kernels or PyTorch's, on one set of weights.

Each token goes to ``top_k`` of ``E`` experts, each a SwiGLU MLP, and the experts' outputs
come back weighted by the router::

    weights, experts = router(x)                       # (T, k) each
    x_sorted, order, rows, offs = permute(x, experts)  # T * k rows grouped by expert
    h = silu(g) * u,  [g | u] = grouped_matmul(x_sorted, [W_gate | W_up], offs)
    y = grouped_matmul(h, W_down, offs)
    out[t] = sum_j weights[t, j] * y[rows[t * k + j]]  (+ the shared expert's SwiGLU of x)

No loop over experts: one grouped matmul runs every expert's rows. With ``ops="gpuperf"``
nothing synchronizes with the host (the offsets ``offs`` stay on the device); PyTorch's
``bincount`` reads back to the host, so the ``"torch"`` layer synchronizes once a call and
cannot be captured in a CUDA graph. Two sets of operations
(:class:`MoELayer`'s ``ops``):

* ``"gpuperf"``: :func:`~gpuperf.kernels.moe_permute.moe_permute` (a counting sort and a
  gather), :func:`~gpuperf.kernels.grouped_matmul`,
  :func:`~gpuperf.kernels.moe_activation.silu_mul`,
  :func:`~gpuperf.kernels.moe_permute.moe_combine`; the shared expert through
  :func:`~gpuperf.kernels.swiglu` and :func:`~gpuperf.kernels.matmul`.
* ``"torch"``: the same layer as PyTorch writes it without a loop: ``argsort`` and
  ``bincount`` (:func:`gpuperf.reference.sort_by_expert`), an indexing gather,
  ``torch.nn.functional.grouped_mm``, ``F.silu(g) * u``, and a weighted ``index_add_``.

The router is :func:`gpuperf.reference.moe_router_ref` in both (softmax top-k, or
DeepSeek-V3's sigmoid with group-limited, normalized top-k and a routed scaling factor):
a few small kernels either way. :meth:`MoELayer.reference` is the loop over experts of
:func:`gpuperf.reference.moe_ref` on the same weights.

The layer runs forward only: :func:`~gpuperf.kernels.grouped_matmul` has a backward, but
the permutation, the activation and the combine kernels do not. Block-scaled FP8 expert
weights (DeepSeek-V3's 128 x 128 blocks) are not implemented: the block-scaled FP8
kernel (:func:`~gpuperf.kernels.matmul_fp8_blockwise`) multiplies one matrix, not a group,
and :meth:`MoELayer.quantized_experts` raises.

Sources: Jiang et al., "Mixtral of Experts", arXiv:2401.04088; DeepSeek-AI, "DeepSeek-V3
Technical Report", arXiv:2412.19437, 2.1.2; Hugging Face transformers'
``MixtralSparseMoeBlock`` and ``DeepseekV3MoE``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from gpuperf import reference
from gpuperf.kernels import grouped_matmul, matmul, swiglu
from gpuperf.kernels.moe_activation import silu_mul
from gpuperf.kernels.moe_permute import moe_combine, moe_permute
from gpuperf.models.sections import Sections

#: The two sets of operations a :class:`MoELayer` runs (its ``ops``): gpuperf's kernels, or
#: PyTorch's ops without a loop over experts.
OPS = ("gpuperf", "torch")

#: The parts of the block's forward, in order, as a profiler sees them (``moe.<part>``
#: ranges inside ``SECTIONS.recording()``; :mod:`gpuperf.models.sections`).
SECTIONS = Sections("moe.", ("router", "permute", "gate_up", "activation", "down", "combine", "shared"))


@dataclass(frozen=True)
class MoEConfig:
    """The shapes and routing of one MoE block.

    Attributes:
        hidden: the model width ``d``.
        ffn: each expert's inner width.
        experts: ``E``, the routed experts.
        top_k: experts per token.
        scoring: ``"softmax"`` (Mixtral, Qwen3-MoE) or ``"sigmoid"`` (DeepSeek-V3).
        normalize: divide the chosen experts' weights by their sum.
        n_group, topk_group: DeepSeek-V3's group-limited routing (experts chosen within
            the ``topk_group`` best of ``n_group`` groups); 1 and 1 for none.
        scaling: the routed scaling factor (DeepSeek-V3: 2.5).
        shared_ffn: the shared expert's inner width, 0 for none.

    Raises:
        ValueError: a size below 1 (``shared_ffn`` below 0), ``top_k`` above ``experts``,
            an unknown ``scoring``, or ``n_group`` not dividing ``experts``.
    """

    hidden: int
    ffn: int
    experts: int
    top_k: int
    scoring: str = "softmax"
    normalize: bool = True
    n_group: int = 1
    topk_group: int = 1
    scaling: float = 1.0
    shared_ffn: int = 0

    def __post_init__(self):
        for name in ("hidden", "ffn", "experts", "top_k", "n_group", "topk_group"):
            value = getattr(self, name)
            if type(value) is not int or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if self.top_k > self.experts:
            raise ValueError(f"top_k ({self.top_k}) must not exceed experts ({self.experts})")
        if self.scoring not in ("softmax", "sigmoid"):
            raise ValueError(f"scoring must be 'softmax' or 'sigmoid', got {self.scoring!r}")
        if self.experts % self.n_group or self.topk_group > self.n_group:
            raise ValueError(f"n_group ({self.n_group}) must divide experts and be >= topk_group")
        if type(self.shared_ffn) is not int or self.shared_ffn < 0:
            raise ValueError(f"shared_ffn must be an int >= 0, got {self.shared_ffn!r}")

    def router_options(self, bias: torch.Tensor | None) -> dict:
        """The keyword arguments of :func:`gpuperf.reference.moe_router_ref` for this routing."""
        return {
            "scoring": self.scoring,
            "normalize": self.normalize,
            "bias": bias,
            "n_group": self.n_group,
            "topk_group": self.topk_group,
            "scaling": self.scaling,
        }


#: Mixtral-8x7B's MoE block (Jiang et al., arXiv:2401.04088).
MIXTRAL_8X7B = MoEConfig(hidden=4096, ffn=14336, experts=8, top_k=2)
#: Qwen3-30B-A3B's (Qwen3 Technical Report, arXiv:2505.09388; ``norm_topk_prob`` true).
QWEN3_30B_A3B = MoEConfig(hidden=2048, ffn=768, experts=128, top_k=8)
#: DeepSeek-V3's (arXiv:2412.19437, 4.2: one shared and 256 routed experts of width 2048,
#: 8 per token sent to at most 4 nodes; the released config.json: n_group 8, topk_group 4,
#: routed_scaling_factor 2.5).
DEEPSEEK_V3 = MoEConfig(
    hidden=7168,
    ffn=2048,
    experts=256,
    top_k=8,
    scoring="sigmoid",
    n_group=8,
    topk_group=4,
    scaling=2.5,
    shared_ffn=2048,
)


class MoELayer(nn.Module):
    """A MoE feed-forward block (see the module's text) with random weights.

    Args:
        config: the shapes and routing (:class:`MoEConfig`).
        ops: ``"gpuperf"`` or ``"torch"`` (see the module's text); settable later.
        dtype: the weights' and activations' dtype (bfloat16 or float16 for ``"gpuperf"``).
            The router's weight is float32 with sigmoid scoring (as DeepSeek-V3 keeps it),
            ``dtype`` otherwise (as Mixtral).
        device: where the weights live.
        seed: the weights' seed.

    Weights: ``router_weight`` ``(E, d)``; ``w_gate_up`` ``(E, d, 2 ffn)`` row-major, each
    expert's ``[W_gate | W_up]`` (one grouped matmul for both); ``w_down`` ``(E, ffn, d)``;
    ``bias`` ``(E,)`` (sigmoid scoring's load-balancing bias, zeros); with a shared expert,
    ``shared_gate_up`` ``(d, 2 shared_ffn)`` and ``shared_down`` ``(shared_ffn, d)``. Each
    drawn from a normal distribution scaled by ``1 / sqrt(fan-in)``.

    Raises:
        ValueError: ``ops`` not one of :data:`OPS`.
    """

    def __init__(
        self,
        config: MoEConfig,
        *,
        ops: str = "gpuperf",
        dtype: torch.dtype = torch.bfloat16,
        device: torch.device | str | None = None,
        seed: int = 0,
    ):
        super().__init__()
        self.config = config
        self.ops = ops
        g = torch.Generator(device=device if device is not None else "cpu").manual_seed(seed)
        c = config

        def weight(*shape, fan_in, dt=dtype):
            # Drawn where it lives, in its dtype: DeepSeek-V3's experts are 11 G elements.
            w = torch.randn(shape, generator=g, device=device, dtype=dt).mul_(1 / math.sqrt(fan_in))
            return nn.Parameter(w, requires_grad=False)

        router_dtype = torch.float32 if c.scoring == "sigmoid" else dtype
        self.router_weight = weight(c.experts, c.hidden, fan_in=c.hidden, dt=router_dtype)
        self.w_gate_up = weight(c.experts, c.hidden, 2 * c.ffn, fan_in=c.hidden)
        self.w_down = weight(c.experts, c.ffn, c.hidden, fan_in=c.ffn)
        self.bias = (
            nn.Parameter(torch.zeros(c.experts, device=device), requires_grad=False)
            if c.scoring == "sigmoid"
            else None
        )
        if c.shared_ffn:
            self.shared_gate_up = weight(c.hidden, 2 * c.shared_ffn, fan_in=c.hidden)
            self.shared_down = weight(c.shared_ffn, c.hidden, fan_in=c.shared_ffn)
        else:
            self.shared_gate_up = self.shared_down = None

    @property
    def ops(self) -> str:
        """``"gpuperf"`` or ``"torch"``: the operations :meth:`forward` runs."""
        return self._ops

    @ops.setter
    def ops(self, ops: str) -> None:
        if ops not in OPS:
            raise ValueError(f"ops must be one of {OPS}, got {ops!r}")
        self._ops = ops

    def route(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(weights, experts)`` of ``x`` ``(T, d)``: float32 and int64, ``(T, top_k)`` each
        (:func:`gpuperf.reference.moe_router_ref`)."""
        return reference.moe_router_ref(
            x, self.router_weight, self.config.top_k, **self.config.router_options(self.bias)
        )

    def quantized_experts(self):
        """Block-scaled FP8 expert weights (1 x 128 activation tiles, 128 x 128 weight
        blocks, :func:`~gpuperf.kernels.quantize_fp8_blockwise`) for a grouped block-scaled
        matmul: not built yet.

        Raises:
            NotImplementedError: always, until the grouped block-scaled kernel exists.
        """
        raise NotImplementedError("block-scaled FP8 experts need the grouped block-scaled matmul")

    def _experts_gpuperf(self, x, weights, experts):
        with SECTIONS("permute"):
            x_sorted, _, rows, offs = moe_permute(x, experts, self.config.experts)
        with SECTIONS("gate_up"):
            gate_up = grouped_matmul(x_sorted, self.w_gate_up, offs)
        with SECTIONS("activation"):
            h = silu_mul(gate_up)
        with SECTIONS("down"):
            y = grouped_matmul(h, self.w_down, offs)
        with SECTIONS("combine"):
            return moe_combine(y, rows, weights)

    def _experts_torch(self, x, weights, experts):
        k, f = self.config.top_k, self.config.ffn
        with SECTIONS("permute"):
            order, offs = reference.sort_by_expert(experts, self.config.experts)
            tokens = order // k
            x_sorted = x[tokens]
        with SECTIONS("gate_up"):
            gate_up = F.grouped_mm(x_sorted, self.w_gate_up, offs=offs)
        with SECTIONS("activation"):
            h = F.silu(gate_up[:, :f]) * gate_up[:, f:]
        with SECTIONS("down"):
            y = F.grouped_mm(h, self.w_down, offs=offs)
        with SECTIONS("combine"):
            out = torch.zeros(x.shape, dtype=torch.float32, device=x.device)
            out.index_add_(0, tokens, y.float() * weights.reshape(-1)[order, None])
            return out.to(x.dtype)

    def _shared(self, x):
        if self.ops == "gpuperf":
            return matmul(swiglu(x, self.shared_gate_up), self.shared_down)
        s = self.config.shared_ffn
        gate_up = x @ self.shared_gate_up
        return (F.silu(gate_up[:, :s]) * gate_up[:, s:]) @ self.shared_down

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The block on ``x`` ``(..., d)`` of the weights' dtype and device; returns
        ``(..., d)``, the routed experts' weighted sum plus the shared expert's output.

        Raises:
            ValueError: ``x``'s last dimension is not ``hidden``, or its dtype is not the
                weights'.
        """
        c = self.config
        if x.shape[-1] != c.hidden or x.dtype != self.w_down.dtype:
            raise ValueError(
                f"x must be (..., {c.hidden}) {self.w_down.dtype}, got {tuple(x.shape)} {x.dtype}"
            )
        shape = x.shape
        x = x.reshape(-1, c.hidden)
        with SECTIONS("router"):
            weights, experts = self.route(x)
        run = self._experts_gpuperf if self.ops == "gpuperf" else self._experts_torch
        out = run(x, weights, experts)
        if self.shared_down is not None:
            with SECTIONS("shared"):
                out = out + self._shared(x)
        return out.reshape(shape)

    def reference(self, x: torch.Tensor) -> torch.Tensor:
        """:func:`gpuperf.reference.moe_ref` on this layer's weights: the loop over experts a
        PyTorch model writes (in ``x``'s dtype; pass float64 ``x`` for a float64 answer,
        the weights are cast to it)."""
        c, dt = self.config, x.dtype
        shared = None
        if self.shared_down is not None:
            s = c.shared_ffn
            sgu = self.shared_gate_up.to(dt)
            shared = (sgu[:, :s], sgu[:, s:], self.shared_down.to(dt))
        gate_up = self.w_gate_up.to(dt)
        return reference.moe_ref(
            x,
            self.router_weight,
            gate_up[..., : c.ffn],
            gate_up[..., c.ffn :],
            self.w_down.to(dt),
            c.top_k,
            shared=shared,
            **c.router_options(self.bias),
        )


__all__ = ["DEEPSEEK_V3", "MIXTRAL_8X7B", "OPS", "QWEN3_30B_A3B", "SECTIONS", "MoEConfig", "MoELayer"]
