"""Writes ``docs/generated/measurements.rst``: which GPUs the committed numbers come from.

Every GPU folder of the committed records (``src/gpuperf/measurements``, which ships with
the package: :func:`gpuperf.bench.records.measurements_dir`) with a ``hardware.json`` is
listed, a reader's own ``nox -s bench`` run included.
"""

from __future__ import annotations

import json
from pathlib import Path

from gpuperf.bench import catalog, records
from gpuperf.bench.hardware import DATASHEET
from gpuperf.pages.plotting import ceiling_label, format_rate


def _hardware_rows(root: Path):
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        hw_path = folder / "hardware.json"
        if hw_path.exists():
            yield folder.name, json.loads(hw_path.read_text())


def write(out_dir: Path, *, interpreted: bool) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    root = records.measurements_dir()
    reference = records.reference_gpu()
    lines = []
    if interpreted:
        lines += [
            "This build ran without a GPU: every kernel on these pages executed in Triton's",
            "interpreter on small shapes and was checked against its reference, and each plot",
            "and table shows the committed measurements of every GPU below, side by side, with",
            f"**{reference}** first: the numbers the tutorials' text quotes are its (set",
            "``GPUPERF_GPU`` to a folder name to put another first).",
            "",
        ]
    else:
        lines += [
            "This build ran on a GPU: the tutorials measured their benchmarks live, on the GPU",
            "named under each plot, and drew the committed measurements of the GPUs below beside it.",
            "",
        ]
    lines += [
        ".. list-table:: Committed measurements, and the ceilings measured in a run of their own",
        "   :header-rows: 1",
        "",
        "   * - GPU (folder)",
        "     - measured",
        "     - software",
        "     - ceilings (measured; datasheet)",
        "     - benchmarks",
    ]
    for slug, hw in _hardware_rows(root):
        p = hw["provenance"]
        sheet = DATASHEET.get(p["gpu"], {})
        ceilings = "; ".join(
            f"{ceiling_label(k, v)}: {format_rate(v['value'], v['unit'])}"
            + (f" ({format_rate(sheet[k], v['unit'])})" if k in sheet else "")
            for k, v in hw["ceilings"].items()
        )
        present = []
        for b in catalog.ALL:
            path = records.record_path(b.name, slug, root)
            if path.exists():
                try:
                    stale = records.staleness(records.read(path), b)
                except ValueError:  # the tutorial page says what is wrong with it
                    present.append(f"{b.name} (malformed)")
                    continue
                present.append(b.name + (" (stale: kernels changed since)" if stale else ""))
        mark = " (first in each plot)" if slug == reference and interpreted else ""
        lines += [
            f"   * - {p['gpu']}, {p['sm_count']} SMs, {p['memory_gib']} GiB (``{slug}``){mark}",
            f"     - {p['date'][:10]}, gpuperf ``{p['gpuperf_commit']}``",
            f"     - driver {p['driver']}, CUDA {p['cuda']}, torch {p['torch']}, triton {p['triton']}",
            f"     - {ceilings}",
            f"     - {', '.join(present) or 'none'}",
        ]
    lines += ["", "Datasheet figures: NVIDIA H100 and H200 Tensor Core GPU datasheets (dense, SXM)."]
    path = out_dir / "measurements.rst"
    text = "\n".join(lines) + "\n"
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return path
