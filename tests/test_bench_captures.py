"""Captures: build, write, load, staleness and the errors for bad names, payloads and files."""

import json

import pytest

from gpuperf.bench import captures, records
from tests._params import with_changed_source
from tests.test_bench_records import fake_provenance

SOURCES = ("kernels/vector_add.py",)


def make(name="ncu_test", payload=None, sources=SOURCES, gpu="Test GPU 80GB"):
    return captures.build(
        name,
        tool="ncu --metrics x",
        payload={"rows": [{"a": 1.5}]} if payload is None else payload,
        sources=sources,
        provenance=fake_provenance(gpu),
    )


def test_write_then_load_round_trips(tmp_path):
    capture = make()
    path = captures.write(capture, tmp_path)
    assert path == tmp_path / records.gpu_slug("Test GPU 80GB") / "captures" / "ncu_test.json"
    assert captures.load("ncu_test", records.gpu_slug("Test GPU 80GB"), tmp_path) == capture
    assert captures.gpus_with("ncu_test", tmp_path) == [records.gpu_slug("Test GPU 80GB")]
    assert captures.gpus_with("other", tmp_path) == []


def test_reference_gpu_is_listed_first(tmp_path, monkeypatch):
    for gpu in ("A GPU", "Z GPU"):
        captures.write(make(gpu=gpu), tmp_path)
    monkeypatch.setenv("GPUPERF_GPU", records.gpu_slug("Z GPU"))
    assert captures.gpus_with("ncu_test", tmp_path) == [records.gpu_slug("Z GPU"), records.gpu_slug("A GPU")]


def test_a_fresh_capture_is_not_stale_and_a_changed_source_is():
    capture = make()
    assert captures.staleness(capture) == []
    (reason,) = captures.staleness(with_changed_source(capture, "kernels/vector_add.py"))
    assert "kernels/vector_add.py" in reason and "changed" in reason


def test_caption_names_the_gpu_and_the_tool():
    text = captures.caption(make())
    assert "Test GPU 80GB" in text and "ncu --metrics x" in text


def test_artifact_sits_beside_its_capture(tmp_path):
    path = captures.artifact_path("trace", "gpu-a", ".json.gz", tmp_path)
    assert path == tmp_path / "gpu-a" / "captures" / "trace.json.gz"
    with pytest.raises(ValueError, match="suffix"):
        captures.artifact_path("trace", "gpu-a", "json", tmp_path)


@pytest.mark.parametrize("name", ["", "Has-Caps", "a/b", "../x", 3])
def test_bad_names_are_refused(name):
    with pytest.raises(ValueError, match="name must be"):
        make(name=name)


@pytest.mark.parametrize(
    ("payload", "match"), [([1, 2], "payload must be a dict"), ({"x": object()}, "JSON-able")]
)
def test_bad_payloads_are_refused(payload, match):
    with pytest.raises(ValueError, match=match):
        make(payload=payload)


def test_missing_capture_says_how_to_make_one(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"Run `bash scripts/device_run\.sh profiling`"):
        captures.load("absent", "gpu-a", tmp_path, how="bash scripts/device_run.sh profiling")


def test_malformed_files_are_refused(tmp_path):
    capture = make()
    del capture["provenance"]["driver"]
    with pytest.raises(ValueError, match="provenance lacks"):
        captures.write(capture, tmp_path)
    path = captures.capture_path("ncu_test", "gpu-a", tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"name": "ncu_test"}))
    with pytest.raises(ValueError, match="missing key"):
        captures.load("ncu_test", "gpu-a", tmp_path)


def test_committed_captures_are_well_formed_and_in_their_gpus_folder():
    for path in sorted(records.measurements_dir().glob("*/captures/*.json")):
        capture = json.loads(path.read_text())
        assert captures.validate(capture) == [], path
        assert capture["name"] == path.stem
        assert records.gpu_slug(capture["provenance"]["gpu"]) == path.parent.parent.name
