import importlib

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuperf.kernels import rms_norm
from gpuperf.kernels.rms_norm import RMS_NORM_BWD_MAX_FUSED_COLS, RMS_NORM_MAX_FUSED_COLS
from gpuperf.reference import rms_norm_eager, rms_norm_ref
from gpuperf.testing import assert_close
from tests._params import FLOAT_DTYPES, called_ops, randn, record_calls, recording_backend, shape_id
from tests.conftest import DEVICE

LONG = RMS_NORM_MAX_FUSED_COLS + 1  # the chunked forward (and backward)
BWD_LONG = RMS_NORM_BWD_MAX_FUSED_COLS + 809  # the fused forward, the chunked backward
SHAPES = [
    (1,),  # one row of one element
    (7,),  # rank 1
    (1, 1),
    (3, 7),  # fewer rows than a program holds
    (5, 33),  # a row just past a power of two
    (9, 1000),  # more blocks of rows than backward programs
    (2, 3, 129),  # rank 3
    (3, 2100),  # a ragged row: the chunked forward in short chunks
    (3, BWD_LONG),
    (2, LONG),
]

# gpuperf.kernels.rms_norm is the function; the module is looked up by name.
rms_norm_module = importlib.import_module("gpuperf.kernels.rms_norm")


def inputs(shape, dtype, seed=0):
    x = randn(shape, dtype, seed=seed)
    weight = (1 + 0.5 * randn(shape[-1:], torch.float32, seed=seed + 1)).to(dtype)
    return x, weight


def check_gradients(x, weight, eps=1e-6, grad_y=None, name="rms_norm"):
    """dx and dweight of the Triton backward against autograd through the float64 reference."""
    x, weight = x.detach().requires_grad_(), weight.detach().requires_grad_()
    y = rms_norm(x, weight, eps=eps)
    if grad_y is None:
        grad_y = randn(tuple(y.shape), x.dtype, seed=99)
    dx, dw = torch.autograd.grad(y, (x, weight), grad_y)
    x64, w64 = x.detach().double().requires_grad_(), weight.detach().double().requires_grad_()
    dx_ref, dw_ref = torch.autograd.grad(rms_norm_ref(x64, w64, eps), (x64, w64), grad_y.double())
    assert dx.dtype == x.dtype and dw.dtype == weight.dtype and dw.shape == weight.shape
    n_rows = x.numel() // x.shape[-1]
    assert_close(f"{name} dx", dx_ref, dx, k=x.shape[-1])
    # Each term dy * x_hat is rounded and up to a few in size: 16 * n_rows gives 4x the
    # rounding budget of a sum of n_rows terms of order one.
    assert_close(f"{name} dweight", dw_ref, dw, k=16 * n_rows)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
def test_matches_reference(shape, dtype):
    x, weight = inputs(shape, dtype, seed=sum(shape))
    out = rms_norm(x, weight)
    assert out.shape == x.shape and out.dtype == dtype and out.is_contiguous()
    assert_close("rms_norm", rms_norm_ref(x, weight), out)
    out = rms_norm(x, weight)  # the second call launches from the plan the first one made
    assert_close("rms_norm planned", rms_norm_ref(x, weight), out)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", [*SHAPES[:-1], (1, LONG)], ids=shape_id)
def test_gradients_match_reference(shape, dtype):
    check_gradients(*inputs(shape, dtype, seed=sum(shape) + 1))


def test_eps_and_scale(device):
    x, weight = inputs((4, 50), torch.float32, seed=3)
    for eps in (1e-6, 0.5, 3):
        assert_close(f"rms_norm eps={eps}", rms_norm_ref(x, weight, eps), rms_norm(x, weight, eps=eps))
    tiny = 1e-4 * x  # mean square 1e-8: eps matters
    assert_close("rms_norm tiny", rms_norm_ref(tiny, weight, 1e-6), rms_norm(tiny, weight))
    check_gradients(tiny, weight, eps=1e-6, name="rms_norm tiny")


def test_matches_the_eager_formula(device):
    x, weight = inputs((6, 300), torch.float32, seed=4)
    assert_close("rms_norm vs eager", rms_norm_eager(x, weight), rms_norm(x, weight))


@pytest.mark.parametrize("n_cols", [100, BWD_LONG], ids=["fused", "chunked-backward"])
def test_non_contiguous_inputs(n_cols):
    x = randn((n_cols, 3), torch.float32, seed=5).t()  # column stride 3
    weight = randn((2 * n_cols,), torch.float32, seed=6)[::2]  # weight stride 2
    assert not x.is_contiguous() and weight.stride() == (2,)
    assert_close("rms_norm transposed", rms_norm_ref(x, weight), rms_norm(x, weight))
    check_gradients(x, weight, name="rms_norm transposed")
    y = randn((2, 4, n_cols), torch.float32, seed=7)[:, ::2]  # rows that skip rows
    assert_close("rms_norm sliced", rms_norm_ref(y, weight), rms_norm(y, weight))
    check_gradients(y, weight, name="rms_norm sliced")


def test_broadcast_gradient(device):
    """``y.sum().backward()`` hands the backward a gradient of stride 0."""
    x, weight = inputs((5, 40), torch.float32, seed=8)
    check_gradients(x, weight, grad_y=torch.ones((), device=device).expand(5, 40), name="rms_norm sum")


def test_no_grad_and_inference_mode(device):
    x, weight = inputs((3, 20), torch.float32, seed=9)
    x.requires_grad_()
    with torch.no_grad():
        out = rms_norm(x, weight)
    assert out.grad_fn is None
    assert_close("rms_norm no_grad", rms_norm_ref(x.detach(), weight), out)
    with torch.inference_mode():
        assert_close("rms_norm inference", rms_norm_ref(x.detach(), weight), rms_norm(x.detach(), weight))


def test_empty_returns_empty(device):
    for shape in [(0,), (0, 8), (4, 0), (2, 0, 3)]:
        x, weight = inputs(shape, torch.float32)
        out = rms_norm(x, weight)
        assert out.shape == shape
        x.requires_grad_()
        weight.requires_grad_()
        out = rms_norm(x, weight)
        out.sum().backward()
        assert x.grad.shape == x.shape and torch.equal(weight.grad, torch.zeros_like(weight))


@settings(max_examples=10, deadline=None)
@given(
    rows=st.integers(1, 9),
    cols=st.integers(1, 300),
    scale=st.floats(0.01, 30),
    eps=st.sampled_from([1e-6, 1e-5, 0.1]),
    seed=st.integers(0, 2**16),
)
def test_property_rows_match_reference(rows, cols, scale, eps, seed):
    x, weight = inputs((rows, cols), torch.float32, seed=seed)
    x = scale * x
    assert_close("rms_norm property", rms_norm_ref(x, weight, eps), rms_norm(x, weight, eps=eps))


def t(*shape, dtype=torch.float32, device=DEVICE):
    return torch.randn(*shape).to(device=device, dtype=dtype)


@pytest.mark.parametrize(
    "x, weight, eps, error, match",
    [
        pytest.param([1.0], t(1), 1e-6, TypeError, "x must be a torch.Tensor, got list", id="x-list"),
        pytest.param(t(3, 4), 1.0, 1e-6, TypeError, "weight must be a torch.Tensor, got float", id="w-float"),
        pytest.param(
            t(3, 4, dtype=torch.int32), t(4), 1e-6, TypeError, "x has dtype int32; supported", id="x-int32"
        ),
        pytest.param(
            t(3, 4, dtype=torch.float64),
            t(4, dtype=torch.float64),
            1e-6,
            TypeError,
            "x has dtype float64",
            id="x-fp64",
        ),
        pytest.param(
            t(3, 4), t(4, dtype=torch.int64), 1e-6, TypeError, "weight has dtype int64", id="w-int64"
        ),
        pytest.param(
            t(3, 4),
            t(4, dtype=torch.float16),
            1e-6,
            TypeError,
            "same dtype, got x float32, weight float16",
            id="dtype-mismatch",
        ),
        pytest.param(t(()), t(1), 1e-6, ValueError, "x must have at least 1 dimension.*0-d", id="x-0d"),
        pytest.param(
            t(3, 4), t(5), 1e-6, ValueError, r"weight must have shape \(N,\).*= 4, got \(5,\)", id="w-N"
        ),
        pytest.param(t(3, 4), t(1, 4), 1e-6, ValueError, r"weight must have shape.*got \(1, 4\)", id="w-2d"),
        pytest.param(t(3, 4), t(()), 1e-6, ValueError, r"weight must have shape.*got \(\)", id="w-0d"),
        pytest.param(t(3, 4), t(4), "1e-6", TypeError, "eps must be a float, got str", id="eps-str"),
        pytest.param(t(3, 4), t(4), None, TypeError, "eps must be a float, got NoneType", id="eps-none"),
        pytest.param(t(3, 4), t(4), True, TypeError, "eps must be a float, got bool", id="eps-bool"),
        pytest.param(t(3, 4), t(4), 0.0, ValueError, "eps must be positive and finite, got 0.0", id="eps-0"),
        pytest.param(t(3, 4), t(4), -1e-6, ValueError, "eps must be positive and finite", id="eps-neg"),
        pytest.param(t(3, 4), t(4), float("inf"), ValueError, "positive and finite, got inf", id="eps-inf"),
        pytest.param(t(3, 4), t(4), float("nan"), ValueError, "positive and finite, got nan", id="eps-nan"),
    ],
)
def test_bad_inputs_are_refused(x, weight, eps, error, match):
    with pytest.raises(error, match=match):
        rms_norm(x, weight, eps=eps)


def test_bad_eps_is_refused_after_a_planned_call(device):
    """A plan made with eps=1.0 must not let eps=True (equal to 1.0 as a key) through."""
    x, weight = inputs((3, 4), torch.float32)
    rms_norm(x, weight, eps=1.0)
    with pytest.raises(TypeError, match="eps must be a float, got bool"):
        rms_norm(x, weight, eps=True)


def test_repeat_calls_launch_from_the_plan_the_first_left(monkeypatch):
    """The first call of a layout and eps checks and plans; the next ones, on new tensors, skip
    the checks (none run) and compute on their own inputs, bit for bit as the op does. An int
    eps is keyed apart from a float one and gives the same output. The registered op (which
    also returns rstd) keeps plans of its own: its first call checks too."""
    checks = record_calls(monkeypatch, rms_norm_module, "_check")
    rms_norm.plans.clear()
    rms_norm.registered_plans.clear()
    outputs = []
    for seed in (1, 2, 1):
        x, weight = inputs((2, 3, 50), torch.float16, seed=seed)
        for eps in (1.0, 1):
            out = rms_norm(x, weight, eps=eps)
            op = torch.ops.gpuperf.rms_norm(x.view(-1, 50), weight, 1.0)[0].view(x.shape)
            assert torch.equal(out, op)
            assert_close(f"planned rms_norm, eps {eps!r}, seed {seed}", rms_norm_ref(x, weight, 1.0), out)
            outputs.append(out)
    assert len(rms_norm.plans) == 2  # one per type of eps
    assert len(rms_norm.registered_plans) == 1 and len(checks) == 3
    assert torch.equal(outputs[4], outputs[0]) and not torch.equal(outputs[2], outputs[0])


def test_each_layout_and_dtype_has_its_own_plan():
    rms_norm.plans.clear()
    x, weight = inputs((5, 40), torch.float32, seed=3)
    strided_weight = torch.stack((weight, weight), dim=1)[:, 0]  # stride 2
    variants = [(x, weight), (x.t().contiguous().t(), weight), (x.half(), weight.half()), (x, strided_weight)]
    for i, (xv, wv) in enumerate(variants):
        for _ in range(2):
            assert_close(f"rms_norm layout {i}", rms_norm_ref(xv, wv), rms_norm(xv, wv))
        assert len(rms_norm.plans) == i + 1


def test_copied_or_differentiated_inputs_are_not_planned():
    """Leading dimensions that cannot be viewed as one are copied (a plan would read the copy's
    address), and autograd records a call that needs a gradient: neither is planned."""
    rms_norm.plans.clear()
    for seed in (1, 2):
        x, weight = inputs((4, 3, 50), torch.float32, seed=seed)
        x = x.transpose(0, 1)
        assert_close(f"rms_norm of a copy, seed {seed}", rms_norm_ref(x, weight), rms_norm(x, weight))
    assert len(rms_norm.plans) == 0
    x, weight = inputs((3, 50), torch.float32, seed=3)
    for _ in range(2):
        check_gradients(x, weight)
    assert len(rms_norm.plans) == 0


def test_eps_is_keyword_only(device):
    with pytest.raises(TypeError):
        rms_norm(t(3, 4), t(4), 1e-6)


@pytest.mark.skipif(DEVICE != "cpu", reason="checks the device error on a machine without a GPU")
def test_tensors_on_another_device_are_rejected():
    with pytest.raises(ValueError, match=r"same device, got x on cpu, weight on meta"):
        rms_norm(t(3, 4), t(4, device="meta"))


@pytest.mark.gpu
def test_weight_on_the_cpu_is_rejected_on_a_gpu():
    with pytest.raises(ValueError, match=r"same device, got x on cuda:0, weight on cpu"):
        rms_norm(t(3, 4), t(4, device="cpu"))


def test_cpu_tensor_is_refused_without_interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    with pytest.raises(ValueError, match="x must be on a CUDA device"):
        rms_norm(torch.ones(2, 3), torch.ones(3))


# --- on a GPU, at the sizes the benchmark runs ------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float16, torch.bfloat16], ids=["fp32", "fp16", "bf16"]
)
@pytest.mark.parametrize("shape", [(8192, 4096), (4, 2048, 1024), (1000, 333), (64, 65536)], ids=shape_id)
def test_gpu_forward_and_gradients_at_real_sizes(shape, dtype):
    x, weight = inputs(shape, dtype, seed=10)
    out = rms_norm(x, weight)
    assert_close("rms_norm gpu", rms_norm_ref(x, weight), out)
    check_gradients(x, weight, name="rms_norm gpu")


@pytest.mark.gpu
def test_gpu_matches_torch_rms_norm():
    x, weight = inputs((8192, 4096), torch.bfloat16, seed=11)
    expected = torch.nn.functional.rms_norm(x, (4096,), weight, eps=1e-6)
    torch.testing.assert_close(rms_norm(x, weight), expected, rtol=1.6e-2, atol=1e-2)


@pytest.mark.gpu
def test_gpu_planned_launches_read_the_new_inputs():
    base = torch.randn(3 * 4096 + 8, device="cuda", dtype=torch.bfloat16)
    weight = torch.randn(1024, device="cuda", dtype=torch.bfloat16)
    for offset in (0, 0, 8, 8):  # each offset twice: the second call launches from the plan
        x = base[offset : offset + 4096].view(4, 1024)
        assert_close("rms_norm planned", rms_norm_ref(x, weight), rms_norm(x, weight))
    x2 = torch.randn(4, 1024, device="cuda", dtype=torch.bfloat16)
    assert_close("rms_norm planned, new x", rms_norm_ref(x2, weight), rms_norm(x2, weight))


@pytest.mark.gpu
def test_gpu_compile_fullgraph_trains_through_one_graph():
    graphs, backend = recording_backend()

    def layer(x, weight):
        return rms_norm(x * 2.0, weight, eps=1e-5) * 2.0  # exact scalings in bf16

    x, weight = inputs((2, 64, 512), torch.bfloat16, seed=12)
    eager_graph = torch.compile(layer, backend=backend, fullgraph=True)
    eager_graph(x, weight)
    assert len(graphs) == 1
    called = called_ops(graphs[0])
    assert "gpuperf.rms_norm" in called
    torch._dynamo.reset()
    compiled = torch.compile(layer, fullgraph=True)
    xs, ws = x.clone().requires_grad_(), weight.clone().requires_grad_()
    out = compiled(xs, ws)
    grad_y = randn(tuple(out.shape), torch.bfloat16, seed=13)
    out.backward(grad_y)
    x64, w64 = x.double().requires_grad_(), weight.double().requires_grad_()
    ref = rms_norm_ref(x64 * 2.0, w64, 1e-5) * 2.0
    ref.backward(grad_y.double())
    assert_close("compiled rms_norm", ref, out)
    assert_close("compiled rms_norm dx", x64.grad, xs.grad, k=4 * 512)
    assert_close("compiled rms_norm dweight", w64.grad, ws.grad, k=16 * 128)


def test_registered_ops_and_their_autograd(device):
    """torch.ops.gpuperf.rms_norm (what torch.compile calls) returns y and rstd and trains."""
    x, weight = inputs((5, 40), torch.float32, seed=14)
    x.requires_grad_()
    weight.requires_grad_()
    y, rstd = torch.ops.gpuperf.rms_norm(x, weight, 1e-6)
    assert_close("torch.ops.gpuperf.rms_norm", rms_norm_ref(x.detach(), weight.detach()), y)
    expected_rstd = x.detach().double().pow(2).mean(-1).add(1e-6).rsqrt()
    assert rstd.dtype == torch.float32
    assert_close("rstd", expected_rstd, rstd)
    grad_y = randn((5, 40), torch.float32, seed=15)
    dx, dw = torch.autograd.grad(y, (x, weight), grad_y)
    x64, w64 = x.detach().double().requires_grad_(), weight.detach().double().requires_grad_()
    dx_ref, dw_ref = torch.autograd.grad(rms_norm_ref(x64, w64), (x64, w64), grad_y.double())
    assert_close("op dx", dx_ref, dx, k=40)
    assert_close("op dweight", dw_ref, dw, k=16 * 5)


# --- the backward through the one launch path -------------------------------------------------


def test_a_call_without_autograd_stores_no_rstd(device):
    """The public op outside autograd calls the forward with saving=False: no rstd is allocated
    or stored (STORE_RSTD is off; the launch writes y only); the registered op, which
    autograd records, stores it. (The forward function returns its launches unlaunched.)"""
    x, weight = inputs((3, 2, 40), torch.float32, seed=16)
    (y, rstd), (launch,) = rms_norm.__wrapped__(x, weight, saving=False)
    assert rstd is None and launch.constexprs[-1] is False
    assert {t.data_ptr() for t in launch.args if isinstance(t, torch.Tensor)} == {
        x.data_ptr(),
        weight.data_ptr(),
        y.data_ptr(),
    }
    (y, rstd), (launch,) = rms_norm.__wrapped__(x, weight)
    assert rstd.shape == (6,) and rstd.dtype == torch.float32 and launch.constexprs[-1] is True
    assert rstd.data_ptr() in {t.data_ptr() for t in launch.args if isinstance(t, torch.Tensor)}


@pytest.mark.parametrize("shape", [(3, 2, 40), (7,), (1, BWD_LONG)], ids=shape_id)
def test_registered_backward_matches_reference_at_any_rank(shape):
    """torch.ops.gpuperf.rms_norm takes x of any rank (y of its shape, one rstd a row), and
    torch.ops.gpuperf.rms_norm_backward (what autograd and torch.compile call) gives dx and
    dweight of the float64 reference."""
    x, weight = inputs(shape, torch.float32, seed=17)
    y, rstd = torch.ops.gpuperf.rms_norm(x, weight, 1e-6)
    assert y.shape == x.shape and rstd.shape == (x.numel() // shape[-1],)
    assert_close("rms_norm op", rms_norm_ref(x, weight), y)
    grad_y = randn(shape, torch.float32, seed=18)
    dx, dw = torch.ops.gpuperf.rms_norm_backward(grad_y, x, weight, rstd)
    x64, w64 = x.double().requires_grad_(), weight.double().requires_grad_()
    dx_ref, dw_ref = torch.autograd.grad(rms_norm_ref(x64, w64), (x64, w64), grad_y.double())
    assert dx.shape == x.shape and dw.shape == weight.shape
    assert_close("rms_norm_backward dx", dx_ref, dx, k=shape[-1])
    assert_close("rms_norm_backward dweight", dw_ref, dw, k=16 * (x.numel() // shape[-1]))
    assert rms_norm.backward is rms_norm_module.rms_norm_backward


@pytest.mark.parametrize("shape", [(3, 2, 40), (1, BWD_LONG)], ids=shape_id)
def test_the_backward_launches_from_its_plan_on_a_new_workspace(shape):
    """The backward's float32 partial rows are a Workspace: its second call of a layout runs
    from the plan (allocating them again), bit for bit as its function on the same tensors."""
    rms_norm_module.rms_norm_backward.plans.clear()

    def backward_inputs(seed):
        x, weight = inputs(shape, torch.float32, seed=seed)
        _, rstd = torch.ops.gpuperf.rms_norm(x, weight, 1e-6)
        return randn(shape, torch.float32, seed=seed + 1), x, weight, rstd

    rms_norm_module.rms_norm_backward(*backward_inputs(20))
    second = backward_inputs(22)
    planned = rms_norm_module.rms_norm_backward(*second)
    assert len(rms_norm_module.rms_norm_backward.plans) == 1
    rms_norm_module.rms_norm_backward.plans.clear()
    unplanned = rms_norm_module.rms_norm_backward(*second)
    assert all(torch.equal(p, u) for p, u in zip(planned, unplanned, strict=True))


def test_rstd_is_not_differentiable_and_the_backward_not_twice(device):
    x, weight = inputs((4, 30), torch.float32, seed=19)
    x.requires_grad_()
    y, rstd = torch.ops.gpuperf.rms_norm(x, weight, 1e-6)
    assert y.requires_grad and not rstd.requires_grad
    (dx,) = torch.autograd.grad(rms_norm(x, weight).square().sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match="marked with @once_differentiable"):
        dx.sum().backward()


def test_only_weight_requires_grad(device):
    x, weight = inputs((5, 24), torch.float32, seed=20)
    weight.requires_grad_()
    y = rms_norm(x, weight)
    grad_y = randn((5, 24), torch.float32, seed=21)
    (dw,) = torch.autograd.grad(y, weight, grad_y)
    w64 = weight.detach().double().requires_grad_()
    (dw_ref,) = torch.autograd.grad(rms_norm_ref(x.double(), w64), w64, grad_y.double())
    assert_close("rms_norm dweight only", dw_ref, dw, k=16 * 5)


def test_compile_fullgraph_records_the_backward_on_the_cpu(device):
    """torch.compile keeps the registered op in one graph; training through it (the graph run as
    captured) records the backward op."""
    graphs, backend = recording_backend()
    x, weight = inputs((2, 5, 40), torch.float32, seed=22)
    xs, ws = x.clone().requires_grad_(), weight.clone().requires_grad_()
    out = torch.compile(lambda a, b: rms_norm(a * 2.0, b, eps=1e-5), backend=backend, fullgraph=True)(xs, ws)
    assert len(graphs) == 1 and "gpuperf.rms_norm" in called_ops(graphs[0])
    grad_y = randn(tuple(out.shape), torch.float32, seed=23)
    out.backward(grad_y)
    x64, w64 = x.double().requires_grad_(), weight.double().requires_grad_()
    rms_norm_ref(x64 * 2.0, w64, 1e-5).backward(grad_y.double())
    assert_close("compiled rms_norm dx", x64.grad, xs.grad, k=40)
    assert_close("compiled rms_norm dweight", w64.grad, ws.grad, k=16 * 10)


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])
def test_gpu_compile_inductor_trains(mode):
    """Inductor sees the forward's and the backward's kernels; reduce-overhead records a CUDA
    graph of each on a later call and replays it."""
    torch._dynamo.reset()
    x, weight = inputs((4, 256, 1024), torch.bfloat16, seed=24)
    compiled = torch.compile(lambda a, b: rms_norm(a, b) * 2.0, fullgraph=True, mode=mode)
    grad_y = randn(tuple(x.shape), torch.bfloat16, seed=25)
    for _ in range(3):
        xs, ws = x.clone().requires_grad_(), weight.clone().requires_grad_()
        out = compiled(xs, ws)
        out.backward(grad_y)
    x64, w64 = x.double().requires_grad_(), weight.double().requires_grad_()
    ref = rms_norm_ref(x64, w64) * 2.0
    ref.backward(grad_y.double())
    assert_close(f"compiled rms_norm ({mode})", ref, out)
    assert_close(f"compiled rms_norm dx ({mode})", x64.grad, xs.grad, k=4 * 1024)
    assert_close(f"compiled rms_norm dweight ({mode})", w64.grad, ws.grad, k=16 * 1024)


@pytest.mark.gpu
def test_gpu_eager_rms_norm_captures_into_a_cuda_graph():
    x, weight = inputs((64, 4096), torch.bfloat16, seed=26)
    rms_norm(x, weight)  # compile and plan outside the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = rms_norm(x, weight)
    x.copy_(randn(x.shape, torch.bfloat16, seed=27))
    graph.replay()
    assert_close("rms_norm graph", rms_norm_ref(x, weight), out)


@pytest.mark.parametrize(
    "args, kwargs, error, match",
    [
        pytest.param((), {"eps": True}, TypeError, "eps must be a float, got bool", id="eps-bool"),
        pytest.param((), {"eps": "1e-6"}, TypeError, "eps must be a float, got str", id="eps-str"),
        pytest.param((), {"eps": 0.0}, ValueError, "eps must be positive and finite", id="eps-0"),
        pytest.param((1e-6,), {}, TypeError, "takes 2 positional arguments", id="eps-positional"),
    ],
)
def test_bad_inputs_are_refused_when_autograd_records(args, kwargs, error, match):
    """A call that needs a gradient runs the registered op, whose dispatcher would convert
    eps=True to 1.0 and refuse a string with a message of its own: the op's checks run first."""
    x, weight = t(3, 4).requires_grad_(), t(4)
    for _ in range(2):  # also after a recorded call of the same layout
        with pytest.raises(error, match=match):
            rms_norm(x, weight, *args, **kwargs)
        rms_norm(x, weight)
    with pytest.raises(TypeError, match=r"weight must be a torch\.Tensor, got list"):
        rms_norm(x, [1.0] * 4)
    with pytest.raises(TypeError, match="weight has dtype int64"):
        rms_norm(x=x, weight=torch.ones(4, dtype=torch.int64, device=x.device))
