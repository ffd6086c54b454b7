"""A correction to Triton's CPU interpreter: ``tl.dot`` of bfloat16 operands.

Triton 3.6's interpreter stores a bfloat16 block as its raw 16 bits in a numpy
``uint16`` array (numpy has no bfloat16), and its ``create_dot`` hands those arrays
to ``np.matmul`` as they are: it multiplies bit patterns as integers. Every kernel
built on ``tl.dot`` then returns numbers off by orders of magnitude, in bfloat16
only, and without an error.

:func:`fix_bfloat16_dot` wraps the interpreter's ``create_dot`` so that bfloat16
operands are widened to float32 first (exact: a bfloat16 is the top half of a
float32) and the product is accumulated in float32, as a GPU's tensor cores do.
It changes nothing a GPU compiles: the interpreter is not on the compiled path.
"""

from __future__ import annotations

import functools

_MARK = "_gpuperf_bfloat16_dot"


def _widened(handle, tl, np, tensor_handle):
    """``handle`` as float32 if it holds bfloat16 bits, else unchanged."""
    if handle.dtype.scalar != tl.bfloat16:
        return handle
    bits = handle.data.astype(np.uint32) << np.uint32(16)
    return tensor_handle(bits.view(np.float32), tl.float32)


def fix_bfloat16_dot() -> bool:
    """Make the interpreter's ``tl.dot`` right for bfloat16 operands; return whether it is.

    Idempotent. Does nothing (and returns False) where the interpreter's builder has
    no ``create_dot`` of the expected form, so that a Triton release that fixes or
    renames it is left alone.
    """
    import numpy as np
    import triton.language as tl
    from triton.runtime import interpreter

    builder = getattr(interpreter, "InterpreterBuilder", None)
    original = getattr(builder, "create_dot", None)
    if original is None:
        return False
    if getattr(original, _MARK, False):
        return True
    tensor_handle = interpreter.TensorHandle

    @functools.wraps(original)
    def create_dot(self, a, b, d, *args, **kwargs):
        if tl.bfloat16 in (a.dtype.scalar, b.dtype.scalar):
            a = _widened(a, tl, np, tensor_handle)
            b = _widened(b, tl, np, tensor_handle)
        return original(self, a, b, d, *args, **kwargs)

    setattr(create_dot, _MARK, True)
    builder.create_dot = create_dot
    return True
