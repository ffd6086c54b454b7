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

**An op with a backward** (rms_norm, rope) is written as two functions of the same form, each
an :func:`op`, and no ``torch.autograd.Function``. The forward returns, after the outputs
the user gets, what the backward needs and cannot get from the inputs (rms_norm's
``rstd``, each row's reciprocal root mean square); the backward takes the gradients of the
user's outputs, then what the forward saved, and returns the gradients of the forward's
first tensor inputs, in order::

    @op("gpuperf::rms_norm_backward", tensors=4)
    def rms_norm_backward(grad_y, x, weight, rstd) -> tuple[tuple[Tensor, Tensor], Launches]:
        ...  # (dx, dweight) and the two launches that compute them

    @op("gpuperf::rms_norm", tensors=2, outputs=1, backward=rms_norm_backward,
        saves=lambda x, weight, eps, y, rstd: (x, weight, rstd))
    def rms_norm(x, weight, *, eps=1e-6, saving=True) -> tuple[tuple[Tensor, Tensor], Launches]:
        ...  # (y, rstd) and the launch

``outputs`` is how many of the forward's outputs the public op returns (here ``y``; by
default all); ``saves`` picks what the backward takes after the gradients, from the
registered op's arguments and all the forward's outputs. :func:`op` registers the pair
with ``torch.library.register_autograd``. Its ``setup_context`` keeps what ``saves``
picks (tensors through ``ctx.save_for_backward``) and marks the outputs past the public
ones non-differentiable. Its backward calls the backward op with a zero gradient where
the loss did not use a public output, gives the gradients it returns to the first inputs
and None to the others (a tensor among those that requires grad is refused with a
``ValueError``: rope's ``cos`` and ``sin``), and refuses to be differentiated again, as
``once_differentiable`` does.

The public op of such an op runs one of two ways. Inside ``torch.compile``, and wherever
autograd records the call (grad mode on and a tensor input that requires grad), it calls
the registered op and returns the public outputs: autograd records the backward, and a
compiled model trains in one graph. (Eagerly, the forward runs first as a check, launching
nothing, on the first recorded call of each key: the dispatcher would take ``eps=True`` as
1.0, or refuse a wrong type with a message of its own.) Any other call is the eager call
with its plans, as for an op without a backward, except that the forward is called with
``saving=False`` where it takes that keyword: it may then leave out what only the backward
needs (rms_norm stores no ``rstd`` and returns None in its place), and the plan is that of
the work left. The registered op's eager calls (autograd's, on plain tensors) keep plans
of their own, of the forward with everything saved (``op.registered_plans``; the same as
``op.plans`` where the public op returns every output and the forward takes no ``saving``,
as rope's does). The backward, an op itself, has plans in eager training too, wherever its
launches leave one (rope's; rms_norm's sums on a workspace and has none).

Where the other ops go (the next steps of the same decorator):

* **Optional tensors** (matmul's ``bias``): ``tensors`` names the tensor parameters instead
  of counting the leading ones; a None is keyed as None, a tensor as above.
* **Attention and SwiGLU's backward**, on the decorator above. Attention's forward returns
  ``(o, lse)`` with ``outputs=1`` and ``saves=lambda q, k, v, causal, scale, o, lse: (q,
  k, v, o, lse, causal, scale)`` (options are saved beside the tensors); its backward, one
  :func:`op`, returns three launches (``delta``, dK/dV, dQ) and needs workspaces (below)
  for a plan. SwiGLU's backward is matmuls around one elementwise kernel: ``backward`` may
  be a plain function that calls ops (the elementwise op, then the matmuls), annotated
  with the gradients it returns; it computes both gradients, since the backward is not
  told which inputs need one.
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
from torch.autograd.function import once_differentiable

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
        return run(args, kwargs, None){recorded}
    if plan is None:
        return run(args, kwargs, key)
    return plan(args, ({addresses},))
"""


#: What the eager call of an op with a backward adds after its key (``{requires}``: each
#: tensor input's ``requires_grad``): a call that autograd records runs the registered op,
#: which records the backward, and returns the public outputs (``record`` in its scope).
_RECORDED = """
    if is_grad_enabled() and ({requires}):
        return record(key, args, kwargs)"""


def call_source(tensors: int, *, recorded: bool = False) -> str:
    """The source of the eager call :func:`op` makes for an op of ``tensors`` tensor inputs;
    with ``recorded``, a call that autograd records runs the registered op instead
    (:data:`_RECORDED`: the public call of an op with a backward)."""
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
        recorded=_RECORDED.format(requires=" or ".join(f"{t}.requires_grad" for t in inputs))
        if recorded
        else "",
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
    # (After the launches' checks, which are cheaper: a call that launches on a workspace
    # finds it has no plan without trying an allocation per output and input.)
    allocations = [_allocation(out, inputs) for out in outputs]
    if None in allocations:
        return None
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
        (p.name, p.default)
        for p in inspect.signature(fn).parameters.values()
        if p.kind is p.KEYWORD_ONLY and p.name in signature.parameters  # (not a forward's `saving`)
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


def op(
    name: str,
    *,
    tensors: int = 1,
    backward: Callable | None = None,
    saves: Callable | None = None,
    outputs: int | None = None,
) -> Callable:
    """Decorate an op's function (see the module's text) whose first ``tensors`` positional
    arguments are its tensor inputs, and register it as the ``torch.library`` op ``name``
    (``"gpuperf::softmax"``). The function returns ``(outputs, launches)`` and is annotated
    ``-> tuple[<its outputs' type>, Launches]``.

    The decorated op is called as the function is and returns its outputs. It has the
    function's name, docstring and signature (returning the outputs), its plans as
    ``op.plans`` (:class:`~gpuperf.kernels._launch.Plans`), and the registered op as
    ``op.registered``.

    An op with a backward also takes (the module's text, "A backward"):

    * ``backward``: the op that computes the gradients (itself an :func:`op`), called as
      ``backward(*grads, *saves(...))`` and returning the gradients of the function's first
      tensor inputs, one each, in order;
    * ``saves``: what ``backward`` takes after the gradients, as a function of the
      registered op's arguments (keyword-only ones too, by position) and of all the
      function's outputs: ``lambda x, weight, eps, y, rstd: (x, weight, rstd)``;
    * ``outputs``: how many of the function's first outputs the public op returns (by
      default, all); the others are for the backward only.

    Raises:
        ValueError: ``tensors`` is not a positive int, or ``outputs`` not a positive int.
        TypeError: the function is not annotated as above; ``backward`` or ``saves`` is
            not callable, or one is given without the other, or ``outputs`` without them.
    """
    if type(tensors) is not int or tensors < 1:
        raise ValueError(f"tensors must be a positive int, got {tensors!r}")
    if backward is not None or saves is not None or outputs is not None:
        _check_backward(backward, saves, outputs)

    def decorate(fn: Callable) -> Callable:
        if backward is not None:
            return _op_with_backward(name, fn, tensors, backward, saves, outputs)
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


# Ops with a backward ---------------------------------------------------------------------


def _check_backward(backward, saves, outputs) -> None:
    """Refuse :func:`op`'s backward arguments where they cannot describe a backward."""
    if not callable(backward) or not callable(saves):
        raise TypeError(
            "backward and saves go together, each callable: the backward op and what it takes "
            f"after the gradients; got backward={backward!r}, saves={saves!r}"
        )
    if outputs is not None and (type(outputs) is not int or outputs < 1):
        raise ValueError(f"outputs must be a positive int, got {outputs!r}")


def _n_outputs(annotation) -> int:
    """How many outputs a function annotated as returning ``annotation`` returns (a tuple's
    items, else one)."""
    return len(typing.get_args(annotation)) if typing.get_origin(annotation) is tuple else 1


def _n_gradients(backward: Callable) -> int:
    """How many gradients ``backward`` returns, read off its return annotation.

    Raises:
        TypeError: ``backward`` has no return annotation.
    """
    returned = typing.get_type_hints(backward).get("return")
    if returned is None:
        raise TypeError(f"backward {backward.__name__} must be annotated with the gradients it returns")
    return _n_outputs(returned)


def _check_saves(saves: Callable, n_arguments: int, name: str) -> None:
    """Refuse a ``saves`` that cannot take the registered op's arguments and outputs."""
    try:
        inspect.signature(saves).bind(*range(n_arguments))
    except TypeError:
        raise TypeError(
            f"saves of {name} must take the registered op's {n_arguments} arguments and outputs, "
            f"in order; got {inspect.signature(saves)}"
        ) from None


def _without(signature: inspect.Signature, parameter: str) -> inspect.Signature:
    return signature.replace(parameters=[p for p in signature.parameters.values() if p.name != parameter])


def _saving(fn: Callable) -> bool:
    """Whether ``fn`` takes ``saving`` (keyword-only, default True): called with
    ``saving=False``, it may leave out the outputs only the backward takes.

    Raises:
        TypeError: ``fn`` takes a ``saving`` of another kind or default.
    """
    parameter = inspect.signature(fn).parameters.get("saving")
    if parameter is None:
        return False
    if parameter.kind is not parameter.KEYWORD_ONLY or parameter.default is not True:
        raise TypeError(f"{fn.__name__}: saving must be keyword-only, default True")
    return True


def _public(n_public: int, n_outputs: int) -> Callable | None:
    """The function that takes the public outputs from all of a function's, or None where
    they are all of them."""
    if n_public == n_outputs:
        return None
    if n_public == 1:
        return lambda result: result[0]
    return lambda result: tuple(result[:n_public])


def _runner(fn: Callable, tensors: int, plans: Plans) -> Callable:
    """``run(args, kwargs, key)`` of the registered op's eager call: ``fn``, saving, and its
    launches, their plan kept under ``key`` (None: none kept), returning all its outputs."""

    def run(args: tuple, kwargs: dict, key) -> object:
        result, launches = fn(*args, **kwargs)
        keep = key is not None and fast_path_enabled()
        bounds = _launch_eagerly(launches, bind=keep)
        if keep:
            options = (*args[tensors:], *kwargs.values())
            plans.put(key, make_plan(args[:tensors], options, result, launches, bounds))
        return result

    return run


def _public_runner(
    fn: Callable, tensors: int, plans: Plans, public: Callable | None, saving: bool, record: Callable
) -> Callable:
    """``run(args, kwargs, key)`` of the public eager call of an op with a backward: ``fn``
    (with ``saving=False`` where it takes it) and its launches, returning the public outputs
    (``public`` of all, None: all), their plan kept under ``key``. Where no key could be
    made (tensors passed by keyword, say), a call that autograd records runs ``record``."""
    is_grad_enabled = torch.is_grad_enabled

    def run(args: tuple, kwargs: dict, key) -> object:
        if key is None and is_grad_enabled():
            if any(isinstance(v, torch.Tensor) and v.requires_grad for v in (*args, *kwargs.values())):
                return record(None, args, kwargs)
        result, launches = fn(*args, **kwargs, saving=False) if saving else fn(*args, **kwargs)
        keep = key is not None and fast_path_enabled()
        bounds = _launch_eagerly(launches, bind=keep)
        if public is None:
            if keep:
                options = (*args[tensors:], *kwargs.values())
                plans.put(key, make_plan(args[:tensors], options, result, launches, bounds))
            return result
        kept = public(result)
        if keep:
            options = (*args[tensors:], *kwargs.values())
            plans.put(key, _public_plan(args[:tensors], options, result, kept, public, launches, bounds))
        return kept

    return run


def _public_plan(inputs, options, result, kept, public: Callable, launches, bounds) -> Callable | None:
    """The plan of a public call that returned ``kept`` of the function's ``result``: made on
    ``kept`` where the function left the others out (None), on all of them (and then taking
    the public ones) where it made them all, and none where it made some."""
    left = [out is None for out in result]
    if all(left[_n_kept(kept) :]):
        return make_plan(inputs, options, kept, launches, bounds)
    if any(left):
        return None
    plan = make_plan(inputs, options, result, launches, bounds)
    if plan is None:
        return None
    return lambda args, addresses: public(plan(args, addresses))


def _n_kept(kept) -> int:
    return 1 if isinstance(kept, torch.Tensor) else len(kept)


#: Most keys of recorded calls whose arguments an op keeps as checked, as :class:`Plans`
#: keeps plans: when full, it starts again.
_CHECKED_KEYS = 1024

#: Stands in :func:`_register_autograd`'s saved arguments for a tensor (kept by
#: ``ctx.save_for_backward``).
_SAVED_TENSOR = object()


def _register_autograd(
    name: str,
    signature: inspect.Signature,
    tensors: int,
    n_public: int,
    backward: Callable,
    saves: Callable,
) -> None:
    """Register the backward of the op ``name`` (whose registered op has ``signature``, its
    first ``tensors`` parameters the tensor inputs, its first ``n_public`` outputs the
    public ones) with ``torch.library.register_autograd``.

    ``setup_context`` keeps ``saves(*inputs, *outputs)`` (tensors through
    ``ctx.save_for_backward``), marks the outputs past the public ones non-differentiable,
    and refuses a tensor input that requires grad but gets no gradient. The backward calls
    ``backward(*grads, *saved)``, with a zero gradient where autograd passes none (an output
    the loss does not use), and gives the gradients it returns to the first inputs, None to
    the others. It is once differentiable: differentiating it again raises, as
    ``torch.autograd.function.once_differentiable`` does."""
    parameters = list(signature.parameters)
    n_grads = _n_gradients(backward)
    short = name.split("::")[1]
    differentiable, others = parameters[:n_grads], parameters[n_grads:tensors]
    them = "them" if len(others) > 1 else "it"
    refusal = (
        f"{short} differentiates with respect to {' and '.join(differentiable)} only: "
        f"{' and '.join(others)} must not require grad (detach {them}, or build {them} under "
        "torch.no_grad())"
    )
    n_inputs = len(parameters)

    def setup_context(ctx, inputs, output) -> None:
        outputs = (output,) if isinstance(output, torch.Tensor) else tuple(output)
        if any(ctx.needs_input_grad[n_grads:tensors]):
            raise ValueError(refusal)
        if len(outputs) > n_public:
            ctx.mark_non_differentiable(*outputs[n_public:])
        ctx.set_materialize_grads(False)  # zeros made below, for the public outputs only
        ctx.like = [(out.shape, out.dtype, out.device) for out in outputs[:n_public]]
        saved = saves(*inputs, *outputs)
        ctx.save_for_backward(*[v for v in saved if isinstance(v, torch.Tensor)])
        ctx.saved = [_SAVED_TENSOR if isinstance(v, torch.Tensor) else v for v in saved]

    @once_differentiable
    def backward_of(ctx, *grads):
        grads = [
            torch.zeros(shape, dtype=dtype, device=device) if grad is None else grad
            for grad, (shape, dtype, device) in zip(grads, ctx.like, strict=False)
        ]
        tensors_saved = iter(ctx.saved_tensors)
        saved = [next(tensors_saved) if v is _SAVED_TENSOR else v for v in ctx.saved]
        result = backward(*grads, *saved)
        result = (result,) if isinstance(result, torch.Tensor) else tuple(result)
        return (*result, *[None] * (n_inputs - len(result)))

    torch.library.register_autograd(name, backward_of, setup_context=setup_context)


def _op_with_backward(
    name: str, fn: Callable, tensors: int, backward: Callable, saves: Callable, outputs: int | None
) -> Callable:
    """:func:`op` for an op with a backward: two eager calls, each with its plans.

    * The registered op's (``op.registered_plans``): ``fn`` as it is, saving, all its outputs.
    * The public op's (``op.plans``): ``fn`` with ``saving=False`` where it takes it, the
      public outputs; a call that autograd records runs the registered op instead
      (:data:`_RECORDED`), and so does a call inside ``torch.compile``.

    Where the public outputs are all the outputs and ``fn`` takes no ``saving`` (rope), the
    two calls do the same work and share one set of plans.
    """
    saving = _saving(fn)
    public_signature, registered_signature = _signatures(fn)
    if saving:
        public_signature = _without(public_signature, "saving")
        registered_signature = _without(registered_signature, "saving")
    returned = registered_signature.return_annotation
    n_outputs = _n_outputs(returned)
    n_public = n_outputs if outputs is None else outputs
    if n_public > n_outputs:
        raise ValueError(f"outputs must be at most the {n_outputs} that {fn.__name__} returns, got {outputs}")
    if n_public < n_outputs:
        kept = typing.get_args(returned)[:n_public]
        public_signature = public_signature.replace(
            return_annotation=kept[0] if n_public == 1 else tuple[kept]
        )
    public = _public(n_public, n_outputs)
    if _n_gradients(backward) > tensors:
        raise TypeError(f"backward {backward.__name__} returns more gradients than {name} has tensor inputs")
    _check_saves(saves, len(registered_signature.parameters) + n_outputs, name)

    plans = Plans()
    # Where the public op returns what the registered one does, both keep the same plans.
    registered_plans = plans if public is None and not saving else Plans()
    eager, eager_scope = _eager_call(
        name, fn, tensors, _runner(fn, tensors, registered_plans), registered_plans
    )
    torch_op = eager_scope["registered"] = _register(name, fn, eager, registered_signature)
    _register_autograd(name, registered_signature, tensors, n_public, backward, saves)

    def registered_public(*args, **kwargs):
        """The registered op, returning the public outputs (what ``torch.compile`` sees)."""
        result = torch_op(*args, **kwargs)
        return result if public is None else public(result)

    checked: dict = {}

    def record(key, args: tuple, kwargs: dict):
        """A call that autograd records: the registered op, after the function's checks on the
        first call of ``key`` (the function runs as the eager call would, launching nothing),
        since the dispatcher converts a wrong argument (``eps=True``) or refuses it with a
        message of its own."""
        if key is None or key not in checked:
            fn(*args, **kwargs, saving=False) if saving else fn(*args, **kwargs)
            if key is not None:
                if len(checked) >= _CHECKED_KEYS:
                    checked.clear()
                checked[key] = True
        return registered_public(*args, **kwargs)

    run = _public_runner(fn, tensors, plans, public, saving, record)
    call, scope = _eager_call(name, fn, tensors, run, plans, recorded=True)
    scope["registered"] = registered_public
    scope["record"] = record
    call.__signature__ = public_signature
    call.__annotations__ = {  # (what documentation tools read: the outputs, not the launches)
        **{p.name: p.annotation for p in public_signature.parameters.values() if p.annotation is not p.empty},
        "return": public_signature.return_annotation,
    }
    call.plans = plans
    call.registered_plans = registered_plans
    call.registered = torch_op
    call.backward = backward
    return call


def _eager_call(
    name: str, fn: Callable, tensors: int, run: Callable, plans: Plans, *, recorded: bool = False
):
    """``(call, scope)``: an eager call of ``fn`` (:func:`call_source`) that runs ``run``
    where it has no plan; ``scope["registered"]`` is to be set to what it calls inside
    ``torch.compile`` (and, with ``recorded``, where autograd records the call)."""
    scope = {
        "is_compiling": torch.compiler.is_compiling,
        "is_grad_enabled": torch.is_grad_enabled,
        "options_key": options_key,
        "plans": plans,
        "run": run,
    }
    source = call_source(tensors, recorded=recorded)
    exec(compile(source, f"<eager call of {name}{' (public)' if recorded else ''}>", "exec"), scope)
    return functools.update_wrapper(scope["call"], fn), scope


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
