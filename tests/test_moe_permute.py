"""Token permutation: the counting sort against ``torch.argsort`` (gpuperf.reference.sort_by_expert)
on uniform, skewed and one-expert routings, chunks crossed, int32 and int64 ids; the combine
against the weighted sum; out-of-range ids; empty inputs and bad input."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuperf.kernels.moe_permute import CHUNK, moe_combine, moe_permute
from gpuperf.reference import sort_by_expert
from tests.conftest import DEVICE


def routing(tokens: int, k: int, experts: int, kind: str, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    if kind == "uniform":  # k distinct experts per token
        ids = torch.stack([torch.randperm(experts, generator=g)[:k] for _ in range(tokens)])
    elif kind == "skewed":  # most pairs on the first two experts
        ids = torch.randint(0, experts, (tokens, k), generator=g)
        ids[torch.rand(tokens, k, generator=g) < 0.7] = torch.randint(0, 2, (1,), generator=g).item()
    else:  # every pair on the last expert
        ids = torch.full((tokens, k), experts - 1)
    return ids.reshape(tokens, k).to(DEVICE)


CASES = [
    pytest.param(37, 2, 8, 48, "uniform", id="mixtral-like"),
    pytest.param(CHUNK // 4 + 3, 8, 64, 16, "uniform", id="chunks-crossed"),
    pytest.param(70, 4, 16, 20, "skewed", id="skewed"),
    pytest.param(33, 3, 5, 8, "one-expert", id="all-on-one-expert"),
    pytest.param(9, 1, 1, 8, "one-expert", id="one-expert"),
    pytest.param(40, 4, 300, 33, "uniform", id="more-experts-than-a-chunk"),
    pytest.param(6, 2, 3, 1, "uniform", id="one-column"),
]


@pytest.mark.parametrize("id_dtype", [torch.int64, torch.int32], ids=["int64", "int32"])
@pytest.mark.parametrize(("tokens", "k", "experts", "d", "kind"), CASES)
def test_permute_matches_stable_sort(tokens, k, experts, d, kind, id_dtype):
    x = torch.randn(tokens, d, device=DEVICE).to(torch.bfloat16)
    ids = routing(tokens, k, experts, kind).to(id_dtype)
    x_sorted, order, rows, offs = moe_permute(x, ids, experts)
    ref_order, ref_offs = sort_by_expert(ids, experts)
    assert order.dtype == rows.dtype == offs.dtype == torch.int32
    assert torch.equal(order.long(), ref_order)
    assert torch.equal(offs, ref_offs)
    assert torch.equal(x_sorted, x[ref_order // k])
    assert torch.equal(order[rows.long()].cpu(), torch.arange(tokens * k, dtype=torch.int32))
    # A second call with the same layout runs the op's plan: the same answer.
    again = moe_permute(x, ids, experts)
    assert all(torch.equal(a, b) for a, b in zip(again, (x_sorted, order, rows, offs), strict=True))


def test_strided_inputs():
    tokens, k, experts, d = 21, 2, 5, 24
    x = torch.randn(d, tokens, device=DEVICE).t()  # column-major tokens
    ids = routing(tokens, k, experts, "uniform").t().contiguous().t()  # column-major ids
    x_sorted, order, _, offs = moe_permute(x, ids, experts)
    ref_order, ref_offs = sort_by_expert(ids, experts)
    assert torch.equal(order.long(), ref_order) and torch.equal(offs, ref_offs)
    assert torch.equal(x_sorted, x[ref_order // k])


@settings(max_examples=12, deadline=None)
@given(
    tokens=st.integers(1, 70),
    k=st.integers(1, 4),
    experts=st.integers(1, 40),
    seed=st.integers(0, 2**16),
)
def test_any_routing_sorts_as_argsort(tokens, k, experts, seed):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, experts, (tokens, k), generator=g).to(DEVICE)  # repeats allowed
    x = torch.randn(tokens, 8, generator=g).to(DEVICE)
    x_sorted, order, rows, offs = moe_permute(x, ids, experts)
    ref_order, ref_offs = sort_by_expert(ids, experts)
    assert torch.equal(order.long(), ref_order) and torch.equal(offs, ref_offs)
    assert torch.equal(x_sorted, x[ref_order // k])
    weights = torch.rand(tokens, k, generator=g).to(DEVICE)
    ref = (weights[..., None] * x[:, None, :]).sum(1)
    torch.testing.assert_close(moe_combine(x_sorted, rows, weights), ref)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_combine_is_the_weighted_sum(dtype):
    tokens, k, experts, d = 45, 3, 6, 40
    x = torch.randn(tokens, d, device=DEVICE).to(dtype)
    ids = routing(tokens, k, experts, "uniform")
    weights = torch.rand(tokens, k, device=DEVICE)
    x_sorted, _, rows, _ = moe_permute(x, ids, experts)
    y = x_sorted * 3  # an "expert" that triples its rows
    out = moe_combine(y, rows, weights)
    ref = (weights.double()[..., None] * (3 * x.double())[:, None, :]).sum(1)
    assert out.dtype == dtype and out.shape == (tokens, d)
    tol = 1e-5 if dtype == torch.float32 else 1e-2
    torch.testing.assert_close(out.double(), ref, atol=tol, rtol=tol)


def test_combine_reads_strided_inputs():
    tokens, k, d = 10, 2, 12
    y = torch.randn(d, tokens * k, device=DEVICE).t()  # column-major rows
    weights = torch.rand(k, tokens, device=DEVICE).t()
    rows = torch.randperm(tokens * k, device=DEVICE).int()
    out = moe_combine(y, rows, weights)
    ref = (weights[..., None] * y[rows.long()].view(tokens, k, d)).sum(1)
    torch.testing.assert_close(out, ref)


def test_out_of_range_ids_go_to_no_expert():
    x = torch.randn(4, 8, device=DEVICE)
    ids = torch.tensor([[0, 1], [5, 1], [0, -1], [1, 0]], device=DEVICE)
    x_sorted, order, rows, offs = moe_permute(x, ids, 2)
    assert offs.tolist() == [3, 6]
    assert rows[[2, 5]].tolist() == [-1, -1]
    valid = ids.reshape(-1).cpu()
    kept = torch.nonzero((valid >= 0) & (valid < 2)).reshape(-1)
    assert sorted(order[:6].tolist()) == kept.tolist()
    out = moe_combine(x_sorted, rows, torch.ones(4, 2, device=DEVICE))
    torch.testing.assert_close(out[1], x[1])  # only its expert-1 row counts


def test_no_tokens():
    x = torch.empty(0, 8, device=DEVICE)
    x_sorted, order, rows, offs = moe_permute(x, torch.empty(0, 2, dtype=torch.int64, device=DEVICE), 4)
    assert x_sorted.shape == (0, 8) and order.numel() == rows.numel() == 0
    assert offs.tolist() == [0, 0, 0, 0]
    assert moe_combine(x_sorted, rows, torch.empty(0, 2, device=DEVICE)).shape == (0, 8)


def test_bad_input():
    x = torch.randn(4, 8, device=DEVICE)
    ids = torch.zeros(4, 2, dtype=torch.int64, device=DEVICE)
    with pytest.raises(TypeError, match="topk_ids"):
        moe_permute(x, ids.float(), 2)
    with pytest.raises(ValueError, match="topk_ids"):
        moe_permute(x, ids.reshape(-1), 2)
    with pytest.raises(ValueError, match="topk_ids"):
        moe_permute(x, ids[:3], 2)
    with pytest.raises(ValueError, match="num_experts"):
        moe_permute(x, ids, 0)
    with pytest.raises(ValueError, match="x must be 2-D"):
        moe_permute(x[None], ids, 2)
    with pytest.raises(TypeError, match="x"):
        moe_permute(x.int(), ids, 2)
    rows = torch.zeros(8, dtype=torch.int32, device=DEVICE)
    weights = torch.ones(4, 2, device=DEVICE)
    with pytest.raises(TypeError, match="rows"):
        moe_combine(x, rows.long(), weights)
    with pytest.raises(ValueError, match="tokens \\* k"):
        moe_combine(x, rows, weights)  # y has 4 rows, not 8
    with pytest.raises(ValueError, match="2-D"):
        moe_combine(x.reshape(-1), rows, weights)


@pytest.mark.skipif(DEVICE == "cpu", reason="needs a CUDA GPU")
def test_prefill_shape_on_the_gpu():
    tokens, k, experts, d = 4096, 8, 256, 7168
    x = torch.randn(tokens, d, device=DEVICE, dtype=torch.bfloat16)
    ids = torch.rand(tokens, experts, device=DEVICE).topk(k, dim=-1).indices
    x_sorted, order, rows, offs = moe_permute(x, ids, experts)
    ref_order, ref_offs = sort_by_expert(ids, experts)
    assert torch.equal(order.long(), ref_order) and torch.equal(offs, ref_offs)
    assert torch.equal(x_sorted, x[ref_order // k])
    weights = torch.rand(tokens, k, device=DEVICE)
    out = moe_combine(x_sorted, rows, weights)
    torch.testing.assert_close(out, (weights[..., None] * x[:, None].float()).sum(1).to(x.dtype))
