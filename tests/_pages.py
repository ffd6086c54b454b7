"""What the tests of the pages' topic modules share: committed records rendered as text,
and a copy of the measurements to take records away from."""

import shutil

import pytest

from gpuperf.bench import records
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
