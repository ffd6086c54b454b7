"""The kernels' source as ``torch.compile`` reads it.

Inside a compiled graph, Inductor does not launch a user's ``@triton.jit`` kernel from its
module: it writes the kernel's source (``JITFunction.src``) into a file of its own, with
the source of every jit function the kernel names that its module's globals hold, found by
name (torch/_inductor/codegen/wrapper.py, ``define_user_defined_triton_kernel``). A helper
called through a module of ours, ``tiles.store_tile(...)``, is not followed: the copied
kernel then fails to compile (``NameError: tiles``), and every compiled call of the op
fails with it, though the eager call works. So a kernel calls the jit functions it shares
by their own names, imported into its module (``from gpuperf.kernels.tiles import
store_tile``); ``tl.``, ``triton.`` and Gluon's modules are Triton's, which Inductor imports.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import textwrap
import types

import triton
from triton.runtime.jit import KernelInterface

import gpuperf.kernels
from gpuperf.kernels import tiles as shared_tiles


def _jit_functions() -> dict[str, KernelInterface]:
    """Every jit function defined in a module of :mod:`gpuperf.kernels`, by qualified name
    (a ``JITFunction``, or under the interpreter the ``InterpretedFunction`` wrapping it)."""
    found = {}
    for info in pkgutil.walk_packages(gpuperf.kernels.__path__, "gpuperf.kernels."):
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # (a Gluon module where this Triton has no Gluon)
            continue
        for name, value in vars(module).items():
            fn = getattr(value, "fn", None)
            if isinstance(value, KernelInterface) and getattr(fn, "__module__", None) == module.__name__:
                found[f"{module.__name__}.{name}"] = value
    return found


def calls_through_our_modules(kernel: KernelInterface) -> list[str]:
    """The calls in ``kernel``'s source of the form ``m.f(...)`` where ``m`` is, in its
    module's globals, a module of gpuperf: ``["tiles.store_tile"]``."""
    found = []
    for node in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(kernel.fn)))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            if isinstance(owner, ast.Name):
                bound = kernel.fn.__globals__.get(owner.id)
                if isinstance(bound, types.ModuleType) and bound.__name__.startswith("gpuperf"):
                    found.append(f"{owner.id}.{node.func.attr}")
    return found


def test_kernels_call_shared_jit_functions_by_their_own_names():
    kernels = _jit_functions()
    assert len(kernels) > 30  # (the walk found the kernels)
    offenders = {name: calls for name, k in kernels.items() if (calls := calls_through_our_modules(k))}
    assert offenders == {}, f"import these by name, as Inductor copies a kernel by name: {offenders}"


@triton.jit
def _calls_through_a_module(tile_id):
    return shared_tiles.tile_coords(tile_id, 4, 4, 2)


def test_the_check_finds_a_call_through_a_module():
    assert calls_through_our_modules(_calls_through_a_module) == ["shared_tiles.tile_coords"]
