"""The committed measurements a CPU build shows are current where the site needs them: every
catalog benchmark has a record on the reference GPU (the H100) that describes the code as it
stands, and every capture a page shows is committed and current there.

Records and captures of other GPUs are welcome and never required: a page draws them while
they are current and leaves them out once their code changes (:mod:`gpuperf.pages.report`).
Each is still checked to be well formed, and to have hashed every module that ran.

A change to a benchmarked kernel fails here until its records are measured again on the
reference GPU (``python -m gpuperf.bench --stale``) and committed.
"""

import pytest

from gpuperf.bench import captures, catalog, records, sources
from gpuperf.bench.captures import COMMANDS

REFERENCE = records.REFERENCE_GPU
ALL_RECORDS = sorted(p for p in records.measurements_dir().glob("*/*.json") if p.name != "hardware.json")


@pytest.mark.parametrize("bench", catalog.ALL, ids=[b.name for b in catalog.ALL])
def test_every_benchmark_has_a_current_record_on_the_reference_gpu(bench):
    path = records.record_path(bench.name, REFERENCE)
    assert path.is_file(), f"no record of {bench.name} on {REFERENCE}: `python -m gpuperf.bench {bench.name}`"
    assert records.staleness(records.read(path), bench) == []


@pytest.mark.parametrize("path", ALL_RECORDS, ids=[f"{p.parent.name}/{p.stem}" for p in ALL_RECORDS])
def test_every_committed_record_is_well_formed_and_hashed_what_ran(path):
    record = records.read(path)  # raises on a malformed record
    assert record["benchmark"] in {b.name for b in catalog.ALL}, f"{path}: no such benchmark"
    if record["ran"] is not None:
        # Every module that ran is one the record followed (its kernels, constants and
        # config tables hashed; its launch glue read and left out where device time counts).
        bench = catalog.by_name(record["benchmark"])
        unhashed = set(record["ran"]) - set(sources.closure(bench.sources))
        assert not unhashed, f"{path}: these modules ran but the record does not hash them: {unhashed}"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_capture_the_pages_show_is_committed_and_current_on_the_reference_gpu(name):
    assert REFERENCE in captures.gpus_with(name), f"no {name} capture on {REFERENCE}: `{COMMANDS[name]}`"
    assert captures.staleness(captures.load(name, REFERENCE)) == []
