"""The layering rules of DESIGN.md (style 10), checked on the source.

Every module under ``src/gpuperf`` and every script of ``tutorials/``, ``guides/``,
``scripts/``, ``docs/*.py`` and ``docs/_ext/*.py`` is parsed with :mod:`ast` (nothing
is imported), and only imports of gpuperf's own modules are read:

(a) no private name crosses a module: ``from M import _name`` where ``_name`` is not a
    submodule of ``M`` (imports under ``if TYPE_CHECKING:`` count too), nor ``m._name``
    where ``m`` is a name (or a chain of attributes, ``kernels.softmax``) that an import
    bound to the module ``M``: ``import gpuperf.kernels.softmax as m``, ``from
    gpuperf.kernels import _configs``, ``from gpuperf import kernels`` then
    ``kernels.softmax._x``, ``m = importlib.import_module("gpuperf.kernels.softmax")``
    then ``m._x``. A package's attribute is its submodule only where the
    package's ``__init__`` binds the name to nothing else (``gpuperf.kernels.attention``
    is the function its ``__init__`` imports, not the module). ``M._sub`` where ``_sub``
    is a private submodule is rule (b)'s business, as for an import;
(b) a private module (a dotted path with a component ``_x``) is imported only from
    inside the package that owns it: ``gpuperf.kernels._configs`` from
    ``gpuperf.kernels.*``, ``gpuperf._runtime`` from any ``gpuperf.*``; scripts are
    outside every package;
(c) no import cycle among gpuperf's modules, counting imports inside functions and
    those under ``if TYPE_CHECKING:`` (a cycle of annotations is one of meaning too: two
    modules that each need the other are one module, or a third is missing). ``from pkg
    import name`` is an edge to ``pkg.name`` when that is a submodule, to ``pkg.sub`` when
    the package's ``__init__`` re-exports ``name`` through ``from pkg.sub import name``,
    and to ``pkg`` otherwise.

Offenders that someone is fixing now are listed once per rule, each with why; a test
checks that every listed entry still offends, so a list can only shrink. The tests
themselves are not checked: they may test internals.
"""

from __future__ import annotations

import ast
import functools
import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "gpuperf"

#: The scripts read besides the package, as globs relative to the repository.
SCRIPT_GLOBS = ("tutorials/*.py", "guides/*.py", "scripts/*.py", "docs/*.py", "docs/_ext/*.py")

_SWEEPS = "a maintainer's sweep or capture script launches the kernel itself, with each config"
_TABLES = "clearing a config table's cache; its forget_tuned() would stale every record until re-measured"

#: Rule (a): ``(importer, module, name)`` -> why it is allowed for now (imported or read).
PRIVATE_NAME_ALLOWLIST: dict[tuple[str, str, str], str] = {
    # Scripts that launch a kernel themselves with each candidate config (the sweep behind
    # the launch rules, the profiler's capture), reading the kernel by its private name.
    ("scripts/explore_configs.py", "gpuperf.kernels.softmax", "_softmax_kernel"): _SWEEPS,
    ("scripts/explore_configs.py", "gpuperf.kernels.softmax", "_softmax_online_kernel"): _SWEEPS,
    ("scripts/profile_capture.py", "gpuperf.kernels.row_mean", "_row_mean_kernel"): _SWEEPS,
    # (The capture compiles the kernel softmax launches for its shape: _launch_config gives
    # that kernel with its constexprs and warps, read as an attribute of the module.)
    ("scripts/profile_capture.py", "gpuperf.kernels.softmax", "_launch_config"): _SWEEPS,
    # The tuned tables' caches, dropped by the ops' forget_tuned_configs. A public
    # forget_tuned() beside them (as _persistent_configs has) is a new function of a config
    # table, which records of GPU time hash: it waits for the next full measurement.
    ("gpuperf.kernels.matmul", "gpuperf.kernels._configs", "_tuned_table"): _TABLES,
    ("gpuperf.kernels.attention", "gpuperf.kernels._attention_configs", "_attention_table"): _TABLES,
    ("scripts/benchmark_guide_capture.py", "gpuperf.kernels.scale_shift", "_scale_shift_kernel"): _SWEEPS,
}

#: Rule (b): ``(importer, private module)`` -> why it is allowed for now.
PRIVATE_MODULE_ALLOWLIST: dict[tuple[str, str], str] = {}

#: Rule (c): the modules of one import cycle -> why it is allowed for now.
CYCLE_ALLOWLIST: dict[frozenset[str], str] = {}


# The parsed source -------------------------------------------------------------------


@dataclass(frozen=True)
class Module:
    """One parsed file: a module of the package (``name`` dotted) or a script
    (``name`` its path, outside every package)."""

    name: str
    file: str
    is_package: bool
    in_package: bool
    tree: ast.Module

    @functools.cached_property
    def nodes(self) -> list[ast.AST]:
        """Every node of ``tree``, in :func:`ast.walk`'s order (walked once: each rule reads
        them all, and walking was most of the rules' time)."""
        return list(ast.walk(self.tree))


@dataclass(frozen=True)
class Import:
    """One imported name: ``from module import name``, or ``import module`` (``name`` None)."""

    importer: Module
    line: int
    module: str
    name: str | None

    @property
    def where(self) -> str:
        return f"{self.importer.file}:{self.line}"


def parse_sources(sources: Mapping[str, str]) -> dict[str, Module]:
    """The modules of ``{path relative to the repository: text}``: files under
    ``src/`` are package modules, the rest scripts. Keyed by ``Module.name``."""
    modules = {}
    for rel, text in sources.items():
        parts = Path(rel).with_suffix("").parts
        in_package = parts[0] == "src"
        is_package = in_package and parts[-1] == "__init__"
        if in_package:
            name = ".".join(parts[1:-1] if is_package else parts[1:])
        else:
            name = rel
        modules[name] = Module(name, rel, is_package, in_package, ast.parse(text, filename=rel))
    return modules


def load_codebase() -> dict[str, Module]:
    files = sorted((ROOT / "src" / PACKAGE).rglob("*.py"))
    files += sorted(p for pattern in SCRIPT_GLOBS for p in ROOT.glob(pattern))
    return parse_sources({p.relative_to(ROOT).as_posix(): p.read_text() for p in files})


def is_private(component: str) -> bool:
    """``_x`` and ``__x`` are private; ``__init__``-style dunders are not."""
    return component.startswith("_") and not (component.startswith("__") and component.endswith("__"))


def _base(module: Module, node: ast.ImportFrom) -> str | None:
    """The absolute module a (possibly relative) ``from ... import`` names."""
    if not node.level:
        return node.module
    if not module.in_package:
        return None
    parts = module.name.split(".")
    package = parts if module.is_package else parts[:-1]
    package = package[: len(package) - (node.level - 1)]
    return ".".join([*package, *([node.module] if node.module else [])])


def _ours(name: str | None) -> bool:
    return name is not None and (name == PACKAGE or name.startswith(PACKAGE + "."))


def imports(module: Module) -> Iterator[Import]:
    """Every import of a gpuperf module in ``module``, at any depth (under ``if TYPE_CHECKING:``
    too)."""
    for node in module.nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _ours(alias.name):
                    yield Import(module, node.lineno, alias.name, None)
        elif isinstance(node, ast.ImportFrom):
            base = _base(module, node)
            if _ours(base):
                for alias in node.names:
                    yield Import(module, node.lineno, base, alias.name)


def all_imports(modules: Mapping[str, Module]) -> list[Import]:
    return [imp for m in modules.values() for imp in imports(m)]


def _is_module(modules: Mapping[str, Module], name: str) -> bool:
    return name in modules and modules[name].in_package


def _rebinds(init: Module, name: str) -> bool:
    """Whether a package's ``__init__`` binds ``name`` at its top level to something other than
    its submodule: ``from pkg.sub import name``, ``name = ...``, ``def name``, ``class name``."""
    for node in init.tree.body:
        if isinstance(node, ast.ImportFrom):
            base = _base(init, node)
            if any(
                (alias.asname or alias.name) == name and f"{base}.{alias.name}" != f"{init.name}.{name}"
                for alias in node.names
            ):
                return True
        elif isinstance(node, ast.Import):
            if any(alias.asname == name for alias in node.names):
                return True
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == name:
                return True
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return True
    return False


def submodule(modules: Mapping[str, Module], package: str, name: str) -> str | None:
    """The module that ``package.name`` is at run time (``from package import name``, or the
    attribute), or None when it is no module of ours: not a submodule, or a name the
    package's ``__init__`` binds to something else."""
    target = f"{package}.{name}"
    if not _is_module(modules, target):
        return None
    init = modules.get(package)
    if init is not None and init.is_package and _rebinds(init, name):
        return None
    return target


@dataclass(frozen=True)
class Access:
    """One attribute read (or written) on a gpuperf module: ``module.name`` in ``reader``."""

    reader: Module
    line: int
    module: str
    name: str

    @property
    def where(self) -> str:
        return f"{self.reader.file}:{self.line}"


def module_bindings(modules: Mapping[str, Module], module: Module) -> dict[str, str]:
    """The names that ``module``'s imports (at any depth) bind to gpuperf modules:
    ``{local name: dotted module}``. ``import gpuperf.a.b`` binds ``gpuperf``; ``import
    gpuperf.a.b as m`` binds ``m`` to ``gpuperf.a.b``; ``from gpuperf.a import b`` binds ``b``
    where ``gpuperf.a.b`` is a module (:func:`submodule`); ``m =
    importlib.import_module("gpuperf.a.b")`` binds ``m``."""
    bound = {}
    for node in module.nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if not _ours(alias.name):
                    continue
                if alias.asname is None:
                    bound[alias.name.split(".")[0]] = PACKAGE
                elif _is_module(modules, alias.name):
                    bound[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom):
            base = _base(module, node)
            if not _ours(base):
                continue
            for alias in node.names:
                target = submodule(modules, base, alias.name)
                if target is not None:
                    bound[alias.asname or alias.name] = target
        elif isinstance(node, ast.Assign) and [type(t) for t in node.targets] == [ast.Name]:
            target = _imported_by_name(node.value)
            if _ours(target) and _is_module(modules, target):
                bound[node.targets[0].id] = target
    return bound


def _imported_by_name(value: ast.expr) -> str | None:
    """The module that ``importlib.import_module("gpuperf.x")`` (or ``import_module(...)``)
    imports, when ``value`` is such a call with a constant name; else None."""
    if not (isinstance(value, ast.Call) and len(value.args) == 1 and not value.keywords):
        return None
    func, name = value.func, value.args[0]
    called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if called != "import_module" or not isinstance(name, ast.Constant) or not isinstance(name.value, str):
        return None
    return name.value


def _module_of(node: ast.expr, bound: Mapping[str, str], modules: Mapping[str, Module]) -> str | None:
    """The gpuperf module the expression ``node`` is, when it is a bound name or a chain of
    submodule attributes on one; else None."""
    if isinstance(node, ast.Name):
        return bound.get(node.id)
    if isinstance(node, ast.Attribute):
        package = _module_of(node.value, bound, modules)
        return None if package is None else submodule(modules, package, node.attr)
    return None


def module_accesses(module: Module, modules: Mapping[str, Module]) -> Iterator[Access]:
    """Every attribute that ``module`` reads or writes on one of gpuperf's modules."""
    bound = module_bindings(modules, module)
    for node in module.nodes:
        if isinstance(node, ast.Attribute):
            owner_module = _module_of(node.value, bound, modules)
            if owner_module is not None:
                yield Access(module, node.lineno, owner_module, node.attr)


def all_accesses(modules: Mapping[str, Module]) -> list[Access]:
    return [access for m in modules.values() for access in module_accesses(m, modules)]


# Rule (a): private names -------------------------------------------------------------


def private_name_offenders(modules: Mapping[str, Module]) -> dict[tuple[str, str, str], list[str]]:
    """``(importer, module, name)`` -> where, for each private name imported from another module
    or read as its attribute."""
    found: dict[tuple[str, str, str], list[str]] = {}
    for imp in all_imports(modules):
        if imp.name is None or not is_private(imp.name) or imp.module == imp.importer.name:
            continue
        if _is_module(modules, f"{imp.module}.{imp.name}"):
            continue  # a private submodule: rule (b)'s business
        found.setdefault((imp.importer.name, imp.module, imp.name), []).append(imp.where)
    for access in all_accesses(modules):
        if not is_private(access.name) or access.module == access.reader.name:
            continue
        if _is_module(modules, f"{access.module}.{access.name}"):
            continue  # a private submodule: rule (b)'s business
        found.setdefault((access.reader.name, access.module, access.name), []).append(access.where)
    return {key: list(dict.fromkeys(where)) for key, where in found.items()}


# Rule (b): private modules -----------------------------------------------------------


def owner(module: str) -> str | None:
    """The package that owns ``module``'s innermost private component (None: all public)."""
    parts = module.split(".")
    private = [i for i, part in enumerate(parts) if i and is_private(part)]
    return ".".join(parts[: private[-1]]) if private else None


def private_module_offenders(modules: Mapping[str, Module]) -> dict[tuple[str, str], list[str]]:
    """``(importer, private module)`` -> where, for each import (or attribute read) of it from
    outside its owner."""
    found: dict[tuple[str, str], list[str]] = {}
    uses = []  # (reader, private module or not, where)
    for imp in all_imports(modules):
        uses.append((imp.importer, imp.module, imp.where))
        if imp.name is not None and _is_module(modules, f"{imp.module}.{imp.name}"):
            uses.append((imp.importer, f"{imp.module}.{imp.name}", imp.where))
    for access in all_accesses(modules):  # ``kernels._configs`` read as an attribute
        if _is_module(modules, f"{access.module}.{access.name}"):
            uses.append((access.reader, f"{access.module}.{access.name}", access.where))
    for reader, target, where in uses:
        package = owner(target)
        if package is None:
            continue
        inside = reader.in_package and (reader.name == package or reader.name.startswith(package + "."))
        if not inside:
            found.setdefault((reader.name, target), []).append(where)
    return {key: list(dict.fromkeys(where)) for key, where in found.items()}


# Rule (c): import cycles -------------------------------------------------------------


def _reexport_source(modules: Mapping[str, Module], package: str, name: str, depth: int = 0) -> str:
    """The module that defines ``name`` for ``from package import name``: a submodule,
    the source of the ``__init__``'s ``from package.sub import name``, or the package."""
    if _is_module(modules, f"{package}.{name}"):
        return f"{package}.{name}"
    init = modules.get(package)
    if init is None or not init.is_package or depth > 10:
        return package
    for node in init.tree.body:
        if isinstance(node, ast.ImportFrom):
            base = _base(init, node)
            for alias in node.names:
                if (alias.asname or alias.name) == name and _ours(base) and _is_module(modules, base):
                    return _reexport_source(modules, base, alias.name, depth + 1)
    return package


def import_edges(modules: Mapping[str, Module]) -> dict[tuple[str, str], list[str]]:
    """``(importer, imported)`` -> where, among the package's modules (imports for type
    checking included)."""
    edges: dict[tuple[str, str], list[str]] = {}
    for imp in all_imports(modules):
        if not imp.importer.in_package:
            continue
        if imp.name is None:
            target = imp.module
        elif imp.name == "*":
            target = imp.module
        else:
            target = _reexport_source(modules, imp.module, imp.name)
        if _is_module(modules, target) and target != imp.importer.name:
            edges.setdefault((imp.importer.name, target), []).append(imp.where)
    return {key: list(dict.fromkeys(where)) for key, where in edges.items()}


def _strongly_connected(nodes, graph: Mapping[str, list[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components."""
    index, low, stack, on_stack, components = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            components.append(sorted(component))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return components


def cycle_offenders(modules: Mapping[str, Module]) -> dict[frozenset[str], list[str]]:
    """Each import cycle's modules -> one cycle through them, an edge (with where) a line."""
    edges = import_edges(modules)
    graph: dict[str, list[str]] = {}
    for a, b in sorted(edges):
        graph.setdefault(a, []).append(b)
    found = {}
    for component in _strongly_connected({m for edge in edges for m in edge}, graph):
        if len(component) < 2:
            continue
        members = set(component)
        start = component[0]
        # The shortest way back to start, within the component.
        paths, seen, queue = {start: [start]}, {start}, [start]
        back = None
        while queue and back is None:
            v = queue.pop(0)
            for w in graph.get(v, ()):
                if w == start:
                    back = [*paths[v], start]
                    break
                if w in members and w not in seen:
                    seen.add(w)
                    paths[w] = [*paths[v], w]
                    queue.append(w)
        steps = [f"{a} -> {b} ({', '.join(edges[a, b])})" for a, b in itertools.pairwise(back)]
        found[frozenset(component)] = steps
    return found


# The rules on the codebase -----------------------------------------------------------


@pytest.fixture(scope="module")
def codebase() -> dict[str, Module]:
    return load_codebase()


def test_no_private_name_crosses_a_module(codebase):
    found = private_name_offenders(codebase)
    new = {key: where for key, where in found.items() if key not in PRIVATE_NAME_ALLOWLIST}
    assert not new, (
        "private names of another module, imported or read as its attribute (make the name "
        "public, in a helper module of its layer if two modules share it: DESIGN.md style 10):\n"
        + "\n".join(
            f"  {', '.join(where)}: {importer} uses {name} of {module}"
            for (importer, module, name), where in sorted(new.items())
        )
    )


def test_private_modules_are_imported_only_inside_their_package(codebase):
    found = private_module_offenders(codebase)
    new = {key: where for key, where in found.items() if key not in PRIVATE_MODULE_ALLOWLIST}
    assert not new, (
        "private modules imported from outside the package that owns them (read a public "
        "module of that package instead, e.g. gpuperf.kernels.configs):\n"
        + "\n".join(
            f"  {', '.join(where)}: {importer} imports {target} (owned by {owner(target)})"
            for (importer, target), where in sorted(new.items())
        )
    )


def test_no_import_cycle(codebase):
    found = cycle_offenders(codebase)
    new = {
        members: steps
        for members, steps in found.items()
        if not any(members <= allowed for allowed in CYCLE_ALLOWLIST)
    }
    assert not new, (
        "import cycles among gpuperf's modules (imports inside functions and under TYPE_CHECKING count):\n"
    ) + "\n".join(
        f"  {', '.join(sorted(members))}:\n" + "\n".join(f"    {step}" for step in steps)
        for members, steps in sorted(new.items(), key=lambda item: sorted(item[0]))
    )


def test_every_allowlist_entry_still_offends(codebase):
    """So the allowlists only shrink: a fixed offender must leave its list."""
    names, private_modules = private_name_offenders(codebase), private_module_offenders(codebase)
    stale = [
        f"  PRIVATE_NAME_ALLOWLIST {key} ({why})"
        for key, why in PRIVATE_NAME_ALLOWLIST.items()
        if key not in names
    ]
    stale += [
        f"  PRIVATE_MODULE_ALLOWLIST {key} ({why})"
        for key, why in PRIVATE_MODULE_ALLOWLIST.items()
        if key not in private_modules
    ]
    cycles = cycle_offenders(codebase)
    stale += [
        f"  CYCLE_ALLOWLIST {sorted(members)} ({why}); the cycles now: {[sorted(c) for c in cycles]}"
        for members, why in CYCLE_ALLOWLIST.items()
        if members not in cycles
    ]
    assert not stale, "allowlist entries that no longer offend (remove or narrow them):\n" + "\n".join(stale)


# The checker on small examples, so it can be seen to fail ----------------------------


def test_checker_finds_a_private_name():
    modules = parse_sources(
        {
            "src/gpuperf/__init__.py": "",
            "src/gpuperf/a.py": "_x = 1\ny = 2\n",
            "src/gpuperf/_sub.py": "",
            "src/gpuperf/b.py": (
                "from typing import TYPE_CHECKING\n"
                "from gpuperf.a import y\n"
                "from gpuperf import _sub\n"  # a private submodule, not a name
                "if TYPE_CHECKING:\n"
                "    from gpuperf.a import _x\n"
            ),
            "src/gpuperf/c.py": "def f():\n    from .a import _x as x\n",
            "scripts/s.py": "from gpuperf.a import __doc__, _x\n",
        }
    )
    assert set(private_name_offenders(modules)) == {
        ("gpuperf.b", "gpuperf.a", "_x"),
        ("gpuperf.c", "gpuperf.a", "_x"),
        ("scripts/s.py", "gpuperf.a", "_x"),
    }


def test_checker_finds_a_private_attribute():
    modules = parse_sources(
        {
            "src/gpuperf/__init__.py": "",
            "src/gpuperf/k/__init__.py": "from gpuperf.k.op import op\nfrom gpuperf.k import util\n",
            "src/gpuperf/k/op.py": "def op():\n    pass\n_kernel = 1\n",
            "src/gpuperf/k/util.py": "_helper = 1\n",
            "src/gpuperf/k/_rules.py": "TABLE = {}\n_table = {}\n",
            "src/gpuperf/k/ok.py": (
                "import gpuperf.k.util as util\n"
                "from gpuperf.k import _rules, op\n"  # op: the function the package binds
                "x = op.__doc__, op._kernel, _rules.TABLE\n"
                "def f():\n    import gpuperf.k.ok as me\n    return me._mine, util.__name__\n"
            ),
            "src/gpuperf/k/a.py": "import gpuperf.k.util as u\nx = u._helper\n",
            "src/gpuperf/k/b.py": (
                "from gpuperf.k import _rules\nfrom . import util\nx = _rules._table, util._helper\n"
            ),
            "src/gpuperf/k/c.py": (
                "from importlib import import_module\nm = import_module('gpuperf.k.op')\nm._kernel\n"
            ),
            "scripts/s.py": (
                "import gpuperf.k.util\nfrom gpuperf import k\nx = gpuperf.k.util._helper, k.util._helper\n"
            ),
            # A private submodule read as an attribute from outside its package: rule (b).
            "src/gpuperf/pages.py": "from gpuperf import k\nx = k._rules.TABLE\n",
        }
    )
    assert private_name_offenders(modules) == {
        ("gpuperf.k.a", "gpuperf.k.util", "_helper"): ["src/gpuperf/k/a.py:2"],
        ("gpuperf.k.b", "gpuperf.k._rules", "_table"): ["src/gpuperf/k/b.py:3"],
        ("gpuperf.k.b", "gpuperf.k.util", "_helper"): ["src/gpuperf/k/b.py:3"],
        ("gpuperf.k.c", "gpuperf.k.op", "_kernel"): ["src/gpuperf/k/c.py:3"],
        ("scripts/s.py", "gpuperf.k.util", "_helper"): ["scripts/s.py:3"],
    }
    read_from_outside = {("gpuperf.pages", "gpuperf.k._rules"): ["src/gpuperf/pages.py:2"]}
    assert private_module_offenders(modules) == read_from_outside


def test_checker_finds_a_private_module_read_from_outside():
    modules = parse_sources(
        {
            "src/gpuperf/__init__.py": "",
            "src/gpuperf/_runtime.py": "",
            "src/gpuperf/k/__init__.py": "",
            "src/gpuperf/k/_rules.py": "from gpuperf._runtime import probe\n",
            "src/gpuperf/k/op.py": "from gpuperf.k import _rules\nfrom . import _rules as r\n",
            "src/gpuperf/k/sub/__init__.py": "from gpuperf.k._rules import X\n",
            "src/gpuperf/pages/__init__.py": "import gpuperf._runtime\n",
            "src/gpuperf/pages/p.py": "from gpuperf.k._rules import X\nfrom gpuperf.k import _rules\n",
            "tutorials/01_t.py": "import gpuperf._runtime\n",
        }
    )
    assert set(private_module_offenders(modules)) == {
        ("gpuperf.pages.p", "gpuperf.k._rules"),
        ("tutorials/01_t.py", "gpuperf._runtime"),
    }
    assert private_module_offenders(modules)["gpuperf.pages.p", "gpuperf.k._rules"] == [
        "src/gpuperf/pages/p.py:1",
        "src/gpuperf/pages/p.py:2",
    ]


def test_checker_finds_an_import_cycle():
    modules = parse_sources(
        {
            "src/gpuperf/__init__.py": "",
            "src/gpuperf/a.py": "def f():\n    from gpuperf.b import g\n",
            # The package re-exports h from p.c: the edge goes to gpuperf.p.c, not to p.
            "src/gpuperf/b.py": "from gpuperf.p import h\ng = 1\n",
            "src/gpuperf/p/__init__.py": "from gpuperf.p.c import h\nfrom gpuperf.p.d import k\n",
            "src/gpuperf/p/c.py": "import gpuperf.a\nh = 1\n",
            "src/gpuperf/p/d.py": "from gpuperf import p\nk = 1\n",
            # An import for type checking only closes a cycle too.
            "src/gpuperf/e.py": (
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from gpuperf.f import F\n"
            ),
            "src/gpuperf/f.py": "from gpuperf.e import E\n",
        }
    )
    cycles = cycle_offenders(modules)
    # p -> p.d -> p (the package's __init__ and a module that imports the package) is one too.
    assert set(cycles) == {
        frozenset({"gpuperf.a", "gpuperf.b", "gpuperf.p.c"}),
        frozenset({"gpuperf.p", "gpuperf.p.d"}),
        frozenset({"gpuperf.e", "gpuperf.f"}),
    }
    assert cycles[frozenset({"gpuperf.e", "gpuperf.f"})] == [
        "gpuperf.e -> gpuperf.f (src/gpuperf/e.py:3)",
        "gpuperf.f -> gpuperf.e (src/gpuperf/f.py:1)",
    ]
    assert cycles[frozenset({"gpuperf.a", "gpuperf.b", "gpuperf.p.c"})] == [
        "gpuperf.a -> gpuperf.b (src/gpuperf/a.py:2)",
        "gpuperf.b -> gpuperf.p.c (src/gpuperf/b.py:1)",
        "gpuperf.p.c -> gpuperf.a (src/gpuperf/p/c.py:1)",
    ]
