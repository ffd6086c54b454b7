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
    if op == "attention":
        # Training-sized heads over a short sequence: the kernels take microseconds.
        return (op, *(torch.randn(1, 8, 256, 64, device=device, dtype=torch.float16) for _ in range(3)))
    if op == "attention_decode":
        # One new token of Llama-3-8B's heads (32 query, 8 key/value) against 1024 cached ones.
        q = torch.randn(1, 32, 1, 128, device=device, dtype=torch.bfloat16)
        k, v = (torch.randn(1, 8, 1024, 128, device=device, dtype=torch.bfloat16) for _ in range(2))
        return (op, q, k, v, torch.full((1,), 1024, dtype=torch.int32, device=device))
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
    "attention": torch.nn.functional.scaled_dot_product_attention,
    # The cache is full (every length is 1024): SDPA needs no mask, its cheapest call.
    "attention_decode": lambda q, k, v, lengths: torch.nn.functional.scaled_dot_product_attention(
        q, k, v, enable_gqa=True
    ),
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
    "attention": reference.attention_ref,
    "attention_decode": lambda q, k, v, lengths: reference.attention_decode_ref(q, k, v, lengths),
}

HOST_OVERHEAD = Benchmark(
    name="host_overhead",
    title="Host time per call (GPU kept busy): our wrappers vs PyTorch's ops",
    x_name="op",
    x_label=(
        "op (vector_add, gelu, add_relu_mul: 4096 fp32; softmax, row_mean: 4096 x 256 fp32; "
        "matmuls: 512^3, fp16 or e4m3 with per-tensor scales; attention: 1x8x256x64 fp16; "
        "attention_decode: 1 token, 32/8 heads of 128, 1024 cached, bf16)"
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
        "attention",
        "attention_decode",
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
        "kernels/attention.py",
        "kernels/_attention_configs.py",
        "kernels/attention_decode.py",
    ),
    timer="host",
    reduction=lambda op: {"attention": 256, "attention_decode": 1024}.get(
        op, 512 if op.startswith("matmul") else None
    ),
)
