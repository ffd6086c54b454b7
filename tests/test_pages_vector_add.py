"""Tutorial 01's topic module: the opening paragraph and the lines it prints, checked
against the records read independently through the Result API."""

import json

import pytest

from gpuperf.bench import catalog, records
from gpuperf.pages import load, prose, run_or_load
from gpuperf.pages import vector_add as page
from gpuperf.pages.plotting import ceiling_label, format_rate, short_gpu_name
from gpuperf.pages.prose import span
from gpuperf.pages.report import Result, gpus_with_current
from gpuperf.pages.tables import FORMAT_VAR
from tests._pages import copy_measurements, records_as_text  # noqa: F401 (autouse)
from tests._params import with_changed_source
from tests.test_bench_records import synthetic_record

VECTOR_ADD = catalog.VECTOR_ADD


def _gpus():
    return records.gpus_with_record(VECTOR_ADD.name)


def _percents(fractions) -> str:
    low, high = round(100 * min(fractions)), round(100 * max(fractions))
    return f"{low}%" if low == high else f"{low}–{high}%"


def test_there_are_vector_add_records_to_test_against():
    assert _gpus(), "no committed vector_add records"


def test_paragraph_names_every_gpu_with_its_numbers():
    # Every GPU with a current record (a stale one on another GPU is left out).
    text = page.in_one_paragraph().text()
    assert records.reference_gpu() in gpus_with_current(VECTOR_ADD)
    for gpu in gpus_with_current(VECTOR_ADD):
        result = load(VECTOR_ADD, gpu)
        assert f"On the {short_gpu_name(result.gpu)}," in text
        large = {x: f for x, f in result.fraction_of_ceiling().items() if x >= 2**24}
        # The ceiling is named from the record (the stream that set it), never typed.
        named = result.ceiling_name()
        key = result.rows()[2**28]["ceiling"]
        assert named == ceiling_label(key, result.record["ceilings"][key])
        assert f"streams at {_percents(large.values())} of the measured {named}" in " ".join(text.split())
        rate = format_rate(result.values()[max(large)], "GB/s")
        assert f"({rate} at 2^28)" in text
        assert f"{span(result.ratios().values())}× the speed of PyTorch x + y" in text
        rows = [r for r in result.record["rows"] if r["provider"] == "triton"]
        first = min(rows, key=lambda r: r["x"])
        us = first["ms"] * 1e3
        assert f"a call on {first['x']} elements still takes {us:.1f} µs" in text


def test_paragraph_is_html_on_the_site(monkeypatch):
    monkeypatch.setenv(FORMAT_VAR, "html")
    assert str(page.in_one_paragraph()).startswith('<div class="gpuperf-paragraph')


def test_paragraph_notes_a_missing_record(tmp_path, monkeypatch):
    copy_measurements(tmp_path, monkeypatch, drop=["vector_add.json"])
    paragraph = page.in_one_paragraph()
    assert paragraph.sentences == ()
    assert any(n.startswith("MISSING") and "vector_add" in n for n in paragraph.notes)


def test_paragraph_without_any_record_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUPERF_MEASUREMENTS", str(tmp_path))
    paragraph = page.in_one_paragraph()
    assert paragraph.sentences == ()
    assert any("run `python -m gpuperf.bench vector_add` on a GPU" in n for n in paragraph.notes)


def test_paragraph_notes_a_stale_record(tmp_path, monkeypatch):

    root = copy_measurements(tmp_path, monkeypatch)
    gpu = _gpus()[0]
    path = root / gpu / "vector_add.json"
    record = json.loads(path.read_text())
    record = with_changed_source(record)
    path.write_text(json.dumps(record))
    paragraph = page.in_one_paragraph()
    assert any("STALE" in n for n in paragraph.notes)
    # The stale record's numbers are still stated, qualified by the note.
    assert f"On the {short_gpu_name(record['provenance']['gpu'])}," in paragraph.text()


def test_launch_bound_is_the_smallest_launch_of_every_gpu():
    result = run_or_load(VECTOR_ADD)
    text = page.launch_bound(result)
    for r in result.gpus():
        rows = {(x["x"], x["provider"]): x for x in r.record["rows"]}
        smallest = min(x for x, _ in rows)
        for provider in ("triton", "torch"):
            us = rows[(smallest, provider)]["ms"] * 1e3
            assert f"{provider} {us:.1f} µs" in text
        if len(result.gpus()) > 1:
            assert f"{short_gpu_name(r.gpu)}:" in text


def test_hbm_bound_reads_fractions_and_ratios():
    result = run_or_load(VECTOR_ADD)
    text = page.hbm_bound(result)
    for r in result.gpus():
        large = [f for x, f in r.fraction_of_ceiling().items() if x >= 2**24]
        assert f"from 2^24 up: {_percents(large)} of the {r.ceiling_name()}" in text
        # Beside the roof, the copy measured in the same run, which a read-heavy kernel passes.
        copy = r.record["ceilings"].get("copy_gbps")
        if copy is not None and r.rows()[2**28]["ceiling"] != "copy_gbps":
            share = r.rows()[2**28]["value"] / copy["value"]
            assert (
                f"against the copy bandwidth of the same run ({format_rate(copy['value'], 'GB/s')}): " in text
            )
            assert f"{round(100 * share)}% at 2^28" in text
        mid = {x: v for x, v in r.ratios().items() if x >= 2**20}
        assert f"from 2^20 up: {span(mid.values())}× the speed of PyTorch" in text
    narrow = page.hbm_bound(result, hbm_from=2**28)
    assert "from 2^28 up:" in narrow


def test_read_mix_line_says_where_the_kernel_passes_the_copy_beyond_the_spread():
    record = synthetic_record(gpu="NVIDIA H100 80GB HBM3", n_x=len(VECTOR_ADD.x_values))
    copy = record["ceilings"]["copy_gbps"]
    row = next(r for r in record["rows"] if r["provider"] == "triton" and r["x"] == 2**28)
    result = Result(VECTOR_ADD, record, "committed")
    for value, p20, said in (
        (1.03 * copy["value"], 1.02 * copy["value"], "103% at 2^28, above it beyond the timings' spread"),
        (1.002 * copy["value"], 0.99 * copy["value"], "100% at 2^28, within the timings' spread of it"),
        (0.9 * copy["value"], 0.89 * copy["value"], "90% at 2^28"),
    ):
        row["value"], row["value_p20"] = value, p20
        line = " ".join(" ".join(page.read_mix_line(result)).split())
        assert line == f"against the copy bandwidth of the same run (3.00 TB/s): {said}"
    # Rows read against the copy itself, or a record without the copy beside the roof: no line.
    for r in record["rows"]:
        r["ceiling"] = "copy_gbps"
    assert page.read_mix_line(result) == []
    with pytest.raises(TypeError, match=r"gpuperf\.pages\.Result"):
        page.read_mix_line({"rows": []})


def test_percent_span():
    assert prose.percent_span([0.915, 1.02]) == "92–102%"
    assert prose.percent_span([0.5]) == "50%"
    with pytest.raises(ValueError, match="at least one value"):
        prose.percent_span([])


def test_functions_refuse_the_wrong_input():
    softmax = load(catalog.SOFTMAX)
    for function in (page.launch_bound, page.hbm_bound):
        with pytest.raises(TypeError, match=r"gpuperf\.pages\.Result"):
            function({"rows": []})
        with pytest.raises(ValueError, match="must be a result of 'vector_add'"):
            function(softmax)
    result = load(VECTOR_ADD)
    with pytest.raises(TypeError, match="hbm_from must be an int"):
        page.hbm_bound(result, hbm_from=2.5)
    with pytest.raises(ValueError, match="compare_from must be at least 1"):
        page.hbm_bound(result, compare_from=0)


def test_flops_per_byte_reads_the_datasheet_of_the_page_gpu():
    from gpuperf.pages import ceilings

    c = ceilings()
    text = page.flops_per_byte()
    ratio = c.datasheet["fp32_tflops"] * 1e12 / (c.datasheet["copy_gbps"] * 1e9)
    assert text.startswith(f"{c.name}, datasheet: {c.datasheet['fp32_tflops']:.0f} TFLOP/s fp32")
    assert f"{ratio:.0f} FLOPs in the time" in " ".join(text.split())
    with pytest.raises(TypeError, match="gpu must be a GPU folder name"):
        page.flops_per_byte(3)


def test_host_time_reads_the_vector_add_row_of_the_host_record():
    result = load(catalog.HOST_OVERHEAD)
    text = " ".join(page.host_time().split())
    assert text.startswith(f"{result.name}, host time per call:")
    for provider in ("triton", "triton_jit", "torch"):
        us = result.values(provider)["vector_add"]
        assert f"{page.HOST_NAMES[provider]} {us:.1f} µs" in text


def test_host_time_without_a_record_says_so(tmp_path, monkeypatch):
    copy_measurements(tmp_path, monkeypatch, drop=["host_overhead.json"])
    text = page.host_time()
    assert text.startswith("MISSING") and "host_overhead" in text
