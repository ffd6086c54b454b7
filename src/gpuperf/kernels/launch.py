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
  launches through :class:`Launcher` (compiled binaries kept by
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
it, not a copy), one of the returned outputs (a whole fresh allocation, which the plan
allocates again) or a declared workspace, and each launch takes its tensors (and
descriptors) first. A call that copies an input (``.contiguous()`` of a strided tensor),
launches nothing or has a tensor among its other arguments leaves no plan, and each such
call runs the function. Plans are off, and every launch goes through ``kernel[grid]``, under
:func:`uncached` and while a launch hook (Triton's profiler,
proton) is installed. The function must decide its launches from the inputs' layout and
its other arguments only, never from the data, which a plan does not read.

The eager call is the op's host time, paid on every call of a model's step, so it is
written for speed: :func:`op` writes it out for the op's number of tensor inputs (the key
of :func:`layout_key` with its loop unrolled, :func:`call_source`), and a plan is a closure
that makes one allocation per output and one C call per launch.

What the decorator also takes, for the matmul family and the ops with a backward:

* **Named and optional tensor inputs** (matmul's keyword-only ``bias``): ``tensors`` names
  the tensor parameters instead of counting the leading ones (``@op("gpuperf::matmul",
  tensors=("a", "b", "bias"))``), and the eager call is written with the function's own
  signature (:func:`named_call_source`). A None given for a tensor whose default is None is
  keyed as None.
* **Launch configs** (``config: MatmulConfig | None``): a parameter annotated with a
  dataclass of ints, bools and strs (each may be None: ``FA3Config.num_stages: int | None``)
  reaches the registered op as its fields, one ``int?``, ``bool?`` or ``str?`` schema
  parameter each, all None for None (a schema takes no dataclass).
* **TMA descriptors** (the persistent matmul, FP8 and SwiGLU): a :class:`Launch` may take host
  tensor descriptors (Triton's ``TensorDescriptor``, Gluon's) among its leading arguments,
  each made on an input or an output. :class:`DescriptorLauncher` keys them by dtype and
  block shape, as Triton compiles (and a Gluon descriptor's layout), and the plan makes
  each again on the new address (:class:`Described`, the layout checked once). A graph
  cannot hold a host descriptor (``wrap_triton`` traces none in Triton 3.6 and torch 2.11),
  so while torch.compile traces (:func:`~gpuperf.kernels.tma.tracing`:
  ``torch.compiler.is_compiling()``, or the inputs are fake tensors), an op launches its
  computed-pointer kernel (SwiGLU its TMA kernel that makes its descriptors on the
  device), and a launch that takes a host descriptor there is refused with a ``TypeError``.
* **Workspaces** (split-K's partial sums): the function lists a :class:`Workspace` (a
  buffer its launches use that is not an output) before the launches that take it, and the
  plan allocates it again on every call, zeroed where the function zeroed it.

**An op with a backward** (rms_norm, rope, attention) is written as two functions of the same form, each
an :func:`op`, and no ``torch.autograd.Function``. The forward returns, after the outputs
the user gets, what the backward needs and cannot get from the inputs (rms_norm's
``rstd``, each row's reciprocal root mean square); the backward takes the gradients of the
user's outputs, then what the forward saved, and returns the gradients of the forward's
first tensor inputs (in the order ``tensors`` counts or names them)::

    @op("gpuperf::rms_norm_backward", tensors=4)
    def rms_norm_backward(grad_y, x, weight, rstd) -> tuple[tuple[Tensor, Tensor], Launches]:
        ...  # (dx, dweight) and the two launches that compute them

    @op("gpuperf::rms_norm", tensors=2, outputs=1, backward=rms_norm_backward,
        saves=lambda x, weight, eps, y, rstd: (x, weight, rstd))
    def rms_norm(x, weight, *, eps=1e-6, saving=True) -> tuple[tuple[Tensor, Tensor], Launches]:
        ...  # (y, rstd) and the launch

``outputs`` is how many of the forward's outputs the public op returns (here ``y``; by
default all); ``saves`` picks what the backward takes after the gradients, from the
registered op's arguments (a launch config as its fields) and all the forward's outputs.
:func:`op` registers the pair with ``torch.library.register_autograd``. Its
``setup_context`` keeps what ``saves`` picks (tensors through ``ctx.save_for_backward``)
and marks the outputs past the public ones non-differentiable. Its backward calls the
backward op with a zero gradient where the loss did not use a public output, gives the
gradients it returns to the first tensor inputs and None to the other inputs (a tensor
among those that requires grad is refused with a ``ValueError``: rope's ``cos`` and
``sin``), and refuses to be differentiated again, as ``once_differentiable`` does. Either
op may take named tensors, configs, descriptors and workspaces as above: the backward is
an op like any other.

**A call that autograd records** (grad mode on and a tensor input that requires grad)
takes no plan: the eager call hands it to the op's ``record``, the same rule for counted
and named tensors (:data:`_RECORDED`, :data:`_NAMED_RECORDED`). For an op with a backward,
``record`` runs the registered op's work and returns the public outputs, so autograd records
the backward (the forward runs first as a check, launching nothing, on the first recorded
call of each key: the dispatcher would take ``eps=True`` as 1.0, or refuse a wrong type with
a message of its own). An op of counted tensors runs it as one ``torch.autograd.Function``
(:func:`_recorded_eagerly`) with the registered backward, which skips the dispatcher's
layers of Python; an op of named tensors calls the registered op. Inside ``torch.compile``
the public op calls the registered op, and a compiled model trains in one graph. For an op
without a backward, ``record`` runs the function without a plan: autograd records none of
its launches either way, but its checks run (matmul_splitk refuses an input that requires
grad; a plan, keyed on the layout, would not). An op of counted tensors without a backward
does not ask, so that its plan path does no more work per call: none of those functions
looks at ``requires_grad``, and the plan returns what the function would.

Any other call of an op with a backward is the eager call with its plans, except that the
forward is called with ``saving=False`` where it takes that keyword: it may then leave out
what only the backward needs (rms_norm stores no ``rstd`` and returns None in its place),
and the plan is that of the work left. The registered op's eager calls (autograd's, on
plain tensors) keep plans of their own, of the forward with everything saved
(``op.registered_plans``; the same as ``op.plans`` where the public op returns every output
and the forward takes no ``saving``, as rope's does). The backward, an op itself, has plans
in eager training too, wherever its launches leave one.

Attention's forward returns ``(o, lse)`` with ``outputs=1`` and ``saves=lambda q, k, v,
causal, scale, o, lse: (q, k, v, o, lse, causal, scale)``; its backward is one :func:`op` of
three launches (``delta`` as a :class:`Workspace`, dK/dV, dQ). Decode attention launches its
split kernel and, with several splits, the combine, with the splits' partial outputs and
log-sum-exps as two workspaces. SwiGLU's backward is matmuls around one elementwise kernel:
``backward`` is a plain function that calls ops (:func:`~gpuperf.kernels.swiglu.swiglu_backward`),
annotated with the gradients it returns.

**The Gluon ops** (``kernels/gluon/``: ``matmul_fp8_promoted``, ``attention_fa3``) are ops
like the others: ``kernel[grid](...)`` compiles a ``@gluon.jit`` kernel into a binary that the
same C launcher runs, so a :class:`Launch` takes one as it is (:func:`keyword_launch` makes it
from the keyword arguments a Gluon kernel is launched with; a kernel that declares
``num_warps`` as its last constexpr gets it there). Their kernels take host descriptors only
and have no computed-pointer twin, so while torch.compile traces, their functions raise a
``RuntimeError`` that says so, and they run eagerly.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import itertools
import types
import typing
from collections.abc import Callable, Sequence
from typing import NamedTuple

import torch
import triton
from torch.autograd.function import once_differentiable
from triton import knobs
from triton.tools.tensor_descriptor import TensorDescriptor

from gpuperf._runtime import is_interpreter
from gpuperf.kernels.tma import tracing

# Launching a compiled kernel -----------------------------------------------------------
#
# ``kernel[grid](*args)`` does a lot of Python on every call: it binds the arguments to the
# signature, computes Triton's specialization key, turns the options into a string for a
# dictionary lookup, checks the kernel's globals, reads the launch hooks and builds launch
# metadata. On the virtual machines these docs measure on, that came to about 27 us per
# launch of the softmax kernel (``torch.softmax`` costs 8-17 us), before the op's own checks.
#
# :class:`Launcher` keeps the compiled kernels it has seen in a dictionary keyed by exactly
# what Triton specializes on, computed in a few lines of Python:
#
# * every tensor: its dtype and whether its address is a multiple of 16 bytes;
# * every non-constexpr int: whether it equals 1, whether it is a multiple of 16, and
#   whether it fits in 32 bits (Triton passes it as i32 or i64);
# * every constexpr: its value; and ``num_warps``, ``num_stages`` and the device.
#
# The first call with a new key goes through ``kernel[grid]`` (which compiles, or finds the
# binary in Triton's cache, and launches) and keeps the compiled kernel it returns; later
# calls hand the arguments straight to its C launcher. So a cached binary never runs on
# arguments that Triton would have specialized differently. While a launch hook is installed
# (Triton's profiler, proton, adds one), under :func:`uncached` and under the interpreter,
# every call takes ``kernel[grid]``.

_I32_MIN, _I32_MAX = -(2**31), 2**31 - 1

#: Triton versions whose C launcher :class:`Launcher` calls directly (its argument
#: layout is internal to Triton); other versions go through ``CompiledKernel.run``.
DIRECT_LAUNCH_TRITON = ("3.6.",)


#: Set to False by :func:`uncached`: every launch then goes through ``kernel[grid]``.
CACHE_ENABLED = True


@contextlib.contextmanager
def uncached():
    """Launch through ``kernel[grid]`` (Triton's own launcher) inside this block, with no plans.

    The host-overhead benchmark uses it to measure what the launch cache and the plans save,
    in the same run as the ops' own eager calls.
    """
    global CACHE_ENABLED
    CACHE_ENABLED = False
    try:
        yield
    finally:
        CACHE_ENABLED = True


def fast_path_enabled() -> bool:
    """False under :func:`uncached` or while a launch hook (proton, say) is installed."""
    return CACHE_ENABLED and not knobs.runtime.launch_enter_hook.calls


def _int_key(value: int) -> int:
    """The part of Triton's specialization that depends on an int argument's value."""
    if value == 1:
        return 1
    return (2 if value % 16 == 0 else 0) | (0 if _I32_MIN <= value <= _I32_MAX else 4)


class Launcher:
    """Launch ``kernel`` (a ``@triton.jit`` or ``@gluon.jit`` function) through a cache of
    compiled binaries.

    Call it as ``launcher(grid, runtime, constexprs, num_warps=..., num_stages=...)``:
    ``runtime`` holds the kernel's tensor and scalar arguments and ``constexprs`` its
    compile-time ones, each in signature order (the kernels of this package declare their
    constexprs last). A kernel whose last parameter is the constexpr ``num_warps`` (a Gluon
    kernel that lays its registers out for its warps) gets ``num_warps`` there: leave it out
    of ``constexprs``.

    Raises:
        ValueError: the kernel declares a constexpr parameter before a runtime one.
    """

    def __init__(self, kernel):
        self.kernel = kernel
        self.interpreted = is_interpreter()
        self._compiled: dict[tuple, tuple] = {}
        # Under the interpreter the kernel is an InterpretedFunction: no params, no binaries.
        params = getattr(kernel, "params", ())
        flags = [p.is_constexpr for p in params]
        if flags and flags != sorted(flags):
            raise ValueError(f"{kernel.__name__}: Launcher needs the constexpr parameters declared last")
        # (Triton binds num_warps=... to such a parameter; its C launcher takes it last.)
        self._warps_last = bool(params) and params[-1].name == "num_warps" and params[-1].is_constexpr
        self._direct = triton.__version__.startswith(DIRECT_LAUNCH_TRITON)

    def key(self, runtime: tuple, constexprs: tuple, num_warps: int, num_stages: int, device: int) -> tuple:
        """The cache key of one launch: what Triton would specialize the binary on."""
        return self._key_and_args(runtime, constexprs, num_warps, num_stages, device)[0]

    @staticmethod
    def _key_and_args(runtime, constexprs, num_warps, num_stages, device) -> tuple[tuple, list]:
        # One pass over the arguments builds the key and the launch arguments, with
        # each tensor replaced by its address: the C launcher then skips its own
        # data_ptr() call and pointer query (a driver call) per tensor.
        key = [constexprs, num_warps, num_stages, device]
        args = []
        for value in runtime:
            if type(value) is int:
                if value == 1:
                    key.append(1)
                else:
                    key.append((2 if value % 16 == 0 else 0) | (0 if _I32_MIN <= value <= _I32_MAX else 4))
                args.append(value)
            elif isinstance(value, torch.Tensor):
                address = value.data_ptr()
                key.append(value.dtype)
                key.append(address % 16 == 0)
                args.append(address)
            else:  # floats, bools, None: Triton specializes on the type only
                key.append(type(value))
                args.append(value)
        return tuple(key), args

    def _constants(self, constexprs: tuple, num_warps: int) -> tuple:
        """What the C launcher takes after the runtime arguments: the constexprs (and
        ``num_warps`` where the kernel declares it last)."""
        return (*constexprs, num_warps) if self._warps_last else tuple(constexprs)

    def __call__(
        self,
        grid: tuple,
        runtime: tuple,
        constexprs: tuple,
        *,
        num_warps: int = 4,
        num_stages: int = 3,
        bind: bool = False,
    ):
        """Launch; with ``bind=True`` also return a :class:`Bound` launch for the next
        calls with the same arguments but other tensors (None where there can be none)."""
        if self.interpreted or not fast_path_enabled():
            self.kernel[grid](*runtime, *constexprs, num_warps=num_warps, num_stages=num_stages)
            return None
        device = torch._C._cuda_getDevice()
        key, args = self._key_and_args(runtime, constexprs, num_warps, num_stages, device)
        entry = self._compiled.get(key)
        grid = (grid[0], grid[1] if len(grid) > 1 else 1, grid[2] if len(grid) > 2 else 1)
        if entry is None:
            compiled = self.kernel[grid](*runtime, *constexprs, num_warps=num_warps, num_stages=num_stages)
            entry = self._compiled[key] = self._entry(compiled)
            if not bind:
                return None
        else:
            launch, function, head = entry
            stream = torch._C._cuda_getCurrentRawStream(device)
            launch(*grid, stream, function, *head, *args, *self._constants(constexprs, num_warps))
        if not bind:
            return None
        n_tensors = next((i for i, v in enumerate(runtime) if not isinstance(v, torch.Tensor)), len(runtime))
        if any(isinstance(v, torch.Tensor) for v in runtime[n_tensors:]):
            return None  # a Bound takes the tensors' addresses first
        return Bound(entry, grid, device, tuple(args[n_tensors:]) + self._constants(constexprs, num_warps))

    def _entry(self, compiled) -> tuple:
        """``(launch, function, head)``: ``launch(*grid, stream, function, *head, *args)`` runs it."""
        run = compiled.run
        # None, None, None after the metadata: launch metadata and the enter and exit
        # hooks, none installed. The C launcher is called directly when the kernel
        # needs no scratch memory (which CudaLauncher.__call__ would allocate).
        if (
            self._direct
            and getattr(run, "global_scratch_size", 1) == 0
            and getattr(run, "profile_scratch_size", 1) == 0
        ):
            head = (run.launch_cooperative_grid, run.launch_pdl, None, None, compiled.packed_metadata)
            return run.launch, compiled.function, (*head, None, None, None)
        return run, compiled.function, (compiled.packed_metadata, None, None, None)


class Bound:
    """One launch with everything fixed but the addresses of the kernel's leading tensors:
    what a plan calls for each of its launches (through its fields, inlined)."""

    __slots__ = ("device", "function", "grid", "head", "launch", "tail")

    def __init__(self, entry: tuple, grid: tuple, device: int, tail: tuple):
        self.launch, self.function, self.head = entry
        self.grid, self.device, self.tail = grid, device, tail

    def __call__(self, *addresses: int) -> None:
        stream = torch._C._cuda_getCurrentRawStream(self.device)
        self.launch(*self.grid, stream, self.function, *self.head, *addresses, *self.tail)


class Plans:
    """The plans of one op, by the key of the calls they were made for (:func:`layout_key`).

    Off (``get`` returns None) under :func:`uncached` and while a launch hook is
    installed, like the launch cache itself. Holds at most ``maxsize`` plans and
    starts again when full, so a program with ever-changing shapes cannot grow it.
    """

    def __init__(self, maxsize: int = 1024):
        self.maxsize = maxsize
        self._plans: dict = {}

    def get(self, key):
        if CACHE_ENABLED and not knobs.runtime.launch_enter_hook.calls:
            return self._plans.get(key)
        return None

    def clear(self) -> None:
        self._plans.clear()

    def __len__(self) -> int:
        return len(self._plans)

    def put(self, key, plan) -> None:
        if plan is None:
            return
        if len(self._plans) >= self.maxsize:
            self._plans.clear()
        self._plans[key] = plan


def traced(kernel):
    """A launch function for the bodies of the ``torch.library`` ops (called as a
    :class:`Launcher` is).

    ``torch.library.wrap_triton`` lets ``torch.compile`` see the kernel inside the
    op and schedule it in its graph; outside compilation it launches through
    ``kernel[grid]``. Under the interpreter (whose kernels ``wrap_triton`` does
    not accept) the op launches directly, except while ``torch.compile`` traces it
    with fake tensors (shapes without data): then there is nothing to compute.
    """
    if is_interpreter():
        from torch._subclasses.fake_tensor import is_fake

        direct = Launcher(kernel)

        def launch_unless_tracing(grid, runtime, constexprs, *, num_warps=4, num_stages=3, bind=False):
            if not any(isinstance(p, torch.Tensor) and is_fake(p) for p in runtime):
                direct(grid, runtime, constexprs, num_warps=num_warps, num_stages=num_stages)

        return launch_unless_tracing
    from torch.library import wrap_triton

    wrapped = wrap_triton(kernel)

    def launch(grid, runtime, constexprs, *, num_warps=4, num_stages=3, bind=False) -> None:
        wrapped[grid](*runtime, *constexprs, num_warps=num_warps, num_stages=num_stages)

    return launch


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


def keyword_launch(kernel, grid: tuple, args: tuple, constants: dict) -> Launch:
    """The :class:`Launch` of ``kernel[grid](*args, **constants)``: ``constants`` names the
    kernel's constexprs (all of those after ``args``, put in the kernel's order) and may set
    ``num_warps`` and ``num_stages`` (Triton's defaults, 4 and 3, otherwise). A kernel that
    declares ``num_warps`` as its last constexpr (a Gluon kernel laying its registers out for
    its warps) takes it from there, as :class:`Launcher` passes it.

    Raises:
        KeyError: a constexpr of the kernel is not in ``constants``.
    """
    names = [name for name in kernel.arg_names[len(args) :] if name not in ("num_warps", "num_stages")]
    return Launch(
        kernel,
        grid,
        args,
        tuple(constants[name] for name in names),
        constants.get("num_warps", 4),
        constants.get("num_stages", 3),
    )


class Workspace(NamedTuple):
    """A buffer an op's launches use that is not one of its outputs (split-K's float32 partial
    sums), listed among the launches before the first that takes it: ``Workspace(buffer)`` for
    one the function made with ``torch.empty``, ``Workspace(buffer, zeroed=True)`` for one it
    made with ``torch.zeros``. A plan allocates it again on every call, zeroed where the
    function zeroed it, and holds it until its launches are queued."""

    buffer: torch.Tensor
    zeroed: bool = False


#: What an op's function returns besides its outputs: its launches (and the workspaces they
#: use), in order.
Launches = Sequence[Launch | Workspace]

_LAUNCHERS: dict = {}
_TRACED: dict = {}


def launcher(kernel, args: tuple = ()) -> Launcher:
    """The :class:`Launcher` of ``kernel``, one for every op that launches it:
    a :class:`DescriptorLauncher` where its first launch's ``args`` hold a tensor descriptor."""
    found = _LAUNCHERS.get(kernel)
    if found is None:
        kind = DescriptorLauncher if any(map(is_descriptor, args)) else Launcher
        found = _LAUNCHERS[kernel] = kind(kernel)
    return found


def _traced(kernel) -> Callable:
    found = _TRACED.get(kernel)
    if found is None:
        found = _TRACED[kernel] = traced(kernel)
    return found


# The key of a call ----------------------------------------------------------------------

#: Tensor types whose metadata a key holds in full, and whose plans a call may take: plain
#: tensors and a model's weights (a subclass may hold more than its metadata says).
PLAIN_TENSORS = (torch.Tensor, torch.nn.Parameter)


def option_key(value) -> tuple:
    """What a plan depends on of one argument that is not a tensor input: its type and value,
    a tuple's item by item (``(64, 4, True)`` is not ``(64, 4, 1)``)."""
    if type(value) is tuple:
        return (tuple, *map(option_key, value))
    return (type(value), value)


def options_key(others: tuple, kwargs: dict) -> tuple:
    """The part of a key for the other positional arguments ``others`` and the keyword ones,
    as given: two items, each of :func:`option_key` values (a type and
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
        if tracing(*args, *kwargs.values()):  # a trace's tensors (no address): the graph's op
            return registered(*args, **kwargs)
        return run(args, kwargs, None){recorded}
    if plan is None:
        return run(args, kwargs, key)
    return plan(args, ({addresses},))
"""


#: What the eager call adds after its key where it asks whether autograd records the call
#: (``{requires}``: each tensor input's ``requires_grad``): then it runs ``record`` (in its
#: scope): for an op with a backward, the registered op, which records the backward.
_RECORDED = """
    if is_grad_enabled() and ({requires}):
        return record(key, args, kwargs)"""


def call_source(tensors: int, *, recorded: bool = False) -> str:
    """The source of the eager call :func:`op` makes for an op of ``tensors`` tensor inputs;
    with ``recorded`` (the public call of an op with a backward), a call that autograd
    records runs ``record`` instead (:data:`_RECORDED`)."""
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
        if t is None:  # an optional input not given
            continue
        like = torch.empty_like(t)
        if (like.shape, like.stride(), like.dtype, like.device) == layout:
            return i
    return functools.partial(torch.empty_strided, out.shape, out.stride(), dtype=out.dtype, device=out.device)


def make_plan(inputs: tuple, options: tuple, result, launches: Launches, bounds: list) -> Callable | None:
    """The plan of a call with tensor inputs ``inputs`` (None for an optional one not given) and
    other arguments ``options`` that returned ``result`` after launching ``launches`` (whose
    :class:`Bound` launches are ``bounds``: None under the
    interpreter, and for a :class:`Workspace`), or None where replaying it would not be that
    call's work on new inputs (see the module's text). The plan is called as
    ``plan(args, addresses)``, ``args`` the call's positional arguments (its tensor inputs
    first) and ``addresses`` its inputs' (:func:`layout_key`)."""
    if not launches or any(t is not None and type(t) not in PLAIN_TENSORS for t in inputs):
        return None
    if any(isinstance(v, torch.Tensor) for v in options):
        return None  # a tensor the key does not describe
    single = isinstance(result, torch.Tensor)
    outputs = (result,) if single else tuple(result)
    workspaces = [w for w in launches if type(w) is Workspace]
    runs = [(launch, bound) for launch, bound in zip(launches, bounds, strict=True) if type(launch) is Launch]
    tensors = (*inputs, *outputs, *[w.buffer for w in workspaces])
    addresses = [None if t is None else t.data_ptr() for t in tensors]
    made = addresses[len(inputs) :]
    if len(set(made)) < len(made) or set(addresses[: len(inputs)]) & set(made):
        return None  # an output that is another or an input
    slots = []
    for launch, bound in runs:
        taken = []
        for i, arg in enumerate(launch.args):
            described = not isinstance(arg, torch.Tensor) and is_descriptor(arg)
            tensor = arg.base if described else arg
            if not isinstance(tensor, torch.Tensor):
                continue
            if i > len(taken) or tensor.data_ptr() not in addresses:
                return None  # a tensor after a scalar (bound launches take them first), or a copy
            index = addresses.index(tensor.data_ptr())
            if tensor.dtype != tensors[index].dtype:
                return None
            if described:
                layout = (list(arg.shape), list(arg.strides), arg.padding)
                taken.append(
                    _DescriptorSlot(index, tensor.shape, tensor.stride(), layout, list(arg.block_shape))
                )
            else:
                taken.append(_Slot(index, tensor.shape, tensor.stride()))
        if bound is None and not is_interpreter():
            return None
        slots.append(taken)
    launched = [launch for launch, _ in runs]
    # (After the launches' checks, which are cheaper: a call that launches on a tensor it
    # did not declare finds it has no plan without trying an allocation per output.)
    allocations = [_allocation(out, inputs) for out in outputs] + [
        _workspace_allocation(w) for w in workspaces
    ]
    if None in allocations:
        return None
    if is_interpreter():
        return _relaunching_plan(allocations, single, launched, slots, len(inputs), len(outputs))
    bounds = [bound for _, bound in runs]
    if workspaces or any(type(slot) is _DescriptorSlot for taken in slots for slot in taken):
        return _described_plan(allocations, single, bounds, slots, len(inputs), len(outputs))
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
    allocations: list, single: bool, launches: Launches, slots: list, n_inputs: int, n_outputs: int
) -> Callable:
    """A plan under the interpreter: each launch again, on the new inputs, outputs and
    workspaces (a descriptor made again on its new base)."""

    def plan(args, addresses):
        made = _allocate(allocations, args)
        tensors = (*args[:n_inputs], *made)
        for launch, taken in zip(launches, slots, strict=True):
            new = [_taken_again(tensors, s) for s in taken]
            launcher(launch.kernel)(
                launch.grid,
                (*new, *launch.args[len(new) :]),
                launch.constexprs,
                num_warps=launch.num_warps,
                num_stages=launch.num_stages,
            )
        return made[0] if single else tuple(made[:n_outputs])

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
    """Launch each of ``launches`` through its kernel's launcher; their bound launches when ``bind``
    (None for a :class:`Workspace`, which launches nothing)."""
    return [
        None
        if type(launch) is Workspace
        else launcher(launch.kernel, launch.args)(
            launch.grid,
            launch.args,
            launch.constexprs,
            num_warps=launch.num_warps,
            num_stages=launch.num_stages,
            bind=bind,
        )
        for launch in launches
    ]


def _schema_arguments(fn: Callable, signature: inspect.Signature) -> Callable:
    """``unpack(args, kwargs) -> (args, kwargs)``: the arguments of a call by the registered
    op's schema ``signature`` (every parameter by position, defaults included) as ``fn``
    takes them, its keyword-only parameters by keyword. Those equal (in type and value) to
    their default are left out, so that an eager call finds the public op's plans."""
    keyword_only = [
        (p.name, p.default)
        for p in inspect.signature(fn).parameters.values()
        if p.kind is p.KEYWORD_ONLY and p.name in signature.parameters  # (not a forward's `saving`)
    ]
    n_positional = len(signature.parameters) - len(keyword_only)

    def unpack(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        for (option, default), value in zip(keyword_only, args[n_positional:], strict=False):
            if type(value) is not type(default) or value != default:
                kwargs[option] = value
        return args[:n_positional], kwargs

    return unpack


def _register(name: str, fn: Callable, eager: Callable, signature: inspect.Signature) -> Callable:
    """Register ``fn`` as the ``torch.library.triton_op`` ``name``; return the op
    (``torch.ops.<namespace>.<name>``). Its body calls ``eager`` (the public op) on plain
    tensors; on a trace's tensors it runs ``fn`` and launches each kernel through
    ``torch.library.wrap_triton`` (under the interpreter, directly, unless they are fake)."""
    unpack = _schema_arguments(fn, signature)
    is_compiling = torch.compiler.is_compiling

    def body(*args, **kwargs):
        args, kwargs = unpack(args, kwargs)
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


def _run(fn: Callable, plans: Plans, key, inputs: tuple, options: tuple, args: tuple, kwargs: dict):
    """The op's function ``fn(*args, **kwargs)`` and its launches; their plan kept under ``key``
    (None: none kept), made of the call's tensor ``inputs`` and other arguments ``options``."""
    result, launches = fn(*args, **kwargs)
    keep = key is not None and fast_path_enabled()
    bounds = _launch_eagerly(launches, bind=keep)
    if keep:
        plans.put(key, make_plan(inputs, options, result, launches, bounds))
    return result


def _counted(run: Callable, tensors: int) -> Callable:
    """``run(key, inputs, options, args, kwargs)`` (:func:`_run`'s arguments after ``fn`` and
    ``plans``) as the eager call of ``tensors`` counted tensor inputs calls it:
    ``run(args, kwargs, key)``."""

    def counted(args: tuple, kwargs: dict, key) -> object:
        return run(key, args[:tensors], (*args[tensors:], *kwargs.values()), args, kwargs)

    return counted


def _unplanned(fn: Callable) -> Callable:
    """``record(key, args, kwargs)`` of an op without a backward: the function and its
    launches, no plan kept (autograd records none of them, and the function's checks may
    refuse the call, as matmul_splitk's do)."""

    def record(key, args: tuple, kwargs: dict) -> object:
        result, launches = fn(*args, **kwargs)
        _launch_eagerly(launches, bind=False)
        return result

    return record


def _eager_call(
    name: str, tensors: int, run: Callable, plans: Plans, record: Callable | None = None
) -> tuple[Callable, dict]:
    """``(call, scope)``: the eager call (:func:`call_source`) of an op of ``tensors`` counted
    tensor inputs, that runs ``run(args, kwargs, key)`` where it has no plan and, given a
    ``record``, ``record(key, args, kwargs)`` where autograd records the call;
    ``scope["registered"]`` is to be set to what it calls inside ``torch.compile``."""
    scope = {
        "is_compiling": torch.compiler.is_compiling,
        "tracing": tracing,
        "is_grad_enabled": torch.is_grad_enabled,
        "options_key": options_key,
        "plans": plans,
        "run": run,
        "record": record,
    }
    exec(compile(call_source(tensors, recorded=record is not None), f"<eager call of {name}>", "exec"), scope)
    return scope["call"], scope


def _traceable(fn: Callable) -> Callable:
    """``fn`` as the registered op's trace runs it: its launches without the :class:`Workspace`
    entries (the trace's buffers are the ones the function made). A launch that takes a host
    tensor descriptor while torch.compile traces is refused: ``wrap_triton`` cannot carry one
    into a graph, so an op launches its computed-pointer kernel there
    (:func:`~gpuperf.kernels.tma.tracing` of its inputs).

    Raises:
        TypeError: a launch takes a tensor descriptor while torch.compile traces.
    """

    @functools.wraps(fn)
    def traced_fn(*args, **kwargs):
        result, launches = fn(*args, **kwargs)
        kept = [launch for launch in launches if type(launch) is Launch]
        if any(is_descriptor(a) for launch in kept for a in launch.args) and tracing(*args, *kwargs.values()):
            raise TypeError(
                f"{fn.__name__}: a launch takes a host tensor descriptor while torch.compile traces; "
                "a graph cannot hold one: launch a kernel that takes pointers when "
                "gpuperf.kernels.tma.tracing(<its inputs>)"
            )
        return result, kept

    return traced_fn


def _finish(call: Callable, fn: Callable, public: inspect.Signature, plans: Plans, registered) -> Callable:
    """``call``, the eager call, dressed as the op: ``fn``'s name and docstring, the ``public``
    signature, its ``plans`` and its ``registered`` op."""
    call = functools.update_wrapper(call, fn)
    call.__signature__ = public
    call.__annotations__ = {  # (what documentation tools read: the outputs, not the launches)
        **{p.name: p.annotation for p in public.parameters.values() if p.annotation is not p.empty},
        "return": public.return_annotation,
    }
    call.plans = plans
    call.registered = registered
    return call


def op(
    name: str,
    *,
    tensors: int | tuple[str, ...] = 1,
    backward: Callable | None = None,
    saves: Callable | None = None,
    outputs: int | None = None,
) -> Callable:
    """Decorate an op's function (see the module's text) whose first ``tensors`` positional
    arguments are its tensor inputs, or whose tensor inputs are the parameters ``tensors``
    names (a tuple of names: see :func:`named_call_source`), and register it as the
    ``torch.library`` op ``name`` (``"gpuperf::softmax"``). The function returns
    ``(outputs, launches)`` and is annotated ``-> tuple[<its outputs' type>, Launches]``.

    The decorated op is called as the function is and returns its outputs. It has the
    function's name, docstring and signature (returning the outputs), its plans as
    ``op.plans`` (:class:`Plans`), and the registered op as
    ``op.registered``.

    An op with a backward (its tensors counted or named) also takes (the module's text, "An
    op with a backward"):

    * ``backward``: the op that computes the gradients (itself an :func:`op`), called as
      ``backward(*grads, *saves(...))`` and returning the gradients of the function's first
      tensor inputs, one each, in the order ``tensors`` counts or names them;
    * ``saves``: what ``backward`` takes after the gradients, as a function of the
      registered op's arguments (keyword-only ones too, by position) and of all the
      function's outputs: ``lambda x, weight, eps, y, rstd: (x, weight, rstd)``;
    * ``outputs``: how many of the function's first outputs the public op returns (by
      default, all); the others are for the backward only.

    Raises:
        ValueError: ``tensors`` is not a positive int or a tuple of the function's parameter
            names (each positional or keyword, not starting with ``_``); ``outputs`` is not
            a positive int.
        TypeError: the function is not annotated as above; ``backward`` or ``saves`` is
            not callable, or one is given without the other, or ``outputs`` without them.
    """
    named = type(tensors) is tuple
    if not named and (type(tensors) is not int or tensors < 1):
        raise ValueError(f"tensors must be a positive int, got {tensors!r} (or a tuple of parameter names)")
    if backward is not None or saves is not None or outputs is not None:
        _check_backward(backward, saves, outputs)

    def decorate(fn: Callable) -> Callable:
        if backward is not None:
            return _op_with_backward(name, fn, tensors, backward, saves, outputs)
        public, registered_signature = _signatures(fn)
        plans = Plans()
        if named:
            call, registered = _named_op(name, fn, public, tensors, plans)
            return _finish(call, fn, public, plans, registered)
        call, scope = _eager_call(name, tensors, _counted(functools.partial(_run, fn, plans), tensors), plans)
        scope["registered"] = _register(name, _traceable(fn), call, registered_signature)
        return _finish(call, fn, public, plans, scope["registered"])

    return decorate


# TMA descriptors ------------------------------------------------------------------------
#
# A launch may take host-side tensor descriptors (Triton's
# ``triton.tools.tensor_descriptor.TensorDescriptor``, Gluon's), each made on an input or an
# output. Triton specializes a kernel on a descriptor's dtype and block shape, and its C
# launcher encodes the TMA descriptor (``cuTensorMapEncodeTiled``) from the object's base,
# shape, strides and padding at every launch: so :class:`DescriptorLauncher` keys them by the
# first and passes the objects as they are, and a plan makes each again on its new base
# (:class:`Described`), with the layout it checked when it was made.


def is_descriptor(value) -> bool:
    """Whether ``value`` is a host-side tensor descriptor, Triton's or Gluon's
    (``triton.experimental.gluon.nvidia.hopper.TensorDescriptor``)."""
    return getattr(value, "block_shape", None) is not None and hasattr(value, "base")


def _descriptor_key(d) -> tuple:
    # (A Gluon layout as text: its fields need not be hashable.)
    return (d.base.dtype, tuple(d.block_shape), d.padding, str(getattr(d, "layout", "")))


def _takes_memory(value) -> bool:
    return isinstance(value, torch.Tensor) or is_descriptor(value)


class DescriptorLauncher(Launcher):
    """A :class:`Launcher` for kernels that take host-side tensor
    descriptors (Triton's and Gluon's) among their arguments: its key holds each descriptor's
    dtype, block shape, padding (and Gluon's shared-memory layout), which Triton compiles for,
    and the descriptors pass to Triton's launcher as they are."""

    @staticmethod
    def _key_and_args(runtime, constexprs, num_warps, num_stages, device) -> tuple[tuple, list]:
        key, args = Launcher._key_and_args(runtime, constexprs, num_warps, num_stages, device)
        described = tuple(_descriptor_key(v) for v in runtime if type(v) is not int and is_descriptor(v))
        return key + described, args

    def __call__(self, grid, runtime, constexprs, *, num_warps=4, num_stages=3, bind=False):
        """Launch; with ``bind=True`` also return the :class:`BoundDescriptors` launch
        (:meth:`bound`)."""
        Launcher.__call__(self, grid, runtime, constexprs, num_warps=num_warps, num_stages=num_stages)
        if not bind:
            return None
        return self.bound(grid, runtime, constexprs, num_warps=num_warps, num_stages=num_stages)

    def bound(self, grid, runtime, constexprs, *, num_warps: int, num_stages: int) -> BoundDescriptors | None:
        """After a launch of these arguments: a :class:`BoundDescriptors` that repeats it for
        other descriptors and tensors of the same kinds in its leading arguments, or None (the
        interpreter, the launch cache off, the launch not cached, or a tensor or descriptor
        after a scalar)."""
        if self.interpreted or not fast_path_enabled():
            return None
        device = torch._C._cuda_getDevice()
        key, args = self._key_and_args(runtime, constexprs, num_warps, num_stages, device)
        entry = self._compiled.get(key)
        leading = 0
        while leading < len(runtime) and _takes_memory(runtime[leading]):
            leading += 1
        if entry is None or any(map(_takes_memory, runtime[leading:])):
            return None
        launch, function, head = entry
        grid = (grid[0], grid[1] if len(grid) > 1 else 1, grid[2] if len(grid) > 2 else 1)
        tail = tuple(args[leading:]) + self._constants(constexprs, num_warps)
        return BoundDescriptors(launch, function, head, grid, device, tail)


class BoundDescriptors:
    """One launch with everything fixed but its leading descriptors and tensors (each tensor
    as a tensor or its address): the :class:`Bound` of descriptor
    kernels, Triton's and Gluon's."""

    __slots__ = ("device", "function", "grid", "head", "launch", "tail")

    def __init__(self, launch, function, head: tuple, grid: tuple, device: int, tail: tuple):
        self.launch, self.function, self.head = launch, function, head
        self.grid, self.device, self.tail = grid, device, tail

    def __call__(self, *leading) -> None:
        stream = torch._C._cuda_getCurrentRawStream(self.device)
        self.launch(*self.grid, stream, self.function, *self.head, *leading, *self.tail)


class Described:
    """What Triton's launcher reads of a host tensor descriptor (its base, shape, strides and
    padding), made without :class:`~triton.tools.tensor_descriptor.TensorDescriptor`'s checks:
    only for a layout that a plan has already checked, on a new base of the same layout."""

    __slots__ = ("base", "padding", "shape", "strides")

    def __init__(self, base: torch.Tensor, shape: list, strides: list, padding: str = "zero"):
        self.base, self.shape, self.strides, self.padding = base, shape, strides, padding

    @staticmethod
    def layout_of(desc) -> tuple[list, list]:
        """``(shape, strides)`` of a descriptor, to describe another base of the same layout."""
        return list(desc.shape), list(desc.strides)


class _DescriptorSlot(NamedTuple):
    """A descriptor argument of a launch, as a plan makes it again: on the call's tensor
    ``index`` (its base; under the interpreter viewed with ``shape`` and ``stride``), with the
    descriptor's ``layout`` (its shape, strides and padding) and ``block_shape``."""

    index: int
    shape: tuple
    stride: tuple
    layout: tuple
    block_shape: list


def _taken_again(tensors: tuple, slot) -> object:
    """A launch's tensor or descriptor argument made again on a plan's new ``tensors`` (under
    the interpreter, which launches through ``kernel[grid]``)."""
    view = tensors[slot.index].as_strided(slot.shape, slot.stride)
    if type(slot) is _Slot:
        return view
    shape, strides, padding = slot.layout
    return TensorDescriptor(view, shape, strides, slot.block_shape, padding)


def _described_plan(
    allocations: list, single: bool, bounds: list, slots: list, n_inputs: int, n_outputs: int
) -> Callable:
    """A plan on the GPU whose launches take descriptors or workspaces: it allocates the outputs
    and the workspaces, makes each descriptor again on its new base (:class:`Described`) and
    runs each launch's C launcher bound to the rest, on the current stream."""
    stream_of = torch._C._cuda_getCurrentRawStream
    steps = [
        (bound, [(s.index, s.layout if type(s) is _DescriptorSlot else None) for s in taken])
        for bound, taken in zip(bounds, slots, strict=True)
    ]

    def plan(args, addresses):
        made = _allocate(allocations, args)  # (the workspaces held until every launch is queued)
        tensors = (*args[:n_inputs], *made)
        everywhere = (*addresses, *[t.data_ptr() for t in made])
        for bound, taken in steps:
            g0, g1, g2 = bound.grid
            leading = [
                everywhere[i] if layout is None else Described(tensors[i], *layout) for i, layout in taken
            ]
            bound.launch(
                g0, g1, g2, stream_of(bound.device), bound.function, *bound.head, *leading, *bound.tail
            )
        return made[0] if single else tuple(made[:n_outputs])

    return plan


# Workspaces -----------------------------------------------------------------------------


def _workspace_allocation(workspace: Workspace):
    """How a plan allocates a workspace like ``workspace``: ``torch.zeros`` (where it was zeroed)
    or ``torch.empty`` of its shape, dtype and device; None where its buffer is not a whole,
    contiguous, fresh allocation of its own."""
    buffer = workspace.buffer
    if (
        type(buffer) is not torch.Tensor
        or not buffer.is_contiguous()
        or buffer.storage_offset()
        or buffer.untyped_storage().nbytes() != buffer.numel() * buffer.element_size()
    ):
        return None
    make = torch.zeros if workspace.zeroed else torch.empty
    return functools.partial(make, buffer.shape, dtype=buffer.dtype, device=buffer.device)


# Named tensor inputs and launch configs --------------------------------------------------
#
# ``@op(name, tensors=("a", "b", "bias"))`` names the tensor parameters, wherever they stand
# (matmul's ``bias`` is keyword-only and optional: a None is keyed as None). The eager call is
# then written with the function's own signature (:func:`named_call_source`), and a launch
# config parameter (a dataclass of ints, bools and strs, or None: ``config: MatmulConfig |
# None``) reaches the registered op as its fields, one ``int?``, ``bool?`` or ``str?`` schema
# parameter each, all None for None, since a ``torch.library`` schema takes no dataclass.


class _ConfigFields(NamedTuple):
    """A launch config parameter as the registered op takes it: its dataclass ``cls``, whose
    ``fields`` (of types ``types``: int, bool or str, each possibly None) are one schema
    parameter each."""

    cls: type
    fields: tuple
    types: tuple

    def decode(self, values: tuple) -> object:
        """The config the fields ``values`` give (None where all are None)."""
        if all(v is None for v in values):
            return None
        return self.cls(*values)


def _config_fields(param: inspect.Parameter) -> _ConfigFields | None:
    """The :class:`_ConfigFields` of a parameter annotated with a dataclass (or one or None),
    else None.

    Raises:
        TypeError: the dataclass has a field that is not an int or a bool, or the parameter's
            default is not None.
    """
    kinds = typing.get_args(param.annotation) or (param.annotation,)
    found = [t for t in kinds if isinstance(t, type) and dataclasses.is_dataclass(t)]
    if not found:
        return None
    (cls,) = found
    hints = typing.get_type_hints(cls)
    fields = tuple(f.name for f in dataclasses.fields(cls))
    kinds = tuple(hints[f] for f in fields)
    if not all(map(_field_type, kinds)) or param.default not in (None, param.empty):
        raise TypeError(
            f"{param.name}: a config parameter must be a dataclass of ints, bools and strs (each "
            "may be None), default None"
        )
    return _ConfigFields(cls, fields, kinds)


#: The types of a launch config's fields that a ``torch.library`` schema takes, each as
#: ``int?``, ``bool?`` or ``str?`` (an optional one too: ``int | None``).
_FIELD_TYPES = (int, bool, str)


def _field_type(kind) -> bool:
    """Whether a config field of type ``kind`` can be a schema parameter: one of
    :data:`_FIELD_TYPES`, or one of them or None."""
    if kind in _FIELD_TYPES:
        return True
    args = typing.get_args(kind)
    optional = typing.get_origin(kind) in (typing.Union, types.UnionType)
    return optional and len(args) == 2 and type(None) in args and any(a in _FIELD_TYPES for a in args)


def _tuple(items: list[str]) -> str:
    return "(" + "".join(f"{item}, " for item in items) + ")"


#: The eager call of an op whose tensor inputs are named (:func:`named_call_source`), and
#: ``_to_registered``, the same arguments given to the registered op (a config as its fields).
_NAMED_CALL = """
def call({parameters}):
    if _is_compiling():
        return _registered({registered})
    try:
        {addresses}
        _key = {fields}
        _plan = _plans.get(_key)
    except (AttributeError, RuntimeError, TypeError, ValueError):  # not tensors, no key: no plan
        if _tracing(*{inputs}):  # a trace's tensors (no address): the graph's op
            return _registered({registered})
        return _run(None, {inputs}, {options}, {positional}, {{{keywords}}}){recorded}
    if _plan is None:
        return _run(_key, {inputs}, {options}, {positional}, {{{keywords}}})
    return _plan({inputs}, {address_names})


def _to_registered({parameters}):
    return _registered({registered})
"""

#: What the named eager call adds after its key where it asks whether autograd records the
#: call (as :data:`_RECORDED` does for counted tensors): then it runs ``_record``.
_NAMED_RECORDED = """
    if _grad_enabled() and ({requires_grad}):
        return _record(_key, {positional}, {{{keywords}}})"""


def named_call_source(
    signature: inspect.Signature, tensors: tuple, configs: dict | None = None, *, recorded: bool = True
) -> str:
    """The source of the eager call :func:`op` makes for an op of ``signature`` whose tensor
    inputs are the parameters ``tensors`` names (one whose default is None is optional), its
    launch config parameters ``configs`` (``{name: _ConfigFields}``).

    The call has the op's own signature (a default ``d`` of parameter ``p`` read from the
    name ``_d_p``). Its key is :func:`layout_key`'s for the tensor inputs in the order
    ``tensors`` gives, an optional one left out as None (its fields as a tuple otherwise),
    then the :func:`option_key` of every other parameter in order. A
    call whose key cannot be made runs the function and keeps no plan; with ``recorded``, a
    call that autograd records (grad enabled and an input that requires it) runs ``_record``
    (:data:`_NAMED_RECORDED`; what that does is :func:`op`'s rule, in the module's text).

    Raises:
        ValueError: a name of ``tensors`` is no parameter, or a parameter is positional-only,
            variadic or starts with ``_``.
    """
    configs = configs or {}
    params = list(signature.parameters.values())
    names = [p.name for p in params]
    for p in params:
        if p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) or p.name.startswith("_"):
            raise ValueError(
                f"parameter {p.name!r}: a named op's parameters are positional or keyword, not _"
            )
    if not tensors or any(t not in names for t in tensors) or len(set(tensors)) < len(tensors):
        raise ValueError(f"tensors must name the op's tensor parameters once each, got {tensors!r}")
    header = []
    for p in params:
        if p.kind is p.KEYWORD_ONLY and "*" not in header:
            header.append("*")
        header.append(p.name if p.default is p.empty else f"{p.name}=_d_{p.name}")
    registered = []
    for p in params:
        config = configs.get(p.name)
        if config is None:
            registered.append(p.name)
        else:
            fields = _tuple([f"{p.name}.{f}" for f in config.fields])
            registered.append(f"*({_tuple(['None'] * len(config.fields))} if {p.name} is None else {fields})")
    optional = {t for t in tensors if signature.parameters[t].default is None}
    addresses, fields, requires_grad = [], [], []
    for i, t in enumerate(tensors):
        ptr = f"{t}.data_ptr()"
        described = f"type({t}), {t}.shape, {t}.stride(), {t}.dtype, {t}.get_device(), _a{i} & 15"
        if t in optional:
            addresses.append(f"_a{i} = None if {t} is None else {ptr}")
            fields.append(f"None if {t} is None else ({described})")
            requires_grad.append(f"({t} is not None and {t}.requires_grad)")
        else:
            addresses.append(f"_a{i} = {ptr}")
            fields.append(described)
            requires_grad.append(f"{t}.requires_grad")
    address_names = [f"_a{i}" for i in range(len(tensors))]
    fields += [f"{a} == {b}" for a, b in itertools.combinations(address_names, 2)]
    options = [n for n in names if n not in tensors]
    fields += [f"_option_key({n})" for n in options]
    positional = _tuple([p.name for p in params if p.kind is p.POSITIONAL_OR_KEYWORD])
    keywords = ", ".join(f"{p.name!r}: {p.name}" for p in params if p.kind is p.KEYWORD_ONLY)
    return _NAMED_CALL.format(
        parameters=", ".join(header),
        registered=", ".join(registered),
        addresses="\n        ".join(addresses),
        fields=_tuple(fields),
        inputs=_tuple(list(tensors)),
        options=_tuple(options),
        positional=positional,
        keywords=keywords,
        address_names=_tuple(address_names),
        recorded=_NAMED_RECORDED.format(
            requires_grad=" or ".join(requires_grad), positional=positional, keywords=keywords
        )
        if recorded
        else "",
    )


def _named_schema(public: inspect.Signature) -> tuple[dict, inspect.Signature, Callable]:
    """``(configs, schema, arguments)`` of an op of ``public`` signature whose tensor inputs
    are named: its launch config parameters (``{name: _ConfigFields}``), the registered op's
    signature (every parameter by position, each config as its fields) and ``arguments(args,
    kwargs)``, which turns the registered op's arguments into ``(positional, keywords)`` as
    the function takes them."""
    params = list(public.parameters.values())
    configs = {p.name: c for p in params if (c := _config_fields(p)) is not None}
    schema = []
    for p in params:
        config = configs.get(p.name)
        if config is None:
            schema.append(p.replace(kind=p.POSITIONAL_OR_KEYWORD))
            continue
        for field, kind in zip(config.fields, config.types, strict=True):
            schema.append(
                inspect.Parameter(field, p.POSITIONAL_OR_KEYWORD, default=None, annotation=kind | None)
            )
    signature = inspect.Signature(schema, return_annotation=public.return_annotation)
    keyword_only = {p.name for p in params if p.kind is p.KEYWORD_ONLY}

    def arguments(args: tuple, kwargs: dict) -> tuple[list, dict]:
        """The registered op's arguments as ``fn`` takes them."""
        if kwargs or len(args) != len(signature.parameters):  # (a schema's defaults left out)
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            args = tuple(bound.arguments.values())
        positional, keywords, i = [], {}, 0
        for p in params:
            config = configs.get(p.name)
            width = 1 if config is None else len(config.fields)
            value = args[i] if config is None else config.decode(args[i : i + width])
            i += width
            if p.name in keyword_only:
                keywords[p.name] = value
            else:
                positional.append(value)
        return positional, keywords

    return configs, signature, arguments


def _decoded(target: Callable, arguments: Callable, schema: inspect.Signature, name: str) -> Callable:
    """``target`` called with the registered op's arguments (``schema``), turned by
    ``arguments`` (:func:`_named_schema`) into the function's."""

    def decoded(*args, **kwargs):
        positional, keywords = arguments(args, kwargs)
        return target(*positional, **keywords)

    decoded.__signature__ = schema
    decoded.__name__ = name
    return decoded


def _named_eager_call(
    name: str,
    public: inspect.Signature,
    tensors: tuple,
    configs: dict,
    run: Callable,
    plans: Plans,
    record: Callable | None = None,
) -> tuple[Callable, dict]:
    """``(call, scope)``: the eager call (:func:`named_call_source`) of an op of ``public``
    signature whose tensor inputs ``tensors`` names, that runs ``run(key, inputs, options,
    args, kwargs)`` where it has no plan and, given a ``record``, ``record(key, args,
    kwargs)`` where autograd records the call; ``scope["_registered"]`` is to be set to
    what it calls inside ``torch.compile`` (``scope["_to_registered"]`` calls it too)."""
    scope = {
        "_is_compiling": torch.compiler.is_compiling,
        "_tracing": tracing,
        "_grad_enabled": torch.is_grad_enabled,
        "_option_key": option_key,
        "_plans": plans,
        "_run": run,
        "_record": record,
        **{f"_d_{p.name}": p.default for p in public.parameters.values() if p.default is not p.empty},
    }
    source = named_call_source(public, tensors, configs, recorded=record is not None)
    exec(compile(source, f"<eager call of {name}>", "exec"), scope)
    return scope["call"], scope


def _named_op(
    name: str, fn: Callable, public: inspect.Signature, tensors: tuple, plans: Plans
) -> tuple[Callable, Callable]:
    """``(call, registered)`` of an op without a backward whose tensor inputs are the
    parameters ``tensors`` names: its eager call (:func:`named_call_source`; a call autograd
    records runs the function without a plan, :func:`_unplanned`) and its registered op,
    whose schema takes every parameter by position and each launch config as its fields."""
    configs, schema, arguments = _named_schema(public)
    run = functools.partial(_run, fn, plans)
    call, scope = _named_eager_call(name, public, tensors, configs, run, plans, _unplanned(fn))
    traced_fn = _decoded(_traceable(fn), arguments, schema, fn.__name__)
    scope["_registered"] = registered = _register(
        name, traced_fn, _decoded(call, arguments, schema, fn.__name__), schema
    )
    return call, registered


# Launch parameters ------------------------------------------------------------------------


def fields_as_dict(params) -> dict:
    """``{field: value}`` of a launch rule's answer (a ``NamedTuple``: ``SplitKLaunch``,
    ``DecodeLaunch``), as the benchmarks record a launch: such a class takes it as its
    ``as_dict`` method, the name the config dataclasses give theirs."""
    return params._asdict()


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


def _public_runner(
    fn: Callable, plans: Plans, public: Callable | None, saving: bool, record: Callable
) -> Callable:
    """``run(key, inputs, options, args, kwargs)`` (as :func:`_run`) of the public eager call
    of an op with a backward: ``fn`` (with ``saving=False`` where it takes it) and its
    launches, returning the public outputs (``public`` of all, None: all), their plan kept
    under ``key``. Where no key could be made (a tensor passed by keyword to an op of counted
    tensors, say), a call that autograd records runs ``record``."""
    is_grad_enabled = torch.is_grad_enabled

    def run(key, inputs: tuple, options: tuple, args: tuple, kwargs: dict) -> object:
        if key is None and is_grad_enabled():
            if any(isinstance(v, torch.Tensor) and v.requires_grad for v in (*args, *kwargs.values())):
                return record(None, args, kwargs)
        result, launches = fn(*args, **kwargs, saving=False) if saving else fn(*args, **kwargs)
        keep = key is not None and fast_path_enabled()
        bounds = _launch_eagerly(launches, bind=keep)
        if public is None:
            if keep:
                plans.put(key, make_plan(inputs, options, result, launches, bounds))
            return result
        kept = public(result)
        if keep:
            plans.put(key, _public_plan(inputs, options, result, kept, public, launches, bounds))
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
    positions: list[int],
    n_public: int,
    backward: Callable,
    saves: Callable,
) -> tuple[Callable, Callable]:
    """Register the backward of the op ``name`` (whose registered op has ``signature``, its
    tensor inputs the parameters at ``positions``, in the order the op declares them, its
    first ``n_public`` outputs the public ones) with ``torch.library.register_autograd``.

    ``setup_context`` keeps ``saves(*inputs, *outputs)`` (tensors through
    ``ctx.save_for_backward``), marks the outputs past the public ones non-differentiable,
    and refuses a tensor input that requires grad but gets no gradient. The backward calls
    ``backward(*grads, *saved)``, with a zero gradient where autograd passes none (an output
    the loss does not use), and gives the gradients it returns to the first tensor inputs,
    None to the other inputs. It is once differentiable: differentiating it again raises, as
    ``torch.autograd.function.once_differentiable`` does. Returns the two functions
    ``(setup_context, backward)``, for :func:`_recorded_eagerly` too."""
    parameters = list(signature.parameters)
    n_grads = _n_gradients(backward)
    short = name.split("::")[1]
    differentiable, others = positions[:n_grads], positions[n_grads:]
    them = "them" if len(others) > 1 else "it"
    refusal = (
        f"{short} differentiates with respect to {' and '.join(parameters[i] for i in differentiable)} "
        f"only: {' and '.join(parameters[i] for i in others)} must not require grad (detach {them}, "
        f"or build {them} under torch.no_grad())"
    )
    n_inputs = len(parameters)

    def setup_context(ctx, inputs, output) -> None:
        outputs = (output,) if isinstance(output, torch.Tensor) else tuple(output)
        needs = ctx.needs_input_grad
        if any(needs[i] for i in others):
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
        gradients = [None] * n_inputs
        for i, grad in zip(differentiable, result, strict=True):
            gradients[i] = grad
        return tuple(gradients)

    torch.library.register_autograd(name, backward_of, setup_context=setup_context)
    return setup_context, backward_of


def _recorded_eagerly(
    name: str,
    fn: Callable,
    eager: Callable,
    signature: inspect.Signature,
    context: Callable,
    backward_of: Callable,
) -> Callable:
    """``recorded(*args, **kwargs)``: the registered op of schema ``signature`` called eagerly
    in a call that autograd records, without the dispatcher: one ``torch.autograd.Function``
    whose forward runs the registered op's eager call (``eager``, with its plans) and then
    ``context``, and whose backward is ``backward_of``: the ``setup_context`` and backward
    that :func:`_register_autograd` registered, so autograd records the same backward as
    through the op. The dispatcher's path (the autograd kernel ``register_autograd`` made, then the
    op's CUDA kernel, then :func:`_register`'s body) costs more host time per call than
    the launches do; ``torch.compile`` still sees the registered op. The arguments are
    bound to the schema (defaults filled in), as the dispatcher binds them."""
    unpack = _schema_arguments(fn, signature)
    parameters = list(signature.parameters.values())
    names = [p.name for p in parameters]

    def forward(ctx, *inputs):
        # (The forward of the older form, which takes ctx and runs setup_context itself:
        # Function.apply then binds no signature per call.)
        args, kwargs = unpack(inputs, {})
        output = eager(*args, **kwargs)
        context(ctx, inputs, output)
        return output

    # Named as the dispatcher names the op's autograd node: "gpuperf_attentionBackward".
    recorded_op = type(
        name.replace("::", "_"),
        (torch.autograd.Function,),
        {"forward": staticmethod(forward), "backward": staticmethod(backward_of)},
    )
    apply = recorded_op.apply

    later = [frozenset(names[n:]) for n in range(len(names) + 1)]
    empty = inspect.Parameter.empty

    def recorded(*args, **kwargs):
        n = len(args)
        full = args
        if n < len(names) and later[n].issuperset(kwargs):
            full = args + tuple(kwargs.get(p.name, p.default) for p in parameters[n:])
        if len(full) != len(names) or any(v is empty for v in full[n:]):
            bound = signature.bind(*args, **kwargs)  # (raises as the op's schema would)
            bound.apply_defaults()
            full = tuple(bound.arguments[name] for name in names)
        return apply(*full)

    return recorded


def _op_with_backward(
    name: str,
    fn: Callable,
    tensors: int | tuple[str, ...],
    backward: Callable,
    saves: Callable,
    outputs: int | None,
) -> Callable:
    """:func:`op` for an op with a backward (its tensor inputs counted or named): two eager
    calls, each with its plans.

    * The registered op's (``op.registered_plans``): ``fn`` as it is, saving, all its outputs.
    * The public op's (``op.plans``): ``fn`` with ``saving=False`` where it takes it, the
      public outputs; a call that autograd records runs the registered op instead
      (:data:`_RECORDED`, :data:`_NAMED_RECORDED`), and so does a call inside
      ``torch.compile``.

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
    named = type(tensors) is tuple
    if _n_gradients(backward) > (len(tensors) if named else tensors):
        raise TypeError(f"backward {backward.__name__} returns more gradients than {name} has tensor inputs")

    plans = Plans()
    # Where the public op returns what the registered one does, both keep the same plans.
    registered_plans = plans if public is None and not saving else Plans()
    registered_run = functools.partial(_run, fn, registered_plans)
    if named:
        configs, registered_signature, arguments = _named_schema(public_signature)
        _check_saves(saves, len(registered_signature.parameters) + n_outputs, name)
        eager, eager_scope = _named_eager_call(
            name, public_signature, tensors, configs, registered_run, registered_plans
        )
        traced_fn = _decoded(_traceable(fn), arguments, registered_signature, fn.__name__)
        eager = _decoded(eager, arguments, registered_signature, fn.__name__)
        torch_op = eager_scope["_registered"] = _register(name, traced_fn, eager, registered_signature)
        positions = [list(registered_signature.parameters).index(t) for t in tensors]
    else:
        _check_saves(saves, len(registered_signature.parameters) + n_outputs, name)
        eager, eager_scope = _eager_call(name, tensors, _counted(registered_run, tensors), registered_plans)
        torch_op = eager_scope["registered"] = _register(
            name, _traceable(fn), functools.update_wrapper(eager, fn), registered_signature
        )
        positions = list(range(tensors))
    context, backward_of = _register_autograd(
        name, registered_signature, positions, n_public, backward, saves
    )
    # Eagerly, an op of counted tensors records its backward without the dispatcher.
    recorded = (
        None if named else _recorded_eagerly(name, fn, eager, registered_signature, context, backward_of)
    )

    def registered_public(*args, **kwargs):
        """The registered op, returning the public outputs (what ``torch.compile`` sees)."""
        result = torch_op(*args, **kwargs)
        return result if public is None else public(result)

    def recorded_public(*args, **kwargs):
        """The registered op's work and backward, recorded eagerly, returning the public outputs."""
        result = recorded(*args, **kwargs)
        return result if public is None else public(result)

    checked: dict = {}

    def record(key, args: tuple, kwargs: dict):
        """A call that autograd records, after the function's checks on the first call of
        ``key`` (the function runs as the eager call would, launching nothing), since the
        dispatcher converts a wrong argument (``eps=True``) or refuses it with a message of
        its own. An op of counted tensors then runs its ``torch.autograd.Function``
        (:func:`_recorded_eagerly`); a named op runs the registered op."""
        if key is None or key not in checked:
            fn(*args, **kwargs, saving=False) if saving else fn(*args, **kwargs)
            if key is not None:
                if len(checked) >= _CHECKED_KEYS:
                    checked.clear()
                checked[key] = True
        return to_registered(*args, **kwargs)

    run = _public_runner(fn, plans, public, saving, record)
    if named:
        call, scope = _named_eager_call(name, public_signature, tensors, configs, run, plans, record)
        scope["_registered"] = registered_public
        to_registered = scope["_to_registered"]  # (a config given to the registered op as its fields)
    else:
        call, scope = _eager_call(name, tensors, _counted(run, tensors), plans, record)
        scope["registered"] = registered_public
        to_registered = recorded_public
    call = _finish(call, fn, public_signature, plans, torch_op)
    call.registered_plans = registered_plans
    call.backward = backward
    return call


__all__ = [
    "DIRECT_LAUNCH_TRITON",
    "PLAIN_TENSORS",
    "Bound",
    "BoundDescriptors",
    "Described",
    "DescriptorLauncher",
    "Launch",
    "Launcher",
    "Launches",
    "Plans",
    "Workspace",
    "call_source",
    "fast_path_enabled",
    "fields_as_dict",
    "is_descriptor",
    "keyword_launch",
    "launcher",
    "layout_key",
    "make_plan",
    "named_call_source",
    "op",
    "option_key",
    "options_key",
    "traced",
    "uncached",
]
