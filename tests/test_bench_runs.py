"""What ``python -m gpuperf.bench`` plans and reports: the stale records, the plan's text, the
comparison of a fresh run with the committed one, and the trace of what ran."""

import copy

import pytest
import torch

from gpuperf.bench import catalog, records, runs, sources
from gpuperf.bench.__main__ import main
from gpuperf.bench.runner import traced_sources
from tests._params import with_changed_source
from tests.test_bench_records import synthetic_record


def test_stale_lists_missing_and_changed_records_and_not_current_ones(tmp_path):
    current = synthetic_record(n_x=99)
    records.write(current, tmp_path)
    gpu = records.gpu_slug(current["provenance"]["gpu"])
    assert runs.stale([catalog.VECTOR_ADD], gpu, tmp_path) == []
    assert runs.stale([catalog.SOFTMAX], gpu, tmp_path) == [catalog.SOFTMAX]  # no record
    assert runs.why_stale(catalog.SOFTMAX, gpu, tmp_path) == ["no record"]
    records.write(with_changed_source(current, "kernels/vector_add.py"), tmp_path)
    assert runs.stale([catalog.VECTOR_ADD, catalog.SOFTMAX], gpu, tmp_path) == [
        catalog.VECTOR_ADD,
        catalog.SOFTMAX,
    ]
    text = runs.describe([catalog.VECTOR_ADD], gpu, tmp_path)
    assert "vector_add" in text and "kernels/vector_add.py::add_kernel changed" in text


def test_describe_gives_each_benchmarks_points_and_last_wall_time(tmp_path):
    record = synthetic_record(n_x=99)
    record["wall_s"] = 90.0
    records.write(record, tmp_path)
    gpu = records.gpu_slug(record["provenance"]["gpu"])
    text = runs.describe([catalog.VECTOR_ADD, catalog.SOFTMAX], gpu, tmp_path)
    points = len(catalog.VECTOR_ADD.x_values) * len(catalog.VECTOR_ADD.providers)
    assert f"{points} points, took 1.5 min last time" in text
    assert "softmax" in text and "time not recorded; no record" in text
    assert runs.describe([], gpu, tmp_path) == f"nothing to measure on {gpu}"


def test_wall_times_are_read_from_the_records_and_never_guessed(tmp_path):
    record = synthetic_record(n_x=99)
    record["wall_s"] = 90.0
    records.write(record, tmp_path)
    records.write(synthetic_record(catalog.SOFTMAX, n_x=99), tmp_path)  # wall_s None
    gpu = records.gpu_slug(record["provenance"]["gpu"])
    assert runs.last_wall_s(catalog.VECTOR_ADD, gpu, tmp_path) == 90.0
    assert runs.last_wall_s(catalog.SOFTMAX, gpu, tmp_path) is None
    assert runs.last_wall_s(catalog.MATMUL, gpu, tmp_path) is None  # no record
    assert runs.took(90.0) == "took 1.5 min last time" and runs.took(None) == "time not recorded"
    assert runs.about([90.0, None, 30.0]) == "about 2.0 min for the 2 whose last wall time is recorded"
    assert runs.about([None, None]) == "no wall time recorded"


def test_the_progress_bar_names_each_point_on_the_stream_given(capsys):
    import io

    out = io.StringIO()
    with runs.progress([catalog.VECTOR_ADD], "gpu", file=out) as bar:
        bar.step("vector_add size=4096 triton")
    assert "vector_add size=4096 triton" in out.getvalue()
    assert "size=4096" not in capsys.readouterr().err


def _slower(record, provider, factor):
    """A copy of ``record`` in which ``provider`` takes ``factor`` times as long."""
    out = copy.deepcopy(record)
    for row in out["rows"]:
        if row["provider"] == provider:
            for key in ("ms", "ms_p20", "ms_p80"):
                row[key] *= factor
    return out


def test_compare_flags_only_our_providers_whose_whole_range_falls_below_the_committed_one():
    # synthetic_record: p20 and p80 are 0.9 and 1.1 times the median, in both runs: the
    # ranges of the ratio part when ours loses more than (0.9 / 1.1)^2 = 0.67 of its ratio.
    bench = catalog.VECTOR_ADD
    old = synthetic_record(bench, n_x=2)
    for factor in (1.1, 1.4):  # slower, within the spreads of the two runs
        lines, worse = runs.compare(bench, old, _slower(old, "triton", factor))
        assert worse == [] and any("committed" in line for line in lines)
    lines, worse = runs.compare(bench, old, _slower(old, "triton", 1.6))
    assert len(worse) == 2 and all("triton" in w for w in worse)
    assert sum("REGRESSION" in line for line in lines) == 2
    # Another library's provider getting slower is no regression of ours.
    theirs = [p.key for p in catalog.SOFTMAX.providers if p.key not in ("triton", catalog.SOFTMAX.baseline)]
    one = synthetic_record(catalog.SOFTMAX, n_x=1)
    assert runs.compare(catalog.SOFTMAX, one, one)[1] == []
    assert runs.compare(catalog.SOFTMAX, one, _slower(one, theirs[0], 3))[1] == []
    lines, worse = runs.compare(bench, None, old)
    assert worse == [] and any("no committed point" in line for line in lines)


def test_compare_needs_a_drop_beyond_the_floor_where_the_spreads_are_tight():
    # Spreads of 0.2% (a long GPU-bound kernel): a 1% slowdown puts the whole range below
    # the committed one, within the drift between runs; 5% is a regression.
    bench = catalog.VECTOR_ADD
    old = copy.deepcopy(synthetic_record(bench, n_x=1))
    for row in old["rows"]:
        row["ms_p20"], row["ms_p80"] = row["ms"] * 0.999, row["ms"] * 1.001
    assert runs.compare(bench, old, _slower(old, "triton", 1.01))[1] == []
    assert len(runs.compare(bench, old, _slower(old, "triton", 1.05))[1]) == 1


def test_dry_run_lists_what_is_stale_without_a_gpu(tmp_path, capsys):
    record = synthetic_record(n_x=99)
    records.write(record, tmp_path)
    gpu = records.gpu_slug(record["provenance"]["gpu"])
    assert main(["--stale", "--dry-run", "--gpu", gpu, "--out", str(tmp_path), "vector_add", "softmax"]) == 0
    out = capsys.readouterr().out
    assert "1 benchmarks to measure" in out and "softmax" in out and "vector_add " not in out
    assert main(["no_such_benchmark", "--dry-run"]) == 2


def test_help_is_plain_text(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "--stale" in out and "--compare" in out and "``" not in out and ":func:" not in out


def test_traced_sources_names_the_modules_whose_functions_ran():
    from gpuperf.kernels import softmax

    ran: set[str] = set()
    with traced_sources(ran):
        softmax(torch.randn(2, 8, device="cuda" if torch.cuda.is_available() else "cpu"))
    assert {"kernels/softmax.py", "kernels/_validation.py"} <= ran
    # Only the code under study: not the tests, the bench or torch.
    assert all(rel.startswith(("kernels/", "models/", "_runtime.py")) for rel in ran)
    assert ran <= set(sources.closure(catalog.SOFTMAX.sources))
