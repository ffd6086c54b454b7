"""Captures: what a GPU run printed or counted, kept as records with provenance.

A benchmark record (:mod:`gpuperf.bench.records`) holds timings of declared
providers. The guides also show other output of a real GPU run: a profiler's
table, Nsight Compute's counters, the code Inductor generated, compile times.
A capture keeps such output as JSON with the same provenance (GPU, software,
commit, date, method) and the hash of the sources it describes, so a page built
without a GPU shows it with its origin and says when the code has changed since.

Files: ``<measurements>/<gpu-slug>/captures/<name>.json``, and any file stored
beside it (a compressed trace, say) at :func:`artifact_path`.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from gpuperf.bench import records
from gpuperf.bench import sources as code

SCHEMA_VERSION = 2

KEYS = ("schema_version", "name", "tool", "provenance", "sources", "sources_sha256", "payload")

_NAME = re.compile(r"[a-z0-9][a-z0-9_]*")

#: The script (run from the root of gpuperf's git checkout on a GPU machine: scripts do
#: not ship with the package) that takes each capture the pages show; :func:`command`
#: answers for any name.
COMMANDS = {
    **dict.fromkeys(
        ("timing_methods", "launch_bound", "torch_profiler", "cuda_extension", "ncu_kernels", "proton"),
        "python scripts/profile_capture.py",
    ),
    **dict.fromkeys(
        ("kernels_per_call", "inductor_elementwise", "compile_modes"), "python scripts/strategy_captures.py"
    ),
    **dict.fromkeys(
        ("timing_scale_shift", "autotune_scale_shift"), "python scripts/benchmark_guide_capture.py"
    ),
    **dict.fromkeys(
        (
            "recipe_data_loading",
            "recipe_precision",
            "recipe_zero_grad",
            "recipe_syncs",
            "recipe_conv",
            "recipe_checkpointing",
            "recipe_compile",
        ),
        "python scripts/recipes_capture.py",
    ),
    **dict.fromkeys(
        (
            "debugging_print",
            "debugging_assert",
            "debugging_sanitizer",
            "debugging_compiled",
            "debugging_mlir_dump",
            "debugging_inductor",
        ),
        "python scripts/debugging_capture.py",
    ),
    "llama_time_breakdown": "python scripts/llama_capture.py",
    "moe_time_breakdown": "python scripts/moe_capture.py",
    "host_breakdown": "python scripts/host_breakdown.py",
    "execution_model": "python scripts/execution_model_capture.py",
    "ncu_gluon_fp8": "python scripts/gluon_capture.py fp8",
    "ncu_gluon_attention": "python scripts/gluon_capture.py attention",
    "ncu_gluon_attention_d64": "python scripts/gluon_capture.py attention64",
}


#: The captures of host time, or of tables that hold it (a profiler's CPU columns): they key on
#: every line of their modules. The others (kernels' counters and times, generated code)
#: key on what the device runs (:func:`gpuperf.bench.sources.hashes`).
HOST_TIMED = frozenset(
    {
        "timing_methods",
        "launch_bound",
        "torch_profiler",
        "cuda_extension",
        "host_breakdown",
        "compile_modes",
        *(name for name in COMMANDS if name.startswith("recipe_")),
    }
)
# Not execution_model: the host time it holds is an empty kernel's, defined in its script and
# launched through Triton alone; of gpuperf's code it keeps what the device runs (the compiled
# kernels' registers and shared memory), so it keys on that.


def script_parser(description: str, parts=()) -> argparse.ArgumentParser:
    """The command line every capture script (:data:`COMMANDS`) shares: ``--out``, the
    measurements folder it writes under (default: the package's, or ``GPUPERF_MEASUREMENTS``),
    and, given the names of its ``parts``, ``--part`` (repeatable) to run only those. A
    script adds its own options to the parser it gets."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--out", type=Path, default=None, help="measurements folder (default: src/gpuperf/measurements)"
    )
    if parts:
        parser.add_argument("--part", choices=list(parts), action="append", help="run only these parts")
    return parser


def command(name: str) -> str:
    """The command that takes the capture ``name`` on a GPU machine: its script
    (:data:`COMMANDS`), or for any other capture :func:`gpuperf.bench.records.bench_command`.
    A notice names it through :func:`gpuperf.bench.records.advice`."""
    return COMMANDS.get(name) or records.bench_command()


def _check_name(name) -> None:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"name must be lower-case letters, digits and underscores, got {name!r}")


def build(
    name: str,
    *,
    tool: str,
    payload: dict,
    sources: tuple[str, ...] = (),
    method: str | None = None,
    provenance: dict | None = None,
) -> dict:
    """Make a capture of ``payload`` (JSON-able) taken on the current CUDA device.

    Args:
        name: file name and id, e.g. ``"ncu_row_mean"``.
        tool: what produced the output (a command line, ``"torch.profiler"``).
        payload: the captured output: any JSON-able dict.
        sources: files under ``src/gpuperf`` the output describes; they and the modules
            they import are hashed (:func:`gpuperf.bench.sources.hashes`: every line for
            a capture of host time, :data:`HOST_TIMED`, else what the device runs), and
            when that changes the capture reads as stale (:func:`staleness`).
        method: how it was measured, for the provenance (default: the device timing method).
        provenance: given instead of collected (tests; a capture made elsewhere).

    Raises:
        ValueError: a bad name, a payload that is not a JSON-able dict, or a missing source.
    """
    _check_name(name)
    if not isinstance(payload, dict):
        raise ValueError(f"payload must be a dict, got {type(payload).__name__}")
    try:
        json.dumps(payload)
    except (TypeError, ValueError) as err:
        raise ValueError(f"payload must be JSON-able: {err}") from None
    if provenance is None:
        provenance = records.collect_provenance(method=method)
    return {
        "schema_version": SCHEMA_VERSION,
        "name": name,
        "tool": tool,
        "provenance": provenance,
        "sources": (hashed := code.hashes(sources, host=name in HOST_TIMED)),
        "sources_sha256": code.combined_sha256(hashed),
        "payload": payload,
    }


def validate(capture) -> list[str]:
    """What is wrong with ``capture`` (empty when nothing is)."""
    if not isinstance(capture, dict):
        return [f"a capture is a dict, got {type(capture).__name__}"]
    problems = [f"missing key {key!r}" for key in KEYS if key not in capture]
    if problems:
        return problems
    if capture["schema_version"] != SCHEMA_VERSION:
        problems.append(f"schema_version {capture['schema_version']!r} is not {SCHEMA_VERSION}")
    missing = [f for f in records.PROVENANCE_FIELDS if f not in capture["provenance"]]
    if missing:
        problems.append(f"provenance lacks {missing}")
    if not isinstance(capture["payload"], dict):
        problems.append("payload is not a dict")
    if not isinstance(capture["sources"], dict):
        problems.append("sources must be a {path: sha256}")
    elif code.combined_sha256(capture["sources"]) != capture["sources_sha256"]:
        problems.append("sources_sha256 is not the hash of sources")
    return problems


def capture_path(name: str, gpu: str, root: Path | None = None) -> Path:
    """Where the capture ``name`` of the GPU folder ``gpu`` lives."""
    _check_name(name)
    return (root or records.measurements_dir()) / gpu / "captures" / f"{name}.json"


def artifact_path(name: str, gpu: str, suffix: str, root: Path | None = None) -> Path:
    """A file kept beside the capture ``name``: ``<gpu>/captures/<name><suffix>``
    (``suffix`` such as ``".json.gz"``)."""
    if not suffix.startswith(".") or "/" in suffix:
        raise ValueError(f"suffix must start with '.' and hold no '/', got {suffix!r}")
    return capture_path(name, gpu, root).with_name(name + suffix)


def write(capture: dict, root: Path | None = None) -> Path:
    """Write ``capture`` into its GPU's folder in ``root`` (default
    :func:`gpuperf.bench.records.output_dir`); returns the path.

    Raises:
        ValueError: the capture is malformed (the message lists what is wrong).
        RuntimeError: no ``root`` and gpuperf is installed as a package (read-only records).
    """
    problems = validate(capture)
    if problems:
        raise ValueError(f"capture is malformed: {problems}")
    gpu = records.gpu_slug(capture["provenance"]["gpu"])
    path = capture_path(capture["name"], gpu, records.output_dir(root))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(capture, indent=1) + "\n")
    return path


def gpus_with(name: str, root: Path | None = None) -> list[str]:
    """Slugs of the GPU folders holding the capture ``name``, the reference GPU first."""
    _check_name(name)
    root = root or records.measurements_dir()
    if not root.is_dir():
        return []
    found = sorted(p.name for p in root.iterdir() if capture_path(name, p.name, root).is_file())
    return sorted(found, key=lambda slug: slug != records.reference_gpu())


def load(name: str, gpu: str | None = None, root: Path | None = None, *, how: str = "") -> dict:
    """Read the capture ``name`` of ``gpu`` (default: the reference GPU).

    Args:
        how: the command that writes this capture, quoted in the error when it is missing
            (:func:`gpuperf.bench.records.advice`).

    Raises:
        FileNotFoundError: no such capture; the message says how to make one.
        ValueError: the file is malformed.
    """
    gpu = gpu or records.reference_gpu()
    path = capture_path(name, gpu, root)
    if not path.is_file():
        hint = f" R{records.advice(how, 'that GPU')[1:]}." if how else ""
        raise FileNotFoundError(f"no capture {name!r} for {gpu} (expected {path}).{hint}")
    capture = json.loads(path.read_text())
    problems = validate(capture)
    if problems:
        raise ValueError(f"{path} is malformed: {problems}")
    return capture


def staleness(capture: dict) -> list[str]:
    """Reasons why ``capture`` no longer describes the code as it stands (empty: fresh): the
    code of a source it hashed changed, or those sources now import another module.
    Docstrings, comments and layout do not count (:mod:`gpuperf.bench.sources`)."""
    host = capture["name"] in HOST_TIMED or code.is_host_keyed(capture["sources"])
    changed = code.changes(capture["sources"], code.files(capture["sources"]), host=host)
    if not changed:
        return []
    return [
        f"its code changed after it was captured at gpuperf "
        f"{records.short_commit(capture['provenance']['gpuperf_commit'])} ({'; '.join(changed)})"
    ]


def caption(capture: dict) -> str:
    """One line naming where, when and with which tool ``capture`` was made."""
    return f"{records.caption(capture['provenance'])}; captured with {capture['tool']}"
