"""Host time per call: our wrappers against the PyTorch op a user would call, with the
GPU kept busy so that only the host's work is timed (tutorials 01 and 03, the profiling guide).

The Gluon ops (``matmul_fp8_promoted``, ``attention_fa3``) run on Hopper only: elsewhere their
rows hold the :class:`~gpuperf.kernels.device.UnsupportedGPU` error, which ``python -m
gpuperf.bench`` does not count as a failure."""

from __future__ import annotations

import torch

from gpuperf import reference
from gpuperf.bench.catalog.benchmark import Benchmark, Provider, call, kernels
from gpuperf.bench.catalog.matmul import fp8_operands, matmul_operands
from gpuperf.bench.catalog.memory_bound import SOFTMAX_ROWS, random_pair
from gpuperf.bench.timing import HOST_CALLS

#: The most host time per call each op may take, as a multiple of the PyTorch op's in the
#: same run (SDPA, ``torch._scaled_mm``, ``torch.softmax``): above it, a decode step or a
#: short prompt made of our kernels would be host-bound where PyTorch's is not.
HOST_TARGETS = {
    "softmax": 1.2,
    "matmul_fp8": 1.2,
    "matmul_fp8_promoted": 1.2,
    "attention": 1.2,
    "attention_train": 1.2,
    "attention_decode": 1.2,
    "attention_fa3": 1.2,
}

#: Attention's host-time inputs: one head group of a short prompt, (B, H, S, D) in float16.
ATTENTION_SHAPE = (1, 8, 128, 64)
#: The decode step's: 8 sequences of 1024 cached tokens, Llama-3-8B's heads, bfloat16.
DECODE_BATCH, DECODE_HEADS, DECODE_KV_HEADS, DECODE_KV_LEN, DECODE_HEAD_DIM = 8, 32, 8, 1024, 128


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
    if op in ("matmul_fp8", "matmul_fp8_promoted"):
        return (op, *fp8_operands((512, 512, 512), device)[:4])
    if op in ("attention", "attention_fa3"):
        return (op, *(torch.randn(ATTENTION_SHAPE, device=device, dtype=torch.float16) for _ in range(3)))
    if op == "attention_train":  # q, k, v that need gradients, and the output's gradient
        fp16 = {"device": device, "dtype": torch.float16}
        qkv = (torch.randn(ATTENTION_SHAPE, **fp16).requires_grad_() for _ in range(3))
        return (op, *qkv, torch.randn(ATTENTION_SHAPE, **fp16))
    if op == "attention_decode":
        bf16 = {"device": device, "dtype": torch.bfloat16}
        q = torch.randn(DECODE_BATCH, DECODE_HEADS, 1, DECODE_HEAD_DIM, **bf16)
        cache = (DECODE_BATCH, DECODE_KV_HEADS, DECODE_KV_LEN, DECODE_HEAD_DIM)
        k, v = torch.randn(cache, **bf16), torch.randn(cache, **bf16)
        lengths = torch.full((DECODE_BATCH,), DECODE_KV_LEN, dtype=torch.int32, device=device)
        return (op, q, k, v, lengths)
    a, b = matmul_operands((512, 512, 512), device, "float16")
    return (op, a, b)


def forward_backward(attend, q, k, v, grad_out):
    """``(dq, dk, dv)`` of ``attend(q, k, v)`` for the output gradient ``grad_out``: the
    attention of one training step, forward and backward."""
    return torch.autograd.grad(attend(q, k, v), (q, k, v), grad_out)


def _op(op: str):
    """The public function of the op named ``op``: a kernel of :mod:`gpuperf.kernels`, or a
    Gluon one (:mod:`gpuperf.kernels.gluon`, Hopper only); for ``attention_train``, the
    forward and backward of :func:`gpuperf.kernels.attention`."""
    if op == "attention_train":
        attend = kernels().attention
        return lambda *tensors: forward_backward(attend, *tensors)
    if op in ("attention_fa3", "matmul_fp8_promoted"):
        from gpuperf.kernels import gluon

        return getattr(gluon, op)
    return getattr(kernels(), op)


def _ours(op, *tensors):
    return _op(op)(*tensors)


def _ours_uncached(op, *tensors):
    from gpuperf.kernels.launch import uncached

    with uncached():
        return _op(op)(*tensors)


def _scaled_mm(a, b, scale_a, scale_b):
    return torch._scaled_mm(a, b, scale_a, scale_b, out_dtype=torch.bfloat16)


def sdpa(q, k, v, *rest):
    """PyTorch's attention as the host benchmark calls it: SDPA with grouped-query heads
    allowed (``enable_gqa=True``), no mask (the decode step's cache is full: every
    sequence's length is the cache's); ``rest`` (the decode step's lengths) is ignored."""
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=True)


_PYTORCH_OP = {
    "vector_add": torch.add,
    "softmax": lambda x: torch.softmax(x, dim=-1),
    "row_mean": lambda x: x.mean(dim=-1),
    "gelu": lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
    # (No single PyTorch op: the eager formula, three kernels, is what a user writes.)
    "add_relu_mul": reference.add_relu_mul_eager,
    "matmul": torch.matmul,
    "matmul_persistent": torch.matmul,
    "matmul_fp8": _scaled_mm,
    "matmul_fp8_promoted": _scaled_mm,
    "attention": sdpa,
    "attention_train": lambda *tensors: forward_backward(sdpa, *tensors),
    "attention_fa3": sdpa,
    "attention_decode": sdpa,
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
    "matmul_fp8_promoted": reference.matmul_fp8_ref,
    "attention": reference.attention_ref,
    "attention_train": reference.attention_grads_ref,
    "attention_fa3": reference.attention_ref,
    "attention_decode": reference.attention_decode_ref,
}
#: Products each output element sums, by op (the check's tolerance grows with it).
_REDUCTION = {
    "matmul": 512,
    "matmul_persistent": 512,
    "matmul_fp8": 512,
    "matmul_fp8_promoted": 512,
    "attention": ATTENTION_SHAPE[2],
    "attention_train": ATTENTION_SHAPE[2],
    "attention_fa3": ATTENTION_SHAPE[2],
    "attention_decode": DECODE_KV_LEN,
}

HOST_OVERHEAD = Benchmark(
    name="host_overhead",
    title="Host time per call (GPU kept busy): our wrappers vs PyTorch's ops",
    x_name="op",
    x_label=(
        "op (vector_add, gelu, add_relu_mul: 4096 fp32; softmax, row_mean: 4096 x 256 fp32; "
        "matmuls: 512^3, fp16 or e4m3 with per-tensor scales; attention: 1 x 8 x 128 x 64 fp16, "
        "attention_train: its forward and backward, 20 calls a round; "
        "decode: 8 x 32 heads over 1024 cached tokens, bf16)"
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
        "matmul_fp8_promoted",
        "attention",
        "attention_train",
        "attention_decode",
        "attention_fa3",
    ),
    make_inputs=_host_inputs,
    reference=lambda op, *tensors: _REFERENCE[op](*tensors),
    providers=(
        Provider("triton", "gpuperf.kernels.<op> (cached launch)", call(_ours)),
        Provider("triton_jit", "the same, launched by kernel[grid]", call(_ours_uncached)),
        Provider(
            "torch",
            "the PyTorch op (SDPA for attention, torch._scaled_mm for FP8)",
            call(lambda op, *tensors: _PYTORCH_OP[op](*tensors)),
        ),
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
        "kernels/softmax.py",
        "kernels/row_mean.py",
        "kernels/matmul.py",
        "kernels/matmul_persistent.py",
        "kernels/matmul_fp8.py",
        "kernels/attention.py",
        "kernels/attention_decode.py",
        "kernels/gluon/matmul_fp8.py",
        "kernels/gluon/attention.py",
    ),
    timer="host",
    reduction=lambda op: _REDUCTION.get(op),
    # A training step's attention launches about ten kernels (forward, backward, the
    # gradients' buffers): 200 calls a round would fill the launch queue.
    host_calls=lambda op: 20 if op == "attention_train" else HOST_CALLS,
)
