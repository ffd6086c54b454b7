"""Every figure a page draws besides the benchmarks' (tested in test_pages_plotting.py)
and the roofline's (test_pages_roofline.py), drawn from the committed measurements: no
two texts collide, and every panel names its axes."""

import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from gpuperf.bench import captures
from gpuperf.pages import matmul, profiling, strategy
from gpuperf.pages.plotting import overlapping_texts
from tests._pages import records_as_text  # noqa: F401 (autouse)

GPUS = ("nvidia-h100-80gb-hbm3", "nvidia-h200")


def _legible(fig) -> None:
    assert overlapping_texts(fig) == []
    panels = [ax for ax in fig.axes if ax.axison and ax.has_data() and ax.get_label() != "<colorbar>"]
    assert panels
    for ax in panels:
        assert ax.get_xlabel() or ax.get_xticklabels(), "an x axis with nothing to read"
    plt.close("all")


@pytest.mark.parametrize("gpu", GPUS)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_matmul_sweep_heatmaps(gpu, dtype):
    _legible(matmul.sweep_figure(dtype, gpu))


def test_strategy_sweep_figures():
    _legible(strategy.attention_sweep_figure())
    _legible(strategy.matmul_sweep_figure("bfloat16"))


def test_profiling_figures():
    gpu = captures.gpus_with("launch_bound")[0]
    _legible(profiling.launch_bound_figure(captures.load("launch_bound", gpu)))
    capture = captures.load("torch_profiler", captures.gpus_with("torch_profiler")[0])
    profiling.timeline(capture)
    _legible(plt.gcf())
