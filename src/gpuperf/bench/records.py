"""Measurement records: one JSON file per benchmark per GPU, with provenance.

Layout: ``docs/measurements/<gpu-slug>/<benchmark>.json`` and, beside them,
``hardware.json`` with the ceilings measured in the same run. A record is tidy:
one row per (x, provider), so a reader can diff two runs line by line.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from gpuperf.bench.provenance import FIELDS as PROVENANCE_FIELDS
from gpuperf.bench.provenance import REPO_ROOT

SCHEMA_VERSION = 1
PACKAGE_ROOT = Path(__file__).resolve().parents[1]

#: GPU whose committed records render when no GPU is present (override: ``GPUPERF_GPU``).
REFERENCE_GPU = "nvidia-h100-80gb-hbm3"

RECORD_KEYS = (
    "schema_version",
    "benchmark",
    "title",
    "x_name",
    "x_label",
    "metric",
    "baseline",
    "ceiling",
    "sources_sha256",
    "provenance",
    "rows",
)
ROW_KEYS = ("x", "provider", "label", "status", "work", "ms", "ms_p20", "ms_p80", "value")


def measurements_dir() -> Path:
    """Where records live: ``GPUPERF_MEASUREMENTS`` if set, else ``docs/measurements`` in the checkout."""
    env = os.environ.get("GPUPERF_MEASUREMENTS")
    return Path(env) if env else REPO_ROOT / "docs" / "measurements"


def reference_gpu() -> str:
    """Slug of the GPU whose records are rendered without a GPU."""
    return os.environ.get("GPUPERF_GPU", REFERENCE_GPU)


def record_path(benchmark_name: str, gpu: str, root: Path | None = None) -> Path:
    return (root or measurements_dir()) / gpu / f"{benchmark_name}.json"


def sources_sha256(sources) -> str:
    """Hash of the kernel sources a benchmark measures (paths relative to ``src/gpuperf``)."""
    h = hashlib.sha256()
    for rel in sorted(sources):
        h.update(rel.encode())
        h.update((PACKAGE_ROOT / rel).read_bytes())
    return h.hexdigest()


def validate(record: dict) -> list[str]:
    """Return the schema problems of ``record`` (an empty list when it is well formed)."""
    problems = [f"missing key {k!r}" for k in RECORD_KEYS if k not in record]
    if problems:
        return problems
    if record["schema_version"] != SCHEMA_VERSION:
        problems.append(f"schema_version {record['schema_version']} != {SCHEMA_VERSION}")
    problems += [f"provenance lacks {k!r}" for k in PROVENANCE_FIELDS if k not in record["provenance"]]
    ceiling = record["ceiling"]
    for k in ("key", "label", "value", "unit"):
        if k not in ceiling:
            problems.append(f"ceiling lacks {k!r}")
    for i, row in enumerate(record["rows"]):
        missing = [k for k in ROW_KEYS if k not in row]
        if missing:
            problems.append(f"row {i} lacks {missing}")
        elif row["status"] == "ok" and not (row["ms_p20"] <= row["ms"] <= row["ms_p80"]):
            problems.append(
                f"row {i}: percentiles out of order ({row['ms_p20']}, {row['ms']}, {row['ms_p80']})"
            )
    if not record["rows"]:
        problems.append("no rows")
    return problems


def write(record: dict, root: Path | None = None) -> Path:
    """Validate and write ``record`` under its GPU's folder; return the path.

    Raises:
        ValueError: the record does not follow the schema.
    """
    problems = validate(record)
    if problems:
        raise ValueError(f"record {record.get('benchmark')!r} is malformed: {problems}")
    from gpuperf.bench.provenance import gpu_slug

    path = record_path(record["benchmark"], gpu_slug(record["provenance"]["gpu"]), root)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n")
    return path


def read(path: Path) -> dict:
    """Read and validate one record; ``ValueError`` when it does not follow the schema."""
    record = json.loads(Path(path).read_text())
    problems = validate(record)
    if problems:
        raise ValueError(f"{path} is malformed: {problems}")
    return record


def staleness(record: dict, benchmark) -> list[str]:
    """Reasons why ``record`` no longer describes ``benchmark`` as the code stands."""
    reasons = []
    if record["sources_sha256"] != sources_sha256(benchmark.sources):
        reasons.append(
            f"the kernel sources ({', '.join(benchmark.sources)}) changed after this was "
            f"measured at gpuperf {record['provenance']['gpuperf_commit']}"
        )
    measured = {(r["x"], r["provider"]) for r in record["rows"]}
    declared = {(x, p.key) for x in benchmark.x_values for p in benchmark.providers}
    if declared - measured:
        reasons.append(f"{len(declared - measured)} declared (size, provider) pairs were never measured")
    return reasons
