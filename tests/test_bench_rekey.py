"""Re-keying committed records without measuring again (:mod:`gpuperf.bench.rekey`): a
record whose measured code is unchanged gets the current hashes and stays current; one
whose kernels changed is left for a new measurement."""

import json
import os
import shutil

import pytest

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


def _commit_of(repo, rel: str, text: str) -> str:
    """A git repository at ``repo`` whose one commit holds ``src/gpuperf/<rel>`` of ``text``."""
    import subprocess

    path = repo / "src" / "gpuperf" / rel
    path.parent.mkdir(parents=True)
    path.write_text(text)
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    for args in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "old glue"]):
        subprocess.run(["git", *args], cwd=repo, check=True, env={**os.environ, **env})
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True, text=True
    ).stdout


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_ran_names_the_modules_that_now_define_what_a_gone_module_defined(tmp_path):
    """A module of launch glue gone since the record was measured (its functions moved): ``ran``
    names the module that defines them now, and leaves out one whose code is gone with it."""
    glue = "PLAIN_TENSORS = ()\n\n\ndef option_key(value):\n    return value\n\n\n__all__ = ['option_key']\n"
    commit = _commit_of(tmp_path, "kernels/old_glue.py", glue).strip()
    softmax = _record("softmax")
    ran = ["kernels/old_glue.py", "kernels/softmax.py"]
    assert rekey.ran_now(ran, softmax["sources"], commit, checkout=tmp_path) == [
        "kernels/launch.py",
        "kernels/softmax.py",
    ]
    other = _commit_of(tmp_path / "third", "kernels/gone.py", "def nothing_defines_this_now():\n    pass\n")
    gone = ["kernels/gone.py", "kernels/softmax.py"]
    assert rekey.ran_now(gone, softmax["sources"], other.strip(), checkout=tmp_path / "third") == [
        "kernels/softmax.py"
    ]
    # A gone module the record hashed stays (the record is stale), and so does a ran of modules
    # that all exist, or none.
    hashed = {"kernels/old_glue.py": "0" * 64, **softmax["sources"]}
    assert rekey.ran_now(ran, hashed, commit, checkout=tmp_path) == ran
    assert rekey.ran_now(softmax["ran"], softmax["sources"], commit, checkout=tmp_path) is softmax["ran"]
    assert rekey.ran_now(None, softmax["sources"], commit, checkout=tmp_path) is None
