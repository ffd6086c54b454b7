"""The fast path of the public ops, written once: inputs like ones already checked launch from
their plan.

A public op checks its arguments, picks a launch configuration, makes its tensor
descriptors, allocates its output and launches. For the small tensors of a decode step,
that host work costs more than the GPU's (tutorial 01 measures it), and none of it
changes between two calls whose inputs have the same shapes, strides, dtypes, device
and alignment. :func:`planned` gives an op a **plan** per such input layout: what is
left to do for inputs like those, allocate the output and launch the kernels bound to
everything but the new addresses (:class:`gpuperf.kernels._launch.Bound`,
:class:`gpuperf.kernels.tma.BoundDescriptors`).

The op's body is written as usual and returns ``(result, plan)``: the plan a callable
``plan(*tensors) -> result`` that repeats the body on new tensors of the same layout,
or None where there can be none (a copy was made, autograd records the call). The
decorator keeps each plan under the key of the call (:func:`call_key`) and a later call
with the same key runs the plan instead of the body. The key holds everything the body
reads: each tensor argument's shape, strides, dtype, device and address modulo 16 (what
Triton specializes a kernel on), and the other arguments as given, each with its type
(:func:`option_key`): ``True``, ``1`` and ``1.0`` are equal dictionary keys, but an op
that refuses ``causal=1`` must not take the plan of ``causal=True``.

The body always runs while torch.compile traces the op (it traces the body), while
autograd records the call, while a launch hook is installed (Triton's profiler, proton)
or under :func:`gpuperf.kernels._launch.uncached`, and for arguments that are not plain
(a tensor subclass, a list as an option): then nothing is planned. :func:`uncached` (a
context manager) turns plans and the launch cache off inside its block, so that a
measurement can compare them with Triton's own launch path.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch

from gpuperf.kernels._launch import Plans, uncached

#: Tensor types whose metadata a key holds in full: plain tensors and a model's weights.
PLAIN_TENSORS = (torch.Tensor, torch.nn.Parameter)


def tensor_key(t: torch.Tensor) -> tuple:
    """What a plan depends on of one tensor: shape, strides, dtype, device and whether (and how)
    its address misses 16-byte alignment."""
    return (t.shape, t.stride(), t.dtype, t.get_device(), t.data_ptr() % 16)


def option_key(value) -> tuple:
    """What a plan depends on of one other argument: its type and value, a tuple's item by
    item (``(64, 4, True)`` is not ``(64, 4, 1)``)."""
    if type(value) is tuple:
        return (tuple, *map(option_key, value))
    return (type(value), value)


def call_key(tensors: tuple, options: tuple, keywords: dict) -> tuple | None:
    """The key of a call: :func:`tensor_key` of each of ``tensors``, then :func:`option_key`
    of ``options`` (the other positional arguments) and of ``keywords``, as given; None when
    a tensor is not a plain one or autograd would record the call. (An option that cannot
    be a dictionary key, a list say, makes the key unhashable: :func:`planned` then runs
    the body.)"""
    if not all(type(t) in PLAIN_TENSORS for t in tensors):
        return None
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        return None
    return (
        *map(tensor_key, tensors),
        tuple(map(option_key, options)),
        tuple((name, option_key(value)) for name, value in keywords.items()),
    )


def planned(tensors: int) -> Callable:
    """Decorate an op whose first ``tensors`` positional arguments are its tensor inputs (see
    the module's text). The op's body returns ``(result, plan)``; the decorated op returns
    the result, and keeps the plan for the next call with the same key. The decorated op
    has the body's name, signature and docstring, and its plans as ``op.plans``
    (:class:`gpuperf.kernels._launch.Plans`).

    Raises:
        ValueError: ``tensors`` is not a positive int.
    """
    if type(tensors) is not int or tensors < 1:
        raise ValueError(f"tensors must be a positive int, got {tensors!r}")

    def decorate(body: Callable) -> Callable:
        plans = Plans()

        @functools.wraps(body)
        def op(*args, **kwargs):
            if len(args) < tensors or torch.compiler.is_compiling():
                return body(*args, **kwargs)[0]
            key = call_key(args[:tensors], args[tensors:], kwargs)
            if key is None:
                return body(*args, **kwargs)[0]
            try:
                plan = plans.get(key)
            except TypeError:  # an option that is no dictionary key
                return body(*args, **kwargs)[0]
            if plan is not None:
                return plan(*args[:tensors])
            result, plan = body(*args, **kwargs)
            plans.put(key, plan)
            return result

        op.plans = plans
        return op

    return decorate


__all__ = ["PLAIN_TENSORS", "call_key", "option_key", "planned", "tensor_key", "uncached"]
