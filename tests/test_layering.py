"""The layering rules of DESIGN.md (style 10), checked on the source.

Every module under ``src/gpuperf`` and every script of ``tutorials/``, ``guides/``,
``scripts/``, ``docs/*.py`` and ``docs/_ext/*.py`` is parsed with :mod:`ast` (nothing
is imported), and only imports of gpuperf's own modules are read:

(a) no private name crosses a module: ``from M import _name`` where ``_name`` is not a
    submodule of ``M`` (imports under ``if TYPE_CHECKING:`` count too);
(b) a private module (a dotted path with a component ``_x``) is imported only from
    inside the package that owns it: ``gpuperf.kernels._configs`` from
    ``gpuperf.kernels.*``, ``gpuperf._runtime`` from any ``gpuperf.*``; scripts are
    outside every package;
(c) no import cycle among gpuperf's modules, counting imports inside functions but
    not those under ``if TYPE_CHECKING:``. ``from pkg import name`` is an edge to
    ``pkg.name`` when that is a submodule, to ``pkg.sub`` when the package's
    ``__init__`` re-exports ``name`` through ``from pkg.sub import name``, and to
    ``pkg`` otherwise.

Offenders that someone is fixing now are listed once per rule, each with why; a test
checks that every listed entry still offends, so a list can only shrink. The tests
themselves are not checked: they may test internals.
"""

from __future__ import annotations

import ast
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

#: Rule (a): ``(importer, module, name)`` -> why it is allowed for now.
PRIVATE_NAME_ALLOWLIST: dict[tuple[str, str, str], str] = {
    # Scripts that launch a kernel themselves with each candidate config (the sweep behind
    # the launch rules, the profiler's capture), reading the kernel by its private name.
    ("scripts/explore_configs.py", "gpuperf.kernels.softmax", "_softmax_kernel"): _SWEEPS,
    ("scripts/explore_configs.py", "gpuperf.kernels.softmax", "_softmax_online_kernel"): _SWEEPS,
    ("scripts/profile_capture.py", "gpuperf.kernels.row_mean", "_row_mean_kernel"): _SWEEPS,
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


@dataclass(frozen=True)
class Import:
    """One imported name: ``from module import name``, or ``import module`` (``name`` None)."""

    importer: Module
    line: int
    module: str
    name: str | None
    type_checking: bool

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


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


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
    """Every import of a gpuperf module in ``module``, at any depth."""
    guarded = set()
    for node in ast.walk(module.tree):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            guarded |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _ours(alias.name):
                    yield Import(module, node.lineno, alias.name, None, id(node) in guarded)
        elif isinstance(node, ast.ImportFrom):
            base = _base(module, node)
            if _ours(base):
                for alias in node.names:
                    yield Import(module, node.lineno, base, alias.name, id(node) in guarded)


def all_imports(modules: Mapping[str, Module]) -> list[Import]:
    return [imp for m in modules.values() for imp in imports(m)]


def _is_module(modules: Mapping[str, Module], name: str) -> bool:
    return name in modules and modules[name].in_package


# Rule (a): private names -------------------------------------------------------------


def private_name_offenders(modules: Mapping[str, Module]) -> dict[tuple[str, str, str], list[str]]:
    """``(importer, module, name)`` -> where, for each private name imported from another module."""
    found: dict[tuple[str, str, str], list[str]] = {}
    for imp in all_imports(modules):
        if imp.name is None or not is_private(imp.name) or imp.module == imp.importer.name:
            continue
        if _is_module(modules, f"{imp.module}.{imp.name}"):
            continue  # a private submodule: rule (b)'s business
        found.setdefault((imp.importer.name, imp.module, imp.name), []).append(imp.where)
    return {key: list(dict.fromkeys(where)) for key, where in found.items()}


# Rule (b): private modules -----------------------------------------------------------


def owner(module: str) -> str | None:
    """The package that owns ``module``'s innermost private component (None: all public)."""
    parts = module.split(".")
    private = [i for i, part in enumerate(parts) if i and is_private(part)]
    return ".".join(parts[: private[-1]]) if private else None


def private_module_offenders(modules: Mapping[str, Module]) -> dict[tuple[str, str], list[str]]:
    """``(importer, private module)`` -> where, for each import from outside its owner."""
    found: dict[tuple[str, str], list[str]] = {}
    for imp in all_imports(modules):
        targets = [imp.module]
        if imp.name is not None and _is_module(modules, f"{imp.module}.{imp.name}"):
            targets.append(f"{imp.module}.{imp.name}")
        for target in targets:
            package = owner(target)
            if package is None:
                continue
            inside = imp.importer.in_package and (
                imp.importer.name == package or imp.importer.name.startswith(package + ".")
            )
            if not inside:
                found.setdefault((imp.importer.name, target), []).append(imp.where)
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
    """``(importer, imported)`` -> where, among the package's modules, run-time imports only."""
    edges: dict[tuple[str, str], list[str]] = {}
    for imp in all_imports(modules):
        if imp.type_checking or not imp.importer.in_package:
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
        "private names imported from another module (make the name public, in a helper "
        "module of its layer if two modules share it: DESIGN.md style 10):\n"
        + "\n".join(
            f"  {', '.join(where)}: {importer} imports {name} from {module}"
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
    assert not new, "import cycles among gpuperf's modules (imports inside functions count):\n" + "\n".join(
        f"  {', '.join(sorted(members))}:\n" + "\n".join(f"    {step}" for step in steps)
        for members, steps in sorted(new.items(), key=lambda item: sorted(item[0]))
    )


def test_every_allowlist_entry_still_offends(codebase):
    """So the allowlists only shrink: a fixed offender must leave its list."""
    stale = [
        f"  PRIVATE_NAME_ALLOWLIST {key} ({why})"
        for key, why in PRIVATE_NAME_ALLOWLIST.items()
        if key not in private_name_offenders(codebase)
    ]
    stale += [
        f"  PRIVATE_MODULE_ALLOWLIST {key} ({why})"
        for key, why in PRIVATE_MODULE_ALLOWLIST.items()
        if key not in private_module_offenders(codebase)
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
            # Imports for type checking only make no cycle.
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
    }
    assert cycles[frozenset({"gpuperf.a", "gpuperf.b", "gpuperf.p.c"})] == [
        "gpuperf.a -> gpuperf.b (src/gpuperf/a.py:2)",
        "gpuperf.b -> gpuperf.p.c (src/gpuperf/b.py:1)",
        "gpuperf.p.c -> gpuperf.a (src/gpuperf/p/c.py:1)",
    ]
