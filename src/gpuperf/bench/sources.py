"""What a measurement's code is: the source files it ran, followed through their imports,
and a hash of each that changes with the code and with nothing else.

A record (or a capture) names the modules its providers call, such as
``kernels/softmax.py``. :func:`closure` follows their imports, at module level or inside
functions, to every module of the package's code under study (:data:`FOLLOWED`) that they
reach: the launch path, the validation, the configs. :func:`file_sha256` hashes a module's
*code*: its syntax tree without docstrings, comments or layout, written out in a form
that every Python from 3.10 on gives alike. So a reworded docstring or a reformatted
line leaves a record current, and any change to what runs makes it stale.

What is not followed: ``reference.py`` (the PyTorch references and the eager formulas the
baselines run, which are PyTorch's speed, not the package's), ``testing.py``, and the
measuring and rendering code under ``bench/`` and ``pages/``.
"""

from __future__ import annotations

import ast
import functools
import hashlib
from collections.abc import Iterable
from pathlib import Path

#: The package's root: ``src/gpuperf``. Source paths are relative to it.
PACKAGE_ROOT = Path(__file__).resolve().parents[1]
PACKAGE = PACKAGE_ROOT.name

#: Sources whose imports are followed: the kernels, the models built of them, and the
#: runtime probes they all read. A path is followed when it starts with one of these.
FOLLOWED = ("kernels/", "models/", "_runtime.py")


def _drop_strings(node: ast.AST) -> None:
    """Remove every statement that is a lone string constant (docstrings, and strings
    written as attribute documentation): Python evaluates and discards them."""
    for field in ("body", "orelse", "finalbody", "handlers"):
        body = getattr(node, field, None)
        if isinstance(body, list):
            kept = [
                stmt
                for stmt in body
                if not (
                    isinstance(stmt, ast.Expr)
                    and isinstance(stmt.value, ast.Constant)
                    and isinstance(stmt.value.value, str)
                )
            ]
            # A body must not be empty: a function that was only a docstring keeps a `pass`.
            body[:] = kept or [ast.Pass()]
    for child in ast.iter_child_nodes(node):
        _drop_strings(child)


#: Fields left out of the canonical form: positions, a string's ``u`` prefix, type comments
#: (none of which changes what runs), and the contexts Load/Store, implied by the node.
_SKIPPED_FIELDS = frozenset({"ctx", "kind", "type_comment"})


def _canonical(node) -> str:
    """A node written out as ``(Type,field=...,...)``, leaving out empty lists and None (so
    fields that newer Pythons added, empty in our code, such as ``type_params``, change
    nothing)."""
    if isinstance(node, ast.AST):
        parts = [type(node).__name__]
        for name in node._fields:
            if name in _SKIPPED_FIELDS:
                continue
            value = getattr(node, name, None)
            if value is None or value == []:
                continue
            parts.append(f"{name}={_canonical(value)}")
        return "(" + ",".join(parts) + ")"
    if isinstance(node, list):
        return "[" + ",".join(_canonical(item) for item in node) + "]"
    return repr(node)


def canonical_code(text: str) -> str:
    """Python source reduced to what it does: its syntax tree with docstrings and other lone
    strings removed, comments and layout gone, written out canonically.

    Raises:
        SyntaxError: ``text`` is not valid Python.
    """
    tree = ast.parse(text)
    _drop_strings(tree)
    return _canonical(tree)


def file_sha256(rel: str) -> str:
    """SHA-256 of the source ``rel`` (a path relative to ``src/gpuperf``): of its
    :func:`canonical_code` for a Python file, of its bytes for any other file.

    Raises:
        FileNotFoundError: no such file.
    """
    path = PACKAGE_ROOT / rel
    if path.suffix == ".py":
        return _code_sha256(path.read_text())
    return hashlib.sha256(path.read_bytes()).hexdigest()


# The pages ask whether each record is current many times a build (and the tests more), and
# parsing is most of the cost: what is read from a file's text is kept, keyed on the text, so
# an edited file is read again and an unchanged one is parsed once a process.
@functools.cache
def _code_sha256(text: str) -> str:
    return hashlib.sha256(canonical_code(text).encode()).hexdigest()


@functools.cache
def _imports(text: str) -> tuple[tuple[str | None, int, tuple[str, ...]], ...]:
    """The import statements of the Python source ``text``, anywhere in it, in order:
    ``(None, 0, names)`` for ``import a, b.c``, ``(module, level, names)`` for
    ``from module import names`` (``module`` None for ``from . import x``)."""
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            found.append((None, 0, tuple(alias.name for alias in node.names)))
        elif isinstance(node, ast.ImportFrom):
            found.append((node.module, node.level, tuple(alias.name for alias in node.names)))
    return tuple(found)


def _module_file(module: str) -> str | None:
    """The source path (relative to the package) of the dotted ``module``, or None when it is
    not one of the package's modules."""
    parts = module.split(".")
    if parts[0] != PACKAGE:
        return None
    rel = Path(*parts[1:]) if len(parts) > 1 else Path()
    if (PACKAGE_ROOT / rel).with_suffix(".py").is_file() and len(parts) > 1:
        return rel.with_suffix(".py").as_posix()
    if (PACKAGE_ROOT / rel / "__init__.py").is_file():
        return (rel / "__init__.py").as_posix()
    return None


@functools.cache
def _reexports(package_file: str) -> dict[str, str]:
    """``{name: module}`` of the names a package's ``__init__`` imports from its own modules."""
    tree = ast.parse((PACKAGE_ROOT / package_file).read_text())
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                found[alias.asname or alias.name] = node.module
    return found


def _imported_files(rel: str) -> set[str]:
    """The package's source files that ``rel`` imports, anywhere in it (a function's
    imports included). ``from pkg import name`` counts the submodule ``pkg.name`` if there
    is one, else the module the package's ``__init__`` takes ``name`` from, else the
    ``__init__`` itself."""
    package = ".".join([PACKAGE, *Path(rel).parent.parts])
    found = set()
    for module_name, level, names in _imports((PACKAGE_ROOT / rel).read_text()):
        if module_name is None and not level:  # import a, b.c
            modules = list(names)
        else:
            base = module_name or ""
            if level:
                parent = package.split(".")[: len(package.split(".")) - (level - 1)]
                base = ".".join([*parent, *([module_name] if module_name else [])])
            modules = []
            for name in names:
                sub = f"{base}.{name}"
                init = _module_file(base)
                if _module_file(sub) is not None:
                    modules.append(sub)
                elif init is not None and init.endswith("__init__.py") and name in _reexports(init):
                    modules.append(_reexports(init)[name])
                else:
                    modules.append(base)
        for module in modules:
            path = _module_file(module)
            if path is not None:
                found.add(path)
    return found


def followed(rel: str) -> bool:
    """Whether the source ``rel`` is part of the code under study (:data:`FOLLOWED`)."""
    return rel.startswith(FOLLOWED)


def closure(sources: Iterable[str]) -> tuple[str, ...]:
    """``sources`` and every followed module (:data:`FOLLOWED`) they import, directly or
    through each other, sorted. Non-Python sources are kept as they are.

    Raises:
        FileNotFoundError: a source does not exist.
    """
    todo = list(sources)
    seen: set[str] = set()
    while todo:
        rel = todo.pop()
        if rel in seen:
            continue
        if not (PACKAGE_ROOT / rel).is_file():
            raise FileNotFoundError(f"source {rel!r} not found under {PACKAGE_ROOT}")
        seen.add(rel)
        if rel.endswith(".py"):
            todo += [f for f in _imported_files(rel) if followed(f) and f not in seen]
    return tuple(sorted(seen))


def hashes(sources: Iterable[str]) -> dict[str, str]:
    """``{path: file_sha256(path)}`` over the :func:`closure` of ``sources``."""
    return {rel: file_sha256(rel) for rel in closure(sources)}


def combined_sha256(file_hashes: dict[str, str]) -> str:
    """One hash of ``{path: sha256}``: what a record stores as ``sources_sha256``."""
    h = hashlib.sha256()
    for rel in sorted(file_hashes):
        h.update(f"{rel}\0{file_hashes[rel]}\n".encode())
    return h.hexdigest()


def changes(stored: dict[str, str], sources: Iterable[str]) -> list[str]:
    """What differs between the file hashes ``stored`` with a measurement and the code as it
    stands, for the sources the measurement names: ``['kernels/softmax.py changed',
    'kernels/launch.py is new']``; empty when nothing does. A named source that no longer
    exists is gone (and its imports are not followed)."""
    now = hashes(rel for rel in sources if (PACKAGE_ROOT / rel).is_file())
    found = [f"{rel} changed" for rel in sorted(now) if rel in stored and stored[rel] != now[rel]]
    found += [f"{rel} is new" for rel in sorted(set(now) - set(stored))]
    found += [f"{rel} is gone" for rel in sorted(set(stored) - set(now))]
    return found
