"""The plan a docs build or a page run as a script prints first: which benchmarks each page
measures (read from its source), live or records, on which GPU, and each page's time from
its records' own wall times ("time not recorded" where a record has none)."""

import ast
import io
import sys
from pathlib import Path

import pytest

from gpuperf.bench import catalog, records
from gpuperf.bench.catalog import Benchmark
from gpuperf.pages import announce, report
from tests.test_bench_records import synthetic_record

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "tutorials").glob("*.py")) + sorted((ROOT / "guides").glob("*.py"))

GPU = "Test GPU 80GB"  # synthetic_record's GPU
SLUG = records.gpu_slug(GPU)


def _catalog_benchmarks_named_in(path: Path) -> set[str]:
    """Every catalog benchmark a page's source names at all, however it uses it: an
    imported name or ``cat.NAME`` that is a :class:`Benchmark` of the catalog."""
    tree = ast.parse(path.read_text())
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    names |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    names |= {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    return {getattr(catalog, n).name for n in names if isinstance(getattr(catalog, n, None), Benchmark)}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_benchmark_a_page_names_is_one_the_plan_finds(page):
    """The plan reads each page's benchmarks from its calls of show and run_or_load; a page
    that names a benchmark some other way (a variable, a loop) fails here, not silently."""
    found = [b.name for b in announce.benchmarks_of(page)]
    assert len(found) == len(set(found))
    assert set(found) == _catalog_benchmarks_named_in(page)


def test_the_pages_benchmarks_as_the_tutorials_call_them():
    by_page = {p.stem: [b.name for b in announce.benchmarks_of(p)] for p in PAGES}
    assert by_page["03_matmul"] == ["matmul_order", "matmul_epilogue", "matmul", "host_overhead"]
    assert by_page["05_fp8_matmul"] == ["matmul_fp8"]
    assert by_page["02_roofline"] == []
    assert "attention_forward" in by_page["03_optimization_strategy"]  # through cat.ATTENTION_FORWARD
    measured = {name for names in by_page.values() for name in names}
    assert measured <= {b.name for b in catalog.ALL}


def test_no_page_module_measures_behind_the_page_scripts_back():
    """Live measuring is a call of show or run_or_load in a page's own script (what the plan
    reads): the pages' helper modules only load records."""
    folder = ROOT / "src" / "gpuperf" / "pages"
    offenders = []
    for path in sorted(folder.rglob("*.py")):
        if path.name in ("__init__.py", "report.py", "announce.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module in ("gpuperf.pages", "gpuperf.pages.report"):
                offenders += [f"{path.name}: {a.name}" for a in node.names if a.name in announce.MEASURING]
    assert offenders == []


def _script(tmp_path, name: str, body: str) -> Path:
    path = tmp_path / "tutorials" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(body)
    return path


def test_benchmarks_of_reads_every_way_a_script_names_them(tmp_path):
    script = _script(
        tmp_path,
        "01_a.py",
        "from gpuperf.bench.catalog import SOFTMAX as S, VECTOR_ADD\n"
        "from gpuperf.bench import catalog as cat\n"
        "from gpuperf import pages\n"
        "from gpuperf.pages import captures, run_or_load, show\n"
        "captures.show('timing_methods', print)\n"  # a capture: nothing measured
        "show(VECTOR_ADD)\n"
        "r = pages.run_or_load(cat.MATMUL)\n"
        "r.show()\n"  # a Result's method: nothing measured
        "run_or_load(benchmark=S)\n"
        "show(VECTOR_ADD, dtype='float32')\n",
    )
    assert [b.name for b in announce.benchmarks_of(script)] == ["vector_add", "matmul", "softmax"]


def test_benchmarks_of_refuses_a_call_it_cannot_read(tmp_path):
    script = _script(tmp_path, "01_a.py", "from gpuperf.pages import show\nbench = 1\n\nshow(bench)\n")
    with pytest.raises(ValueError, match=r"01_a.py:4: show\(\) is passed bench"):
        announce.benchmarks_of(script)
    script = _script(
        tmp_path, "02_b.py", "from gpuperf.bench import catalog\nfrom gpuperf.pages import show\n"
    )
    script.write_text(script.read_text() + "show(catalog.NO_SUCH)\n")
    with pytest.raises(ValueError, match="no benchmark named 'NO_SUCH'"):
        announce.benchmarks_of(script)


@pytest.fixture
def measured(tmp_path, monkeypatch):
    """Records of ``Test GPU 80GB`` under ``tmp_path``: vector_add's with its wall time (90 s),
    softmax's without (an older record); the reference GPU is that GPU."""
    root = tmp_path / "measurements"
    timed = synthetic_record(catalog.VECTOR_ADD, n_x=99)
    timed["wall_s"] = 90.0
    records.write(timed, root)
    untimed = synthetic_record(catalog.SOFTMAX, n_x=99)
    assert untimed["wall_s"] is None
    records.write(untimed, root)
    monkeypatch.setenv("GPUPERF_GPU", SLUG)
    return root


@pytest.fixture
def pages(tmp_path):
    first = _script(
        tmp_path,
        "01_a.py",
        "from gpuperf.bench.catalog import SOFTMAX, VECTOR_ADD\n"
        "from gpuperf.pages import show\nshow(VECTOR_ADD)\nshow(SOFTMAX)\n",
    )
    return [first, _script(tmp_path, "02_b.py", "print('no benchmark here')\n")]


def test_a_live_plan_gives_each_pages_time_from_its_records_and_says_which_are_not_recorded(measured, pages):
    text = announce.describe(
        pages, announce.Build("auto", GPU), measured, caches={"TRITON_CACHE_DIR": "/c/triton"}
    )
    lines = text.splitlines()
    assert lines[0] == "gpuperf: the pages measure live on Test GPU 80GB (GPUPERF_BENCH=auto)."
    assert "GPUPERF_BENCH=records nox -s docs" in lines[1]
    assert f"on {SLUG}; each record's wall_s" in text and "another GPU" not in text
    first = next(line for line in lines if "tutorials/01_a.py" in line)
    assert first.endswith("about 1.5 min (time not recorded for softmax)")
    assert any("tutorials/02_b.py" in line and line.endswith("nothing to measure") for line in lines)
    assert "2 measurements on 2 pages: about 1.5 min for the 1 whose last wall time is recorded" in text
    assert (
        lines[-1]
        == "Compiled kernels and max-autotune choices are kept between runs: TRITON_CACHE_DIR=/c/triton."
    )


def test_a_plan_never_puts_a_time_on_a_page_whose_records_have_none(measured, pages, tmp_path):
    only_untimed = _script(
        tmp_path,
        "03_c.py",
        "from gpuperf.bench.catalog import SOFTMAX\nfrom gpuperf.pages import show\nshow(SOFTMAX)\n",
    )
    text = announce.describe([only_untimed], announce.Build("auto", GPU), measured)
    assert "tutorials/03_c.py  time not recorded" in text
    assert "1 measurements on 1 pages: no wall time recorded" in text
    assert " min" not in text
    page = announce.describe_page(only_untimed, announce.Build("auto", GPU), measured)
    assert "softmax" in page and "time not recorded" in page and " min" not in page


def test_on_another_gpu_the_times_are_the_reference_gpus_and_say_so(measured, pages):
    text = announce.describe(pages, announce.Build("auto", "NVIDIA A100-SXM4-80GB"), measured)
    assert "live on NVIDIA A100-SXM4-80GB" in text
    assert f"on {SLUG}, another GPU than this one: a rough guide" in text
    assert "about 1.5 min (time not recorded for softmax)" in text


def test_a_records_plan_measures_nothing_and_says_how_to_measure(measured, pages):
    text = announce.describe(pages, announce.Build("records", GPU), measured)
    assert text.splitlines()[0] == (
        f"gpuperf: the pages load the committed records of {SLUG} (GPUPERF_BENCH=records): "
        "nothing is measured on Test GPU 80GB."
    )
    assert "Unset GPUPERF_BENCH (or set it to live) to measure live on Test GPU 80GB" in text
    assert "about 1.5 min for the 1 whose last wall time is recorded" in text


def test_without_a_gpu_the_plan_is_one_line(measured, pages):
    text = announce.describe(pages, announce.Build("auto", None), measured)
    assert text == (
        f"gpuperf: the pages load the committed records of {SLUG}: no CUDA GPU is usable here "
        "(or TRITON_INTERPRET=1), so the kernels run in Triton's interpreter and nothing is measured."
    )
    assert "will fail" in announce.describe(pages, announce.Build("live", None), measured)


def test_a_pages_own_plan(measured, pages):
    live = announce.describe_page(pages[0], announce.Build("auto", GPU), measured).splitlines()
    assert live[0] == (
        "tutorials/01_a.py measures live on Test GPU 80GB (GPUPERF_BENCH=auto); "
        "GPUPERF_BENCH=records loads the committed records instead."
    )
    assert "vector_add" in live[1] and live[1].endswith("points, about 1.5 min")
    assert "softmax" in live[2] and live[2].endswith("points, time not recorded")
    assert live[3] == f"  about 1.5 min for the 1 whose last wall time is recorded (on {SLUG})"
    loads = announce.describe_page(pages[0], announce.Build("records", GPU), measured)
    assert loads.startswith(
        f"tutorials/01_a.py loads the committed records of {SLUG} (GPUPERF_BENCH=records)"
    )
    assert loads.endswith("it shows vector_add, softmax.")


def test_the_setting_is_checked(monkeypatch):
    monkeypatch.setenv("GPUPERF_BENCH", "sometimes")
    refused = "GPUPERF_BENCH must be auto, live, full or records, got 'sometimes'"
    with pytest.raises(ValueError, match=refused):
        announce.current(False)
    monkeypatch.delenv("GPUPERF_BENCH")
    assert announce.current(False) == announce.Build("auto", None)
    assert not announce.Build("auto", None).live and announce.Build("auto", GPU).live
    assert announce.Build("live", None).live and not announce.Build("records", GPU).live


def test_a_page_announces_its_plan_once_and_other_scripts_stay_quiet(measured, pages, monkeypatch):
    monkeypatch.setattr(announce, "_SHOWN", announce._Shown())
    out = io.StringIO()
    live = announce.Build("auto", GPU)
    assert announce.announce_page(pages[0], live, measured, file=out)
    assert not announce.announce_page(pages[0], live, measured, file=out)  # once per script
    assert out.getvalue().startswith("tutorials/01_a.py measures live")
    assert out.getvalue().count("measures live") == 1
    assert not announce.announce_page(pages[1], live, measured, file=out)  # no benchmark: not a page
    assert not announce.announce_page(Path(sys.argv[0]), live, measured, file=out)  # the test runner


def test_after_the_site_plan_only_pages_that_measure_say_more(measured, pages, monkeypatch):
    monkeypatch.setattr(announce, "_SHOWN", announce._Shown())
    site, page = io.StringIO(), io.StringIO()
    announce.announce_site(pages, announce.Build("records", GPU), measured, file=site)
    assert site.getvalue().startswith("gpuperf: the pages load")
    assert not announce.announce_page(pages[0], announce.Build("records", GPU), measured, file=page)
    assert announce.announce_page(pages[0], announce.Build("auto", GPU), measured, file=page)
    # A newline first: sphinx's progress line is still on screen.
    assert page.getvalue().startswith("\ntutorials/01_a.py measures live")


def test_a_live_page_shows_its_plan_and_a_progress_bar_off_the_page(measured, pages, monkeypatch, capsys):
    """run_or_load measuring live: the page's plan, then a bar naming the benchmark, the size
    and the provider, on the process's own stderr; nothing of it in what the page prints
    (sphinx-gallery puts sys.stdout and sys.stderr on the page)."""
    from gpuperf.bench import runner

    monkeypatch.setenv("GPUPERF_MEASUREMENTS", str(measured))
    monkeypatch.setattr(announce, "_SHOWN", announce._Shown())
    monkeypatch.setattr(announce, "current", lambda usable: announce.Build("auto", GPU))
    monkeypatch.setattr(report, "LIVE", report.LiveRecords())  # nothing measured before
    monkeypatch.setattr(sys, "argv", [str(pages[0])])
    for name in ("TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "TORCHINDUCTOR_FX_GRAPH_CACHE"):
        monkeypatch.setenv(name, "kept")  # use_compile_caches leaves them as they are
    monkeypatch.setenv("TORCHINDUCTOR_AUTOGRAD_CACHE", "1")
    terminal = io.StringIO()
    monkeypatch.setattr(sys, "__stderr__", terminal)

    def fake_run(
        benchmark, *, x_values=None, combos=None, ceilings=None, providers=None, log=print, step=None
    ):
        step("vector_add size=4096 triton")
        step("vector_add size=4096 torch")
        return synthetic_record(benchmark, n_x=99)

    monkeypatch.setattr(runner, "run", fake_run)
    result = report.run_or_load(catalog.VECTOR_ADD)
    assert result.source == "live"
    shown = terminal.getvalue()
    assert shown.index("tutorials/01_a.py measures live") < shown.index("vector_add size=4096 triton")
    assert "vector_add size=4096 torch" in shown
    page = capsys.readouterr()
    assert "size=4096" not in page.out + page.err and "measures live" not in page.out + page.err


def test_the_records_path_stays_as_it_was(monkeypatch, capsys):
    """Without a GPU, run_or_load loads the records and prints nothing (the test runner's own
    script is not a page)."""
    monkeypatch.setattr(announce, "_SHOWN", announce._Shown())
    monkeypatch.setattr(report, "can_measure", lambda: False)
    monkeypatch.delenv("GPUPERF_BENCH", raising=False)
    terminal = io.StringIO()
    monkeypatch.setattr(sys, "__stderr__", terminal)
    result = report.run_or_load(catalog.VECTOR_ADD)
    assert result.source == "committed"
    assert terminal.getvalue() == "" and capsys.readouterr().out == ""


def test_a_benchmark_shown_on_two_pages_is_measured_once_and_ceilings_are_reused(
    measured, pages, monkeypatch
):
    """One build, one process: the second page that shows a benchmark gets the record the
    first measured, and a later benchmark gets the ceilings measured so far."""
    from gpuperf.bench import runner

    monkeypatch.setenv("GPUPERF_MEASUREMENTS", str(measured))
    monkeypatch.setattr(announce, "_SHOWN", announce._Shown())
    monkeypatch.setattr(announce, "current", lambda usable: announce.Build("auto", GPU))
    monkeypatch.setattr(report, "LIVE", report.LiveRecords())
    monkeypatch.setattr(sys, "argv", [str(pages[0])])
    monkeypatch.setattr(sys, "__stderr__", io.StringIO())
    for name in ("TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "TORCHINDUCTOR_FX_GRAPH_CACHE"):
        monkeypatch.setenv(name, "kept")
    monkeypatch.setenv("TORCHINDUCTOR_AUTOGRAD_CACHE", "1")
    calls = []

    def fake_run(
        benchmark, *, x_values=None, combos=None, ceilings=None, providers=None, log=print, step=None
    ):
        calls.append((benchmark.name, dict(ceilings)))
        record = synthetic_record(benchmark, n_x=3)
        record["ceilings"] = {"copy_gbps": {"value": 3000.0, "unit": "GB/s"}}
        return record

    monkeypatch.setattr(runner, "run", fake_run)
    first = report.run_or_load(catalog.VECTOR_ADD)
    again = report.run_or_load(catalog.VECTOR_ADD)
    assert again.record is first.record and again.source == "live"
    report.run_or_load(catalog.SOFTMAX)
    assert [name for name, _ in calls] == ["vector_add", "softmax"]
    assert calls[0][1] == {} and calls[1][1] == {"copy_gbps": {"value": 3000.0, "unit": "GB/s"}}


def test_a_benchmark_two_pages_show_counts_on_the_first_only(measured, pages, tmp_path):
    again = _script(
        tmp_path,
        "03_c.py",
        "from gpuperf.bench.catalog import VECTOR_ADD\nfrom gpuperf.pages import show\nshow(VECTOR_ADD)\n",
    )
    text = announce.describe([*pages, again], announce.Build("auto", GPU), measured)
    assert "2 measurements on 3 pages: about 1.5 min for the 1 whose last wall time is recorded" in text
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if "tutorials/03_c.py" in line)
    assert lines[at].endswith("nothing to measure")
    assert lines[at + 1].strip() == "vector_add (measured on an earlier page)"


def test_a_quick_build_counts_the_points_it_measures_and_full_measures_every_sweep(
    measured, pages, monkeypatch
):
    """vector_add declared with a quick part of 2 of its 17 sizes: a live build plans 2 of
    34 points and scales the recorded 90 s to them; GPUPERF_BENCH=full plans them all."""
    import dataclasses

    quick = dataclasses.replace(catalog.VECTOR_ADD, quick=(("n_elements", (2**12, 2**20)),))
    monkeypatch.setattr(catalog, "VECTOR_ADD", quick)
    page = announce.describe_page(pages[0], announce.Build("auto", GPU), measured).splitlines()
    assert " ".join(page[1].split()) == "vector_add 4 of 34 points (quick), about 0.2 min"
    site = announce.describe(pages, announce.Build("live", GPU), measured)
    assert "GPUPERF_BENCH=full measures every sweep whole" in site
    assert "scaled to the points measured" in site
    full = announce.describe_page(pages[0], announce.Build("full", GPU), measured).splitlines()
    assert " ".join(full[1].split()) == "vector_add 34 points, about 1.5 min"
    assert "every sweep whole" not in announce.describe(pages, announce.Build("full", GPU), measured)
    assert announce.Build("full", GPU).live and not announce.Build("full", GPU).quick
    assert announce.Build("auto", GPU).quick and not announce.Build("records", GPU).quick
