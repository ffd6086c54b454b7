"""What the tests of the pages' topic modules share: committed records rendered as text,
and a copy of the measurements to take records away from."""

import json
import shutil

import pytest

from gpuperf.bench import catalog, records, sources
from gpuperf.pages import report
from gpuperf.pages.tables import FORMAT_VAR


@pytest.fixture(autouse=True)
def records_as_text(monkeypatch):
    """Pages read the committed records (never measure) and print plain text.
    Autouse in every module that imports it."""
    monkeypatch.setenv(FORMAT_VAR, "text")
    monkeypatch.setenv("GPUPERF_BENCH", "records")
    monkeypatch.setattr(report, "can_measure", lambda: False)


def copy_measurements(tmp_path, monkeypatch, drop=()):
    """The committed measurements copied to ``tmp_path`` and made the ones pages read
    (``GPUPERF_MEASUREMENTS``), without the files named in ``drop`` (on every GPU)."""
    root = tmp_path / "measurements"
    shutil.copytree(records.measurements_dir(), root)
    for name in drop:
        for path in root.glob(f"*/{name}"):
            path.unlink()
    monkeypatch.setenv("GPUPERF_MEASUREMENTS", str(root))
    return root


def current_measurements(tmp_path, monkeypatch):
    """The committed measurements copied to ``tmp_path`` with every record re-keyed to the
    code as it stands (its ``sources`` hashed again), and made the ones pages read: as if
    every GPU had measured at this commit. For the tests of how a page draws several GPUs,
    which must not depend on which GPUs' records happen to be current."""
    root = copy_measurements(tmp_path, monkeypatch)
    for path in root.glob("*/*.json"):
        record = json.loads(path.read_text())
        if not isinstance(record, dict) or not isinstance(record.get("sources"), dict):
            continue
        stored = record["sources"]
        # The benchmark's own sources too: a config entry counts where the code uses it
        # (sources.config_uses), and the module that uses it may hold no kernel of its own.
        named = list(catalog.by_name(record["benchmark"]).sources) if record.get("benchmark") else []
        present = [rel for rel in {*sources.files(stored), *named} if (sources.PACKAGE_ROOT / rel).is_file()]
        record["sources"] = sources.hashes(present, host=sources.is_host_keyed(stored))
        record["sources_sha256"] = sources.combined_sha256(record["sources"])
        path.write_text(json.dumps(record))
    return root
