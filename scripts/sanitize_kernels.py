"""Run every kernel at odd shapes, for ``compute-sanitizer --tool memcheck`` (GPU only).

Usage: ``compute-sanitizer --tool memcheck python scripts/sanitize_kernels.py [SECTION ...]``
(every section by default; :data:`SECTIONS` names them). The
shapes cross every edge: one element, partial blocks and tiles, K not a multiple
of BLOCK_K, transposed operands, rows just past the single-pass softmax limit,
attention sequences of 77 with grouped heads and causal masking, forward and backward;
the persistent and FP8 matmuls at M = 1, N = 17 and K off the block, through every rung
(computed pointers, TMA, TMA + warp specialization) where TMA's 16-byte rule allows it;
RMSNorm forward and backward, fused and chunked, strided, in fp16, bf16 and fp32;
RoPE forward and backward on fused-QKV views at S = 1 and 77, MQA, head dims off a power
of two, several head blocks, stride-0 tables and gradients;
SwiGLU forward and backward at M = 1 and N, K off every tile, through TMA and pointers;
the decode step against a KV cache at odd lengths (equal to S_q and to S_max, out of
range), GQA and MQA, S_q up to 16, caches off every tile, one split and many;
the split-K matmul at M = 1 to 70, N and K off every tile, K = 1, nn.Linear's layout, the
rule's slices, one, and more than K has tiles;
the grouped matmul on uneven groups (empty experts, rows past the last offset, one row),
nn.Linear's weight layout, and offsets that decrease or pass the end (clamped, never out of
bounds); the block-scaled FP8 matmul with K off the scale block and column-major scales.
Each call is made twice: the second launches from the plan the first one made.
"""

import torch

from gpuperf.kernels import (
    PersistentConfig,
    attention,
    configs,
    matmul,
    matmul_fp8,
    matmul_persistent,
    softmax,
    to_fp8,
    vector_add,
)
from gpuperf.kernels.tma import tma_layout

RUNGS = (
    None,  # the tuned config
    PersistentConfig(128, 128, 64, num_stages=3, tma=False),
    PersistentConfig(128, 256, 64, num_stages=3),
    PersistentConfig(128, 256, 64, num_stages=3, warp_specialize=True),
)


def twice(fn, *args, **kwargs):
    fn(*args, **kwargs)
    fn(*args, **kwargs)


def _basics():
    """Vector add, softmax (one pass, the online pass past the fused limit, a transposed input)
    and the tiled matmul with its epilogue, at shapes off every block, K = 0 too."""
    for shape in [(1,), (1000,), (4097,), (3, 5, 7)]:
        twice(vector_add, torch.randn(shape, device="cuda"), torch.randn(shape, device="cuda"))
    long_row = configs.SOFTMAX_MAX_FUSED_COLS + 1
    for shape in [(1, 1), (3, 7), (5, 1000), (2, long_row), (1, 5 * configs.SOFTMAX_ONLINE_BLOCK_N + 123)]:
        twice(softmax, torch.randn(shape, device="cuda"))
    twice(softmax, torch.randn(129, 33, device="cuda").t())
    for m, n, k in [(1, 1, 1), (17, 33, 65), (130, 70, 200), (4099, 257, 3001), (16, 17, 4096), (5, 7, 0)]:
        for dtype in (torch.float16, torch.bfloat16):
            a = torch.randn(m, k, device="cuda", dtype=dtype)
            b = torch.randn(k, n, device="cuda", dtype=dtype)
            bias = torch.randn(n, device="cuda", dtype=dtype)
            twice(matmul, a, b, bias=bias, activation="gelu")
            twice(matmul, a.t().contiguous().t(), b.t().contiguous().t())


def _attention():
    """Attention forward and backward: S = 77 (no tile multiple), GQA, MQA, causal, S_q != S_k."""
    for b, h, h_kv, s_q, s_k, d, causal in [
        (1, 1, 1, 1, 1, 16, False),
        (2, 4, 4, 77, 77, 64, True),
        (1, 8, 2, 77, 77, 128, True),
        (1, 4, 1, 77, 130, 32, False),
        (1, 2, 2, 200, 45, 128, False),
    ]:
        for dtype in (torch.float16, torch.bfloat16):
            q = torch.randn(b, h, s_q, d, device="cuda", dtype=dtype, requires_grad=True)
            k, v = (
                torch.randn(b, h_kv, s_k, d, device="cuda", dtype=dtype, requires_grad=True) for _ in "kv"
            )
            attention(q, k, v, causal=causal).backward(torch.randn(b, h, s_q, d, device="cuda", dtype=dtype))


def _persistent():
    """Persistent matmuls: M = 1, N = 17, K not a multiple of BLOCK_K; TMA where the 16-byte rule allows."""
    for m, n, k in [(1, 16, 72), (1, 17, 64), (130, 24, 200), (257, 136, 4104), (33, 17, 100)]:
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
        for config in RUNGS:
            if (config is None or config.tma) and (tma_layout(a) is None or tma_layout(b) is None):
                continue  # a clear ValueError, tested in tests/test_matmul_persistent.py
            twice(matmul_persistent, a, b, config=config)
        for axis in (None, -1):
            a8, scale_a = to_fp8(a.float(), axis=axis)
            bt8, scale_bt = to_fp8(b.t().float(), axis=axis)
            for config in RUNGS:
                config = config and PersistentConfig(**{**config.as_dict(), "block_k": 128})
                if config and config.tma and (tma_layout(a8) is None or tma_layout(bt8.t()) is None):
                    continue
                twice(matmul_fp8, a8, bt8.t(), scale_a, scale_bt.t(), config=config)
            twice(matmul_fp8, a8, bt8.t().contiguous(), scale_a, scale_bt.t(), fast_accum=True)


def _elementwise():
    """The optimization-strategy guide's elementwise kernels: partial blocks and strides past the end."""
    from gpuperf.kernels import add_relu_mul, gelu, strided_copy

    for n in (1, 1000, 4097):
        x, y, z = (torch.randn(n, device="cuda") for _ in range(3))
        twice(gelu, x)
        twice(add_relu_mul, x, y, z)
        for stride in (1, 3, 64):
            twice(strided_copy, x, stride)


def _row_mean():
    """The profiling guide's row mean: one row, rows past a block, a column count off every
    block size, a strided last dimension, and fp16."""
    from gpuperf.kernels import row_mean

    for shape in ((1, 1), (37, 1000), (4099, 257)):
        twice(row_mean, torch.randn(shape, device="cuda"))
    twice(row_mean, torch.randn(300, 514, device="cuda")[:, ::2])
    twice(row_mean, torch.randn(70, 333, device="cuda", dtype=torch.float16))


def _rms_norm():
    """RMSNorm forward and backward: one element, rows off every block, a row past the fused
    backward and one past the fused forward (both chunked, ragged last chunk), fp16, a
    strided last dimension and a strided weight, and the stride-0 gradient of y.sum()."""
    from gpuperf.kernels import rms_norm
    from gpuperf.kernels.rms_norm import RMS_NORM_BWD_MAX_FUSED_COLS, RMS_NORM_MAX_FUSED_COLS

    def norm_and_grad(x, weight, grad=None):
        x, weight = x.detach().requires_grad_(), weight.detach().requires_grad_()
        y = rms_norm(x, weight)
        y.backward(torch.randn_like(y) if grad is None else grad)
        with torch.no_grad():
            twice(rms_norm, x, weight)

    for shape in [(1, 1), (3, 7), (37, 1000), (4099, 257), (5, RMS_NORM_BWD_MAX_FUSED_COLS + 3)]:
        for dtype in (torch.float16, torch.bfloat16, torch.float32):
            norm_and_grad(
                torch.randn(shape, device="cuda", dtype=dtype),
                torch.randn(shape[-1], device="cuda", dtype=dtype),
            )
    norm_and_grad(
        torch.randn(3, RMS_NORM_MAX_FUSED_COLS + 77, device="cuda"),
        torch.randn(RMS_NORM_MAX_FUSED_COLS + 77, device="cuda"),
    )
    x = torch.randn(2, 300, 514, device="cuda", dtype=torch.float16)[:, ::3, ::2]
    weight = torch.randn(514, device="cuda", dtype=torch.float16)[::2]
    norm_and_grad(x, weight)
    norm_and_grad(x, weight, torch.ones((), device="cuda", dtype=torch.float16).expand(x.shape))


def _rope():
    """RoPE forward and backward: q and k as transposed views of a fused QKV buffer, one
    token, S = 77 (token blocks off the batch boundary), one key head, D = 96 (a padded
    half), more query heads than a program takes, tables broadcast with stride 0, and
    the stride-0 gradients of a sum."""
    from gpuperf.kernels import rope, rope_cos_sin

    def rope_and_grad(b, h, h_kv, s, d, dtype, expand=False, sum_grad=False):
        qkv = torch.randn(b, s, h + 2 * h_kv, d, device="cuda", dtype=dtype, requires_grad=True)
        q, k, _v = qkv.split([h, h_kv, h_kv], dim=2)
        positions = torch.arange(s, device="cuda").expand(b, s)
        cos, sin = rope_cos_sin(positions[:1] if expand else positions, d, base=500000.0)
        if expand:
            cos, sin = cos.expand(b, s, d), sin.expand(b, s, d)
        q_out, k_out = rope(q.transpose(1, 2), k.transpose(1, 2), cos, sin)
        if sum_grad:
            (q_out.sum() + k_out.sum()).backward()
        else:
            torch.autograd.backward((q_out, k_out), (torch.randn_like(q_out), torch.randn_like(k_out)))
        with torch.no_grad():
            twice(rope, q.transpose(1, 2), k.transpose(1, 2), cos, sin)

    for b, h, h_kv, s, d in [(1, 1, 1, 1, 16), (2, 4, 1, 77, 64), (3, 12, 4, 77, 96), (1, 32, 8, 333, 128)]:
        for dtype in (torch.float16, torch.bfloat16, torch.float32):
            rope_and_grad(b, h, h_kv, s, d, dtype)
    rope_and_grad(4, 32, 8, 1, 128, torch.bfloat16, expand=True)
    rope_and_grad(2, 6, 2, 45, 256, torch.bfloat16, expand=True, sum_grad=True)


def _swiglu():
    """SwiGLU forward and backward: M = 1, N and K off every tile (the gate tile of the last
    column of tiles reading up-weights, the up tile past 2N), a transposed x and an
    nn.Linear-layout weight; TMA where the 16-byte rule allows it, computed pointers
    elsewhere and when asked; fp16 and bf16."""
    from gpuperf.kernels import swiglu

    swiglu_configs = (
        None,  # the tuned or default config
        PersistentConfig(128, 128, 64, num_stages=3, tma=False),
        PersistentConfig(128, 64, 64, num_warps=4, num_stages=3, warp_specialize=True),
        PersistentConfig(64, 128, 64, num_warps=4, num_stages=4),
    )
    # (1, 300, 512) and (65, 300, 4096): a row-major weight whose up half starts 600 bytes in,
    # off a 16-byte boundary (computed pointers, not TMA: a misaligned box faults the GPU).
    shapes = [(1, 16, 72), (17, 33, 65), (130, 70, 200), (257, 136, 4104), (64, 1000, 512), (1, 300, 512)]
    for m, n, k in [*shapes, (65, 300, 4096)]:
        for dtype in (torch.float16, torch.bfloat16):
            x = torch.randn(m, k, device="cuda", dtype=dtype)
            w = torch.randn(k, 2 * n, device="cuda", dtype=dtype) / k**0.5
            for config in swiglu_configs:
                twice(swiglu, x, w, config=config)
            twice(swiglu, x.t().contiguous().t(), w.t().contiguous().t())
            xg, wg = x.clone().requires_grad_(), w.clone().requires_grad_()
            swiglu(xg, wg).backward(torch.randn(m, n, device="cuda", dtype=dtype))


def _attention_decode():
    """Decode against a KV cache: lengths that differ per sequence, equal S_q and S_max, and
    out of range (read nothing); S_max off every tile; GQA, MQA and query rows past one
    tile; caches laid out (B, S_max, H_kv, D); the launch rule's splits, one, and many."""
    from gpuperf.kernels import attention_decode

    for b, h, h_kv, s_q, s_max, d, lengths in [
        (1, 1, 1, 1, 1, 64, [1]),
        (3, 8, 2, 3, 77, 128, [3, 77, 40]),
        (2, 32, 8, 1, 1000, 128, [1000, 999]),
        (2, 16, 1, 16, 300, 64, [16, 257]),
        (2, 4, 1, 16, 45, 256, [45, 20]),
        (2, 4, 2, 7, 32, 16, [7, 30]),
        (1, 8, 1, 16, 70, 32, [69]),
        (4, 4, 2, 2, 100, 128, [1, 101, -3, 50]),
    ]:
        for dtype in (torch.float16, torch.bfloat16):
            q = torch.randn(b, s_q, h, d, device="cuda", dtype=dtype).transpose(1, 2)
            k, v = (torch.randn(b, s_max, h_kv, d, device="cuda", dtype=dtype).transpose(1, 2) for _ in "kv")
            n = torch.tensor(lengths, dtype=torch.int32, device="cuda")
            for splits in (None, 1, 7, 64):
                twice(attention_decode, q, k, v, n, _num_splits=splits)


def _matmul_splitk():
    """Split-K matmul of a few rows: N and K off every tile (K = 1 and K past one slice by a
    partial tile), rows past one block, a transposed (nn.Linear) weight and a strided a;
    the launch rule's slices, one slice (the output written directly), and more than K has tiles."""
    from gpuperf.kernels import matmul_splitk

    for m, n, k in [
        (1, 1, 1),
        (1, 33, 300),
        (3, 4097, 1000),
        (17, 100, 4104),
        (64, 65, 14337),
        (70, 130, 777),
    ]:
        for dtype in (torch.float16, torch.bfloat16):
            a = torch.randn(m, k, device="cuda", dtype=dtype)
            b = torch.randn(k, n, device="cuda", dtype=dtype)
            for split_k in (None, 1, 3, 1000):
                twice(matmul_splitk, a, b, split_k=split_k)
            twice(
                matmul_splitk,
                torch.randn(m, 2 * k, device="cuda", dtype=dtype)[:, ::2],
                b.t().contiguous().t(),
            )


def _gluon_fp8():
    """The Gluon FP8 matmul (Hopper only): M = 1, N off every tile, K off a step (TMA fills
    the tail with zeros), a K of one step and of two, per-tensor and per-row scales, both
    promotion schedules, and float32 output."""
    from gpuperf.kernels import to_fp8
    from gpuperf.kernels.gluon import SCHEDULES, GluonFP8Config, matmul_fp8_promoted

    if torch.cuda.get_device_capability()[0] != 9:
        print("gluon_fp8: not a Hopper GPU, skipped")
        return
    shapes = [(1, 1, 16), (1, 17, 32), (130, 70, 208), (130, 264, 208), (257, 136, 4112), (33, 300, 144)]
    for m, n, k in shapes:
        for axis in (None, -1):
            a, scale_a = to_fp8(torch.randn(m, k, device="cuda"), axis=axis)
            bt, scale_bt = to_fp8(torch.randn(n, k, device="cuda"), axis=axis)
            for schedule in SCHEDULES:
                config = GluonFP8Config(schedule=schedule)
                twice(matmul_fp8_promoted, a, bt.t(), scale_a, scale_bt.t(), config=config)
            twice(matmul_fp8_promoted, a, bt.t(), scale_a, scale_bt.t(), out_dtype=torch.float32)


def _gluon_attention():
    """The Gluon attention forward (Hopper only): a single query, sequences off every tile,
    S_q != S_k, grouped-query heads, both head dims, causal, every rung of the ladder."""
    from gpuperf.kernels.gluon import FA3Config, attention_fa3

    if torch.cuda.get_device_capability()[0] != 9:
        print("gluon_attention: not a Hopper GPU, skipped")
        return
    rungs = [
        FA3Config(overlap=False, persistent=False),
        FA3Config(persistent=False),
        FA3Config(pingpong=True, persistent=False),
        FA3Config(persistent=True),
        FA3Config(block_n=64),
    ]
    three = [FA3Config(consumers=3), FA3Config(consumers=3, pingpong=True, persistent=False)]
    for b, h, h_kv, s_q, s_k, d in [(1, 1, 1, 1, 1, 64), (2, 4, 2, 300, 300, 128), (1, 2, 1, 130, 777, 64)]:
        q = torch.randn(b, h, s_q, d, device="cuda", dtype=torch.float16)
        k, v = (torch.randn(b, h_kv, s_k, d, device="cuda", dtype=torch.float16) for _ in range(2))
        for config in rungs + (three if d == 64 else []):
            twice(attention_fa3, q, k, v, config=config)
            if s_q == s_k:
                twice(attention_fa3, q, k, v, causal=True, config=config)


def _moe():
    from gpuperf.kernels import grouped_matmul, matmul_fp8_blockwise, quantize_fp8_blockwise

    for sizes, extra, k, n in [([1], 0, 1, 1), ([0, 37, 0, 200, 5], 11, 70, 130), ([300, 0, 2], 0, 4096, 17)]:
        offs = torch.tensor(sizes, device="cuda").cumsum(0).to(torch.int32)
        a = torch.randn(sum(sizes) + extra, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(len(sizes), k, n, device="cuda", dtype=torch.bfloat16)
        twice(grouped_matmul, a, b, offs)
        twice(grouped_matmul, a.half(), b.half().transpose(1, 2).contiguous().transpose(1, 2), offs)
        twice(grouped_matmul, a, b, offs.flip(0).contiguous())  # decreasing: clamped groups
        twice(grouped_matmul, a, b, offs + 1000)  # past the rows: clamped to them
    for m, n, k in [(1, 1, 1), (17, 130, 300), (300, 257, 4096)]:
        x_fp8, scale_x = quantize_fp8_blockwise(torch.randn(m, k, device="cuda"))
        w_fp8, scale_w = quantize_fp8_blockwise(torch.randn(n, k, device="cuda"), (128, 128))
        twice(matmul_fp8_blockwise, x_fp8, w_fp8, scale_x, scale_w)
        twice(matmul_fp8_blockwise, x_fp8, w_fp8, scale_x.t().contiguous().t(), scale_w)


#: The sections, in the order they run: ``python scripts/sanitize_kernels.py rope swiglu``
#: runs two of them (all by default).
SECTIONS = {
    "basics": _basics,
    "attention": _attention,
    "persistent": _persistent,
    "elementwise": _elementwise,
    "row_mean": _row_mean,
    "rms_norm": _rms_norm,
    "rope": _rope,
    "swiglu": _swiglu,
    "attention_decode": _attention_decode,
    "matmul_splitk": _matmul_splitk,
    "gluon_fp8": _gluon_fp8,
    "gluon_attention": _gluon_attention,
    "moe": _moe,
}


def main(argv: list[str]) -> None:
    unknown = sorted(set(argv) - set(SECTIONS))
    if unknown:
        raise SystemExit(f"unknown sections {unknown}; known: {list(SECTIONS)}")
    torch.manual_seed(0)
    for name, section in SECTIONS.items():
        if not argv or name in argv:
            section()
            torch.cuda.synchronize()
            print("ran", name, flush=True)
    print("every kernel ran at odd shapes" if not argv else f"ran {argv} at odd shapes")


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
