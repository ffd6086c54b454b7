"""Re-keying committed records without measuring again (:mod:`gpuperf.bench.rekey`): a
record whose measured code is unchanged gets the current hashes and stays current; one
whose kernels changed is left for a new measurement."""

import json

from gpuperf.bench import catalog, records, rekey, sources
from tests._params import with_changed_source


def _record(name: str) -> dict:
    return records.read(records.record_path(name, records.REFERENCE_GPU))


def test_a_record_hashed_whole_that_still_describes_the_code_gets_device_keys(tmp_path):
    record = _record("softmax")
    whole = sources.hashes(catalog.SOFTMAX.sources, host=True)  # how records were keyed before
    keyed = rekey.rekey(whole, catalog.SOFTMAX.sources, "unknown", host=False, checkout=tmp_path)
    assert keyed == sources.hashes(catalog.SOFTMAX.sources) == record["sources"]
    assert "kernels/softmax.py::_softmax_kernel" in keyed and "kernels/launch.py" not in keyed
    assert records.staleness({**record, "sources": keyed}, catalog.SOFTMAX) == []


def test_a_record_whose_kernel_changed_is_left_stale(tmp_path):
    changed = with_changed_source(_record("softmax"), "kernels/softmax.py")["sources"]
    assert rekey.rekey(changed, catalog.SOFTMAX.sources, "unknown", host=False, checkout=tmp_path) is None
    # A commit git does not know cannot vouch for it either.
    assert (
        rekey.rekey(changed, catalog.SOFTMAX.sources, "0123456789ab", host=False, checkout=tmp_path) is None
    )


def test_rekey_records_writes_only_what_it_proves(tmp_path):
    gpu = tmp_path / "some-gpu"
    gpu.mkdir()
    current, changed = _record("softmax"), with_changed_source(_record("vector_add"), "kernels/vector_add.py")
    whole = sources.hashes(catalog.SOFTMAX.sources, host=True)
    old = {**current, "sources": whole, "sources_sha256": sources.combined_sha256(whole)}
    (gpu / "softmax.json").write_text(json.dumps(old))
    (gpu / "vector_add.json").write_text(json.dumps(changed))
    benchmarks = {b.name: b for b in (catalog.SOFTMAX, catalog.VECTOR_ADD)}
    outcome = rekey.rekey_records(tmp_path, benchmarks, tmp_path, log=lambda line: None)
    assert outcome == {"re-keyed": ["some-gpu/softmax"], "unchanged": [], "stale": ["some-gpu/vector_add"]}
    assert json.loads((gpu / "softmax.json").read_text())["sources"] == current["sources"]
    assert json.loads((gpu / "vector_add.json").read_text()) == changed
