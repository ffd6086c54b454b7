"""The committed measurements a CPU build shows are fresh: every catalog benchmark has a
record on each GPU in docs/measurements, and none is stale (its kernels, catalog rows
and ceilings are those of this checkout); every capture a page shows is committed for
at least one GPU and fresh on each.

A change to a benchmarked kernel fails here until someone re-measures on a GPU
(``nox -s bench``, or ``bash scripts/device_run.sh ...``) and commits the records.
"""

import pytest

from gpuperf.bench import captures, catalog, records
from gpuperf.pages.captures import HOW

GPUS = ("nvidia-h100-80gb-hbm3", "nvidia-h200")


@pytest.mark.parametrize("gpu", GPUS)
@pytest.mark.parametrize("bench", catalog.ALL, ids=[b.name for b in catalog.ALL])
def test_every_benchmark_has_a_fresh_record_on_each_gpu(bench, gpu):
    path = records.record_path(bench.name, gpu)
    why = catalog.pending(bench.name, gpu)
    if why is not None:
        assert not path.is_file(), f"{bench.name} has a record on {gpu}: remove it from catalog.PENDING"
        pytest.skip(why)
    assert path.is_file(), f"no record of {bench.name} on {gpu}"
    assert records.staleness(records.read(path), bench) == []


@pytest.mark.parametrize("name", sorted(HOW))
def test_every_capture_the_pages_show_is_committed_and_fresh(name):
    # The profiling guide's captures are the H100's alone; the strategy guide's, both GPUs'.
    gpus = captures.gpus_with(name)
    assert gpus, f"no {name} capture on any GPU"
    for gpu in gpus:
        assert captures.staleness(captures.load(name, gpu)) == [], gpu
