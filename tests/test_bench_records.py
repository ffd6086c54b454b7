"""The record format, the committed records, and how stale or missing ones are reported."""

import copy
import json

import pytest

from gpuperf.bench import catalog, metrics, records
from gpuperf.bench.provenance import FIELDS, gpu_slug
from gpuperf.bench.report import load
from gpuperf.bench.runner import build_record

COMMITTED = sorted(p for p in records.measurements_dir().glob("*/*.json") if p.name != "hardware.json")


def fake_provenance(gpu="Test GPU 80GB"):
    return {k: "test" for k in FIELDS} | {"gpu": gpu, "sm_count": 1, "memory_gib": 1.0, "l2_bytes": 1000}


def synthetic_record(benchmark=catalog.VECTOR_ADD, gpu="Test GPU 80GB"):
    """A well-formed record with made-up times: for testing the format only."""
    rows = []
    for x in benchmark.x_values[:3]:
        for i, p in enumerate(benchmark.providers):
            ms = 1.0 + i
            work = benchmark.work(x)
            rows.append({
                "x": x, "provider": p.key, "label": p.label, "status": "ok", "work": work,
                "ms": ms, "ms_p20": ms * 0.9, "ms_p80": ms * 1.1,
                "value": metrics.rate(benchmark.metric, work, ms),
                "value_p20": metrics.rate(benchmark.metric, work, ms * 1.1),
                "value_p80": metrics.rate(benchmark.metric, work, ms * 0.9),
            })  # fmt: skip
    ceiling = {"key": "copy_gbps", "label": "copy bandwidth", "unit": "GB/s", "value": 3000.0}
    return build_record(benchmark, rows, ceiling, fake_provenance(gpu))


def test_gpu_slug():
    assert gpu_slug("NVIDIA H100 80GB HBM3") == "nvidia-h100-80gb-hbm3"
    assert gpu_slug("NVIDIA H200") == "nvidia-h200"


def test_write_then_read_round_trips(tmp_path):
    record = synthetic_record()
    path = records.write(record, tmp_path)
    assert path == tmp_path / "test-gpu-80gb" / "vector_add.json"
    assert records.read(path) == json.loads(json.dumps(record))


@pytest.mark.parametrize(
    "breakage, problem",
    [
        (lambda r: r.pop("provenance"), "missing key 'provenance'"),
        (lambda r: r["provenance"].pop("driver"), "provenance lacks 'driver'"),
        (lambda r: r["ceiling"].pop("value"), "ceiling lacks 'value'"),
        (lambda r: r["rows"][0].pop("ms"), "row 0 lacks ['ms']"),
        (lambda r: r["rows"][1].update(ms_p20=99.0), "row 1: percentiles out of order"),
        (lambda r: r.update(schema_version=0), "schema_version 0"),
        (lambda r: r.update(rows=[]), "no rows"),
    ],
    ids=[
        "no-provenance",
        "no-driver",
        "no-ceiling-value",
        "row-without-ms",
        "percentiles",
        "schema",
        "empty",
    ],
)
def test_malformed_records_are_refused(tmp_path, breakage, problem):
    record = synthetic_record()
    breakage(record)
    assert any(problem in p for p in records.validate(record))
    with pytest.raises(ValueError, match="malformed"):
        records.write(record, tmp_path)


def test_changed_kernel_source_makes_a_record_stale():
    record = synthetic_record()
    assert not any("kernel sources" in r for r in records.staleness(record, catalog.VECTOR_ADD))
    record["sources_sha256"] = "0" * 64
    assert any("kernel sources" in r for r in records.staleness(record, catalog.VECTOR_ADD))


def test_unmeasured_sizes_make_a_record_stale():
    # synthetic_record measures only the first three sizes.
    reasons = records.staleness(synthetic_record(), catalog.VECTOR_ADD)
    assert any("never measured" in r for r in reasons)


def test_missing_record_is_reported(monkeypatch, tmp_path):
    monkeypatch.setenv("GPUPERF_MEASUREMENTS", str(tmp_path))
    result = load(catalog.SOFTMAX, gpu="no-such-gpu")
    assert result.record is None and result.source == "missing"
    assert "MISSING" in result.notes[0] and "nox -s bench" in result.notes[0]
    assert "MISSING" in result.table()


def test_stale_record_is_reported(monkeypatch, tmp_path):
    monkeypatch.setenv("GPUPERF_MEASUREMENTS", str(tmp_path))
    record = synthetic_record()
    record["sources_sha256"] = "0" * 64
    records.write(record, tmp_path)
    result = load(catalog.VECTOR_ADD, gpu="test-gpu-80gb")
    assert result.source == "committed"
    assert any(n.startswith("STALE") for n in result.notes)
    assert result.table().startswith("STALE")


def test_there_are_committed_records():
    assert COMMITTED, f"no records under {records.measurements_dir()}"


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_committed_record_is_consistent(path):
    """Every committed number follows from its time by the one formula: nothing edited by hand."""
    record = records.read(path)
    benchmark = catalog.by_name(record["benchmark"])
    assert record["metric"] == benchmark.metric
    assert gpu_slug(record["provenance"]["gpu"]) == path.parent.name
    for row in record["rows"]:
        assert row["work"] == benchmark.work(row["x"])
        if row["status"] == "ok":
            assert row["value"] == pytest.approx(metrics.rate(record["metric"], row["work"], row["ms"]))
            assert row["value_p20"] <= row["value"] <= row["value_p80"]
        else:
            assert row["value"] is None and row.get("message")


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_committed_record_has_hardware_beside_it(path):
    hw = json.loads((path.parent / "hardware.json").read_text())
    record = records.read(path)
    key = record["ceiling"]["key"]
    assert hw["ceilings"][key]["value"] == pytest.approx(record["ceiling"]["value"])


def test_synthetic_record_is_not_mutated_by_validation():
    record = synthetic_record()
    before = copy.deepcopy(record)
    records.validate(record)
    assert record == before
