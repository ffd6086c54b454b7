"""Every benchmark's figure, drawn from the committed records of every GPU, is legible: no
two of its texts collide, its axes say their units and its title says what to see."""

import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from gpuperf.bench import catalog, records
from gpuperf.pages import report
from gpuperf.pages.plotting import Y_LABELS, overlapping_texts


@pytest.fixture(autouse=True)
def committed_records(monkeypatch):
    monkeypatch.setenv("GPUPERF_BENCH", "records")
    yield
    plt.close("all")


# Not named `benchmark`: pytest-benchmark, where installed, owns that fixture name.
@pytest.mark.parametrize("bench", catalog.ALL, ids=[b.name for b in catalog.ALL])
def test_benchmark_figures_have_no_colliding_text_and_say_what_to_see(bench):
    result = report.run_or_load(bench)
    # The reference GPU first; others only where their record is current.
    assert result.gpus() and records.gpu_slug(result.gpus()[0].gpu) == records.reference_gpu()
    fig = result.plot()
    assert overlapping_texts(fig) == []
    # Under the title, each GPU's headline: what the figure shows, in numbers.
    texts = [t.get_text() for t in fig.texts]
    for gpu in result.gpus():
        name = gpu.gpu.removeprefix("NVIDIA ")
        # A ratio to the baseline, unless the baseline has no time (it failed its check):
        # then the share of the ceiling, where there is one.
        timed = any(r["provider"] == bench.baseline and r["status"] == "ok" for r in gpu.record["rows"])
        said = "×" if timed else ("%" if bench.ceiling is not None else None)
        if said is not None:
            assert any(t.startswith(f"{name}: ") and said in t for t in texts), name
    # Every panel names its x axis; the y axis of each row is named with its unit.
    # (A panel has a title but where one GPU's record has no axes: then its x label marks it.)
    panels = [ax for ax in fig.axes if ax.axison and (ax.get_title() or ax.get_xlabel())]
    assert panels and all(ax.get_xlabel() for ax in panels)
    metric = result.record["metric"]
    assert panels[0].get_ylabel() == Y_LABELS.get(metric, metric)


def test_the_check_finds_colliding_text():
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.text(0.5, 0.5, "softmax_long_rows")
    ax.text(0.52, 0.5, "gelu bf16")
    assert overlapping_texts(fig) == [("softmax_long_rows", "gelu bf16")]
    ax.set_xticks(range(40), [f"{i}×14336×4096" for i in range(40)], rotation=45)
    assert len(overlapping_texts(fig)) > 30  # 40 rotated labels crammed into 3 inches


@pytest.mark.parametrize(
    ("given", "message"),
    [([], "at least one record"), ("no rows", "hold no rows"), ("two benchmarks", "of one benchmark")],
)
def test_plot_records_refuses_what_it_cannot_draw(given, message):
    from gpuperf.pages.plotting import plot_records

    record = records.read(records.record_path(catalog.VECTOR_ADD.name, records.reference_gpu()))
    if given == "no rows":
        given = [{**record, "rows": []}]
    elif given == "two benchmarks":
        given = [record, {**record, "benchmark": "softmax"}]
    with pytest.raises(ValueError, match=message):
        plot_records(given)


@pytest.mark.parametrize(
    ("name", "scale"), [("host_overhead", "log"), ("attention_memory", "log"), ("softmax", "linear")]
)
def test_a_panel_spanning_decades_of_host_time_or_memory_is_drawn_on_a_log_axis(name, scale):
    # Host time runs from ten microseconds (one op) to a millisecond (a training step): on a
    # linear axis every op but the training step would be a sliver.
    fig = report.load(catalog.by_name(name)).plot()
    assert {ax.get_yscale() for ax in fig.axes if ax.get_ylabel() and "%" not in ax.get_ylabel()} == {scale}
    plt.close(fig)


def test_a_ceiling_line_needs_a_positive_rate():
    from gpuperf.pages.plotting import draw_ceiling

    fig, ax = plt.subplots()
    assert draw_ceiling(ax, 3000.0, "copy bandwidth, measured: 3.00 TB/s", "copy bandwidth") is not None
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="value must be a positive rate"):
            draw_ceiling(ax, bad, "x", "y")
    plt.close(fig)
