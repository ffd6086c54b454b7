"""The host-time table: every op with a target, its ratio to PyTorch's op and the verdict."""

import re

import pytest

from gpuperf.bench.catalog import HOST_OVERHEAD, VECTOR_ADD
from gpuperf.bench.catalog.host import HOST_TARGETS
from gpuperf.pages import host as host_page
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


def _breakdown(ours: tuple, sdpa: tuple) -> dict:
    names = [name for name, _ in host_page.TRAINING_PARTS]
    parts = dict(zip(names, ours, strict=True))
    parts.update({f"SDPA {n}": v for n, v in zip(names, sdpa, strict=True)})
    return {"name": host_page.BREAKDOWN, "payload": {"us_per_call": {"attention_train": parts}}}


def test_the_training_step_table_shows_each_part_ours_beside_sdpa():
    table = host_page.training_step_table(_breakdown((20.0, 85.0, 325.0), (21.0, 26.0, 210.0)))
    for name, _ in host_page.TRAINING_PARTS:
        assert name in table
    assert "85.0" in table and "26.0" in table and "325.0" in table and "210.0" in table


def test_the_training_step_reading_is_the_differences_of_the_table():
    reading = host_page.training_step_reading(_breakdown((20.0, 85.0, 325.0), (21.0, 26.0, 210.0)))
    # Recording adds 85 - 20 = 65 and 26 - 21 = 5; the backward 325 - 85 = 240 and 210 - 26 = 184.
    assert "adds 65 µs per call to ours and 5 µs per call to SDPA" in reading.replace("\n", " ")
    assert "adds 240 µs to ours and 184" in reading.replace("\n", " ")


def test_a_recorded_forward_timed_faster_than_the_plain_one_reads_as_nothing_measurable():
    # SDPA's recorded forward 26 µs against 30 plain: noise, not a negative cost.
    reading = host_page.training_step_reading(_breakdown((20.0, 85.0, 325.0), (30.0, 26.0, 210.0)))
    text = reading.replace("\n", " ")
    assert "nothing measurable to SDPA (its recorded forward timed 4 µs faster)" in text
    assert "-4" not in text
    assert "so SDPA's 4 µs is noise" in text


def test_the_reading_sets_the_capture_beside_the_records_step_as_another_run(host):
    capture = _breakdown((20.0, 85.0, 325.0), (21.0, 26.0, 210.0))
    capture["provenance"] = {"gpu": "NVIDIA H100 80GB HBM3"}
    text = host_page.training_step_reading(capture, host).replace("\n", " ")
    gpu = next(g for g in host.gpus() if g.folder == "nvidia-h100-80gb-hbm3")
    ours, theirs = gpu.values("triton")["attention_train"], gpu.values("torch")["attention_train"]
    assert f"325 µs ours and 210 µs SDPA's ({325 / 210:.2f}×)" in text
    assert f"attention_train step, {ours:.0f} and {theirs:.0f} µs ({ours / theirs:.2f}×)" in text
    calls = HOST_OVERHEAD.host_calls("attention_train")
    assert f"same timer and {calls} calls a round, in another run" in text
    # Without the record, or for a GPU the record does not have, no such sentence.
    assert "run of its own" not in host_page.training_step_reading(capture)
    capture["provenance"] = {"gpu": "NVIDIA B200"}
    assert "run of its own" not in host_page.training_step_reading(capture, host)


def _with_spread(capture: dict, spread: dict) -> dict:
    capture["payload"]["spread"] = {"attention_train": spread}
    capture["payload"]["rounds"] = 10
    return capture


def test_the_spread_shows_in_the_table_and_decides_which_differences_count():
    # Ours: recording 20 -> 85 and the backward 85 -> 325 clear the spreads; SDPA's recording
    # 21 -> 26 does not (26's p20, 22, is below 21's p80, 24).
    spread = {
        "forward, no autograd": {"p20": 18.0, "p80": 22.0},
        "forward, recorded": {"p20": 80.0, "p80": 90.0},
        "forward + backward": {"p20": 300.0, "p80": 350.0},
        "SDPA forward, no autograd": {"p20": 19.0, "p80": 24.0},
        "SDPA forward, recorded": {"p20": 22.0, "p80": 30.0},
        "SDPA forward + backward": {"p20": 200.0, "p80": 220.0},
    }
    capture = _with_spread(_breakdown((20.0, 85.0, 325.0), (21.0, 26.0, 210.0)), spread)
    table = host_page.training_step_table(capture)
    assert "ours p20–p80" in table and "80–90" in table and "22–30" in table
    text = host_page.training_step_reading(capture).replace("\n", " ")
    assert "(10 rounds)" in text
    assert "here SDPA's recording does not, so read its cost as no larger than the noise" in text
    spread["SDPA forward, recorded"] = {"p20": 25.0, "p80": 30.0}
    text = host_page.training_step_reading(capture).replace("\n", " ")
    assert "every difference here clears them" in text


def test_another_capture_is_refused_by_name():
    with pytest.raises(ValueError, match="host_breakdown"):
        host_page.training_step_table({"name": "launch_bound", "payload": {}})


def _with_cpu_times(host, cpu_ms):
    """``host`` with each row's ``cpu_ms`` set to ``cpu_ms(row)`` (None leaves it out)."""
    import copy
    import dataclasses

    record = copy.deepcopy(host.record)
    for row in record["rows"]:
        row.pop("cpu_ms", None)
        if row["status"] == "ok" and cpu_ms(row) is not None:
            row["cpu_ms"] = cpu_ms(row)
    return dataclasses.replace(host, record=record, others=[])


def test_cpu_time_gets_a_sentence_only_where_the_record_read_it(host):
    without = _with_cpu_times(host, lambda row: None)
    assert "CPU time" not in targets_reading(without)
    # CPU time equal to the clock's on every row: the host's time is work on the CPU.
    same = " ".join(targets_reading(_with_cpu_times(host, lambda row: row["ms"])).split())
    assert "is 100–100% of the clock's on every row" in same, same
    # PyTorch's rows at half the clock's: those rows, and only those, are named as short.
    halved = _with_cpu_times(host, lambda row: row["ms"] / (2 if row["provider"] == "torch" else 1))
    reading = " ".join(targets_reading(halved).split())
    short = reading.partition("falls short of the clock's on")[2]
    assert short, reading
    ops = [op for op in halved.values("torch") if op in halved.values("triton")]
    for op in ops:
        assert f"{op} (PyTorch's) (50%)" in short, reading
        assert f"{op} (ours)" not in short, reading
