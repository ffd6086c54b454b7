"""Every page that shows a benchmark with a quick part runs as a quick live build would run
it: its "live" records hold only the quick points (:mod:`tests._quick_live`), so a page
whose text reads a point a quick build does not measure fails here instead of on a
reader's GPU, and the same GPU's committed sweep is shown beside the live points."""

from pathlib import Path

import pytest

from gpuperf.bench import catalog
from gpuperf.pages import announce
from gpuperf.pages.tables import FORMAT_VAR
from tests._quick_live import quick_live, run_page

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "tutorials").glob("[0-9]*.py")) + sorted((ROOT / "guides").glob("[0-9]*.py"))
QUICK_PAGES = [p for p in PAGES if any(b.quick for b in announce.benchmarks_of(p))]


def test_the_long_sweeps_have_a_quick_part_on_the_pages():
    quick = {b.name for b in vars(catalog).values() if isinstance(b, catalog.Benchmark) and b.quick}
    assert {"attention_forward", "attention_backward", "attention_memory", "gluon_attention"} <= quick
    assert {"matmul", "matmul_fp8", "attention_decode", "llama_decode"} <= quick
    assert {p.stem for p in QUICK_PAGES} >= {
        "03_matmul",
        "04_fused_attention",
        "05_fp8_matmul",
        "06_tma_persistent_matmul",
        "07_transformer_layer",
        "08_gluon_hopper",
        "03_optimization_strategy",
    }


@pytest.mark.parametrize("page", QUICK_PAGES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_quick_live_page_rests_on_the_points_it_measured(page, monkeypatch, tmp_path):
    monkeypatch.setenv(FORMAT_VAR, "text")
    monkeypatch.setenv("GPUPERF_BENCH", "live")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.chdir(tmp_path)
    with quick_live(monkeypatch.setattr):
        printed = run_page(str(page))
    import matplotlib.pyplot as plt

    plt.close("all")
    # The live points and the same GPU's committed sweep, told apart.
    assert "H100 80GB HBM3 (live)" in printed
    assert "H100 80GB HBM3 " in printed.replace("H100 80GB HBM3 (live)", "")
