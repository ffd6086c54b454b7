"""Re-key committed records without measuring again, where what they measured is unchanged.

A record stores the hashes of what it measured (:func:`gpuperf.bench.sources.hashes`). When
the way those hashes are taken changes (records of device time once hashed whole files;
they now hash the kernels and config tables alone), or when a change touched only what a
record does not depend on (the launch glue around a kernel), the record still describes
the code: its times hold. :func:`rekey` proves that and writes the current hashes into it:

1. Find the code the record measured: the checkout as it stands if the record's stored
   hashes match it, else the package at the commit its provenance names
   (``git archive``), if that commit's own ``bench/sources.py`` hashes it to what the
   record stored.
2. Hash that code the current way, and the code as it stands the same way; when the two
   agree (a kernel moved or renamed counts as the same, :func:`gpuperf.bench.sources.changes`,
   and so does a file renamed unchanged that is hashed whole now), the record gets the
   current hashes. Its rows and provenance are kept as they are, and so is ``ran`` but for
   the modules gone since (below).

A record whose kernels did change is left stale: it needs ``python -m gpuperf.bench --stale``
on a GPU. Works without a GPU, in a git checkout of gpuperf.

A record's ``ran`` (the modules whose functions ran while it measured) follows the code too
(:func:`ran_now`): a module gone since, that gave the record no entry (launch glue, whose
functions moved to another module), is replaced by the modules that now define what it
defined, so that ``ran`` names modules that exist and that the record follows.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import inspect
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path

from gpuperf.bench import sources as code


def _matches(stored: dict[str, str], sources, host: bool) -> bool:
    """Whether ``stored`` hashes the package that :data:`code.PACKAGE_ROOT` points at now."""
    try:
        return code.changes(stored, sources, host=host) == []
    except (FileNotFoundError, SyntaxError):
        return False


@contextlib.contextmanager
def package_at_commit(checkout: Path, commit: str) -> Iterator[Path | None]:
    """``src/gpuperf`` as it was at ``commit`` in the git checkout ``checkout``, unpacked in a
    temporary folder; None when git does not know the commit (or it names a dirty tree)."""
    if not commit or commit.endswith("-dirty") or commit == "unknown":
        yield None
        return
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "src.tar"
        done = subprocess.run(
            ["git", "archive", "--format=tar", "-o", str(archive), commit, "src/gpuperf"],
            cwd=checkout,
            capture_output=True,
        )
        if done.returncode != 0:
            yield None
            return
        with tarfile.open(archive) as tar:
            tar.extractall(tmp, filter="data")
        yield Path(tmp) / "src" / "gpuperf"


def _hashes_then(old_root: Path, measured: list[str], host: bool) -> dict[str, str] | None:
    """What the commit unpacked at ``old_root`` stored for ``measured``: its own
    ``bench/sources.py`` hashes its own tree (the way hashes are taken changes with gpuperf);
    None where it has none."""
    spec = importlib.util.spec_from_file_location("gpuperf_sources_then", old_root / "bench" / "sources.py")
    if spec is None or spec.loader is None:
        return None
    then = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(then)
        then.PACKAGE_ROOT = old_root
        if "host" in inspect.signature(then.hashes).parameters:
            return then.hashes(measured, host=host)
        return then.hashes(measured) if host else None  # it hashed whole files alone
    except (FileNotFoundError, SyntaxError):
        return None


def rekey(
    stored: dict[str, str], sources, commit: str, *, host: bool, checkout: Path
) -> dict[str, str] | None:
    """The current hashes for a measurement that stored ``stored`` of ``sources`` (paths under
    ``src/gpuperf``) at gpuperf ``commit``, or None when the code it measured has changed
    since (or cannot be found) and it must be measured again (see the module's text).

    ``host`` is how the current hashes are taken (:func:`gpuperf.bench.sources.hashes`).
    """
    stored_host = code.is_host_keyed(stored)
    sources = [rel for rel in sources if (code.PACKAGE_ROOT / rel).is_file()]
    now = code.hashes(sources, host=host)
    current = {code.file_sha256(rel): rel for rel in code.closure(sources)}
    if _matches(stored, sources, stored_host):
        return now
    with package_at_commit(checkout, commit) as old_root:
        if old_root is None:
            return None
        # The record's own files, as the commit had them: the benchmark may name others now.
        measured = code.files(stored)
        with code.package_at(old_root):
            # Hashed by that commit's own rules, or (older than them) by today's rules.
            if _hashes_then(old_root, measured, stored_host) != stored and not _matches(
                stored, measured, stored_host
            ):
                return None  # the commit is not the code the record hashed
            # A file renamed since, its code unchanged, is read under its name now (a
            # module renamed *configs.py is hashed as the config table it now says it is).
            old = code.closure(measured)
            names = {rel: current[sha] for rel in old if (sha := code.file_sha256(rel)) in current}
            then = code.hashes(measured, host=host, names=names)
    return now if code.changes(then, sources, host=host) == [] else None


def _defined_names(text: str) -> set[str]:
    """The names the Python source ``text`` defines at its top level: functions, classes and
    assigned names (not dunders: every module has its ``__all__``)."""
    names = set()
    for node in ast.parse(text).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return {name for name in names if not name.startswith("__")}


def _text_at_commit(checkout: Path, commit: str, rel: str) -> str | None:
    """The source ``rel`` (under ``src/gpuperf``) at ``commit``, or None where git has none."""
    if not commit or commit.endswith("-dirty") or commit == "unknown":
        return None
    done = subprocess.run(
        ["git", "show", f"{commit}:src/{code.PACKAGE}/{rel}"], cwd=checkout, capture_output=True, text=True
    )
    return done.stdout if done.returncode == 0 else None


def ran_now(
    ran: list[str] | None, stored: dict[str, str], commit: str, *, checkout: Path
) -> list[str] | None:
    """A record's ``ran`` as the code stands: each module it names that is gone, and that gave
    the record no entry among its ``stored`` hashes (launch glue, in a record of device time),
    replaced by the package's modules that now define any of the names it defined at
    ``commit`` (its functions moved there), or left out where none does (its code is gone).
    Sorted, each once; ``ran`` itself where nothing is gone (None stays None). A gone module
    the record hashed is kept: the record is stale, and measuring it again writes ``ran`` anew.
    """
    if ran is None or all((code.PACKAGE_ROOT / rel).is_file() for rel in ran):
        return ran
    hashed = set(code.files(stored))
    now = {}  # each name the package's followed modules define: the modules that define it
    for path in sorted(code.PACKAGE_ROOT.rglob("*.py")):
        rel = path.relative_to(code.PACKAGE_ROOT).as_posix()
        if code.followed(rel):
            for name in _defined_names(path.read_text()):
                now.setdefault(name, []).append(rel)
    kept = set()
    for rel in ran:
        if (code.PACKAGE_ROOT / rel).is_file() or rel in hashed:
            kept.add(rel)
            continue
        text = _text_at_commit(checkout, commit, rel)
        if text is not None:
            kept.update(module for name in _defined_names(text) for module in now.get(name, ()))
    return sorted(kept)


def rekey_records(
    folder: Path, benchmarks: dict, checkout: Path, *, with_captures: bool = True, log=print
) -> dict[str, list[str]]:
    """:func:`rekey` every record under ``folder`` (``<gpu>/<benchmark>.json``) of a benchmark
    in ``benchmarks`` (``{name: Benchmark}``), and with ``with_captures`` every capture
    (``<gpu>/captures/*.json``),
    writing those whose hashes (or ``ran``, :func:`ran_now`) change; return their paths
    (``gpu/name``) by outcome:
    ``"re-keyed"``, ``"unchanged"`` (already keyed the current way) and ``"stale"`` (its
    code changed: measure it again)."""
    import json

    from gpuperf.bench import captures, records

    outcome: dict[str, list[str]] = {"re-keyed": [], "unchanged": [], "stale": []}
    found = []
    for path in sorted(folder.glob("*/*.json")):
        if path.name != "hardware.json" and path.stem in benchmarks:
            bench = benchmarks[path.stem]
            found.append((path, bench.sources, bench.timer == "host", records.validate))
    if with_captures:
        for path in sorted(folder.glob("*/captures/*.json")):
            stored = json.loads(path.read_text())["sources"]
            found.append((path, code.files(stored), path.stem in captures.HOST_TIMED, captures.validate))
    for path, sources, host, validate in found:
        measurement = json.loads(path.read_text())
        name = str(path.relative_to(folder).with_suffix(""))
        keyed = rekey(
            measurement["sources"],
            sources,
            measurement["provenance"].get("gpuperf_commit", ""),
            host=host,
            checkout=checkout,
        )
        if keyed is None:
            outcome["stale"].append(name)
            continue
        ran = measurement.get("ran")
        if ran is not None:
            ran = ran_now(
                ran,
                measurement["sources"],
                measurement["provenance"].get("gpuperf_commit", ""),
                checkout=checkout,
            )
        if keyed == measurement["sources"] and ran == measurement.get("ran"):
            outcome["unchanged"].append(name)
        else:
            measurement["sources"], measurement["sources_sha256"] = keyed, code.combined_sha256(keyed)
            if ran is not None:
                measurement["ran"] = ran
            problems = validate(measurement)
            if problems:
                raise ValueError(f"{name}: re-keyed, it is malformed: {problems}")
            path.write_text(json.dumps(measurement, indent=1) + "\n")
            outcome["re-keyed"].append(name)
    for what, names in outcome.items():
        log(f"{what}: {len(names)}" + (f" ({', '.join(names)})" if names and what != "unchanged" else ""))
    return outcome
