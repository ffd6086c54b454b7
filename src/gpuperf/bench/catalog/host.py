"""Host time per call: our wrappers against the PyTorch op a user would call, with the
GPU kept busy so that only the host's work is timed (tutorials 01 and 03, the profiling guide)."""

from __future__ import annotations

import torch

from gpuperf import reference
from gpuperf.bench.catalog.benchmark import Benchmark, Provider, call, kernels
from gpuperf.bench.catalog.matmul import PERSISTENT_SOURCES, fp8_operands, matmul_operands
from gpuperf.bench.catalog.memory_bound import SOFTMAX_ROWS, random_pair


def _host_inputs(op: str, device):
    """Small inputs, so that the host, not the GPU, bounds the call rate."""
    if op == "vector_add":
        return (op, *random_pair(4096, device))
    if op in ("softmax", "row_mean"):
        return (op, torch.randn(SOFTMAX_ROWS, 256, device=device))
    if op == "gelu":
        return (op, torch.randn(4096, device=device))
    if op == "add_relu_mul":
        return (op, *(torch.randn(4096, device=device) for _ in range(3)))
    if op == "matmul_fp8":
        return (op, *fp8_operands((512, 512, 512), device)[:4])
    a, b = matmul_operands((512, 512, 512), device, "float16")
    return (op, a, b)


def _ours(op, *tensors):
    return getattr(kernels(), op)(*tensors)


def _ours_uncached(op, *tensors):
    from gpuperf.kernels._launch import uncached

    with uncached():
        return getattr(kernels(), op)(*tensors)


_PYTORCH_OP = {
    "vector_add": torch.add,
    "softmax": lambda x: torch.softmax(x, dim=-1),
    "row_mean": lambda x: x.mean(dim=-1),
    "gelu": lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
    # (No single PyTorch op: the eager formula, three kernels, is what a user writes.)
    "add_relu_mul": reference.add_relu_mul_eager,
    "matmul": torch.matmul,
    "matmul_persistent": torch.matmul,
    "matmul_fp8": lambda a, b, sa, sb: torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16),
}
_REFERENCE = {
    "vector_add": reference.vector_add_ref,
    "softmax": reference.softmax_ref,
    "row_mean": reference.row_mean_ref,
    "gelu": reference.gelu_ref,
    "add_relu_mul": reference.add_relu_mul_ref,
    "matmul": reference.matmul_ref,
    "matmul_persistent": reference.matmul_ref,
    "matmul_fp8": reference.matmul_fp8_ref,
}

HOST_OVERHEAD = Benchmark(
    name="host_overhead",
    title="Host time per call (GPU kept busy): our wrappers vs PyTorch's ops",
    x_name="op",
    x_label=(
        "op (vector_add, gelu, add_relu_mul: 4096 fp32; softmax, row_mean: 4096 x 256 fp32; "
        "matmuls: 512^3, fp16 or e4m3 with per-tensor scales)"
    ),
    x_values=(
        "vector_add",
        "gelu",
        "add_relu_mul",
        "softmax",
        "row_mean",
        "matmul",
        "matmul_persistent",
        "matmul_fp8",
    ),
    make_inputs=_host_inputs,
    reference=lambda op, *tensors: _REFERENCE[op](*tensors),
    providers=(
        Provider("triton", "gpuperf.kernels.<op> (cached launch)", call(_ours)),
        Provider("triton_jit", "the same, launched by kernel[grid]", call(_ours_uncached)),
        Provider("torch", "the PyTorch op", call(lambda op, *tensors: _PYTORCH_OP[op](*tensors))),
    ),
    baseline="torch",
    metric="us/call",
    bytes=lambda op: 0,
    flops=lambda op: 0,
    ceiling=None,
    sources=(
        "kernels/vector_add.py",
        "kernels/gelu.py",
        "kernels/add_relu_mul.py",
        "kernels/_elementwise.py",
        "kernels/softmax.py",
        "kernels/row_mean.py",
        "kernels/matmul.py",
        "kernels/_launch.py",
        "kernels/_validation.py",
        *PERSISTENT_SOURCES,
        "kernels/matmul_fp8.py",
    ),
    timer="host",
    reduction=lambda op: 512 if op.startswith("matmul") else None,
)
