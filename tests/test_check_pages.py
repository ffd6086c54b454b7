"""scripts/check_pages.py: what it finds wrong on a built page (its HTML parsed with
BeautifulSoup, in the tests dependency group; a machine without it skips these)."""

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("bs4")

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("check_pages", ROOT / "scripts/check_pages.py")
check_pages = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_pages)


CODE = '<div class="highlight-Python notranslate"><div class="highlight"><pre>{}</pre></div></div>'
KERNEL = '<div class="highlight-default notranslate"><div class="highlight"><pre>{}</pre></div></div>'
ANSWER = (
    '<div class="gpuperf-paragraph admonition tip"><p class="admonition-title">In one paragraph</p></div>'
)
TERM = '<a class="reference internal" href="../glossary.html#term-{0}"><span>{0}</span></a>'


def _page(tmp_path, *parts, sections=("Intro", "Kernel", "What to take away")):
    body = "".join(f"<h2>{s}</h2>" if i else f"<h2>{s}</h2>{''.join(parts)}" for i, s in enumerate(sections))
    path = tmp_path / "01_page.html"
    path.write_text(f"<html><body><article><h1>Title</h1>{body}</article></body></html>")
    return path


def test_a_page_that_teaches_passes(tmp_path):
    terms = "".join(TERM.format(t) for t in ("SM", "warp", "HBM"))
    code = CODE.format("from gpuperf.pages import show\n\nresult = show(MATMUL)\n")
    kernel = KERNEL.format("x = json.loads(s)\n" + "y = 1\n" * 200)  # literalincluded: not counted
    stats, problems = check_pages.check_page(_page(tmp_path, ANSWER, code, kernel, terms), "tutorials")
    assert problems == []
    assert stats == {"lines": 2, "widest": len("from gpuperf.pages import show"), "terms": 3}


def test_plumbing_length_and_missing_parts_are_each_named(tmp_path):
    code = CODE.format(
        'hw = json.loads(path.read_text())\nprint(f"MISSING: {gpu_slug(name)}")\n'
        + "x = 1\n" * 100
        + "y = "
        + "1 + " * 30
        + "1\n"
    )
    page = _page(tmp_path, code, TERM.format("SM"), sections=("Intro", "Reading", "Benchmark"))
    stats, problems = check_pages.check_page(page, "guides")
    text = "\n".join(problems)
    for bad in ("'json.'", "'read_text('", "'gpu_slug'", "'MISSING'"):
        assert f"holds {bad}" in text
    assert "103 visible code lines, more than 100" in text
    assert "1 code lines wider than 88 columns" in text
    assert "no 'In one paragraph'" in text
    assert "the last section is 'Benchmark', not 'What to take away'" in text
    assert "links 1 glossary terms, fewer than 3" in text
    assert stats["lines"] == 103


def test_the_answer_must_come_before_the_second_section(tmp_path):
    terms = "".join(TERM.format(t) for t in ("SM", "warp", "HBM"))
    path = tmp_path / "02_page.html"
    path.write_text(
        "<html><body><article>\n<h1>T</h1>\n<h2>A</h2>\n<h2>B</h2>\n"
        f"{ANSWER}\n{terms}\n<h2>What to take away</h2>\n</article></body></html>"
    )
    _, problems = check_pages.check_page(path, "tutorials")
    assert problems == ["'In one paragraph' comes after the section 'B'"]
