"""Check the built site's tutorials and guides as a reader meets them (run after ``nox -s docs``;
the docs session runs it).

For every page ``tutorials/NN_*.html`` and ``guides/NN_*.html`` under the built site:

* its visible code cells (sphinx-gallery's, not the kernels a page literalincludes from
  ``src``) hold no plumbing: none of :data:`FORBIDDEN` (reading records or JSON by hand,
  GPU folder names, C++ name clean-up, MISSING/STALE handling);
* they total at most :data:`MAX_LINES` non-blank lines (tutorials 120, guides 100), and no
  line is longer than :data:`MAX_WIDTH` characters (furo's content column);
* the page opens with its answer, an "In one paragraph" printed from the records
  (:class:`gpuperf.pages.prose.Paragraph`) before its second section, and ends with a
  section titled "What to take away";
* it links at least :data:`MIN_TERMS` terms of the glossary, which defines at least
  :data:`MIN_GLOSSARY` terms.

Prints one line per page (visible code lines, widest line, glossary terms linked) and
exits with status 1, naming each problem, when a page fails.

Usage: ``python scripts/check_pages.py [docs/_build/html [PAGE ...]]``, PAGE a page's name
(``03_matmul``) to check that page alone.
"""

from __future__ import annotations

import sys
from pathlib import Path

from bs4 import BeautifulSoup

#: Strings no visible code cell may hold: the plumbing that belongs in ``gpuperf.pages``.
FORBIDDEN = (
    "json.",
    "read_text(",
    "measurements_dir",
    "gpu_slug",
    "_NOT_NAMES",
    "re.compile",
    "re.sub",
    "MISSING",
    "STALE",
)
#: Most visible code lines (non-blank) per page, by gallery.
MAX_LINES = {"tutorials": 120, "guides": 100}
#: Widest code line: the 88 columns furo's content column shows without scrolling.
MAX_WIDTH = 88
#: Fewest glossary terms a page links, and fewest terms the glossary defines.
MIN_TERMS = 3
MIN_GLOSSARY = 25
PARAGRAPH_CLASS = "gpuperf-paragraph"
PARAGRAPH_TITLE = "In one paragraph"
TAKEAWAY_TITLE = "What to take away"


def code_cells(soup) -> list[str]:
    """The text of each code cell sphinx-gallery shows (``highlight-Python``; a kernel
    literalincluded from ``src`` is highlighted as ``highlight-default``)."""
    return [pre.get_text() for pre in soup.select("div.highlight-Python pre")]


def section_titles(soup) -> list[str]:
    """The titles of the page's sections (``h2``), in order, without the pilcrow."""
    return [h.get_text().replace("¶", "").replace("#", "").strip() for h in soup.select("article h2")]


def check_page(path: Path, gallery: str) -> tuple[dict, list[str]]:
    """``(stats, problems)`` of one built page."""
    soup = BeautifulSoup(path.read_text(), "html.parser")
    lines = [line for cell in code_cells(soup) for line in cell.splitlines() if line.strip()]
    problems = []
    for bad in FORBIDDEN:
        hits = [line.strip() for line in lines if bad in line]
        if hits:
            problems.append(f"a visible code line holds {bad!r}: {hits[0][:70]!r}")
    if len(lines) > MAX_LINES[gallery]:
        problems.append(f"{len(lines)} visible code lines, more than {MAX_LINES[gallery]}")
    wide = [line for line in lines if len(line) > MAX_WIDTH]
    if wide:
        problems.append(
            f"{len(wide)} code lines wider than {MAX_WIDTH} columns, e.g. {wide[0].strip()[:60]!r}"
        )

    titles = section_titles(soup)
    paragraph = soup.select_one(f"div.{PARAGRAPH_CLASS}")
    if paragraph is None or PARAGRAPH_TITLE not in paragraph.get_text():
        problems.append(f"no {PARAGRAPH_TITLE!r} printed from the records")
    else:
        # Near the top: before the page's second section begins.
        second = soup.select("article h2")[1:2]
        if second and second[0].sourceline is not None and paragraph.sourceline > second[0].sourceline:
            problems.append(f"{PARAGRAPH_TITLE!r} comes after the section {titles[1]!r}")
    if not titles or titles[-1] != TAKEAWAY_TITLE:
        problems.append(f"the last section is {titles[-1] if titles else None!r}, not {TAKEAWAY_TITLE!r}")

    terms = {a["href"].split("#", 1)[1] for a in soup.select('a[href*="glossary.html#term-"]')}
    if len(terms) < MIN_TERMS:
        problems.append(f"links {len(terms)} glossary terms, fewer than {MIN_TERMS}")
    stats = {"lines": len(lines), "widest": max(map(len, lines), default=0), "terms": len(terms)}
    return stats, problems


def main(argv: list[str]) -> int:
    site = Path(argv[0]) if argv else Path("docs/_build/html")
    only = set(argv[1:])
    if not (site / "index.html").is_file():
        print(f"no built site in {site}: run `nox -s docs` first")
        return 1
    failed = False
    glossary = site / "glossary.html"
    if not glossary.is_file():
        print("no glossary.html in the built site")
        failed = True
    else:
        n_terms = len(BeautifulSoup(glossary.read_text(), "html.parser").select("dl.glossary dt"))
        print(f"glossary: {n_terms} terms")
        if n_terms < MIN_GLOSSARY:
            print(f"  the glossary defines {n_terms} terms, fewer than {MIN_GLOSSARY}")
            failed = True
    pages = [(p, g) for g in MAX_LINES for p in sorted((site / g).glob("[0-9][0-9]_*.html"))]
    pages = [(p, g) for p, g in pages if not only or p.stem in only]
    if not pages:
        print(f"no tutorial or guide pages under {site}")
        return 1
    for path, gallery in pages:
        stats, problems = check_page(path, gallery)
        print(
            f"{gallery}/{path.name}: {stats['lines']} visible code lines (at most {MAX_LINES[gallery]}), "
            f"widest {stats['widest']}, {stats['terms']} glossary terms"
        )
        for problem in problems:
            print(f"  {problem}")
        failed |= bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
