"""The MoE benchmarks' declarations: their inputs, FLOPs and bytes, and each provider's output
against the benchmark's reference at small shapes (the interpreter, the CPU's F.grouped_mm);
the vendor providers that need a GPU are checked there."""

import pytest
import torch

from gpuperf.bench import catalog
from gpuperf.bench.catalog import moe
from gpuperf.bench.runner import check
from gpuperf.models.moe import MoEConfig, MoELayer
from tests.conftest import DEVICE


def test_registered():
    names = {b.name for b in catalog.ALL}
    assert {"grouped_matmul", "matmul_fp8_blockwise", "moe_layer", "moe_layer_decode"} <= names
    assert catalog.by_name("grouped_matmul") is moe.GROUPED_MATMUL


def test_flops_and_bytes():
    g = moe.GROUPED_MATMUL
    # DeepSeek-V3's up projection: 4096 tokens x 8 experts each, K = 7168, N = 2 x 2048.
    assert g.flops("deepseek-v3 up", routing="skewed") == 2 * 4096 * 8 * 4096 * 7168
    assert g.reduction("mixtral-8x7b down", routing="uniform") == 14336
    f = moe.MATMUL_FP8_BLOCKWISE
    assert f.flops((128, 2112, 7168)) == 2 * 128 * 2112 * 7168
    assert f.bytes((4, 8, 16)) == 4 * 16 + 8 * 16 + 2 * 4 * 8
    # Decode of one token reads its top_k experts' weights (and the shared expert's).
    one = moe.moe_layer_bytes("mixtral-8x7b", 1)
    assert one == pytest.approx(2 * (2 * 3 * 4096 * 14336 + 2 * 4096) + 8 * 4096 * 2)
    # Prefill touches every expert.
    assert moe.moe_layer_bytes("qwen3-30b-a3b", 4096) > 0.99 * 2 * 128 * 3 * 2048 * 768
    assert moe.moe_layer_flops("deepseek-v3", 1) == 2 * (256 * 7168 + 8 * 3 * 7168 * 2048 + 3 * 7168 * 2048)


@pytest.mark.parametrize("routing", moe.MOE_ROUTINGS)
def test_routed_offsets(routing):
    offs = moe.routed_offsets(64, 16, 4, routing, DEVICE)
    sizes = torch.diff(offs, prepend=offs.new_zeros(1))
    assert offs[-1].item() == 64 * 4 and (sizes >= 0).all() and sizes.max() <= 64
    if routing == "skewed":
        assert sizes[0] > sizes[-1]


def test_grouped_providers_match_the_reference(monkeypatch):
    monkeypatch.setitem(moe.MOE_MODELS, "tiny", (32, 24, 5, 2))
    monkeypatch.setattr(moe, "MOE_PREFILL_TOKENS", 20)
    b = moe.GROUPED_MATMUL
    for gemm in ("tiny up", "tiny down"):
        inputs = b.make_inputs(gemm, DEVICE, routing="skewed")
        ref = b.reference(*inputs)
        for provider in b.providers:
            check(provider.key, ref, provider.make(*inputs)(), k=b.reduction(gemm, routing="skewed"))


def test_fp8_operands_have_one_scale():
    a, b, scale_a, scale_b, scale = moe.fp8_blockwise_operands((4, 256, 384), DEVICE)
    assert a.dtype == b.dtype == torch.float8_e4m3fn
    assert scale_a.shape == (4, 3) and scale_b.shape == (2, 3) and scale.shape == ()
    assert torch.equal(scale_b, scale.expand_as(scale_b))
    assert torch.allclose(scale_a, scale_a.flatten()[0].expand_as(scale_a))


def test_fp8_providers_match_the_reference():
    b = moe.MATMUL_FP8_BLOCKWISE
    shape = (16, 128, 256)
    inputs = b.make_inputs(shape, DEVICE)
    ref = b.reference(*inputs)
    providers = (
        b.providers if DEVICE == "cuda" else [p for p in b.providers if p.key != "scaled_mm_blockwise"]
    )
    for provider in providers:
        check(provider.key, ref, provider.make(*inputs)(), k=b.reduction(shape))


@pytest.mark.parametrize("bench", [moe.MOE_LAYER, moe.MOE_LAYER_DECODE], ids=lambda b: b.name)
def test_layer_providers_match_the_reference(bench, monkeypatch):
    config = MoEConfig(hidden=32, ffn=16, experts=8, top_k=2, scoring="sigmoid", n_group=2, shared_ffn=16)
    layer = MoELayer(config, device=DEVICE)
    monkeypatch.setitem(moe._LAYERS, ("deepseek-v3", str(DEVICE)), layer)
    monkeypatch.setattr(moe, "MOE_PREFILL_TOKENS", 24)
    inputs = (
        bench.make_inputs("deepseek-v3", DEVICE) if bench is moe.MOE_LAYER else bench.make_inputs(3, DEVICE)
    )
    ref = bench.reference(*inputs)
    # torch.compile's provider is checked on the GPU (Inductor's CPU path compiles C++ here),
    # and so is the CUDA graph's.
    gpu_only = ("compile", "triton_graph")
    providers = bench.providers if DEVICE == "cuda" else [p for p in bench.providers if p.key not in gpu_only]
    for provider in providers:
        check(provider.key, ref, provider.make(*inputs)(), norm_rtol=bench.norm_rtol)
