"""Experiment (GPU only): can SwiGLU's gate and up tiles reach the tensor cores as ONE operand?

``gpuperf.kernels.swiglu`` multiplies each x tile by two weight tiles (gate and up) per K
step: two ``tl.dot`` into two accumulators. On an H100 that ran at 575 TFLOP/s at
8192 x 14336 x 4096 against 693 for the persistent matmul's single 128x256 dot. This
times single-dot variants, where one 3-D tensor descriptor loads both halves at once
and the epilogue splits the (BLOCK_M, 2 BLOCK_N) accumulator into g and u:

* ``rowmajor``: the weight as stored, (K, 2N), viewed as (K, 2, N), boxes [BK, 2, BN]
  reshaped to (BK, 2 BN);
* ``linear``: the weight in nn.Linear's layout, (2N, K) row-major, viewed as (2, N, K),
  boxes [2, BN, BK] reshaped to (2 BN, BK) and transposed (leading dimensions merged).

Usage: ``python scripts/swiglu_single_dot.py``.
"""

import sys

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

from gpuperf.kernels.matmul_persistent import _tile_coords

LOG2E = tl.constexpr(1.4426950408889634)


@triton.jit
def _single_dot_kernel(
    x_desc,
    w_desc,
    c_ptr,
    M,
    N,
    K,
    stride_cm,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    NUM_PROGRAMS: tl.constexpr,
    LINEAR: tl.constexpr,
):
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    num_tiles = num_pid_m * num_pid_n
    tile_id_c = tl.program_id(0) - NUM_PROGRAMS
    for tile_id in tl.range(tl.program_id(0), num_tiles, NUM_PROGRAMS, flatten=True):
        pid_m, pid_n = _tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, 2 * BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            off_k = ki * BLOCK_K
            a = x_desc.load([off_m, off_k])
            if LINEAR:
                b = w_desc.load([0, off_n, off_k]).reshape(2 * BLOCK_N, BLOCK_K).T
            else:
                b = w_desc.load([off_k, 0, off_n]).reshape(BLOCK_K, 2 * BLOCK_N)
            acc = tl.dot(a, b, acc)
        tile_id_c += NUM_PROGRAMS
        pid_m, pid_n = _tile_coords(tile_id_c, num_pid_m, num_pid_n, GROUP_M)
        g, u = tl.split(tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N)), (0, 2, 1)))
        out = g * u / (1.0 + tl.exp2(-g * LOG2E))
        offs_cm = pid_m.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        c_ptrs = c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :]
        tl.store(c_ptrs, out.to(c_ptr.dtype.element_ty), mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


def run(x, w_phys, linear, bm, bn, bk, warps, stages):
    m, k = x.shape
    n = w_phys.shape[0] // 2 if linear else w_phys.shape[1] // 2
    out = torch.empty(m, n, device=x.device, dtype=x.dtype)
    x_desc = TensorDescriptor(x, [m, k], [x.stride(0), 1], [bm, bk])
    if linear:
        s = w_phys.stride(0)
        w_desc = TensorDescriptor(w_phys, [2, n, k], [n * s, s, 1], [2, bn, bk])
    else:
        s = w_phys.stride(0)
        w_desc = TensorDescriptor(w_phys, [k, 2, n], [s, n, 1], [bk, 2, bn])
    programs = min(
        torch.cuda.get_device_properties(0).multi_processor_count, triton.cdiv(m, bm) * triton.cdiv(n, bn)
    )
    _single_dot_kernel[(programs,)](
        x_desc, w_desc, out, m, n, k, out.stride(0), bm, bn, bk, 8, programs, linear,
        num_warps=warps, num_stages=stages,
    )  # fmt: skip
    return out


def main() -> int:
    from triton.testing import do_bench

    from gpuperf.kernels import matmul_persistent, swiglu
    from gpuperf.reference import swiglu_eager

    torch.manual_seed(0)
    for m, n, k in ((8192, 14336, 4096), (2048, 14336, 4096)):
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        w = (torch.randn(k, 2 * n, device="cuda") * k**-0.5).to(torch.bfloat16)
        w_linear = w.t().contiguous()  # (2N, K)
        ref = swiglu_eager(x.float(), w[:, :n].float(), w[:, n:].float())
        flops = 2 * m * 2 * n * k

        def report(name, fn):
            try:
                out = fn()
                err = (out.float() - ref).abs().max().item()
                ms = do_bench(fn, warmup=25, rep=100)
                print(f"{m}x{n}x{k} {name}: {flops / ms / 1e9:.0f} TFLOP/s, max |err| {err:.3g}", flush=True)
            except Exception as e:
                print(f"{m}x{n}x{k} {name}: {type(e).__name__}: {str(e)[:200]}", flush=True)

        report("swiglu (two dots)", lambda: swiglu(x, w))
        report("swiglu (two dots), linear layout", lambda: swiglu(x, w_linear.t()))
        gu = matmul_persistent(x, w)
        ms = do_bench(lambda: matmul_persistent(x, w))
        print(f"{m}x{n}x{k} matmul_persistent x @ w: {flops / ms / 1e9:.0f}")
        print(f"{m}x{n}x{k} cuBLAS x @ w: {flops / do_bench(lambda: x @ w) / 1e9:.0f}")
        del gu
        for linear in (False, True):
            for bm, bn, bk, warps, stages in (
                (128, 128, 64, 8, 3),
                (128, 128, 64, 8, 4),
                (128, 64, 64, 8, 4),
                (128, 128, 64, 4, 3),
            ):
                name = f"single dot {'linear' if linear else 'rowmajor'} {bm}x{bn}x{bk} w{warps} s{stages}"
                report(name, lambda: run(x, w_linear if linear else w, linear, bm, bn, bk, warps, stages))
    return 0


if __name__ == "__main__":
    sys.exit(main())
