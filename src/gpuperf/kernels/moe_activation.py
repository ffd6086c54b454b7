"""The SwiGLU gate of a Mixture-of-Experts layer's experts as one elementwise kernel:
``silu(g) * u`` of the gate/up grouped matmul's output ``[g | u]``.

The experts' gate and up projections run as one grouped matmul on ``[W_gate | W_up]``
(``(E, d, 2 ffn)``), so each expert-sorted row holds its gate half then its up half. This
kernel reads both halves once, computes ``silu(g) * u`` in float32 and writes the ``(rows,
ffn)`` result rounded once: ``3 * rows * ffn`` elements moved, where PyTorch's
``F.silu(g) * u`` moves five (the SiLU's read and write, then the product's two reads and
one write). Fusing it into the grouped matmul's epilogue (as :mod:`gpuperf.kernels.swiglu`
does for a dense MLP) would save the ``[g | u]`` round trip too; that is the next step.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from gpuperf.kernels._grid import cdiv, next_power_of_2
from gpuperf.kernels._validation import check_tensors
from gpuperf.kernels.launch import Launch, Launches, op

#: Rows and columns per program.
BLOCK_ROWS = 4
BLOCK_COLS = 1024

LOG2E = tl.constexpr(1.4426950408889634)


@triton.jit
def _silu_mul_kernel(gu_ptr, out_ptr, rows, n, stride_r, stride_c, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    r = (tl.program_id(0) * ROWS + tl.arange(0, ROWS)).to(tl.int64)
    c = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = (r[:, None] < rows) & (c[None, :] < n)
    base = gu_ptr + r[:, None] * stride_r + c[None, :] * stride_c
    g = tl.load(base, mask=mask, other=0.0).to(tl.float32)
    u = tl.load(base + n * stride_c, mask=mask, other=0.0).to(tl.float32)
    # silu(g) = g * sigmoid(g) = g / (1 + exp(-g)); exp2 is the hardware instruction.
    h = g / (1.0 + tl.exp2(-g * LOG2E)) * u
    tl.store(out_ptr + r[:, None] * n + c[None, :], h.to(out_ptr.dtype.element_ty), mask=mask)


@op("gpuperf::moe_silu_mul")
def silu_mul(gate_up: torch.Tensor) -> tuple[torch.Tensor, Launches]:
    """``silu(g) * u`` of ``gate_up = [g | u]``, computed in float32 and rounded once.

    Args:
        gate_up: ``(M, 2 N)`` float32, float16 or bfloat16, any strides: the gate's ``N``
            columns then the up projection's; on a CUDA device (or on the CPU when
            ``TRITON_INTERPRET=1``).

    Returns:
        A new contiguous ``(M, N)`` tensor of ``gate_up``'s dtype. Matches
        ``F.silu(g.float()) * u.float()`` rounded to the dtype (within an ulp of the
        float32 SiLU).

    Raises:
        TypeError: ``gate_up`` is not a float tensor.
        ValueError: ``gate_up`` is not 2-D or has an odd number of columns, or is on the
            CPU while the interpreter is off.

    Also registered as ``torch.ops.gpuperf.moe_silu_mul``. Memory: ``3 M N`` elements.
    """
    check_tensors(("gate_up",), (gate_up,))
    if gate_up.dim() != 2 or gate_up.shape[1] % 2:
        raise ValueError(f"gate_up must be 2-D with an even number of columns, got {tuple(gate_up.shape)}")
    rows, n = gate_up.shape[0], gate_up.shape[1] // 2
    out = torch.empty((rows, n), dtype=gate_up.dtype, device=gate_up.device)
    if out.numel() == 0:
        return out, ()
    block = min(BLOCK_COLS, max(16, next_power_of_2(n)))
    args = (gate_up, out, rows, n, *gate_up.stride())
    grid = (cdiv(rows, BLOCK_ROWS), cdiv(n, block))
    return out, (Launch(_silu_mul_kernel, grid, args, (BLOCK_ROWS, block), 4),)


__all__ = ["silu_mul"]
