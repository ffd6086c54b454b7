"""GELU, tanh approximation, in one pass over memory.

``gelu(x) = 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3)))``
(Hendrycks and Gimpel, "Gaussian Error Linear Units", arXiv:1606.08415, eq. for
the tanh approximation; ``torch.nn.functional.gelu(x, approximate="tanh")``).

Written in eager PyTorch, the formula is eight kernels, each reading and writing
a tensor of ``x``'s size (:func:`gpuperf.reference.gelu_eager`); this kernel reads
``x`` once and writes the output once. It evaluates ``0.5 * (1 + tanh(u))`` as
``1 / (1 + exp(-2u))`` (the same function: ``tanh(u) = 2 sigmoid(2u) - 1``), one
exponential and no cancellation in ``1 + tanh(u)`` where ``tanh(u)`` is near -1,
all in float32 whatever the input dtype, rounding once at the end.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from gpuperf.kernels import _elementwise_configs
from gpuperf.kernels._grid import cdiv
from gpuperf.kernels._validation import check_tensors
from gpuperf.kernels.launch import Launch, Launches, op


@triton.jit
def _gelu_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    # int64 before the multiply: pid * BLOCK_SIZE passes 2**31 on tensors of 8 GB of fp32.
    offsets = pid.to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    # sqrt(2 / pi) = 0.7978845608028654; 0.5 * (1 + tanh(u)) = 1 / (1 + exp(-2u)).
    u = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    y = x / (1.0 + tl.exp(-2.0 * u))
    tl.store(out_ptr + offsets, y.to(out_ptr.dtype.element_ty), mask=mask)


@op("gpuperf::gelu")
def gelu(
    x: torch.Tensor,
    *,
    block_size: int = _elementwise_configs.BLOCK_SIZE,
    num_warps: int = _elementwise_configs.NUM_WARPS,
) -> tuple[torch.Tensor, Launches]:
    """Return GELU of ``x`` (tanh approximation), computed by one Triton kernel.

    Args:
        x: tensor of any shape; dtype float32, float16 or bfloat16; on a CUDA
            device (or on the CPU when ``TRITON_INTERPRET=1``).
        block_size: elements per program, a power of two (default 1024).
        num_warps: warps per program, a power of two (default 4).

    Returns:
        A new contiguous tensor of ``x``'s shape and dtype, computed in float32 and
        rounded once; it matches ``torch.nn.functional.gelu(x, approximate="tanh")``
        to the dtype's rounding. NaN in gives NaN out. A non-contiguous ``x`` is
        copied to contiguous memory first (one extra pass). An empty ``x`` returns
        an empty tensor without launching a kernel.

    Raises:
        TypeError: ``x`` is not a tensor or has an unsupported dtype;
            ``block_size`` or ``num_warps`` is not an int.
        ValueError: ``x`` is on the CPU while the interpreter is off;
            ``block_size`` or ``num_warps`` is not a power of two.

    Also registered as ``torch.ops.gpuperf.gelu`` (``torch.library.triton_op``), so a
    compiled model that calls it keeps one graph.

    Memory traffic: reads ``N`` and writes ``N`` elements
    (:func:`gpuperf.bench.metrics.elementwise_bytes` with one input), about nine
    FLOPs per element (:func:`gpuperf.bench.metrics.gelu_flops`): bandwidth-bound.
    """
    check_tensors(("x",), (x,))
    _elementwise_configs.check_launch(block_size, num_warps)
    x = x.contiguous()
    out = torch.empty_like(x)
    n_elements = out.numel()
    if n_elements == 0:
        return out, ()
    grid = (cdiv(n_elements, block_size),)
    return out, (Launch(_gelu_kernel, grid, (x, out, n_elements), (block_size,), num_warps),)
