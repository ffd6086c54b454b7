"""Fused attention: forward and gradients against the float32 reference, odd shapes, GQA,
causal masking, strides, and every bad input."""

import importlib
import math

import pytest
import torch

from gpuperf._runtime import is_interpreter
from gpuperf.kernels import attention
from gpuperf.kernels.attention import attention_backward
from gpuperf.reference import attention_grads_ref, attention_naive, attention_ref
from gpuperf.testing import assert_close
from tests._params import called_ops, randn, recording_backend
from tests.conftest import DEVICE

# (batch, heads, kv heads, S_q, S_k, head dim): one of everything, sequences that are
# not multiples of any tile, S_q != S_k, grouped-query and multi-query heads.
SHAPES = [
    pytest.param((1, 1, 1, 1, 1, 16), id="single-query"),
    pytest.param((2, 3, 3, 77, 77, 32), id="S77"),
    pytest.param((1, 4, 2, 50, 33, 16), id="gqa-Sq50-Sk33"),
    pytest.param((1, 2, 1, 64, 64, 32), id="mqa-S64"),
    pytest.param((1, 2, 2, 19, 70, 64), id="Sq19-Sk70-D64"),
]
CAUSAL_SHAPES = [
    pytest.param((1, 1, 1, 1, 1, 16), id="single-query"),
    pytest.param((2, 3, 3, 77, 77, 32), id="S77"),
    pytest.param((1, 4, 2, 50, 50, 16), id="gqa-S50"),
    pytest.param((1, 2, 1, 64, 64, 32), id="mqa-S64"),
]
DTYPES = [
    pytest.param(torch.float16, id="fp16"),
    pytest.param(torch.bfloat16, id="bf16"),
]


def qkv(shape, dtype, seed=0):
    b, h, h_kv, s_q, s_k, d = shape
    return (
        randn((b, h, s_q, d), dtype, seed=seed),
        randn((b, h_kv, s_k, d), dtype, seed=seed + 1),
        randn((b, h_kv, s_k, d), dtype, seed=seed + 2),
    )


def check_forward(q, k, v, causal=False, scale=None):
    out = attention(q, k, v, causal=causal, scale=scale)
    assert out.dtype == q.dtype and out.is_contiguous()
    assert_close("attention", attention_ref(q, k, v, causal, scale), out, k=k.shape[2])


def check_gradients(q, k, v, causal=False, seed=7):
    """Gradients of the fused op against autograd through the float32 reference."""
    q, k, v = (t.detach().requires_grad_() for t in (q, k, v))
    out = attention(q, k, v, causal=causal)
    grad_out = randn(out.shape, out.dtype, seed=seed)
    out.backward(grad_out)
    dq, dk, dv = attention_grads_ref(q, k, v, grad_out, causal)
    group_rows = q.shape[1] // k.shape[1] * q.shape[2]
    assert_close("dq", dq, q.grad, k=k.shape[2])
    assert_close("dk", dk, k.grad, k=group_rows)
    assert_close("dv", dv, v.grad, k=group_rows)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_forward_matches_reference(shape, dtype):
    check_forward(*qkv(shape, dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", CAUSAL_SHAPES)
def test_causal_forward_matches_reference(shape, dtype):
    check_forward(*qkv(shape, dtype), causal=True)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize(
    "shape",
    [
        pytest.param((2, 3, 3, 45, 45, 32), id="S45"),
        pytest.param((1, 4, 2, 40, 40, 16), id="gqa-S40"),
        pytest.param((1, 2, 1, 33, 33, 16), id="mqa-S33"),
    ],
)
def test_gradients_match_reference(shape, causal):
    check_gradients(*qkv(shape, torch.float16), causal=causal)


def test_gradients_with_fewer_queries_than_keys():
    check_gradients(*qkv((1, 2, 1, 21, 50, 32), torch.float16))


def test_custom_scale_and_strided_inputs_are_read_in_place():
    # (B, S, H, D) memory viewed as (B, H, S, D), as a fused QKV projection gives.
    q, k, v = (randn((2, 40, 3, 32), torch.float16, seed=s).transpose(1, 2) for s in (1, 2, 3))
    assert not q.is_contiguous()
    check_forward(q, k, v, scale=0.3)
    check_forward(q, k, v, causal=True, scale=2.0)


def test_matches_the_naive_eager_version_and_sdpa():
    q, k, v = qkv((1, 2, 2, 30, 30, 16), torch.float32)
    naive = attention_naive(q, k, v, causal=True)
    sdpa = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(naive, sdpa, rtol=1e-5, atol=1e-6)


def test_empty_inputs_give_empty_outputs_and_zero_key_gradients():
    q = randn((2, 2, 0, 16), torch.float16).requires_grad_()
    k = randn((2, 2, 5, 16), torch.float16).requires_grad_()
    v = randn((2, 2, 5, 16), torch.float16).requires_grad_()
    out = attention(q, k, v)
    assert out.shape == (2, 2, 0, 16)
    out.sum().backward()
    assert q.grad.shape == q.shape
    assert torch.equal(k.grad, torch.zeros_like(k)) and torch.equal(v.grad, torch.zeros_like(v))
    assert attention(*qkv((0, 2, 2, 3, 3, 16), torch.float16)).shape == (0, 2, 3, 16)


def test_default_scale_is_one_over_sqrt_head_dim():
    q, k, v = qkv((1, 1, 1, 20, 20, 32), torch.float16)
    torch.testing.assert_close(
        attention(q, k, v), attention(q, k, v, scale=1 / math.sqrt(32)), rtol=0, atol=0
    )


def _bad(**changes):
    q, k, v = qkv((2, 4, 2, 8, 8, 16), torch.float16)
    args = {"q": q, "k": k, "v": v}
    kwargs = {}
    for name, value in changes.items():
        (args if name in args else kwargs)[name] = value
    return args, kwargs


def _h(shape, dtype=torch.float16):
    return randn(shape, dtype)


BAD_INPUTS = [
    pytest.param({"q": [[1.0]]}, TypeError, "q must be a torch.Tensor", id="q-not-tensor"),
    pytest.param({"k": _h((2, 2, 8, 16), torch.float32)}, TypeError, "k has dtype float32", id="k-fp32"),
    pytest.param(
        {
            "q": _h((2, 4, 8, 16), torch.float32),
            "k": _h((2, 2, 8, 16), torch.float32),
            "v": _h((2, 2, 8, 16), torch.float32),
        },
        TypeError,
        "supported dtypes are float16, bfloat16",
        id="all-fp32",
    ),
    pytest.param({"v": _h((2, 2, 8, 16), torch.bfloat16)}, TypeError, "same dtype", id="mixed-dtypes"),
    pytest.param({"q": _h((4, 8, 16))}, ValueError, "must be 4-D", id="q-3d"),
    pytest.param({"v": _h((2, 2, 9, 16))}, ValueError, "k and v must have the same shape", id="kv-mismatch"),
    pytest.param(
        {"k": _h((3, 2, 8, 16)), "v": _h((3, 2, 8, 16))}, ValueError, "same batch size", id="batch-mismatch"
    ),
    pytest.param(
        {"k": _h((2, 3, 8, 16)), "v": _h((2, 3, 8, 16))},
        ValueError,
        "multiple of the key/value heads",
        id="heads-not-divisible",
    ),
    pytest.param(
        {"k": _h((2, 2, 8, 32)), "v": _h((2, 2, 8, 32))}, ValueError, "same head dim", id="head-dim-mismatch"
    ),
    pytest.param(
        {"q": _h((2, 4, 8, 48)), "k": _h((2, 2, 8, 48)), "v": _h((2, 2, 8, 48))},
        ValueError,
        "supported head dims are (16, 32, 64, 128)",
        id="head-dim-48",
    ),
    pytest.param(
        {"k": _h((2, 2, 0, 16)), "v": _h((2, 2, 0, 16))}, ValueError, "at least one key", id="no-keys"
    ),
    pytest.param(
        {"k": _h((2, 2, 9, 16)), "v": _h((2, 2, 9, 16)), "causal": True},
        ValueError,
        "S_q 8 and S_k 9",
        id="causal-Sq-ne-Sk",
    ),
    pytest.param({"causal": 1}, TypeError, "causal must be a bool", id="causal-int"),
    pytest.param({"scale": "0.5"}, TypeError, "scale must be a number", id="scale-str"),
    pytest.param({"scale": -1.0}, ValueError, "positive and finite", id="scale-negative"),
    pytest.param({"scale": float("nan")}, ValueError, "positive and finite", id="scale-nan"),
]


@pytest.mark.parametrize(("changes", "error", "message"), BAD_INPUTS)
def test_bad_input_raises_a_clear_error(changes, error, message):
    args, kwargs = _bad(**changes)
    with pytest.raises(error, match=_escape(message)):
        attention(args["q"], args["k"], args["v"], **kwargs)


def _escape(text):
    import re

    return re.escape(text)


@pytest.mark.skipif(DEVICE != "cpu", reason="checks the device error on a machine without a GPU")
def test_tensors_on_another_device_are_rejected():
    q, k, v = qkv((1, 1, 1, 4, 4, 16), torch.float16)
    with pytest.raises(ValueError, match="same device"):
        attention(q, k.to("meta"), v)


# --- the eager path: the ops' kernels through the launch cache, and plans -------------------

# gpuperf.kernels.attention is the function; the module is looked up by name.
attention_module = importlib.import_module("gpuperf.kernels.attention")


def op_forward(q, k, v, causal, scale):
    """What torch.compile runs: the torch.library op (its kernels launched by wrap_triton)."""
    return torch.ops.gpuperf.attention(q, k, v, causal, scale)


@pytest.mark.parametrize(
    ("shape", "causal", "scale", "strided"),
    [
        pytest.param((1, 4, 2, 50, 33, 16), False, None, False, id="gqa-Sq50-Sk33"),
        pytest.param((1, 3, 3, 45, 45, 32), True, None, False, id="causal-S45"),
        pytest.param((1, 3, 3, 40, 40, 32), True, 0.3, True, id="strided-scale"),
    ],
)
def test_eager_forward_and_gradients_are_the_ops_bit_for_bit(shape, causal, scale, strided):
    """Eager calls skip the torch.library dispatch but launch the same kernels with the same
    configs and arguments: the output and the three gradients equal the ops', bit for bit."""
    q, k, v = qkv(shape, torch.float16, seed=21)
    if strided:  # (B, S, H, D) memory viewed as (B, H, S, D)
        q, k, v = (t.transpose(1, 2).contiguous().transpose(1, 2) for t in (q, k, v))
    op_scale = 1 / math.sqrt(shape[-1]) if scale is None else scale
    with torch.no_grad():
        expected, _ = op_forward(q, k, v, causal, op_scale)
        out = attention(q, k, v, causal=causal, scale=scale)
    assert torch.equal(out, expected)
    assert_close("eager attention", attention_ref(q, k, v, causal, scale), out, k=k.shape[2])

    q, k, v = (t.detach().requires_grad_() for t in (q, k, v))
    out = attention(q, k, v, causal=causal, scale=scale)
    assert "gpuperf_attention" in type(out.grad_fn).__name__  # the registered op's autograd
    grad_out = randn(out.shape, out.dtype, seed=22)
    out.backward(grad_out)
    expected, lse = op_forward(q.detach(), k.detach(), v.detach(), causal, op_scale)
    assert torch.equal(out, expected)
    grads = torch.ops.gpuperf.attention_backward(grad_out, q, k, v, expected, lse, causal, op_scale)
    for name, got, want in zip(("dq", "dk", "dv"), (q.grad, k.grad, v.grad), grads, strict=True):
        torch.testing.assert_close(got, want, rtol=0, atol=0, msg=lambda m, n=name: f"{n}: {m}")


def test_repeat_calls_launch_from_the_plan_the_first_left(monkeypatch):
    """The first call of each layout and options checks and plans; the next ones, on new
    tensors, skip the checks (none run) and compute on their own inputs."""
    checks = []
    check_attention = attention_module.check_attention
    monkeypatch.setattr(
        attention_module, "check_attention", lambda *a: checks.append(a[3:5]) or check_attention(*a)
    )
    attention.plans.clear()
    options = [{"causal": False}, {"causal": True}, {"causal": False, "scale": 0.3}]
    for seed in (1, 2, 3):
        q, k, v = qkv((1, 2, 1, 40, 40, 32), torch.float16, seed=seed)
        for kwargs in options:
            out = attention(q, k, v, **kwargs)
            expected = attention_ref(q, k, v, kwargs["causal"], kwargs.get("scale"))
            assert_close(f"planned attention {kwargs} call {seed}", expected, out, k=40)
            n_checks = len(checks)
            assert torch.equal(out, op_forward(q, k, v, kwargs["causal"], kwargs.get("scale", 32**-0.5))[0])
            del checks[n_checks:]  # (the registered op's first call of each key checks too)
    assert checks == [(False, None), (True, None), (False, 0.3)]  # the first call of each only
    assert len(attention.plans) == 3
    q, k, v = (
        t.transpose(1, 2).contiguous().transpose(1, 2) for t in qkv((1, 2, 1, 40, 40, 32), torch.float16)
    )
    attention(q, k, v, causal=False)  # another layout: checked and planned
    assert len(checks) == 4 and len(attention.plans) == 4


def test_a_plan_lets_no_bad_option_through():
    """causal=1 equals True and scale=True equals 1.0 as dictionary keys; a plan made for the
    good values must not let the bad ones past the checks."""
    q, k, v = qkv((1, 2, 2, 8, 8, 16), torch.float16)
    for _ in range(2):
        attention(q, k, v, causal=True, scale=1.0)
    with pytest.raises(TypeError, match="causal must be a bool, got int"):
        attention(q, k, v, causal=1, scale=1.0)
    with pytest.raises(TypeError, match="scale must be a number or None, got bool"):
        attention(q, k, v, causal=True, scale=True)
    with pytest.raises(ValueError, match="S_q 8 and S_k 9"):  # another shape: checked
        attention(q, *qkv((1, 2, 2, 8, 9, 16), torch.float16)[1:], causal=True, scale=1.0)


def test_gradients_flow_after_planned_calls():
    """A planned layout still trains: inputs that need a gradient take the autograd path."""
    q, k, v = qkv((1, 2, 1, 33, 33, 16), torch.float16, seed=5)
    with torch.no_grad():
        attention(q, k, v, causal=True)
        attention(q, k, v, causal=True)
    check_gradients(q, k, v, causal=True)


# --- torch.compile where is_compiling() is True in Dynamo's frames only (torch 2.11) --------


def _attention_grads(fn, q, k, v, grad_out, causal):
    """The output and ``(dq, dk, dv)`` of ``fn`` (attention, compiled or not)."""
    q, k, v = (t.detach().requires_grad_() for t in (q, k, v))
    out = fn(q, k, v, causal)
    return (out.detach(), *torch.autograd.grad(out, (q, k, v), grad_out))


def _scaled_attention(q, k, v, causal):
    return attention(q, k, v, causal=causal) * 1.5


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_compiled_training_traces_where_is_compiling_is_false(
    causal, compiling_in_traced_frames_only, eager_launches_of_a_trace
):
    """AOTAutograd traces the forward and the backward (attention_backward, which the
    registered autograd calls on functional tensors) with ``is_compiling()`` False: both
    take the registered ops, none launches eagerly on a trace's tensors, and the compiled
    step gives the eager one's output and gradients."""
    q, k, v = qkv((1, 4, 2, 24, 24, 16), torch.float16, seed=31)
    grad_out = randn(q.shape, q.dtype, seed=32)
    compiled = torch.compile(_scaled_attention, backend="aot_eager", fullgraph=True)
    got = _attention_grads(compiled, q, k, v, grad_out, causal)
    assert eager_launches_of_a_trace == []
    assert [t.shape for t in got] == [q.shape, q.shape, k.shape, v.shape]
    if not is_interpreter():  # (the interpreter does not run the kernels of an AOTAutograd graph)
        want = _attention_grads(_scaled_attention, q, k, v, grad_out, causal)
        for name, g, w in zip(("out", "dq", "dk", "dv"), got, want, strict=True):
            torch.testing.assert_close(g, w, rtol=1e-2, atol=1e-2, msg=lambda m, n=name: f"{n}: {m}")


def test_compiled_graph_trains_where_is_compiling_is_false(
    compiling_in_traced_frames_only, eager_launches_of_a_trace
):
    """Dynamo runs the registered op's body on fake tensors with ``is_compiling()`` False: the
    graph calls the op, nothing launches on a fake tensor, and the graph's output and the
    backward autograd runs afterwards equal the eager call's, bit for bit."""
    q, k, v = qkv((1, 4, 2, 20, 20, 16), torch.float16, seed=33)
    grad_out = randn(q.shape, q.dtype, seed=34)
    graphs, backend = recording_backend()
    got = _attention_grads(
        torch.compile(_scaled_attention, backend=backend, fullgraph=True), q, k, v, grad_out, True
    )
    assert len(graphs) == 1 and "gpuperf.attention" in called_ops(graphs[0])
    assert eager_launches_of_a_trace == []
    want = _attention_grads(_scaled_attention, q, k, v, grad_out, True)
    for name, g, w in zip(("out", "dq", "dk", "dv"), got, want, strict=True):
        torch.testing.assert_close(g, w, rtol=0, atol=0, msg=lambda m, n=name: f"{n}: {m}")


# --- on a GPU, at the sizes the benchmarks run ----------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize(
    "shape",
    [
        pytest.param((2, 8, 8, 1024, 1024, 128), id="S1024-D128"),
        pytest.param((2, 8, 2, 1000, 1000, 64), id="gqa-S1000-D64"),
        pytest.param((1, 4, 4, 333, 333, 32), id="S333-D32"),
    ],
)
def test_gpu_forward_and_gradients_at_real_sizes(shape, causal, dtype):
    q, k, v = qkv(shape, dtype)
    check_forward(q, k, v, causal=causal)
    check_gradients(q, k, v, causal=causal)


@pytest.mark.gpu
def test_gpu_matches_sdpa_flash_backend():
    q, k, v = qkv((2, 16, 16, 2048, 2048, 128), torch.float16)
    expected = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(attention(q, k, v, causal=True), expected, rtol=2e-3, atol=2e-3)


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_gpu_compile_fullgraph_trains_and_captures_cuda_graphs(causal, mode):
    """Inductor sees the forward's kernel and the backward's three (delta, dK/dV, dQ);
    reduce-overhead records CUDA graphs of both passes and replays them on new inputs."""
    torch._dynamo.reset()
    compiled = torch.compile(lambda q, k, v, c: attention(q, k, v, causal=c) * 1.5, fullgraph=True, mode=mode)
    for seed in (1, 2, 3):  # reduce-overhead records on a later call, then replays
        q, k, v = qkv((2, 8, 2, 256, 256, 64), torch.float16, seed=seed)
        grad_out = randn(q.shape, q.dtype, seed=seed + 10)
        got = _attention_grads(compiled, q, k, v, grad_out, causal)
        want = _attention_grads(lambda *a: attention(*a[:3], causal=a[3]) * 1.5, q, k, v, grad_out, causal)
        for name, g, w in zip(("out", "dq", "dk", "dv"), got, want, strict=True):
            torch.testing.assert_close(
                g, w, rtol=1e-2, atol=1e-2, msg=lambda m, n=name, s=seed: f"{n} seed {s}: {m}"
            )


@pytest.mark.gpu
def test_gpu_eager_plans_capture_into_a_cuda_graph():
    """The public forward's plan (no gradient), the registered op's (output and log-sum-exp)
    and the backward op's (its delta workspace allocated again) launch on the current
    stream: a CUDA graph captures them, and the replay computes on what the inputs hold then."""
    shape = (2, 8, 2, 256, 256, 64)
    q, k, v = qkv(shape, torch.float16, seed=4)
    grad_out = randn(q.shape, q.dtype, seed=5)

    def step():
        out = attention(q, k, v, causal=True)
        o, lse = torch.ops.gpuperf.attention(q, k, v, True, None)
        return out, attention_backward(grad_out, q, k, v, o, lse, True, None)

    with torch.no_grad():
        for _ in range(2):  # compiles and plans outside the capture
            step()
        assert len(attention.plans) >= 1 and len(attention_backward.plans) >= 1
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out, grads = step()
        for t, new in zip((q, k, v), qkv(shape, torch.float16, seed=6), strict=True):
            t.copy_(new)
        graph.replay()
        torch.cuda.synchronize()
    assert_close("graph attention", attention_ref(q, k, v, True), out, k=k.shape[2])
    expected = attention_grads_ref(q, k, v, grad_out, True)
    group_rows = q.shape[1] // k.shape[1] * q.shape[2]
    assert_close("graph dq", expected[0], grads[0], k=k.shape[2])
    assert_close("graph dk", expected[1], grads[1], k=group_rows)
    assert_close("graph dv", expected[2], grads[2], k=group_rows)
