"""Where and when a measurement was made: every record carries this."""

from __future__ import annotations

import datetime as _dt
import os
import platform
import re
import subprocess
from pathlib import Path

from gpuperf.bench.timing import TIMING_METHOD

REPO_ROOT = Path(__file__).resolve().parents[3]

#: Keys every record's provenance must have.
FIELDS = (
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


def gpu_slug(name: str) -> str:
    """Folder name for a GPU: ``'NVIDIA H100 80GB HBM3'`` -> ``'nvidia-h100-80gb-hbm3'``."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def _run(cmd: list[str], cwd: Path | None = None) -> str | None:
    try:
        done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=20, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None


def gpuperf_commit() -> str:
    """The commit the code was measured at: ``GPUPERF_COMMIT`` if set, else git's
    HEAD with ``-dirty`` when the tree has changes, else ``'unknown'``."""
    if os.environ.get("GPUPERF_COMMIT"):
        return os.environ["GPUPERF_COMMIT"]
    head = _run(["git", "rev-parse", "--short=12", "HEAD"], cwd=REPO_ROOT)
    if head is None:
        return "unknown"
    dirty = _run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO_ROOT)
    return head + ("-dirty" if dirty else "")


def collect(device_index: int = 0) -> dict:
    """Describe the CUDA device and the software stack; needs a CUDA device."""
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
        "timing_method": TIMING_METHOD,
    }


def caption(provenance: dict) -> str:
    """One line naming where, when and how a measurement was made."""
    p = provenance
    return (
        f"{p['gpu']} ({p['sm_count']} SMs, {p['memory_gib']} GiB), driver {p['driver']}, "
        f"CUDA {p['cuda']}, torch {p['torch']}, triton {p['triton']}, "
        f"gpuperf {p['gpuperf_commit']}, {p['date'][:10]}; {p['timing_method'].split(' (')[0]}"
        + "".join(f", {m}" for m in re.findall(r"best of \d+ rounds", p["timing_method"]))
        + ", median"
    )
