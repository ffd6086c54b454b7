"""The landing page's table of what the tutorials found (docs/headlines_page.py, from
gpuperf.pages.landing): every cell reads one record, compares against what its label says,
prints the ceiling it divides by, names its x, dates itself from that record, and says why a
share above 100% of a ceiling is possible."""

import importlib.util
import json
import re
from pathlib import Path

import pytest

from gpuperf.bench import catalog, records
from gpuperf.pages import hardware, landing
from gpuperf.pages.plotting import format_rate, format_x
from gpuperf.pages.report import Result, best_share, headline, load, x_named
from tests._pages import copy_measurements, records_as_text  # noqa: F401 (autouse)
from tests._params import with_changed_source
from tests.test_bench_records import MATMUL_LIKE, synthetic_record

ROOT = Path(__file__).resolve().parents[1]
H100 = "NVIDIA H100 80GB HBM3"


def _headlines_page():
    spec = importlib.util.spec_from_file_location("headlines_page", ROOT / "docs" / "headlines_page.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _shown() -> list[tuple[catalog.Benchmark, str, Result]]:
    """Every (benchmark, GPU folder, result) whose record the landing table shows."""
    found = []
    for bench in catalog.ALL:
        for gpu in records.gpus_with_record(bench.name):
            result = load(bench, gpu)
            if result.record is not None:
                found.append((bench, gpu, result))
    return found


def _over_100(ms_scale: float, spread: float, key: str = "stream_gbps") -> Result:
    """A vector-add record on the H100, its rows read against the ceiling ``key`` (the stream
    bandwidth, as the catalog declares, or the copy, as records measured before were), whose
    largest size runs at ``ms_scale`` times the time of that ceiling's rate, its 20th and
    80th percentiles ``spread`` apart (a fraction)."""
    record = synthetic_record(gpu=H100)
    ceiling = record["ceilings"][key]
    x = max(r["x"] for r in record["rows"])
    for row in record["rows"]:
        row["ceiling"] = key
        if row["provider"] == "triton" and row["x"] == x:
            row["value"] = ceiling["value"] / ms_scale
            row["value_p20"], row["value_p80"] = row["value"] * (1 - spread), row["value"] * (1 + spread)
            row["ms"] = row["bytes"] / row["value"] / 1e6
    return Result(catalog.VECTOR_ADD, record, "committed")


# 1. A row compares against what its label says -------------------------------------------


def test_the_row_against_max_autotune_divides_by_the_compile_max_provider():
    bench = catalog.LLAMA_PREFILL_AUTOTUNE
    assert "max-autotune" in bench.title
    assert bench.baseline == "compile_max"
    result = load(bench)
    if result.record is None:
        pytest.skip(f"no committed record of {bench.name}")
    rows = {r["provider"]: r for r in result.record["rows"]}
    ratio = rows["compile_max"]["ms"] / rows["triton"]["ms"]
    assert headline(result).startswith(f"{ratio:.2f}× the speed of {rows['compile_max']['label']};")


@pytest.mark.parametrize("bench", catalog.ALL, ids=lambda b: b.name)
def test_every_headline_names_the_baseline_it_divides_by(bench):
    result = load(bench)
    line = headline(result) if result.record is not None else None
    if not line or bench.metric == "GiB":
        pytest.skip(f"{bench.name}: no headline with a speed ratio")
    label = next(r["label"] for r in result.record["rows"] if r["provider"] == bench.baseline)
    assert f"× the speed of {label}" in line


# 5. A share prints its divisor ---------------------------------------------------------


def test_a_share_prints_the_ceiling_of_its_own_record():
    lines = []
    for value in (777.0, 790.0):
        record = synthetic_record(MATMUL_LIKE)
        for entry in record["ceilings"].values():
            entry["value"] = value
        lines.append(headline(Result(MATMUL_LIKE, record, "committed")))
    assert "of the 777 TFLOP/s of cuBLAS" in lines[0]
    assert "of the 790 TFLOP/s of cuBLAS" in lines[1]


@pytest.mark.parametrize("shown", _shown(), ids=lambda s: f"{s[0].name}-{s[1]}")
def test_every_committed_share_prints_its_divisor(shown):
    _, _, result = shown
    share = best_share(result)
    if share is None:
        pytest.skip("no ceiling")
    line = headline(result)
    assert f"% of the {format_rate(share.ceiling['value'], share.ceiling['unit'])} of " in line


# 4. A ceiling without a shape says so ----------------------------------------------------


def test_a_ceiling_without_a_shape_is_not_given_one():
    record = synthetic_record(MATMUL_LIKE)
    # 8192³ in 1.53 ms: an entry whose value and time would let a shape be guessed.
    record["ceilings"]["fp16_tflops"] = {"value": 718.5, "unit": "TFLOP/s", "ms": 1.5303}
    line = headline(Result(MATMUL_LIKE, record, "committed"))
    assert "cuBLAS fp16 matmul (torch.matmul), shape not recorded" in line
    ceiling_part = line.split("% of ")[1].split(", reached at")[0]
    assert "³" not in ceiling_part


# 7. The x is named -----------------------------------------------------------------------


def test_x_named_formats_the_records_x_label():
    assert x_named({"x_name": "batch", "x_label": "batch (prompts of 2048 tokens)"}, 1) == "batch = 1"
    assert x_named({"x_name": "n_elements", "x_label": "elements per tensor"}, 2**28) == (
        "elements per tensor = 2^28"
    )
    assert x_named({"x_name": "shape"}, (4096, 4096, 4096)) == "shape = 4096³"
    with pytest.raises(TypeError, match="record must be a record"):
        x_named([], 1)
    with pytest.raises(ValueError, match="record must name its x"):
        x_named({}, 1)


def test_the_prefill_headline_names_its_batch():
    result = load(catalog.LLAMA_PREFILL)
    if result.record is None:
        pytest.skip("no committed record of llama_prefill")
    share = best_share(result)
    assert f"reached at batch = {format_x(share.x)}" in headline(result)


# 6. Each cell is dated from its own record -----------------------------------------------


@pytest.mark.parametrize("shown", _shown(), ids=lambda s: f"{s[0].name}-{s[1]}")
def test_each_cell_is_dated_from_its_own_record(shown):
    bench, gpu, result = shown
    provenance = result.record["provenance"]
    text = landing.cell(bench, gpu)
    commit = records.short_commit(provenance["gpuperf_commit"])
    assert f"Measured {provenance['date'][:10]} at gpuperf ``{commit}``" in text
    assert len(re.findall(r"Measured \d{4}-\d\d-\d\d", text)) == 1


def test_the_landing_table_dates_rows_not_tutorials(tmp_path):
    page = _headlines_page()
    text = page.write(tmp_path, ROOT / "tutorials").read_text()
    assert "last measured" not in text
    for script in sorted((ROOT / "tutorials").glob("[0-9][0-9]_*.py")):
        for bench in page.tutorial_benchmarks(script):
            for gpu in records.gpus_with_record(bench.name):
                assert landing.cell(bench, gpu) in text


def test_the_landing_table_lists_each_benchmark_once(tmp_path):
    """A benchmark two tutorials show (tutorial 06 shows tutorial 05's FP8 ladder) has one row."""
    page = _headlines_page()
    text = page.write(tmp_path, ROOT / "tutorials").read_text()
    shown = [
        b for s in sorted((ROOT / "tutorials").glob("[0-9][0-9]_*.py")) for b in page.tutorial_benchmarks(s)
    ]
    for bench in dict.fromkeys(shown):
        assert text.count(f"   * - {bench.title}\n") == 1


# 3. A share above 100% says why ------------------------------------------------------------


def test_a_share_above_the_stream_beyond_its_spread_names_the_stream_that_set_it():
    result = _over_100(0.96, 0.001)
    stream = result.record["ceilings"]["stream_gbps"]["stream"]
    note = landing.over_roof(result)
    assert note == (
        "over 100%: the stream bandwidth is the fastest of the streams timed in the same "
        f"run (``{stream}``, 3 reads per write), a rate the memory was shown to reach, not a limit of it"
    )


def test_a_share_above_the_copy_beyond_its_spread_gives_the_stream_share():
    entry = hardware.ceilings(records.gpu_slug(H100)).entries.get("stream_gbps")
    if entry is None:
        pytest.skip(f"no stream bandwidth measured on the {H100}")
    result = _over_100(0.96, 0.001, "copy_gbps")
    note = landing.over_roof(result)
    value = best_share(result).row["value"]
    assert note.startswith("over 100%: the copy bandwidth is PyTorch's ``Tensor.copy_``, 1 read per write")
    assert f"against the {format_rate(entry['value'], 'GB/s')} stream bandwidth" in note
    assert note.endswith(f"{100 * value / entry['value']:.0f}%") or "above those streams too" in note


def test_a_gpu_without_a_stream_bandwidth_says_it_is_not_measured():
    result = _over_100(0.96, 0.001, "copy_gbps")
    result.record["provenance"]["gpu"] = "Test GPU 80GB"
    assert landing.over_roof(result).endswith(
        "no stream bandwidth, the fastest of a few mixes of reads and writes, is measured on the "
        "Test GPU 80GB"
    )


def test_a_share_above_100_within_the_spread_says_so_and_one_below_says_nothing():
    assert "within the timings' spread" in landing.over_roof(_over_100(0.96, 0.05))
    assert landing.over_roof(_over_100(1.05, 0.001)) is None
    assert landing.over_roof(Result(catalog.VECTOR_ADD, None, "missing")) is None


def test_every_committed_share_printed_above_100_is_explained_on_its_row():
    over = [
        (bench, gpu)
        for bench, gpu, result in _shown()
        if (share := best_share(result)) is not None and round(100 * share.fraction) > 100
    ]
    if not over:
        pytest.skip("no committed share prints above 100%")
    unexplained = [
        f"{bench.name} on {gpu}"
        for bench, gpu in over
        if not re.search(r"\((over|above) 100%", landing.cell(bench, gpu))
    ]
    assert not unexplained


# 8. A stale record says so ----------------------------------------------------------------


def test_a_stale_record_of_another_gpu_is_named_stale_not_absent(tmp_path, monkeypatch):
    every = {gpu for b in catalog.ALL for gpu in records.gpus_with_record(b.name)}
    others = every - {records.reference_gpu()}
    if not others:
        pytest.skip("only the reference GPU has records")
    gpu = sorted(others)[0]
    root = copy_measurements(tmp_path, monkeypatch)
    path = next(p for p in sorted((root / gpu).glob("*.json")) if p.name != "hardware.json")
    record = json.loads(path.read_text())
    path.write_text(json.dumps(with_changed_source(record)))
    text = landing.cell(catalog.by_name(path.stem), gpu)
    provenance = record["provenance"]
    commit = records.short_commit(provenance["gpuperf_commit"])
    assert text == (
        f"not shown: measured {provenance['date'][:10]} at gpuperf ``{commit}``, "
        "on an older version of its code (stale)"
    )


def test_a_stale_record_of_the_reference_gpu_is_shown_marked_stale(tmp_path, monkeypatch):
    root = copy_measurements(tmp_path, monkeypatch)
    path = root / records.reference_gpu() / "vector_add.json"
    path.write_text(json.dumps(with_changed_source(json.loads(path.read_text()))))
    text = landing.cell(catalog.VECTOR_ADD, records.reference_gpu())
    assert "× the speed of" in text
    assert text.endswith("; stale: its code changed after it was measured.")


def test_a_missing_record_reads_not_measured(tmp_path, monkeypatch):
    copy_measurements(tmp_path, monkeypatch, drop=("vector_add.json",))
    assert landing.cell(catalog.VECTOR_ADD, records.reference_gpu()) == "not measured"
    with pytest.raises(TypeError, match=r"benchmark must be a gpuperf\.bench\.catalog\.Benchmark"):
        landing.cell("vector_add", records.reference_gpu())
    with pytest.raises(TypeError, match="gpu must be a GPU folder name"):
        landing.cell(catalog.VECTOR_ADD, None)
