"""PyTorch references for every kernel in :mod:`gpuperf.kernels`.

The ``*_ref`` functions compute in float64 and return float64, so a kernel's
error is measured against something more precise than the kernel itself. Tests,
tutorials and benchmarks all check against these.
"""

from __future__ import annotations

import torch


def vector_add_ref(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``x + y`` in float64. Shapes ``(...)``, any float dtype; returns float64."""
    return x.double() + y.double()


def softmax_ref(x: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dimension in float64. Shape ``(..., N)``; returns float64."""
    return torch.softmax(x.double(), dim=-1)


def row_mean_ref(x: torch.Tensor) -> torch.Tensor:
    """Mean over the last dimension in float64. Shape ``(..., N)`` -> ``(...)``; returns float64."""
    return x.double().mean(dim=-1)


def softmax_naive(x: torch.Tensor) -> torch.Tensor:
    """Softmax as written naively in eager PyTorch, one kernel per line.

    Five kernels and about five passes over the data (max, subtract, exp, sum,
    divide): the unfused baseline that tutorial 02 measures. Same dtype as ``x``.
    """
    x_max = x.max(dim=-1, keepdim=True).values
    z = x - x_max
    numerator = torch.exp(z)
    denominator = numerator.sum(dim=-1, keepdim=True)
    return numerator / denominator


def matmul_ref(
    a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor | None = None, activation: str | None = None
) -> torch.Tensor:
    """``activation(a @ b + bias)`` in float32 on the inputs upcast; returns float32.

    Shapes ``(M, K) @ (K, N)``, ``bias`` ``(N,)``; ``activation`` as
    :func:`gpuperf.kernels.matmul` (``None``, ``"relu"``, ``"leaky_relu"``, ``"gelu"``).
    """
    out = a.float() @ b.float()
    if bias is not None:
        out = out + bias.float()
    return apply_activation(out, activation)


def matmul_fp8_ref(
    a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor
) -> torch.Tensor:
    """``(a · scale_a) @ (b · scale_b)`` in float64 from FP8 operands; returns float64.
    Shapes as :func:`gpuperf.kernels.matmul_fp8`."""
    return (a.double() * scale_a.double()) @ (b.double() * scale_b.double())


def apply_activation(x: torch.Tensor, activation: str | None) -> torch.Tensor:
    """The epilogue activations of :func:`gpuperf.kernels.matmul`, in PyTorch.

    Raises:
        ValueError: ``activation`` is not one of the names above.
    """
    if activation is None:
        return x
    if activation == "relu":
        return torch.relu(x)
    if activation == "leaky_relu":
        return torch.nn.functional.leaky_relu(x, 0.01)
    if activation == "gelu":
        return torch.nn.functional.gelu(x, approximate="tanh")
    raise ValueError(f"activation must be None, 'relu', 'leaky_relu' or 'gelu', got {activation!r}")


def matmul_epilogue_eager(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor, activation: str = "gelu"):
    """The unfused epilogue as written in eager PyTorch: cuBLAS, then one kernel per op.

    ``torch.matmul`` writes C, the bias add reads it and writes it again, the
    activation reads and writes it once more: five passes over the ``M * N``
    output where the fused kernel makes one (its final write). Same dtype as the inputs.
    """
    return apply_activation(torch.matmul(a, b) + bias, activation)


def attention_naive(q, k, v, causal: bool = False, scale: float | None = None) -> torch.Tensor:
    """Attention as written naively in eager PyTorch: the whole score matrix, in ``q``'s dtype.

    ``softmax(q @ kᵀ · scale) @ v`` with ``q`` ``(B, H, S_q, D)`` and ``k``, ``v``
    ``(B, H_kv, S_k, D)``; each group of ``H / H_kv`` query heads reads one key/value
    head. ``scale`` defaults to ``1 / sqrt(D)``; ``causal`` masks keys ``j > i``
    (needs ``S_q == S_k``). It writes the ``(B, H, S_q, S_k)`` scores and
    probabilities to memory and reads them back: the unfused baseline of tutorial 04.
    """
    return attention_rows(q, k, v, causal, 0, scale)


#: Queries per chunk in the float32 references: bounds the score matrix they hold.
ATTENTION_REF_CHUNK = 1024


def attention_ref(q, k, v, causal: bool = False, scale: float | None = None) -> torch.Tensor:
    """:func:`attention_naive` in float32 on the inputs upcast; returns float32.

    Computed :data:`ATTENTION_REF_CHUNK` queries at a time (each output row depends
    on its own query and the keys), so long sequences never hold an ``S_q x S_k``
    float32 matrix at once.
    """
    q, k, v = q.float(), k.float(), v.float()
    chunks = [
        attention_rows(q[..., start:stop, :], *_keys_for(k, v, causal, stop), causal, start, scale)
        for start, stop in _chunks(q.shape[-2])
    ]
    return torch.cat(chunks, dim=-2)


def attention_grads_ref(q, k, v, grad_out, causal: bool = False, scale: float | None = None):
    """Gradients ``(dq, dk, dv)`` of attention for the output gradient ``grad_out``, in float32.

    By autograd through :func:`attention_naive` on float32 copies, one chunk of
    :data:`ATTENTION_REF_CHUNK` queries at a time: the loss is a sum over output
    rows, so the chunks' gradients with respect to ``k`` and ``v`` add up to the
    whole one's, and each chunk's ``dq`` is its own rows'.
    """
    k32 = k.detach().float().requires_grad_()
    v32 = v.detach().float().requires_grad_()
    dq = torch.empty(q.shape, dtype=torch.float32, device=q.device)
    dk = torch.zeros_like(k32)
    dv = torch.zeros_like(v32)
    for start, stop in _chunks(q.shape[-2]):
        q_rows = q[..., start:stop, :].detach().float().requires_grad_()
        out = attention_rows(q_rows, *_keys_for(k32, v32, causal, stop), causal, start, scale)
        g_q, g_k, g_v = torch.autograd.grad(out, (q_rows, k32, v32), grad_out[..., start:stop, :].float())
        dq[..., start:stop, :] = g_q
        dk += g_k
        dv += g_v
    return dq, dk, dv


def _chunks(n: int) -> list[tuple[int, int]]:
    return [(s, min(s + ATTENTION_REF_CHUNK, n)) for s in range(0, max(n, 1), ATTENTION_REF_CHUNK)]


def _keys_for(k, v, causal: bool, stop: int):
    """The keys rows ``< stop`` can see: all of them, or under ``causal`` the first ``stop``."""
    return (k[..., :stop, :], v[..., :stop, :]) if causal else (k, v)


def attention_rows(q, k, v, causal: bool, first_row: int, scale: float | None):
    """Attention of the query rows ``first_row, first_row + 1, ...`` held in ``q``, written the
    obvious way (the scores and the probabilities materialised): what :func:`attention_ref`
    computes a chunk of rows at a time, and what tutorial 04 shows first."""
    group = q.shape[1] // k.shape[1]
    if group > 1:
        k = k.repeat_interleave(group, dim=1)
        v = v.repeat_interleave(group, dim=1)
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    scores = (q @ k.transpose(-2, -1)) * scale
    if causal:
        rows = torch.arange(first_row, first_row + q.shape[-2], device=q.device)[:, None]
        cols = torch.arange(k.shape[-2], device=q.device)[None, :]
        scores = scores.masked_fill(cols > rows, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


#: ``sqrt(2 / pi)``, the constant of GELU's tanh approximation.
GELU_TANH_C = (2 / torch.pi) ** 0.5


def gelu_ref(x: torch.Tensor) -> torch.Tensor:
    """GELU, tanh approximation, in float64: ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``.

    Shapes ``(...)``, any float dtype; returns float64. Source: Hendrycks and Gimpel,
    arXiv:1606.08415; the same function as ``F.gelu(x, approximate="tanh")``.
    """
    x = x.double()
    return 0.5 * x * (1 + torch.tanh(GELU_TANH_C * (x + 0.044715 * x**3)))


def gelu_eager(x: torch.Tensor) -> torch.Tensor:
    """GELU's tanh formula as written in eager PyTorch, in ``x``'s dtype.

    Eight kernels, each reading its operands from memory and writing its result
    (cube, scale, add, scale, tanh, add one, halve ``x``, multiply): the unfused
    baseline of the optimization-strategy guide. Every intermediate is rounded to
    ``x``'s dtype; in bfloat16 ``1 + tanh(u)`` cancels where ``tanh(u)`` is near -1.
    """
    return 0.5 * x * (1 + torch.tanh(GELU_TANH_C * (x + 0.044715 * torch.pow(x, 3))))


def add_relu_mul_ref(x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """``relu(x + y) * z`` in float64. Shapes ``(...)``, one shape for all; returns float64."""
    return torch.relu(x.double() + y.double()) * z.double()


def add_relu_mul_eager(x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """``relu(x + y) * z`` as written in eager PyTorch: three kernels, in the inputs' dtype."""
    return torch.relu(x + y) * z


def scale_shift_ref(x: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
    """``x * scale + shift`` in float64, ``scale`` and ``shift`` broadcast over the rows.
    ``x`` ``(..., N)``, ``scale`` and ``shift`` ``(N,)``; returns float64."""
    return x.double() * scale.double() + shift.double()


def scale_shift_eager(x: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
    """``x * scale + shift`` as written in eager PyTorch, in ``x``'s dtype: two kernels (the
    product is written to memory, then read back by the addition), each rounding."""
    return x * scale + shift


def strided_copy_ref(x: torch.Tensor, stride: int) -> torch.Tensor:
    """``x[::stride]`` in float64. ``x`` 1-D; returns float64."""
    return x[::stride].double()


def rms_norm_ref(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """RMSNorm over the last dimension in float64: ``x / sqrt(mean(x**2) + eps) * weight``.

    ``x`` ``(..., N)``, ``weight`` ``(N,)``, any float dtypes; returns float64. Source:
    Zhang and Sennrich, "Root Mean Square Layer Normalization", arXiv:1910.07467.
    """
    x = x.double()
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight.double()


def rms_norm_eager(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """RMSNorm as a model writes it in eager PyTorch, in ``x``'s dtype.

    The forward of ``LlamaRMSNorm`` in Hugging Face transformers
    (``src/transformers/models/llama/modeling_llama.py``): upcast to float32, mean of
    the squares, ``rsqrt``, scale, round to ``x``'s dtype, multiply by the weight.
    About five kernels, each reading and writing a tensor of ``x``'s size (in float32
    for the middle ones): the unfused baseline of the ``rms_norm`` benchmark.
    """
    dtype = x.dtype
    h = x.float()
    variance = h.pow(2).mean(-1, keepdim=True)
    h = h * torch.rsqrt(variance + eps)
    return weight * h.to(dtype)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """``cat(-x[..., D/2:], x[..., :D/2])``: Llama's pairing of feature ``i`` with ``i + D/2``
    (``rotate_half`` in Hugging Face transformers' ``modeling_llama.py``)."""
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rope_ref(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor):
    """Llama's rotary position embedding in float64: ``x * cos + rotate_half(x) * sin`` for
    ``x`` each of ``q`` ``(B, H, S, D)`` and ``k`` ``(B, H_kv, S, D)``, the tables ``cos``,
    ``sin`` ``(B, S, D)`` broadcast over the heads; returns ``(q, k)`` in float64. Source:
    Su et al., "RoFormer", arXiv:2104.09864, in the convention of transformers'
    ``apply_rotary_pos_emb``."""
    cos, sin = cos.double().unsqueeze(1), sin.double().unsqueeze(1)
    q, k = q.double(), k.double()
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


def rope_eager(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor):
    """RoPE as Hugging Face's Llama writes it in eager PyTorch, in ``q``'s dtype.

    ``LlamaRotaryEmbedding`` casts the tables to the activations' dtype and
    ``apply_rotary_pos_emb`` (``src/transformers/models/llama/modeling_llama.py``)
    unsqueezes them over the heads: ``q * cos + rotate_half(q) * sin``, and the same for
    ``k``. Twelve kernels (two casts; a negation, a concatenation, two products and a
    sum per tensor), each product, sum and table rounded to ``q``'s dtype: the unfused
    baseline of the ``rope`` benchmark and the RoPE of the PyTorch decoder layer.
    Returns ``(q_embed, k_embed)``.
    """
    cos, sin = cos.to(q.dtype).unsqueeze(1), sin.to(q.dtype).unsqueeze(1)
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


def swiglu_ref(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor) -> torch.Tensor:
    """SwiGLU in float64: ``silu(x @ w_gate) * (x @ w_up)``.

    ``x`` ``(M, K)``, ``w_gate`` and ``w_up`` ``(K, N)``, any float dtypes; returns float64
    ``(M, N)``. Source: Shazeer, "GLU Variants Improve Transformer", arXiv:2002.05202.
    """
    x = x.double()
    return torch.nn.functional.silu(x @ w_gate.double()) * (x @ w_up.double())


def swiglu_eager(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor) -> torch.Tensor:
    """SwiGLU as a model writes it in eager PyTorch, in ``x``'s dtype: ``F.silu(x @ w_gate) * (x @ w_up)``.

    Hugging Face transformers' ``LlamaMLP`` before its down projection
    (``act_fn(gate_proj(x)) * up_proj(x)``): two matmuls, each rounding its product to
    the dtype and writing it to memory, then the SiLU and the multiplication, two more
    kernels reading them back.
    """
    return torch.nn.functional.silu(x @ w_gate) * (x @ w_up)


def attention_decode_ref(q, k_cache, v_cache, cache_seqlens, scale: float | None = None) -> torch.Tensor:
    """The decode step of attention against a KV cache, in float64; returns float64 ``(B, H, S_q, D)``.

    ``q`` ``(B, H, S_q, D)``, ``k_cache`` and ``v_cache`` ``(B, H_kv, S_max, D)`` (groups
    of ``H / H_kv`` consecutive query heads share a key/value head), ``cache_seqlens``
    ``(B,)`` ints: sequence ``b`` attends to its first ``cache_seqlens[b]`` keys only,
    its queries being the last ``S_q`` positions, causal and aligned bottom-right (query
    ``i`` sees keys ``j <= len - S_q + i``), as FlashAttention's
    ``flash_attn_with_kvcache``. Computed one sequence at a time on its valid keys
    (sliced, so nothing past the length is read). A length outside ``[S_q, S_max]``
    gives that sequence an all-NaN output, as :func:`gpuperf.kernels.attention_decode`
    does. Reads the lengths to the host.
    """
    seq_q, s_max = q.shape[2], k_cache.shape[2]
    out = torch.full(q.shape, float("nan"), dtype=torch.float64, device=q.device)
    for b, n in enumerate(cache_seqlens.tolist()):
        if seq_q <= n <= s_max:
            keys = k_cache[b : b + 1, :, :n].double()
            values = v_cache[b : b + 1, :, :n].double()
            out[b] = attention_rows(q[b : b + 1].double(), keys, values, True, n - seq_q, scale)[0]
    return out


def attention_decode_sdpa(q, k_cache, v_cache, cache_seqlens, scale: float | None = None) -> torch.Tensor:
    """The decode step as a PyTorch model writes it: SDPA over the whole padded cache with a mask.

    ``torch.nn.functional.scaled_dot_product_attention(q, k_cache, v_cache,
    attn_mask=mask, scale=scale, enable_gqa=True)`` with the boolean mask ``(B, 1, S_q,
    S_max)`` built on the device from ``cache_seqlens`` (key ``j`` visible to query ``i``
    of sequence ``b`` iff ``j <= cache_seqlens[b] - S_q + i``): no host synchronization.
    In ``q``'s dtype. Reads (and, with the mask, PyTorch's backends compute on) all
    ``S_max`` keys of every sequence, whatever its length. Lengths out of range are not
    detected: above ``S_max`` every key is seen; below ``S_q`` the early queries see
    none (NaN or zeros, by backend).
    """
    seq_q, s_max = q.shape[2], k_cache.shape[2]
    last = cache_seqlens.view(-1, 1, 1, 1) - seq_q + torch.arange(seq_q, device=q.device).view(1, 1, -1, 1)
    mask = torch.arange(s_max, device=q.device).view(1, 1, 1, -1) <= last
    return torch.nn.functional.scaled_dot_product_attention(
        q, k_cache, v_cache, attn_mask=mask, scale=scale, enable_gqa=True
    )


# --- Mixture of Experts ----------------------------------------------------------------


def grouped_matmul_ref(a: torch.Tensor, b: torch.Tensor, offs: torch.Tensor) -> torch.Tensor:
    """The grouped matmul in float64: ``out[rows of e] = a[rows of e] @ b[e]``, expert ``e``'s
    rows ``offs[e-1] <= row < offs[e]`` (``offs[-1]`` read as 0).

    ``a`` ``(M_total, K)``, ``b`` ``(E, K, N)``, ``offs`` ``(E,)`` ints, as
    :func:`gpuperf.kernels.grouped_matmul`; returns float64 ``(M_total, N)`` with zeros in
    the rows past ``offs[E-1]``. Reads ``offs`` to the host.
    """
    out = torch.zeros((a.shape[0], b.shape[2]), dtype=torch.float64, device=a.device)
    start = 0
    for e, end in enumerate(offs.tolist()):
        out[start:end] = a[start:end].double() @ b[e].double()
        start = end
    return out


def grouped_matmul_loop(a: torch.Tensor, b: torch.Tensor, offs: torch.Tensor) -> torch.Tensor:
    """The grouped matmul as a loop over experts in ``a``'s dtype: one ``torch.mm`` (cuBLAS on
    a GPU) per expert with rows, writing into one output.

    The baseline a grouped kernel replaces: ``E`` launches, each a matmul of only that
    expert's rows, and one host synchronization to read ``offs`` (``.tolist()``). Shapes as
    :func:`grouped_matmul_ref`; returns ``(M_total, N)`` in ``a``'s dtype, zeros in the rows
    past ``offs[E-1]``.
    """
    out = torch.empty((a.shape[0], b.shape[2]), dtype=a.dtype, device=a.device)
    start = 0
    for e, end in enumerate(offs.tolist()):
        if end > start:
            torch.mm(a[start:end], b[e], out=out[start:end])
        start = max(start, end)
    out[start:].zero_()
    return out


def dequantize_fp8_blockwise_ref(
    x: torch.Tensor, scale: torch.Tensor, block: tuple[int, int]
) -> torch.Tensor:
    """``x * scale`` blockwise in float64: the value that block-scaled FP8 ``x`` ``(..., R, C)``
    stands for, each ``block`` ``(rows, cols)`` of it multiplied by its scale ``(..., ceil(R /
    rows), ceil(C / cols))``, as :func:`gpuperf.kernels.quantize_fp8_blockwise` made them."""
    rows, cols = x.shape[-2:]
    expanded = scale.double().repeat_interleave(block[0], dim=-2).repeat_interleave(block[1], dim=-1)
    return x.double() * expanded[..., :rows, :cols]


def matmul_fp8_blockwise_ref(
    a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor
) -> torch.Tensor:
    """``dequant(a) @ dequant(b).T`` in float64 from block-scaled FP8 operands: ``a`` ``(M, K)``
    with 1 x 128 scales ``(M, ceil(K/128))``, ``b`` ``(N, K)`` with 128 x 128 scales
    ``(ceil(N/128), ceil(K/128))``, as :func:`gpuperf.kernels.matmul_fp8_blockwise`;
    returns float64 ``(M, N)``."""
    return (
        dequantize_fp8_blockwise_ref(a, scale_a, (1, 128))
        @ dequantize_fp8_blockwise_ref(b, scale_b, (128, 128)).T
    )


def sort_by_expert(experts: torch.Tensor, num_experts: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The order that groups a routing's (token, slot) pairs by expert, and the offsets of
    the groups: the inputs of a grouped matmul.

    ``experts`` ``(T, k)`` ints (each token's ``k`` experts). Returns ``(order, offs)``:
    ``order`` ``(T * k,)`` int64, the flat positions ``t * k + j`` sorted by expert (stable:
    tokens in order within an expert), so expert-sorted row ``i`` is token ``order[i] // k``;
    ``offs`` ``(num_experts,)`` int32, the cumulative row ends (``offs[e] - offs[e-1]``
    pairs went to expert ``e``). On ``experts``' device; on CUDA ``torch.bincount`` reads the
    indices' minimum and maximum back to the host (a synchronization per call).
    """
    flat = experts.reshape(-1)
    order = torch.argsort(flat, stable=True)
    offs = torch.bincount(flat, minlength=num_experts).cumsum(0).to(torch.int32)
    return order, offs


def moe_router_ref(
    x: torch.Tensor,
    router_weight: torch.Tensor,
    top_k: int,
    *,
    scoring: str = "softmax",
    normalize: bool = True,
    bias: torch.Tensor | None = None,
    n_group: int = 1,
    topk_group: int = 1,
    scaling: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """A Mixture-of-Experts router: each token's ``top_k`` experts and their weights.

    The logits ``x @ router_weight.T`` are computed in ``router_weight``'s dtype (Mixtral
    keeps its router in the model's dtype, DeepSeek-V3 in float32), the scores from them in
    float32:

    * ``scoring="softmax"`` (Mixtral, Qwen3-MoE): ``softmax(logits)``, the ``top_k`` largest
      chosen; with ``normalize``, their weights divided by their sum (Mixtral; Qwen3-MoE's
      ``norm_topk_prob``).
    * ``scoring="sigmoid"`` (DeepSeek-V3): ``sigmoid(logits)``; experts chosen by
      ``score + bias`` (the load-balancing bias, which does not enter the weights), within
      the ``topk_group`` of ``n_group`` groups of experts whose two best choice scores sum
      highest; weights the chosen experts' scores, divided by their sum (plus 1e-20) with
      ``normalize``, times ``scaling`` (the routed scaling factor, 2.5 in DeepSeek-V3).

    ``x`` ``(T, d)``, ``router_weight`` ``(E, d)``, ``bias`` ``(E,)`` or None. Returns
    ``(weights, experts)``: float32 ``(T, top_k)`` and int64 ``(T, top_k)``.

    Sources: Hugging Face transformers' ``MixtralTopKRouter`` and ``DeepseekV3TopkRouter``;
    DeepSeek-V3 Technical Report (arXiv:2412.19437), 2.1.2.

    Raises:
        ValueError: ``scoring`` is not ``"softmax"`` or ``"sigmoid"``, or ``n_group`` does
            not divide the number of experts.
    """
    if scoring not in ("softmax", "sigmoid"):
        raise ValueError(f"scoring must be 'softmax' or 'sigmoid', got {scoring!r}")
    num_experts = router_weight.shape[0]
    if n_group < 1 or num_experts % n_group:
        raise ValueError(f"n_group must divide the {num_experts} experts, got {n_group}")
    logits = torch.nn.functional.linear(x.to(router_weight.dtype), router_weight).float()
    scores = torch.softmax(logits, dim=-1) if scoring == "softmax" else torch.sigmoid(logits)
    choice = scores if bias is None else scores + bias.float()
    if n_group > 1:
        grouped = choice.view(-1, n_group, num_experts // n_group)
        group_scores = grouped.topk(2, dim=-1).values.sum(dim=-1)
        kept = torch.zeros_like(group_scores, dtype=torch.bool)
        kept.scatter_(1, group_scores.topk(topk_group, dim=-1).indices, True)
        choice = grouped.masked_fill(~kept.unsqueeze(-1), float("-inf")).view(-1, num_experts)
    experts = choice.topk(top_k, dim=-1).indices
    weights = scores.gather(1, experts)
    if normalize:
        weights = weights / (weights.sum(dim=-1, keepdim=True) + (1e-20 if scoring == "sigmoid" else 0.0))
    return weights * scaling, experts


def moe_ref(
    x: torch.Tensor,
    router_weight: torch.Tensor,
    w_gate: torch.Tensor,
    w_up: torch.Tensor,
    w_down: torch.Tensor,
    top_k: int,
    *,
    shared: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None,
    **router,
) -> torch.Tensor:
    """A Mixture-of-Experts feed-forward block as a PyTorch model computes it: route, run each
    expert on its tokens in a loop, add the experts' outputs weighted, add the shared expert.

    Each token goes to ``top_k`` experts (:func:`moe_router_ref`, whose options ``router``
    passes on: ``scoring``, ``normalize``, ``bias``, ``n_group``, ``topk_group``,
    ``scaling``). Expert ``e`` is a SwiGLU MLP, ``(silu(x @ w_gate[e]) * (x @ w_up[e])) @
    w_down[e]``, run on the tokens routed to it (one gather and three matmuls per expert
    with tokens); its output, times each token's weight (float32), is rounded to ``x``'s
    dtype and added into the output (``index_add_``), expert by expert. With ``shared`` =
    ``(w_gate, w_up, w_down)`` an always-on expert (DeepSeek-V3's shared expert) is added,
    unweighted. Everything but the routing is computed in ``x``'s dtype, as Hugging Face
    transformers' ``MixtralSparseMoeBlock`` and ``DeepseekV3MoE`` compute (pass float64
    tensors for a float64 reference).

    Args:
        x: ``(..., d)`` tokens.
        router_weight: ``(E, d)``, as ``nn.Linear(d, E)`` keeps it.
        w_gate, w_up: ``(E, d, ffn)``; ``w_down`` ``(E, ffn, d)``: each expert's weights laid
            out as :func:`gpuperf.kernels.grouped_matmul`'s ``b`` (``x @ w``).
        top_k: experts per token.
        shared: the shared expert's ``(w_gate (d, f), w_up (d, f), w_down (f, d))``, or None.

    Returns:
        ``(..., d)`` in ``x``'s dtype. The per-expert loop reads which experts have tokens
        back to the host: one synchronization per expert.
    """
    shape = x.shape
    x = x.reshape(-1, shape[-1])
    weights, experts = moe_router_ref(x, router_weight, top_k, **router)
    out = torch.zeros_like(x)
    for e in range(w_gate.shape[0]):
        token, slot = torch.where(experts == e)
        if token.numel() == 0:
            continue
        h = x[token]
        y = swiglu_eager(h, w_gate[e], w_up[e]) @ w_down[e]
        out.index_add_(0, token, (y * weights[token, slot, None]).to(out.dtype))
    if shared is not None:
        s_gate, s_up, s_down = shared
        out = out + swiglu_eager(x, s_gate, s_up) @ s_down
    return out.reshape(shape)
