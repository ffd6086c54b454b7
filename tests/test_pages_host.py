"""The host-time table: every op with a target, its ratio to PyTorch's op and the verdict."""

import re

import pytest

from gpuperf.bench.catalog import HOST_OVERHEAD, VECTOR_ADD
from gpuperf.bench.catalog.host import HOST_TARGETS
from gpuperf.pages import report
from gpuperf.pages.host import targets_reading, targets_table


@pytest.fixture(scope="module")
def host():
    return report.load(HOST_OVERHEAD)


def test_each_targeted_op_gets_its_ratio_and_a_verdict_that_follows_from_it(host):
    table = targets_table(host)
    ours, theirs = host.values("triton"), host.values("torch")
    for op, target in HOST_TARGETS.items():
        if ours.get(op) is None or theirs.get(op) is None:
            assert not re.search(rf"^\s*{op}\s", table, re.M)
            continue
        row = re.search(rf"^\s*{op}\s+(\S+)\s+(\S+)\s+(\S+)×\s+≤ (\S+)×\s+(.+)$", table, re.M)
        assert row, f"{op} has no row in\n{table}"
        ratio = ours[op] / theirs[op]
        assert float(row.group(3)) == pytest.approx(ratio, abs=0.006)
        assert float(row.group(4)) == target
        assert (row.group(5).strip() == "met") == (ratio <= target), row.group(0)
    assert table.rstrip().endswith(host.measured_on())


def test_a_missed_target_says_by_how_much(host):
    op = next(iter(HOST_TARGETS))
    ratio = host.values("triton")[op] / host.values("torch")[op]
    table = targets_table(host, {op: ratio / 2})
    assert re.search(rf"{op}\s.*missed by 100%", table), table


def test_another_benchmarks_result_is_refused():
    with pytest.raises(ValueError, match="host_overhead"):
        targets_table(report.load(VECTOR_ADD))


def test_the_reading_names_each_op_on_the_side_of_its_target_the_table_puts_it(host):
    reading = " ".join(targets_reading(host).split())  # one line, as a reader reads it
    ours, theirs = host.values("triton"), host.values("torch")
    ratios = {op: ours[op] / theirs[op] for op in HOST_TARGETS if ours.get(op) and theirs.get(op)}
    met_part, _, missed_part = reading.partition("missed by")
    for op, ratio in ratios.items():
        side = met_part if ratio <= HOST_TARGETS[op] else missed_part
        assert f"{op} ({ratio:.2f}×)" in side, reading
    missed = [op for op in ratios if ratios[op] > HOST_TARGETS[op]]
    order = sorted(missed, key=lambda op: -ratios[op] / HOST_TARGETS[op])
    places = [missed_part.index(f"{op} (") for op in order]
    assert places == sorted(places), reading
