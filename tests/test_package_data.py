"""The committed records ship inside the package and are found from anywhere: every file
of ``src/gpuperf/measurements`` is package data in pyproject.toml, the folder is read
through importlib.resources (a zipped install included), the writers refuse the
records of an installed package, and each notice names a command that runs where
gpuperf runs (a checkout, or a ``pip install``)."""

from __future__ import annotations

import fnmatch
import json
import zipfile
from pathlib import Path, PurePosixPath

import pytest
import torch

from gpuperf.bench import captures, records
from gpuperf.pages import hardware

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "gpuperf"


def _package_data(package: str) -> list[str]:
    tomllib = pytest.importorskip("tomllib")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return config["tool"]["setuptools"]["package-data"][package]


def _matches(relative: PurePosixPath, pattern: str) -> bool:
    """setuptools' package-data glob: ``*`` stays within one folder."""
    parts = PurePosixPath(pattern).parts
    return len(parts) == len(relative.parts) and all(
        fnmatch.fnmatchcase(part, glob) for part, glob in zip(relative.parts, parts, strict=True)
    )


def test_every_committed_record_is_package_data():
    patterns = _package_data("gpuperf")
    files = [p for p in (PACKAGE / "measurements").rglob("*") if p.is_file()]
    assert any(p.name == "hardware.json" for p in files) and any("captures" in p.parts for p in files)
    left_out = [
        str(p.relative_to(PACKAGE))
        for p in files
        if not any(_matches(PurePosixPath(p.relative_to(PACKAGE).as_posix()), g) for g in patterns)
    ]
    assert left_out == [], f"not in pyproject.toml's package-data, so not installed: {left_out}"


def test_the_records_are_read_from_the_package_itself(monkeypatch):
    monkeypatch.delenv(records.MEASUREMENTS_VAR, raising=False)
    assert records.measurements_dir() == PACKAGE / "measurements"
    assert (records.measurements_dir() / records.REFERENCE_GPU / "hardware.json").is_file()
    # Run from this checkout, the committed folder is where measurements are written.
    assert records.checkout_root() == ROOT
    assert records.output_dir() == PACKAGE / "measurements"


def test_a_zipped_install_reads_a_copy_of_its_records(tmp_path, monkeypatch):
    archive = tmp_path / "gpuperf.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("gpuperf/measurements/gpu-a/hardware.json", '{"ceilings": {}}')
        zipped.writestr("gpuperf/measurements/gpu-a/captures/trace.json.gz", b"\x1f\x8b")
    monkeypatch.delenv(records.MEASUREMENTS_VAR, raising=False)
    monkeypatch.setattr(records.resources, "files", lambda package: zipfile.Path(archive, f"{package}/"))
    folder = records.measurements_dir()
    assert folder.is_dir() and folder != tmp_path
    assert json.loads((folder / "gpu-a" / "hardware.json").read_text()) == {"ceilings": {}}
    assert (folder / "gpu-a" / "captures" / "trace.json.gz").read_bytes() == b"\x1f\x8b"
    assert records.measurements_dir() == folder  # copied once


@pytest.fixture
def installed(monkeypatch):
    """gpuperf as ``pip install`` leaves it: no checkout around the package."""
    monkeypatch.delenv(records.MEASUREMENTS_VAR, raising=False)
    monkeypatch.setattr(records, "checkout_root", lambda: None)


def test_an_installed_package_refuses_to_write_its_records(installed, tmp_path):
    with pytest.raises(RuntimeError, match=r"read-only: pass --out FOLDER"):
        records.output_dir()
    assert records.output_dir(tmp_path) == tmp_path
    assert records.measurements_dir() == PACKAGE / "measurements"  # still read


def test_an_installed_package_writes_where_it_is_told(installed, tmp_path, monkeypatch):
    monkeypatch.setenv(records.MEASUREMENTS_VAR, str(tmp_path))
    assert records.output_dir() == tmp_path
    assert records.bench_command("softmax") == "python -m gpuperf.bench softmax"


def test_notices_name_commands_that_run_where_gpuperf_is_installed(installed):
    assert records.bench_command("softmax") == "python -m gpuperf.bench softmax --out FOLDER"
    assert records.advice(captures.command("timing_methods")) == (
        "run `python scripts/profile_capture.py` on a GPU (from a git checkout of gpuperf)"
    )
    with pytest.raises(FileNotFoundError) as err:
        hardware.ceilings("nvidia-nothing")
    assert "run `python -m gpuperf.bench --out FOLDER` on that GPU" in str(err.value)
    assert "nox" not in str(err.value)


def test_notices_in_a_checkout_name_the_commands_as_they_are(monkeypatch):
    monkeypatch.delenv(records.MEASUREMENTS_VAR, raising=False)
    assert records.bench_command("--stale") == "python -m gpuperf.bench --stale"
    assert records.advice("python scripts/explore_configs.py", "that GPU") == (
        "run `python scripts/explore_configs.py` on that GPU"
    )


def test_the_bench_command_of_an_installed_package_refuses_without_out(
    installed, tmp_path, monkeypatch, capsys
):
    """On a GPU, ``python -m gpuperf.bench`` from a pip-installed gpuperf measures nothing
    and says how to write elsewhere; with ``--out`` it measures."""
    from gpuperf.bench import __main__ as command
    from gpuperf.bench import hardware as bench_hardware
    from gpuperf.bench import runner

    monkeypatch.setenv("TRITON_INTERPRET", "0")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 0))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "NVIDIA H100 80GB HBM3")
    monkeypatch.setattr(bench_hardware, "measure_ceilings", lambda: {})
    measured = []
    monkeypatch.setattr(
        runner, "run", lambda benchmark, **kw: measured.append(benchmark.name) or {"rows": []}
    )
    monkeypatch.setattr(records, "write", lambda record, root: root / "softmax.json")
    assert command.main(["--no-tune", "softmax"]) == 2
    assert "read-only: pass --out FOLDER" in capsys.readouterr().err
    assert measured == []
    assert command.main(["--no-tune", "--out", str(tmp_path), "softmax"]) == 0
    assert measured == ["softmax"]


def test_a_copied_tutorial_on_a_gpu_draws_the_shipped_gpus_beside_its_live_run(installed, monkeypatch):
    """``show(SOFTMAX)`` on a GPU with no committed record (an A100 here, mocked): the run
    is live, and every GPU whose shipped record is current is drawn beside it."""
    from gpuperf.bench import catalog, runner
    from gpuperf.pages import report

    committed = records.read(records.record_path("softmax", records.REFERENCE_GPU))
    live = {**committed, "provenance": {**committed["provenance"], "gpu": "NVIDIA A100-SXM4-80GB"}}
    monkeypatch.setattr(report, "can_measure", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "NVIDIA A100-SXM4-80GB")
    monkeypatch.setattr(runner, "run", lambda benchmark, **kw: live)
    result = report.run_or_load(catalog.SOFTMAX)
    assert result.source == "live" and result.gpu == "NVIDIA A100-SXM4-80GB"
    shipped = report.gpus_with_current(catalog.SOFTMAX)
    assert records.REFERENCE_GPU in shipped
    assert [records.gpu_slug(r.gpu) for r in result.others] == shipped
    assert all(r.source == "committed" and not r.notes for r in result.others)
    assert len(result.gpus()) == len(shipped) + 1
