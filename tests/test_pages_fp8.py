"""Tutorial 05's topic module: the opening paragraph read from the records, the outlier
experiment's error table, and the tables printed from the matmul_fp8 records."""

import shutil

import pytest
import torch

from gpuperf.bench import catalog, records
from gpuperf.pages import fp8, hardware, report
from gpuperf.pages.plotting import format_x, short_gpu_name
from gpuperf.pages.prose import percent, span, times
from tests._pages import records_as_text  # noqa: F401 (autouse)

H100 = "nvidia-h100-80gb-hbm3"


def _gpus_with_fp8_records():
    return [g for g in hardware.gpus() if report.load(catalog.MATMUL_FP8, g).record is not None]


def test_the_paragraph_quotes_each_gpus_records():
    gpus = _gpus_with_fp8_records()
    assert gpus, "the checkout has committed matmul_fp8 records"
    text = fp8.in_one_paragraph().text()
    for gpu in gpus:
        result = report.load(catalog.MATMUL_FP8, gpu)
        assert f"On the {short_gpu_name(result.gpu)}," in text
        fast = result.ratios(scaling="tensor", accumulation="fast")
        row = result.ratios(scaling="row", accumulation="fast")
        promoted = result.ratios(scaling="tensor", accumulation="float32")
        for ratios in (fast, row, promoted):
            assert span(ratios.values()) + "×" in text
        shape = fp8.HEADLINE_SHAPE
        # Each accumulation's share is of the ceiling of its own mode, named from the record's
        # entry: the call, mode and shape it was measured with, not the shape the share is
        # quoted at.
        for accumulation, key in (("fast", "fp8_fast_tflops"), ("float32", "fp8_tflops")):
            share = result.fraction_of_ceiling(scaling="tensor", accumulation=accumulation)[shape]
            label = hardware.ceiling_label(key, result.record["ceilings"][key], name=False)
            assert f"{percent(share)} of cuBLASLt's FP8 ceiling measured in the same run ({label})" in text
            assert f"{accumulation if accumulation == 'fast' else 'promoted'} accumulation" in label
        ours = result.values(scaling="tensor", accumulation="fast")[shape]
        cublas = report.load(catalog.MATMUL_PERSISTENT, gpu).values("cublas")[shape]
        bf16 = f"{times(ours / cublas, 1)} cuBLAS's bfloat16 TFLOP/s (tutorial 06's run)"
        assert f"at {format_x(shape)}, {bf16} and " in text


def test_the_paragraph_notes_a_gpu_without_records(tmp_path, monkeypatch):
    source = records.measurements_dir() / H100
    (tmp_path / H100).mkdir()
    for name in ("hardware.json", "matmul_fp8.json"):  # no matmul_persistent record
        shutil.copy(source / name, tmp_path / H100 / name)
    (tmp_path / "test-gpu").mkdir()
    shutil.copy(source / "hardware.json", tmp_path / "test-gpu" / "hardware.json")
    monkeypatch.setenv("GPUPERF_MEASUREMENTS", str(tmp_path))
    monkeypatch.setenv("GPUPERF_GPU", H100)
    para = fp8.in_one_paragraph()
    assert "On the H100 80GB HBM3," in para.text()
    assert "cuBLAS's bfloat16" not in para.text()  # that needs the missing record
    assert any("MISSING" in n and "matmul_persistent" in n and H100 in n for n in para.notes)
    # Another GPU without records is left out, without a note.
    assert not any("test-gpu" in n for n in para.notes)
    assert "MISSING" in str(para)


def test_the_paragraph_without_any_record_says_so(tmp_path, monkeypatch):
    (tmp_path / "test-gpu").mkdir()
    shutil.copy(records.measurements_dir() / H100 / "hardware.json", tmp_path / "test-gpu")
    monkeypatch.setenv("GPUPERF_MEASUREMENTS", str(tmp_path))
    monkeypatch.setenv("GPUPERF_GPU", "test-gpu")
    para = fp8.in_one_paragraph()
    assert para.text() == "No GPU has a matmul_fp8 record yet."
    assert len(para.notes) == 2


def test_gpu_sentence_refuses_a_missing_record(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUPERF_MEASUREMENTS", str(tmp_path))
    with pytest.raises(ValueError, match="no matmul_fp8 record"):
        fp8.gpu_sentence(report.load(catalog.MATMUL_FP8, "test-gpu"))


def test_outlier_case_scales_the_outlier_rows_and_refuses_bad_input():
    a, b = fp8.outlier_case(1e3, (64, 8, 16))
    plain, _ = fp8.outlier_case(1, (64, 8, 16))
    assert a.shape == (64, 16) and b.shape == (16, 8)
    ordinary = fp8.ordinary_rows(64)
    assert int((~ordinary).sum()) == fp8.OUTLIER_ROWS
    torch.testing.assert_close(a[ordinary], plain[ordinary])
    torch.testing.assert_close(a[~ordinary], 1e3 * plain[~ordinary])
    with pytest.raises(ValueError, match="factor must be positive"):
        fp8.outlier_case(0, (64, 8, 16))
    with pytest.raises(ValueError, match="M must be at least"):
        fp8.outlier_case(10, (4, 8, 16))


def test_relative_error_over_rows_and_bad_shapes():
    ref = torch.ones(4, 2)
    out = ref.clone()
    out[0] = 2.0
    assert fp8.relative_error(out, ref) == pytest.approx(2**0.5 / 8**0.5)
    assert fp8.relative_error(out, ref, torch.tensor([False, True, True, True])) == 0.0
    with pytest.raises(ValueError, match="shapes differ"):
        fp8.relative_error(out, torch.ones(2, 4))


def test_error_table_compares_each_method_and_refuses_bad_input():
    shape = (16, 4, 8)
    a, b = fp8.outlier_case(1e4, shape)
    exact = a.double() @ b.double()
    table = fp8.ErrorTable(shape)
    in_bf16 = a.bfloat16() @ b.bfloat16()
    table.add(1e4, "bfloat16", in_bf16, exact)
    table.add(1e4, "per tensor", exact, exact)
    table.add(1e4, "per row", in_bf16, exact)
    expected = fp8.relative_error(in_bf16, exact, fp8.ordinary_rows(16))
    assert table.error(1e4, "bfloat16") == table.error(1e4, "per row") == expected
    assert table.error(1e4, "per tensor") == 0.0
    assert table.rows[2]["vs_bf16"] == 0.0  # compared with the bfloat16 product
    text = str(table)
    assert "A 16x8 with 8 outlier rows, B 8x4" in text and f"{expected:.4f}" in text
    with pytest.raises(ValueError, match=r"expected \(16, 4\) results"):
        table.add(1e4, "per row", torch.ones(4, 4), exact)
    with pytest.raises(KeyError, match="no error recorded"):
        table.error(10, "per row")


def test_ratio_table_and_chosen_configs_read_every_gpu():
    bench = report.run_or_load(catalog.MATMUL_FP8)
    ratios = fp8.ratio_table(bench)
    configs = fp8.chosen_configs(bench)
    for result in bench.gpus():
        assert short_gpu_name(result.gpu) in ratios and short_gpu_name(result.gpu) in configs
        for r in result.ratios(scaling="row", accumulation="float32").values():
            assert f"{r:.2f}x" in ratios
    row = next(
        r
        for r in bench.record["rows"]
        if r["provider"] == "triton" and r["axes"] == {"scaling": "tensor", "accumulation": "float32"}
    )
    from gpuperf.kernels import PersistentConfig

    assert PersistentConfig(**row["config"]).label() in configs


def test_tables_refuse_another_benchmark_or_a_bad_scaling():
    with pytest.raises(ValueError, match="must be a result of 'matmul_fp8'"):
        fp8.ratio_table(report.run_or_load(catalog.MATMUL_PERSISTENT))
    with pytest.raises(TypeError, match=r"must be a gpuperf\.pages\.Result"):
        fp8.chosen_configs("matmul_fp8")
    with pytest.raises(ValueError, match="scaling must be one of"):
        fp8.chosen_configs(report.run_or_load(catalog.MATMUL_FP8), scaling="block")


def test_tables_show_only_the_shapes_a_gpu_has():
    # A quick live record holds two of the shapes: its tables have those columns and rows
    # only, and the committed record's tables keep all five.
    full = report.load(catalog.MATMUL_FP8)
    xs = ((4096, 4096, 4096), (8192, 8192, 8192))
    part = {**full.record, "rows": [r for r in full.record["rows"] if r["x"] in xs]}
    quick = report.Result(catalog.MATMUL_FP8, part, "live")
    header = fp8.ratio_table(quick).splitlines()[1].split()
    assert header == ["scaling", "accumulation", *map(format_x, xs)]
    rows = [line.split()[0] for line in fp8.chosen_configs(quick).splitlines()[3:]]
    assert rows == [format_x(x) for x in xs]
    assert all(format_x(x) in fp8.ratio_table(full) for x in catalog.MATMUL_FP8.x_values)
