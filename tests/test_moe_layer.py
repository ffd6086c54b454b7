"""The MoE block: gpuperf's kernels and the PyTorch ops (F.grouped_mm) on the same weights
against the loop over experts of gpuperf.reference.moe_ref in float64, with softmax and
DeepSeek-V3's sigmoid routing and a shared expert; the SwiGLU gate kernel; bad input."""

import pytest
import torch
import torch.nn.functional as F

from gpuperf.kernels.moe_activation import silu_mul
from gpuperf.models.moe import DEEPSEEK_V3, MIXTRAL_8X7B, QWEN3_30B_A3B, MoEConfig, MoELayer
from tests.conftest import DEVICE

SMALL = {
    "softmax": MoEConfig(hidden=32, ffn=16, experts=6, top_k=2),
    "sigmoid-grouped-shared": MoEConfig(
        hidden=32,
        ffn=16,
        experts=8,
        top_k=3,
        scoring="sigmoid",
        n_group=4,
        topk_group=2,
        scaling=2.5,
        shared_ffn=16,
    ),
}


@pytest.mark.parametrize("ops", ["gpuperf", "torch"])
@pytest.mark.parametrize("name", list(SMALL))
def test_layer_matches_the_reference(name, ops):
    layer = MoELayer(SMALL[name], ops=ops, device=DEVICE)
    x = torch.randn(2, 9, 32, device=DEVICE).to(torch.bfloat16)
    out = layer(x)
    ref = layer.reference(x.double())
    assert out.shape == x.shape and out.dtype == torch.bfloat16
    torch.testing.assert_close(out.double(), ref, atol=3e-2, rtol=3e-2)


def test_decode_one_token():
    layer = MoELayer(SMALL["softmax"], device=DEVICE)
    x = torch.randn(1, 32, device=DEVICE).to(torch.bfloat16)
    torch.testing.assert_close(layer(x).double(), layer.reference(x.double()), atol=3e-2, rtol=3e-2)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_silu_mul(dtype):
    gu = torch.randn(13, 2 * 40, device=DEVICE).to(dtype)
    ref = F.silu(gu[:, :40].double()) * gu[:, 40:].double()
    tol = 1e-5 if dtype == torch.float32 else 1e-2
    torch.testing.assert_close(silu_mul(gu).double(), ref, atol=tol, rtol=tol)
    strided = torch.randn(80, 13, device=DEVICE).to(dtype).t()
    ref = F.silu(strided[:, :40].double()) * strided[:, 40:].double()
    torch.testing.assert_close(silu_mul(strided).double(), ref, atol=tol, rtol=tol)


def test_bad_input():
    with pytest.raises(ValueError, match="gate_up"):
        silu_mul(torch.randn(3, 5, device=DEVICE))
    with pytest.raises(ValueError, match="top_k"):
        MoEConfig(hidden=8, ffn=8, experts=2, top_k=3)
    with pytest.raises(ValueError, match="scoring"):
        MoEConfig(hidden=8, ffn=8, experts=2, top_k=1, scoring="relu")
    with pytest.raises(ValueError, match="n_group"):
        MoEConfig(hidden=8, ffn=8, experts=6, top_k=1, n_group=4)
    layer = MoELayer(SMALL["softmax"], device=DEVICE)
    with pytest.raises(ValueError, match="ops"):
        layer.ops = "cuda"
    with pytest.raises(ValueError, match="x must be"):
        layer(torch.randn(3, 31, device=DEVICE).to(torch.bfloat16))
    with pytest.raises(NotImplementedError, match="FP8"):
        layer.quantized_experts()


def test_model_configs():
    assert (MIXTRAL_8X7B.experts, MIXTRAL_8X7B.top_k, MIXTRAL_8X7B.ffn) == (8, 2, 14336)
    assert (QWEN3_30B_A3B.experts, QWEN3_30B_A3B.top_k, QWEN3_30B_A3B.hidden) == (128, 8, 2048)
    assert (DEEPSEEK_V3.scoring, DEEPSEEK_V3.shared_ffn, DEEPSEEK_V3.hidden) == ("sigmoid", 2048, 7168)


@pytest.mark.skipif(DEVICE == "cpu", reason="needs a CUDA GPU")
@pytest.mark.parametrize("tokens", [1, 512])
def test_deepseek_v3_block_on_the_gpu(tokens):
    layer = MoELayer(DEEPSEEK_V3, device=DEVICE)
    x = torch.randn(tokens, DEEPSEEK_V3.hidden, device=DEVICE).to(torch.bfloat16)
    # The loop over experts in bfloat16 (a float32 copy of the experts would not fit beside them).
    ref = layer.reference(x).float()
    torch.testing.assert_close(layer(x).float(), ref, atol=5e-2, rtol=5e-2)
    layer.ops = "torch"
    torch.testing.assert_close(layer(x).float(), ref, atol=5e-2, rtol=5e-2)
