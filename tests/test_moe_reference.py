"""The Mixture-of-Experts references: the router, the per-expert loop of the block, the
token order of a grouped matmul; checked against a dense formula and, where Hugging Face
transformers is installed, against its Mixtral, Qwen3-MoE and DeepSeek-V3 blocks on the
same weights."""

import pytest
import torch

from gpuperf.reference import grouped_matmul_ref, moe_ref, moe_router_ref, sort_by_expert
from gpuperf.testing import assert_close
from tests._params import randn
from tests.conftest import DEVICE


def weights(e, d, f, seed=0, dtype=torch.float32, scale=0.2):
    return (
        randn((e, d), dtype, seed) * scale,  # router
        randn((e, d, f), dtype, seed + 1) * scale,
        randn((e, d, f), dtype, seed + 2) * scale,
        randn((e, f, d), dtype, seed + 3) * scale,
    )


def dense_moe(x, router, w_gate, w_up, w_down, top_k, shared=None, **options):
    """Every expert on every token in float64, weighted by the router's weight where the
    token chose the expert and 0 elsewhere: no gather, no loop over tokens."""
    route_weights, experts = moe_router_ref(x, router, top_k, **options)
    x = x.double()
    h = torch.nn.functional.silu(torch.einsum("td,edf->etf", x, w_gate.double()))
    h = h * torch.einsum("td,edf->etf", x, w_up.double())
    y = torch.einsum("etf,efd->etd", h, w_down.double())  # (E, T, d)
    gate = torch.zeros(x.shape[0], w_gate.shape[0], dtype=torch.float64, device=x.device)
    gate.scatter_(1, experts, route_weights.double())
    out = torch.einsum("te,etd->td", gate, y)
    if shared is not None:
        s_gate, s_up, s_down = (w.double() for w in shared)
        out = out + (torch.nn.functional.silu(x @ s_gate) * (x @ s_up)) @ s_down
    return out


@pytest.mark.parametrize(
    "options",
    [
        pytest.param({}, id="softmax-normalized"),
        pytest.param({"normalize": False}, id="softmax"),
        pytest.param(
            {"scoring": "sigmoid", "n_group": 4, "topk_group": 2, "scaling": 2.5}, id="sigmoid-grouped"
        ),
    ],
)
@pytest.mark.parametrize("shared", [False, True], ids=["routed", "shared-expert"])
def test_the_loop_over_experts_is_the_dense_formula(options, shared):
    e, d, f, top_k = 8, 24, 40, 3
    router, w_gate, w_up, w_down = weights(e, d, f, seed=1)
    common = (
        randn((d, f), torch.float32, 9),
        randn((d, f), torch.float32, 10),
        randn((f, d), torch.float32, 11),
    )
    shared_weights = tuple(w * 0.2 for w in common) if shared else None
    x = randn((2, 11, d), torch.float32, 5)
    out = moe_ref(x, router, w_gate, w_up, w_down, top_k, shared=shared_weights, **options)
    assert out.shape == x.shape and out.dtype == x.dtype
    ref = dense_moe(x.reshape(-1, d), router, w_gate, w_up, w_down, top_k, shared_weights, **options)
    assert_close("moe_ref", ref.reshape(x.shape), out, k=d * f)


def test_softmax_router_picks_the_largest_probabilities_and_normalizes_them():
    x, router = randn((7, 16), torch.float32, 1), randn((6, 16), torch.float32, 2)
    route_weights, experts = moe_router_ref(x, router, 2)
    probs = torch.softmax(x @ router.T, dim=-1)
    assert torch.equal(experts, probs.topk(2).indices)
    torch.testing.assert_close(route_weights.sum(-1), torch.ones(7, device=DEVICE))
    unnormalized, _ = moe_router_ref(x, router, 2, normalize=False)
    torch.testing.assert_close(unnormalized, probs.topk(2).values)


def test_sigmoid_router_bias_moves_the_choice_not_the_weights():
    x, router = randn((5, 16), torch.float32, 3), randn((8, 16), torch.float32, 4)
    bias = torch.zeros(8, device=DEVICE)
    bias[3] = 100.0  # every token now chooses expert 3
    route_weights, experts = moe_router_ref(x, router, 2, scoring="sigmoid", bias=bias, normalize=False)
    assert (experts == 3).any(dim=-1).all()
    scores = torch.sigmoid(x @ router.T)
    torch.testing.assert_close(route_weights, scores.gather(1, experts))


def test_group_limited_routing_chooses_within_the_best_groups():
    x, router = randn((9, 16), torch.float32, 5), randn((16, 16), torch.float32, 6)
    _, experts = moe_router_ref(x, router, 4, scoring="sigmoid", n_group=4, topk_group=2)
    scores = torch.sigmoid(x @ router.T).view(9, 4, 4)
    best_groups = scores.topk(2, dim=-1).values.sum(-1).topk(2, dim=-1).indices  # (T, 2)
    chosen_groups = experts // 4
    assert all(set(c.tolist()) <= set(g.tolist()) for c, g in zip(chosen_groups, best_groups, strict=True))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"scoring": "relu"}, "scoring must be 'softmax' or 'sigmoid'"),
        ({"n_group": 3}, "n_group must divide"),
    ],
)
def test_router_rejects(kwargs, match):
    with pytest.raises(ValueError, match=match):
        moe_router_ref(randn((2, 8), torch.float32), randn((8, 8), torch.float32), 2, **kwargs)


def test_sort_by_expert_gives_a_grouped_matmuls_rows_and_offsets():
    experts = torch.tensor([[3, 0], [0, 1], [3, 1], [0, 3]], device=DEVICE)
    order, offs = sort_by_expert(experts, 5)
    assert offs.dtype == torch.int32 and offs.tolist() == [3, 5, 5, 8, 8]  # expert 2 and 4: none
    assert experts.reshape(-1)[order].tolist() == [0, 0, 0, 1, 1, 3, 3, 3]
    assert (order // 2).tolist() == [0, 1, 3, 1, 2, 0, 2, 3]  # tokens in order within an expert
    # Rows sorted by expert, one grouped product: each token's rows hold its experts' outputs.
    x, w = randn((4, 8), torch.float32, 1), randn((5, 8, 6), torch.float32, 2)
    out = grouped_matmul_ref(x[order // 2], w, offs)
    for row, flat in enumerate(order.tolist()):
        token, expert = flat // 2, experts.reshape(-1)[flat]
        torch.testing.assert_close(out[row].float(), x[token] @ w[expert])


# --- Hugging Face transformers, on the same weights ---------------------------------------


def _hf_experts(block, f):
    """Our ``(w_gate, w_up, w_down)`` from transformers' fused expert weights: ``gate_up_proj``
    ``(E, 2f, d)`` (gate rows first) and ``down_proj`` ``(E, d, f)``, as ``nn.Linear`` keeps them."""
    gate_up, down = block.experts.gate_up_proj, block.experts.down_proj
    return gate_up[:, :f].transpose(1, 2), gate_up[:, f:].transpose(1, 2), down.transpose(1, 2)


def _init(block, seed):
    torch.manual_seed(seed)
    for p in block.parameters():
        torch.nn.init.normal_(p, std=0.2)
    return block.to(DEVICE)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_matches_transformers_mixtral(dtype):
    transformers = pytest.importorskip("transformers", reason="Hugging Face transformers is not installed")
    from transformers.models.mixtral.modeling_mixtral import MixtralSparseMoeBlock

    d, f, e, top_k = 32, 48, 8, 2
    config = transformers.MixtralConfig(
        hidden_size=d, intermediate_size=f, num_local_experts=e, num_experts_per_tok=top_k
    )
    block = _init(MixtralSparseMoeBlock(config), seed=1).to(dtype).eval()
    x = randn((2, 9, d), dtype, 2)
    with torch.no_grad():
        expected = block(x)
        out = moe_ref(x, block.gate.weight, *_hf_experts(block, f), top_k)
    if dtype == torch.float32:
        torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)
    else:
        assert_close("moe_ref vs Mixtral", expected, out, k=f)


@pytest.mark.parametrize("normalize", [False, True])
def test_matches_transformers_qwen3_moe(normalize):
    transformers = pytest.importorskip("transformers", reason="Hugging Face transformers is not installed")
    from transformers.models.qwen3_moe.modeling_qwen3_moe import Qwen3MoeSparseMoeBlock

    d, f, e, top_k = 32, 24, 16, 4
    config = transformers.Qwen3MoeConfig(
        hidden_size=d,
        moe_intermediate_size=f,
        num_experts=e,
        num_experts_per_tok=top_k,
        norm_topk_prob=normalize,
    )
    block = _init(Qwen3MoeSparseMoeBlock(config), seed=3).eval()
    x = randn((2, 9, d), torch.float32, 4)
    with torch.no_grad():
        expected = block(x)
        out = moe_ref(x, block.gate.weight, *_hf_experts(block, f), top_k, normalize=normalize)
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)


def test_matches_transformers_deepseek_v3():
    transformers = pytest.importorskip("transformers", reason="Hugging Face transformers is not installed")
    from transformers.models.deepseek_v3.modeling_deepseek_v3 import DeepseekV3MoE

    d, f, e, top_k = 32, 24, 16, 4
    config = transformers.DeepseekV3Config(
        hidden_size=d,
        moe_intermediate_size=f,
        n_routed_experts=e,
        num_experts_per_tok=top_k,
        n_group=4,
        topk_group=2,
        n_shared_experts=1,
        routed_scaling_factor=2.5,
        norm_topk_prob=True,
    )
    block = _init(DeepseekV3MoE(config), seed=5).eval()
    with torch.no_grad():
        block.gate.e_score_correction_bias.normal_(std=0.1)
    x = randn((2, 9, d), torch.float32, 6)
    shared = block.shared_experts
    with torch.no_grad():
        expected = block(x)
        out = moe_ref(
            x,
            block.gate.weight,
            *_hf_experts(block, f),
            top_k,
            scoring="sigmoid",
            bias=block.gate.e_score_correction_bias,
            n_group=4,
            topk_group=2,
            scaling=2.5,
            shared=(shared.gate_proj.weight.T, shared.up_proj.weight.T, shared.down_proj.weight.T),
        )
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)
