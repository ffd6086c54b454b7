import importlib
import importlib.util
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuperf.kernels import rope, rope_cos_sin
from gpuperf.kernels.rope import ROPE_BLOCK_H, ROPE_MAX_HEAD_DIM, rope_launch
from gpuperf.reference import rope_eager, rope_ref
from gpuperf.testing import assert_close
from tests._params import FLOAT_DTYPES, called_ops, cases, randn, record_calls, recording_backend
from tests.conftest import DEVICE

#: (B, H, H_kv, S, D)
SHAPES = [
    pytest.param((1, 1, 1, 1, 16), id="all-ones"),
    pytest.param((1, 4, 1, 77, 64), id="odd-S-mqa"),
    pytest.param((2, 4, 4, 9, 16), id="H_kv=H"),
    pytest.param((2, 32, 8, 3, 128), id="llama-heads"),
    pytest.param((1, ROPE_BLOCK_H + 4, 3, 10, 32), id="two-q-head-blocks"),
    pytest.param((1, 2, 1, 33, 96), id="D=96-padded-half"),
    pytest.param((3, 2, 1, 77, 16), id="token-blocks-cross-batches"),
]

# gpuperf.kernels.rope is the function; the module is looked up by name.
rope_module = importlib.import_module("gpuperf.kernels.rope")


def qkv_views(shape, dtype, seed=0):
    """``q``, ``k`` as the decoder layer passes them: transposed views of one fused QKV buffer."""
    b, h, h_kv, s, d = shape
    qkv = randn((b, s, h + 2 * h_kv, d), dtype, seed=seed)
    q, k, _v = qkv.split([h, h_kv, h_kv], dim=2)
    return q.transpose(1, 2), k.transpose(1, 2)


def tables(shape, kind, seed=0):
    """``(cos, sin)`` ``(B, S, D)`` float32: Llama's (``rope``, equal halves, from positions
    that differ per batch entry), random (halves that differ), or one table broadcast
    over the batch with stride 0 (``expand``)."""
    b, _h, _h_kv, s, d = shape
    if kind == "rope":
        positions = torch.arange(s, device=DEVICE)[None] + 1000 * torch.arange(b, device=DEVICE)[:, None]
        return rope_cos_sin(positions, d, base=500000.0)
    if kind == "random":
        return randn((b, s, d), torch.float32, seed=seed), randn((b, s, d), torch.float32, seed=seed + 1)
    cos, sin = rope_cos_sin(torch.arange(s, device=DEVICE), d)
    return cos.expand(b, s, d), sin.expand(b, s, d)


def check_gradients(q, k, cos, sin, name="rope"):
    """dq and dk of the Triton backward against autograd through the float64 reference."""
    q, k = q.detach().requires_grad_(), k.detach().requires_grad_()
    q_out, k_out = rope(q, k, cos, sin)
    grad_q = randn(tuple(q_out.shape), q.dtype, seed=98)
    grad_k = randn(tuple(k_out.shape), k.dtype, seed=99)
    dq, dk = torch.autograd.grad((q_out, k_out), (q, k), (grad_q, grad_k))
    q64, k64 = q.detach().double().requires_grad_(), k.detach().double().requires_grad_()
    dq_ref, dk_ref = torch.autograd.grad(
        rope_ref(q64, k64, cos, sin), (q64, k64), (grad_q.double(), grad_k.double())
    )
    assert dq.dtype == q.dtype and dk.dtype == k.dtype
    assert_close(f"{name} dq", dq_ref, dq)
    assert_close(f"{name} dk", dk_ref, dk)


@pytest.mark.parametrize("shape, kind, dtype", cases(SHAPES, ["rope", "random", "expanded"], FLOAT_DTYPES))
def test_matches_reference(shape, kind, dtype):
    q, k = qkv_views(shape, dtype, seed=sum(shape))
    cos, sin = tables(shape, kind, seed=sum(shape) + 1)
    q_out, k_out = rope(q, k, cos, sin)
    for x, out in ((q, q_out), (k, k_out)):
        assert out.shape == x.shape and out.dtype == dtype and out.is_contiguous()
    q_ref, k_ref = rope_ref(q, k, cos, sin)
    assert_close("rope q", q_ref, q_out)
    assert_close("rope k", k_ref, k_out)
    q_out, k_out = rope(q, k, cos, sin)  # the second call launches from the plan the first one made
    assert_close("rope q planned", q_ref, q_out)
    assert_close("rope k planned", k_ref, k_out)


@pytest.mark.parametrize("shape, kind, dtype", cases(SHAPES, ["rope", "random"], FLOAT_DTYPES))
def test_gradients_match_reference(shape, kind, dtype):
    """Random tables have halves that differ: the backward must be the transpose of the
    rotation, not the rotation by -sin."""
    q, k = qkv_views(shape, dtype, seed=sum(shape) + 2)
    check_gradients(q, k, *tables(shape, kind, seed=sum(shape) + 3))


def test_gradient_reaches_the_fused_qkv_buffer(device):
    """The model's case: q and k are views of one projection output that requires grad."""
    b, h, h_kv, s, d = 2, 4, 2, 7, 16
    qkv = randn((b, s, h + 2 * h_kv, d), torch.float32, seed=4).requires_grad_()
    cos, sin = tables((b, h, h_kv, s, d), "random", seed=5)
    q, k, v = qkv.split([h, h_kv, h_kv], dim=2)
    q_out, k_out = rope(q.transpose(1, 2), k.transpose(1, 2), cos, sin)
    loss = (q_out * randn(q_out.shape, torch.float32, seed=6)).sum() + k_out.square().sum() + v.sum()
    (grad,) = torch.autograd.grad(loss, qkv)
    qkv64 = qkv.detach().double().requires_grad_()
    q, k, v = qkv64.split([h, h_kv, h_kv], dim=2)
    q_ref, k_ref = rope_ref(q.transpose(1, 2), k.transpose(1, 2), cos, sin)
    loss = (q_ref * randn(q_ref.shape, torch.float32, seed=6).double()).sum() + k_ref.square().sum() + v.sum()
    (grad_ref,) = torch.autograd.grad(loss, qkv64)
    assert_close("rope dqkv", grad_ref, grad)


def test_only_q_requires_grad(device):
    q, k = qkv_views((1, 2, 1, 5, 16), torch.float32, seed=7)
    cos, sin = tables((1, 2, 1, 5, 16), "random", seed=8)
    q = q.detach().requires_grad_()
    q_out, _k_out = rope(q, k, cos, sin)
    grad = randn(q_out.shape, torch.float32, seed=9)
    (dq,) = torch.autograd.grad(q_out, q, grad)  # k_out's gradient is zeros
    q64 = q.detach().double().requires_grad_()
    (dq_ref,) = torch.autograd.grad(rope_ref(q64, k, cos, sin)[0], q64, grad.double())
    assert_close("rope dq only", dq_ref, dq)


def test_broadcast_gradients(device):
    """``(q_out.sum() + k_out.sum()).backward()`` hands the backward gradients of stride 0."""
    q, k = qkv_views((2, 3, 1, 6, 32), torch.float32, seed=10)
    q, k = q.detach().requires_grad_(), k.detach().requires_grad_()
    cos, sin = tables((2, 3, 1, 6, 32), "random", seed=11)
    q_out, k_out = rope(q, k, cos, sin)
    (q_out.sum() + 2 * k_out.sum()).backward()
    q64, k64 = q.detach().double().requires_grad_(), k.detach().double().requires_grad_()
    q_ref, k_ref = rope_ref(q64, k64, cos, sin)
    (q_ref.sum() + 2 * k_ref.sum()).backward()
    assert_close("rope dq sum", q64.grad, q.grad)
    assert_close("rope dk sum", k64.grad, k.grad)


def test_double_backward_is_refused(device):
    q, k = (x.detach().requires_grad_() for x in qkv_views((1, 2, 1, 3, 16), torch.float32, seed=34))
    cos, sin = tables((1, 2, 1, 3, 16), "random", seed=35)
    q_out, k_out = rope(q, k, cos, sin)
    (dq,) = torch.autograd.grad(q_out.square().sum() + k_out.sum(), q, create_graph=True)
    with pytest.raises(RuntimeError, match="marked with @once_differentiable"):
        dq.sum().backward()


@pytest.mark.parametrize("layout", ["contiguous", "strided-last-dim", "expanded-heads"])
def test_other_layouts(layout):
    shape = (2, 3, 2, 11, 16)
    b, h, h_kv, s, d = shape
    if layout == "contiguous":
        q, k = randn((b, h, s, d), torch.float32, seed=12), randn((b, h_kv, s, d), torch.float32, seed=13)
    elif layout == "strided-last-dim":
        q = randn((b, h, s, 2 * d), torch.float32, seed=12)[..., ::2]
        k = randn((b, s, h_kv, d), torch.float32, seed=13).transpose(1, 2)
        assert q.stride(-1) == 2
    else:  # one key head read as several (stride 0)
        q = randn((b, 1, s, d), torch.float32, seed=12).expand(b, h, s, d)
        k = randn((b, h_kv, s, d), torch.float32, seed=13)
    cos, sin = tables(shape, "random", seed=14)
    cos = randn((b, s, 2 * d), torch.float32, seed=15)[..., 1::2]  # a table of stride 2
    q_out, k_out = rope(q, k, cos, sin)
    q_ref, k_ref = rope_ref(q, k, cos, sin)
    assert_close(f"rope q {layout}", q_ref, q_out)
    assert_close(f"rope k {layout}", k_ref, k_out)
    check_gradients(q, k, cos, sin, name=f"rope {layout}")


def test_matches_the_eager_formula(device):
    shape = (2, 4, 2, 13, 64)
    q, k = qkv_views(shape, torch.float32, seed=16)
    cos, sin = tables(shape, "rope")
    expected_q, expected_k = rope_eager(q, k, cos, sin)
    q_out, k_out = rope(q, k, cos, sin)
    assert_close("rope vs eager q", expected_q, q_out)
    assert_close("rope vs eager k", expected_k, k_out)


def test_outputs_are_new_tensors(device):
    q = randn((1, 2, 3, 8), torch.float32, seed=17)
    k = randn((1, 1, 3, 8), torch.float32, seed=18)
    cos, sin = rope_cos_sin(torch.zeros(1, 3, dtype=torch.int64, device=device), 8)  # the identity rotation
    q_out, k_out = rope(q, k, cos, sin)
    assert torch.equal(q_out, q) and torch.equal(k_out, k)
    assert q_out.data_ptr() != q.data_ptr() and k_out.data_ptr() != k.data_ptr()


def test_no_grad_and_inference_mode(device):
    shape = (1, 2, 1, 5, 16)
    q, k = qkv_views(shape, torch.float32, seed=19)
    cos, sin = tables(shape, "random", seed=20)
    q.requires_grad_()
    with torch.no_grad():
        q_out, k_out = rope(q, k, cos, sin)
        assert q_out.grad_fn is None
        rope(q, k, cos.requires_grad_(), sin)  # tables that require grad are fine without grad mode
    cos.requires_grad_(False)
    q_ref, k_ref = rope_ref(q.detach(), k, cos, sin)
    assert_close("rope no_grad", q_ref, q_out)
    with torch.inference_mode():
        q_out, k_out = rope(q.detach(), k, cos, sin)
    assert_close("rope inference q", q_ref, q_out)
    assert_close("rope inference k", k_ref, k_out)


@pytest.mark.parametrize("shape", [(0, 2, 1, 5, 16), (2, 2, 1, 0, 16)], ids=["B=0", "S=0"])
def test_empty_returns_empty(shape):
    b, h, h_kv, s, d = shape
    q, k = randn((b, h, s, d), torch.float32), randn((b, h_kv, s, d), torch.float32)
    cos, sin = randn((b, s, d), torch.float32), randn((b, s, d), torch.float32)
    q_out, k_out = rope(q, k, cos, sin)
    assert q_out.shape == q.shape and k_out.shape == k.shape
    q.requires_grad_()
    k.requires_grad_()
    q_out, k_out = rope(q, k, cos, sin)
    (q_out.sum() + k_out.sum()).backward()
    assert q.grad.shape == q.shape and k.grad.shape == k.shape


@settings(max_examples=10, deadline=None)
@given(
    batch=st.integers(1, 3),
    heads=st.integers(1, 10),
    kv_heads=st.integers(1, 4),
    seq_len=st.integers(1, 40),
    half=st.integers(1, 40),
    seed=st.integers(0, 2**16),
)
def test_property_matches_reference(batch, heads, kv_heads, seq_len, half, seed):
    shape = (batch, heads, kv_heads, seq_len, 2 * half)
    q, k = qkv_views(shape, torch.float32, seed=seed)
    cos, sin = tables(shape, "random", seed=seed + 1)
    q_ref, k_ref = rope_ref(q, k, cos, sin)
    q_out, k_out = rope(q, k, cos, sin)
    assert_close("rope property q", q_ref, q_out)
    assert_close("rope property k", k_ref, k_out)


def test_launch_rules():
    assert rope_launch(32, 8, 128) == (8, 4, 64, 8)  # Llama 3 8B: 4 + 1 full head blocks
    assert rope_launch(1, 1, 16) == (1, 256, 8, 8)
    block_h, block_t, block_half, _ = rope_launch(4, 1, 96)
    assert (block_h, block_half) == (4, 64) and block_t >= 1
    assert rope_launch(64, 8, ROPE_MAX_HEAD_DIM)[1] == 1


# --- the tables ---------------------------------------------------------------------------------


@pytest.mark.parametrize("base", [10000.0, 500000.0, 7])
@pytest.mark.parametrize("head_dim", [2, 16, 128])
def test_cos_sin_match_the_formula(head_dim, base):
    positions = torch.tensor([[0, 1, 5, 777], [32768, 65535, 100000, 3]], dtype=torch.int32)
    cos, sin = rope_cos_sin(positions, head_dim, base=base, dtype=torch.float64)
    assert cos.shape == sin.shape == (2, 4, head_dim) and cos.dtype == torch.float64
    for index in [(0, 0), (0, 3), (1, 0), (1, 1), (1, 2)]:
        p = int(positions[index])
        for i in range(head_dim):
            angle = p * base ** (-(2 * (i % (head_dim // 2))) / head_dim)
            assert math.isclose(cos[index][i].item(), math.cos(angle), rel_tol=0, abs_tol=1e-9), (p, i)
            assert math.isclose(sin[index][i].item(), math.sin(angle), rel_tol=0, abs_tol=1e-9), (p, i)
    cos32, sin32 = rope_cos_sin(positions.long(), head_dim, base=base)
    assert cos32.dtype == sin32.dtype == torch.float32
    # Angles in float64, cast once: within float32's rounding even at position 100,000.
    assert (cos32.double() - cos).abs().max() <= 2**-24 and (sin32.double() - sin).abs().max() <= 2**-24


def test_cos_sin_dtype_and_device(device):
    positions = torch.arange(6, device=device).view(2, 3)
    cos, sin = rope_cos_sin(positions, 8, dtype=torch.bfloat16)
    assert sin.dtype == torch.bfloat16
    assert cos.dtype == torch.bfloat16 and cos.device == positions.device and cos.shape == (2, 3, 8)
    cos1, sin1 = rope_cos_sin(torch.tensor(4), 8)  # a 0-d position
    assert cos1.shape == sin1.shape == (8,)
    assert torch.equal(cos1, rope_cos_sin(torch.tensor([4]), 8)[0][0])


@pytest.mark.parametrize(
    "positions, head_dim, base, dtype, error, match",
    [
        pytest.param(
            [0, 1], 8, 1e4, torch.float32, TypeError, "positions must be a torch.Tensor, got list", id="list"
        ),
        pytest.param(
            torch.ones(3), 8, 1e4, torch.float32, TypeError, "integer tensor, got dtype float32", id="float"
        ),
        pytest.param(
            torch.ones(3, dtype=torch.bool), 8, 1e4, torch.float32, TypeError, "got dtype bool", id="bool"
        ),
        pytest.param(
            torch.arange(3), 7, 1e4, torch.float32, ValueError, "positive and even, got 7", id="odd"
        ),
        pytest.param(
            torch.arange(3), 0, 1e4, torch.float32, ValueError, "positive and even, got 0", id="zero"
        ),
        pytest.param(
            torch.arange(3), -4, 1e4, torch.float32, ValueError, "positive and even, got -4", id="neg"
        ),
        pytest.param(
            torch.arange(3),
            8.0,
            1e4,
            torch.float32,
            TypeError,
            "head_dim must be an int, got float",
            id="hd-float",
        ),
        pytest.param(
            torch.arange(3),
            True,
            1e4,
            torch.float32,
            TypeError,
            "head_dim must be an int, got bool",
            id="hd-bool",
        ),
        pytest.param(
            torch.arange(3), 8, 0.0, torch.float32, ValueError, "positive and finite, got 0.0", id="base-0"
        ),
        pytest.param(
            torch.arange(3),
            8,
            -2.0,
            torch.float32,
            ValueError,
            "positive and finite, got -2.0",
            id="base-neg",
        ),
        pytest.param(
            torch.arange(3),
            8,
            math.inf,
            torch.float32,
            ValueError,
            "positive and finite, got inf",
            id="base-inf",
        ),
        pytest.param(
            torch.arange(3),
            8,
            math.nan,
            torch.float32,
            ValueError,
            "positive and finite, got nan",
            id="base-nan",
        ),
        pytest.param(
            torch.arange(3),
            8,
            "1e4",
            torch.float32,
            TypeError,
            "base must be a number, got str",
            id="base-str",
        ),
        pytest.param(
            torch.arange(3),
            8,
            True,
            torch.float32,
            TypeError,
            "base must be a number, got bool",
            id="base-bool",
        ),
        pytest.param(
            torch.arange(3),
            8,
            1e4,
            torch.int32,
            TypeError,
            "floating-point torch.dtype, got torch.int32",
            id="dtype-int",
        ),
        pytest.param(
            torch.arange(3),
            8,
            1e4,
            "float32",
            TypeError,
            "floating-point torch.dtype, got float32",
            id="dtype-str",
        ),
    ],
)
def test_cos_sin_bad_inputs_are_refused(positions, head_dim, base, dtype, error, match):
    with pytest.raises(error, match=match):
        rope_cos_sin(positions, head_dim, base=base, dtype=dtype)


# --- bad inputs -----------------------------------------------------------------------------------


def t(*shape, dtype=torch.float32, device=DEVICE):
    return torch.randn(*shape).to(device=device, dtype=dtype)


Q, K, C = (2, 4, 5, 16), (2, 2, 5, 16), (2, 5, 16)


@pytest.mark.parametrize(
    "args, error, match",
    [
        pytest.param(
            ([1.0], t(*K), t(*C), t(*C)), TypeError, "q must be a torch.Tensor, got list", id="q-list"
        ),
        pytest.param(
            (t(*Q), None, t(*C), t(*C)), TypeError, "k must be a torch.Tensor, got NoneType", id="k-none"
        ),
        pytest.param(
            (t(*Q, dtype=torch.float64), t(*K, dtype=torch.float64), t(*C), t(*C)),
            TypeError,
            "q has dtype float64; supported",
            id="q-fp64",
        ),
        pytest.param(
            (t(*Q, dtype=torch.int32), t(*K), t(*C), t(*C)), TypeError, "q has dtype int32", id="q-int"
        ),
        pytest.param(
            (t(*Q), t(*K, dtype=torch.float16), t(*C), t(*C)),
            TypeError,
            "same dtype, got q float32, k float16",
            id="qk-dtypes",
        ),
        pytest.param(
            (t(*Q), t(*K), 0.5, t(*C)), TypeError, "cos must be a torch.Tensor, got float", id="cos-float"
        ),
        pytest.param(
            (t(*Q), t(*K), t(*C), t(*C, dtype=torch.float16)),
            TypeError,
            "sin has dtype float16; supported dtypes are float32",
            id="sin-fp16",
        ),
        pytest.param(
            (
                t(*Q, dtype=torch.float16),
                t(*K, dtype=torch.float16),
                t(*C, dtype=torch.float16),
                t(*C, dtype=torch.float16),
            ),
            TypeError,
            "cos has dtype float16",
            id="tables-in-q-dtype",
        ),
        pytest.param(
            (t(2, 4, 5), t(*K), t(*C), t(*C)), ValueError, r"q must be \(B, H, S, D\), a 4-d", id="q-3d"
        ),
        pytest.param(
            (t(*Q), t(2, 2, 5, 16, 1), t(*C), t(*C)), ValueError, "k must be .* 4-d tensor", id="k-5d"
        ),
        pytest.param(
            (t(*Q), t(*K), t(5, 16), t(*C)), ValueError, r"cos must be \(B, S, D\), a 3-d", id="cos-2d"
        ),
        pytest.param((t(*Q), t(*K), t(*C), t(1, 2, 5, 16)), ValueError, "sin must be .* 3-d", id="sin-4d"),
        pytest.param(
            (t(*Q), t(3, 2, 5, 16), t(*C), t(*C)), ValueError, "k must be .* B = 2, S = 5, D = 16", id="k-B"
        ),
        pytest.param(
            (t(*Q), t(2, 2, 6, 16), t(*C), t(*C)),
            ValueError,
            r"got q \(2, 4, 5, 16\), k \(2, 2, 6, 16\)",
            id="k-S",
        ),
        pytest.param((t(*Q), t(2, 2, 5, 8), t(*C), t(*C)), ValueError, "k must be", id="k-D"),
        pytest.param(
            (t(*Q), t(*K), t(1, 5, 16), t(*C)),
            ValueError,
            r"cos must be \(B, S, D\) = \(2, 5, 16\)",
            id="cos-B",
        ),
        pytest.param(
            (t(*Q), t(*K), t(*C), t(2, 4, 16)), ValueError, r"sin must be .* got \(2, 4, 16\)", id="sin-S"
        ),
        pytest.param(
            (t(*Q), t(*K), t(2, 5, 8), t(*C)), ValueError, r"cos must be .* got \(2, 5, 8\)", id="cos-D"
        ),
        pytest.param(
            (t(2, 4, 5, 15), t(2, 2, 5, 15), t(2, 5, 15), t(2, 5, 15)),
            ValueError,
            "head dim D must be even .* got 15",
            id="odd-D",
        ),
        pytest.param(
            (t(2, 4, 5, 0), t(2, 2, 5, 0), t(2, 5, 0), t(2, 5, 0)),
            ValueError,
            "head dim D must be even and between 2",
            id="D=0",
        ),
        pytest.param(
            (
                t(1, 1, 2, 2 * ROPE_MAX_HEAD_DIM),
                t(1, 1, 2, 2 * ROPE_MAX_HEAD_DIM),
                t(1, 2, 2 * ROPE_MAX_HEAD_DIM),
                t(1, 2, 2 * ROPE_MAX_HEAD_DIM),
            ),
            ValueError,
            f"between 2 and {ROPE_MAX_HEAD_DIM}",
            id="D-too-large",
        ),
        pytest.param(
            (t(*Q), t(2, 0, 5, 16), t(*C), t(*C)),
            ValueError,
            "at least one head each, got H = 4, H_kv = 0",
            id="no-kv-heads",
        ),
        pytest.param(
            (t(2, 0, 5, 16), t(*K), t(*C), t(*C)), ValueError, "got H = 0, H_kv = 2", id="no-q-heads"
        ),
        pytest.param(
            (t(*Q), t(*K), t(*C).requires_grad_(), t(*C)),
            ValueError,
            "cos and sin must not require grad",
            id="cos-requires-grad",
        ),
    ],
)
def test_bad_inputs_are_refused(args, error, match):
    with pytest.raises(error, match=match):
        rope(*args)


def test_bad_inputs_are_refused_after_a_planned_call(device):
    q, k, cos, sin = t(*Q), t(*K), t(*C), t(*C)
    rope(q, k, cos, sin)
    rope(q, k, cos, sin)
    with pytest.raises(ValueError, match="cos and sin must not require grad"):
        rope(q, k, cos.requires_grad_(), sin)
    with pytest.raises(TypeError, match="same dtype"):
        rope(q, k.half(), cos.detach(), sin)


def test_repeat_calls_launch_from_the_plan_the_first_left(monkeypatch):
    """The first call of a layout checks and plans; the next ones, on new tensors, skip the
    checks (none run) and compute on their own inputs, bit for bit as the op does."""
    checks = record_calls(monkeypatch, rope_module, "_check")
    rope.plans.clear()
    shape = (2, 4, 2, 9, 32)
    outputs = []
    for seed in (1, 2, 1):
        q, k = qkv_views(shape, torch.float16, seed=seed)
        cos, sin = tables(shape, "random", seed=seed + 10)
        q_out, k_out = rope(q, k, cos, sin)
        q_op, k_op = torch.ops.gpuperf.rope(q, k, cos, sin)
        assert torch.equal(q_out, q_op) and torch.equal(k_out, k_op)
        q_ref, k_ref = rope_ref(q, k, cos, sin)
        assert_close(f"planned rope q, seed {seed}", q_ref, q_out)
        assert_close(f"planned rope k, seed {seed}", k_ref, k_out)
        outputs.append(torch.cat((q_out.flatten(), k_out.flatten())))
    assert len(checks) == 1 and len(rope.plans) == 1
    assert torch.equal(outputs[2], outputs[0]) and not torch.equal(outputs[1], outputs[0])


def test_each_layout_and_dtype_has_its_own_plan():
    rope.plans.clear()
    shape = (2, 2, 1, 5, 16)
    q, k = qkv_views(shape, torch.float32, seed=3)
    cos, sin = tables(shape, "random", seed=4)
    variants = [
        (q, k, cos, sin),  # transposed views of one QKV buffer
        (q.contiguous(), k.contiguous(), cos, sin),
        (q.half(), k.half(), cos, sin),
        (q, k, *tables(shape, "expanded")),  # tables of stride 0 over the batch
    ]
    for i, args in enumerate(variants):
        for _ in range(2):
            q_ref, k_ref = rope_ref(*args)
            q_out, k_out = rope(*args)
            assert_close(f"rope layout {i} q", q_ref, q_out)
            assert_close(f"rope layout {i} k", k_ref, k_out)
        assert len(rope.plans) == i + 1


def test_calls_autograd_records_are_not_planned():
    """A call that needs a gradient records the registered backward (one autograd Function named
    after the op), every time, even for a layout already planned: its backward still flows."""
    shape = (1, 2, 1, 5, 16)
    q, k = qkv_views(shape, torch.float32, seed=5)
    cos, sin = tables(shape, "random", seed=6)
    rope.plans.clear()
    for _ in range(2):
        rope(q, k, cos, sin)
    assert len(rope.plans) == 1
    for _ in range(2):
        check_gradients(q, k, cos, sin, name="rope after a plan")
        q_out, _k_out = rope(q.detach().requires_grad_(), k, cos, sin)
        assert type(q_out.grad_fn).__name__ == "gpuperf_ropeBackward"
    assert len(rope.plans) == 1


@pytest.mark.skipif(DEVICE != "cpu", reason="checks the device error on a machine without a GPU")
def test_tensors_on_another_device_are_rejected():
    with pytest.raises(ValueError, match="same device, got q on cpu, k on meta"):
        rope(t(*Q), t(*K, device="meta"), t(*C), t(*C))
    with pytest.raises(ValueError, match="same device, got q on cpu, sin on meta"):
        rope(t(*Q), t(*K), t(*C), t(*C, device="meta"))


@pytest.mark.gpu
def test_tables_on_the_cpu_are_rejected_on_a_gpu():
    with pytest.raises(ValueError, match="same device, got q on cuda:0, cos on cpu"):
        rope(t(*Q), t(*K), t(*C, device="cpu"), t(*C))


def test_cpu_tensor_is_refused_without_interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    with pytest.raises(ValueError, match="q must be on a CUDA device"):
        rope(torch.ones(Q), torch.ones(K), torch.ones(C), torch.ones(C))


# --- torch.library and torch.compile --------------------------------------------------------------


def test_registered_ops_and_their_autograd(device):
    shape = (2, 3, 1, 4, 16)
    q, k = (x.detach().requires_grad_() for x in qkv_views(shape, torch.float32, seed=21))
    cos, sin = tables(shape, "random", seed=22)
    q_out, k_out = torch.ops.gpuperf.rope(q, k, cos, sin)
    q_ref, k_ref = rope_ref(q.detach(), k.detach(), cos, sin)
    assert_close("torch.ops.gpuperf.rope q", q_ref, q_out)
    assert_close("torch.ops.gpuperf.rope k", k_ref, k_out)
    grad_q, grad_k = randn(q_out.shape, torch.float32, seed=23), randn(k_out.shape, torch.float32, seed=24)
    dq, dk = torch.autograd.grad((q_out, k_out), (q, k), (grad_q, grad_k))
    dq_op, dk_op = torch.ops.gpuperf.rope_backward(grad_q, grad_k, cos, sin)
    q64, k64 = q.detach().double().requires_grad_(), k.detach().double().requires_grad_()
    dq_ref, dk_ref = torch.autograd.grad(
        rope_ref(q64, k64, cos, sin), (q64, k64), (grad_q.double(), grad_k.double())
    )
    for name, ref, got in (
        ("dq", dq_ref, dq),
        ("dk", dk_ref, dk),
        ("op dq", dq_ref, dq_op),
        ("op dk", dk_ref, dk_op),
    ):
        assert_close(f"rope {name}", ref, got)


def layer(qkv, cos, sin, w_q, w_k):
    """The decoder layer's use: split a fused QKV output, rotate q and k, use them (a loss
    linear in the outputs, so the gradients flowing back are the weights, exactly)."""
    q, k, v = qkv.split([4, 2, 2], dim=2)
    q, k = rope(q.transpose(1, 2), k.transpose(1, 2), cos, sin)
    return (q.float() * w_q).sum() + (k.float() * w_k).sum() + v.float().sum()


def layer_ref(qkv, cos, sin, w_q, w_k):
    q, k, v = qkv.split([4, 2, 2], dim=2)
    q, k = rope_ref(q.transpose(1, 2), k.transpose(1, 2), cos, sin)
    return (q * w_q.double()).sum() + (k * w_k.double()).sum() + v.double().sum()


def layer_inputs(b, s, d, dtype, seed):
    """A QKV buffer with 4 query and 2 key/value heads, the tables, and loss weights
    that ``dtype`` represents exactly."""
    qkv = randn((b, s, 8, d), dtype, seed=seed)
    cos, sin = tables((b, 4, 2, s, d), "random", seed=seed + 1)
    w_q = randn((b, 4, s, d), dtype, seed=seed + 2).float()
    w_k = randn((b, 2, s, d), dtype, seed=seed + 3).float()
    return qkv, cos, sin, w_q, w_k


def test_compile_fullgraph_trains_through_one_graph(device):
    graphs, backend = recording_backend()

    qkv, *rest = layer_inputs(2, 5, 16, torch.float32, seed=25)
    qkv.requires_grad_()
    loss = torch.compile(layer, backend=backend, fullgraph=True)(qkv, *rest)
    assert len(graphs) == 1
    called = called_ops(graphs[0])
    assert "gpuperf.rope" in called
    loss.backward()
    qkv64 = qkv.detach().double().requires_grad_()
    loss_ref = layer_ref(qkv64, *rest)
    loss_ref.backward()
    torch.testing.assert_close(loss.double(), loss_ref, rtol=1e-5, atol=1e-4)
    assert_close("compiled rope dqkv", qkv64.grad, qkv.grad)


# --- on a GPU, at the sizes the benchmark runs ---------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float16, torch.bfloat16], ids=["fp32", "fp16", "bf16"]
)
@pytest.mark.parametrize(
    "shape", [(1, 32, 8, 4096, 128), (4, 32, 8, 2048, 128), (64, 32, 8, 1, 128), (2, 12, 4, 1000, 64)],
    ids=["prefill-4k", "prefill-4x2k", "decode-64", "odd"],
)  # fmt: skip
def test_gpu_forward_and_gradients_at_real_sizes(shape, dtype):
    q, k = qkv_views(shape, dtype, seed=27)
    cos, sin = tables(shape, "rope")
    q_out, k_out = rope(q, k, cos, sin)
    q_ref, k_ref = rope_ref(q, k, cos, sin)
    assert_close("rope gpu q", q_ref, q_out)
    assert_close("rope gpu k", k_ref, k_out)
    check_gradients(q, k, cos, sin, name="rope gpu")


@pytest.mark.gpu
def test_gpu_planned_launches_read_the_new_inputs():
    rope.plans.clear()
    shape = (2, 4, 2, 33, 64)
    base = torch.randn(2 * 33 * 8 * 64 + 8, device="cuda", dtype=torch.bfloat16)
    cos, sin = tables(shape, "random", seed=28)
    for offset in (0, 0, 8, 8, 1, 1):  # each offset twice: the second call launches from the plan
        qkv = base[offset : offset + 2 * 33 * 8 * 64].view(2, 33, 8, 64)
        q, k, _v = qkv.split([4, 2, 2], dim=2)
        q, k = q.transpose(1, 2), k.transpose(1, 2)
        q_ref, k_ref = rope_ref(q, k, cos, sin)
        q_out, k_out = rope(q, k, cos, sin)
        assert_close(f"rope planned q, offset {offset}", q_ref, q_out)
        assert_close(f"rope planned k, offset {offset}", k_ref, k_out)
    assert len(rope.plans) == 2  # 16-byte aligned and not
    cos2, sin2 = tables(shape, "random", seed=29)
    q_ref, k_ref = rope_ref(q, k, cos2, sin2)
    q_out, k_out = rope(q, k, cos2, sin2)
    assert_close("rope planned, new tables", q_ref, q_out)
    assert_close("rope planned, new tables k", k_ref, k_out)


@pytest.mark.gpu
def test_gpu_matches_the_eager_formula_in_bf16():
    shape = (1, 32, 8, 2048, 128)
    q, k = qkv_views(shape, torch.bfloat16, seed=30)
    cos, sin = tables(shape, "rope")
    for expected, got in zip(rope_eager(q, k, cos, sin), rope(q, k, cos, sin), strict=True):
        # The eager formula rounds the tables and both products to bf16: ~3 ulps where they cancel.
        torch.testing.assert_close(got, expected, rtol=1.6e-2, atol=5e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])
def test_gpu_compile_inductor_trains(mode):
    torch._dynamo.reset()
    qkv, *rest = layer_inputs(2, 64, 128, torch.bfloat16, seed=31)
    compiled = torch.compile(layer, fullgraph=True, mode=mode)
    for _ in range(3):  # reduce-overhead records a CUDA graph on a later call, then replays it
        x = qkv.clone().requires_grad_()
        loss = compiled(x, *rest)
        loss.backward()
    x64 = qkv.double().requires_grad_()
    loss_ref = layer_ref(x64, *rest)
    loss_ref.backward()
    # q and k rounded to bf16 once each, summed over 196,608 products of order one.
    torch.testing.assert_close(loss.double(), loss_ref, rtol=1e-3, atol=5.0)
    assert_close("compiled rope dqkv", x64.grad, x.grad)


@pytest.mark.gpu
def test_gpu_eager_rope_captures_into_a_cuda_graph():
    shape = (1, 32, 8, 16, 128)
    q, k = qkv_views(shape, torch.bfloat16, seed=32)
    cos, sin = tables(shape, "rope")
    rope(q, k, cos, sin)  # compile and plan outside the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        q_out, k_out = rope(q, k, cos, sin)
    q.copy_(randn(q.shape, torch.bfloat16, seed=33))
    graph.replay()
    q_ref, k_ref = rope_ref(q, k, cos, sin)
    assert_close("rope graph q", q_ref, q_out)
    assert_close("rope graph k", k_ref, k_out)


# --- the benchmark's declaration ------------------------------------------------------------------


def test_benchmark_counts_bytes_and_flops_and_passes_the_models_views(device):
    from gpuperf.bench import catalog
    from gpuperf.bench.runner import check

    bench = catalog.ROPE
    # q and k (40 heads of 128, bf16) read and written once, the float32 tables read once.
    assert bench.bytes(1024) == 2 * 1024 * 40 * 128 * 2 + 2 * 1024 * 128 * 4
    assert bench.flops(1024) == 3 * 1024 * 40 * 128
    q, k, cos, sin = bench.make_inputs(8, torch.device(device))
    assert q.shape == (1, 32, 8, 128) and k.shape == (1, 8, 8, 128) and cos.shape == (1, 8, 128)
    assert not q.is_contiguous() and q.untyped_storage().data_ptr() == k.untyped_storage().data_ptr()
    expected = bench.reference(q, k, cos, sin)
    for provider in bench.providers:
        if provider.key == "liger" and importlib.util.find_spec("liger_kernel") is None:
            continue  # (Liger-Kernel is no dependency: its row holds the import error)
        if provider.key != "compile":  # torch.compile of the eager formula: on a GPU
            check(f"rope {provider.key}", expected, provider.make(q, k, cos, sin)(), k=bench.reduction(8))


# --- the backward through the one launch path -----------------------------------------------------


def test_the_eager_backward_launches_from_its_plan(device):
    """rope_backward is an op of its own: a second backward of the same layout runs its plan, on
    the new gradients."""
    shape = (2, 3, 1, 6, 16)
    rope.backward.plans.clear()
    for seed in (40, 41):
        q, k = qkv_views(shape, torch.float32, seed=seed)
        check_gradients(q, k, *tables(shape, "random", seed=seed + 1), name=f"rope backward, seed {seed}")
    assert len(rope.backward.plans) == 1
    assert rope.backward.registered is torch.ops.gpuperf.rope_backward


def test_bad_inputs_are_refused_when_autograd_records(device):
    q, k, cos, sin = t(*Q).requires_grad_(), t(*K), t(*C), t(*C)
    rope(q, k, cos, sin)
    with pytest.raises(TypeError, match="cos has dtype float16"):
        rope(q, k, cos.half(), sin)
    with pytest.raises(ValueError, match=r"k must be \(B, H_kv, S, D\)"):
        rope(q, t(3, 2, 5, 16), cos, sin)
    with pytest.raises(TypeError, match=r"sin must be a torch\.Tensor, got list"):
        rope(q, k, cos, [0.0])
