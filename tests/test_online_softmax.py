"""online_softmax_tiles, called from a small kernel of its own: each flag against a float64
softmax over the keys it should see (keys past the end are NaN in memory: never read), and a
row that sees no key keeps ``l = 0`` and ``m = -inf`` under ``EMPTY_ROWS``."""

import math

import pytest
import torch
import triton
import triton.language as tl

from gpuperf.kernels.online_softmax import online_softmax_tiles
from gpuperf.testing import assert_close
from tests.conftest import DEVICE

D = 16
BLOCK_M = 16
BLOCK_N = 16
LOG2E = 1.4426950408889634


@triton.jit
def _fold_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    last_ptr,
    o_ptr,
    l_ptr,
    m_ptr,
    n_keys,
    full,
    qk_scale,
    D: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    MASK_KEYS: tl.constexpr,
    CAUSAL: tl.constexpr,
    LAST_IN_RANGE: tl.constexpr,
    EMPTY_ROWS: tl.constexpr,
):
    """One tile of BLOCK_M rows: whole key tiles [0, full) unmasked, then with MASK_KEYS the
    partial tile [full, n_keys); writes acc / l (0 where l = 0), l and m."""
    offs_m = tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    q = tl.load(q_ptr + offs_m[:, None] * D + offs_d[None, :])
    k_ptrs = k_ptr + offs_n[None, :] * D + offs_d[:, None]
    v_ptrs = v_ptr + offs_n[:, None] * D + offs_d[None, :]
    last = tl.load(last_ptr + offs_m)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    acc, l_i, m_i = online_softmax_tiles(
        acc, l_i, m_i, q, k_ptrs, v_ptrs, D, D, offs_n, n_keys, last, qk_scale, 0, full, BLOCK_N,
        CAUSAL=CAUSAL, LAST_IN_RANGE=LAST_IN_RANGE, EMPTY_ROWS=EMPTY_ROWS,
    )  # fmt: skip
    if MASK_KEYS:
        acc, l_i, m_i = online_softmax_tiles(
            acc, l_i, m_i, q, k_ptrs, v_ptrs, D, D, offs_n, n_keys, last, qk_scale, full, n_keys, BLOCK_N,
            MASK_KEYS=True, CAUSAL=CAUSAL, LAST_IN_RANGE=LAST_IN_RANGE, EMPTY_ROWS=EMPTY_ROWS,
        )  # fmt: skip
    o = acc / tl.where(l_i > 0, l_i, 1.0)[:, None]
    tl.store(o_ptr + offs_m[:, None] * D + offs_d[None, :], o)
    tl.store(l_ptr + offs_m, l_i)
    tl.store(m_ptr + offs_m, m_i)


def _fold(
    n_keys: int,
    last: list[int],
    *,
    causal: bool,
    last_in_range: bool = False,
    empty_rows: bool = False,
    dtype=torch.float16,
):
    """Run the kernel on random rows of ``dtype`` and ``n_keys`` keys (the memory past them
    NaN); return the inputs and ``(o, l, m)``."""
    gen = torch.Generator().manual_seed(n_keys)
    capacity = triton.cdiv(n_keys, BLOCK_N) * BLOCK_N
    q = torch.randn((BLOCK_M, D), generator=gen).to(dtype).to(DEVICE)
    k = torch.full((capacity, D), float("nan"), dtype=dtype, device=DEVICE)
    v = torch.full((capacity, D), float("nan"), dtype=dtype, device=DEVICE)
    k[:n_keys] = torch.randn((n_keys, D), generator=gen).to(dtype).to(DEVICE)
    v[:n_keys] = torch.randn((n_keys, D), generator=gen).to(dtype).to(DEVICE)
    rows_last = torch.tensor(last, dtype=torch.int32, device=DEVICE)
    o = torch.empty((BLOCK_M, D), dtype=torch.float32, device=DEVICE)
    l_i = torch.empty((BLOCK_M,), dtype=torch.float32, device=DEVICE)
    m_i = torch.empty((BLOCK_M,), dtype=torch.float32, device=DEVICE)
    full = n_keys // BLOCK_N * BLOCK_N
    scale = 1 / math.sqrt(D)
    _fold_kernel[(1,)](
        q, k, v, rows_last, o, l_i, m_i, n_keys, full, scale * LOG2E,
        D, BLOCK_M, BLOCK_N, full < n_keys, causal, last_in_range, empty_rows,
    )  # fmt: skip
    return (q, k[:n_keys], v[:n_keys], rows_last, scale), (o, l_i, m_i)


def _reference(q, k, v, last, scale, causal: bool):
    """float64 softmax over each row's visible keys, times V; rows that see none: 0."""
    scores = (q.double() @ k.double().T) * scale
    if causal:
        cols = torch.arange(k.shape[0], device=q.device)
        scores = scores.masked_fill(cols[None, :] > last.long()[:, None], float("-inf"))
    p = torch.softmax(scores, dim=1).nan_to_num(0.0)
    return p @ v.double(), scores


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("n_keys", [16, 48, 37, 5], ids=lambda n: f"keys{n}")
def test_without_causal_every_key_counts_once(n_keys, dtype):
    inputs, (o, l_i, m_i) = _fold(n_keys, [0] * BLOCK_M, causal=False, dtype=dtype)
    ref, scores = _reference(*inputs, causal=False)
    assert_close("o", ref, o.to(dtype), k=n_keys)  # rounded once, as the kernels write it
    # The row's log-sum-exp, base 2, as the kernels write it: m + log2 l.
    lse = (m_i + torch.log2(l_i)).double()
    torch.testing.assert_close(lse, torch.logsumexp(scores, dim=1) * LOG2E, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("n_keys", [16, 40], ids=lambda n: f"keys{n}")
def test_causal_rows_see_keys_up_to_last(n_keys):
    # Top left (the forward's diagonal): row r sees keys j <= r, and rows past the keys see them all.
    last = list(range(BLOCK_M))
    inputs, (o, _, _) = _fold(n_keys, last, causal=True)
    ref, _ = _reference(*inputs, causal=True)
    assert_close("o", ref, o.to(torch.float16), k=n_keys)  # rounded once, as the kernels write it


def test_empty_rows_keep_no_weight():
    # Bottom right (the decode step): every last < n_keys; rows with last = -1 see no key.
    n_keys = 21
    last = [n_keys - BLOCK_M + r for r in range(BLOCK_M)]
    last[:3] = [-1, -1, -1]
    inputs, (o, l_i, m_i) = _fold(n_keys, last, causal=True, last_in_range=True, empty_rows=True)
    ref, _ = _reference(*inputs, causal=True)
    assert_close("o", ref, o.to(torch.float16), k=n_keys)  # rounded once, as the kernels write it
    assert l_i[:3].tolist() == [0.0, 0.0, 0.0]
    assert m_i[:3].tolist() == [float("-inf")] * 3
    assert bool((l_i[3:] > 0).all())
