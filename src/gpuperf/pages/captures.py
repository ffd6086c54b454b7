"""Captures (profiler tables, counters, generated code: :mod:`gpuperf.bench.captures`) as
a page shows them: each GPU's, with what the reader must know about it.

:func:`load` gives a capture and its notes (why it is missing, or that the code
changed since it was taken) without raising; :func:`show` prints every GPU's capture
of one name through a render function, each followed by where and when it was taken.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from gpuperf.bench import captures, records
from gpuperf.pages.plotting import short_gpu_name

#: What a reading under a capture prints when there is no capture to read (the note above
#: it says why): the default of :func:`per_gpu`.
NOTHING_YET = "Nothing to read here yet: the capture above is not there."


def gpu_folder(capture: dict) -> str:
    """The folder of the GPU ``capture`` was taken on (``'nvidia-h200'``), from its provenance:
    where that GPU's records, ceilings and other captures are."""
    return records.gpu_slug(capture["provenance"]["gpu"])


def capture_payload(capture, name: str) -> dict:
    """The payload of ``capture``, checked to be a capture named ``name``.

    Raises:
        TypeError: ``capture`` is not a dict.
        ValueError: it is a capture of another name, or has no payload.
    """
    if not isinstance(capture, dict):
        raise TypeError(f"capture must be a dict (a loaded capture), got {type(capture).__name__}")
    if capture.get("name") != name:
        raise ValueError(f"expected the capture {name!r}, got {capture.get('name')!r}")
    if not isinstance(capture.get("payload"), dict):
        raise ValueError(f"the capture {name!r} has no payload")
    return capture["payload"]


def load(name: str, gpu: str | None = None, root: Path | None = None) -> tuple[dict | None, list[str]]:
    """The capture ``name`` of ``gpu`` (a folder; default: the reference GPU; ``root``: the
    measurements directory, default :func:`gpuperf.bench.records.measurements_dir`) as a page
    shows it, and the notes that go with it.

    On the reference GPU the notes say ``MISSING``/``MALFORMED`` when there is none to show
    and ``STALE`` when its code changed after it was taken. Another GPU's capture is shown
    only while current: a missing, malformed or stale one gives ``(None, [])``.

    Never raises for a missing or malformed capture: the page says so instead.
    """
    command = captures.command(name)
    reference = gpu is None or gpu == records.reference_gpu()
    try:
        capture = captures.load(name, gpu, root, how=command)
    except FileNotFoundError as err:
        return None, [f"MISSING: {err}"] if reference else []
    except ValueError as err:
        return None, [f"MALFORMED: {err}"] if reference else []
    reasons = captures.staleness(capture)
    if reasons and not reference:
        return None, []
    again = records.advice(command)
    return capture, [f"STALE: {reason}; {again} to take it again." for reason in reasons]


def load_all(names) -> tuple[dict[str, dict], list[str]]:
    """The reference GPU's captures of ``names`` that it has, ``{name: capture}`` in the order
    given, and their notes (:func:`load`: ``STALE``), a ``MALFORMED`` note for each it cannot
    read, then one ``MISSING`` note naming those it lacks and how to take them (the command
    of the first: ``names`` should share one): what a guide's opening paragraph reads.

    Never raises for a missing or malformed capture: the note says so instead.
    """
    found, notes, missing = {}, [], []
    for name in names:
        capture, said = load(name)
        if capture is None:
            malformed = [note for note in said if note.startswith("MALFORMED")]
            notes += malformed
            if not malformed:
                missing.append(name)
            continue
        notes += said
        found[name] = capture
    if missing:
        how = records.advice(captures.command(missing[0]))
        where = f"{', '.join(missing)} for {records.reference_gpu()}"
        notes.append(f"MISSING: no capture of {where} yet; {how} to take them.")
    return found, notes


def gpus(name: str) -> list[str]:
    """Folders of the GPUs whose capture ``name`` a page shows: the reference GPU's (whatever
    its state: a missing or stale one is said so), then each other GPU's that is current
    (:func:`load`)."""
    first = records.reference_gpu()
    return [gpu for gpu in captures.gpus_with(name) if gpu == first or load(name, gpu)[0] is not None]


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
        print(f"MISSING: no capture {name!r} on any GPU; {records.advice(captures.command(name))} to take it")
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


def per_gpu(shown: Mapping[str, dict], write: Callable[[dict], list[str]], nothing: str = NOTHING_YET) -> str:
    """``write(capture)``'s lines for each GPU's capture in ``shown`` (what :func:`show`
    returned), under the GPU's name, indented, when there are several; ``nothing`` (default
    :data:`NOTHING_YET`) when there is none.

    Raises:
        TypeError: ``shown`` is not the ``{gpu: capture}`` that :func:`show` returns.
    """
    if not isinstance(shown, Mapping):
        raise TypeError(f"expected the captures shown ({{gpu: capture}}), got {type(shown).__name__}")
    if not shown:
        return nothing
    blocks = []
    for capture in shown.values():
        lines = write(capture)
        if len(shown) > 1:
            lines = [f"{short_gpu_name(capture['provenance']['gpu'])}:", *(f"  {line}" for line in lines)]
        blocks.append("\n".join(lines))
    return "\n".join(blocks)
