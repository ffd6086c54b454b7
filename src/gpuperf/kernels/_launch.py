"""Launching a compiled Triton kernel with as little host time as PyTorch's own ops.

``kernel[grid](*args)`` does a lot of Python on every call: it binds the arguments
to the signature, computes Triton's specialization key, turns the options into a
string for a dictionary lookup, checks the kernel's globals, reads the launch
hooks and builds launch metadata. On the virtual machines these docs measure on,
that came to about 27 us per launch of the softmax kernel (``torch.softmax``
costs 8-17 us), before the wrapper's own checks.

:class:`Launcher` keeps the compiled kernels it has seen in a dictionary keyed by
exactly what Triton specializes on, computed in a few lines of Python:

* every tensor: its dtype and whether its address is a multiple of 16 bytes;
* every non-constexpr int: whether it equals 1, whether it is a multiple of 16,
  and whether it fits in 32 bits (Triton passes it as i32 or i64);
* every constexpr: its value; and ``num_warps``, ``num_stages`` and the device.

The first call with a new key goes through ``kernel[grid]`` (which compiles, or
finds the binary in Triton's cache, and launches) and keeps the compiled kernel
it returns; later calls hand the arguments straight to its C launcher. So a
cached binary never runs on arguments that Triton would have specialized
differently. While a launch hook is installed (Triton's profiler, proton, adds
one) and under the interpreter, every call takes ``kernel[grid]``.
"""

from __future__ import annotations

import contextlib

import torch
import triton
from triton import knobs

from gpuperf._runtime import is_interpreter

_I32_MIN, _I32_MAX = -(2**31), 2**31 - 1

#: Triton versions whose C launcher :class:`Launcher` calls directly (its argument
#: layout is internal to Triton); other versions go through ``CompiledKernel.run``.
DIRECT_LAUNCH_TRITON = ("3.6.",)


#: Set to False by :func:`uncached`: every launch then goes through ``kernel[grid]``.
CACHE_ENABLED = True


@contextlib.contextmanager
def uncached():
    """Launch through ``kernel[grid]`` (Triton's own launcher) inside this block.

    The host-overhead benchmark uses it to measure what the cache saves, in the
    same run as the cached wrappers.
    """
    global CACHE_ENABLED
    CACHE_ENABLED = False
    try:
        yield
    finally:
        CACHE_ENABLED = True


def _int_key(value: int) -> int:
    """The part of Triton's specialization that depends on an int argument's value."""
    if value == 1:
        return 1
    return (2 if value % 16 == 0 else 0) | (0 if _I32_MIN <= value <= _I32_MAX else 4)


class Launcher:
    """Launch ``kernel`` (a ``@triton.jit`` function) through a cache of compiled binaries.

    Call it as ``launcher(grid, runtime, constexprs, num_warps=..., num_stages=...)``:
    ``runtime`` holds the kernel's tensor and scalar arguments and ``constexprs``
    its compile-time ones, each in signature order (the kernels of this package
    declare their constexprs last).
    """

    def __init__(self, kernel):
        self.kernel = kernel
        self.interpreted = is_interpreter()
        self._compiled: dict[tuple, tuple] = {}
        # Under the interpreter the kernel is an InterpretedFunction: no params, no binaries.
        flags = [p.is_constexpr for p in getattr(kernel, "params", ())]
        if flags and flags != sorted(flags):
            raise ValueError(f"{kernel.__name__}: Launcher needs the constexpr parameters declared last")
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
            launch(*grid, stream, function, *head, *args, *constexprs)
        if not bind:
            return None
        n_tensors = next((i for i, v in enumerate(runtime) if not isinstance(v, torch.Tensor)), len(runtime))
        if any(isinstance(v, torch.Tensor) for v in runtime[n_tensors:]):
            return None  # a Bound takes the tensors' addresses first
        return Bound(entry, grid, device, tuple(args[n_tensors:]) + tuple(constexprs))

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
    """One launch with everything fixed but the addresses of the kernel's leading tensors.

    A wrapper keeps these in a :class:`Plans` keyed by the metadata of inputs it has
    already checked (shape, strides, dtype, device, 16-byte alignment), so a call
    with inputs like those skips the checks, the planning and the specialization
    key, and pays for the output allocation and the launch alone.
    """

    __slots__ = ("device", "function", "grid", "head", "launch", "tail")

    def __init__(self, entry: tuple, grid: tuple, device: int, tail: tuple):
        self.launch, self.function, self.head = entry
        self.grid, self.device, self.tail = grid, device, tail

    def __call__(self, *addresses: int) -> None:
        stream = torch._C._cuda_getCurrentRawStream(self.device)
        self.launch(*self.grid, stream, self.function, *self.head, *addresses, *self.tail)


class Plans:
    """The :class:`Bound` launches of one op, by the metadata of inputs already checked.

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


def fast_path_enabled() -> bool:
    """False under :func:`uncached` or while a launch hook (proton, say) is installed."""
    return CACHE_ENABLED and not knobs.runtime.launch_enter_hook.calls


def traced(kernel):
    """A launch function for the bodies of the ``torch.library`` ops (same call as :class:`Launcher`).

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
