"""Tutorial 06's topic module: the opening paragraph read from the records, the tuned tile
and the sweeps' tables, and the ladder's ratios per rung."""

import copy
import json
import shutil

import pytest

from gpuperf.bench import catalog, records
from gpuperf.kernels._configs import TUNED_DIR
from gpuperf.pages import hardware, persistent, report
from gpuperf.pages.plotting import format_x, short_gpu_name
from gpuperf.pages.prose import span, times
from tests._pages import records_as_text  # noqa: F401 (autouse)

H100 = "nvidia-h100-80gb-hbm3"


def test_the_paragraph_quotes_each_gpus_records():
    gpus = [g for g in hardware.gpus() if report.load(catalog.MATMUL_PERSISTENT, g).record is not None]
    assert len(gpus) >= 1
    text = persistent.in_one_paragraph().text()
    for gpu in gpus:
        result = report.load(catalog.MATMUL_PERSISTENT, gpu)
        assert f"On the {short_gpu_name(result.gpu)}," in text
        tuned, t03 = result.ratios(), result.ratios("triton_t03")
        assert f"runs at {span(tuned.values())}× cuBLAS's speed" in text
        assert f"over {len(tuned)} shapes, where tutorial 03's kernel reaches {span(t03.values())}×" in text
        repeat = persistent.repeat_spread(result)
        low, high = sorted(repeat.tflops)
        apart = f"up to {times(repeat.ratio)} apart ({format_x(repeat.x)}: {low:.0f} and {high:.0f} TFLOP/s)"
        assert apart in text
        for provider, over, words in persistent.STEPS:
            ratios = result.ratios(provider, over=over)
            assert persistent.step_clause(ratios, repeat.ratio, words) in text


def test_the_h100_paragraph_says_the_gain_is_tmas():
    # The committed H100 record: the pointer rung trails tutorial 03's kernel at every shape,
    # TMA gains at every shape, and warp specialization stays within the repeat spread.
    result = report.load(catalog.MATMUL_PERSISTENT, H100)
    spread = persistent.repeat_spread(result).ratio
    pointer = persistent.verdicts(result.ratios("triton_pointer", over="triton_t03"), spread)
    tma = persistent.verdicts(result.ratios("triton_tma", over="triton_pointer"), spread)
    assert "faster" not in pointer.values() and set(tma.values()) == {"faster"}
    text = persistent.gpu_sentence(result)
    assert "the gain is TMA's" in text
    assert "warp specialization over TMA alone" in text and "1.02×" not in text.split("Step by step")[0]


def test_repeats_pair_the_tuned_rows_with_the_rung_of_the_same_config():
    result = report.load(catalog.MATMUL_PERSISTENT, H100)
    found = persistent.repeats(result)
    assert len(found) == len(result.rows("triton"))
    for repeat in found:
        tuned, rung = result.rows("triton")[repeat.x], result.rows(repeat.rung)[repeat.x]
        assert tuned["config"] == rung["config"] and repeat.rung != "triton"
        assert repeat.ratio == max(tuned["ms"], rung["ms"]) / min(tuned["ms"], rung["ms"]) >= 1
        assert sorted(repeat.tflops) == sorted((tuned["value"], rung["value"]))
    assert persistent.repeat_spread(result) == max(found, key=lambda r: r.ratio)
    with pytest.raises(ValueError, match="no matmul_persistent record"):
        persistent.repeats(report.Result(catalog.MATMUL_PERSISTENT, None, "missing", ["MISSING: x"]))


def test_repeat_spread_is_none_without_a_pair():
    result = report.load(catalog.MATMUL_PERSISTENT, H100)
    record = copy.deepcopy(result.record)
    for row in record["rows"]:
        if row["provider"] == "triton":
            row["config"] = dict(row["config"], num_stages=99)
    alone = report.Result(catalog.MATMUL_PERSISTENT, record, "committed")
    assert persistent.repeats(alone) == [] and persistent.repeat_spread(alone) is None
    # Without a spread, any ratio but 1 is a difference.
    assert "no measurable difference" not in persistent.gpu_sentence(alone).split("Step by step")[1]


def test_verdicts_and_step_clause_read_ratios_against_the_spread():
    ratios = {(1, 1, 1): 1.03, (2, 2, 2): 0.97, (3, 3, 3): 1.10, (4, 4, 4): 0.80}
    assert persistent.verdicts(ratios, 1.04) == {
        (1, 1, 1): "no measurable difference",
        (2, 2, 2): "no measurable difference",
        (3, 3, 3): "faster",
        (4, 4, 4): "slower",
    }
    assert persistent.verdicts(ratios, None)[(1, 1, 1)] == "faster"
    assert persistent.verdicts({(1, 1, 1): 1.0}, None) == {(1, 1, 1): "no measurable difference"}
    assert persistent.step_clause(ratios, 1.04, "a step") == (
        "a step: 0.80–1.10×, no measurable difference at 2 of 4 shapes, faster at 1 of 4 shapes, "
        "slower at 1 of 4 shapes"
    )
    with pytest.raises(ValueError, match="spread must be a ratio of at least 1"):
        persistent.verdicts(ratios, 0.9)
    with pytest.raises(ValueError, match="no ratios for the step"):
        persistent.step_clause({}, 1.04, "a step")


def test_the_paragraph_notes_a_gpu_without_records(tmp_path, monkeypatch):
    source = records.measurements_dir() / H100
    for slug, names in (
        (H100, ("hardware.json", "matmul_persistent.json")),
        ("test-gpu", ("hardware.json",)),
    ):
        (tmp_path / slug).mkdir()
        for name in names:
            shutil.copy(source / name, tmp_path / slug / name)
    monkeypatch.setenv("GPUPERF_MEASUREMENTS", str(tmp_path))
    monkeypatch.setenv("GPUPERF_GPU", H100)
    para = persistent.in_one_paragraph()
    assert "On the H100 80GB HBM3," in para.text() and "H200" not in para.text()
    assert para.notes == ()  # a GPU without records is left out, without a note
    (tmp_path / H100 / "matmul_persistent.json").unlink()
    para = persistent.in_one_paragraph()
    assert len(para.notes) == 1 and "MISSING" in para.notes[0] and H100 in para.notes[0]


def test_the_paragraph_without_any_record_says_so(tmp_path, monkeypatch):
    (tmp_path / "test-gpu").mkdir()
    shutil.copy(records.measurements_dir() / H100 / "hardware.json", tmp_path / "test-gpu")
    monkeypatch.setenv("GPUPERF_MEASUREMENTS", str(tmp_path))
    monkeypatch.setenv("GPUPERF_GPU", "test-gpu")
    para = persistent.in_one_paragraph()
    assert para.text() == "No GPU has a matmul_persistent record yet."
    assert para.notes and "MISSING" in para.notes[0]
    with pytest.raises(ValueError, match="no matmul_persistent record"):
        persistent.gpu_sentence(report.load(catalog.MATMUL_PERSISTENT, "test-gpu"))


def test_tuned_tile_is_the_sweeps_most_chosen_tile(tmp_path):
    sweep = json.loads((TUNED_DIR / H100 / "matmul_persistent.json").read_text())
    chosen = [
        (e["config"]["block_m"], e["config"]["block_n"]) for e in sweep["best"] if e["variant"] == "best"
    ]
    tile = persistent.tuned_tile(H100)
    assert chosen.count(tile) == max(chosen.count(t) for t in chosen)
    # A sweep that chose 64 x 64 at most shapes.
    for entry in sweep["best"]:
        if entry["variant"] == "best" and entry["shape"] != sweep["best"][0]["shape"]:
            entry["config"] |= {"block_m": 64, "block_n": 64}
    (tmp_path / "test-gpu").mkdir()
    (tmp_path / "test-gpu" / "matmul_persistent.json").write_text(json.dumps(sweep))
    assert persistent.tuned_tile("test-gpu", root=tmp_path) == (64, 64)
    sweep["best"] = []
    (tmp_path / "test-gpu" / "matmul_persistent.json").write_text(json.dumps(sweep))
    with pytest.raises(ValueError, match="chose no config"):
        persistent.tuned_tile("test-gpu", root=tmp_path)


def test_read_sweep_refuses_unknown_kernels_and_missing_sweeps(tmp_path):
    with pytest.raises(ValueError, match="kernel must be one of"):
        persistent.read_sweep("attention", H100)
    advice = "run `python -m gpuperf.bench matmul_fp8` on that GPU"
    with pytest.raises(FileNotFoundError, match=advice):
        persistent.read_sweep("matmul_fp8", "test-gpu", root=tmp_path)
    with pytest.raises(FileNotFoundError, match="no matmul_persistent sweep"):
        persistent.tuned_tile("test-gpu", root=tmp_path)


def test_sweep_tables_show_both_sweeps_or_say_what_is_missing(tmp_path):
    text = persistent.sweep_tables(H100)
    assert text.startswith("matmul_persistent, H100 80GB HBM3\n")
    assert "\nmatmul_fp8, H100 80GB HBM3\n" in text
    assert "\nmatmul_persistent: NVIDIA H100 80GB HBM3" in text and "\nmatmul_fp8: NVIDIA H100" in text
    sweep = json.loads((TUNED_DIR / H100 / "matmul_persistent.json").read_text())
    for e in sweep["best"]:
        assert f"{e['tflops']:.0f}" in text
    (tmp_path / "test-gpu").mkdir()
    shutil.copy(TUNED_DIR / H100 / "matmul_fp8.json", tmp_path / "test-gpu")
    partial = persistent.sweep_tables("test-gpu", root=tmp_path)
    assert partial.startswith("MISSING: no matmul_persistent sweep for test-gpu")
    assert "matmul_fp8, H100 80GB HBM3" in partial and "matmul_persistent," not in partial


def test_sweep_section_refuses_an_empty_sweep():
    with pytest.raises(ValueError, match="has no trials"):
        persistent.sweep_section("matmul_fp8", {"trials": [], "best": []})


def test_ladder_table_has_every_rung_of_every_gpu():
    ladder = report.run_or_load(catalog.MATMUL_PERSISTENT)
    text = persistent.ladder_table(ladder)
    for result in ladder.gpus():
        assert short_gpu_name(result.gpu) in text
        for key in persistent.RUNGS:
            for ratio in result.ratios(key).values():
                assert f"{ratio:.2f}x" in text
    with pytest.raises(ValueError, match="must be a result of 'matmul_persistent'"):
        persistent.ladder_table(report.run_or_load(catalog.MATMUL_FP8))
    with pytest.raises(TypeError, match=r"must be a gpuperf\.pages\.Result"):
        persistent.ladder_table(None)
