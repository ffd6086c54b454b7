"""The one launch path (gpuperf.kernels.launch): an op's function becomes the public op, its
torch.library op and its plans; what a plan is made for, and when a call runs the function."""

import dataclasses
import inspect
import re
import typing
from types import SimpleNamespace

import pytest
import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

import gpuperf.kernels.launch as launch_module
from gpuperf import reference
from gpuperf._runtime import is_interpreter
from gpuperf.kernels import (
    MatmulConfig,
    PersistentConfig,
    add_relu_mul,
    gelu,
    matmul,
    matmul_fp8,
    matmul_persistent,
    matmul_splitk,
    row_mean,
    scale_shift,
    softmax,
    strided_copy,
    to_fp8,
    vector_add,
)
from gpuperf.kernels.launch import (
    Described,
    Launch,
    Launches,
    Workspace,
    call_source,
    launcher,
    layout_key,
    named_call_source,
    op,
    uncached,
)
from gpuperf.kernels.tma import address, tracing
from gpuperf.testing import assert_close
from tests._params import assert_close_fp8, called_ops, randn, recording_backend


def _floats(seed: int, *shapes, dtype=torch.float32) -> tuple:
    return tuple(randn(shape, dtype, seed + i) for i, shape in enumerate(shapes))


#: Each op on the one launch path: ``(op, its tensor inputs by seed, its other positional
#: arguments, its reference)``.
OPS = {
    "vector_add": (vector_add, lambda s: _floats(s, (4099,), (4099,)), (), reference.vector_add_ref),
    "gelu": (gelu, lambda s: _floats(s, (33, 70), dtype=torch.float16), (), reference.gelu_ref),
    "add_relu_mul": (
        add_relu_mul,
        lambda s: _floats(s, (2000,), (2000,), (2000,)),
        (),
        reference.add_relu_mul_ref,
    ),
    "row_mean": (row_mean, lambda s: _floats(s, (9, 300)), (), reference.row_mean_ref),
    "strided_copy": (strided_copy, lambda s: _floats(s, (5000,)), (3,), reference.strided_copy_ref),
    "softmax": (softmax, lambda s: _floats(s, (9, 300)), (), reference.softmax_ref),
    "scale_shift": (
        scale_shift,
        lambda s: _floats(s, (9, 300), (300,), (300,), dtype=torch.float16),
        (),
        reference.scale_shift_ref,
    ),
}


@pytest.mark.parametrize("name", OPS)
def test_each_op_is_a_torch_library_op_that_computes_what_the_op_does(name):
    fn, make, options, _ = OPS[name]
    registered = getattr(torch.ops.gpuperf, name)
    assert fn.registered is registered and fn.__name__ == name
    inputs = make(1)
    assert torch.equal(registered(*inputs, *options), fn(*inputs, *options))


def test_the_public_signature_is_the_functions_returning_its_outputs():
    signature = inspect.signature(vector_add)
    assert signature.return_annotation is torch.Tensor
    assert [p.kind for p in signature.parameters.values()] == [
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.KEYWORD_ONLY,
        inspect.Parameter.KEYWORD_ONLY,
    ]
    assert "block_size" in vector_add.__doc__
    assert typing.get_type_hints(vector_add)["return"] is torch.Tensor  # what the API page shows
    # The registered op takes the keyword-only options by position, as torch.library does.
    schema = str(torch.ops.gpuperf.vector_add.default._schema)
    assert re.fullmatch(
        r"gpuperf::vector_add\(Tensor x, Tensor y, \w+ block_size=1024, \w+ num_warps=8\) -> Tensor", schema
    )


def _all_ops(x, v, z, s, shift):
    """Every op on the one launch path, between PyTorch ops, in one function."""
    h = gelu(vector_add(v, v) * 0.5)
    g = add_relu_mul(v, h, z) + strided_copy(v, 1)
    rows = softmax(x * 2.0) + row_mean(x).unsqueeze(-1)
    return g.sum() + rows.sum() + scale_shift(s, shift, shift).float().sum()


def test_compile_fullgraph_keeps_every_op_in_one_graph():
    graphs, backend = recording_backend()
    args = (
        randn((5, 40), torch.float32, 1),
        randn((300,), torch.float32, 2),
        randn((300,), torch.float32, 3),
        randn((4, 40), torch.float16, 4),
        randn((40,), torch.float16, 5),
    )
    out = torch.compile(_all_ops, backend=backend, fullgraph=True)(*args)
    assert len(graphs) == 1
    assert {f"gpuperf.{name}" for name in OPS} <= called_ops(graphs[0])
    torch.testing.assert_close(out, _all_ops(*args), rtol=1e-5, atol=1e-4)


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])
@pytest.mark.parametrize("name", OPS)
def test_compile_inductor_and_cuda_graphs(name, mode):
    """Inductor sees each op's kernels; reduce-overhead records a CUDA graph of them and replays it."""
    fn, make, options, ref = OPS[name]
    torch._dynamo.reset()
    compiled = torch.compile(lambda *t: fn(*t, *options), fullgraph=True, mode=mode)
    for seed in (1, 2, 3):  # reduce-overhead records on a later call, then replays
        inputs = make(seed)
        assert_close(f"compiled {name} ({mode}), seed {seed}", ref(*inputs, *options), compiled(*inputs))


@pytest.mark.gpu
@pytest.mark.parametrize("name", OPS)
def test_eager_calls_capture_into_a_cuda_graph(name):
    """The eager call launches from its plan on the current stream: a CUDA graph captures it,
    and the replay computes on what the inputs hold then."""
    fn, make, options, ref = OPS[name]
    inputs = make(1)
    fn(*inputs, *options)  # compiles and plans outside the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn(*inputs, *options)
    for t, new in zip(inputs, make(5), strict=True):
        t.copy_(new)
    graph.replay()
    torch.cuda.synchronize()
    assert_close(f"graph {name}", ref(*inputs, *options), out)


# The decorator, on an op of its own --------------------------------------------------------


@triton.jit
def _scale_kernel(x_ptr, out_ptr, n, FACTOR: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * FACTOR, mask=mask)


CALLS = []


@op("gpuperf_test::scaled")
def scaled(x: torch.Tensor, *, factor: int = 2, workspace: bool = False) -> tuple[torch.Tensor, Launches]:
    """``x * factor``; with ``workspace``, through a buffer that is not the output."""
    CALLS.append((tuple(x.shape), factor))
    if type(factor) is not int:
        raise TypeError(f"factor must be an int, got {type(factor).__name__}")
    x = x.contiguous()
    out = torch.empty_like(x)
    n = out.numel()
    grid = (triton.cdiv(n, 64),)
    if workspace:  # x * factor into a buffer of its own, then copied into the output
        buffer = torch.empty_like(x)
        copy = Launch(_scale_kernel, grid, (buffer, out, n), (1, 64), 1)
        return out, (Launch(_scale_kernel, grid, (x, buffer, n), (factor, 64), 1), copy)
    return out, (Launch(_scale_kernel, grid, (x, out, n), (factor, 64), 1),)


def _fresh():
    CALLS.clear()
    scaled.plans.clear()


def test_a_second_call_of_the_same_layout_launches_from_the_plan():
    _fresh()
    for seed in (1, 2, 3):
        x = randn((40,), torch.float32, seed)
        assert torch.equal(scaled(x), x * 2), seed
    assert len(CALLS) == 1 and len(scaled.plans) == 1
    (key,) = scaled.plans._plans  # the eager call's unrolled key is layout_key's
    assert key == layout_key((x,), 1, {})[0]


def test_another_layout_dtype_alignment_or_option_runs_the_function():
    _fresh()
    base = randn((80,), torch.float32, 1)
    variants = [
        ((base[:40],), {}),
        ((base[40:],), {}),  # 160 bytes on: aligned as the first, the same plan
        ((base[1:41],), {}),  # 4 bytes on: another alignment, another binary
        ((base[:40].view(8, 5),), {}),  # another shape
        ((base[:40].half(),), {}),  # another dtype
        ((base[:40],), {"factor": 3}),  # another option
    ]
    for args, kwargs in variants:
        for _ in range(2):
            assert torch.equal(scaled(*args, **kwargs), args[0] * kwargs.get("factor", 2))
    assert len(CALLS) == 5 and len(scaled.plans) == 5
    # factor=True equals 1 as a dictionary key: the plan of factor=1 must not let it in.
    scaled(base, factor=1)
    with pytest.raises(TypeError, match="factor must be an int, got bool"):
        scaled(base, factor=True)


def test_no_plan_for_a_copy_a_workspace_or_a_subclass():
    _fresh()
    strided = randn((40, 2), torch.float32, 1)[:, 0]  # copied by .contiguous()
    flat = randn((40,), torch.float32, 2)

    class Tagged(torch.Tensor):
        pass

    for _ in range(2):
        assert torch.equal(scaled(strided), strided * 2)
        assert torch.equal(scaled(flat, workspace=True), flat * 2)
        assert torch.equal(scaled(flat.as_subclass(Tagged)), flat * 2)
    assert len(CALLS) == 6 and len(scaled.plans) == 0


def test_the_registered_op_shares_the_plans_and_traces_the_function():
    _fresh()
    x = randn((40,), torch.float32, 1)
    scaled(x)
    assert torch.equal(torch.ops.gpuperf_test.scaled(x), x * 2)  # every default passed: the same plan
    assert torch.equal(torch.ops.gpuperf_test.scaled(x, 3), x * 3)  # a new option: the function
    assert len(CALLS) == 2
    graphs, backend = recording_backend()
    compiled = torch.compile(lambda t: scaled(t, factor=3) + 1, backend=backend, fullgraph=True)
    assert torch.equal(compiled(x), x * 3 + 1)
    assert "gpuperf_test.scaled" in called_ops(graphs[0])


def test_an_input_passed_twice_has_a_plan_of_its_own():
    """vector_add(x, x) reads one address twice: its plan must not serve vector_add(x, y)."""
    vector_add.plans.clear()
    x, y = randn((300,), torch.float32, 1), randn((300,), torch.float32, 2)
    for _ in range(2):
        assert torch.equal(vector_add(x, x), x + x)
        assert torch.equal(vector_add(x, y), x + y)
        assert torch.equal(vector_add(y, y), y + y)
    assert len(vector_add.plans) == 2


def test_uncached_takes_no_plan_and_keeps_none():
    _fresh()
    x = randn((40,), torch.float32, 1)
    with uncached():
        for _ in range(2):
            assert torch.equal(scaled(x), x * 2)
    assert len(CALLS) == 2 and len(scaled.plans) == 0


def test_the_decorator_refuses_what_it_cannot_build():
    with pytest.raises(ValueError, match="tensors must be a positive int, got 0"):
        op("gpuperf_test::none", tensors=0)
    with pytest.raises(TypeError, match=r"must be annotated -> tuple\[<its outputs' type>, Launches\]"):

        @op("gpuperf_test::unannotated")
        def unannotated(x: torch.Tensor) -> torch.Tensor:
            return x, ()


def test_the_eager_call_is_layout_key_unrolled():
    source = call_source(2)
    assert "t0, t1, = args[:2]" in source and "a0 == a1" in source
    compile(source, "<test>", "exec")
    assert launcher(_scale_kernel) is launcher(_scale_kernel)  # one launcher a kernel, for every op


# An op with a backward, on an op of its own -------------------------------------------------

BACKWARD_CALLS = []


@op("gpuperf_test::doubled_backward", tensors=2)
def doubled_backward(grad: torch.Tensor, kept: torch.Tensor, factor: int) -> tuple[torch.Tensor, Launches]:
    """``grad * factor``; ``kept`` (the forward's copy of ``x``) is recorded, to show it was saved."""
    BACKWARD_CALLS.append((kept.clone(), factor))
    grad = grad.contiguous()
    dx = torch.empty_like(grad)
    n = dx.numel()
    return dx, (Launch(_scale_kernel, (triton.cdiv(n, 64),), (grad, dx, n), (factor, 64), 1),)


@op(
    "gpuperf_test::doubled",
    tensors=2,
    outputs=1,
    backward=doubled_backward,
    saves=lambda x, mask, factor, out, kept: (kept, factor),
)
def doubled(
    x: torch.Tensor, mask: torch.Tensor, *, factor: int = 2, saving: bool = True
) -> tuple[tuple[torch.Tensor, torch.Tensor], Launches]:
    """``x * factor``, differentiable with respect to ``x`` only (``mask`` is read by no
    launch); with ``saving``, also a copy of ``x`` for the backward."""
    CALLS.append(saving)
    if type(factor) is not int:
        raise TypeError(f"factor must be an int, got {type(factor).__name__}")
    out = torch.empty_like(x)
    n = out.numel()
    grid = (triton.cdiv(n, 64),)
    launches = [Launch(_scale_kernel, grid, (x, out, n), (factor, 64), 1)]
    kept = None
    if saving:
        kept = torch.empty_like(x)
        launches.append(Launch(_scale_kernel, grid, (x, kept, n), (1, 64), 1))
    return (out, kept), tuple(launches)


def _fresh_doubled():
    CALLS.clear()
    BACKWARD_CALLS.clear()
    for plans in (doubled.plans, doubled.registered_plans, doubled_backward.plans):
        plans.clear()


def test_an_op_with_a_backward_returns_its_public_outputs_and_plans_without_saving():
    _fresh_doubled()
    mask = randn((40,), torch.float32, 9)
    for seed in (1, 2, 3):
        x = randn((40,), torch.float32, seed)
        out = doubled(x, mask)
        assert isinstance(out, torch.Tensor) and torch.equal(out, x * 2), seed
    assert CALLS == [False] and len(doubled.plans) == 1  # the forward without its copy, once
    assert inspect.signature(doubled).return_annotation is torch.Tensor
    assert "saving" not in inspect.signature(doubled).parameters
    schema = str(torch.ops.gpuperf_test.doubled.default._schema)
    assert re.fullmatch(
        r"gpuperf_test::doubled\(Tensor x, Tensor mask, \w+ factor=2\) -> \(Tensor, Tensor\)", schema
    )
    # The registered op saves, with plans of its own, and returns every output.
    for _ in range(2):
        out, kept = torch.ops.gpuperf_test.doubled(x, mask)
        assert torch.equal(out, x * 2) and torch.equal(kept, x)
    assert CALLS == [False, True] and len(doubled.registered_plans) == 1


def test_a_call_autograd_records_records_the_registered_backward_and_trains():
    _fresh_doubled()
    mask = randn((40,), torch.float32, 9)
    doubled(randn((40,), torch.float32, 1), mask)  # a plan for the layout, not taken below
    for seed in (1, 2):
        x = randn((40,), torch.float32, seed).requires_grad_()
        out = doubled(x, mask, factor=3)
        assert isinstance(out, torch.Tensor) and torch.equal(out.detach(), x.detach() * 3)
        assert "gpuperf_test_doubled" in type(out.grad_fn).__name__
        grad = randn((40,), torch.float32, seed + 10)
        (dx,) = torch.autograd.grad(out, x, grad)
        assert torch.equal(dx, grad * 3)
        if seed == 1:
            ((kept, factor),) = BACKWARD_CALLS
            assert torch.equal(kept, x.detach()) and factor == 3  # what saves picked, options too
    # The backward, an op of its own, ran its function once and then its plan.
    assert len(BACKWARD_CALLS) == 1 and len(doubled_backward.plans) == 1
    # For the two recorded calls: the checks of the first (the forward, launching nothing),
    # then the forward, saving, once (the registered op's plan serves the second).
    assert CALLS == [False, False, True] and len(doubled.plans) == 1 and len(doubled.registered_plans) == 1
    # The tensors passed by keyword: no key, and still recorded.
    out = doubled(x=x, mask=mask)
    assert out.grad_fn is not None
    # The saved output is not differentiable; under no_grad nothing is recorded.
    _out, kept = torch.ops.gpuperf_test.doubled(x, mask)
    assert _out.requires_grad and not kept.requires_grad
    with torch.no_grad():
        assert doubled(x, mask).grad_fn is None


def test_an_input_that_gets_no_gradient_must_not_require_one():
    x, mask = randn((40,), torch.float32, 1), randn((40,), torch.float32, 2).requires_grad_()
    message = r"doubled differentiates with respect to x only: mask must not require grad \(detach it"
    with pytest.raises(ValueError, match=message):
        doubled(x, mask)
    with pytest.raises(ValueError, match=message):
        doubled(x.requires_grad_(), mask)
    with torch.no_grad():
        assert torch.equal(doubled(x, mask), x * 2)


def test_the_backward_is_once_differentiable():
    x = randn((40,), torch.float32, 1).requires_grad_()
    out = doubled(x, randn((40,), torch.float32, 2))
    (dx,) = torch.autograd.grad(out.square().sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match="marked with @once_differentiable"):
        dx.sum().backward()


def test_compile_fullgraph_records_the_op_and_trains():
    _fresh_doubled()
    graphs, backend = recording_backend()
    x, mask = randn((40,), torch.float32, 1).requires_grad_(), randn((40,), torch.float32, 2)
    compiled = torch.compile(lambda t, m: doubled(t, m, factor=3) + 1, backend=backend, fullgraph=True)
    out = compiled(x, mask)
    assert "gpuperf_test.doubled" in called_ops(graphs[0])
    out.backward(torch.ones_like(out))
    assert torch.equal(out.detach(), x.detach() * 3 + 1) and torch.equal(x.grad, torch.full_like(x, 3.0))


def test_the_decorator_refuses_a_backward_it_cannot_register():
    def forward(x: torch.Tensor) -> tuple[tuple[torch.Tensor, torch.Tensor], Launches]:
        return (x, x), ()

    def grads(grad: torch.Tensor) -> torch.Tensor:
        return grad

    with pytest.raises(TypeError, match="backward and saves go together"):
        op("gpuperf_test::no_saves", backward=grads)
    with pytest.raises(TypeError, match="backward and saves go together"):
        op("gpuperf_test::no_backward", outputs=1)
    with pytest.raises(ValueError, match="outputs must be a positive int, got 0"):
        op("gpuperf_test::zero", backward=grads, saves=lambda *a: (), outputs=0)
    with pytest.raises(ValueError, match="outputs must be at most the 2 that forward returns, got 3"):
        op("gpuperf_test::three", backward=grads, saves=lambda *a: (), outputs=3)(forward)
    with pytest.raises(TypeError, match=r"saves of gpuperf_test::arity must take .* 3 arguments"):
        op("gpuperf_test::arity", backward=grads, saves=lambda x, y: (x,), outputs=1)(forward)

    def grads_unannotated(grad):
        return grad

    with pytest.raises(TypeError, match="grads_unannotated must be annotated with the gradients"):
        op("gpuperf_test::bare", backward=grads_unannotated, saves=lambda *a: ())(forward)

    def saving_positional(
        x: torch.Tensor, saving: bool = True
    ) -> tuple[tuple[torch.Tensor, torch.Tensor], Launches]:
        return (x, x), ()

    with pytest.raises(TypeError, match="saving must be keyword-only, default True"):
        op("gpuperf_test::positional", backward=grads, saves=lambda *a: ())(saving_positional)


# A plan on a GPU, its C launcher replaced by a recorder ------------------------------------


def _bound(calls: list, tail: tuple) -> SimpleNamespace:
    """A stand-in for a Bound launch: its ``launch`` records the arguments it is given."""
    return SimpleNamespace(
        launch=lambda *args: calls.append(args),
        function="binary",
        head=("head",),
        tail=tail,
        grid=(3, 1, 1),
        device=0,
    )


@pytest.fixture
def bound_plans(monkeypatch):
    """Plans made as on a GPU (bound launches), on the stream 7."""
    monkeypatch.setattr(launch_module, "is_interpreter", lambda: False)
    monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream", lambda device: 7, raising=False)


def test_a_bound_plan_launches_on_the_new_addresses_in_the_kernels_order(bound_plans):
    calls = []
    x, y = randn((8, 5), torch.float32, 1), randn((8, 5), torch.float32, 2)
    out = torch.empty_like(x)
    plan = launch_module.make_plan(
        (x, y),
        (),
        out,
        (Launch(_scale_kernel, (3,), (y, x, out, 40), (2, 64)),),
        [_bound(calls, (40, 2, 64))],
    )
    a, b = randn((8, 5), torch.float32, 3), randn((8, 5), torch.float32, 4)
    new = plan((a, b), (a.data_ptr(), b.data_ptr()))
    assert (
        new.shape == out.shape
        and new.stride() == out.stride()
        and new.data_ptr() not in (a.data_ptr(), b.data_ptr())
    )
    assert calls == [(3, 1, 1, 7, "binary", "head", b.data_ptr(), a.data_ptr(), new.data_ptr(), 40, 2, 64)]
    # One input twice, two launches and two outputs: each address where the call had it.
    calls.clear()
    out2 = torch.empty(3, dtype=torch.float16)
    launches = (
        Launch(_scale_kernel, (3,), (x, x, out, 40), (2, 64)),
        Launch(_scale_kernel, (3,), (out2, out, 3), (1, 64)),
    )
    plan = launch_module.make_plan(
        (x, x), (), (out, out2), launches, [_bound(calls, (40,)), _bound(calls, (3,))]
    )
    first, second = plan((a, a), (a.data_ptr(), a.data_ptr()))
    assert second.dtype == torch.float16 and second.shape == (3,)
    assert [c[6:9] for c in calls] == [
        (a.data_ptr(), a.data_ptr(), first.data_ptr()),
        (second.data_ptr(), first.data_ptr(), 3),
    ]


@pytest.mark.parametrize(
    "case", ["scalar-first", "output-is-input", "view-of-a-buffer", "tensor-option", "copy"]
)
def test_no_plan_where_a_replay_would_not_be_the_calls_work(bound_plans, case):
    x = randn((40,), torch.float32, 1)
    out = torch.empty_like(x)
    args, result, options = (x, out, 40), out, ()
    if case == "scalar-first":
        args = (40, x, out)
    elif case == "output-is-input":
        args, result = (x, x, 40), x
    elif case == "view-of-a-buffer":
        result = torch.empty(80)[:40]
        args = (x, result, 40)
    elif case == "tensor-option":
        options = (x,)
    elif case == "copy":
        args = (x.clone(), out, 40)
    launches = (Launch(_scale_kernel, (1,), args, (2, 64)),)
    assert launch_module.make_plan((x,), options, result, launches, [_bound([], (40,))]) is None


# Every layout an op takes, on its first call and from its plan ---------------------------

#: Each op's tensor inputs as ``(shape, ...)`` at odd sizes, its other positional arguments and
#: its reference.
LAYOUT_CASES = {
    "vector_add": (vector_add, ((1027,), (1027,)), (), reference.vector_add_ref),
    "gelu": (gelu, ((37, 71),), (), reference.gelu_ref),
    "add_relu_mul": (add_relu_mul, ((1027,), (1027,), (1027,)), (), reference.add_relu_mul_ref),
    "row_mean": (row_mean, ((7, 301),), (), reference.row_mean_ref),
    "strided_copy": (strided_copy, ((1027,),), (3,), reference.strided_copy_ref),
    "softmax": (softmax, ((7, 301),), (), reference.softmax_ref),
    "scale_shift": (scale_shift, ((7, 301), (301,), (301,)), (), reference.scale_shift_ref),
}


def _laid_out(t: torch.Tensor, layout: str) -> torch.Tensor:
    """``t``'s values in ``layout``: ``"contiguous"``; ``"offset"``, contiguous one element
    into a larger buffer (a base 2 or 4 bytes past a 16-byte boundary); ``"strided"``, every
    other element of a buffer twice as long (1-D) or the transpose of a row-major tensor
    (2-D: column-major)."""
    if layout == "contiguous":
        return t.clone()
    if layout == "offset":
        buffer = torch.empty(t.numel() + 1, dtype=t.dtype, device=t.device)
        view = buffer[1:].view(t.shape)
    elif t.dim() == 1:
        view = torch.empty(2 * t.numel(), dtype=t.dtype, device=t.device)[::2]
    else:
        view = torch.empty(t.shape[::-1], dtype=t.dtype, device=t.device).t()
    view.copy_(t)
    return view


@pytest.mark.parametrize("layout", ["contiguous", "offset", "strided"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("name", LAYOUT_CASES)
def test_every_layout_matches_on_the_first_call_and_from_its_plan(name, dtype, layout):
    # A slice at an odd offset, a strided view and a transpose are each keyed apart: the first
    # call checks and launches (or copies, or refuses), the second with the same layout runs
    # from the plan, on new addresses. Both must match the reference, and a refusal must name
    # its argument. On a GPU this test runs under compute-sanitizer too.
    fn, shapes, options, ref = LAYOUT_CASES[name]
    for seed in (0, 1):
        inputs = [_laid_out(randn(shape, dtype, seed + 10 * i), layout) for i, shape in enumerate(shapes)]
        try:
            out = fn(*inputs, *options)
        except ValueError as err:  # a layout the op refuses, as its docstring says
            assert layout == "strided" and re.search(r"\bx\b", str(err)), err
            return
        assert_close(f"{name} {dtype} {layout} call {seed}", ref(*inputs, *options), out)


# Named and optional tensors, launch configs, workspaces, descriptors ------------------------


@triton.jit
def _axpy_kernel(x_ptr, y_ptr, out_ptr, n, FACTOR: tl.constexpr, HAS_Y: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    value = tl.load(x_ptr + offsets, mask=mask) * FACTOR
    if HAS_Y:
        value += tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, value, mask=mask)


@dataclasses.dataclass(frozen=True)
class Tiles:
    """A launch config as the ops take one: ints and bools."""

    block: int = 64
    factor: int = 2
    staged: bool = False


NAMED_CALLS = []


@op("gpuperf_test::axpy", tensors=("x", "y"))
def axpy(
    x: torch.Tensor, *, y: torch.Tensor | None = None, tiles: Tiles | None = None, zeroed: bool = False
) -> tuple[torch.Tensor, Launches]:
    """``x * factor + y`` (``y`` optional); ``staged``: through a workspace, zeroed or not."""
    NAMED_CALLS.append((tuple(x.shape), y is not None, tiles, zeroed))
    tiles = tiles or Tiles()
    out = torch.empty_like(x)
    n = out.numel()
    grid = (triton.cdiv(n, tiles.block),)
    if not tiles.staged:
        args = (x, x if y is None else y, out, n)
        return out, (Launch(_axpy_kernel, grid, args, (tiles.factor, y is not None, tiles.block), 1),)
    buffer = (torch.zeros_like if zeroed else torch.empty_like)(x)
    head = (tiles.factor, y is not None, tiles.block)
    if zeroed:  # out = x * factor (+ y), then out += the zeroed workspace: it reads zeros
        first = Launch(_axpy_kernel, grid, (x, x if y is None else y, out, n), head, 1)
        second = Launch(_axpy_kernel, grid, (buffer, out, out, n), (1, True, tiles.block), 1)
    else:  # the workspace = x * factor (+ y), then out = the workspace twice
        first = Launch(_axpy_kernel, grid, (x, x if y is None else y, buffer, n), head, 1)
        second = Launch(_axpy_kernel, grid, (buffer, buffer, out, n), (1, True, tiles.block), 1)
    return out, (Workspace(buffer, zeroed), first, second)


def _whole(t: torch.Tensor) -> torch.Tensor:
    """``t`` rounded to whole numbers: ``x * factor + y`` is then exact, so a GPU that fuses it
    into one multiply-add (one rounding, where PyTorch's ``x * 3 + y`` rounds twice) gives the
    reference bit for bit."""
    return t.mul(8).round()


def _axpy_ref(x, y=None, tiles=None, zeroed=False):
    tiles = tiles or Tiles()
    out = x * tiles.factor + (0 if y is None else y)
    return out * 2 if tiles.staged and not zeroed else out


def test_named_tensors_key_an_optional_none_and_take_the_plan():
    NAMED_CALLS.clear()
    axpy.plans.clear()
    for seed in (1, 2, 3):
        x, y = _whole(randn((100,), torch.float32, seed)), _whole(randn((100,), torch.float32, seed + 10))
        assert torch.equal(axpy(x), x * 2)
        assert torch.equal(axpy(x, y=y), x * 2 + y)
        assert torch.equal(axpy(x, y=y, tiles=Tiles(32, 3)), x * 3 + y)
    assert len(NAMED_CALLS) == 3 and len(axpy.plans) == 3  # one per (y or none, tiles)
    assert torch.equal(axpy(x, y=x), x * 3)  # y is x: a key of its own
    assert len(NAMED_CALLS) == 4
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'z'"):
        axpy(x, z=y)
    with pytest.raises(TypeError):
        axpy(x, y)  # y is keyword-only, as the function says
    assert list(inspect.signature(axpy).parameters) == ["x", "y", "tiles", "zeroed"]


def test_a_call_autograd_records_runs_the_function_and_keeps_no_plan():
    NAMED_CALLS.clear()
    axpy.plans.clear()
    x = randn((40,), torch.float32, 1)
    axpy(x)
    weight = torch.nn.Parameter(x.clone())
    for _ in range(2):
        assert torch.equal(axpy(weight), x * 2)
    assert len(NAMED_CALLS) == 3 and len(axpy.plans) == 1
    with torch.no_grad():  # a model's weight at inference: a plan of its own (a Parameter)
        for _ in range(2):
            assert torch.equal(axpy(weight), x * 2)
    assert len(NAMED_CALLS) == 4 and len(axpy.plans) == 2


@dataclasses.dataclass(frozen=True)
class Modes:
    """A launch config with a str field and an optional one, as the Gluon ops' configs have."""

    block: int = 64
    mode: str = "twice"
    factor: int | None = None


MODED_CALLS = []


@op("gpuperf_test::moded", tensors=("x",))
def moded(x: torch.Tensor, *, modes: Modes | None = None) -> tuple[torch.Tensor, Launches]:
    """``x`` times ``modes.factor``, or 2 (``"twice"``) or 3 (``"thrice"``) where it is None."""
    MODED_CALLS.append(modes)
    modes = modes or Modes()
    factor = modes.factor if modes.factor is not None else {"twice": 2, "thrice": 3}[modes.mode]
    out = torch.empty_like(x)
    n = out.numel()
    grid = (triton.cdiv(n, modes.block),)
    return out, (Launch(_axpy_kernel, grid, (x, x, out, n), (factor, False, modes.block), 1),)


def test_a_config_of_strs_and_optional_fields_reaches_the_registered_op_as_its_fields():
    schema = str(torch.ops.gpuperf_test.moded.default._schema)
    assert re.fullmatch(
        r"gpuperf_test::moded\(Tensor x, \w+\? block=None, str\? mode=None, \w+\? factor=None\) -> Tensor",
        schema,
    ), schema
    MODED_CALLS.clear()
    moded.plans.clear()
    x = _whole(randn((70,), torch.float32, 1))
    assert torch.equal(torch.ops.gpuperf_test.moded(x, 32, "thrice", None), x * 3)
    assert torch.equal(moded(x, modes=Modes(factor=5)), x * 5)
    assert torch.equal(moded(x, modes=Modes(factor=5)), x * 5)  # from the plan
    assert MODED_CALLS == [Modes(32, "thrice", None), Modes(factor=5)]
    graphs, backend = recording_backend()
    compiled = torch.compile(
        lambda t: moded(t, modes=Modes(16, "thrice")) + 1, backend=backend, fullgraph=True
    )
    assert torch.equal(compiled(x), x * 3 + 1)
    assert "gpuperf_test.moded" in called_ops(graphs[0])


def test_a_config_of_other_field_types_is_refused():
    @dataclasses.dataclass(frozen=True)
    class Scaled:
        factor: float = 1.0

    def scaled(x: torch.Tensor, *, config: Scaled | None = None) -> tuple[torch.Tensor, Launches]:
        return x, ()

    with pytest.raises(
        TypeError, match="config: a config parameter must be a dataclass of ints, bools and strs"
    ):
        op("gpuperf_test::scaled_refused", tensors=("x",))(scaled)


def test_a_config_reaches_the_registered_op_as_its_fields():
    schema = str(torch.ops.gpuperf_test.axpy.default._schema)
    assert re.fullmatch(
        r"gpuperf_test::axpy\(Tensor x, Tensor\? y=None, \w+\? block=None, \w+\? factor=None, "
        r"bool\? staged=None, bool zeroed=False\) -> Tensor",
        schema,
    ), schema
    NAMED_CALLS.clear()
    axpy.plans.clear()
    x, y = randn((70,), torch.float32, 1), randn((70,), torch.float32, 2)
    assert torch.equal(torch.ops.gpuperf_test.axpy(x, y, 32, 3, False), axpy(x, y=y, tiles=Tiles(32, 3)))
    assert torch.equal(torch.ops.gpuperf_test.axpy(x), x * 2)  # fields None: no config
    assert [call[2] for call in NAMED_CALLS] == [Tiles(32, 3), None]  # the eager call's plans
    graphs, backend = recording_backend()
    compiled = torch.compile(
        lambda t, u: axpy(t, y=u, tiles=Tiles(16, 4)) + 1, backend=backend, fullgraph=True
    )
    assert torch.equal(compiled(x, y), x * 4 + y + 1)
    assert "gpuperf_test.axpy" in called_ops(graphs[0])


@pytest.mark.parametrize("zeroed", [False, True])
def test_a_workspace_is_allocated_again_by_the_plan(zeroed):
    NAMED_CALLS.clear()
    axpy.plans.clear()
    tiles = Tiles(32, 3, staged=True)
    for seed in (1, 2, 3):
        x, y = _whole(randn((100,), torch.float32, seed)), _whole(randn((100,), torch.float32, seed + 10))
        assert torch.equal(axpy(x, y=y, tiles=tiles, zeroed=zeroed), _axpy_ref(x, y, tiles, zeroed)), seed
    assert len(NAMED_CALLS) == 1 and len(axpy.plans) == 1


def test_the_named_eager_call_is_written_from_the_signature():
    source = named_call_source(inspect.signature(axpy), ("x", "y"))
    assert "def call(x, *, y=_d_y, tiles=_d_tiles, zeroed=_d_zeroed):" in source
    assert "None if y is None else (type(y)" in source and "_a0 == _a1" in source
    compile(source, "<test>", "exec")
    with pytest.raises(ValueError, match="tensors must name the op's tensor parameters"):
        named_call_source(inspect.signature(axpy), ("x", "w"))
    with pytest.raises(ValueError, match="parameter '_x'"):
        named_call_source(inspect.Signature([inspect.Parameter("_x", inspect.Parameter.POSITIONAL_ONLY)]), ())


# An op with a backward, its tensors named -------------------------------------------------

SHIFTED_CALLS = []


@op("gpuperf_test::shifted_backward", tensors=("grad",))
def shifted_backward(grad: torch.Tensor, tiles: Tiles | None = None) -> tuple[torch.Tensor, Launches]:
    """``grad * factor``; with ``tiles.staged``, through a workspace (a second launch copies it)."""
    SHIFTED_CALLS.append(("backward", tiles))
    tiles = tiles or Tiles()
    grad = grad.contiguous()
    dx = torch.empty_like(grad)
    n = dx.numel()
    grid = (triton.cdiv(n, tiles.block),)
    if not tiles.staged:
        return dx, (Launch(_axpy_kernel, grid, (grad, grad, dx, n), (tiles.factor, False, tiles.block), 1),)
    buffer = torch.empty_like(grad)
    first = Launch(_axpy_kernel, grid, (grad, grad, buffer, n), (tiles.factor, False, tiles.block), 1)
    second = Launch(_axpy_kernel, grid, (buffer, buffer, dx, n), (1, False, tiles.block), 1)
    return dx, (Workspace(buffer), first, second)


def _tiles_of(block, factor, staged):
    return None if block is None else Tiles(block, factor, staged)


@op(
    "gpuperf_test::shifted",
    tensors=("x", "shift"),
    backward=shifted_backward,
    saves=lambda shift, x, block, factor, staged, out: (_tiles_of(block, factor, staged),),
)
def shifted(
    shift: torch.Tensor, x: torch.Tensor, *, tiles: Tiles | None = None
) -> tuple[torch.Tensor, Launches]:
    """``x * factor + shift``, differentiable with respect to ``x`` only, which the op names
    first although the signature takes it second."""
    SHIFTED_CALLS.append(("forward", tiles))
    tiles = tiles or Tiles()
    out = torch.empty_like(x)
    n = out.numel()
    grid = (triton.cdiv(n, tiles.block),)
    return out, (Launch(_axpy_kernel, grid, (x, shift, out, n), (tiles.factor, True, tiles.block), 1),)


def _fresh_shifted():
    SHIFTED_CALLS.clear()
    for plans in (shifted.plans, shifted.registered_plans, shifted_backward.plans):
        plans.clear()


def test_an_op_with_a_backward_and_named_tensors_plans_records_and_trains():
    _fresh_shifted()
    schema = str(torch.ops.gpuperf_test.shifted.default._schema)
    assert re.fullmatch(
        r"gpuperf_test::shifted\(Tensor shift, Tensor x, \w+\? block=None, \w+\? factor=None, "
        r"bool\? staged=None\) -> Tensor",
        schema,
    ), schema
    assert shifted.registered_plans is shifted.plans  # every output public, no `saving`
    tiles = Tiles(32, 3, staged=True)
    shift = _whole(randn((70,), torch.float32, 9))  # whole numbers: x * 3 + shift is exact, fused or not
    for seed in (1, 2):  # not recorded: the plan
        x = _whole(randn((70,), torch.float32, seed))
        assert torch.equal(shifted(shift, x, tiles=tiles), x * 3 + shift)
    assert SHIFTED_CALLS == [("forward", tiles)] and len(shifted.plans) == 1
    SHIFTED_CALLS.clear()
    for seed in (1, 2):  # recorded: the registered op (its plan), then the backward op
        x = _whole(randn((70,), torch.float32, seed)).requires_grad_()
        out = shifted(shift, x, tiles=tiles)
        assert torch.equal(out.detach(), x.detach() * 3 + shift)
        assert "gpuperf_test_shifted" in type(out.grad_fn).__name__
        grad = randn((70,), torch.float32, seed + 10)
        (dx,) = torch.autograd.grad(out, x, grad)  # to x, the registered op's second input
        assert torch.equal(dx, grad * 3), seed
    # The forward's checks once (the key's first recorded call); the backward, through its
    # workspace, ran once and then from its plan, the config rebuilt from its fields.
    assert SHIFTED_CALLS == [("forward", tiles), ("backward", tiles)]
    assert len(shifted_backward.plans) == 1
    message = r"shifted differentiates with respect to x only: shift must not require grad"
    with pytest.raises(ValueError, match=message):
        shifted(shift.clone().requires_grad_(), x)


def test_compile_fullgraph_trains_an_op_with_a_backward_and_named_tensors():
    graphs, backend = recording_backend()
    x, shift = randn((40,), torch.float32, 1).requires_grad_(), randn((40,), torch.float32, 2)
    compiled = torch.compile(
        lambda s, t: shifted(s, t, tiles=Tiles(16, 4)) + 1, backend=backend, fullgraph=True
    )
    out = compiled(shift, x)
    assert "gpuperf_test.shifted" in called_ops(graphs[0])
    out.backward(torch.ones_like(out))
    assert torch.equal(out.detach(), x.detach() * 4 + shift + 1)
    assert torch.equal(x.grad, torch.full_like(x, 4.0))


@triton.jit
def _described_double_kernel(x_desc, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    value = x_desc.load([tl.program_id(0) * BLOCK])
    tl.store(out_ptr + offsets, value * 2, mask=offsets < n)


@op("gpuperf_test::described_double")
def described_double(x: torch.Tensor) -> tuple[torch.Tensor, Launches]:
    """``x * 2`` through a TMA descriptor of ``x`` (1-D, contiguous, 16-byte aligned)."""
    CALLS.append((tuple(x.shape), "described"))
    out = torch.empty_like(x)
    n = out.numel()
    desc = TensorDescriptor(x, [n], [1], [32])
    return out, (Launch(_described_double_kernel, (triton.cdiv(n, 32),), (desc, out, n), (32,), 1),)


def test_a_descriptor_is_made_again_on_the_new_input_by_the_plan():
    _fresh()
    for seed in (1, 2, 3):
        x = randn((100,), torch.float32, seed)
        assert torch.equal(described_double(x), x * 2), seed
    assert len(CALLS) == 1 and len(described_double.plans) == 1
    assert torch.equal(described_double(x.half()), x.half() * 2)  # another dtype: another binary
    assert isinstance(launcher(_described_double_kernel), launch_module.DescriptorLauncher)


def test_a_descriptor_cannot_enter_a_compiled_graph():
    x = randn((100,), torch.float32, 1)
    with pytest.raises(Exception, match=r"host tensor descriptor while torch\.compile traces"):
        torch.compile(lambda t: described_double(t) + 1, fullgraph=True, backend="eager")(x)


def test_tracing_is_told_by_fake_tensors_where_is_compiling_is_false():
    from torch._subclasses.fake_tensor import FakeTensorMode

    x = torch.ones(4)
    assert not tracing(x, 3, None)
    with FakeTensorMode() as mode:
        fake = mode.from_tensor(x)
        assert tracing(3, fake) and address(fake[1:]) == 4  # its offset, in bytes


def test_a_descriptor_cannot_enter_a_graph_where_is_compiling_is_false(compiling_in_traced_frames_only):
    x = randn((100,), torch.float32, 1)
    with pytest.raises(Exception, match=r"host tensor descriptor while torch\.compile traces"):
        torch.compile(lambda t: described_double(t) + 1, fullgraph=True, backend="eager")(x)


def test_a_backward_traces_where_is_compiling_is_false(compiling_in_traced_frames_only):
    """AOTAutograd traces the backward (the public backward op, on functional tensors) with
    ``is_compiling()`` False: the backward takes the registered op, not the eager launches."""
    x, shift = _whole(randn((40,), torch.float32, 1)).requires_grad_(), randn((40,), torch.float32, 2)
    compiled = torch.compile(
        lambda s, t: shifted(s, t, tiles=Tiles(16, 4)) + 1, backend="aot_eager", fullgraph=True
    )
    SHIFTED_CALLS.clear()
    out = compiled(shift, x)
    out.backward(torch.ones_like(out))
    assert ("backward", Tiles(16, 4)) in SHIFTED_CALLS and x.grad.shape == x.shape
    if not is_interpreter():  # (the interpreter does not run the kernels of an AOTAutograd graph)
        assert torch.equal(out.detach(), x.detach() * 4 + shift + 1)
        assert torch.equal(x.grad, torch.full_like(x, 4.0))


def test_a_bound_plan_describes_the_new_base_and_allocates_the_workspace(bound_plans):
    calls = []
    x = randn((8, 32), torch.float32, 1)
    out = torch.empty_like(x)
    ws = torch.zeros(4, 32)
    desc = TensorDescriptor(x, [8, 32], [32, 1], [8, 16])
    launches = (
        Workspace(ws, zeroed=True),
        Launch(_described_double_kernel, (3,), (desc, ws, 256), (32,)),
        Launch(_scale_kernel, (3,), (ws, out, 128), (2, 64)),
    )
    plan = launch_module.make_plan(
        (x,), (), out, launches, [None, _bound(calls, (256, 32)), _bound(calls, (128,))]
    )
    a = randn((8, 32), torch.float32, 3)
    new = plan((a,), (a.data_ptr(),))
    (first, second) = calls
    described, workspace = first[6], first[7]
    assert isinstance(described, Described) and described.base is a
    assert (described.shape, described.strides, described.padding) == ([8, 32], [32, 1], "zero")
    assert first[8:] == (256, 32) and second[6:] == (workspace, new.data_ptr(), 128)
    assert workspace not in (a.data_ptr(), new.data_ptr(), ws.data_ptr()) and new.shape == out.shape
    allocation = launch_module._workspace_allocation(Workspace(ws, zeroed=True))
    assert allocation.func is torch.zeros and allocation.args == (ws.shape,)
    assert launch_module._workspace_allocation(Workspace(ws)).func is torch.empty
    assert launch_module._workspace_allocation(Workspace(torch.zeros(8, 8)[:, :4])) is None  # a view


# The matmul family --------------------------------------------------------------------------


def _fp8_operands(seed: int) -> tuple:
    a, scale_a = to_fp8(randn((20, 64), torch.float32, seed), axis=-1)
    bt, scale_b = to_fp8(randn((24, 64), torch.float32, seed + 1), axis=-1)
    return a, bt.t(), scale_a, scale_b.t()  # b column-major, as the FP8 tensor cores read it


#: Each op of the matmul family: ``(op, its tensor inputs by seed, its keyword options, its
#: reference, K)``.
MATMULS = {
    "matmul": (
        matmul,
        lambda s: _floats(s, (20, 40), (40, 24), (24,), dtype=torch.float16),
        {"activation": "gelu"},
        lambda a, b, bias, **options: reference.matmul_ref(a, b, bias, options["activation"]),
        40,
    ),
    "matmul_splitk": (
        matmul_splitk,
        # (K = 1024: four slices of 256 on a GPU too, through the workspace)
        lambda s: _floats(s, (3, 1024), (1024, 24), dtype=torch.float16),
        {"split_k": 4},
        lambda a, b, **options: reference.matmul_ref(a, b),
        1024,
    ),
    "matmul_persistent": (
        matmul_persistent,
        lambda s: _floats(s, (20, 40), (40, 24), dtype=torch.float16),
        {},
        reference.matmul_ref,
        40,
    ),
    "matmul_fp8": (matmul_fp8, _fp8_operands, {}, reference.matmul_fp8_ref, 64),
}


def _matmul_call(name: str, inputs: tuple):
    """``op(*inputs, **options)``, matmul's bias passed by keyword."""
    fn, _, options, _, _ = MATMULS[name]
    if name == "matmul":
        a, b, bias = inputs
        return fn(a, b, bias=bias, **options)
    return fn(*inputs, **options)


@pytest.mark.parametrize("name", MATMULS)
def test_each_matmul_is_a_torch_library_op_that_computes_what_the_op_does(name):
    fn, make, options, ref, k = MATMULS[name]
    assert fn.registered is getattr(torch.ops.gpuperf, name) and fn.__name__ == name
    inputs = make(1)
    out = _matmul_call(name, inputs)
    assert_close_fp8(f"{name}", ref(*inputs, **options), out, k=k)
    # The registered op takes every argument by position (matmul's bias after b).
    assert torch.equal(fn.registered(*inputs, *options.values()), out)


def _all_matmuls(a, b, bias, x, w, fp8):
    h = matmul(a, b, bias=bias, activation="gelu", config=MatmulConfig(16, 16, 16, 2, 4, 1))
    p = matmul_persistent(
        a * 0.5, b, config=PersistentConfig(32, 32, 32, group_m=2, num_warps=4, num_stages=1)
    )
    s = matmul_splitk(x, w.t(), split_k=3)
    f = matmul_fp8(*fp8, out_dtype=torch.float32)
    return h.float().sum() + p.float().sum() + s.float().sum() + f.sum()


def test_compile_fullgraph_keeps_the_matmul_family_in_one_graph():
    graphs, backend = recording_backend()
    a, b, bias = _floats(1, (20, 40), (40, 24), (24,), dtype=torch.float16)
    x, w = _floats(2, (3, 200), (24, 200), dtype=torch.float16)
    args = (a, b, bias, x, w, _fp8_operands(3))
    out = torch.compile(_all_matmuls, backend=backend, fullgraph=True)(*args)
    assert len(graphs) == 1
    assert {f"gpuperf.{name}" for name in MATMULS} <= called_ops(graphs[0])
    torch.testing.assert_close(out, _all_matmuls(*args), rtol=1e-3, atol=1e-1)


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])
@pytest.mark.parametrize("name", MATMULS)
def test_matmuls_compile_with_inductor_and_cuda_graphs(name, mode):
    """Inductor sees each matmul's kernels (computed pointers for the persistent ones: a graph
    holds no host descriptor); reduce-overhead records a CUDA graph of them and replays it."""
    _, make, options, ref, k = MATMULS[name]
    torch._dynamo.reset()
    compiled = torch.compile(lambda *t: _matmul_call(name, t), fullgraph=True, mode=mode)
    for seed in (1, 2, 3):  # reduce-overhead records on a later call, then replays
        inputs = make(seed)
        assert_close_fp8(
            f"compiled {name} ({mode}), seed {seed}", ref(*inputs, **options), compiled(*inputs), k
        )


@pytest.mark.gpu
@pytest.mark.parametrize("name", MATMULS)
def test_eager_matmuls_capture_into_a_cuda_graph(name):
    """Each matmul's eager call launches from its plan (descriptors made again, split-K's
    workspace allocated again) on the current stream: a CUDA graph captures it, and the
    replay computes on what the inputs hold then."""
    fn, make, options, ref, k = MATMULS[name]
    inputs = make(1)
    _matmul_call(name, inputs)  # compiles and plans outside the capture
    _matmul_call(name, inputs)
    assert len(fn.plans) >= 1
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = _matmul_call(name, inputs)
    for t, new in zip(inputs, make(5), strict=True):
        t.copy_(new)
    graph.replay()
    torch.cuda.synchronize()
    assert_close_fp8(f"graph {name}", ref(*inputs, **options), out, k)
