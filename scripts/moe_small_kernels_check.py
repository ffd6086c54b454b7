"""The MoE layer's small kernels on a GPU: moe_permute, moe_combine and silu_mul at odd
shapes and every layout their docstrings accept (row slices, odd offsets, transposed views,
non-contiguous ids), checked against PyTorch (run it under compute-sanitizer memcheck), then
host time per call beside the PyTorch ops a layer would call instead, at a decode step's size.

    compute-sanitizer --tool memcheck python scripts/moe_small_kernels_check.py [--no-time]

Prints one line per case and per timed op (µs per call, median of rounds,
gpuperf.bench.timing.host_time_ms). Not a benchmark: no record is written.
"""

from __future__ import annotations

import sys

import torch

from gpuperf import reference
from gpuperf.bench.timing import host_time_ms
from gpuperf.kernels.moe_activation import silu_mul
from gpuperf.kernels.moe_permute import moe_combine, moe_permute


def _layouts(t: torch.Tensor) -> dict[str, torch.Tensor]:
    """``t`` (2-D) as row-major, a row slice of a wider buffer, at an odd element offset, and
    a transposed view."""
    rows, cols = t.shape
    wide = torch.zeros(rows, cols + 7, dtype=t.dtype, device=t.device)
    wide[:, 3 : 3 + cols] = t
    flat = torch.zeros(rows * cols + 1, dtype=t.dtype, device=t.device)
    flat[1:] = t.reshape(-1)
    return {
        "row": t,
        "slice": wide[:, 3 : 3 + cols],
        "offset": flat[1:].view(rows, cols),
        "transposed": t.t().contiguous().t(),
    }


def check() -> int:
    failures = 0
    for tokens, d, experts, k in ((1, 7, 3, 1), (5, 33, 8, 2), (37, 129, 13, 3), (300, 1000, 64, 8)):
        for dtype in (torch.bfloat16, torch.float16, torch.float32):
            g = torch.Generator(device="cuda").manual_seed(tokens)
            x0 = torch.randn(tokens, d, device="cuda", dtype=dtype, generator=g)
            ids0 = torch.stack([torch.randperm(experts, device="cuda")[:k] for _ in range(tokens)])
            weights0 = torch.rand(tokens, k, device="cuda", generator=g)
            for layout, x in _layouts(x0).items():
                for ids_layout, ids in (("row", ids0), ("transposed", ids0.t().contiguous().t())):
                    x_sorted, order, rows, offs = moe_permute(x, ids, experts)
                    ref_order, ref_offs = reference.sort_by_expert(ids, experts)
                    ok = torch.equal(order.long(), ref_order.long()) and torch.equal(
                        offs.long(), ref_offs.long()
                    )
                    ok = ok and torch.equal(x_sorted, x[ref_order // k])
                    y = torch.randn(tokens * k, d, device="cuda", dtype=dtype, generator=g)
                    for w in _layouts(weights0).values():
                        out = moe_combine(_layouts(y)[layout], rows, w)
                        want = (y.float()[rows.long()].view(tokens, k, d) * w.float()[..., None]).sum(1)
                        ok = ok and torch.allclose(out.float(), want, rtol=1e-2, atol=1e-2)
                    failures += not ok
                    print(
                        f"permute/combine T={tokens} d={d} E={experts} k={k} {dtype} x {layout} "
                        f"ids {ids_layout}: {'ok' if ok else 'WRONG'}"
                    )
            for layout, gu in _layouts(
                torch.randn(tokens, 2 * d, device="cuda", dtype=dtype, generator=g)
            ).items():
                out = silu_mul(gu)
                want = torch.nn.functional.silu(gu[:, :d].float()) * gu[:, d:].float()
                ok = torch.allclose(out.float(), want, rtol=1e-2, atol=1e-2)
                failures += not ok
                print(f"silu_mul M={tokens} N={d} {dtype} {layout}: {'ok' if ok else 'WRONG'}")
    torch.cuda.synchronize()
    return failures


def host_times() -> None:
    """µs per call, ours beside the PyTorch ops the layer's ``torch`` path calls, at a decode
    step of 64 tokens of DeepSeek-V3 (d 7168, 256 experts, top-8; ffn 2048 for silu_mul)."""
    tokens, d, experts, k, ffn = 64, 7168, 256, 8, 2048
    x = torch.randn(tokens, d, device="cuda", dtype=torch.bfloat16)
    ids = torch.stack([torch.randperm(experts, device="cuda")[:k] for _ in range(tokens)])
    weights = torch.rand(tokens, k, device="cuda")
    _, order, rows, _ = moe_permute(x, ids, experts)
    y = torch.randn(tokens * k, d, device="cuda", dtype=torch.bfloat16)
    gu = torch.randn(tokens * k, 2 * ffn, device="cuda", dtype=torch.bfloat16)

    def torch_permute():
        o, offs = reference.sort_by_expert(ids, experts)
        return x[o // k], offs

    def torch_combine():
        out = torch.zeros(x.shape, dtype=torch.float32, device="cuda")
        out.index_add_(0, order.long() // k, y.float() * weights.reshape(-1)[order.long(), None])
        return out.to(x.dtype)

    pairs = {
        "moe_permute": (lambda: moe_permute(x, ids, experts), torch_permute),
        "moe_combine": (lambda: moe_combine(y, rows, weights), torch_combine),
        "silu_mul": (lambda: silu_mul(gu), lambda: torch.nn.functional.silu(gu[:, :ffn]) * gu[:, ffn:]),
    }
    # 20 calls a round, as host_overhead times its multi-kernel step: 200 calls of several
    # launches each would fill the launch queue and time the GPU's sleep instead.
    for name, (ours, theirs) in pairs.items():
        a, b = host_time_ms(ours, calls=20).ms * 1e3, host_time_ms(theirs, calls=20).ms * 1e3
        print(f"host time per call, {name}: ours {a:.1f} us, PyTorch {b:.1f} us ({a / b:.2f}x)")


def main() -> int:
    if not torch.cuda.is_available():
        print("moe_small_kernels_check.py needs a CUDA GPU", file=sys.stderr)
        return 2
    failures = check()
    print(f"{failures} wrong")
    if "--no-time" not in sys.argv:
        host_times()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
