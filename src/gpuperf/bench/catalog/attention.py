"""Attention benchmarks (tutorial 04): forward and backward in TFLOP/s against the measured
matmul ceiling, and the peak memory of one training step, against SDPA's backends,
FlexAttention and naive PyTorch; and (tutorial 07) the decode step against a KV cache in
GB/s of cache read, against SDPA on the same cache."""

from __future__ import annotations

import torch

from gpuperf import reference
from gpuperf.bench import metrics
from gpuperf.bench.catalog.benchmark import ELEMENT_SIZE, TFLOPS_CEILING, Benchmark, Provider, call, kernels

#: Sequence lengths at fixed work per batch, as the FlashAttention papers measure:
#: B * S = 16384 tokens and H * D = 2048, so every point does about the same FLOPs
#: per token and only the attention span grows.
ATTENTION_SEQ_LENS = (512, 1024, 2048, 4096, 8192, 16384)
ATTENTION_TOKENS = 16384
ATTENTION_WIDTH = 2048
ATTENTION_AXES = (("dtype", ("float16", "bfloat16")), ("head_dim", (64, 128)), ("causal", (False, True)))


def attention_shape(seq_len: int, head_dim: int) -> tuple[int, int, int, int]:
    """``(B, H, S, D)`` of the attention benchmarks at ``seq_len`` and ``head_dim``."""
    return ATTENTION_TOKENS // seq_len, ATTENTION_WIDTH // head_dim, seq_len, head_dim


def attention_inputs(seq_len, device, dtype="float16", head_dim=128, causal=False, grad=False):
    """``(q, k, v, causal)``, or with ``grad`` ``(q, k, v, grad_out, causal)``, q, k and v
    requiring gradients."""
    shape = attention_shape(seq_len, head_dim)
    dt = getattr(torch, dtype)
    q, k, v = (torch.randn(shape, device=device, dtype=dt, requires_grad=grad) for _ in range(3))
    return (q, k, v, torch.randn(shape, device=device, dtype=dt), causal) if grad else (q, k, v, causal)


def _sdpa(backend_name: str):
    """``attention(q, k, v, causal)`` by ``scaled_dot_product_attention`` with one backend forced."""

    def attend(q, k, v, causal):
        from torch.nn.attention import SDPBackend, sdpa_kernel

        with sdpa_kernel(getattr(SDPBackend, backend_name)):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)

    return lambda q, k, v, causal: attend


#: FlexAttention compiled once per dtype, head dim and masking (the key), for every
#: sequence length: ``{key: compiled flex_attention}``, one entry at a time.
_FLEX_COMPILED: dict = {}


def _flex(q, k, v, causal):
    """FlexAttention, compiled by ``torch.compile`` (which generates its Triton kernels) with
    dynamic shapes, so that one compilation serves every sequence length of a panel; causal
    masking by a block mask, which skips the tiles above the diagonal."""
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    key = (q.dtype, q.shape[-1], causal, q.requires_grad)
    if q.requires_grad:
        # The backward benchmark differentiates one graph repeatedly (retain_graph=True),
        # which AOTAutograd's donated buffers (reused for the gradients) forbid.
        torch._functorch.config.donated_buffer = False
    if key not in _FLEX_COMPILED:
        torch._dynamo.reset()
        _FLEX_COMPILED.clear()
        _FLEX_COMPILED[key] = torch.compile(flex_attention, dynamic=True)
    compiled = _FLEX_COMPILED[key]
    if not causal:
        return lambda q, k, v, causal: compiled(q, k, v)
    s = q.shape[2]
    mask = create_block_mask(lambda b, h, i, j: i >= j, None, None, s, s, device=q.device)
    return lambda q, k, v, causal: compiled(q, k, v, block_mask=mask)


def _ours_attention(q, k, v, causal):
    return lambda q, k, v, causal: kernels().attention(q, k, v, causal=causal)


def _naive_attention(q, k, v, causal):
    return lambda q, k, v, causal: reference.attention_naive(q, k, v, causal)


#: The attention implementations compared, by provider key: ``(label, setup)`` where
#: ``setup(q, k, v, causal)`` prepares one (compiles it, say) and returns
#: ``attend(q, k, v, causal) -> output``.
ATTENTION_IMPLEMENTATIONS = {
    "triton": ("Triton (gpuperf.kernels.attention)", _ours_attention),
    "flash": ("SDPA, FlashAttention-2 backend", _sdpa("FLASH_ATTENTION")),
    "cudnn": ("SDPA, cuDNN backend", _sdpa("CUDNN_ATTENTION")),
    "efficient": ("SDPA, memory-efficient backend", _sdpa("EFFICIENT_ATTENTION")),
    "math": ("SDPA, math backend", _sdpa("MATH")),
    "flex": ("FlexAttention, torch.compile (dynamic shapes)", _flex),
    "naive": ("naive eager PyTorch", _naive_attention),
}


def forward_provider(key: str) -> Provider:
    label, setup = ATTENTION_IMPLEMENTATIONS[key]

    def make(q, k, v, causal):
        attend = setup(q, k, v, causal)
        return lambda: attend(q, k, v, causal)

    return Provider(key, label, make)


def _backward_provider(key: str) -> Provider:
    """The backward pass alone: the forward runs once in ``make``, each call differentiates its graph."""
    label, setup = ATTENTION_IMPLEMENTATIONS[key]

    def make(q, k, v, grad_out, causal):
        out = setup(q, k, v, causal)(q, k, v, causal)
        return lambda: torch.autograd.grad(out, (q, k, v), grad_out, retain_graph=True)

    return Provider(key, label, make)


def _training_step_provider(key: str) -> Provider:
    """Forward and backward, from inputs to gradients, as one training step runs them."""
    label, setup = ATTENTION_IMPLEMENTATIONS[key]

    def make(q, k, v, grad_out, causal):
        attend = setup(q, k, v, causal)
        return lambda: torch.autograd.grad(attend(q, k, v, causal), (q, k, v), grad_out)

    return Provider(key, label, make)


def _attention_flops(seq_len, dtype, head_dim, causal, backward=False):
    return metrics.attention_flops(*attention_shape(seq_len, head_dim), causal=causal, backward=backward)


def _attention_bytes(seq_len, dtype, head_dim, causal):
    return metrics.attention_bytes(*attention_shape(seq_len, head_dim), element_size=ELEMENT_SIZE[dtype])


def _attention_grads_ref(q, k, v, grad_out, causal):
    return reference.attention_grads_ref(q, k, v, grad_out, causal)


#: The sources the attention records hash (a change to one makes them stale).
ATTENTION_SOURCES = ("kernels/attention.py",)
#: What a quick live build measures of the forward and backward sweeps: a medium and a
#: long sequence (the page's ratios start at S = 4096), float16 only (bfloat16 runs the
#: same kernels), every head dimension and mask, and the providers the page's sentences
#: read: ours, SDPA's FlashAttention-2 and cuDNN backends, and the naive version.
#: FlexAttention's torch.compile (about 45 s on a first build) and the other SDPA
#: backends are drawn from the committed sweep.
ATTENTION_QUICK = (
    ("seq_len", (4096, 16384)),
    ("dtype", ("float16",)),
    ("provider", ("triton", "flash", "cudnn", "naive")),
)

ATTENTION_FORWARD = Benchmark(
    name="attention_forward",
    title=f"Attention forward, B·S = {ATTENTION_TOKENS}, H·D = {ATTENTION_WIDTH}",
    x_name="seq_len",
    x_label="sequence length S",
    x_values=ATTENTION_SEQ_LENS,
    make_inputs=attention_inputs,
    reference=lambda q, k, v, causal: reference.attention_ref(q, k, v, causal),
    providers=tuple(forward_provider(key) for key in ATTENTION_IMPLEMENTATIONS),
    baseline="flash",
    metric="TFLOP/s",
    bytes=_attention_bytes,
    flops=_attention_flops,
    ceiling=lambda dtype, head_dim, causal: TFLOPS_CEILING[dtype],
    sources=ATTENTION_SOURCES,
    axes=ATTENTION_AXES,
    reduction=lambda seq_len, **axes: seq_len,
    quick=ATTENTION_QUICK,
)

ATTENTION_BACKWARD = Benchmark(
    name="attention_backward",
    title=f"Attention backward, B·S = {ATTENTION_TOKENS}, H·D = {ATTENTION_WIDTH}",
    x_name="seq_len",
    x_label="sequence length S",
    x_values=ATTENTION_SEQ_LENS,
    make_inputs=lambda s, device, **axes: attention_inputs(s, device, **axes, grad=True),
    reference=_attention_grads_ref,
    providers=tuple(_backward_provider(key) for key in ATTENTION_IMPLEMENTATIONS),
    baseline="flash",
    metric="TFLOP/s",
    bytes=_attention_bytes,
    flops=lambda s, **axes: _attention_flops(s, **axes, backward=True),
    ceiling=lambda dtype, head_dim, causal: TFLOPS_CEILING[dtype],
    sources=ATTENTION_SOURCES,
    axes=ATTENTION_AXES,
    reduction=lambda seq_len, **axes: seq_len,
    quick=ATTENTION_QUICK,
)

ATTENTION_MEMORY = Benchmark(
    name="attention_memory",
    title="Peak memory of one training step (forward + backward), float16, D = 128, not causal",
    x_name="seq_len",
    x_label="sequence length S (B·S = 16384, H = 16)",
    x_values=ATTENTION_SEQ_LENS,
    make_inputs=lambda s, device: attention_inputs(s, device, "float16", 128, False, grad=True),
    reference=_attention_grads_ref,
    providers=tuple(_training_step_provider(key) for key in ATTENTION_IMPLEMENTATIONS),
    baseline="flash",
    metric="GiB",
    bytes=lambda s: _attention_bytes(s, "float16", 128, False),
    flops=lambda s: 3.5 * _attention_flops(s, "float16", 128, False),
    ceiling=None,
    sources=ATTENTION_SOURCES,
    timer="memory",
    reduction=lambda seq_len: seq_len,
    # The peak memory the page's sentence compares: ours, FlashAttention-2's and the naive one's.
    quick=(("seq_len", (4096, 16384)), ("provider", ("triton", "flash", "naive"))),
)


#: The decode benchmark's shape: Llama-3-8B's attention (32 query heads, 8 KV heads of
#: 128), bfloat16, one new query per sequence, and a cache of exactly ``L`` keys each.
ATTENTION_DECODE_HEADS, ATTENTION_DECODE_KV_HEADS, ATTENTION_DECODE_HEAD_DIM = 32, 8, 128
ATTENTION_DECODE_KV_LENS = (1024, 2048, 4096, 8192, 16384, 32768)
ATTENTION_DECODE_BATCHES = (1, 8, 64)


def _decode_inputs(kv_len: int, device, batch: int = 1):
    """``(q, k_cache, v_cache, cache_seqlens)``: random bfloat16, every sequence ``kv_len``
    keys long in a cache of exactly ``kv_len`` (at batch 64 x 32k, 8.6 GB of cache)."""
    dt = torch.bfloat16
    q = torch.randn(batch, ATTENTION_DECODE_HEADS, 1, ATTENTION_DECODE_HEAD_DIM, device=device, dtype=dt)
    k, v = (
        torch.randn(
            batch, ATTENTION_DECODE_KV_HEADS, kv_len, ATTENTION_DECODE_HEAD_DIM, device=device, dtype=dt
        )
        for _ in "kv"
    )
    return q, k, v, torch.full((batch,), kv_len, dtype=torch.int32, device=device)


def _decode_sdpa(backend_name: str | None):
    """SDPA over the whole cache without a mask (it is full), with enable_gqa; PyTorch's
    choice of backend, or ``backend_name`` forced."""

    def attend(q, k, v, cache_seqlens):
        if backend_name is None:
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=True)
        from torch.nn.attention import SDPBackend, sdpa_kernel

        with sdpa_kernel(getattr(SDPBackend, backend_name)):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=True)

    return attend


def _decode_triton(q, k, v, cache_seqlens):
    return kernels().attention_decode(q, k, v, cache_seqlens)


def _decode_launch(q, k, v, cache_seqlens) -> dict:
    """The launch :func:`gpuperf.kernels.attention_decode` makes on these inputs."""
    from gpuperf.kernels.attention_decode import decode_launch_for

    return decode_launch_for(q, k).as_dict()


ATTENTION_DECODE = Benchmark(
    name="attention_decode",
    title=(
        f"Attention decode step, bfloat16, H = {ATTENTION_DECODE_HEADS}, H_kv = {ATTENTION_DECODE_KV_HEADS}, "
        f"D = {ATTENTION_DECODE_HEAD_DIM} (Llama-3-8B), one query per sequence"
    ),
    x_name="kv_len",
    x_label="KV cache length L (keys per sequence)",
    x_values=ATTENTION_DECODE_KV_LENS,
    make_inputs=_decode_inputs,
    reference=reference.attention_decode_ref,
    providers=(
        Provider(
            "triton", "Triton (gpuperf.kernels.attention_decode)", call(_decode_triton), config=_decode_launch
        ),
        Provider("sdpa", "SDPA, full cache, PyTorch's backend", call(_decode_sdpa(None))),
        Provider(
            "sdpa_flash", "SDPA, full cache, FlashAttention-2 backend", call(_decode_sdpa("FLASH_ATTENTION"))
        ),
        Provider(
            "sdpa_masked", "SDPA, padded cache with a length mask", call(reference.attention_decode_sdpa)
        ),
    ),
    baseline="sdpa",
    metric="GB/s",
    bytes=lambda kv_len, batch: metrics.attention_decode_bytes(
        batch,
        ATTENTION_DECODE_HEADS,
        ATTENTION_DECODE_KV_HEADS,
        1,
        kv_len,
        ATTENTION_DECODE_HEAD_DIM,
        element_size=2,
    ),
    flops=lambda kv_len, batch: metrics.attention_decode_flops(
        batch, ATTENTION_DECODE_HEADS, 1, kv_len, ATTENTION_DECODE_HEAD_DIM
    ),
    ceiling="stream_gbps",
    # Q K^T and P V are bfloat16 tl.dot products, on the tensor cores.
    compute_roof="bf16_tflops",
    sources=("kernels/attention_decode.py",),
    axes=(("batch", ATTENTION_DECODE_BATCHES),),
    # Every provider rounds the probabilities to bfloat16 before P @ V (FlashAttention
    # does): at 1k random keys that alone is up to 7e-4 off outputs of at most 0.2, past
    # the fixed 1e-4; one bfloat16 rounding unit at 1 (0.0078) is allowed instead.
    reduction=lambda kv_len, batch: 1,
    # A quick live build: a medium and the longest cache (tutorial 07's decode steps read
    # 4096), at every batch the page names.
    quick=(("kv_len", (4096, 32768)),),
)
