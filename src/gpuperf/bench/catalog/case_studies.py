"""The optimization-strategy guide's case studies: GELU and add → ReLU → multiply
(fusion: eager, the PyTorch op, ``torch.compile`` and one Triton kernel) and strided reads
(coalescing). Each is read in GB/s against the measured copy bandwidth."""

from __future__ import annotations

import torch

from gpuperf import reference
from gpuperf.bench import metrics
from gpuperf.bench.catalog.benchmark import ELEMENT_SIZE, Benchmark, Provider, call, compiled, kernels

#: Sizes of the elementwise case studies: from launch-bound (2^12) to HBM-bound (2^28).
ELEMENTWISE_SIZES = tuple(2**p for p in range(12, 29, 2))
ELEMENTWISE_DTYPES = ("float32", "bfloat16")
#: What a quick live build measures of them: launch-bound, L2-sized and HBM-bound, in
#: both dtypes (the page reads the smallest and the largest).
ELEMENTWISE_QUICK = (("n_elements", (2**12, 2**20, 2**28)),)


def _elementwise_inputs(count: int):
    """``make_inputs(n, device, dtype)``: ``count`` random tensors of ``n`` elements."""

    def make(n, device, dtype="float32"):
        return tuple(torch.randn(n, device=device, dtype=getattr(torch, dtype)) for _ in range(count))

    return make


def _gelu(x):
    return kernels().gelu(x)


def _add_relu_mul(x, y, z):
    return kernels().add_relu_mul(x, y, z)


GELU = Benchmark(
    name="gelu",
    title="GELU (tanh): the eager formula, F.gelu, torch.compile and one Triton kernel",
    x_name="n_elements",
    x_label="elements",
    x_values=ELEMENTWISE_SIZES,
    make_inputs=_elementwise_inputs(1),
    reference=reference.gelu_ref,
    providers=(
        Provider("triton", "Triton (gpuperf.kernels.gelu)", call(_gelu)),
        Provider(
            "torch",
            'F.gelu(x, approximate="tanh")',
            call(lambda x: torch.nn.functional.gelu(x, approximate="tanh")),
        ),
        Provider("compile", "torch.compile(eager formula)", compiled(reference.gelu_eager)),
        Provider("naive", "eager formula (8 kernels)", call(reference.gelu_eager)),
    ),
    baseline="torch",
    metric="GB/s",
    bytes=lambda n, dtype: metrics.elementwise_bytes(n, ELEMENT_SIZE[dtype], n_inputs=1),
    flops=lambda n, dtype: metrics.gelu_flops(n),
    ceiling="stream_gbps",
    sources=("kernels/gelu.py",),
    axes=(("dtype", ELEMENTWISE_DTYPES),),
    quick=ELEMENTWISE_QUICK,
)

ADD_RELU_MUL = Benchmark(
    name="add_relu_mul",
    title="Fused add → ReLU → multiply: eager, torch.compile and one Triton kernel",
    x_name="n_elements",
    x_label="elements per tensor",
    x_values=ELEMENTWISE_SIZES,
    make_inputs=_elementwise_inputs(3),
    reference=reference.add_relu_mul_ref,
    providers=(
        Provider("triton", "Triton (gpuperf.kernels.add_relu_mul)", call(_add_relu_mul)),
        Provider("compile", "torch.compile(eager)", compiled(reference.add_relu_mul_eager)),
        Provider("naive", "eager relu(x + y) * z (3 kernels)", call(reference.add_relu_mul_eager)),
    ),
    baseline="naive",
    metric="GB/s",
    bytes=lambda n, dtype: metrics.elementwise_bytes(n, ELEMENT_SIZE[dtype], n_inputs=3),
    flops=lambda n, dtype: metrics.add_relu_mul_flops(n),
    ceiling="stream_gbps",
    sources=("kernels/add_relu_mul.py",),
    axes=(("dtype", ELEMENTWISE_DTYPES),),
    quick=ELEMENTWISE_QUICK,
)

#: Elements each strided copy writes (float32): 128 MiB of useful traffic, well past L2.
STRIDED_COPY_ELEMENTS = 2**24


def _strided_copy(x, stride):
    return kernels().strided_copy(x, stride)


STRIDED_COPY = Benchmark(
    name="strided_copy",
    title=f"Strided reads: copy every stride-th float32 element, {STRIDED_COPY_ELEMENTS:,} written",
    x_name="stride",
    x_label="stride between the elements read (float32 elements; 8 = one 32-byte sector)",
    x_values=(1, 2, 4, 8, 16, 32, 64),
    make_inputs=lambda stride, device: (torch.randn(STRIDED_COPY_ELEMENTS * stride, device=device), stride),
    reference=reference.strided_copy_ref,
    providers=(
        Provider("triton", "Triton (gpuperf.kernels.strided_copy)", call(_strided_copy)),
        Provider(
            "torch",
            "PyTorch x[::stride].clone()",
            call(lambda x, s: x[::s].clone(memory_format=torch.contiguous_format)),
        ),
    ),
    baseline="torch",
    metric="GB/s",
    bytes=lambda stride: metrics.copy_bytes(STRIDED_COPY_ELEMENTS * 4),
    flops=lambda stride: 0,
    ceiling="copy_gbps",
    sources=("kernels/strided_copy.py",),
)
