"""Launch-rule sweeps behind tutorial 07's kernels, and a first look at the layer (GPU only).

Usage: ``python scripts/llama_explore.py [rope] [decode] [swiglu] [layer]`` (all by default).
Prints, for the record of how each launch rule in ``src/gpuperf/kernels`` was chosen:

* ``rope``: GB/s of :func:`gpuperf.kernels.rope` at Llama-3-8B's heads and 16384 tokens
  for each (heads per program, elements per program, elements per thread);
* ``decode``: GB/s of :func:`gpuperf.kernels.attention_decode` for each number of splits
  and tile (keys per tile, warps, stages) at batches 1, 8 and 64 and caches of 1k to
  32k keys, beside SDPA's, and what the launch rule picks;
* ``swiglu``: :func:`gpuperf.bench.tuning.tune_persistent` (``"swiglu"``) at the benchmark's
  shapes, written to ``src/gpuperf/kernels/tuned/<gpu>/swiglu.json`` (the sweep the op reads);
* ``layer``: the decoder layer's prefill, decode and training step with PyTorch's and
  gpuperf's operations (eager, and how long ``torch.compile`` takes in each mode), and
  each one's largest difference from the float32 layer.

The sweeps time with :func:`gpuperf.bench.timing.time_ms`; only ``swiglu`` writes a file.
"""

import importlib
import sys
import time


def sweep_rope():
    import torch

    from gpuperf.bench import catalog
    from gpuperf.bench.timing import time_ms

    rope = importlib.import_module("gpuperf.kernels.rope")
    tokens = 16384
    q, k, cos, sin = catalog.ROPE.make_inputs(tokens, torch.device("cuda"))
    n_bytes = catalog.ROPE.bytes(tokens)
    saved = rope.ROPE_BLOCK_H, rope.ROPE_TILE_ELEMENTS, rope.ROPE_ELEMENTS_PER_THREAD
    results = []
    for block_h in (4, 8, 16):
        for tile in (2048, 4096, 8192):
            for per_thread in (16, 32):
                rope.ROPE_BLOCK_H, rope.ROPE_TILE_ELEMENTS, rope.ROPE_ELEMENTS_PER_THREAD = (
                    block_h,
                    tile,
                    per_thread,
                )
                rope.rope_launch.cache_clear()
                rope.rope.plans.clear()
                t = time_ms(lambda: rope.rope(q, k, cos, sin), rounds=1)
                gbps = n_bytes / t.ms / 1e6
                results.append((gbps, block_h, tile, per_thread, rope.rope_launch(32, 8, 128)))
    rope.ROPE_BLOCK_H, rope.ROPE_TILE_ELEMENTS, rope.ROPE_ELEMENTS_PER_THREAD = saved
    rope.rope_launch.cache_clear()
    rope.rope.plans.clear()
    results.sort(reverse=True)
    for gbps, block_h, tile, per_thread, launch in results[:12]:
        print(
            f"rope BLOCK_H={block_h:>2} tile={tile:>5} per_thread={per_thread:>2} {launch}: {gbps:.0f} GB/s"
        )
    default = [r for r in results if r[1:4] == saved]
    print(f"rope default {saved}: {default[0][0]:.0f} GB/s; worst {results[-1][0]:.0f}", flush=True)


def sweep_decode():
    import torch
    import torch.nn.functional as F

    from gpuperf.bench import metrics
    from gpuperf.bench.timing import time_ms

    decode = importlib.import_module("gpuperf.kernels.attention_decode")
    h, h_kv, d = 32, 8, 128
    configs = [(32, 4, 2), (64, 4, 2), (64, 4, 3), (64, 4, 4), (64, 8, 2), (128, 4, 2), (128, 8, 2)]
    points = (
        (1, 1024),
        (1, 8192),
        (1, 32768),
        (8, 1024),
        (8, 4096),
        (8, 32768),
        (64, 1024),
        (64, 8192),
        (64, 32768),
    )
    for batch, n in points:
        q = torch.randn(batch, h, 1, d, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(batch, h_kv, n, d, device="cuda", dtype=torch.bfloat16)
        v = torch.randn_like(k)
        lengths = torch.full((batch,), n, dtype=torch.int32, device="cuda")
        n_bytes = metrics.attention_decode_bytes(batch, h, h_kv, 1, n, d, 2)
        gbps = lambda fn: n_bytes / time_ms(fn, rounds=1).ms / 1e6
        sdpa = gbps(lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True))
        rule = decode.decode_launch(batch, h_kv, h // h_kv, n, d, 0)
        ours = gbps(lambda: decode.attention_decode(q, k, v, lengths))
        print(f"decode B={batch} L={n}: SDPA {sdpa:.0f} GB/s; rule {rule}: {ours:.0f}", flush=True)
        for splits in sorted({max(1, rule.num_splits // 2), rule.num_splits, rule.num_splits * 2}):
            row = []
            for config in configs:
                try:
                    value = gbps(
                        lambda: decode.attention_decode(q, k, v, lengths, _num_splits=splits, _config=config)
                    )
                    row.append(f"{config}: {value:.0f}")
                except Exception as err:  # a config that does not fit is reported, not fatal
                    row.append(f"{config}: {type(err).__name__}")
            print(f"   splits={splits:>2} " + ", ".join(row), flush=True)
        torch.cuda.empty_cache()


def tune_swiglu():
    from gpuperf.bench import catalog, tuning

    print("wrote", tuning.write_tuning(tuning.tune_persistent("swiglu", catalog.SWIGLU.x_values)), flush=True)


def look_at_layer():
    import torch

    from gpuperf.bench import catalog
    from gpuperf.bench.timing import loop_time_ms, time_ms

    dev = torch.device("cuda")

    def error(out, ref):
        return (out.float() - ref.float()).abs().max().item()

    for bench, x, axes in (
        (catalog.LLAMA_PREFILL, 4, {}),
        (catalog.LLAMA_DECODE, 4096, {"batch": 1}),
        (catalog.LLAMA_DECODE, 4096, {"batch": 64}),
        (catalog.LLAMA_TRAIN, 4, {}),
    ):
        torch.manual_seed(0)
        inputs = bench.make_inputs(x, dev, **axes)
        ref = bench.reference(*inputs)
        for provider in bench.providers:
            start = time.perf_counter()
            try:
                fn = provider.make(*inputs)
                out = fn()
                torch.cuda.synchronize()
                first = time.perf_counter() - start
                if isinstance(out, tuple):
                    err = max(
                        error(o, r) / max(r.abs().max().item(), 1e-30) for o, r in zip(out, ref, strict=True)
                    )
                    what = "max relative error over gradients"
                else:
                    err, what = error(out, ref), "max |error|"
                timer = loop_time_ms if bench.timer == "loop" else time_ms
                t = timer(fn) if bench.timer == "loop" else timer(fn, rounds=1)
                print(
                    f"{bench.name} x={x} {axes} {provider.key:>14}: {t.ms * 1e3:8.0f} us, "
                    f"{what} {err:.3g}, first call {first:.1f} s",
                    flush=True,
                )
            except Exception as err:
                print(f"{bench.name} x={x} {axes} {provider.key:>14}: {type(err).__name__}: {str(err)[:300]}")
            torch.cuda.empty_cache()
        del inputs, ref
        torch.cuda.empty_cache()


def main(argv) -> int:
    import torch

    if not torch.cuda.is_available():
        print("llama_explore: needs a CUDA GPU", file=sys.stderr)
        return 2
    parts = argv or ["rope", "decode", "swiglu", "layer"]
    for part in parts:
        {"rope": sweep_rope, "decode": sweep_decode, "swiglu": tune_swiglu, "layer": look_at_layer}[part]()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
