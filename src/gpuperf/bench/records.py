"""Measurement records: one JSON file per benchmark per GPU, each saying where it came from.

Layout: ``<measurements>/<gpu-slug>/<benchmark>.json`` and, beside them,
``hardware.json`` with the ceilings measured in the same run. ``<measurements>`` is the
folder of committed records that ships inside the package (:func:`measurements_dir`).
A record is tidy: one row per (axis combination, x, provider), so a reader can diff two
runs line by line.

A record (schema version 3) holds ``schema_version``, ``benchmark``, ``title``,
``x_name``, ``x_label``, ``metric``, ``baseline``, ``axes`` (``{name: [values]}``),
``ceilings`` (``{key: {label, unit, value, value_p20, value_p80, ms}}`` for every
ceiling its rows are read against), ``sources`` (``{entry: sha256}``: what the
measurement keys on, :func:`gpuperf.bench.sources.hashes`: for device time each kernel
``"path::name"``, constant and config table its modules hold, for host time every file
whole), ``sources_sha256`` (one hash of those), ``ran`` (the package's files whose
functions ran during the providers' checked calls, or None where that was not traced),
``wall_s`` (seconds the whole measurement took, or None), ``provenance`` and ``rows``.
Each row holds ``x`` (an int, a shape as a list of ints, or a string), ``axes``
(``{name: value}``), ``provider``, ``label``, ``status`` (``"ok"``, ``"mismatch"`` or
``"error"``, with a ``message`` when not ok), ``bytes`` and ``flops`` of one call (both,
whatever the metric, so that any record can be placed on a roofline), ``ceiling`` (a key
of ``ceilings``, or None), the times ``ms``, ``ms_p20``, ``ms_p80``, the metric
``value``, ``value_p20``, ``value_p80`` (None when not ok) and ``config``, the launch or
autotune configuration the provider ran (or None). A row of host time
(:func:`gpuperf.bench.timing.host_time_ms`) also holds ``cpu_ms``, the calling thread's CPU
time per call (records measured before it was read have none).
"""

from __future__ import annotations

import atexit
import datetime as _dt
import json
import os
import platform
import re
import shutil
import subprocess
import tempfile
from importlib import resources
from pathlib import Path

from gpuperf._runtime import gpu_slug
from gpuperf.bench import sources as code
from gpuperf.bench.timing import TIMING_METHODS

SCHEMA_VERSION = 3
#: ``hardware.json`` (provenance and ceilings) has its own, unchanged, format.
HARDWARE_SCHEMA_VERSION = 1

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
    "axes",
    "ceilings",
    "sources",
    "sources_sha256",
    "ran",
    "wall_s",
    "provenance",
    "rows",
)
ROW_KEYS = (
    "x",
    "axes",
    "provider",
    "label",
    "status",
    "bytes",
    "flops",
    "ceiling",
    "ms",
    "ms_p20",
    "ms_p80",
    "value",
    "value_p20",
    "value_p80",
    "config",
)
CEILING_KEYS = ("label", "unit", "value")
STATUSES = ("ok", "mismatch", "error")

#: Keys every record's provenance must have.
PROVENANCE_FIELDS = (
    "gpu",
    "sm_count",
    "memory_gib",
    "l2_bytes",
    "compute_capability",
    "driver",
    "cuda",
    "torch",
    "triton",
    "python",
    "gpuperf_commit",
    "date",
    "timing_method",
)


# Where and when: provenance ----------------------------------------------------------


def _run(cmd: list[str], cwd: Path | None = None) -> str | None:
    try:
        done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=20, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None


def gpuperf_commit() -> str:
    """The commit the code was measured at: ``GPUPERF_COMMIT`` if set, else git's
    HEAD of the checkout gpuperf runs from (:func:`checkout_root`) with ``-dirty`` when
    the tree has changes, else ``'unknown'`` (an installed package)."""
    if os.environ.get("GPUPERF_COMMIT"):
        return os.environ["GPUPERF_COMMIT"]
    root = checkout_root()
    head = None if root is None else _run(["git", "rev-parse", "--short=12", "HEAD"], cwd=root)
    if head is None:
        return "unknown"
    dirty = _run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root)
    return head + ("-dirty" if dirty else "")


#: Hex digits of a commit that captions and notes print: one width wherever a commit is shown.
COMMIT_DIGITS = 7


def short_commit(commit: str) -> str:
    """A provenance's ``gpuperf_commit`` as captions print it: its first
    :data:`COMMIT_DIGITS` hex digits, keeping a ``-dirty`` suffix; anything that is not a
    hash (``'unknown'``) as it is."""
    head, dirty, _ = commit.partition("-dirty")
    if not re.fullmatch(r"[0-9a-f]{7,40}", head):
        return commit
    return head[:COMMIT_DIGITS] + dirty


def collect_provenance(timer: str = "device", device_index: int = 0, *, method: str | None = None) -> dict:
    """Describe the CUDA device, the software stack and the timing method of ``timer``
    (``"device"`` or ``"host"``, see :data:`gpuperf.bench.timing.TIMING_METHODS`), or
    ``method`` when the measurement was made some other way (a tuning sweep, a
    profiler's counters); needs a CUDA device."""
    import torch
    import triton

    props = torch.cuda.get_device_properties(device_index)
    driver = _run(
        ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader", f"--id={device_index}"]
    )
    return {
        "gpu": props.name,
        "sm_count": props.multi_processor_count,
        "memory_gib": round(props.total_memory / 2**30, 1),
        "l2_bytes": getattr(props, "L2_cache_size", None),
        "compute_capability": f"{props.major}.{props.minor}",
        "driver": driver or "unknown",
        "cuda": torch.version.cuda,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "python": platform.python_version(),
        "gpuperf_commit": gpuperf_commit(),
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "timing_method": method or TIMING_METHODS[timer],
    }


def caption(provenance: dict) -> str:
    """One line naming where, when and how a measurement was made.

    The timing method is shortened to its name and rounds, its parenthesised
    details dropped: ``'triton.testing.do_bench, best of 3 rounds by median'``.
    """
    p = provenance
    method = re.sub(r" \([^)]*\)", "", p["timing_method"]).split(":")[0]
    return (
        f"{p['gpu']} ({p['sm_count']} SMs, {p['memory_gib']} GiB), driver {p['driver']}, "
        f"CUDA {p['cuda']}, torch {p['torch']}, triton {p['triton']}, "
        f"gpuperf {short_commit(p['gpuperf_commit'])}, {p['date'][:10]}; {method}"
    )


# Files -------------------------------------------------------------------------------


#: Names a folder of records to read and write instead of the package's own: a copy of
#: them with a reader's own GPU added, say.
MEASUREMENTS_VAR = "GPUPERF_MEASUREMENTS"

#: The package whose data the committed records are, and their folder in it.
_PACKAGE, _FOLDER = "gpuperf", "measurements"

#: Copies on disk of record folders that were not on the file system (:func:`_on_disk`).
_EXTRACTED: dict[str, Path] = {}


def checkout_root() -> Path | None:
    """The source checkout gpuperf runs from (the folder that holds ``pyproject.toml`` and
    ``src/gpuperf``, an editable install's included), or None where gpuperf is installed
    as a package (``pip install``)."""
    package = Path(__file__).resolve().parents[1]
    root = package.parents[1]
    if package.parent.name == "src" and (root / "pyproject.toml").is_file():
        return root
    return None


def measurements_dir() -> Path:
    """The folder of the committed records: ``<gpu>/<benchmark>.json``, each GPU's
    ``hardware.json`` (its ceilings), and its ``captures/`` and ``ncu/`` folders.

    The records ship inside the package (``gpuperf/measurements``, package data read
    through :mod:`importlib.resources`): a tutorial copied to any folder finds them after
    ``pip install``, with no setting. ``GPUPERF_MEASUREMENTS`` names another folder to
    read instead. Where to *write* a measurement is :func:`output_dir`.
    """
    env = os.environ.get(MEASUREMENTS_VAR)
    if env:
        return Path(env)
    return _on_disk(resources.files(_PACKAGE) / _FOLDER)


def _on_disk(folder) -> Path:
    """``folder`` (an :mod:`importlib.resources` traversable) as a path: itself where the
    package lies on the file system, else a copy made once in a temporary folder (a
    zipped install), removed when Python exits."""
    if isinstance(folder, Path):
        return folder
    key = str(folder)
    if key not in _EXTRACTED:
        copy = Path(tempfile.mkdtemp(prefix="gpuperf-measurements-"))
        atexit.register(shutil.rmtree, copy, True)
        if folder.is_dir():
            _copy_tree(folder, copy)
        _EXTRACTED[key] = copy
    return _EXTRACTED[key]


def _copy_tree(folder, target: Path) -> None:
    for item in folder.iterdir():
        if item.is_dir():
            (target / item.name).mkdir()
            _copy_tree(item, target / item.name)
        else:
            (target / item.name).write_bytes(item.read_bytes())


def output_dir(out: Path | str | None = None) -> Path:
    """The folder a measurement is written into: ``out`` when given, else
    ``GPUPERF_MEASUREMENTS`` when set, else the committed records' folder
    (:func:`measurements_dir`) of the checkout gpuperf runs from.

    Raises:
        RuntimeError: neither is given and gpuperf is installed as a package, whose
            records are read-only (a reinstall puts them back); the message says how to
            write elsewhere.
    """
    if out is not None:
        return Path(out)
    env = os.environ.get(MEASUREMENTS_VAR)
    if env:
        return Path(env)
    if checkout_root() is None:
        raise RuntimeError(
            f"gpuperf is installed as a package, and the records it ships ({measurements_dir()}) "
            "are read-only: pass --out FOLDER to `python -m gpuperf.bench` to write this GPU's "
            f"records into FOLDER, and set {MEASUREMENTS_VAR}=FOLDER for the pages to read that "
            "folder (copy the shipped records into it first to keep them beside yours); or measure "
            "from a git checkout of gpuperf, where the records go beside the committed ones"
        )
    return measurements_dir()


def bench_command(*args: str) -> str:
    """The ``python -m gpuperf.bench`` command line, with ``args``, that measures and
    writes records where gpuperf runs, for a notice to name: in a checkout (or with
    ``GPUPERF_MEASUREMENTS`` set) the records go where the pages read them; where gpuperf
    is installed as a package, with ``--out FOLDER`` (:func:`output_dir`)."""
    words = ["python -m gpuperf.bench", *args]
    if checkout_root() is None and not os.environ.get(MEASUREMENTS_VAR):
        words.append("--out FOLDER")
    return " ".join(words)


def advice(command: str, on: str = "a GPU") -> str:
    """What a notice says to measure what is missing, true where gpuperf runs:
    ``"run `python -m gpuperf.bench` on a GPU"`` (``command`` from :func:`bench_command`,
    or a capture's). One of gpuperf's scripts (``python scripts/...``) ships only with its
    source, so where gpuperf is installed as a package the notice adds ``"(from a git
    checkout of gpuperf)"``. ``on`` names the machine (``"that GPU"``)."""
    text = f"run `{command}` on {on}"
    if command.startswith("python scripts/") and checkout_root() is None:
        text += " (from a git checkout of gpuperf)"
    return text


def reference_gpu() -> str:
    """Slug of the GPU whose records are rendered without a GPU."""
    return os.environ.get("GPUPERF_GPU", REFERENCE_GPU)


def record_path(benchmark_name: str, gpu: str, root: Path | None = None) -> Path:
    return (root or measurements_dir()) / gpu / f"{benchmark_name}.json"


def gpus_with_record(benchmark_name: str, root: Path | None = None) -> list[str]:
    """Slugs of the GPU folders that hold a record of ``benchmark_name``: the reference
    GPU first (:func:`reference_gpu`), then the others by name.

    Any folder under the measurements directory counts, so a reader's own
    ``python -m gpuperf.bench`` run is drawn beside the committed GPUs.
    """
    root = root or measurements_dir()
    if not root.is_dir():
        return []
    found = sorted(p.name for p in root.iterdir() if (p / f"{benchmark_name}.json").is_file())
    first = reference_gpu()
    return sorted(found, key=lambda slug: slug != first)


# The record --------------------------------------------------------------------------


def build_record(
    benchmark,
    rows: list[dict],
    ceilings: dict,
    provenance: dict,
    *,
    ran: list[str] | None = None,
    wall_s: float | None = None,
) -> dict:
    """Assemble the record of ``benchmark`` from measured ``rows``.

    Args:
        benchmark: the :class:`~gpuperf.bench.catalog.benchmark.Benchmark` measured.
        rows: one dict per (axes, x, provider) with the keys of :data:`ROW_KEYS`.
        ceilings: measured ceilings ``{key: {value, value_p20, value_p80, unit, ms}}``
            (as in ``hardware.json``); those the rows use are kept, with their labels, and
            beside the stream bandwidth the copy bandwidth measured with it (one of its
            streams: what a page compares a kernel's read mix with).
        provenance: as made by :func:`collect_provenance`.
        ran: the package's source files whose functions ran during the providers'
            checked calls (:func:`gpuperf.bench.runner.run` traces them), or None.
        wall_s: seconds the whole measurement took, or None.
    """
    from gpuperf.bench.hardware import CEILINGS

    used = dict.fromkeys(r["ceiling"] for r in rows if r["ceiling"] is not None)
    if "stream_gbps" in used and "copy_gbps" in ceilings:
        used["copy_gbps"] = None
    return {
        "schema_version": SCHEMA_VERSION,
        "benchmark": benchmark.name,
        "title": benchmark.title,
        "x_name": benchmark.x_name,
        "x_label": benchmark.x_label,
        "metric": benchmark.metric,
        "baseline": benchmark.baseline,
        "axes": {name: list(values) for name, values in benchmark.axes},
        "ceilings": {
            key: {"label": CEILINGS[key][0], "unit": CEILINGS[key][1], **ceilings[key]} for key in used
        },
        "sources": (hashed := code.hashes(benchmark.sources, host=benchmark.timer == "host")),
        "sources_sha256": code.combined_sha256(hashed),
        "ran": None if ran is None else sorted(ran),
        "wall_s": None if wall_s is None else round(wall_s, 1),
        "provenance": provenance,
        "rows": rows,
    }


def validate(record: dict) -> list[str]:
    """Return the schema problems of ``record`` (an empty list when it is well formed)."""
    problems = [f"missing key {k!r}" for k in RECORD_KEYS if k not in record]
    if problems:
        return problems
    if record["schema_version"] != SCHEMA_VERSION:
        problems.append(f"schema_version {record['schema_version']} != {SCHEMA_VERSION}")
    if not isinstance(record["sources"], dict) or not record["sources"]:
        problems.append("sources must be a non-empty {path: sha256}")
    elif code.combined_sha256(record["sources"]) != record["sources_sha256"]:
        problems.append("sources_sha256 is not the hash of sources")
    problems += [f"provenance lacks {k!r}" for k in PROVENANCE_FIELDS if k not in record["provenance"]]
    for key, ceiling in record["ceilings"].items():
        problems += [f"ceiling {key!r} lacks {k!r}" for k in CEILING_KEYS if k not in ceiling]
    axes = record["axes"]
    problems += [f"axis {name!r} has no values" for name, values in axes.items() if not values]
    for i, row in enumerate(record["rows"]):
        missing = [k for k in ROW_KEYS if k not in row]
        if missing:
            problems.append(f"row {i} lacks {missing}")
            continue
        if row["status"] not in STATUSES:
            problems.append(f"row {i}: status {row['status']!r} is not one of {list(STATUSES)}")
        elif row["status"] == "ok":
            # Peak memory (GiB) is no time: its rows carry a value and no ms.
            field = "value" if record["metric"] == "GiB" else "ms"
            low, mid, high = row[f"{field}_p20"], row[field], row[f"{field}_p80"]
            if not all(isinstance(v, (int, float)) for v in (low, mid, high)) or not low <= mid <= high:
                problems.append(
                    f"row {i}: {field} percentiles missing or out of order ({low}, {mid}, {high})"
                )
        elif not row.get("message"):
            problems.append(f"row {i}: status {row['status']!r} without a message")
        if set(row["axes"]) != set(axes):
            problems.append(f"row {i}: axes {sorted(row['axes'])} != the record's {sorted(axes)}")
        if row["ceiling"] is not None and row["ceiling"] not in record["ceilings"]:
            problems.append(f"row {i}: ceiling {row['ceiling']!r} is not among the record's ceilings")
    if not record["rows"]:
        problems.append("no rows")
    return problems


def write(record: dict, root: Path | None = None) -> Path:
    """Validate and write ``record`` under its GPU's folder in ``root`` (default
    :func:`output_dir`); return the path.

    Raises:
        ValueError: the record does not follow the schema.
        RuntimeError: no ``root`` and gpuperf is installed as a package (:func:`output_dir`).
    """
    problems = validate(record)
    if problems:
        raise ValueError(f"record {record.get('benchmark')!r} is malformed: {problems}")
    path = record_path(record["benchmark"], gpu_slug(record["provenance"]["gpu"]), output_dir(root))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n")
    return path


def read(path: Path) -> dict:
    """Read and validate one record; ``ValueError`` when it does not follow the schema.

    Shapes come back as tuples (JSON stores them as lists), so that a row's ``x``
    equals the ``x`` the benchmark declares and can be looked up by it.
    """
    record = json.loads(Path(path).read_text())
    problems = validate(record)
    if problems:
        raise ValueError(f"{path} is malformed: {problems}")
    for row in record["rows"]:
        if isinstance(row["x"], list):
            row["x"] = tuple(row["x"])
    return record


def _point(x, axes: dict, provider: str) -> tuple:
    return (x, tuple(sorted(axes.items())), provider)


def staleness(record: dict, benchmark) -> list[str]:
    """Reasons why ``record`` no longer describes ``benchmark`` as the code stands: its
    code changed (a kernel or config table the record hashed, or one the benchmark's
    sources now import), or a declared point was never measured. A record of host time
    keys on every line of its modules; one of device time on what the device runs
    (:func:`gpuperf.bench.sources.hashes`): launch glue, checks, docstrings, comments
    and layout do not count."""
    reasons = []
    host = benchmark.timer == "host" or code.is_host_keyed(record["sources"])
    changed = code.changes(record["sources"], benchmark.sources, host=host)
    if changed:
        reasons.append(
            f"its code changed after it was measured at gpuperf "
            f"{short_commit(record['provenance']['gpuperf_commit'])} ({'; '.join(changed)})"
        )
    measured = {_point(r["x"], r["axes"], r["provider"]) for r in record["rows"]}
    declared = {
        _point(x, combo, p.key)
        for combo in benchmark.combos()
        for x in benchmark.x_values
        for p in benchmark.providers
    }
    if declared - measured:
        what = "(axes, x, provider)" if benchmark.axes else "(x, provider)"
        reasons.append(f"{len(declared - measured)} declared {what} points were never measured")
    # A row is read against the ceiling it was measured beside: one read against another
    # ceiling than the benchmark now declares for its axes would be drawn under the wrong roof.
    # (A row without one was measured where that ceiling could not be: FP8 before sm_89.)
    misread = {
        (row["ceiling"], benchmark.ceiling_key(**row["axes"]))
        for row in record["rows"]
        if row.get("ceiling") is not None and row["ceiling"] != benchmark.ceiling_key(**row["axes"])
    }
    for was, now in sorted(misread, key=str):
        reasons.append(f"rows read against the ceiling {was!r} where the benchmark now declares {now!r}")
    return reasons
