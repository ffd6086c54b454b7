"""The docs' own tools: the browser check's text and network checks, and the table splitter."""

import importlib.util
from pathlib import Path

import pytest

from gpuperf.pages.tables import Cell, Section, to_html

ROOT = Path(__file__).resolve().parents[1]


def _module(path: str):
    spec = importlib.util.spec_from_file_location(Path(path).stem, ROOT / path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


check_site = _module("scripts/check_site.py")
html_tables = _module("docs/_ext/html_tables.py")


@pytest.mark.parametrize(
    "text, found",
    [
        (r"softmax \(y_{ij} = e^{x_{ij}}\) over rows", 2),
        (r"display \[s' = s e^{m - m'}\]", 2),
        ("$$x^2$$", 2),
        ("costs $5 and 2 $ per call; a\\b path", 0),
        ("rendered: y = e^x / sum", 0),
    ],
    ids=["inline", "display", "dollars", "no-math", "typeset"],
)
def test_raw_latex_is_found_by_its_delimiters(text, found):
    assert len(check_site.find_raw_latex(text)) == found


def test_object_reprs_are_found():
    text = "ok\n<Figure size 800x620 with 1 Axes>\n<foo.Bar object at 0x7f3a2c>\n<b>bold</b>"
    assert check_site.find_object_reprs(text) == [
        "<Figure size 800x620 with 1 Axes>",
        "<foo.Bar object at 0x7f3a2c>",
    ]


def _sent(rid, url):
    return {"method": "Network.requestWillBeSent", "params": {"requestId": rid, "request": {"url": url}}}


def test_requests_to_other_hosts_and_failures_are_told_apart():
    origin = "http://127.0.0.1:8000"
    events = [
        _sent("1", f"{origin}/index.html"),
        {"method": "Network.responseReceived", "params": {"requestId": "1", "response": {"status": 200}}},
        _sent("2", f"{origin}/favicon.ico"),
        {"method": "Network.responseReceived", "params": {"requestId": "2", "response": {"status": 404}}},
        _sent("3", "https://cdn.example.org/mathjax.js"),
        {
            "method": "Network.loadingFailed",
            "params": {"requestId": "3", "errorText": "net::ERR_NAME_NOT_RESOLVED"},
        },
        _sent("4", "http://127.0.0.1:9999/other-port.js"),
        _sent("5", "data:image/png;base64,AAAA"),
        _sent("6", "chrome://resources/x.js"),
    ]
    out = check_site.classify_requests(events, origin)
    assert len(out["requests"]) == 4  # data: and chrome:// are no requests to a host
    assert out["other_hosts"] == ["https://cdn.example.org/mathjax.js", "http://127.0.0.1:9999/other-port.js"]
    assert out["failed"] == [
        f"{origin}/favicon.ico: HTTP 404",
        "https://cdn.example.org/mathjax.js: net::ERR_NAME_NOT_RESOLVED",
    ]


def test_site_pages_leave_out_asset_folders(tmp_path):
    for page in ("index.html", "tutorials/01.html", "_static/x.html", "_sources/index.html"):
        (tmp_path / page).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / page).write_text("<html></html>")
    assert check_site.site_pages(tmp_path) == ["index.html", "tutorials/01.html"]


def test_printed_tables_are_split_from_the_text_around_them():
    table = to_html([Section("", ["x"], [[Cell("1", 1)]])])
    printed = f"before\n{table}\n\nbetween\n  {table}\n"
    assert html_tables.split_output(printed) == [
        ("text", "before"),
        ("html", table),
        ("text", "between"),
        ("html", table),
    ]
    assert html_tables.split_output("no table\nhere") == [("text", "no table\nhere")]


def test_printed_paragraphs_become_html_too(monkeypatch):
    from gpuperf.pages.prose import paragraph
    from gpuperf.pages.tables import FORMAT_VAR

    monkeypatch.setenv(FORMAT_VAR, "html")
    line = str(paragraph("It reaches 91% of the copy bandwidth."))
    assert html_tables.split_output(f"{line}\nafter") == [("html", line), ("text", "after")]


def test_the_glossary_quotes_an_sms_limits_from_the_capture():
    import sys

    sys.path.insert(0, str(ROOT / "docs"))
    import hardware_numbers

    limits = hardware_numbers.sm_limits()
    assert limits["h100-warps-per-sm"] == "64" and limits["h100-threads-per-sm"] == "2,048"
    assert limits["h100-shared-per-program"] == "227 KiB"
    glossary = (ROOT / "docs" / "glossary.rst").read_text()
    for name in limits:
        assert f"|{name}|" in glossary, name
    # The numbers are substituted, never typed beside the words they belong to.
    assert "64 warps" not in glossary and "1,024 threads" not in glossary


def test_the_glossary_quotes_the_stream_bandwidth_from_hardware_json():
    import sys

    sys.path.insert(0, str(ROOT / "docs"))
    import hardware_numbers

    from gpuperf.bench.hardware import STREAMS
    from gpuperf.pages.hardware import ceilings
    from gpuperf.pages.plotting import format_rate

    c = ceilings(hardware_numbers.GPU)
    numbers = hardware_numbers.substitutions()
    # The memory roof, and the stream that set it with its mix of reads and writes.
    assert numbers["h100-stream"] == format_rate(c.memory_gbps, "GB/s")
    stream = c.entries[c.memory_key].get("stream", "copy")
    # Named as the glossary lists the streams ("the chunked read"), with its mix.
    from gpuperf.pages.report import stream_mix

    prose = hardware_numbers._STREAM_PROSE[stream]
    assert numbers["h100-stream-name"] == f"{prose} ({stream_mix(stream)})"
    assert set(hardware_numbers._STREAM_PROSE) == set(STREAMS)
    glossary = (ROOT / "docs" / "glossary.rst").read_text()
    assert "|h100-stream|" in glossary and "|h100-stream-name|" in glossary
    # The yardstick of a memory-bound kernel is the stream bandwidth, not the copy's.
    entry = glossary.split("   memory-bound\n", 1)[1].split("\n\n", 1)[0]
    assert ":term:`stream bandwidth`" in entry and "copy bandwidth" not in entry
