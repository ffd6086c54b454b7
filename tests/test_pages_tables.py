"""Tables as data, written as text or HTML."""

from gpuperf.pages.tables import Cell, Section, to_html, to_text


def _section():
    return Section(
        "dtype=float16", ["x", "value"], [[Cell("2^20", 2**20), Cell("1.5x", 1.5)], [Cell("-")] * 2]
    )


def test_text_aligns_columns_under_the_heading():
    assert to_text([_section()], ["STALE: changed"]).splitlines() == [
        "STALE: changed",
        "dtype=float16",
        "   x  value",
        "----  -----",
        "2^20   1.5x",
        "   -      -",
    ]


def test_html_escapes_text_and_keeps_sort_keys():
    section = _section()
    section.header[0] = "<x>"
    html = to_html([section], ["a < b"])
    assert '<th scope="col">&lt;x&gt;</th>' in html
    assert '<p class="gpuperf-table-note">a &lt; b</p>' in html
    assert '<td data-sort="1048576" class="num">2^20</td>' in html
    assert "<td>-</td>" in html  # no key: sorts last


def test_a_footer_of_several_lines_is_a_line_or_a_paragraph_each():
    assert to_text([_section()], footer=["measured here", "", "and said so"]).splitlines()[-2:] == [
        "measured here",
        "and said so",
    ]
    html = to_html([_section()], footer=["a < b", "c"])
    assert html.count('<p class="gpuperf-table-footer">') == 2
    assert '<p class="gpuperf-table-footer">a &lt; b</p>' in html
    assert to_text([_section()], footer="one line").splitlines()[-1] == "one line"


def test_a_number_cell_is_formatted_and_sorted_by_its_value_and_a_row_cell_says_its_status():
    from gpuperf.pages.tables import number, row_cell

    assert number(1.5, ".2f", "x") == Cell("1.50x", 1.5)
    assert number(None) == Cell("-")
    assert row_cell(None) == Cell("-")
    assert row_cell({"status": "oom", "value": None}) == Cell("oom")
    assert row_cell({"status": "ok", "ms": 0.1234}, "ms", ".2f") == Cell("0.12", 0.1234)
