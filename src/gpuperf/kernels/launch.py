"""One launch path for the ops: a function that checks its inputs and says what to launch,
turned by :func:`op` into the public op, its ``torch.library`` registration and its plans.

An op is written as one plain function. It checks its arguments, allocates its outputs and
returns them with the kernel launches that fill them, each a :class:`Launch` (kernel, grid,
runtime arguments, constexprs, ``num_warps``, ``num_stages``); it launches nothing itself::

    @op("gpuperf::vector_add", tensors=2)
    def vector_add(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, Launches]:
        check_tensors(("x", "y"), (x, y))
        out = torch.empty_like(x)
        n = out.numel()
        return out, (Launch(add_kernel, (cdiv(n, 1024),), (x, y, out, n), (1024,)),)

From that one function :func:`op` builds every way the op runs:

* **The eager call.** The first call with inputs of a new layout runs the function and
  launches through :class:`~gpuperf.kernels._launch.Launcher` (compiled binaries kept by
  what Triton specializes on, handed straight to Triton's C launcher). What it launched is
  kept as a **plan** under the key of the call (:func:`layout_key`: each tensor input's
  type, shape, strides, dtype, device and address modulo 16, which inputs share an address,
  and the other arguments with their types). A later call with the same key runs the plan:
  it allocates the outputs as the function did and launches the kernels bound to
  everything but the new addresses, without the checks, the launch rules or Triton's key.
* **The registered op** ``torch.ops.gpuperf.<name>``, through ``torch.library.triton_op``.
  On the fake or functional tensors of a trace its body runs the function and launches each
  kernel through ``torch.library.wrap_triton``, so ``torch.compile(fullgraph=True)`` keeps a
  model that calls the op in one graph and Inductor sees the kernels, which CUDA graphs
  capture; inside ``torch.compile`` the public op calls the registered one. Called eagerly
  on plain tensors, the registered op is the eager call, plans included.
* **The interpreter.** Under ``TRITON_INTERPRET=1`` (no GPU) the same function runs and every
  launch goes through ``kernel[grid]`` on CPU tensors; a plan launches its kernels again on
  the new tensors, since an interpreted kernel has no binary to bind.

A plan is made only where replaying it is the function's own work on new inputs: every
tensor a launch takes is one of the tensor inputs (at its address: the input or a view of
it, not a copy) or one of the returned outputs (a whole fresh allocation, which the plan
allocates again), and each launch takes its tensors first. A call that copies an input
(``.contiguous()`` of a strided tensor), launches on a workspace, launches nothing or has a
tensor among its other arguments leaves no plan, and each such call runs the function.
Plans are off, and every launch goes through ``kernel[grid]``, under
:func:`~gpuperf.kernels._launch.uncached` and while a launch hook (Triton's profiler,
proton) is installed. The function must decide its launches from the inputs' layout and
its other arguments only, never from the data, which a plan does not read.

The eager call is the op's host time, paid on every call of a model's step, so it is
written for speed: :func:`op` writes it out for the op's number of tensor inputs (the key
of :func:`layout_key` with its loop unrolled, :func:`call_source`), and a plan is a closure
that makes one allocation per output and one C call per launch.

Where the other ops go (the next steps of the same decorator):

* **Optional tensors** (matmul's ``bias``): ``tensors`` names the tensor parameters instead
  of counting the leading ones; a None is keyed as None, a tensor as above.
* **A backward** (attention, rms_norm, rope, swiglu): the op's forward function returns
  what the backward needs among its outputs (attention's ``lse``, which the public function
  drops), and :func:`op` takes the
  backward, a function of the same form registered as an op of its own, and registers it
  with ``torch.library.register_autograd``. A call that autograd records (grad enabled and
  an input that requires it) runs the registered op, which records the backward; the others
  take the plans. No ``torch.autograd.Function`` remains, and the forward is written once.
* **TMA descriptors** (the persistent matmul, SwiGLU, FP8): a launch lists a descriptor
  among its arguments, made on an input or an output; the plan keys it by its dtype and
  block shape (as :class:`~gpuperf.kernels.tma.DescriptorLauncher` does) and fills it again
  on the new address (as :class:`~gpuperf.kernels.tma.BoundDescriptors` does).
* **Workspaces** (split-K's partial sums): the function declares a buffer its launches use
  that is not an output, and the plan allocates it again, zeroed where the function zeroed it.
* **Gluon kernels** launch as Triton's do: ``kernel[grid](...)`` compiles a ``@gluon.jit``
  kernel into a binary that the same C launcher runs, so a :class:`Launch` takes one as it is.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import typing
from collections.abc import Callable, Sequence
from typing import NamedTuple

import torch

from gpuperf._runtime import is_interpreter
from gpuperf.kernels._launch import Launcher, Plans, fast_path_enabled, traced
from gpuperf.kernels.plans import PLAIN_TENSORS, option_key


class Launch(NamedTuple):
    """One kernel launch as an op's function returns it: ``kernel[grid](*args, *constexprs,
    num_warps=num_warps, num_stages=num_stages)``. ``args`` are the runtime arguments (the
    tensors first, then the scalars) and ``constexprs`` the compile-time ones, each in the
    kernel's order (its constexprs declared last)."""

    kernel: Callable
    grid: tuple
    args: tuple
    constexprs: tuple = ()
    num_warps: int = 4
    num_stages: int = 3


#: What an op's function returns besides its outputs: its launches, in order.
Launches = Sequence[Launch]

_LAUNCHERS: dict = {}
_TRACED: dict = {}


def launcher(kernel) -> Launcher:
    """The :class:`~gpuperf.kernels._launch.Launcher` of ``kernel``, one for every op that launches it."""
    found = _LAUNCHERS.get(kernel)
    if found is None:
        found = _LAUNCHERS[kernel] = Launcher(kernel)
    return found


def _traced(kernel) -> Callable:
    found = _TRACED.get(kernel)
    if found is None:
        found = _TRACED[kernel] = traced(kernel)
    return found


# The key of a call ----------------------------------------------------------------------


def options_key(others: tuple, kwargs: dict) -> tuple:
    """The part of a key for the other positional arguments ``others`` and the keyword ones,
    as given: two items, each of :func:`~gpuperf.kernels.plans.option_key` values (a type and
    a value: ``True``, ``1`` and ``1.0`` are equal dictionary keys, but an op that refuses
    ``num_warps=True`` must not take the plan of ``num_warps=1``)."""
    return (tuple(map(option_key, others)), tuple([(k, option_key(v)) for k, v in kwargs.items()]))


def layout_key(args: tuple, tensors: int, kwargs: dict) -> tuple[tuple, list[int]]:
    """``(key, addresses)`` of a call whose first ``tensors`` positional arguments are its
    tensor inputs: the key a plan is kept under, and the inputs' addresses (read once, for
    the key and for the launch).

    The key holds, for each tensor input, its type, shape, strides, dtype, device index and
    address modulo 16 (Triton specializes a pointer on its 16-byte alignment), flat; then
    whether each pair of inputs shares an address (a plan made for ``f(x, x)`` must know
    which input each launch reads); then, only where there are other arguments,
    :func:`options_key`. The eager call computes the same key with its loop unrolled
    (:func:`call_source`).

    Raises:
        AttributeError: an input is not a tensor. (And ``TypeError`` from a dictionary,
        where an option is no dictionary key: a list, say.)
    """
    inputs = args[:tensors]
    addresses = [t.data_ptr() for t in inputs]
    key = []
    for t, address in zip(inputs, addresses, strict=True):
        key += (type(t), t.shape, t.stride(), t.dtype, t.get_device(), address & 15)
    key += [a == b for a, b in itertools.combinations(addresses, 2)]
    key = tuple(key)
    if kwargs or len(args) > tensors:
        key += options_key(args[tensors:], kwargs)
    return key, addresses


#: The eager call of an op of ``{n}`` tensor inputs: :func:`layout_key` unrolled, the plan,
#: or the op's function. ``call_source`` fills it in; its names are the op's own.
_CALL = """
def call(*args, **kwargs):
    if is_compiling():
        return registered(*args, **kwargs)
    try:
        {inputs}, = args[:{n}]
        {addresses} = {data_ptrs}
        key = ({fields},)
        if kwargs or len(args) > {n}:
            key += options_key(args[{n}:], kwargs)
        plan = plans.get(key)
    except (AttributeError, RuntimeError, TypeError, ValueError):  # not tensors, no key: no plan
        return run(args, kwargs, None)
    if plan is None:
        return run(args, kwargs, key)
    return plan(args, ({addresses},))
"""


def call_source(tensors: int) -> str:
    """The source of the eager call :func:`op` makes for an op of ``tensors`` tensor inputs."""
    inputs = [f"t{i}" for i in range(tensors)]
    addresses = [f"a{i}" for i in range(tensors)]
    fields = [
        f"type({t}), {t}.shape, {t}.stride(), {t}.dtype, {t}.get_device(), {a} & 15"
        for t, a in zip(inputs, addresses, strict=True)
    ]
    fields += [f"{a} == {b}" for a, b in itertools.combinations(addresses, 2)]
    return _CALL.format(
        n=tensors,
        inputs=", ".join(inputs),
        addresses=", ".join(addresses),
        data_ptrs=", ".join(f"{t}.data_ptr()" for t in inputs),
        fields=", ".join(fields),
    )


# Plans ----------------------------------------------------------------------------------


class _Slot(NamedTuple):
    """A tensor argument of a launch, as a plan under the interpreter takes it again: the
    call's tensor ``index`` (its inputs, then its outputs) viewed with ``shape`` and ``stride``."""

    index: int
    shape: tuple
    stride: tuple


def _allocation(out, inputs: tuple):
    """How a plan allocates an output like ``out``: the index ``i`` where
    ``torch.empty_like(inputs[i])`` has ``out``'s shape, strides, dtype and device, else a
    call of ``torch.empty_strided``; None when ``out`` is not a whole fresh allocation of its
    own (a view into a larger buffer, an empty tensor, a subclass)."""
    if type(out) is not torch.Tensor or out.numel() == 0 or out.storage_offset():
        return None
    extent = 1 + sum((size - 1) * stride for size, stride in zip(out.shape, out.stride(), strict=True))
    if out.untyped_storage().nbytes() != extent * out.element_size():
        return None
    layout = (out.shape, out.stride(), out.dtype, out.device)
    for i, t in enumerate(inputs):
        like = torch.empty_like(t)
        if (like.shape, like.stride(), like.dtype, like.device) == layout:
            return i
    return functools.partial(torch.empty_strided, out.shape, out.stride(), dtype=out.dtype, device=out.device)


def make_plan(inputs: tuple, options: tuple, result, launches: Launches, bounds: list) -> Callable | None:
    """The plan of a call with tensor inputs ``inputs`` and other arguments ``options`` that
    returned ``result`` after launching ``launches`` (whose
    :class:`~gpuperf.kernels._launch.Bound` launches are ``bounds``: None under the
    interpreter), or None where replaying it would not be that call's work on new inputs (see
    the module's text). The plan is called as ``plan(args, addresses)``, ``args`` the call's
    positional arguments and ``addresses`` its inputs' (:func:`layout_key`)."""
    if not launches or any(type(t) not in PLAIN_TENSORS for t in inputs):
        return None
    if any(isinstance(v, torch.Tensor) for v in options):
        return None  # a tensor the key does not describe
    single = isinstance(result, torch.Tensor)
    outputs = (result,) if single else tuple(result)
    tensors = (*inputs, *outputs)
    addresses = [t.data_ptr() for t in tensors]
    if len(set(addresses[len(inputs) :])) < len(outputs) or set(addresses[: len(inputs)]) & set(
        addresses[len(inputs) :]
    ):
        return None  # an output that is another or an input
    allocations = [_allocation(out, inputs) for out in outputs]
    if None in allocations:
        return None
    slots = []
    for launch, bound in zip(launches, bounds, strict=True):
        taken = []
        for i, arg in enumerate(launch.args):
            if not isinstance(arg, torch.Tensor):
                continue
            if i > len(taken) or arg.data_ptr() not in addresses:
                return None  # a tensor after a scalar (bound launches take them first), or a copy
            index = addresses.index(arg.data_ptr())
            if arg.dtype != tensors[index].dtype:
                return None
            taken.append(_Slot(index, arg.shape, arg.stride()))
        if bound is None and not is_interpreter():
            return None
        slots.append(taken)
    if is_interpreter():
        return _relaunching_plan(allocations, single, launches, slots, len(inputs))
    return _bound_plan(allocations, single, bounds, slots, len(inputs))


def _allocate(allocations: list, args: tuple) -> list:
    empty_like = torch.empty_like
    return [empty_like(args[a]) if type(a) is int else a() for a in allocations]


def _bound_plan(allocations: list, single: bool, bounds: list, slots: list, n_inputs: int) -> Callable:
    """A plan on the GPU: Triton's C launcher of each launch, bound to all but the addresses,
    on the current stream of the device it was bound on (as ``kernel[grid]`` launches)."""
    stream_of = torch._C._cuda_getCurrentRawStream
    indices = [[s.index for s in taken] for taken in slots]
    if single and indices == [list(range(n_inputs + 1))]:
        # One output, one launch taking the inputs then the output: the common case, inlined.
        (bound,) = bounds
        launch, function, head, tail = bound.launch, bound.function, bound.head, bound.tail
        g0, g1, g2 = bound.grid
        device = bound.device
        (allocation,) = allocations
        empty_like = torch.empty_like

        def plan(args, addresses):
            out = empty_like(args[allocation]) if type(allocation) is int else allocation()
            launch(g0, g1, g2, stream_of(device), function, *head, *addresses, out.data_ptr(), *tail)
            return out

        return plan

    def plan(args, addresses):
        outputs = _allocate(allocations, args)
        everywhere = [*addresses, *[o.data_ptr() for o in outputs]]
        for bound, taken in zip(bounds, indices, strict=True):
            g0, g1, g2 = bound.grid
            stream = stream_of(bound.device)
            bound.launch(
                g0, g1, g2, stream, bound.function, *bound.head, *[everywhere[i] for i in taken], *bound.tail
            )
        return outputs[0] if single else tuple(outputs)

    return plan


def _relaunching_plan(
    allocations: list, single: bool, launches: Launches, slots: list, n_inputs: int
) -> Callable:
    """A plan under the interpreter: each launch again, on the new inputs and outputs."""

    def plan(args, addresses):
        outputs = _allocate(allocations, args)
        tensors = (*args[:n_inputs], *outputs)
        for launch, taken in zip(launches, slots, strict=True):
            new = [tensors[s.index].as_strided(s.shape, s.stride) for s in taken]
            launcher(launch.kernel)(
                launch.grid,
                (*new, *launch.args[len(new) :]),
                launch.constexprs,
                num_warps=launch.num_warps,
                num_stages=launch.num_stages,
            )
        return outputs[0] if single else tuple(outputs)

    return plan


# The op ---------------------------------------------------------------------------------


def _signatures(fn: Callable) -> tuple[inspect.Signature, inspect.Signature]:
    """``(public, registered)``: the signature of the op a user calls (``fn``'s, returning its
    outputs) and of the registered op (the same with its keyword-only parameters made
    positional, as a ``torch.library`` schema takes them), annotations evaluated."""
    hints = typing.get_type_hints(fn)
    returned = typing.get_args(hints.get("return"))
    if len(returned) != 2 or returned[1] != Launches:
        raise TypeError(f"{fn.__name__} must be annotated -> tuple[<its outputs' type>, Launches]")
    params = [
        p.replace(annotation=hints.get(p.name, p.annotation))
        for p in inspect.signature(fn).parameters.values()
    ]
    positional = [p.replace(kind=p.POSITIONAL_OR_KEYWORD) if p.kind is p.KEYWORD_ONLY else p for p in params]
    return (
        inspect.Signature(params, return_annotation=returned[0]),
        inspect.Signature(positional, return_annotation=returned[0]),
    )


def _launch_eagerly(launches: Launches, bind: bool) -> list:
    """Launch each of ``launches`` through its kernel's launcher; their bound launches when ``bind``."""
    return [
        launcher(kernel)(grid, args, constexprs, num_warps=num_warps, num_stages=num_stages, bind=bind)
        for kernel, grid, args, constexprs, num_warps, num_stages in launches
    ]


def _register(name: str, fn: Callable, eager: Callable, signature: inspect.Signature) -> Callable:
    """Register ``fn`` as the ``torch.library.triton_op`` ``name``; return the op
    (``torch.ops.<namespace>.<name>``). Its body calls ``eager`` (the public op) on plain
    tensors; on a trace's tensors it runs ``fn`` and launches each kernel through
    ``torch.library.wrap_triton`` (under the interpreter, directly, unless they are fake)."""
    keyword_only = [
        (p.name, p.default) for p in inspect.signature(fn).parameters.values() if p.kind is p.KEYWORD_ONLY
    ]
    n_positional = len(signature.parameters) - len(keyword_only)
    is_compiling = torch.compiler.is_compiling

    def body(*args, **kwargs):
        # The schema passes every argument, defaults included: those equal (in type and value)
        # to the default are left out, so that an eager call finds the public op's plans.
        for (option, default), value in zip(keyword_only, args[n_positional:], strict=False):
            if type(value) is not type(default) or value != default:
                kwargs[option] = value
        args = args[:n_positional]
        if not is_compiling() and all(type(t) in PLAIN_TENSORS for t in args if isinstance(t, torch.Tensor)):
            return eager(*args, **kwargs)
        result, launches = fn(*args, **kwargs)
        for kernel, grid, launch_args, constexprs, num_warps, num_stages in launches:
            _traced(kernel)(grid, launch_args, constexprs, num_warps=num_warps, num_stages=num_stages)
        return result

    body.__signature__ = signature
    body.__name__ = fn.__name__
    torch.library.triton_op(name, body, mutates_args=())
    namespace, short = name.split("::")
    return getattr(getattr(torch.ops, namespace), short)


def op(name: str, *, tensors: int = 1) -> Callable:
    """Decorate an op's function (see the module's text) whose first ``tensors`` positional
    arguments are its tensor inputs, and register it as the ``torch.library`` op ``name``
    (``"gpuperf::softmax"``). The function returns ``(outputs, launches)`` and is annotated
    ``-> tuple[<its outputs' type>, Launches]``.

    The decorated op is called as the function is and returns its outputs. It has the
    function's name, docstring and signature (returning the outputs), its plans as
    ``op.plans`` (:class:`~gpuperf.kernels._launch.Plans`), and the registered op as
    ``op.registered``.

    Raises:
        ValueError: ``tensors`` is not a positive int.
        TypeError: the function is not annotated as above.
    """
    if type(tensors) is not int or tensors < 1:
        raise ValueError(f"tensors must be a positive int, got {tensors!r}")

    def decorate(fn: Callable) -> Callable:
        public, registered_signature = _signatures(fn)
        plans = Plans()

        def run(args: tuple, kwargs: dict, key) -> object:
            """The function and its launches; their plan kept under ``key`` (None: none kept)."""
            result, launches = fn(*args, **kwargs)
            keep = key is not None and fast_path_enabled()
            bounds = _launch_eagerly(launches, bind=keep)
            if keep:
                options = (*args[tensors:], *kwargs.values())
                plans.put(key, make_plan(args[:tensors], options, result, launches, bounds))
            return result

        scope = {
            "is_compiling": torch.compiler.is_compiling,
            "options_key": options_key,
            "plans": plans,
            "run": run,
        }
        exec(compile(call_source(tensors), f"<eager call of {name}>", "exec"), scope)
        call = functools.update_wrapper(scope["call"], fn)
        scope["registered"] = _register(name, fn, call, registered_signature)
        call.__signature__ = public
        call.__annotations__ = {  # (what documentation tools read: the outputs, not the launches)
            **{p.name: p.annotation for p in public.parameters.values() if p.annotation is not p.empty},
            "return": public.return_annotation,
        }
        call.plans = plans
        call.registered = scope["registered"]
        return call

    return decorate


__all__ = [
    "Launch",
    "Launches",
    "call_source",
    "launcher",
    "layout_key",
    "make_plan",
    "op",
    "options_key",
]
