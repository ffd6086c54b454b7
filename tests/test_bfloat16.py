"""Every public kernel in bfloat16 against its float32 (or float64) reference.

On a GPU these check the compiled kernels; on the CPU they check Triton's interpreter,
which needs :mod:`gpuperf._interpreter` to compute bfloat16 as numbers (``tl.dot``,
``+``, rounding to nearest). Shapes are
small (the interpreter runs each program in Python) but cross a tile edge where a kernel
tiles. Tolerances are :func:`gpuperf.testing.assert_close`'s for bfloat16 (an output
rounded once, about two units in the last place), widened with ``k`` for outputs that
sum ``k`` products.
"""

import pytest
import torch

from gpuperf import kernels
from gpuperf.kernels import to_fp8
from gpuperf.reference import (
    add_relu_mul_ref,
    attention_decode_ref,
    attention_grads_ref,
    attention_ref,
    gelu_ref,
    grouped_matmul_ref,
    matmul_fp8_blockwise_ref,
    matmul_fp8_ref,
    matmul_ref,
    rms_norm_ref,
    rope_ref,
    row_mean_ref,
    scale_shift_ref,
    softmax_ref,
    strided_copy_ref,
    swiglu_ref,
    vector_add_ref,
)
from gpuperf.testing import assert_close, tolerance
from tests._params import assert_close_fp8, randn
from tests.conftest import DEVICE

BF16 = torch.bfloat16

#: Names in ``gpuperf.kernels.__all__`` that launch no kernel of their own: launch
#: configurations, and helpers in plain PyTorch that prepare a kernel's inputs.
NOT_KERNELS = {"MatmulConfig", "PersistentConfig", "quantize_fp8_blockwise", "rope_cos_sin", "to_fp8"}
PUBLIC_KERNELS = sorted(set(kernels.__all__) - NOT_KERNELS)


def bf16(shape, seed, scale=1.0):
    return randn(shape, BF16, seed=seed) * scale


def check(name, ref, out, k=None):
    assert out.dtype == BF16, f"{name}: dtype {out.dtype}, expected bfloat16"
    assert_close(name, ref, out, k=k)


# --- one function per case: each calls one public kernel in bfloat16 ---------------------


def vector_add_case():
    x, y = bf16((1000,), 1), bf16((1000,), 2)
    check("vector_add", vector_add_ref(x, y), kernels.vector_add(x, y))


def add_relu_mul_case():
    x, y, z = bf16((3, 70), 1), bf16((3, 70), 2), bf16((3, 70), 3)
    check("add_relu_mul", add_relu_mul_ref(x, y, z), kernels.add_relu_mul(x, y, z))


def gelu_case():
    x = bf16((3, 70), 1, scale=3.0)
    check("gelu", gelu_ref(x), kernels.gelu(x))


def scale_shift_case():
    x, scale, shift = bf16((5, 300), 1), bf16((300,), 2), bf16((300,), 3)
    check("scale_shift", scale_shift_ref(x, scale, shift), kernels.scale_shift(x, scale, shift))


def strided_copy_case():
    x = bf16((1000,), 1)
    out = kernels.strided_copy(x, 3)
    assert out.dtype == BF16 and torch.equal(out, x[::3]), "strided_copy: not an exact copy of x[::3]"
    check("strided_copy", strided_copy_ref(x, 3), out)


def row_mean_case():
    x = bf16((4, 300), 1)
    check("row_mean", row_mean_ref(x), kernels.row_mean(x), k=300)


def softmax_case():
    x = bf16((5, 333), 1, scale=3.0)
    check("softmax", softmax_ref(x), kernels.softmax(x))


def rms_norm_inputs():
    x = bf16((5, 40), 1)
    weight = (1 + 0.5 * randn((40,), torch.float32, seed=2)).to(BF16)
    return x, weight


def rms_norm_case():
    x, weight = rms_norm_inputs()
    check("rms_norm", rms_norm_ref(x, weight), kernels.rms_norm(x, weight))


def rms_norm_backward_case():
    x, weight = (t.requires_grad_() for t in rms_norm_inputs())
    grad_y = bf16((5, 40), 3)
    dx, dw = torch.autograd.grad(kernels.rms_norm(x, weight), (x, weight), grad_y)
    x64, w64 = x.detach().double().requires_grad_(), weight.detach().double().requires_grad_()
    dx_ref, dw_ref = torch.autograd.grad(rms_norm_ref(x64, w64), (x64, w64), grad_y.double())
    check("rms_norm dx", dx_ref, dx, k=40)
    # dweight sums 5 rows of dy * x_hat, each rounded and up to a few in size (as test_rms_norm).
    check("rms_norm dweight", dw_ref, dw, k=16 * 5)


def rope_inputs():
    b, h, h_kv, s, d = 2, 4, 2, 9, 32
    q, k = bf16((b, h, s, d), 1), bf16((b, h_kv, s, d), 2)
    positions = torch.arange(s, device=DEVICE)[None] + 100 * torch.arange(b, device=DEVICE)[:, None]
    return q, k, *kernels.rope_cos_sin(positions, d)


def rope_case():
    q, k, cos, sin = rope_inputs()
    q_out, k_out = kernels.rope(q, k, cos, sin)
    q_ref, k_ref = rope_ref(q, k, cos, sin)
    check("rope q", q_ref, q_out)
    check("rope k", k_ref, k_out)


def rope_backward_case():
    q, k, cos, sin = rope_inputs()
    q, k = q.requires_grad_(), k.requires_grad_()
    grad_q, grad_k = bf16(q.shape, 3), bf16(k.shape, 4)
    dq, dk = torch.autograd.grad(kernels.rope(q, k, cos, sin), (q, k), (grad_q, grad_k))
    q64, k64 = q.detach().double().requires_grad_(), k.detach().double().requires_grad_()
    dq_ref, dk_ref = torch.autograd.grad(
        rope_ref(q64, k64, cos, sin), (q64, k64), (grad_q.double(), grad_k.double())
    )
    check("rope dq", dq_ref, dq)
    check("rope dk", dk_ref, dk)


def matmul_case():
    # M, N, K off the interpreter's tiles; K past one tile.
    a, b = bf16((37, 48), 1), bf16((48, 40), 2)
    check("matmul", matmul_ref(a, b), kernels.matmul(a, b), k=48)


def matmul_epilogue_case():
    a, b, bias = bf16((37, 48), 1), bf16((48, 40), 2), bf16((40,), 3)
    out = kernels.matmul(a, b, bias=bias, activation="gelu")
    check("matmul bias gelu", matmul_ref(a, b, bias, "gelu"), out, k=48)


def matmul_splitk_case():
    a, b = bf16((3, 300), 1), bf16((300, 33), 2)
    check("matmul_splitk", matmul_ref(a, b), kernels.matmul_splitk(a, b, split_k=3), k=300)


def matmul_persistent_case():
    a, b = bf16((37, 48), 1), bf16((48, 40), 2)
    check("matmul_persistent", matmul_ref(a, b), kernels.matmul_persistent(a, b), k=48)


def matmul_fp8_case():
    m, n, k = 37, 48, 64
    a, scale_a = to_fp8(randn((m, k), torch.float32, seed=1), axis=-1)
    bt, scale_bt = to_fp8(randn((n, k), torch.float32, seed=2), axis=-1)
    b, scale_b = bt.t(), scale_bt.t()
    out = kernels.matmul_fp8(a, b, scale_a, scale_b, out_dtype=BF16)
    assert out.dtype == BF16
    assert_close_fp8("matmul_fp8 to bfloat16", matmul_fp8_ref(a, b, scale_a, scale_b), out, k=k)


def matmul_fp8_blockwise_case():
    m, n, k = 37, 48, 200  # a partial scale block along K
    a, scale_a = kernels.quantize_fp8_blockwise(randn((m, k), torch.float32, seed=1))
    b, scale_b = kernels.quantize_fp8_blockwise(randn((n, k), torch.float32, seed=2), (128, 128))
    out = kernels.matmul_fp8_blockwise(a, b, scale_a, scale_b)
    check("matmul_fp8_blockwise", matmul_fp8_blockwise_ref(a, b, scale_a, scale_b), out, k=k)


def grouped_matmul_case():
    a, b = bf16((40, 48), 1), bf16((4, 48, 40), 2)
    offs = torch.tensor([5, 5, 33, 40], dtype=torch.int32, device=DEVICE)
    check("grouped_matmul", grouped_matmul_ref(a, b, offs), kernels.grouped_matmul(a, b, offs), k=48)


def swiglu_inputs(m=9, n=24, k=32):
    return bf16((m, k), 1), bf16((k, 2 * n), 2, scale=k**-0.5)


def swiglu_case():
    x, w = swiglu_inputs()
    n = w.shape[1] // 2
    check("swiglu", swiglu_ref(x, w[:, :n], w[:, n:]), kernels.swiglu(x, w), k=x.shape[1])


def swiglu_backward_case():
    x, w = (t.requires_grad_() for t in swiglu_inputs())
    (m, k), n = x.shape, w.shape[1] // 2
    grad_out = bf16((m, n), 3)
    dx, dw = torch.autograd.grad(kernels.swiglu(x, w), (x, w), grad_out)
    x64, w64 = x.detach().double().requires_grad_(), w.detach().double().requires_grad_()
    out64 = swiglu_ref(x64, w64[:, :n], w64[:, n:])
    dx_ref, dw_ref = torch.autograd.grad(out64, (x64, w64), grad_out.double())
    # d[g | u] is rounded to bfloat16 before both products, and derived from g and u
    # recomputed in bfloat16: four times the budget of each sum (as test_swiglu).
    check("swiglu dx", dx_ref, dx, k=max(1, 4 * 2 * n // k))
    check("swiglu dw", dw_ref, dw, k=64 * m)


# (B, H, H_kv, S_q, S_k, D): grouped heads, sequences off the interpreter's tiles.
ATTENTION_SHAPE = (1, 4, 2, 33, 33, 16)


def attention_inputs():
    b, h, h_kv, s_q, s_k, d = ATTENTION_SHAPE
    return bf16((b, h, s_q, d), 1), bf16((b, h_kv, s_k, d), 2), bf16((b, h_kv, s_k, d), 3)


def attention_forward(causal):
    q, k, v = attention_inputs()
    out = kernels.attention(q, k, v, causal=causal)
    check(f"attention causal={causal}", attention_ref(q, k, v, causal), out, k=k.shape[2])


def attention_backward(causal):
    q, k, v = (t.requires_grad_() for t in attention_inputs())
    out = kernels.attention(q, k, v, causal=causal)
    grad_out = bf16(out.shape, 4)
    dq, dk, dv = torch.autograd.grad(out, (q, k, v), grad_out)
    dq_ref, dk_ref, dv_ref = attention_grads_ref(q, k, v, grad_out, causal)
    group_rows = q.shape[1] // k.shape[1] * q.shape[2]
    check(f"attention dq causal={causal}", dq_ref, dq, k=k.shape[2])
    check(f"attention dk causal={causal}", dk_ref, dk, k=group_rows)
    check(f"attention dv causal={causal}", dv_ref, dv, k=group_rows)


def attention_decode_case():
    b, h, h_kv, s_q, s_max, d = 2, 4, 2, 3, 37, 32
    q, k, v = bf16((b, h, s_q, d), 1), bf16((b, h_kv, s_max, d), 2), bf16((b, h_kv, s_max, d), 3)
    lengths = torch.tensor([37, 9], dtype=torch.int32, device=DEVICE)
    out = kernels.attention_decode(q, k, v, lengths)
    ref = attention_decode_ref(q, k, v, lengths)
    assert out.dtype == BF16
    # The probabilities are rounded to bfloat16 before P @ V (as FlashAttention does): an
    # error of a rounding unit of each sequence's largest output (as test_attention_decode).
    rtol, atol = tolerance(BF16)
    for i in range(b):
        scale = ref[i].abs().max().item()
        torch.testing.assert_close(
            out[i].double(), ref[i].to(out.device), rtol=rtol, atol=max(atol, torch.finfo(BF16).eps * scale)
        )


CASES = [
    pytest.param("vector_add", vector_add_case, id="vector_add"),
    pytest.param("add_relu_mul", add_relu_mul_case, id="add_relu_mul"),
    pytest.param("gelu", gelu_case, id="gelu"),
    pytest.param("scale_shift", scale_shift_case, id="scale_shift"),
    pytest.param("strided_copy", strided_copy_case, id="strided_copy"),
    pytest.param("row_mean", row_mean_case, id="row_mean"),
    pytest.param("softmax", softmax_case, id="softmax"),
    pytest.param("rms_norm", rms_norm_case, id="rms_norm"),
    pytest.param("rms_norm", rms_norm_backward_case, id="rms_norm-backward"),
    pytest.param("rope", rope_case, id="rope"),
    pytest.param("rope", rope_backward_case, id="rope-backward"),
    pytest.param("matmul", matmul_case, id="matmul"),
    pytest.param("matmul", matmul_epilogue_case, id="matmul-bias-gelu"),
    pytest.param("matmul_splitk", matmul_splitk_case, id="matmul_splitk"),
    pytest.param("matmul_persistent", matmul_persistent_case, id="matmul_persistent"),
    pytest.param("matmul_fp8", matmul_fp8_case, id="matmul_fp8-to-bf16"),
    pytest.param("matmul_fp8_blockwise", matmul_fp8_blockwise_case, id="matmul_fp8_blockwise"),
    pytest.param("grouped_matmul", grouped_matmul_case, id="grouped_matmul"),
    pytest.param("swiglu", swiglu_case, id="swiglu"),
    pytest.param("swiglu", swiglu_backward_case, id="swiglu-backward"),
    pytest.param("attention", lambda: attention_forward(False), id="attention"),
    pytest.param("attention", lambda: attention_forward(True), id="attention-causal"),
    pytest.param("attention", lambda: attention_backward(False), id="attention-backward"),
    pytest.param("attention", lambda: attention_backward(True), id="attention-causal-backward"),
    pytest.param("attention_decode", attention_decode_case, id="attention_decode"),
]


@pytest.mark.parametrize("kernel, case", CASES)
def test_kernel_matches_reference_in_bfloat16(kernel, case):
    case()


@pytest.mark.parametrize("kernel", PUBLIC_KERNELS)
def test_every_public_kernel_has_a_bfloat16_case(kernel):
    covered = {p.values[0] for p in CASES}
    assert kernel in covered, (
        f"gpuperf.kernels.{kernel} has no bfloat16 case: add one to CASES in {__name__}, "
        "or add the name to NOT_KERNELS if it launches no kernel"
    )


def test_every_case_and_exclusion_names_a_public_name():
    public = set(kernels.__all__)
    assert {p.values[0] for p in CASES} <= public
    assert NOT_KERNELS <= public
