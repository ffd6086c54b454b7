"""Compile Gluon kernels for Hopper on a machine without a GPU.

Triton's JIT asks the active driver for the target it compiles for. Under
:func:`hopper_target` a stand-in driver names ``sm_90``, so that ``kernel.warmup(...)``
runs the whole compiler (Gluon to TTGIR, LLVM, PTX and ``ptxas``, all bundled with
Triton's wheel) and returns the compiled kernel, its PTX and its shared memory, without
launching anything. The tests use it to hold every Gluon kernel to compiling on a CPU.
"""

from __future__ import annotations

import contextlib

from triton.backends.compiler import GPUTarget
from triton.runtime import driver


class _HopperStandIn:
    """The three questions the JIT asks before compiling, answered for an H100."""

    def get_current_target(self):
        return GPUTarget("cuda", 90, 32)

    def get_current_device(self):
        return 0

    def get_current_stream(self, device=None):
        return 0

    def __getattr__(self, name):
        raise RuntimeError(f"no GPU here: the stand-in driver cannot {name}")


@contextlib.contextmanager
def hopper_target(*kernels):
    """Within the block, Triton compiles for ``sm_90`` whatever GPU (or none) is present.

    ``kernels`` are the Gluon kernels to be compiled: their per-device caches are cleared
    on the way out, so a later launch on a real GPU compiles for that GPU.
    """
    previous = driver._active  # (None until something asks; DriverConfig has no getter for it)
    driver.set_active(_HopperStandIn())
    try:
        yield
    finally:
        driver._active = previous
        for kernel in kernels:
            kernel.device_caches.clear()
