"""The ops as PyTorch sees them: torch.library registration, torch.compile, CUDA graphs,
and the launch cache that keeps their host time low."""

import pytest
import torch

from gpuperf.kernels import attention, matmul, softmax, vector_add
from gpuperf.kernels.launch import Launcher, _int_key
from gpuperf.reference import attention_ref, matmul_ref, softmax_ref, vector_add_ref
from gpuperf.testing import assert_close
from tests._params import called_ops, randn, recording_backend


def model(x, a, b, bias):
    """A small graph that calls every registered op between PyTorch ops."""
    h = matmul(a, b, bias=bias, activation="gelu")
    s = softmax(x * 2.0)
    return vector_add(s, s).sum() + h.float().sum(), h


def model_ref(x, a, b, bias):
    s = softmax_ref(x * 2.0)
    h = matmul_ref(a, b, bias, "gelu")
    return vector_add_ref(s, s).sum() + h.double().sum(), h


def inputs():
    return (
        randn((6, 50), torch.float32, seed=1),
        randn((20, 32), torch.float16, seed=2),
        randn((32, 24), torch.float16, seed=3),
        randn((24,), torch.float16, seed=4),
    )


def test_ops_are_registered_with_torch_library():
    x = randn((5, 7), torch.float32)
    a, b = randn((4, 8), torch.float16), randn((8, 3), torch.float16)
    assert_close("torch.ops.gpuperf.softmax", softmax_ref(x), torch.ops.gpuperf.softmax(x))
    assert_close(
        "torch.ops.gpuperf.vector_add", vector_add_ref(x, x), torch.ops.gpuperf.vector_add(x, x, 1024, 4)
    )
    out = torch.ops.gpuperf.matmul(a, b, None, "relu", 16, 16, 16, 1, 4, 1)
    assert_close("torch.ops.gpuperf.matmul", matmul_ref(a, b, None, "relu"), out, k=8)


def test_compile_fullgraph_traces_every_op_without_a_graph_break():
    """fullgraph=True raises on any graph break; the eager backend runs the captured graph."""
    graphs, backend = recording_backend()

    compiled = torch.compile(model, backend=backend, fullgraph=True)
    args = inputs()
    total, h = compiled(*args)
    ref_total, ref_h = model_ref(*args)
    assert len(graphs) == 1
    called = called_ops(graphs[0])
    assert {"gpuperf.matmul", "gpuperf.softmax", "gpuperf.vector_add"} <= called
    assert_close("compiled matmul", ref_h, h, k=32)
    torch.testing.assert_close(total.double(), ref_total, rtol=1e-3, atol=1e-2)


def test_launch_key_follows_tritons_specialization():
    """Arguments that Triton compiles differently for must never share a cached binary."""
    from gpuperf.kernels.vector_add import add_kernel

    launcher = Launcher(add_kernel)
    x = torch.empty(64, dtype=torch.float32)
    key = lambda x, y, n, block: launcher.key((x, y, n), (block,), 4, 3, 0)
    assert key(x, x, 16, 8) == key(x, x, 32, 8)  # both multiples of 16
    assert key(x, x, 16, 8) != key(x, x, 17, 8)  # divisibility by 16
    assert key(x, x, 1, 8) != key(x, x, 17, 8)  # the value 1 is a constant
    assert key(x, x, 17, 8) != key(x, x, 2**31 + 1, 8)  # i32 vs i64
    assert key(x, x, 16, 8) != key(x, x, 16, 16)  # constexpr value
    assert key(x, x[1:], 16, 8) != key(x, x, 16, 8)  # 16-byte alignment of a pointer
    assert key(x, x.half(), 16, 8) != key(x, x, 16, 8)  # pointer dtype
    assert launcher.key((x, x, 16), (8,), 8, 3, 0) != launcher.key((x, x, 16), (8,), 4, 3, 0)  # num_warps
    assert launcher.key((x, x, 16), (8,), 4, 3, 1) != launcher.key((x, x, 16), (8,), 4, 3, 0)  # device
    assert [_int_key(v) for v in (1, 16, 17, 2**40)] == [1, 2, 0, 6]


@pytest.mark.gpu
def test_cached_launches_use_the_binary_triton_would_pick():
    from gpuperf.kernels.launch import launcher
    from gpuperf.kernels.vector_add import add_kernel

    _launch = launcher(add_kernel)
    base = torch.randn(4096 + 8, device="cuda")
    for n, offset in [(4096, 0), (4096, 1), (4095, 0), (1, 0), (4096, 4)]:
        x = base[offset : offset + n]
        out = vector_add(x, x)  # fills the cache
        out = vector_add(x, x)  # launches from it
        assert_close("vector_add", vector_add_ref(x, x), out)
        key = _launch.key((x, x, out, n), (1024,), 8, 3, torch.cuda.current_device())
        expected = add_kernel[(1,)](x, x, out, n, 1024, num_warps=8, num_stages=3)
        assert _launch._compiled[key][1] == expected.function, (n, offset)  # the same loaded binary


@pytest.mark.gpu
def test_compile_inductor_and_cuda_graphs():
    args = tuple(t.cuda() for t in inputs())
    ref_total, ref_h = model_ref(*args)
    for mode in ("default", "reduce-overhead"):
        torch._dynamo.reset()
        compiled = torch.compile(model, fullgraph=True, mode=mode)
        for _ in range(3):  # reduce-overhead records a CUDA graph on a later call, then replays it
            total, h = compiled(*args)
        assert_close(f"inductor {mode} matmul", ref_h, h, k=32)
        torch.testing.assert_close(total.double(), ref_total, rtol=1e-3, atol=1e-2)


@pytest.mark.gpu
def test_eager_wrappers_capture_into_a_cuda_graph():
    x, a, b, bias = (t.cuda() for t in inputs())
    model(x, a, b, bias)  # compile and cache outside the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        total, h = model(x, a, b, bias)
    x.copy_(randn(tuple(x.shape), torch.float32, seed=9))
    graph.replay()
    ref_total, ref_h = model_ref(x, a, b, bias)
    assert_close("graph matmul", ref_h, h, k=32)
    torch.testing.assert_close(total.double(), ref_total, rtol=1e-3, atol=1e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("op", ["vector_add", "softmax", "matmul", "matmul_bias_gelu"])
def test_planned_launches_compute_on_the_new_inputs(op):
    """The second call with inputs like the first launches from a plan; it must read the new inputs."""
    base = torch.randn(3 * 4096 + 8, device="cuda")
    half = torch.randn(300 * 130 + 8, device="cuda", dtype=torch.float16)
    cases = {
        "vector_add": (
            vector_add.plans,
            lambda o: (base[o : o + 4096], base[4096 + o : 8192 + o]),
            vector_add,
            vector_add_ref,
            None,
        ),
        "softmax": (
            softmax.plans,
            lambda o: (base[o : o + 4096].view(32, 128),),
            softmax,
            softmax_ref,
            None,
        ),
        "matmul": (
            matmul.plans,
            lambda o: (half[o : o + 300 * 70].view(300, 70), half[o : o + 70 * 130].view(70, 130)),
            matmul,
            matmul_ref,
            70,
        ),
        "matmul_bias_gelu": (
            matmul.plans,
            lambda o: (
                half[o : o + 300 * 70].view(300, 70),
                half[o : o + 70 * 130].view(70, 130),
                half[o : o + 130],
            ),
            lambda a, b, bias: matmul(a, b, bias=bias, activation="gelu"),
            lambda a, b, bias: matmul_ref(a, b, bias, "gelu"),
            70,
        ),
    }
    plans, make, fn, ref, k = cases[op]
    plans.clear()
    for offset in (0, 8, 1, 9, 0):  # aligned, aligned again (planned), misaligned twice, aligned
        inputs = make(offset)
        assert_close(f"{op} offset {offset}", ref(*inputs), fn(*inputs), k=k)
    assert len(plans) == 2  # one plan for 16-byte aligned inputs, one for misaligned


def test_plans_forget_and_stay_bounded():
    from gpuperf.kernels.launch import Plans

    plans = Plans(maxsize=2)
    plans.put("a", 1)
    plans.put("b", 2)
    plans.put("none", None)  # nothing to keep
    assert len(plans) == 2 and plans.get("a") == 1
    plans.put("c", 3)  # full: starts again
    assert len(plans) == 1 and plans.get("a") is None and plans.get("c") == 3
    from gpuperf.kernels.launch import uncached

    with uncached():
        assert plans.get("c") is None  # the host benchmark's baseline path takes no plan
    plans.clear()
    assert len(plans) == 0


def attention_model(x, w):
    """A block that projects, attends with grouped heads and reduces: trained through the op."""
    qkv = (x @ w).view(1, 30, 6, 16).transpose(1, 2)  # (B, heads, S, D): 4 query heads, 1 K and 1 V head
    q, k, v = qkv[:, :4], qkv[:, 4:5], qkv[:, 5:6]
    return attention(q, k, v, causal=True).float().square().sum()


def attention_model_ref(x, w):
    qkv = (x.float() @ w.float()).view(1, 30, 6, 16).transpose(1, 2)
    q, k, v = qkv[:, :4], qkv[:, 4:5], qkv[:, 5:6]
    return attention_ref(q, k, v, causal=True).square().sum()


def attention_inputs():
    x = randn((30, 32), torch.float16, seed=5).requires_grad_()
    w = (randn((32, 96), torch.float16, seed=6) * 0.2).requires_grad_()
    return x, w


def _grads(fn, *args):
    args = [a.detach().requires_grad_() for a in args]
    loss = fn(*args)
    loss.backward()
    return loss, [a.grad for a in args]


def test_compile_fullgraph_trains_through_attention():
    """The op and its backward stay in one graph; gradients match the float32 reference's."""
    graphs, backend = recording_backend()

    compiled = torch.compile(attention_model, backend=backend, fullgraph=True)
    loss, grads = _grads(compiled, *attention_inputs())
    ref_loss, ref_grads = _grads(attention_model_ref, *attention_inputs())
    assert len(graphs) == 1
    called = {str(n.target) for n in graphs[0].graph.nodes if n.op == "call_function"}
    assert "gpuperf.attention" in {c.removesuffix(".default") for c in called}, called
    # The op, not an autograd.Function (which torch.compile would trace into).
    assert not any("autograd_function" in c for c in called), called
    torch.testing.assert_close(loss.double(), ref_loss.double(), rtol=2e-2, atol=1e-2)
    for name, g, ref in zip("xw", grads, ref_grads, strict=True):
        torch.testing.assert_close(
            g.float(), ref.float(), rtol=2e-2, atol=2e-2, msg=lambda m, n=name: f"d{n}: {m}"
        )


def test_attention_op_is_registered_with_its_backward():
    q, k, v = (randn((1, 2, 9, 16), torch.float16, seed=s).requires_grad_() for s in (1, 2, 3))
    out, lse = torch.ops.gpuperf.attention(q, k, v, False, 0.25)
    assert lse.dtype == torch.float32 and lse.shape == (1, 2, 9)
    assert_close("torch.ops.gpuperf.attention", attention_ref(q, k, v, False, 0.25), out, k=9)
    grad_out = randn(out.shape, torch.float16, seed=4)
    dq, dk, dv = torch.ops.gpuperf.attention_backward(grad_out, q, k, v, out, lse, False, 0.25)
    out.backward(grad_out)
    for name, expected, got in (("dq", q.grad, dq), ("dk", k.grad, dk), ("dv", v.grad, dv)):
        torch.testing.assert_close(got, expected, rtol=0, atol=0, msg=lambda m, n=name: f"{n}: {m}")


def test_compile_without_gradients_traces_the_op_not_the_plan():
    """Inference under torch.compile: the graph calls the op, even for inputs whose layout
    an eager call has planned; the compiled and the eager outputs are equal."""
    q, k, v = (randn((1, 2, 24, 16), torch.float16, seed=s) for s in (7, 8, 9))
    with torch.no_grad():
        eager = attention(q, k, v, causal=True)
        attention(q, k, v, causal=True)  # planned
        graphs, backend = recording_backend()
        compiled = torch.compile(
            lambda q, k, v: attention(q, k, v, causal=True) * 2, backend=backend, fullgraph=True
        )
        out = compiled(q, k, v)
    assert len(graphs) == 1 and "gpuperf.attention" in called_ops(graphs[0])
    assert torch.equal(out, eager * 2)


@pytest.mark.gpu
def test_compile_inductor_trains_through_attention():
    """Inductor types Python floats as float64 in user kernels: the kernels cast their scales."""
    args = tuple(t.detach().cuda() for t in attention_inputs())
    ref_loss, ref_grads = _grads(attention_model_ref, *args)
    torch._dynamo.reset()
    loss, grads = _grads(torch.compile(attention_model, fullgraph=True), *args)
    torch.testing.assert_close(loss.double(), ref_loss.double(), rtol=2e-2, atol=1e-2)
    for g, ref in zip(grads, ref_grads, strict=True):
        torch.testing.assert_close(g.float(), ref.float(), rtol=2e-2, atol=2e-2)
