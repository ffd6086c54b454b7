"""Plots, tables and the live/committed choice, on a machine with or without a GPU."""

import matplotlib

matplotlib.use("Agg")

import pytest
import torch

from gpuperf.bench import catalog, records
from gpuperf.bench.plotting import format_size, provider_color
from gpuperf.bench.report import Result, run_or_load
from tests.test_bench_records import synthetic_record


def test_plot_carries_provenance_and_ceiling():
    record = synthetic_record()
    fig = Result(catalog.VECTOR_ADD, record, "committed").plot()
    texts = " ".join(t.get_text() for t in fig.texts)
    assert "Test GPU 80GB" in texts
    ax = fig.axes[0]
    labels = ax.get_legend_handles_labels()[1]
    assert any("copy bandwidth, measured: 3.00 TB/s" in label for label in labels)
    assert "committed measurement" in ax.get_title()
    assert any("% of copy bandwidth" in a.get_ylabel() for a in fig.axes[0].child_axes)


def test_plot_shows_notes_in_the_figure():
    fig = Result(catalog.VECTOR_ADD, synthetic_record(), "committed", ["STALE: something changed"]).plot()
    assert any("STALE" in t.get_text() for t in fig.texts)


def test_missing_record_plots_a_notice():
    fig = Result(catalog.SOFTMAX, None, "missing", ["MISSING: no record"]).plot()
    assert "MISSING: no record" in fig.axes[0].texts[0].get_text()


def test_table_has_ratio_and_fraction_of_ceiling():
    record = synthetic_record()
    result = Result(catalog.VECTOR_ADD, record, "committed")
    table = result.table()
    assert "triton/torch" in table and "triton % of copy" in table
    # triton takes 1 ms and torch 2 ms in the synthetic record: 2x faster.
    assert list(result.ratios().values()) == pytest.approx([2.0, 2.0, 2.0])
    x = catalog.VECTOR_ADD.x_values[0]
    assert result.fraction_of_ceiling()[x] == pytest.approx(catalog.VECTOR_ADD.work(x) / 1e-3 / 1e9 / 3000)


def test_format_size():
    assert format_size(4096) == "4096"
    assert format_size(2**20) == "2^20"
    assert format_size(3000) == "3000"


def test_provider_colours_are_stable():
    assert provider_color("triton") == provider_color("triton") != provider_color("torch")


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
    with pytest.raises(ValueError, match="GPUPERF_BENCH must be auto, live or records"):
        run_or_load(catalog.VECTOR_ADD)


def test_every_benchmark_names_real_sources():
    for benchmark in catalog.ALL:
        assert len(records.sources_sha256(benchmark.sources)) == 64
        assert benchmark.subject.key == "triton"


@pytest.mark.gpu
def test_live_run_on_gpu_makes_a_valid_record(tmp_path):
    from gpuperf.bench.runner import run

    record = run(catalog.SOFTMAX, x_values=(1024,), log=lambda line: None)
    assert records.validate(record) == []
    by = {r["provider"]: r for r in record["rows"]}
    assert by["triton"]["status"] == "ok" and by["triton"]["value"] > 0
    assert record["ceiling"]["value"] > 100  # GB/s: any real GPU copies faster than this
