"""Captures (profiler tables, counters, generated code: :mod:`gpuperf.bench.captures`) as
a page shows them: each GPU's, with what the reader must know about it.

:func:`load` gives a capture and its notes (why it is missing, or that the code
changed since it was taken) without raising; :func:`show` prints every GPU's capture
of one name through a render function, each followed by where and when it was taken.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from gpuperf.bench import captures
from gpuperf.pages.plotting import short_gpu_name

#: The command that writes a capture, by capture name, quoted when one is missing.
HOW = {
    "timing_methods": "bash scripts/device_run.sh profiling",
    "launch_bound": "bash scripts/device_run.sh profiling",
    "torch_profiler": "bash scripts/device_run.sh profiling",
    "cuda_extension": "bash scripts/device_run.sh profiling",
    "ncu_kernels": "bash scripts/device_run.sh profiling",
    "proton": "bash scripts/device_run.sh profiling",
    "kernels_per_call": "bash scripts/device_run.sh strategy",
    "inductor_elementwise": "bash scripts/device_run.sh strategy",
    "compile_modes": "bash scripts/device_run.sh strategy",
    "llama_time_breakdown": "bash scripts/device_run.sh llama",
    "ncu_gluon_fp8": "bash scripts/device_run.sh gluon",
    "ncu_gluon_attention": "bash scripts/device_run.sh gluon-attention",
    "ncu_gluon_attention_d64": "bash scripts/device_run.sh gluon-attention",
}


def how(name: str) -> str:
    """The command that writes the capture ``name`` on a GPU machine."""
    return HOW.get(name, "nox -s bench")


def load(name: str, gpu: str | None = None, root: Path | None = None) -> tuple[dict | None, list[str]]:
    """The capture ``name`` of ``gpu`` (a folder; default: the reference GPU; ``root``: the
    measurements directory, default :func:`gpuperf.bench.records.measurements_dir`) and the
    notes a page must show with it: ``MISSING``/``MALFORMED`` when there is none to
    show, ``STALE`` when its sources changed after it was taken.

    Never raises for a missing or malformed capture: the page says so instead.
    """
    command = how(name)
    try:
        capture = captures.load(name, gpu, root, how=command)
    except FileNotFoundError as err:
        return None, [f"MISSING: {err}"]
    except ValueError as err:
        return None, [f"MALFORMED: {err}"]
    notes = [f"STALE: {reason}; re-run `{command}` on a GPU." for reason in captures.staleness(capture)]
    return capture, notes


def gpus(name: str) -> list[str]:
    """Folders of the GPUs holding the capture ``name``, the reference GPU first."""
    return captures.gpus_with(name)


class Shown(dict):
    """``{gpu folder: capture}``: what :func:`show` printed. A page's cell that ends with
    ``captures.show(...)`` does not print it again (``docs/conf.py`` ignores its repr)."""


def show(name: str, render: Callable[[dict], object] | None = None) -> Shown:
    """Print every GPU's capture ``name``: a heading with the GPU, ``render(capture)``
    (which prints, or returns what to print), the capture's notes and its provenance.
    Prints a ``MISSING`` note when no GPU has it.

    Returns:
        ``{gpu folder: capture}`` of the captures shown, in the order shown (a
        :class:`Shown`).

    Raises:
        TypeError: ``render`` is not callable.
    """
    if render is not None and not callable(render):
        raise TypeError(f"render must be callable, got {type(render).__name__}")
    shown = Shown()
    folders = gpus(name)
    if not folders:
        print(f"MISSING: no capture {name!r} on any GPU; run `{how(name)}` on a GPU and commit it")
    for gpu in folders:
        capture, notes = load(name, gpu)
        if capture is None:
            print("\n".join(notes))
            continue
        if len(folders) > 1:
            print(f"--- {short_gpu_name(capture['provenance']['gpu'])}")
        out = render(capture) if render is not None else None
        if out is not None:
            print(out)
        for note in notes:
            print(note)
        print(captures.caption(capture), end="\n\n" if len(folders) > 1 else "\n")
        shown[gpu] = capture
    return shown
