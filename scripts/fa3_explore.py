"""A first look at tutorial 08's Gluon attention on a Hopper GPU (not a benchmark: no records).

Usage: ``python scripts/fa3_explore.py check`` runs the FlashAttention-3-style forward at
odd shapes (head dims, causal, grouped-query heads, sequence lengths that are no multiple
of a tile, ``S_q != S_k``) for every rung of the ladder and prints its error against the
float32 reference beside cuDNN's. ``python scripts/fa3_explore.py bench [D ...]`` prints
TFLOP/s at the attention benchmarks' shapes (B·S = 16384, H·D = 2048, float16) for
cuDNN, FlashAttention-2, Triton (tutorial 04) and the Gluon rungs, all in one run, from
``gpuperf.bench.timing.time_ms``.
"""

import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from gpuperf.bench.catalog.attention import attention_shape
from gpuperf.bench.timing import time_ms
from gpuperf.kernels import attention
from gpuperf.kernels.gluon.attention import FA3Config, attention_fa3
from gpuperf.reference import attention_ref

RUNGS = {
    "ws": FA3Config(overlap=False, persistent=False),
    "overlap": FA3Config(persistent=False),
    "c2": FA3Config(),
}
#: Three consumer warpgroups (D 64 only), at two register splits, with and without ping-pong.
VARIANTS = {
    "c3": FA3Config(consumers=3),
    "c3_r152": FA3Config(consumers=3, consumer_registers=152),
    "c3_np": FA3Config(consumers=3, persistent=False),
    "c3_pp": FA3Config(consumers=3, pingpong=True, persistent=False),
}


def sdpa(backend):
    def attend(q, k, v, causal):
        with sdpa_kernel(backend):
            return torch.nn.functional.scaled_dot_product_attention(
                q, k, v, is_causal=causal, enable_gqa=True
            )

    return attend


def relative_error(out, ref) -> float:
    return ((out.float() - ref).norm() / ref.norm()).item()


def check():
    shapes = [
        # B, H, H_kv, S_q, S_k, D, causal
        (1, 2, 2, 128, 128, 128, False),
        (2, 4, 2, 1000, 1000, 128, False),
        (2, 4, 2, 1000, 1000, 128, True),
        (1, 8, 1, 300, 777, 64, False),
        (1, 3, 3, 65, 65, 64, True),
        (2, 2, 1, 1, 513, 128, False),
        (1, 2, 2, 4096, 4096, 128, True),
        (1, 2, 2, 4096, 4096, 64, True),
    ]
    failures = 0
    for b, h, hkv, sq, sk, d, causal in shapes:
        g = torch.Generator(device="cuda").manual_seed(0)
        q = torch.randn(b, h, sq, d, device="cuda", dtype=torch.float16, generator=g)
        k = torch.randn(b, hkv, sk, d, device="cuda", dtype=torch.float16, generator=g)
        v = torch.randn(b, hkv, sk, d, device="cuda", dtype=torch.float16, generator=g)
        ref = attention_ref(q, k, v, causal)
        base = relative_error(sdpa(SDPBackend.MATH)(q, k, v, causal), ref)
        for key, config in {**RUNGS, **VARIANTS}.items():
            if config.consumers == 3 and d > 64:
                continue
            try:
                out = attention_fa3(q, k, v, causal=causal, config=config)
                torch.cuda.synchronize()
                err = relative_error(out, ref)
            except Exception as e:
                print(f"{(b, h, hkv, sq, sk, d, causal)} {key:8} failed: {type(e).__name__}: {str(e)[:300]}")
                failures += 1
                continue
            ok = err <= max(2 * base, 1e-3)
            failures += not ok
            verdict = "ok" if ok else "WRONG"
            shape = (b, h, hkv, sq, sk, d, causal)
            print(f"{shape} {key:8} rel. error {err:.2e} (math {base:.2e}) {verdict}", flush=True)
    # A transposed layout (B, S, H, D) read in place, and bfloat16.
    q = torch.randn(2, 700, 4, 128, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
    k = torch.randn(2, 700, 2, 128, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
    v = torch.randn(2, 700, 2, 128, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
    err = relative_error(attention_fa3(q, k, v, causal=True), attention_ref(q, k, v, True))
    print(f"transposed bf16 causal rel. error {err:.2e}", flush=True)
    print("failures", failures)


def bench(head_dims):
    print(torch.cuda.get_device_name(), torch.__version__, flush=True)
    for d in head_dims:
        for causal in (False, True):
            for s in (1024, 4096, 8192, 16384):
                shape = attention_shape(s, d)
                q, k, v = (torch.randn(shape, device="cuda", dtype=torch.float16) for _ in range(3))
                flops = 4 * shape[0] * shape[1] * s * s * d // (2 if causal else 1)
                calls = {
                    "cudnn": lambda: sdpa(SDPBackend.CUDNN_ATTENTION)(q, k, v, causal),
                    "flash2": lambda: sdpa(SDPBackend.FLASH_ATTENTION)(q, k, v, causal),
                    "triton": lambda: attention(q, k, v, causal=causal),
                    **{
                        key: (lambda c=c: attention_fa3(q, k, v, causal=causal, config=c))
                        for key, c in {**RUNGS, **VARIANTS}.items()
                    },
                }
                base = None
                line = []
                for key, fn in calls.items():
                    try:
                        ms = time_ms(fn).ms
                    except Exception as e:
                        line.append(f"{key} failed {type(e).__name__}")
                        continue
                    base = base or ms
                    line.append(f"{key} {flops / ms / 1e9:.0f} ({base / ms:.2f}x)")
                print(f"D{d} {'causal' if causal else 'full  '} S{s:5}: " + "  ".join(line), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "check":
        check()
    else:
        bench([int(d) for d in sys.argv[2:]] or [128, 64])
