"""Result tables as data, written out as fixed-width text or as HTML.

A table is a list of :class:`Section` (one per axis combination), each a header
and rows of :class:`Cell`. :func:`render` writes them in the format the
environment asks for: ``GPUPERF_TABLES=text`` (the default: a terminal, a
notebook's print) or ``GPUPERF_TABLES=html`` (the docs build, whose page turns
the HTML into sortable tables; see ``docs/_ext/html_tables.py``).
"""

from __future__ import annotations

import html
import os
from collections.abc import Sequence
from dataclasses import dataclass, field

#: ``text`` (default) or ``html``: how :func:`render` writes tables.
FORMAT_VAR = "GPUPERF_TABLES"
FORMATS = ("text", "html")
#: The class every HTML table carries; the docs' script makes these sortable.
HTML_CLASS = "gpuperf-table"


@dataclass(frozen=True)
class Cell:
    """One table cell: the text shown and the key it sorts by (None sorts last)."""

    text: str
    sort: float | str | None = None


@dataclass
class Section:
    """One table: an optional heading (``'dtype=float16'``), a header row, rows of cells."""

    heading: str
    header: list[str]
    rows: list[list[Cell]] = field(default_factory=list)


def number(value: float | None, fmt: str = ".0f", suffix: str = "") -> Cell:
    """A number's cell: ``format(value, fmt) + suffix`` (``number(1.5, ".2f", "x")`` shows
    ``'1.50x'``), sorted by the value; ``'-'`` where there is no value (None)."""
    return Cell("-") if value is None else Cell(format(value, fmt) + suffix, value)


def row_cell(row: dict | None, key: str = "value", fmt: str = ".0f") -> Cell:
    """The cell of one record row's ``key`` (:func:`number`); ``'-'`` without a row, and the
    row's status (``'oom'``, ``'error'``...) where it did not run."""
    if row is None:
        return Cell("-")
    return number(row[key], fmt) if row["status"] == "ok" else Cell(row["status"])


def output_format() -> str:
    """The format asked for by ``GPUPERF_TABLES``; ``ValueError`` for any other value."""
    fmt = os.environ.get(FORMAT_VAR, "text")
    if fmt not in FORMATS:
        raise ValueError(f"{FORMAT_VAR} must be one of {list(FORMATS)}, got {fmt!r}")
    return fmt


def _footer_lines(footer) -> list[str]:
    """The lines of a footer: one string, or a sequence of them (None and empty ones left out)."""
    if footer is None or isinstance(footer, str):
        footer = [footer]
    return [line for line in footer if line]


def to_text(sections: list[Section], notes=(), footer: str | Sequence[str] | None = None) -> str:
    """Fixed-width text: the notes, then each section under its heading, columns right-aligned,
    then the ``footer``, a line or several (where the numbers were measured, say)."""
    out = list(notes)
    for section in sections:
        if section.heading:
            out += ["", section.heading] if len(out) > len(notes) else [section.heading]
        cells = [[c.text for c in row] for row in section.rows]
        widths = [max(len(h), *(len(row[i]) for row in cells)) for i, h in enumerate(section.header)]
        lines = [section.header, ["-" * w for w in widths], *cells]
        out += ["  ".join(t.rjust(w) for t, w in zip(texts, widths, strict=True)) for texts in lines]
    out += _footer_lines(footer)
    return "\n".join(out)


def to_html(sections: list[Section], notes=(), footer: str | Sequence[str] | None = None) -> str:
    """HTML on one line: the notes as paragraphs, each section a ``<table>`` with the
    heading as its caption and each cell's sort key in ``data-sort``, then each line of
    the ``footer`` as a paragraph."""
    parts = [f'<div class="{HTML_CLASS}s">']
    parts += [f'<p class="{HTML_CLASS}-note">{html.escape(note)}</p>' for note in notes]
    for section in sections:
        parts.append(f'<table class="{HTML_CLASS}">')
        if section.heading:
            parts.append(f"<caption>{html.escape(section.heading)}</caption>")
        parts.append(
            "<thead><tr>"
            + "".join(f'<th scope="col">{html.escape(h)}</th>' for h in section.header)
            + "</tr></thead><tbody>"
        )
        for row in section.rows:
            tds = []
            for cell in row:
                key = "" if cell.sort is None else f' data-sort="{html.escape(str(cell.sort))}"'
                numeric = ' class="num"' if isinstance(cell.sort, (int, float)) else ""
                tds.append(f"<td{key}{numeric}>{html.escape(cell.text)}</td>")
            parts.append("<tr>" + "".join(tds) + "</tr>")
        parts.append("</tbody></table>")
    parts += [f'<p class="{HTML_CLASS}-footer">{html.escape(line)}</p>' for line in _footer_lines(footer)]
    parts.append("</div>")
    return "".join(parts)


def render(sections: list[Section], notes=(), footer: str | Sequence[str] | None = None) -> str:
    """:func:`to_text` or :func:`to_html`, as ``GPUPERF_TABLES`` asks."""
    write = to_html if output_format() == "html" else to_text
    return write(sections, notes, footer)
