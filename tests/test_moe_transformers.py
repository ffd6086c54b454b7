"""The MoE block against Hugging Face transformers' own: Mixtral's ``MixtralSparseMoeBlock``,
Qwen3-MoE's ``Qwen3MoeSparseMoeBlock`` and DeepSeek-V3's ``DeepseekV3MoE``, on the same
weights (small shapes, the models' routing).

transformers is not a dependency of the package: ``nox -s crosscheck`` installs the pinned
version and runs this file; elsewhere it is skipped.
"""

import pytest
import torch

from gpuperf.models.moe import MoEConfig, MoELayer
from tests.conftest import DEVICE

transformers = pytest.importorskip("transformers", reason="transformers is not installed")

#: (our config, the transformers block's config class, its module, its block class, its
#: config's keyword arguments) of each model, at small sizes with the model's routing.
MODELS = {
    "mixtral": (
        MoEConfig(hidden=64, ffn=96, experts=8, top_k=2),
        "MixtralConfig",
        "mixtral.modeling_mixtral",
        "MixtralSparseMoeBlock",
        {"hidden_size": 64, "intermediate_size": 96, "num_local_experts": 8, "num_experts_per_tok": 2},
    ),
    "qwen3_moe": (
        MoEConfig(hidden=64, ffn=32, experts=16, top_k=4),
        "Qwen3MoeConfig",
        "qwen3_moe.modeling_qwen3_moe",
        "Qwen3MoeSparseMoeBlock",
        {
            "hidden_size": 64,
            "moe_intermediate_size": 32,
            "num_experts": 16,
            "num_experts_per_tok": 4,
            "norm_topk_prob": True,
        },
    ),
    "deepseek_v3": (
        MoEConfig(
            hidden=64, ffn=32, experts=16, top_k=4, scoring="sigmoid", n_group=4, topk_group=2,
            scaling=2.5, shared_ffn=32,
        ),
        "DeepseekV3Config",
        "deepseek_v3.modeling_deepseek_v3",
        "DeepseekV3MoE",
        {
            "hidden_size": 64,
            "moe_intermediate_size": 32,
            "n_routed_experts": 16,
            "num_experts_per_tok": 4,
            "n_group": 4,
            "topk_group": 2,
            "routed_scaling_factor": 2.5,
            "n_shared_experts": 1,
            "norm_topk_prob": True,
        },
    ),
}  # fmt: skip


def _blocks(model: str, dtype: torch.dtype):
    """Our layer (random weights, a random load-balancing bias where the routing has one)
    and the transformers block holding the same weights, both in ``dtype`` on the tests'
    device."""
    import importlib

    ours_config, config_name, module, block_name, kwargs = MODELS[model]
    layer = MoELayer(ours_config, dtype=dtype, device=DEVICE, seed=3)
    if layer.bias is not None:
        layer.bias.copy_(torch.randn(layer.bias.shape, generator=torch.Generator().manual_seed(4)) * 0.1)
    config = getattr(transformers, config_name)(**kwargs)
    block = getattr(importlib.import_module(f"transformers.models.{module}"), block_name)(config)
    block = block.to(device=DEVICE, dtype=dtype).eval()
    with torch.no_grad():
        block.gate.weight.copy_(layer.router_weight)
        # transformers keeps each expert's [W_gate; W_up] as (2 ffn, d) and W_down as (d, ffn):
        # the transposes of ours.
        block.experts.gate_up_proj.copy_(layer.w_gate_up.transpose(1, 2))
        block.experts.down_proj.copy_(layer.w_down.transpose(1, 2))
        if layer.bias is not None:
            block.gate.e_score_correction_bias.copy_(layer.bias)
        if layer.shared_down is not None:
            s = ours_config.shared_ffn
            block.shared_experts.gate_proj.weight.copy_(layer.shared_gate_up[:, :s].T)
            block.shared_experts.up_proj.weight.copy_(layer.shared_gate_up[:, s:].T)
            block.shared_experts.down_proj.weight.copy_(layer.shared_down.T)
    if layer.router_weight.dtype == torch.float32:  # (DeepSeek-V3's router stays float32)
        block.gate.float()
    return layer, block


@pytest.mark.parametrize("model", list(MODELS))
def test_the_reference_layer_matches_transformers_in_float32(model):
    layer, block = _blocks(model, torch.float32)
    x = torch.randn(2, 24, layer.config.hidden, generator=torch.Generator().manual_seed(5)).to(DEVICE)
    with torch.no_grad():
        expected = block(x)
        ours = layer.reference(x.reshape(-1, layer.config.hidden)).reshape(x.shape)
    torch.testing.assert_close(ours, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("ops", ["gpuperf", "torch"])
@pytest.mark.parametrize("model", list(MODELS))
def test_the_layer_matches_transformers_in_bfloat16(model, ops):
    layer, block = _blocks(model, torch.bfloat16)
    layer.ops = ops
    x = torch.randn(2, 24, layer.config.hidden, generator=torch.Generator().manual_seed(5))
    x = x.to(device=DEVICE, dtype=torch.bfloat16)
    with torch.no_grad():
        expected = block(x).float()
        ours = layer(x).float()
    # Both round each product to bfloat16 where they store it, in another order: compare
    # norm-wise, as the benchmarks do (a token whose experts tie differs more).
    error = (ours - expected).norm() / expected.norm()
    assert error < 2e-2, f"{model} ({ops}): relative error {error:.3g}"
