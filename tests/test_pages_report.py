"""Plots, tables and the live/committed choice, on a machine with or without a GPU."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
import torch

from gpuperf.bench import catalog, records, sources
from gpuperf.pages.plotting import PROVIDER_COLORS, format_size, format_x, provider_color
from gpuperf.pages.report import (
    Result,
    above_roof,
    above_roof_sentences,
    current_others,
    load,
    roof_caveat,
    run_or_load,
    stream_mix,
)
from tests._params import with_changed_source
from tests.test_bench_records import HOST_LIKE, MATMUL_LIKE, synthetic_record


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_plot_carries_provenance_and_ceiling():
    record = synthetic_record()
    fig = Result(catalog.VECTOR_ADD, record, "committed").plot()
    texts = " ".join(t.get_text() for t in fig.texts)
    assert "Test GPU 80GB" in texts
    (ax,) = fig.axes
    labels = ax.get_legend_handles_labels()[1]
    # The ceiling its rows are read against, named from the record's entry (the stream that set it).
    assert any("stream bandwidth (addcmul), measured: 3.10 TB/s" in label for label in labels)
    assert "committed measurement" in fig.get_suptitle()
    assert ax.get_xscale() == "log"
    assert [a.get_ylabel() for a in ax.child_axes] == ["% of stream bandwidth"]
    legend_labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend_labels[:2] == [p.label for p in catalog.VECTOR_ADD.providers]


def test_plot_shades_l2_sizes_from_row_bytes():
    # fake_provenance says L2 holds 1000 bytes; 4096 float32 elements move 48 KiB: none cached.
    record = synthetic_record()
    labels = Result(catalog.VECTOR_ADD, record, "committed").plot().axes[0].get_legend_handles_labels()[1]
    assert not any("L2" in label for label in labels)
    record["provenance"]["l2_bytes"] = 100_000  # the first size (49,152 bytes) fits now
    labels = Result(catalog.VECTOR_ADD, record, "committed").plot().axes[0].get_legend_handles_labels()[1]
    assert any("traffic ≤ L2" in label for label in labels)


def test_plot_shows_notes_in_the_figure():
    fig = Result(catalog.VECTOR_ADD, synthetic_record(), "committed", ["STALE: something changed"]).plot()
    assert any("STALE" in t.get_text() for t in fig.texts)


def test_live_plot_says_so():
    fig = Result(catalog.VECTOR_ADD, synthetic_record(), "live").plot()
    assert "measured live in this build" in fig.get_suptitle()


def test_missing_record_plots_a_notice():
    fig = Result(catalog.SOFTMAX, None, "missing", ["MISSING: no record"]).plot()
    assert "MISSING: no record" in fig.axes[0].texts[0].get_text()


def test_table_has_ratio_and_fraction_of_ceiling():
    record = synthetic_record()
    result = Result(catalog.VECTOR_ADD, record, "committed")
    table = result.table()
    assert "triton/torch" in table and "triton % of stream" in table
    assert table.splitlines()[0].split()[0] == "n_elements"  # no heading without axes
    # triton takes 1 ms and torch 2 ms in the synthetic record: 2x faster.
    assert list(result.ratios().values()) == pytest.approx([2.0, 2.0, 2.0])
    x = catalog.VECTOR_ADD.x_values[0]
    assert result.fraction_of_ceiling()[x] == pytest.approx(catalog.VECTOR_ADD.bytes(x) / 1e-3 / 1e9 / 3100)
    assert result.ceiling_name() == "stream bandwidth (addcmul)"
    assert result.values("torch")[x] == pytest.approx(catalog.VECTOR_ADD.bytes(x) / 2e-3 / 1e9)


def _matmul_ms(c, i, p):
    # float16 (c=0): triton 1 ms, rowmajor 2 ms, cuBLAS 1.5 ms at every shape;
    # bfloat16 (c=1): everything twice as slow except cuBLAS.
    return [1.0, 2.0, 1.5][p] * (2.0 if c == 1 and p < 2 else 1.0)


def test_shapes_with_a_dtype_axis_table_has_one_section_per_dtype():
    result = Result(MATMUL_LIKE, synthetic_record(MATMUL_LIKE, ms=_matmul_ms), "committed")
    table = result.table()
    lines = table.splitlines()
    assert [line for line in lines if line.startswith("dtype=")] == ["dtype=float16", "dtype=bfloat16"]
    assert sum(line.split()[0] == "shape" for line in lines if line) == 2
    assert "triton/cublas" in table
    assert "triton % of fp16" in table and "triton % of bf16" in table
    # Shapes are written compactly, in declared order.
    first = [line.split()[0] for line in lines[3:6]]
    assert first == ["4096³", "8192×4096×14336", "512³"]


def test_shapes_with_a_dtype_axis_values_and_ratios_per_axis():
    result = Result(MATMUL_LIKE, synthetic_record(MATMUL_LIKE, ms=_matmul_ms), "committed")
    shape = (4096, 4096, 4096)
    assert result.ratios(dtype="float16")[shape] == pytest.approx(1.5)
    assert result.ratios(dtype="bfloat16")[shape] == pytest.approx(0.75)
    assert result.ratios("triton_rowmajor", dtype="float16")[shape] == pytest.approx(0.75)
    tflops = 2 * 4096**3 / 1e-3 / 1e12
    assert result.values(dtype="float16")[shape] == pytest.approx(tflops)
    assert result.values("cublas", dtype="bfloat16")[shape] == pytest.approx(tflops / 1.5)
    # Each dtype against its own ceiling: 700 TFLOP/s for fp16, 800 for bf16.
    assert result.fraction_of_ceiling(dtype="float16")[shape] == pytest.approx(tflops / 700)
    assert result.fraction_of_ceiling(dtype="bfloat16")[shape] == pytest.approx(tflops / 2 / 800)
    assert list(result.values(dtype="float16")) == list(MATMUL_LIKE.x_values)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda r: r.values(), "several values of axis 'dtype'"),
        (lambda r: r.ratios(), "pass dtype=... to pick one"),
        (lambda r: r.fraction_of_ceiling(), "axis 'dtype'"),
        (lambda r: r.values(dtype="float32"), "axis 'dtype' must be one of"),
        (lambda r: r.values(dtype="float16", causal=True), "no axis 'causal'"),
    ],
    ids=["values", "ratios", "fraction", "unknown-value", "unknown-axis"],
)
def test_an_axis_combination_must_be_named(call, message):
    result = Result(MATMUL_LIKE, synthetic_record(MATMUL_LIKE), "committed")
    with pytest.raises(ValueError, match=message):
        call(result)


def test_shapes_with_a_dtype_axis_plot_one_panel_per_combination():
    fig = Result(MATMUL_LIKE, synthetic_record(MATMUL_LIKE), "committed").plot()
    assert len(fig.axes) == 2  # the % axes are children of their panels
    assert [ax.get_title() for ax in fig.axes] == ["dtype=float16", "dtype=bfloat16"]
    for ax, label in zip(fig.axes, ["cuBLAS fp16 matmul", "cuBLAS bf16 matmul"], strict=True):
        assert [t.get_text() for t in ax.get_xticklabels()] == ["4096³", "8192×4096×14336", "512³"]
        assert ax.get_xscale() == "linear"  # categories, not log2 sizes
        assert [a.get_ylabel() for a in ax.child_axes] == [f"% of {label}"]
        # The ceiling's line is named from its entry: this synthetic one has no shape, and says so.
        named = f"{label} (torch.matmul), shape not recorded, measured:"
        assert any(lbl.startswith(named) for lbl in ax.get_legend_handles_labels()[1])
        # One line per provider, drawn in the site's colours.
        colors = [line.get_color() for line in ax.get_lines() if line.get_label() in ("Triton", "cuBLAS")]
        assert colors == [PROVIDER_COLORS["triton"], PROVIDER_COLORS["cublas"]]
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend.count("Triton") == 1 and "Triton, row-major order" in legend


def test_a_quick_live_result_beside_its_committed_sweep_is_told_apart_and_never_an_empty_column():
    """A quick live build measured float16 only: the float16 figure has the live column and
    the committed one, titled apart; the bfloat16 figure has the committed column alone."""
    live_record = synthetic_record(MATMUL_LIKE, combos=[{"dtype": "float16"}])
    committed = Result(MATMUL_LIKE, synthetic_record(MATMUL_LIKE), "committed")
    live = Result(MATMUL_LIKE, live_record, "live", others=[committed])
    assert live.name == "Test GPU 80GB (live)" and committed.name == "Test GPU 80GB"
    both = live.plot(dtype="float16")
    assert [ax.get_title().split("\n")[0] for ax in both.axes] == ["Test GPU 80GB (live)", "Test GPU 80GB"]
    alone = live.plot(dtype="bfloat16")
    assert len(alone.axes) == 1
    assert "Test GPU 80GB (live)" in live.table() and "Test GPU 80GB " in live.table()
    plt.close("all")


def test_host_time_per_call_has_no_ceiling_and_a_clear_ratio():
    # triton 30 us per call, torch 10 us: triton is three times slower.
    record = synthetic_record(HOST_LIKE, ms=lambda c, i, p: [0.030, 0.010][p])
    assert record["ceilings"] == {} and record["rows"][0]["value"] == pytest.approx(30.0)
    result = Result(HOST_LIKE, record, "committed")
    assert result.ratios() == pytest.approx({"add": 1 / 3, "mul": 1 / 3})
    assert result.fraction_of_ceiling() == {}
    table = result.table()
    assert "torch/triton time" in table and "%" not in table
    assert table.splitlines()[2].split() == ["add", "30.0", "10.0", "0.33x"]


def test_host_time_per_call_plots_grouped_bars_without_ceiling():
    record = synthetic_record(HOST_LIKE, ms=lambda c, i, p: [0.030, 0.010][p])
    fig = Result(HOST_LIKE, record, "committed").plot()
    (ax,) = fig.axes
    assert ax.child_axes == []  # no % axis
    assert not any("measured:" in label for label in ax.get_legend_handles_labels()[1])
    assert "lower is better" in ax.get_ylabel()
    bars = ax.patches
    assert len(bars) == 4  # 2 ops x 2 providers
    heights = sorted(round(b.get_height(), 6) for b in bars)
    assert heights == pytest.approx([10.0, 10.0, 30.0, 30.0])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["add", "mul"]


def test_rate_without_ceiling_has_no_percent():
    import dataclasses

    bench = dataclasses.replace(catalog.VECTOR_ADD, ceiling=None)
    result = Result(bench, synthetic_record(bench), "committed")
    assert result.record["ceilings"] == {}
    assert result.fraction_of_ceiling() == {}
    assert "%" not in result.table()
    assert result.plot().axes[0].child_axes == []


def test_format_size():
    assert format_size(4096) == "4096"
    assert format_size(2**20) == "2^20"
    assert format_size(3000) == "3000"


@pytest.mark.parametrize(
    "x, shown",
    [
        (2**20, "2^20"),
        (1000, "1000"),
        ((4096, 4096, 4096), "4096³"),
        ([4096, 4096, 4096], "4096³"),
        ((8192, 4096, 14336), "8192×4096×14336"),
        ((4096, 4096), "4096×4096"),
        ("softmax", "softmax"),
    ],
)
def test_format_x(x, shown):
    assert format_x(x) == shown


def test_provider_colours_are_stable():
    assert provider_color("triton") == provider_color("triton") != provider_color("torch")
    assert len(set(PROVIDER_COLORS.values())) == len(PROVIDER_COLORS)
    assert provider_color("triton_rowmajor") not in (provider_color("triton"), provider_color("cublas"))


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU path")
def test_without_gpu_committed_records_are_rendered():
    result = run_or_load(catalog.VECTOR_ADD)
    assert result.source in ("committed", "missing")
    if result.source == "committed":
        assert result.record["provenance"]["gpu"]


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU path")
def test_live_mode_without_gpu_fails_clearly(monkeypatch):
    monkeypatch.setenv("GPUPERF_BENCH", "live")
    with pytest.raises(RuntimeError, match="needs a CUDA GPU"):
        run_or_load(catalog.VECTOR_ADD)


def test_bad_mode_is_rejected(monkeypatch):
    monkeypatch.setenv("GPUPERF_BENCH", "sometimes")
    with pytest.raises(ValueError, match="GPUPERF_BENCH must be auto, live, full or records"):
        run_or_load(catalog.VECTOR_ADD)


def test_every_benchmark_names_real_sources():
    for benchmark in catalog.ALL:
        assert all(len(h) == 64 for h in sources.hashes(benchmark.sources).values())
        # The kernel under study comes first: this site's Triton kernel, or its Gluon one.
        assert benchmark.subject.key in ("triton", "gluon")


@pytest.mark.gpu
def test_live_run_on_gpu_makes_a_valid_record():
    from gpuperf.bench.runner import run

    record = run(catalog.SOFTMAX, x_values=(1024,), log=lambda line: None)
    assert records.validate(record) == []
    by = {r["provider"]: r for r in record["rows"]}
    assert by["triton"]["status"] == "ok" and by["triton"]["value"] > 0
    assert by["triton"]["bytes"] == catalog.SOFTMAX.bytes(1024)
    assert record["ceilings"]["copy_gbps"]["value"] > 100  # GB/s: any real GPU copies faster than this


@pytest.mark.gpu
def test_live_run_over_shapes_and_dtypes_records_configs_and_ceilings():
    import dataclasses

    from gpuperf.bench.runner import run

    def broken_config(a, b):
        raise RuntimeError("no config")

    bench = dataclasses.replace(
        MATMUL_LIKE,
        x_values=((256, 256, 256), (256, 128, 512)),
        providers=(
            *MATMUL_LIKE.providers[:2],
            MATMUL_LIKE.providers[2],
            catalog.Provider("broken", "broken", catalog.call(torch.matmul), config=broken_config),
        ),
    )
    record = run(bench, ceilings={"fp16_tflops": {"value": 1.0, "unit": "TFLOP/s"}}, log=lambda line: None)
    assert records.validate(record) == []
    assert list(record["ceilings"]) == ["fp16_tflops", "bf16_tflops"]
    assert record["ceilings"]["fp16_tflops"]["value"] == 1.0  # given, not measured again
    assert record["ceilings"]["bf16_tflops"]["value"] > 10  # measured now
    rows = {(r["x"], r["axes"]["dtype"], r["provider"]): r for r in record["rows"]}
    assert len(rows) == 2 * 2 * 4
    ok = rows[((256, 128, 512), "bfloat16", "triton")]
    assert ok["status"] == "ok" and ok["config"] == {"BLOCK_M": 128} and ok["ceiling"] == "bf16_tflops"
    assert ok["flops"] == 2 * 256 * 128 * 512
    broken = rows[((256, 256, 256), "float16", "broken")]
    assert broken["status"] == "error" and "no config" in broken["message"] and broken["value"] is None
    result = Result(bench, record, "live")
    assert result.ratios(dtype="float16")[(256, 256, 256)] > 0


@pytest.mark.gpu
def test_live_run_with_host_timer_reports_microseconds():
    from gpuperf.bench.runner import run

    record = run(HOST_LIKE, log=lambda line: None)
    assert records.validate(record) == []
    assert record["provenance"]["timing_method"].startswith("host clock per call")
    assert record["ceilings"] == {}
    for row in record["rows"]:
        assert row["status"] == "ok" and row["ceiling"] is None
        assert row["value"] == pytest.approx(row["ms"] * 1e3)
        assert 0.5 < row["value"] < 1000  # a torch.add costs microseconds of host time


def test_plot_and_table_keep_the_chosen_axis_values():
    from tests.test_bench_records import MATMUL_LIKE, synthetic_record

    result = Result(MATMUL_LIKE, synthetic_record(MATMUL_LIKE), "committed")
    table = result.table(dtype="float16")
    assert "dtype=float16" in table and "dtype=bfloat16" not in table
    fig = result.plot(dtype="bfloat16")
    assert len(fig.axes) >= 1 and "dtype=bfloat16" in fig._suptitle.get_text()
    with pytest.raises(ValueError, match="no value 'int8'"):
        result.plot(dtype="int8")


def _two_gpus(benchmark=catalog.VECTOR_ADD, **kwargs):
    """A result on "Test GPU 80GB" with a slower "Other GPU" beside it (twice the times)."""
    ms = kwargs.pop("ms", None) or (lambda c, i, p: 1.0 + p)
    main = Result(benchmark, synthetic_record(benchmark, ms=ms, **kwargs), "committed")
    slower = synthetic_record(benchmark, gpu="Other GPU", ms=lambda c, i, p: 2 * ms(c, i, p), **kwargs)
    main.others = [Result(benchmark, slower, "committed", ["STALE: changed"])]
    return main


def test_several_gpus_plot_one_column_each_with_a_shared_y_range():
    fig = _two_gpus().plot()
    left, right = fig.axes
    assert [left.get_title(), right.get_title()] == ["Test GPU 80GB", "Other GPU"]
    assert left.get_ylim() == right.get_ylim()
    texts = " ".join(t.get_text() for t in fig.texts)
    assert "Test GPU 80GB (1 SMs" in texts and "Other GPU (1 SMs" in texts
    assert "Other GPU: STALE: changed" in texts
    assert "committed measurements" in fig.get_suptitle()
    # One legend entry for the two GPUs' ceilings, which differ in value.
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert sum("stream bandwidth" in label for label in legend) == 1


def test_several_gpus_with_axes_plot_a_row_per_combination():
    fig = _two_gpus(MATMUL_LIKE).plot()
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == [
        "Test GPU 80GB\ndtype=float16",
        "Other GPU\ndtype=float16",
        "Test GPU 80GB\ndtype=bfloat16",
        "Other GPU\ndtype=bfloat16",
    ]
    assert len(_two_gpus(MATMUL_LIKE).plot(dtype="float16").axes) == 2


def test_several_gpus_table_has_a_gpu_column_and_each_gpus_ratios():
    result = _two_gpus()
    lines = result.table().splitlines()
    assert lines[0] == "Other GPU: STALE: changed"
    header = lines[1].split()
    assert header[:2] == ["n_elements", "GPU"]
    x = format_size(catalog.VECTOR_ADD.x_values[0])
    rows = [line for line in lines[3:] if line.split()[0] == x]
    assert [row.split()[1] for row in rows] == ["Test", "Other"]  # x-major: the GPUs of one x together
    assert all(row.split()[-2] == "2.00x" for row in rows)  # each GPU's own ratio
    # The lookups read the first GPU's record; on() picks another.
    assert result.values("torch") != result.on("Other GPU").values("torch")
    assert result.on("other-gpu").gpu == "Other GPU"


def test_on_names_the_gpus_that_have_records():
    with pytest.raises(ValueError, match=r"no record for GPU 'H300'.*\['test-gpu-80gb', 'other-gpu'\]"):
        _two_gpus().on("H300")
    with pytest.raises(TypeError, match="gpu must be a GPU name or folder"):
        _two_gpus().on(100)


def test_html_tables_when_asked(monkeypatch):
    monkeypatch.setenv("GPUPERF_TABLES", "html")
    html = _two_gpus(MATMUL_LIKE).table(dtype="float16")
    assert "\n" not in html and html.count("<table") == 1
    assert "<caption>dtype=float16</caption>" in html and '<th scope="col">GPU</th>' in html
    assert 'data-sort="4096"' not in html  # shapes sort in declared order, not by a dimension
    monkeypatch.setenv("GPUPERF_TABLES", "markdown")
    with pytest.raises(ValueError, match=r"GPUPERF_TABLES must be one of \['text', 'html'\], got 'markdown'"):
        _two_gpus().table()


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU path")
def test_run_or_load_draws_every_gpu_folder_with_a_record(tmp_path, monkeypatch):
    for gpu in ("Test GPU 80GB", "Reader GPU", "Other GPU"):
        records.write(synthetic_record(catalog.VECTOR_ADD, gpu=gpu, n_x=99), tmp_path)
    (tmp_path / "empty-gpu").mkdir()  # a folder without this benchmark's record is left out
    monkeypatch.setenv("GPUPERF_MEASUREMENTS", str(tmp_path))
    monkeypatch.setenv("GPUPERF_GPU", "test-gpu-80gb")
    assert records.gpus_with_record("vector_add") == ["test-gpu-80gb", "other-gpu", "reader-gpu"]
    result = run_or_load(catalog.VECTOR_ADD)
    assert [r.gpu for r in result.gpus()] == ["Test GPU 80GB", "Other GPU", "Reader GPU"]
    assert len(result.plot().axes) == 3
    # Without a record for the reference GPU, the others still show, with the missing one named.
    monkeypatch.setenv("GPUPERF_GPU", "absent-gpu")
    result = run_or_load(catalog.VECTOR_ADD)
    assert result.source == "missing" and len(result.gpus()) == 3
    assert "MISSING" in result.table().splitlines()[0]


def test_ratios_over_another_provider_than_the_baseline(monkeypatch):
    """``Result.ratios(provider, over=...)``: a ladder's rung against the rung below it, from
    the same rows as against the baseline."""
    monkeypatch.setenv("GPUPERF_BENCH", "records")
    result = load(catalog.GLUON_FP8)
    over_drain = result.ratios("gluon", over="gluon_drain", scaling="tensor")
    vs_base = result.ratios("gluon", scaling="tensor")
    drain_vs_base = result.ratios("gluon_drain", scaling="tensor")
    assert over_drain and set(over_drain) == set(vs_base)
    for x, r in over_drain.items():
        assert r == pytest.approx(vs_base[x] / drain_vs_base[x])


def test_another_gpus_record_is_drawn_only_while_current(monkeypatch, tmp_path):
    """The reference GPU's record is shown; another GPU's only while its code is the code as it
    stands. With one GPU shown, the table ends by saying where and when it was measured."""
    monkeypatch.setenv("GPUPERF_MEASUREMENTS", str(tmp_path))
    monkeypatch.setenv("GPUPERF_BENCH", "records")
    monkeypatch.setenv("GPUPERF_GPU", "test-gpu-80gb")
    provenance = {"date": "2026-11-24T10:00:00Z"}
    reference = synthetic_record(n_x=99, gpu="Test GPU 80GB")
    reference["provenance"].update(provenance)
    records.write(reference, tmp_path)
    other = synthetic_record(n_x=99, gpu="Other GPU")
    records.write(other, tmp_path)
    both = run_or_load(catalog.VECTOR_ADD)
    assert [r.gpu for r in both.gpus()] == ["Test GPU 80GB", "Other GPU"]
    assert "Measured on" not in both.table()
    records.write(with_changed_source(other, "kernels/vector_add.py"), tmp_path)
    alone = run_or_load(catalog.VECTOR_ADD)
    assert [r.gpu for r in alone.gpus()] == ["Test GPU 80GB"] and alone.notes == []
    assert alone.table().splitlines()[-1] == "Measured on: Test GPU 80GB (2026-11-24)"
    assert current_others(catalog.VECTOR_ADD, "test-gpu-80gb") == []
    # Another GPU's stale record loads as nothing to show; the reference GPU's says what is missing.
    assert load(catalog.VECTOR_ADD, "other-gpu").source == "stale"
    absent = load(catalog.GLUON_FP8)
    assert absent.record is None and absent.notes[0].startswith("MISSING")
    assert "python -m gpuperf.bench gluon_fp8" in absent.notes[0]


def test_a_table_lists_shapes_in_declared_order_whatever_the_records_hold():
    # A quick live record holds part of the shapes; beside the whole committed sweep, the
    # rows still run in the benchmark's order, not the live record's first.
    full = load(catalog.MATMUL)
    big = (8192, 8192, 8192)
    part = {**full.record, "rows": [r for r in full.record["rows"] if r["x"] == big]}
    text = Result(catalog.MATMUL, part, "live", others=[full]).table(dtype="float16")
    shown = [line.split()[0] for line in text.splitlines() if "H100" in line]
    expected = []
    for x in catalog.MATMUL.x_values:
        expected += [format_x(x)] * (2 if x == big else 1)  # live and committed at 8192³
    assert shown == expected


def test_a_table_names_the_ceiling_its_shares_are_of():
    # Fast accumulation is read against its own ceiling: the header says which.
    fp8 = load(catalog.MATMUL_FP8)
    assert "triton % of fp8_fast" in fp8.table(accumulation="fast")
    promoted = fp8.table(accumulation="float32")
    assert "triton % of fp8" in promoted and "fp8_fast" not in promoted


def _above_the_roof(provider: str = "torch", by: float = 1.01, spread: float = 0.001) -> Result:
    """A vector-add record whose ``provider`` runs at its largest size ``by`` times the
    stream ceiling of the record, its 20th and 80th percentiles ``spread`` apart."""
    record = synthetic_record()
    ceiling = record["ceilings"]["stream_gbps"]
    x = max(r["x"] for r in record["rows"])
    for row in record["rows"]:
        if row["provider"] == provider and row["x"] == x:
            row["value"] = by * ceiling["value"]
            row["value_p20"], row["value_p80"] = row["value"] * (1 - spread), row["value"] * (1 + spread)
    return Result(catalog.VECTOR_ADD, record, "committed")


def test_ceiling_name_comes_from_the_record_the_rows_are_read_against():
    result = Result(catalog.VECTOR_ADD, synthetic_record(), "committed")
    assert result.ceiling_name() == "stream bandwidth (addcmul)"
    assert result.ceiling_name(full=False) == "stream bandwidth"
    # A record whose rows were read against the copy names the copy.
    for row in result.record["rows"]:
        row["ceiling"] = "copy_gbps"
    assert result.ceiling_name() == "copy bandwidth"
    assert Result(catalog.VECTOR_ADD, None, "missing").ceiling_name() is None
    host = Result(HOST_LIKE, synthetic_record(HOST_LIKE), "committed")
    assert host.ceiling_name() is None


def test_a_row_above_its_roof_beyond_the_spread_is_found_whatever_its_provider():
    result = _above_the_roof("torch")
    (share,) = above_roof(result)
    assert share.row["provider"] == "torch" and share.key == "stream_gbps"
    assert share.fraction == pytest.approx(1.01)
    # Within the spread of both timings, or under the roof: nothing to say.
    assert above_roof(_above_the_roof("torch", spread=0.05)) == []
    assert above_roof(_above_the_roof("torch", by=0.99)) == []
    assert above_roof(Result(catalog.VECTOR_ADD, None, "missing")) == []
    with pytest.raises(TypeError, match=r"gpuperf\.pages\.Result"):
        above_roof({"rows": []})


def test_the_table_says_under_it_which_row_is_above_its_roof():
    result = _above_the_roof("torch")
    (line,) = above_roof_sentences(result)
    row = above_roof(result)[0].row
    assert line.startswith("Above its roof beyond the spread of both timings: PyTorch x + y at ")
    assert (
        f"ran at {row['value']:.0f} GB/s (20th percentile {row['value_p20']:.0f}) against the 3100 GB/s"
        in line
    )
    assert "(80th percentile 3110) of the stream bandwidth (addcmul) measured in the same run;" in line
    assert line.endswith(f"{roof_caveat('stream_gbps', {'stream': 'addcmul'})}.")
    table = result.table()
    assert table.splitlines()[-2].startswith("Measured on:") and table.splitlines()[-1] == line
    assert "Above its roof" not in Result(catalog.VECTOR_ADD, synthetic_record(), "committed").table()


def test_roof_caveat_and_stream_mix_name_what_a_ceiling_is():
    assert stream_mix("copy") == "1 read per write"
    assert stream_mix("sum") == "reads alone"
    assert "the ceiling is cuBLAS bf16 matmul (torch.matmul) at 4096³" in roof_caveat(
        "bf16_tflops", {"shape": [4096] * 3}
    )
    with pytest.raises(ValueError, match="stream must be one of"):
        stream_mix("memset")
    with pytest.raises(ValueError, match="key must be one of"):
        roof_caveat("hbm_gbps", {})
    with pytest.raises(TypeError, match="entry must be"):
        roof_caveat("copy_gbps", None)


def test_check_result_names_the_argument_and_the_benchmarks_it_takes():
    from gpuperf.pages.report import check_result

    result = Result(catalog.VECTOR_ADD, None, "missing")
    check_result(result)
    check_result(result, catalog.SOFTMAX, catalog.VECTOR_ADD)
    with pytest.raises(TypeError, match=r"fp8 must be a gpuperf\.pages\.Result, got dict"):
        check_result({}, catalog.VECTOR_ADD, name="fp8")
    with pytest.raises(ValueError, match="must be a result of 'softmax', got a result of 'vector_add'"):
        check_result(result, catalog.SOFTMAX)
    with pytest.raises(ValueError, match=r"must be a result of one of \['softmax', 'matmul'\]"):
        check_result(result, catalog.SOFTMAX, catalog.MATMUL)


def test_row_finds_one_row_of_any_status_by_provider_x_and_the_axes_named():
    record = synthetic_record()
    result = Result(catalog.VECTOR_ADD, record, "committed")
    first = record["rows"][0]
    assert result.row(first["provider"], first["x"], **first["axes"]) is first
    assert result.row(first["provider"], first["x"]) is not None
    assert result.row("no such provider", first["x"]) is None
    assert Result(catalog.VECTOR_ADD, None, "missing").row("triton", 1) is None


def test_ms_us_and_labels_read_the_results_own_record():
    record = synthetic_record()
    result = Result(catalog.VECTOR_ADD, record, "committed")
    key = catalog.VECTOR_ADD.subject.key
    ms = result.ms()
    assert ms and ms == {r["x"]: r["ms"] for r in record["rows"] if r["provider"] == key}
    assert result.us(key) == {x: t * 1e3 for x, t in ms.items()}
    assert result.labels()[key] == next(r["label"] for r in record["rows"] if r["provider"] == key)
    assert Result(catalog.VECTOR_ADD, None, "missing").labels() == {}


def test_passes_roof_names_where_the_kernel_under_study_passed_its_roof():
    from gpuperf.pages.report import passes_roof, x_named

    result = _above_the_roof(catalog.VECTOR_ADD.subject.key)
    x = above_roof(result)[0].x
    (line,) = passes_roof(result, "ours", lambda share: " (here)")
    assert line.startswith(f"At {x_named(result.record, x)} (here) ours passes that roof beyond the spread")
    assert line.endswith(f"{roof_caveat('stream_gbps', {'stream': 'addcmul'})}.")
    assert passes_roof(_above_the_roof("torch")) == []


def test_a_results_folder_and_a_captures_gpu_folder_are_where_their_gpus_records_are():
    from gpuperf.pages.captures import gpu_folder

    result = Result(catalog.VECTOR_ADD, synthetic_record(), "committed")
    assert result.folder == records.gpu_slug(result.gpu)
    assert Result(catalog.VECTOR_ADD, None, "missing").folder is None
    assert gpu_folder({"provenance": {"gpu": "NVIDIA H200"}}) == "nvidia-h200"
