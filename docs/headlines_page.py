"""Writes ``docs/generated/headlines.rst``: what each tutorial found, per GPU, from the records.

A tutorial's benchmarks are the catalog names it passes to ``run_or_load`` or ``show``
(read from its source, so a new tutorial is picked up without a change here), each listed
once, under the first tutorial that shows it; each
benchmark's cell on each GPU comes from :func:`gpuperf.pages.landing.cell`: its headline,
and when and at which commit the record it reads was measured.
"""

from __future__ import annotations

import ast
from pathlib import Path

from gpuperf.bench import catalog, records
from gpuperf.pages.landing import cell
from gpuperf.pages.plotting import short_gpu_name
from gpuperf.pages.report import load


def tutorial_benchmarks(path: Path) -> list[catalog.Benchmark]:
    """The catalog benchmarks a tutorial script passes to ``run_or_load`` or ``show``, in order,
    once each."""
    found = []
    for node in ast.walk(ast.parse(Path(path).read_text())):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
        arg = node.args[0]
        name = arg.attr if isinstance(arg, ast.Attribute) else getattr(arg, "id", None)
        benchmark = getattr(catalog, name or "", None)
        if func in ("run_or_load", "show") and isinstance(benchmark, catalog.Benchmark):
            found.append((node.lineno, getattr(catalog, name)))
    ordered = [b for _, b in sorted(found, key=lambda pair: pair[0])]
    return list({b.name: b for b in ordered}.values())


def tutorial_title(path: Path) -> str:
    """The title of a gallery script: the first line of its docstring."""
    doc = ast.get_docstring(ast.parse(Path(path).read_text())) or Path(path).stem
    return doc.strip().splitlines()[0].strip()


def _gpus() -> list[str]:
    found = {gpu for b in catalog.ALL for gpu in records.gpus_with_record(b.name)}
    first = records.reference_gpu()
    return sorted(found, key=lambda slug: (slug != first, slug))


def _cell(text: str) -> list[str]:
    return [f"     - {text}"]


def write(out_dir: Path, tutorials_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    gpus = _gpus()
    names = {}
    for gpu in gpus:
        # The name from the first record of this GPU that is current (a stale one is not loaded).
        loaded = (load(b, gpu) for b in catalog.ALL if records.record_path(b.name, gpu).exists())
        names[gpu] = next((short_gpu_name(r.gpu) for r in loaded if r.gpu), gpu)
    lines = [
        ".. list-table:: What each tutorial found, per GPU: the kernel under study against each",
        "   benchmark's baseline, and its highest share of the ceiling measured in the same run",
        "   (the ceiling's value printed), over every size measured; each cell computed from one",
        "   record, with when and at which commit it was measured",
        "   :header-rows: 1",
        "   :class: gpuperf-headlines",
        "",
        "   * - tutorial, benchmark",
        *[f"     - {names[gpu]}" for gpu in gpus],
    ]
    listed = set()
    for script in sorted(Path(tutorials_dir).glob("[0-9][0-9]_*.py")):
        # A benchmark a later tutorial shows again (tutorial 06 shows tutorial 05's FP8
        # ladder) keeps its one row, under the first tutorial that shows it.
        benchmarks = [b for b in tutorial_benchmarks(script) if b.name not in listed]
        listed.update(b.name for b in benchmarks)
        if not benchmarks:
            continue
        lines += [f"   * - :ref:`{tutorial_title(script)} <sphx_glr_tutorials_{script.name}>`"]
        lines += ["     -" for _ in gpus]
        for bench in benchmarks:
            lines += [f"   * - {bench.title}"]
            for gpu in gpus:
                lines += _cell(cell(bench, gpu))
    if not gpus:
        lines = ["No GPU has committed records yet: run ``nox -s bench`` on one."]
    path = out_dir / "headlines.rst"
    text = "\n".join(lines) + "\n"
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return path
