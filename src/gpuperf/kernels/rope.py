"""Rotary position embedding (RoPE) of Llama, applied to the queries and the keys in one launch.

RoPE (Su et al., "RoFormer: Enhanced Transformer with Rotary Position Embedding",
arXiv:2104.09864) rotates pairs of a head's features by angles proportional to the
token's position, so that the dot product of a query and a key depends on their
distance only. Llama pairs feature ``i`` with feature ``i + D/2`` (the "rotate half"
convention of Hugging Face transformers' ``apply_rotary_pos_emb``)::

    out = x * cos + rotate_half(x) * sin,    rotate_half(x) = cat(-x[..., D/2:], x[..., :D/2])

that is, with ``x1, x2`` the two halves of a head and ``c1, c2, s1, s2`` those of the
tables, ``out = cat(x1 * c1 - x2 * s1, x2 * c2 + x1 * s2)``.

``_rope_kernel`` gives each program a block of tokens and a block of heads, either of
the queries or of the keys: the grid covers the ``H + H_kv`` heads of both, so one
launch rotates both. A program loads its tokens' rows of ``cos`` and ``sin`` once from
memory (each row serves every head of its token; the programs of the other heads of
the same tokens run beside it and find the rows in L2), loads the two halves of each
of its heads as ``[heads, tokens, D/2]`` tiles, rotates in float32 and stores,
rounding once. The op is memory-bound: it reads ``q``, ``k``, ``cos`` and ``sin`` once
from memory and writes the two outputs once. ``q`` and ``k`` are read through their
strides, so the transposed views of a fused QKV projection that a model passes are
read in place; with a unit stride along ``D`` every load and store is a 16-byte vector.

The backward is the transpose of the rotation, ``dx = g * cos - rotate_half(g * sin)``,
i.e. ``cat(g1 * c1 + g2 * s2, g2 * c2 - g1 * s1)``: the same kernel with the roles of
``s1`` and ``s2`` swapped and negated (``BACKWARD``). It equals RoPE with ``-sin``
only when the two halves of ``sin`` are equal, as Llama's tables happen to be; the
kernel does not assume it.
"""

from __future__ import annotations

import functools
import math

import torch
import triton
import triton.language as tl

from gpuperf.kernels._grid import cdiv, next_power_of_2
from gpuperf.kernels._validation import check_tensor, check_tensors
from gpuperf.kernels.launch import Launch, Launches, op

# Launch rules, as data, each with its reason.
#: Largest head dim taken: a program holds both halves of its heads and the four
#: half-rows of the tables per token in registers (models use 64 to 256).
ROPE_MAX_HEAD_DIM = 512
#: Most heads per program. Llama 3 8B's 32 query heads make 4 full programs per block
#: of tokens and its 8 key heads one, so no program is partly empty.
ROPE_BLOCK_H = 8
#: Elements of q or k each program rotates (heads x tokens x head dim; 8 KB of bf16):
#: tokens are stacked until the tile holds this many (4 tokens of Llama's 8 x 128).
ROPE_TILE_ELEMENTS = 4096
#: Elements of q or k per thread, which sets the warps: 16 elements are two 16-byte
#: loads of bf16 in flight per thread, the Llama tile on 8 warps. On an H100 at 16384
#: tokens of Llama-3-8B's heads (bf16), 16 reached 2780 GB/s against 2593 for 32; heads
#: per program (4, 8, 16) and elements per program (2048 to 8192) moved it under 1%.
ROPE_ELEMENTS_PER_THREAD = 16
#: Most warps per program.
ROPE_MAX_WARPS = 8


@triton.jit
def _rotate_heads(
    x_ptr,
    out_ptr,
    head_start,
    n_heads,
    batch,
    pos,
    seq_len,
    token_mask,
    d,
    c1,
    c2,
    sa,
    sb,
    stride_xb,
    stride_xh,
    stride_xs,
    stride_xd,
    HALF: tl.constexpr,
    BLOCK_H: tl.constexpr,
):
    # [BLOCK_H, BLOCK_T, BLOCK_HALF] tiles: heads, tokens, features of one half.
    heads = head_start + tl.arange(0, BLOCK_H)
    mask = (heads < n_heads)[:, None, None] & token_mask[None, :, None] & (d < HALF)[None, None, :]
    # int64: batch * stride_xb passes 2**31 on a QKV buffer of over 4 GB of bf16.
    rows = (
        heads.to(tl.int64)[:, None, None] * stride_xh + (batch * stride_xb + pos * stride_xs)[None, :, None]
    )
    x1 = tl.load(x_ptr + rows + d[None, None, :] * stride_xd, mask=mask, other=0.0).to(tl.float32)
    x2 = tl.load(x_ptr + rows + (d + HALF)[None, None, :] * stride_xd, mask=mask, other=0.0).to(tl.float32)
    o1 = x1 * c1 - x2 * sa
    o2 = x2 * c2 + x1 * sb
    # The output is a new contiguous (B, heads, S, D) tensor.
    out_rows = (batch[None, :, None] * n_heads + heads[:, None, None]) * seq_len + pos[None, :, None]
    out = out_ptr + out_rows * (2 * HALF) + d[None, None, :]
    tl.store(out, o1.to(out_ptr.dtype.element_ty), mask=mask)
    tl.store(out + HALF, o2.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _rope_kernel(
    q_ptr,
    k_ptr,
    cos_ptr,
    sin_ptr,
    q_out_ptr,
    k_out_ptr,
    n_tokens,
    seq_len,
    n_heads_q,
    n_heads_k,
    n_q_blocks,
    n_head_blocks,
    stride_qb,
    stride_qh,
    stride_qs,
    stride_qd,
    stride_kb,
    stride_kh,
    stride_ks,
    stride_kd,
    stride_cb,
    stride_cs,
    stride_cd,
    stride_sb,
    stride_ss,
    stride_sd,
    HEAD_DIM: tl.constexpr,
    BLOCK_H: tl.constexpr,
    BLOCK_T: tl.constexpr,
    BLOCK_HALF: tl.constexpr,
    BACKWARD: tl.constexpr,
):
    HALF: tl.constexpr = HEAD_DIM // 2
    # A one-dimensional grid (no 65,535 limit), head blocks varying fastest: the
    # programs of one block of tokens run side by side, so the table rows that the
    # first of them reads from memory the others find in L2, and they read
    # neighbouring heads of the same tokens (adjacent in a fused QKV buffer).
    pid = tl.program_id(0)
    head_block = pid % n_head_blocks
    token_block = pid // n_head_blocks
    tokens = token_block.to(tl.int64) * BLOCK_T + tl.arange(0, BLOCK_T)
    token_mask = tokens < n_tokens
    batch = tokens // seq_len
    pos = tokens - batch * seq_len
    d = tl.arange(0, BLOCK_HALF)
    # The tables at this block's tokens, loaded once. Their pointers are broadcast over
    # the heads, so that the values come in the layout of the [BLOCK_H, BLOCK_T,
    # BLOCK_HALF] tiles of q and k: loaded as [BLOCK_T, BLOCK_HALF] and then broadcast,
    # they went through shared memory (a layout conversion in Triton 3.6's sm_90 code).
    # A thread whose tile spans several heads loads a value once for them all; threads
    # on other heads load it from L1.
    over_heads = tl.zeros([BLOCK_H, 1, 1], dtype=tl.int64)
    t_mask = token_mask[None, :, None] & (d < HALF)[None, None, :]
    c_rows = over_heads + (batch * stride_cb + pos * stride_cs)[None, :, None]
    s_rows = over_heads + (batch * stride_sb + pos * stride_ss)[None, :, None]
    c1 = tl.load(cos_ptr + c_rows + d[None, None, :] * stride_cd, mask=t_mask, other=0.0)
    c2 = tl.load(cos_ptr + c_rows + (d + HALF)[None, None, :] * stride_cd, mask=t_mask, other=0.0)
    s1 = tl.load(sin_ptr + s_rows + d[None, None, :] * stride_sd, mask=t_mask, other=0.0)
    s2 = tl.load(sin_ptr + s_rows + (d + HALF)[None, None, :] * stride_sd, mask=t_mask, other=0.0)
    if BACKWARD:
        # The transpose: dx1 = g1 * c1 + g2 * s2, dx2 = g2 * c2 - g1 * s1.
        sa = -s2
        sb = -s1
    else:
        sa = s1
        sb = s2
    # Each branch keeps its own tensor's strides as Triton specialized them (a unit
    # stride of the last dimension makes the loads 16-byte vectors).
    if head_block < n_q_blocks:
        _rotate_heads(
            q_ptr, q_out_ptr, head_block * BLOCK_H, n_heads_q, batch, pos, seq_len, token_mask, d,
            c1, c2, sa, sb, stride_qb, stride_qh, stride_qs, stride_qd, HALF, BLOCK_H,
        )  # fmt: skip
    else:
        _rotate_heads(
            k_ptr, k_out_ptr, (head_block - n_q_blocks) * BLOCK_H, n_heads_k, batch, pos, seq_len,
            token_mask, d, c1, c2, sa, sb, stride_kb, stride_kh, stride_ks, stride_kd, HALF, BLOCK_H,
        )  # fmt: skip


@functools.lru_cache(maxsize=1024)
def rope_launch(n_heads: int, n_kv_heads: int, head_dim: int) -> tuple[int, int, int, int]:
    """``(BLOCK_H, BLOCK_T, BLOCK_HALF, num_warps)`` of the kernel on ``n_heads`` query and
    ``n_kv_heads`` key heads of ``head_dim`` (even, at most :data:`ROPE_MAX_HEAD_DIM`).

    ``BLOCK_HALF`` is half the head dim rounded up to a power of two (the padding lanes
    are masked); ``BLOCK_H`` heads, at most :data:`ROPE_BLOCK_H`, and ``BLOCK_T``
    tokens make a tile of about :data:`ROPE_TILE_ELEMENTS` elements.
    """
    block_half = next_power_of_2(head_dim // 2)
    block_h = min(ROPE_BLOCK_H, next_power_of_2(max(n_heads, n_kv_heads)))
    block_t = max(1, ROPE_TILE_ELEMENTS // (2 * block_half * block_h))
    tile = 2 * block_half * block_h * block_t
    num_warps = min(ROPE_MAX_WARPS, max(1, tile // (32 * ROPE_ELEMENTS_PER_THREAD)))
    return block_h, block_t, block_half, num_warps


def _rotate(
    x_q: torch.Tensor, x_k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, backward: bool
) -> tuple[tuple[torch.Tensor, torch.Tensor], Launches]:
    """Rotate ``x_q`` and ``x_k`` (or, with ``backward``, apply the transpose) into two new
    contiguous tensors, in one launch; none where either is empty."""
    out_q = torch.empty(x_q.shape, dtype=x_q.dtype, device=x_q.device)
    out_k = torch.empty(x_k.shape, dtype=x_k.dtype, device=x_k.device)
    if out_q.numel() == 0 or out_k.numel() == 0:
        return (out_q, out_k), ()
    batch, n_heads, seq_len, head_dim = x_q.shape
    n_kv_heads = x_k.shape[1]
    block_h, block_t, block_half, num_warps = rope_launch(n_heads, n_kv_heads, head_dim)
    n_tokens = batch * seq_len
    n_q_blocks = cdiv(n_heads, block_h)
    n_head_blocks = n_q_blocks + cdiv(n_kv_heads, block_h)
    runtime = (
        x_q, x_k, cos, sin, out_q, out_k, n_tokens, seq_len, n_heads, n_kv_heads, n_q_blocks, n_head_blocks,
        *x_q.stride(), *x_k.stride(), *cos.stride(), *sin.stride(),
    )  # fmt: skip
    grid = (cdiv(n_tokens, block_t) * n_head_blocks,)
    constexprs = (head_dim, block_h, block_t, block_half, backward)
    return (out_q, out_k), (Launch(_rope_kernel, grid, runtime, constexprs, num_warps),)


@op("gpuperf::rope_backward", tensors=4)
def rope_backward(
    grad_q: torch.Tensor, grad_k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
) -> tuple[tuple[torch.Tensor, torch.Tensor], Launches]:
    """``(dq, dk)`` of :func:`rope` from the gradients of its outputs (any strides, stride 0
    included) and the tables it saved: the transpose of the rotation, by the same kernel in
    one launch. Called by autograd, it checks nothing."""
    return _rotate(grad_q, grad_k, cos, sin, True)


def _check(q, k, cos, sin) -> None:
    """Every check of :func:`rope`'s arguments."""
    check_tensors(("q", "k"), (q, k))
    check_tensor("cos", cos, (torch.float32,))
    check_tensor("sin", sin, (torch.float32,))
    for name, table in (("cos", cos), ("sin", sin)):
        if table.device != q.device:
            raise ValueError(
                f"tensors must be on the same device, got q on {q.device}, {name} on {table.device}"
            )
    for name, x, rank, layout in (
        ("q", q, 4, "(B, H, S, D)"),
        ("k", k, 4, "(B, H_kv, S, D)"),
        ("cos", cos, 3, "(B, S, D)"),
        ("sin", sin, 3, "(B, S, D)"),
    ):
        if x.dim() != rank:
            raise ValueError(f"{name} must be {layout}, a {rank}-d tensor; got shape {tuple(x.shape)}")
    batch, n_heads, seq_len, head_dim = q.shape
    if k.shape[0] != batch or k.shape[2] != seq_len or k.shape[3] != head_dim:
        raise ValueError(
            f"k must be (B, H_kv, S, D) with q's B = {batch}, S = {seq_len}, D = {head_dim}; "
            f"got q {tuple(q.shape)}, k {tuple(k.shape)}"
        )
    for name, table in (("cos", cos), ("sin", sin)):
        if table.shape != (batch, seq_len, head_dim):
            raise ValueError(
                f"{name} must be (B, S, D) = ({batch}, {seq_len}, {head_dim}) from q {tuple(q.shape)}, "
                f"got {tuple(table.shape)}"
            )
    if n_heads < 1 or k.shape[1] < 1:
        raise ValueError(f"q and k need at least one head each, got H = {n_heads}, H_kv = {k.shape[1]}")
    if head_dim % 2 or not 2 <= head_dim <= ROPE_MAX_HEAD_DIM:
        raise ValueError(
            f"the head dim D must be even and between 2 and {ROPE_MAX_HEAD_DIM} "
            f"(RoPE rotates pairs of features), got {head_dim}"
        )


@op(
    "gpuperf::rope",
    tensors=4,
    backward=rope_backward,
    saves=lambda q, k, cos, sin, q_out, k_out: (cos, sin),
)
def rope(
    q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
) -> tuple[tuple[torch.Tensor, torch.Tensor], Launches]:
    """Llama's rotary position embedding of the queries and the keys, in one launch.

    ``out = x * cos + rotate_half(x) * sin`` with ``rotate_half(x) = cat(-x[..., D/2:],
    x[..., :D/2])`` for ``x`` each of ``q`` and ``k``, the tables broadcast over the
    heads: for ``i < D/2``, ``out[i] = x[i] * cos[i] - x[i + D/2] * sin[i]``, and for
    ``i >= D/2``, ``out[i] = x[i] * cos[i] + x[i - D/2] * sin[i]``. The full ``D``-wide
    tables are used as given (the two halves need not be equal).

    Args:
        q: ``(B, H, S, D)`` queries; float32, float16 or bfloat16; on a CUDA device (or
            the CPU when ``TRITON_INTERPRET=1``). Any strides: the transposed views of a
            fused QKV projection (``qkv.view(B, S, H + 2 * H_kv, D).split(...)`` then
            ``.transpose(1, 2)``) are read in place, not copied.
        k: ``(B, H_kv, S, D)`` keys, the same dtype and device; any strides. ``H_kv``
            need not divide ``H``.
        cos, sin: ``(B, S, D)`` float32 tables at each token's position
            (:func:`rope_cos_sin`); any strides, stride 0 included
            (``table.expand(B, S, D)`` shares one table across the batch). Not
            differentiated: they must not require grad.

    ``D`` may be any even number from 2 to :data:`ROPE_MAX_HEAD_DIM` (512); halves that
    are not a power of two are padded and masked.

    Returns:
        ``(q_out, k_out)``: two new contiguous tensors of ``q``'s and ``k``'s shapes and
        dtype. Computed in float32 and rounded once (Hugging Face's eager formula
        rounds the tables, both products and their sum to the inputs' dtype). Empty
        inputs (``B`` or ``S`` of 0) return empty tensors without a launch.
        Differentiable with respect to ``q`` and ``k``: the backward is the transpose
        of the rotation, ``dx = g * cos - rotate_half(g * sin)``, by the same kernel in
        one launch; it keeps ``cos`` and ``sin`` (nothing else) for it.

    Raises:
        TypeError: ``q`` or ``k`` is not a tensor or has an unsupported dtype, their
            dtypes differ, or ``cos`` or ``sin`` is not a float32 tensor.
        ValueError: a tensor has the wrong rank; ``k``, ``cos`` or ``sin`` disagrees with
            ``q`` on ``B``, ``S`` or ``D``; ``H`` or ``H_kv`` is 0; ``D`` is odd or out of
            range; ``cos`` or ``sin`` requires grad while grad mode is on; or the
            tensors are on different devices (or on the CPU while the interpreter is off).

    Registered as ``torch.ops.gpuperf.rope`` with its backward
    ``torch.ops.gpuperf.rope_backward``: inside ``torch.compile`` this function calls
    them, so a compiled model keeps one graph and trains through it.

    Memory traffic: reads ``q``, ``k``, ``cos`` and ``sin`` once and writes both outputs
    once, ``2 * B * S * (H + H_kv) * D * element_size + 2 * B * S * D * 4`` bytes (the
    tables' rows are read from memory once per block of tokens, and from L2 by the
    programs of the other heads); 3 FLOPs per output element. Algorithm: Su et al.,
    "RoFormer", arXiv:2104.09864; the convention of ``apply_rotary_pos_emb`` in Hugging
    Face transformers' Llama.
    """
    _check(q, k, cos, sin)
    return _rotate(q, k, cos, sin, False)


def rope_cos_sin(
    positions: torch.Tensor, head_dim: int, *, base: float = 10000.0, dtype: torch.dtype = torch.float32
) -> tuple[torch.Tensor, torch.Tensor]:
    """The rotary tables ``(cos, sin)`` at ``positions``, for :func:`rope` (plain PyTorch).

    ``inv_freq = base ** -(arange(0, D, 2) / D)``, ``angles = positions[..., None] *
    inv_freq``, ``emb = cat(angles, angles, -1)``; returns ``(cos(emb), sin(emb))``. As in
    Hugging Face transformers' ``LlamaRotaryEmbedding`` without frequency scaling,
    except that the angles are computed in float64 before the cast: in float32 an
    angle at position 32,768 is off by up to 2**-9 radians, in float64 by 1e-12.

    Args:
        positions: an integer tensor of any shape (``(B, S)`` for :func:`rope`), on any
            device.
        head_dim: ``D``, a positive even int.
        base: the frequency base, positive and finite (Llama 2: 10,000, the default;
            Llama 3: 500,000).
        dtype: a floating-point dtype of the tables (float32 for :func:`rope`).

    Returns:
        ``(cos, sin)``, each of shape ``positions.shape + (head_dim,)``, of ``dtype``, on
        ``positions``' device.

    Raises:
        TypeError: ``positions`` is not an integer tensor, ``head_dim`` not an int,
            ``base`` not a number, or ``dtype`` not a floating-point dtype.
        ValueError: ``head_dim`` is not positive and even, or ``base`` not positive and
            finite.
    """
    if not isinstance(positions, torch.Tensor):
        raise TypeError(f"positions must be a torch.Tensor, got {type(positions).__name__}")
    if positions.dtype.is_floating_point or positions.dtype.is_complex or positions.dtype == torch.bool:
        raise TypeError(
            f"positions must be an integer tensor, got dtype {str(positions.dtype).removeprefix('torch.')}"
        )
    if isinstance(head_dim, bool) or not isinstance(head_dim, int):
        raise TypeError(f"head_dim must be an int, got {type(head_dim).__name__}")
    if head_dim <= 0 or head_dim % 2:
        raise ValueError(f"head_dim must be positive and even, got {head_dim}")
    if isinstance(base, bool) or not isinstance(base, (int, float)):
        raise TypeError(f"base must be a number, got {type(base).__name__}")
    if not (math.isfinite(base) and base > 0):
        raise ValueError(f"base must be positive and finite, got {base}")
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating-point torch.dtype, got {dtype}")
    exponents = torch.arange(0, head_dim, 2, dtype=torch.float64, device=positions.device) / head_dim
    inv_freq = float(base) ** -exponents
    angles = positions.to(torch.float64)[..., None] * inv_freq
    emb = torch.cat((angles, angles), dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


__all__ = ["rope", "rope_cos_sin"]
