"""What a measurement's code is: the source files it ran, followed through their imports,
and hashes of what in them decides the measurement, that change with that code and with
nothing else.

A record (or a capture) names the modules its providers call, such as
``kernels/softmax.py``. :func:`closure` follows their imports, at module level or inside
functions, to every module of the package's code under study (:data:`FOLLOWED`) that they
reach: the launch path, the validation, the configs. :func:`canonical_code` reduces code to
its syntax tree without docstrings, comments or layout, written out in a form that every
Python from 3.10 on gives alike, so a reworded docstring or a reformatted line changes no
hash.

What is hashed depends on what was timed (:func:`hashes`). A time on the device keys on
what the device runs: each kernel (``@triton.jit``, ``@gluon.jit``) by its definition,
the constants and launch tables beside it, the config tables (``*configs.py``: their
rules and fields, not their checks), the models, the CUDA C++ (:func:`device_entries`).
The launch glue around a kernel (argument checks, allocation, the launch itself) is left
out, so rewriting it leaves those records current, and editing a kernel makes every
record that hashed it stale. A time on the host (the cost of a call) keys on every line
of every module it ran (:func:`file_sha256`).

What is not followed: ``reference.py`` (the PyTorch references and the eager formulas the
baselines run, which are PyTorch's speed, not the package's), ``testing.py``, and the
measuring and rendering code under ``bench/`` and ``pages/``.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import re
from collections.abc import Iterable, Iterator
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
    imports included): those of :func:`_module_imports`."""
    return {path for path, _, _ in _module_imports(rel)}


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


#: What a record of device time keys on, file by file (:func:`device_entries`): the kernels
#: and the tables that configure them, not the launch glue around them. A module whose
#: name ends with this is a config table.
CONFIG_SUFFIX = "configs.py"

#: Sources hashed whole in a record of device time, by how their path starts or ends: a
#: model's code decides which ops run, in which order and on what shapes, and a
#: ``*_cuda.py`` module holds CUDA C++ in its strings.
WHOLE = ("models/",)
WHOLE_SUFFIXES = ("_cuda.py",)

_CONSTANT = re.compile(r"[A-Z][A-Z0-9_]*")
_JIT_DECORATORS = frozenset({"jit", "autotune", "heuristics"})


def _decorator_name(node: ast.expr) -> str:
    """``jit`` for ``@triton.jit``, ``@gluon.jit``, ``@jit`` or ``@triton.jit(...)``."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def is_kernel(node: ast.stmt) -> bool:
    """Whether ``node`` defines a Triton or Gluon kernel (or a jit function kernels call): a
    function decorated with ``jit`` (``@triton.jit``, ``@gluon.jit``), ``autotune`` or
    ``heuristics``."""
    return isinstance(node, ast.FunctionDef) and any(
        _decorator_name(d) in _JIT_DECORATORS for d in node.decorator_list
    )


def _assigned_names(node: ast.stmt) -> list[str]:
    """The names a module-level assignment (with a value) binds; none for other statements."""
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, ast.AnnAssign) and node.value is not None:
        targets = [node.target]
    else:
        return []
    return [t.id for t in targets if isinstance(t, ast.Name)]


def _constant_names(node: ast.stmt) -> list[str]:
    """The UPPER_CASE names a module-level assignment binds (a table or a constant)."""
    return [name for name in _assigned_names(node) if _CONSTANT.fullmatch(name)]


def _nameless(node: ast.FunctionDef | ast.ClassDef) -> str:
    """The canonical form of a definition without its name: moved or renamed, it is the same."""
    return _canonical(node).replace(f"name={node.name!r}", "", 1)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def device_entries(rel: str, *, name: str | None = None) -> dict[str, str]:
    """What the device runs of the source ``rel``, as ``{entry: sha256}``.

    * A model, a module of CUDA C++ (:data:`WHOLE`, :data:`WHOLE_SUFFIXES`) and any file
      that is not Python: one entry, ``rel``, the :func:`file_sha256` of all of it.
    * A config table (a module named ``*configs.py``): one entry per top-level function,
      class (its fields, not its methods: the checks in ``__post_init__`` are glue) and
      constant, ``"rel::name"``.
    * A module that defines kernels: one entry per kernel (:func:`is_kernel`), ``"rel::name"``, the
      hash of its definition, decorators included, with its name left out (so a kernel
      moved to another module or renamed is the same kernel); and one entry per
      module-level UPPER_CASE constant, ``"rel::NAME"``, the hash of its value: the
      constants kernels read and the launch tables (block sizes, warps) a wrapper picks
      from. Functions that are not kernels (checks, allocation, the launch itself) and
      docstrings give no entry: changing them leaves what the device runs as it was.
    * A module that defines no kernel (the launch path, the checks): no entry.

    ``name`` (default ``rel``) is the path the entries are named by and classified by: the
    file's name elsewhere (:mod:`gpuperf.bench.rekey` reads an old tree with the current names).

    Raises:
        FileNotFoundError: no such file.
    """
    path = PACKAGE_ROOT / rel
    source, rel = rel, name or rel
    if path.suffix != ".py" or _whole(rel):
        return {rel: file_sha256(source)}
    return dict(_entries(path.read_text(), rel))


@functools.cache
def _entries(text: str, rel: str) -> tuple[tuple[str, str], ...]:
    """:func:`device_entries` of the Python source ``text`` named ``rel``, kept per process
    like :func:`_code_sha256`."""
    tree = ast.parse(text)
    _drop_strings(tree)
    if rel.endswith(CONFIG_SUFFIX):
        return tuple(_config_entries(rel, tree).items())
    kernels = {f"{rel}::{node.name}": _sha256(_nameless(node)) for node in tree.body if is_kernel(node)}
    if not kernels:
        return ()
    constants = {
        f"{rel}::{name}": _sha256(_canonical(node.value))
        for node in tree.body
        for name in _constant_names(node)
    }
    return tuple({**kernels, **constants}.items())


def _config_entries(rel: str, tree: ast.Module) -> dict[str, str]:
    """The entries of a config table's module: each top-level function (the rules that pick
    a configuration), each class without its methods (its fields and their defaults, not
    the checks and formatting of ``__post_init__`` or ``label``), and every other
    top-level statement but the imports, in order."""
    found = {}
    for i, node in enumerate(tree.body):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if isinstance(node, ast.ClassDef):
            node.body = [item for item in node.body if not isinstance(item, ast.FunctionDef)] or [ast.Pass()]
        names = _assigned_names(node)
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            # Hashed as kernels are, without the name: a table renamed is the same table.
            found[f"{rel}::{node.name}"] = _sha256(_nameless(node))
        elif len(names) == 1:
            # A constant by its value, as in a kernel's module: one moved here is the same.
            found[f"{rel}::{names[0]}"] = _sha256(_canonical(node.value))
        else:
            found[f"{rel}::{names[0] if names else f'statement {i}'}"] = _sha256(_canonical(node))
    return found


def _top_level_names(tree: ast.Module) -> set[str]:
    """The names a module's top-level definitions and assignments bind."""
    found = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            found.add(node.name)
        else:
            found.update(_assigned_names(node))
    return found


def _module_imports(rel: str) -> list[tuple[str, str | None, str | None]]:
    """Each package module ``rel`` imports, anywhere in it (a function's imports included),
    with what it takes: ``(path, name, alias)`` for ``from module import name [as alias]``
    (``path`` the module's; for ``from package import name``, the module the package's
    ``__init__`` takes ``name`` from, where it re-exports it), ``(path, None, alias)``
    for ``from package import module [as alias]`` (the module itself, read through
    ``alias.x``), and ``(path, None, None)`` for ``import a.b.c`` (the module as a whole)."""
    return list(_module_imports_of((PACKAGE_ROOT / rel).read_text(), rel, PACKAGE_ROOT))


@functools.cache
def _module_imports_of(text: str, rel: str, root: Path) -> tuple[tuple[str, str | None, str | None], ...]:
    """:func:`_module_imports` of the source ``text`` of ``rel`` under ``root``, kept per
    process (``root``: where its imports resolve, :func:`package_at`)."""
    package = ".".join([PACKAGE, *Path(rel).parent.parts])
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                path = _module_file(alias.name)
                if path is not None:
                    found.append((path, None, None))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*parent, *([node.module] if node.module else [])])
            init = _module_file(base)
            for alias in node.names:
                sub = _module_file(f"{base}.{alias.name}")
                if sub is not None:
                    found.append((sub, None, alias.asname or alias.name))
                elif init is not None and init.endswith("__init__.py") and alias.name in _reexports(init):
                    path = _module_file(_reexports(init)[alias.name])
                    if path is not None:
                        found.append((path, alias.name, alias.asname or alias.name))
                elif init is not None:
                    found.append((init, alias.name, alias.asname or alias.name))
    return tuple(found)


def _names_read(node: ast.AST, module_alias: str | None = None) -> tuple[set[str], bool]:
    """The bare names ``node`` reads; with ``module_alias``, the attributes it reads of that
    name instead (``alias.x`` gives ``x``), and whether it also uses the name otherwise
    (passes the module itself around: then every entry counts)."""
    if module_alias is None:
        return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}, False
    attributes = {
        id(n.value)
        for n in ast.walk(node)
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == module_alias
    }
    read = {
        n.attr
        for n in ast.walk(node)
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == module_alias
    }
    whole = any(
        isinstance(n, ast.Name) and n.id == module_alias and id(n) not in attributes for n in ast.walk(node)
    )
    return read, whole


def config_uses(closed: Iterable[str]) -> dict[str, set[str] | None]:
    """For each config table (``*configs.py``) among the sources ``closed``, the names of its
    top-level entries that the others use: those they import by name or read as
    ``module.name`` (a name a table imports from another table and passes on counts where
    it is defined), and, inside a config table, whatever a used entry reads of its own
    module's names or of names it imported from another config table (followed until
    nothing new is found). None for a table some module uses as a whole (``import a.b``,
    or the module passed around): every entry counts.

    A record of device time hashes only these entries (:func:`hashes`): the configs of
    other kernels in the same table are not what it measured.
    """
    closed = tuple(rel for rel in closed if rel.endswith(".py"))
    if not any(rel.endswith(CONFIG_SUFFIX) for rel in closed):
        return {}
    texts = tuple((PACKAGE_ROOT / rel).read_text() for rel in closed)
    found = _config_uses(closed, texts, PACKAGE_ROOT)
    return {rel: None if names is None else set(names) for rel, names in found.items()}


@functools.cache
def _config_uses(closed: tuple[str, ...], texts: tuple[str, ...], root: Path) -> dict:
    """:func:`config_uses` of the sources ``closed`` whose texts are ``texts`` (under
    ``root``), kept per process: the pages ask it for every record, many times a build."""
    tables = [rel for rel in closed if rel.endswith(CONFIG_SUFFIX)]
    uses: dict[str, set[str] | None] = {rel: set() for rel in tables}
    source = dict(zip(closed, texts, strict=True))
    trees = {rel: ast.parse(source[rel]) for rel in tables}
    defined = {rel: _top_level_names(tree) for rel, tree in trees.items()}

    # A name a table imports from another table and passes on (``from tile_configs import
    # TUNED_DIR`` in _configs.py): using it there uses it where it is defined.
    passed_on = {
        rel: {alias: (path, name) for path, name, alias in _module_imports(rel) if name is not None}
        for rel in tables
    }

    def use(table: str, names) -> bool:
        if table not in uses or uses[table] is None:
            return False
        names = set(names)
        new = (defined[table] & names) - uses[table]
        uses[table] |= new
        grew = bool(new)
        for name in names - defined[table]:
            path, original = passed_on[table].get(name, (None, None))
            if path is not None:
                grew |= use(path, [original])
        return grew

    for rel in closed:
        if rel in trees:
            continue
        tree = ast.parse(source[rel])
        for path, name, alias in _module_imports(rel):
            if path not in uses:
                continue
            if name is not None:
                use(path, [name])
            elif alias is None:
                uses[path] = None
            else:
                read, whole = _names_read(tree, alias)
                if whole:
                    uses[path] = None
                else:
                    use(path, read)
    changed = True
    while changed:
        changed = False
        for rel in tables:
            wanted = uses[rel]
            if wanted is None:
                continue
            imported = _module_imports(rel)
            for node in trees[rel].body:
                defines = isinstance(node, (ast.FunctionDef, ast.ClassDef))
                names = [node.name] if defines else _assigned_names(node)
                if not names or not set(names) & wanted:
                    continue
                read, _ = _names_read(node)
                changed |= use(rel, read)
                for path, name, alias in imported:
                    if path not in uses:
                        continue
                    if name is not None and alias in read:
                        changed |= use(path, [name])
                    elif name is None and alias is not None:
                        attrs, whole = _names_read(node, alias)
                        if whole and uses[path] is not None:
                            uses[path], changed = None, True
                        else:
                            changed |= use(path, attrs)
    return {rel: None if names is None else frozenset(names) for rel, names in uses.items()}


def _whole(rel: str) -> bool:
    return rel.startswith(WHOLE) or rel.endswith(WHOLE_SUFFIXES)


def hashes(
    sources: Iterable[str], *, host: bool = False, names: dict[str, str] | None = None
) -> dict[str, str]:
    """What a measurement of ``sources`` keys on, over their :func:`closure`:
    ``{entry: sha256}``.

    With ``host=True`` (a measurement of host time, where every line of the wrapper counts)
    every module of the closure is hashed whole: ``{path: file_sha256(path)}``. Otherwise
    (device time) each module gives its :func:`device_entries`: the kernels it defines,
    its constants and config tables, but not the Python around the launch; of a config
    table, only the entries the closure uses (:func:`config_uses`), so that a change to
    the matmul's configs leaves attention's records current. ``names`` maps a path to the
    name its entries take (:func:`device_entries`).
    """
    closed = closure(sources)
    names = names or {}
    if host:
        return {names.get(rel, rel): file_sha256(rel) for rel in closed}
    used = config_uses(closed)
    found = {}
    for rel in closed:
        for entry, sha in device_entries(rel, name=names.get(rel)).items():
            wanted = used.get(rel)
            if wanted is None or entry.rpartition("::")[2] in wanted:
                found[entry] = sha
    return found


def is_host_keyed(stored: dict[str, str]) -> bool:
    """Whether a measurement's stored hashes are of whole files (host time, and records
    written before device keys existed) rather than :func:`device_entries`."""
    return not any("::" in entry for entry in stored) and not all(
        _whole(rel) or not rel.endswith(".py") for rel in stored
    )


def files(stored: dict[str, str]) -> list[str]:
    """The source files a measurement's stored hashes name, in order, each once."""
    return list(dict.fromkeys(entry.split("::")[0] for entry in stored))


@contextlib.contextmanager
def package_at(root: Path) -> Iterator[None]:
    """Read the package's sources from ``root`` (a copy of ``src/gpuperf``: another commit's,
    :mod:`gpuperf.bench.rekey`) inside this block."""
    global PACKAGE_ROOT
    saved, PACKAGE_ROOT = PACKAGE_ROOT, Path(root)
    _reexports.cache_clear()
    try:
        yield
    finally:
        PACKAGE_ROOT = saved
        _reexports.cache_clear()


def combined_sha256(file_hashes: dict[str, str]) -> str:
    """One hash of ``{path: sha256}``: what a record stores as ``sources_sha256``."""
    h = hashlib.sha256()
    for rel in sorted(file_hashes):
        h.update(f"{rel}\0{file_hashes[rel]}\n".encode())
    return h.hexdigest()


def changes(stored: dict[str, str], sources: Iterable[str], *, host: bool | None = None) -> list[str]:
    """What differs between the hashes ``stored`` with a measurement and the code as it
    stands, for the sources the measurement names: ``['kernels/softmax.py::_softmax_kernel
    changed', 'kernels/tiles.py::tile_coords is new']``; empty when nothing does. A named
    source that no longer exists is gone (and its imports are not followed).

    ``host`` says how ``stored`` was hashed (:func:`hashes`); None reads it off ``stored``
    (:func:`is_host_keyed`). An entry that moved (the same hash under another name or in
    another module: a kernel renamed, or moved to the module it belongs in) is no change,
    and neither is a stored config table's entry that the code does not use now (a record
    that hashed whole tables is compared on the entries it uses).
    """
    host = is_host_keyed(stored) if host is None else host
    now = hashes((rel for rel in sources if (PACKAGE_ROOT / rel).is_file()), host=host)
    found = [f"{e} changed" for e in sorted(now) if e in stored and stored[e] != now[e]]
    new = sorted(set(now) - set(stored))
    gone = sorted(set(stored) - set(now))
    moved = set(now[e] for e in new) & set(stored[e] for e in gone)
    found += [f"{e} is new" for e in new if now[e] not in moved]
    # A config table's entry the measured code does not use (:func:`config_uses`) is not
    # what was measured: stored ones of it (hashes of whole tables) are no change.
    found += [
        f"{e} is gone"
        for e in gone
        if stored[e] not in moved and (host or not e.split("::")[0].endswith(CONFIG_SUFFIX))
    ]
    return found
