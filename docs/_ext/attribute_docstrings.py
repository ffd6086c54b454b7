"""Attribute docstrings read as prose, not as ``type: description``.

Napoleon reads the first line of an attribute's, a module constant's or a property's
docstring as ``type: description`` wherever it holds a colon, so a ``#:`` comment such as
"Bytes of each tensor streamed: 1 GiB ..." rendered as "Type: Bytes of each tensor
streamed". gpuperf gives types as annotations, never in that form: a leading ``": "``
(an empty type) makes napoleon keep the whole line as the description.
"""

from __future__ import annotations

ATTRIBUTE_KINDS = frozenset({"attribute", "data", "property"})


def keep_whole_first_line(app, what, name, obj, options, lines: list[str]) -> None:
    """``autodoc-process-docstring`` handler, run before napoleon's: prefix the first
    non-empty line of an attribute's docstring with an empty type (``": "``)."""
    if what not in ATTRIBUTE_KINDS:
        return
    for i, line in enumerate(lines):
        if line.strip():
            lines[i] = ": " + line
            return


def setup(app):
    # Napoleon connects at the default priority (500); a lower number runs first.
    app.connect("autodoc-process-docstring", keep_whole_first_line, priority=400)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
