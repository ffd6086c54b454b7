"""Tutorial 02's topic module: the opening paragraph, the lines and the sweep table it
prints, checked against the records read independently through the Result API."""

import re

import pytest

from gpuperf.bench import catalog, records
from gpuperf.pages import load, run_or_load
from gpuperf.pages import softmax as page
from gpuperf.pages.plotting import format_x, short_gpu_name
from gpuperf.pages.prose import percent, span
from gpuperf.pages.report import Result, gpus_with_current
from tests._pages import copy_measurements, current_measurements, records_as_text  # noqa: F401 (autouse)
from tests.test_bench_records import synthetic_record

SOFTMAX, LONG = catalog.SOFTMAX, catalog.SOFTMAX_LONG


def _gpus():
    return records.gpus_with_record(SOFTMAX.name)


def _percents(fractions) -> str:
    low, high = round(100 * min(fractions)), round(100 * max(fractions))
    return f"{low}%" if low == high else f"{low}–{high}%"


def test_there_are_softmax_records_to_test_against():
    assert _gpus(), "no committed softmax records"
    assert records.gpus_with_record(LONG.name), "no committed softmax_long_rows records"


def test_paragraph_names_every_gpu_with_its_numbers(tmp_path, monkeypatch):
    current_measurements(tmp_path, monkeypatch)  # every GPU's current code: each shown is named
    text = " ".join(page.in_one_paragraph().text().split())
    # A record read against another ceiling than the benchmark declares is not shown.
    shown = gpus_with_current(SOFTMAX)
    assert records.reference_gpu() in shown
    for gpu in shown:
        short, long = load(SOFTMAX, gpu), load(LONG, gpu)
        assert f"On the {short_gpu_name(short.gpu)}," in text
        fractions = short.fraction_of_ceiling()
        best = max(fractions, key=fractions.get)
        # The ceiling is named from the record, with the stream that set it.
        assert f"reaches {round(100 * fractions[best])}% of the measured {short.ceiling_name()} " in text
        assert f"at {best} columns" in text
        assert f"runs at {span(short.ratios().values())}× the speed of torch.softmax" in text
        # naive time / Triton time, from the rows' own milliseconds
        ms = {(r["x"], r["provider"]): r["ms"] for r in short.record["rows"]}
        naive = [ms[(x, "naive")] / ms[(x, "triton")] for x, p in ms if p == "triton"]
        assert f"{span(naive)}× that of the naive five-kernel code" in text
        online = long.fraction_of_ceiling().values()
        assert f"the online kernel reaches {_percents(online)} of it" in text
        assert f"at {span(long.ratios().values())}× the speed of torch.softmax." in text


def test_speedup_over_naive_is_the_ratio_of_times():
    result = load(SOFTMAX)
    speedups = page.speedup_over_naive(result)
    ms = {(r["x"], r["provider"]): r["ms"] for r in result.record["rows"]}
    assert speedups
    for x, value in speedups.items():
        assert value == pytest.approx(ms[(x, "naive")] / ms[(x, "triton")])


def test_paragraph_notes_a_missing_record(tmp_path, monkeypatch):
    copy_measurements(tmp_path, monkeypatch, drop=["softmax_long_rows.json"])
    paragraph = page.in_one_paragraph()
    missing = [n for n in paragraph.notes if n.startswith("MISSING") and "softmax_long" in n]
    assert len(missing) == 1  # the reference GPU's; another GPU shows what it has
    # The short rows are still stated; the long rows are not.
    assert "the fused kernel reaches" in paragraph.text()
    assert "online kernel" not in paragraph.text()


def test_paragraph_without_any_record_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUPERF_MEASUREMENTS", str(tmp_path))
    paragraph = page.in_one_paragraph()
    assert paragraph.sentences == ()
    assert any("run `python -m gpuperf.bench softmax` on a GPU" in n for n in paragraph.notes)


@pytest.mark.parametrize("bench", [SOFTMAX, LONG])
def test_bandwidth_and_speedups_reads_every_gpu(bench):
    result = run_or_load(bench)
    text = page.bandwidth_and_speedups(result)
    assert max(len(line) for line in text.splitlines()) <= page.WIDTH
    flat = " ".join(text.split())
    for r in result.gpus():
        if len(result.gpus()) > 1:
            assert f"{short_gpu_name(r.gpu)}:" in text
        for x, f in r.fraction_of_ceiling().items():
            assert f"{format_x(x)}: {percent(f)}" in flat
        assert f"Triton / torch.softmax: {span(r.ratios().values())}×" in text
        assert f"naive eager / torch.softmax: {span(r.ratios('naive').values())}×" in text
        compiled = span(r.ratios("compile").values())
        assert f"torch.compile(naive) / torch.softmax: {compiled}×" in text
        over_compile = {x: r.rows("compile")[x]["ms"] / row["ms"] for x, row in r.rows().items()}
        assert f"Triton / torch.compile(naive): {span(over_compile.values())}×" in text


def test_online_against_three_passes_reads_each_row_length_against_two_thirds():
    result = run_or_load(LONG)
    text = page.online_against_three_passes(result)
    assert max(len(line) for line in text.splitlines()) <= page.WIDTH
    flat = " ".join(text.split())
    assert flat.count(f"three passes from HBM would allow {percent(2 / 3)}") == len(result.gpus())
    for r in result.gpus():
        fractions = r.fraction_of_ceiling()
        for x, f in fractions.items():
            assert f"{format_x(x)}: {percent(f)}" in flat
        assert f"% of the {r.ceiling_name()} by columns" in flat
        # Above two thirds of the ceiling beyond the spread of both timings, or within it.
        for x, row in r.rows().items():
            ceiling = r.record["ceilings"][row["ceiling"]]
            if row["value_p20"] > 2 / 3 * ceiling["value_p80"]:
                assert re.search(rf"above it at [^;]*\b{re.escape(format_x(x))}\b[^;]* columns", flat)
            elif row["value_p80"] >= 2 / 3 * ceiling["value_p20"]:
                assert re.search(rf"spread of it at [^;]*\b{re.escape(format_x(x))}\b[^;]* columns", flat)
    with pytest.raises(ValueError, match="must be a result of 'softmax_long_rows'"):
        page.online_against_three_passes(run_or_load(SOFTMAX))


def test_online_against_three_passes_sides_with_the_spread_of_both_timings():
    record = synthetic_record(LONG, n_x=1)
    ceiling = record["ceilings"]["stream_gbps"]
    row = next(r for r in record["rows"] if r["provider"] == "triton")
    result = Result(LONG, record, "committed")
    cap = 2 / 3 * ceiling["value"]
    for low, high, said in (
        (1.01 * cap, 1.05 * cap, "above it at 2^16 columns"),
        (0.99 * cap, 1.01 * cap, "within the timings' spread of it at 2^16 columns"),
        (0.90 * cap, 0.95 * cap, "below it at 2^16 columns"),
    ):
        row["value_p20"], row["value"], row["value_p80"] = low, (low + high) / 2, high
        flat = " ".join(page.online_against_three_passes(result).split())
        assert flat.endswith(f"would allow 67%: {said}")
        assert "% of the stream bandwidth (addcmul) by columns: 2^16:" in flat


def test_config_sweep_reads_the_committed_log():
    gpu = "nvidia-h100-80gb-hbm3"
    path = records.measurements_dir() / gpu / page.SWEEP_LOG
    if not path.is_file():
        pytest.skip("no committed sweep log")
    text = page.config_sweep(gpu)
    lines = [line for line in path.read_text().splitlines() if line.startswith("softmax n_cols=")]
    assert lines
    for line in lines:
        cols = line.split("n_cols=")[1].split(":")[0]
        best = line.split("best ")[1].split(",")[0]  # 'M2/w2: 1101'
        worst_gbps = float(line.rsplit(": ", 1)[1])
        loss = round(100 * (1 - worst_gbps / float(best.split(": ")[1])))
        row = next(r for r in text.splitlines() if r.split()[:1] == [cols])
        assert best.split(":")[0] in row and row.endswith(f"{loss}%")


def test_config_sweep_notes_a_missing_log(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUPERF_MEASUREMENTS", str(tmp_path))
    assert "MISSING" in page.config_sweep("nvidia-h200")
    assert "MISSING" in page.config_sweep()


def test_functions_refuse_the_wrong_input():
    vector_add = load(catalog.VECTOR_ADD)
    for function in (page.bandwidth_and_speedups, page.speedup_over_naive):
        with pytest.raises(TypeError, match=r"gpuperf\.pages\.Result"):
            function({"rows": []})
        with pytest.raises(ValueError, match="must be a result of one of"):
            function(vector_add)
    with pytest.raises(TypeError, match="gpu must be a GPU folder name"):
        page.config_sweep(132)
