"""Tutorial 06's topic module: the opening paragraph read from the records, the tuned tile
and the sweeps' tables, and the ladder's ratios per rung."""

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
    shape = persistent.HEADLINE_SHAPE
    for gpu in gpus:
        result = report.load(catalog.MATMUL_PERSISTENT, gpu)
        assert f"On the {short_gpu_name(result.gpu)}," in text
        tuned, t03 = result.ratios(), result.ratios("triton_t03")
        assert f"runs at {span(tuned.values())}× cuBLAS's speed over {len(tuned)} shapes" in text
        assert f"tutorial 03's kernel reaches {span(t03.values())}×" in text
        pointer, tma = result.ratios("triton_pointer")[shape], result.ratios("triton_tma")[shape]
        ws = result.ratios("triton_tma_ws")[shape]
        assert (
            f"at {format_x(shape)}: {times(t03[shape])} tutorial 03, {times(pointer)} persistent "
            f"with computed pointers, {times(tma)} with TMA, {times(ws)} with TMA and warp"
        ) in text


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
    with pytest.raises(TypeError, match="expected the Result of matmul_persistent"):
        persistent.ladder_table(report.run_or_load(catalog.MATMUL_FP8))
    with pytest.raises(TypeError, match="expected the Result of matmul_persistent"):
        persistent.ladder_table(None)
