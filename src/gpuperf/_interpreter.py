"""Corrections to Triton's CPU interpreter: bfloat16 computed as numbers, not as bit patterns.

Triton 3.6's interpreter stores a bfloat16 block as its raw 16 bits in a numpy
``uint16`` array (numpy has no bfloat16), and most of its operations hand those
arrays to numpy as they are: they compute on bit patterns as if they were integers,
in bfloat16 only, and without an error.

- ``tl.dot`` multiplies the bit patterns: every matmul is off by orders of magnitude;
- ``+``, ``-``, ``*``, ``tl.fma`` and comparisons of bfloat16 blocks (``x + y`` of two
  bfloat16 loads, as a vector add does) add, multiply and compare the integers (a
  negative number compares above every positive one);
- ``tl.sum`` of a bfloat16 block adds the integers (the other reductions, and
  ``tl.minimum``, ``tl.maximum`` and ``tl.clamp``, widen bfloat16 to float32 first);
- ``x.to(tl.bfloat16)`` from float32 drops the low 16 bits (rounds toward zero,
  a bias of half a unit in the last place on average) where a GPU rounds to
  nearest even, and casts between bfloat16 and float64 or the integer types
  convert the integers.

And a bfloat16 constant (``x * 2.0`` of a bfloat16 ``x``, ``tl.full(shape, value,
tl.bfloat16)`` with a value other than 0) raises ``AttributeError``: the builder has
no ``get_bf16``.

:func:`fix_bfloat16` wraps those methods of the interpreter: bfloat16 operands are
widened to float32 first (exact: a bfloat16 is the top half of a float32), the
operation runs in float32, and a bfloat16 result is rounded to nearest even, which
is what a GPU computes. (For one ``+``, ``-`` or ``*``, rounding to float32 first and
then to bfloat16 gives the correctly rounded bfloat16: float32 carries more than
``2 * 8 + 2`` significant bits.) ``tl.dot`` of bfloat16 operands accumulates in
float32, as tensor cores do. Nothing a GPU compiles changes: the interpreter is not
on the compiled path.
"""

from __future__ import annotations

import functools

import numpy as np

_MARK = "_gpuperf_bfloat16"

#: Builder methods that Triton's frontend hands bfloat16 operands: ``+``, ``-``, ``*``,
#: ``tl.fma`` and comparisons. Their bfloat16 version runs in float32, a floating-point
#: result rounded back to bfloat16. (The frontend widens bfloat16 to float32 itself for
#: ``/``, ``%``, ``tl.minimum``, ``tl.maximum`` and ``tl.clamp``, and the math functions
#: such as ``tl.exp`` accept float32 and float64 only, so none of them sees bfloat16.)
FLOAT_METHODS = (
    "create_fadd",
    "create_fsub",
    "create_fmul",
    "create_fcmpOLT",
    "create_fcmpOGT",
    "create_fcmpOLE",
    "create_fcmpOGE",
    "create_fcmpOEQ",
    "create_fcmpONE",
    "create_fcmpULT",
    "create_fcmpUGT",
    "create_fcmpULE",
    "create_fcmpUGE",
    "create_fcmpUEQ",
    "create_fcmpUNE",
    "create_fma",
)


def to_float32(bits):
    """bfloat16 bit patterns (``uint16`` array) as float32 values: exact."""
    return (np.asarray(bits).astype(np.uint32) << np.uint32(16)).view(np.float32)


def to_bfloat16_bits(values):
    """float32 values as bfloat16 bit patterns (``uint16``), rounded to nearest even.

    The rounding of PyTorch's ``Tensor.to(torch.bfloat16)`` and of a GPU's
    ``cvt.rn.bf16.f32``: add ``0x7FFF`` plus the lowest kept bit, then drop the low 16
    bits (a carry into the exponent rounds up to the next binade, or to infinity).
    NaN becomes the quiet NaN ``0x7FC0``.
    """
    values = np.asarray(values, dtype=np.float32)
    nan = np.isnan(values)
    bits = np.where(nan, np.float32(0), values).view(np.uint32)
    rounded = ((bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)).astype(
        np.uint16
    )
    return np.where(nan, np.uint16(0x7FC0), rounded)


def _is_bfloat16(handle, tl) -> bool:
    """Whether an interpreter handle holds bfloat16 bit patterns (its type says bfloat16 and
    its data are ``uint16``: the interpreter types a comparison's booleans as its operands)."""
    dtype = getattr(handle, "dtype", None)
    data = getattr(handle, "data", None)
    return getattr(dtype, "scalar", None) == tl.bfloat16 and getattr(data, "dtype", None) == np.uint16


def _marked(function):
    setattr(function, _MARK, True)
    return function


def _wrap_float_method(original, interpreter, tl):
    """``original`` with bfloat16 handles widened to float32 and a float32 result rounded back."""
    handle = interpreter.TensorHandle

    def widen(value):
        return handle(to_float32(value.data), tl.float32) if _is_bfloat16(value, tl) else value

    @functools.wraps(original)
    def method(self, *args):
        if not any(_is_bfloat16(a, tl) for a in args):
            return original(self, *args)
        result = original(self, *(widen(a) for a in args))
        if result.data.dtype == np.float32:
            return handle(to_bfloat16_bits(result.data), tl.bfloat16)
        return handle(result.data, tl.int1)  # a comparison's booleans

    return _marked(method)


def _wrap_dot(original, interpreter, tl):
    """``create_dot`` with bfloat16 operands widened to float32: a float32 accumulation."""
    handle = interpreter.TensorHandle

    @functools.wraps(original)
    def create_dot(self, a, b, d, *args, **kwargs):
        if _is_bfloat16(a, tl) or _is_bfloat16(b, tl):
            a, b = (handle(to_float32(x.data), tl.float32) if _is_bfloat16(x, tl) else x for x in (a, b))
        return original(self, a, b, d, *args, **kwargs)

    return _marked(create_dot)


def _wrap_cast(original, interpreter, tl):
    """``cast_impl`` through float32 when bfloat16 is the source or the destination."""
    handle = interpreter.TensorHandle

    @functools.wraps(original)
    def cast_impl(self, src, dst_type):
        src_bf16, dst_bf16 = _is_bfloat16(src, tl), dst_type.scalar == tl.bfloat16
        if src_bf16 and dst_bf16:
            return handle(src.data, tl.bfloat16)
        if src_bf16:
            wide = handle(to_float32(src.data), tl.float32)
            return wide if dst_type.scalar == tl.float32 else original(self, wide, dst_type)
        if dst_bf16:
            # float64 and integers are rounded to float32 first, then to bfloat16.
            return handle(to_bfloat16_bits(np.asarray(src.data).astype(np.float32)), tl.bfloat16)
        return original(self, src, dst_type)

    return _marked(cast_impl)


def _wrap_sum(original, interpreter, tl):
    """``ReduceOps.sum`` (the numpy sum behind ``tl.sum``) of a bfloat16 tensor: summed in
    float32 and rounded once to bfloat16. (A GPU adds in bfloat16, rounding its partial
    sums: the two can differ in the last place.)"""
    handle = interpreter.TensorHandle

    def retyped(tensor, element_ty, data):
        ty = tensor.type.with_element_ty(element_ty) if tensor.type.is_block() else element_ty
        return tl.core.tensor(handle(data, element_ty), ty)

    @functools.wraps(original)
    def sum(self, input):
        if not _is_bfloat16(input.handle, tl):
            return original(self, input)
        total = original(self, retyped(input, tl.float32, to_float32(input.handle.data)))
        return retyped(total, tl.bfloat16, to_bfloat16_bits(total.handle.data))

    return _marked(sum)


def _get_bf16(interpreter, tl):
    """The builder's ``get_bf16``: a bfloat16 scalar constant, which Triton's frontend asks
    for (``x * 2.0``, ``tl.full(shape, -inf, tl.bfloat16)``) and the interpreter lacks."""
    handle = interpreter.TensorHandle

    def get_bf16(self, value):
        return handle(to_bfloat16_bits(np.array([value], dtype=np.float32)), tl.bfloat16)

    return _marked(get_bf16)


def _targets(interpreter):
    """``(owner, name, wrap)`` for every method :func:`fix_bfloat16` wraps, or None where
    this interpreter lacks one of them."""
    builder = getattr(interpreter, "InterpreterBuilder", None)
    targets = [(builder, name, _wrap_float_method) for name in FLOAT_METHODS]
    targets += [(builder, "create_dot", _wrap_dot), (builder, "cast_impl", _wrap_cast)]
    targets.append((getattr(interpreter, "ReduceOps", None), "sum", _wrap_sum))
    if any(owner is None or not callable(getattr(owner, name, None)) for owner, name, _ in targets):
        return None
    return targets


def fix_bfloat16() -> bool:
    """Make the interpreter compute bfloat16 as numbers; return whether it does.

    Wraps, once, each method of Triton's interpreter listed in the module's summary
    (:data:`FLOAT_METHODS`, ``create_dot``, ``cast_impl``, ``ReduceOps.sum``), and gives
    its builder the ``get_bf16`` it lacks (bfloat16 constants). Idempotent: a second call
    finds them wrapped and wraps nothing again. Does nothing (and returns False) where
    the interpreter does not store bfloat16 as ``uint16`` bit patterns or lacks one of
    those methods, so that a Triton release that changes either is left alone.
    """
    import triton.language as tl
    from triton.runtime import interpreter

    np_dtype = getattr(interpreter, "_get_np_dtype", None)
    if np_dtype is None or np_dtype(tl.bfloat16) != np.uint16:
        return False
    targets = _targets(interpreter)
    if targets is None:
        return False
    for owner, name, wrap in targets:
        original = getattr(owner, name)
        if not getattr(original, _MARK, False):
            setattr(owner, name, wrap(original, interpreter, tl))
    if not hasattr(interpreter.InterpreterBuilder, "get_bf16"):
        interpreter.InterpreterBuilder.get_bf16 = _get_bf16(interpreter, tl)
    return True
