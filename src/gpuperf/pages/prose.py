"""Sentences built from measurements: the paragraph that opens each page, and the small
formatting rules the pages share (ratio spans, percentages).

A page's opening paragraph ("In one paragraph") states its headline measurements. Its
sentences are written by the page's topic module (:mod:`gpuperf.pages.matmul` and the
others) from the records, never typed by hand, and printed as a :class:`Paragraph`:
plain wrapped text in a terminal, an admonition on the built site (``GPUPERF_TABLES=html``,
see :mod:`gpuperf.pages.tables`).
"""

from __future__ import annotations

import html
import textwrap
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from gpuperf.pages.tables import output_format

#: The CSS class of a paragraph on the site; ``docs/_ext/html_tables.py`` puts any printed
#: line that starts with ``<div class="gpuperf-`` on the page as HTML.
HTML_CLASS = "gpuperf-paragraph"
#: Characters per line of the text form (the width of a code cell on the site).
WIDTH = 88


@dataclass(frozen=True)
class Paragraph:
    """A titled paragraph of sentences, and the notes (stale or missing records) that
    qualify it.

    ``str(paragraph)`` is text wrapped at :data:`WIDTH` columns, or one line of HTML
    (a furo admonition) when ``GPUPERF_TABLES=html``.
    """

    title: str
    sentences: tuple[str, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)

    def text(self) -> str:
        """The sentences joined into one paragraph."""
        return " ".join(s.strip() for s in self.sentences if s.strip())

    def __str__(self) -> str:
        if output_format() == "html":
            notes = "".join(f'<p class="{HTML_CLASS}-note">{html.escape(n)}</p>' for n in self.notes)
            return (
                f'<div class="{HTML_CLASS} admonition tip"><p class="admonition-title">'
                f"{html.escape(self.title)}</p><p>{html.escape(self.text())}</p>{notes}</div>"
            )
        body = textwrap.fill(self.text(), WIDTH)
        return "\n".join([f"{self.title}:", body, *self.notes])


def fill(lines: Iterable[str], indent: str = "  ", width: int = WIDTH) -> str:
    """``lines`` joined, each wrapped at ``width`` columns (default :data:`WIDTH`, a code cell's
    output on the site) with its continuation lines indented by ``indent``."""
    return "\n".join(textwrap.fill(line, width, subsequent_indent=indent) for line in lines)


def paragraph(*sentences: str, notes: Iterable[str] = (), title: str = "In one paragraph") -> Paragraph:
    """A :class:`Paragraph` of ``sentences`` (empty ones dropped) with ``notes``, each said
    once (records loaded together share a reason when they are pending or stale alike).

    Raises:
        TypeError: a sentence or a note is not a string.
    """
    for s in (*sentences, *notes):
        if not isinstance(s, str):
            raise TypeError(f"sentences and notes must be strings, got {type(s).__name__}")
    return Paragraph(title, tuple(s for s in sentences if s.strip()), tuple(dict.fromkeys(notes)))


def span(values: Iterable[float], fmt: Callable[[float], str] = lambda v: f"{v:.2f}") -> str:
    """``'0.91–1.02'``: the smallest and largest of ``values`` formatted by ``fmt``, or one
    number when they format the same.

    Raises:
        ValueError: ``values`` is empty.
    """
    values = list(values)
    if not values:
        raise ValueError("span needs at least one value")
    low, high = fmt(min(values)), fmt(max(values))
    return low if low == high else f"{low}–{high}"


def times_span(ratios: Iterable[float]) -> str:
    """Ratios as the pages write them: ``'0.91–1.02×'`` (:func:`span`, then ×).

    Raises:
        ValueError: ``ratios`` is empty.
    """
    return span(ratios) + "×"


def and_list(items: Iterable[str]) -> str:
    """``'a, b and c'``: ``items`` joined as a sentence lists them (one item alone).

    Raises:
        ValueError: ``items`` is empty.
    """
    items = list(items)
    if not items:
        raise ValueError("and_list needs at least one item")
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def times(value: float, digits: int = 2) -> str:
    """A ratio as the pages write it: ``'1.36×'``."""
    return f"{value:.{digits}f}×"


def percent(fraction: float) -> str:
    """A fraction as a whole percentage: ``0.914`` -> ``'91%'``."""
    return f"{100 * fraction:.0f}%"


def percent_span(fractions) -> str:
    """``'92–102%'``: the smallest and largest of ``fractions`` as whole percentages.

    Raises:
        ValueError: ``fractions`` is empty.
    """
    return span(fractions, lambda f: percent(f).removesuffix("%")) + "%"
