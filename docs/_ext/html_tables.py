"""Sphinx extension: result tables and paragraphs printed by a page become HTML on it.

In the docs build ``GPUPERF_TABLES=html`` is set, so :meth:`gpuperf.pages.Result.table`
returns its tables as one line of HTML (:func:`gpuperf.pages.tables.to_html`), and a
:class:`gpuperf.pages.prose.Paragraph` prints as one line of HTML too; sphinx-gallery
captures those lines with the rest of the cell's printed output in a literal block.
This extension splits such blocks: the text before and after stays literal, each line
that starts with ``<div class="gpuperf-`` becomes raw HTML, in the order printed.
"""

from __future__ import annotations

#: How a line of HTML printed by gpuperf starts: a table (:func:`gpuperf.pages.tables.to_html`)
#: or a paragraph (:class:`gpuperf.pages.prose.Paragraph`).
MARKER = '<div class="gpuperf-'
#: The class sphinx-gallery gives the literal block of a cell's output.
OUTPUT_CLASS = "sphx-glr-script-out"


def split_output(text: str) -> list[tuple[str, str]]:
    """``[(kind, text)]`` in order, kind ``"text"`` or ``"html"``: each line of HTML printed
    by gpuperf (a table, a paragraph), and the runs of other lines between them (blank
    runs dropped)."""
    parts: list[tuple[str, str]] = []
    run: list[str] = []
    for line in text.splitlines():
        if line.strip().startswith(MARKER):
            if "".join(run).strip():
                parts.append(("text", "\n".join(run).strip("\n")))
            run = []
            parts.append(("html", line.strip()))
        else:
            run.append(line)
    if "".join(run).strip():
        parts.append(("text", "\n".join(run).strip("\n")))
    return parts


def _replace_tables(app, doctree) -> None:
    from docutils import nodes  # here, so that split_output can be tested without docutils

    for block in list(doctree.findall(nodes.literal_block)):
        if OUTPUT_CLASS not in block["classes"] or MARKER not in block.astext():
            continue
        replacement = []
        for kind, text in split_output(block.astext()):
            if kind == "html":
                replacement.append(nodes.raw("", text, format="html"))
            else:
                literal = block.deepcopy()
                literal.children = [nodes.Text(text)]
                literal.rawsource = text
                replacement.append(literal)
        block.replace_self(replacement)
        for node in replacement:  # replace_self gives the first node the block's classes
            if isinstance(node, nodes.raw):
                node["classes"] = []


def setup(app):
    app.connect("doctree-read", _replace_tables)
    app.add_css_file("tables.css")
    app.add_js_file("sortable_tables.js", defer="defer")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
