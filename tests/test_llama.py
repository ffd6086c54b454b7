"""The Llama decoder layer: PyTorch's and gpuperf's operations agree on the same weights,
in prefill, decode against a KV cache and training; decode equals prefill; bad input is
refused. On the CPU the kernels run in Triton's interpreter on a small config."""

import pytest
import torch

from gpuperf.models import GPUPERF_OPS, LLAMA_3_8B, PYTORCH_OPS, DecoderLayer, LlamaConfig
from gpuperf.models.llama import rotary_tables
from tests.conftest import DEVICE

SMALL = LlamaConfig(hidden=64, n_heads=4, n_kv_heads=2, head_dim=16, mlp=96)
DTYPE = torch.float16


def _layer(config=SMALL, ops="pytorch", dtype=DTYPE):
    return DecoderLayer(config, ops=ops, device=DEVICE, dtype=dtype, seed=1)


def _inputs(config, b, s, start=0, dtype=DTYPE, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(b, s, config.hidden, generator=gen).to(DEVICE, dtype)
    positions = start + torch.arange(s, device=DEVICE).expand(b, s)
    return x, *rotary_tables(positions, config)


def _close(actual, expected, scale=None):
    scale = expected.abs().max().item() if scale is None else scale
    err = (actual.float() - expected.float()).abs().max().item()
    assert err <= 2e-2 * scale, f"max |error| {err:.3g} over {2e-2 * scale:.3g}"


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_prefill_agrees_between_pytorch_and_gpuperf(dtype):
    layer = _layer(dtype=dtype)
    x, cos, sin = _inputs(SMALL, 2, 19, dtype=dtype)
    with torch.no_grad():
        expected = layer(x, cos, sin)
        layer.ops = "gpuperf"
        actual = layer(x, cos, sin)
    assert actual.shape == x.shape and actual.dtype == x.dtype
    _close(actual, expected)


@pytest.mark.parametrize("ops", ["pytorch", "gpuperf"])
def test_decode_from_an_empty_cache_equals_prefill_then_extends_it(ops):
    layer = _layer(ops=ops)
    b, s, s_max = 2, 7, 32
    x, cos, sin = _inputs(SMALL, b, s + 1)
    k_cache = torch.zeros(b, SMALL.n_kv_heads, s_max, SMALL.head_dim, device=DEVICE, dtype=DTYPE)
    v_cache = torch.zeros_like(k_cache)
    lengths = torch.zeros(b, dtype=torch.int32, device=DEVICE)
    with torch.no_grad():
        full = layer(x, cos, sin)
        first = layer.decode(x[:, :s], cos[:, :s], sin[:, :s], k_cache, v_cache, lengths)
        step = layer.decode(x[:, s:], cos[:, s:], sin[:, s:], k_cache, v_cache, lengths + s)
    _close(first, full[:, :s])
    _close(step, full[:, s:])
    assert k_cache[:, :, s + 1 :].abs().max() == 0  # nothing written past the new token


def test_decode_agrees_between_pytorch_and_gpuperf_with_uneven_lengths():
    b, s_q, s_max = 3, 2, 40
    lengths = torch.tensor([5, 17, 31], dtype=torch.int32, device=DEVICE)
    gen = torch.Generator().manual_seed(3)
    cache = torch.randn(2, b, SMALL.n_kv_heads, s_max, SMALL.head_dim, generator=gen).to(DEVICE, DTYPE)
    x, _, _ = _inputs(SMALL, b, s_q)
    positions = lengths.long()[:, None] + torch.arange(s_q, device=DEVICE)
    cos, sin = rotary_tables(positions, SMALL)
    out = {}
    for ops in ("pytorch", "gpuperf"):
        k_cache, v_cache = cache[0].clone(), cache[1].clone()
        with torch.no_grad():
            out[ops] = _layer(ops=ops).decode(x, cos, sin, k_cache, v_cache, lengths)
    _close(out["gpuperf"], out["pytorch"])


def test_training_gradients_agree():
    x, cos, sin = _inputs(SMALL, 2, 9)
    grads = {}
    for ops in ("pytorch", "gpuperf"):
        layer = _layer(ops=ops)
        xs = x.clone().requires_grad_()
        layer(xs, cos, sin).float().square().mean().backward()
        grads[ops] = {"x": xs.grad, **{n: p.grad for n, p in layer.named_parameters()}}
    for name, expected in grads["pytorch"].items():
        _close(grads["gpuperf"][name], expected)


def test_weights_are_seeded_and_shared_across_ops():
    a, b = _layer(), _layer(ops=GPUPERF_OPS)
    for (name, p), q in zip(a.named_parameters(), b.parameters(), strict=True):
        assert torch.equal(p, q), name
    assert (
        a.w_qkv.shape == (SMALL.hidden, SMALL.qkv_width)
        and a.w_gate_up.shape == (192, 64)
        and a.gate_up.shape == (64, 192)
    )
    assert a.ops is PYTORCH_OPS and b.ops is GPUPERF_OPS


def test_llama_3_8b_shapes():
    c = LLAMA_3_8B
    assert (c.hidden, c.n_heads, c.n_kv_heads, c.head_dim, c.mlp) == (4096, 32, 8, 128, 14336)
    assert c.qkv_width == 6144


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"hidden": 0}, ValueError, "hidden must be positive"),
        ({"n_heads": 4.0}, TypeError, "n_heads must be an int"),
        ({"n_heads": 6, "n_kv_heads": 4}, ValueError, "multiple of n_kv_heads"),
        ({"head_dim": 15}, ValueError, "head_dim must be even"),
        ({"eps": -1.0}, ValueError, "eps must be positive"),
        ({"rope_base": "big"}, TypeError, "rope_base must be a number"),
    ],
)
def test_bad_configs_are_refused(kwargs, error, match):
    with pytest.raises(error, match=match):
        LlamaConfig(**kwargs)


def test_bad_layer_arguments_are_refused():
    with pytest.raises(ValueError, match="ops must be one of"):
        _layer(ops="tensorrt")
    with pytest.raises(TypeError, match="ops must be a name or an Ops"):
        _layer(ops=3)
    with pytest.raises(TypeError, match="config must be a LlamaConfig"):
        DecoderLayer({"hidden": 64})
    layer = _layer()
    x, cos, sin = _inputs(SMALL, 1, 4)
    with pytest.raises(ValueError, match=r"x must be \(B, S, 64\)"):
        layer(x[..., :32], cos, sin)
    with pytest.raises(ValueError, match="cos must be"):
        layer(x, cos[:, :3], sin)
    cache = torch.zeros(1, 3, 8, SMALL.head_dim, device=DEVICE, dtype=DTYPE)
    with pytest.raises(ValueError, match="k_cache must be"):
        layer.decode(x, cos, sin, cache, cache, torch.zeros(1, dtype=torch.int32, device=DEVICE))


@pytest.mark.gpu
def test_llama_3_8b_layer_agrees_on_the_gpu():
    layer = DecoderLayer(LLAMA_3_8B, device="cuda", seed=0)
    x, cos, sin = _inputs(LLAMA_3_8B, 2, 256, dtype=torch.bfloat16)
    with torch.no_grad():
        expected = layer(x, cos, sin)
        layer.ops = "gpuperf"
        actual = layer(x, cos, sin)
    _close(actual, expected)
