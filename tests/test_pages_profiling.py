"""The profiling guide's readers (gpuperf.pages.profiling) and its committed captures."""

import gzip
import json
import re

import pytest

from gpuperf.bench import captures, records
from gpuperf.pages import captures as pages_captures
from gpuperf.pages import profiling
from gpuperf.pages.tables import FORMAT_VAR
from tests._params import with_changed_source

PROVENANCE = {
    "gpu": "NVIDIA Test GPU",
    "sm_count": 1,
    "memory_gib": 1.0,
    "l2_bytes": 1,
    "compute_capability": "9.0",
    "driver": "1",
    "cuda": "13.0",
    "torch": "2",
    "triton": "3",
    "python": "3.12",
    "gpuperf_commit": "abc",
    "date": "2026-01-01T00:00:00Z",
    "timing_method": "test",
}
REFERENCE = records.reference_gpu()
NAMES = ("timing_methods", "launch_bound", "torch_profiler", "ncu_kernels", "proton", "cuda_extension")


def capture(name, payload, sources=()):
    return captures.build(name, tool="test", payload=payload, sources=sources, provenance=PROVENANCE)


@pytest.fixture(autouse=True)
def text_tables(monkeypatch):
    monkeypatch.setenv(FORMAT_VAR, "text")


def _timing_payload():
    methods = [
        {"key": "first_call", "label": "first call", "ms": 100.0},
        {"key": "do_bench", "label": "do_bench", "ms": 0.004, "ms_p20": 0.003, "ms_p80": 0.005},
        {"key": "do_bench_cudagraph", "label": "graph", "ms": 0.002, "ms_p20": 0.002, "ms_p80": 0.002},
    ]
    return {"samples": 3, "ops": [{"op": "softmax 2 x 2", "shape": [2, 2], "bytes": 32, "methods": methods}]}


def test_timing_table_gives_each_method_against_the_graph_time():
    text = profiling.timing_methods_table(capture("timing_methods", _timing_payload()))
    lines = {line.split()[0]: line for line in text.splitlines() if line.strip()}
    assert "softmax 2 x 2" in text
    assert lines["do_bench"].split()[1:] == ["4.0", "3.0", "5.0", "2.0x"]
    assert lines["graph"].split()[-1] == "1.0x"
    assert "50,000.0x" in text  # the first call: 100 ms over 2 us


def test_unknown_timing_method_names_those_there_are():
    op = _timing_payload()["ops"][0]
    assert profiling.method(op, "do_bench")["ms"] == 0.004
    with pytest.raises(KeyError, match=r"the capture has .*first_call"):
        profiling.method(op, "events")


def _launch_row(provider, rows, host, device, loop):
    return {
        "rows": rows,
        "cols": 8,
        "bytes": rows * 64,
        "provider": provider,
        "label": f"{provider} label",
        "host_ms": host,
        "host_ms_p20": host,
        "host_ms_p80": host,
        "device_ms": device,
        "device_ms_p20": device,
        "device_ms_p80": device,
        "loop_ms": loop,
        "loop_ms_p20": loop,
        "loop_ms_p80": loop,
    }


def _launch_capture():
    rows = [
        _launch_row("triton", 1024, 0.010, 0.050, 0.050),
        _launch_row("triton", 16, 0.010, 0.005, 0.010),
        # The GPU time with a flushed L2 above the host's, the loop still at the host's pace.
        _launch_row("triton", 256, 0.009, 0.016, 0.010),
        _launch_row("triton_jit", 16, 0.030, None, 0.030),
        _launch_row("triton_jit", 1024, 0.030, None, 0.050),
        _launch_row("torch", 16, 0.008, 0.009, 0.020),
    ]
    return capture("launch_bound", {"cols": 8, "rows": rows, "host_method": "test"})


def test_launch_bound_rows_come_smallest_first_and_the_crossover_is_read_from_the_loop():
    cap = _launch_capture()
    assert [r["rows"] for r in profiling.launch_bound_rows(cap, "triton")] == [16, 256, 1024]
    # Not at 256 rows, where only the GPU time (L2 flushed) exceeds the host's: the loop
    # there takes about the host's time per call.
    assert profiling.crossover(cap, "triton")["rows"] == 1024
    assert profiling.below_crossover(cap, "triton")["rows"] == 256
    assert profiling.crossover(cap, "triton_jit") is None  # 1.7x the host's time: no clear margin
    assert profiling.below_crossover(cap, "triton_jit")["rows"] == 1024  # the largest, then
    assert profiling.crossover(cap, "torch")["rows"] == 16  # the smallest size is GPU-bound
    assert profiling.below_crossover(cap, "torch") is None
    with pytest.raises(ValueError, match=r"provider 'cuda' is not in .*\['triton', 'triton_jit', 'torch'\]"):
        profiling.crossover(cap, "cuda")


def test_the_crossover_holds_at_every_larger_size_and_skips_rows_without_a_loop_time():
    rows = [
        _launch_row("triton", 16, 0.010, None, 0.010),
        _launch_row("triton", 64, 0.010, None, 0.030),  # a spike, not the crossover
        _launch_row("triton", 256, 0.010, None, 0.012),
        _launch_row("triton", 1024, 0.010, None, 0.020),  # exactly the ratio: GPU-bound
        _launch_row("triton", 4096, 0.010, None, None),  # no loop time: skipped
        _launch_row("triton", 16384, 0.010, None, 0.080),
    ]
    cap = capture("launch_bound", {"cols": 8, "rows": rows})
    assert profiling.GPU_BOUND_RATIO == 2.0
    assert profiling.loop_over_host(rows[3]) == pytest.approx(2.0)
    assert profiling.loop_over_host(rows[4]) is None
    assert profiling.crossover(cap, "triton")["rows"] == 1024
    assert profiling.below_crossover(cap, "triton")["rows"] == 256
    untimed = capture("launch_bound", {"cols": 8, "rows": [_launch_row("triton", 16, 0.01, None, None)]})
    assert profiling.crossover(untimed, "triton") is None
    assert profiling.below_crossover(untimed, "triton") is None


def test_host_paced_compares_the_loop_with_the_hosts_spread():
    row = _launch_row("triton", 16, 0.010, None, 0.011)
    assert not profiling.host_paced(row)  # no spread: the medians, and the loop is above
    assert profiling.host_paced({**row, "host_ms_p80": 0.012})
    assert not profiling.host_paced({**row, "host_ms_p80": 0.012, "loop_ms_p20": 0.0125})
    assert not profiling.host_paced({**row, "loop_ms": None})


def test_launch_bound_table_and_figure():
    import matplotlib

    matplotlib.use("Agg")
    cap = _launch_capture()
    text = profiling.launch_bound_table(cap)
    assert "triton_jit label" in text and "16 x 8" in text and "50.0" in text
    rows = [line.split() for line in text.splitlines() if " x 8" in line]
    assert "loop / host" in text and "GPU µs, L2 flushed" in text
    # The triton rows: the loop's time over the host's, the last 50 µs over 10.
    assert [r[-1] for r in rows[:3]] == ["1.0x", "1.1x", "5.0x"]
    fig = profiling.launch_bound_figure(cap, ["a note"])
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    # Host and loop for each of three providers, and a ring at the two crossovers.
    assert len(ax.lines) == 8
    rings = [line for line in ax.lines if line.get_markersize() == 11]
    assert sorted((float(r.get_xdata()[0]), float(r.get_ydata()[0])) for r in rings) == [
        pytest.approx((16 * 64 / 1e6, 20.0)),
        pytest.approx((1024 * 64 / 1e6, 50.0)),
    ]
    assert any("a note" in t.get_text() for t in fig.texts)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "loop of calls, time per call" in labels and "GPU-bound from here (loop ≥ 2x host)" in labels


def test_key_averages_table_sorts_by_cuda_time():
    rows = [
        {
            "name": name,
            "count": 1,
            "cpu_total_us": 1.0,
            "self_cpu_us": 1.0,
            "cuda_total_us": cuda,
            "self_cuda_us": cuda,
            "cuda_memory_bytes": 0,
            "self_cuda_memory_bytes": mem,
        }
        for name, cuda, mem in [("small", 1.0, 0), ("big", 90.0, -2 * 2**20), ("x" * 80, 5.0, None)]
    ]
    text = profiling.key_averages_table(capture("torch_profiler", {"key_averages": rows}), limit=2)
    body = [line.split()[0] for line in text.splitlines()[2:]]
    assert body == ["big", "x" * 57 + "..."]
    assert "-2.0" in text and "small" not in text


def _trace():
    def x(cat, name, ts, dur, tid=1, **args):
        return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur, "args": args}

    return {
        "traceEvents": [
            x("user_annotation", "step 0", 0, 50),
            x("user_annotation", "step 1", 100, 100),
            x("user_annotation", "forward", 100, 40),
            x("user_annotation", "backward", 140, 60),
            x("cuda_runtime", "cudaLaunchKernel", 110, 5, correlation=1),
            x("cuda_runtime", "cudaLaunchKernel", 150, 5, tid=2, correlation=2),
            x("cuda_runtime", "cudaLaunchKernel", 10, 5, correlation=3),  # in step 0
            x("kernel", "k1", 120, 30, correlation=1),
            x("kernel", "k2", 140, 20, correlation=2),  # overlaps k1 by 10
            x("kernel", "k0", 20, 5, correlation=3),
            {"ph": "M", "name": "process_name", "pid": 1},
        ]
    }


def test_last_step_summary_counts_overlapping_gpu_work_once():
    s = profiling.last_step_summary(_trace())
    assert s["kernels"] == 2
    assert s["busy_ms"] == pytest.approx(0.040)
    assert s["step_ms"] == pytest.approx(0.1) and s["gpu_ms"] == pytest.approx(0.1)
    assert s["busy_fraction"] == pytest.approx(0.4)


def test_timeline_colours_kernels_by_the_range_that_launched_them():
    import matplotlib

    matplotlib.use("Agg")
    fig = profiling.timeline_figure(_trace(), title="t", caption="c")
    ax = fig.axes[0]
    colours = [tuple(round(c, 3) for c in bar.get_facecolor()[0][:3]) for bar in ax.collections]
    blue, red = (
        tuple(round(c, 3) for c in matplotlib.colors.to_rgb(profiling.RANGE_COLORS[k]))
        for k in ("forward", "backward")
    )
    assert colours.count(blue) == 3 and colours.count(red) == 3  # range, launch and kernel each
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        lane for lane, _ in reversed(profiling.TIMELINE_LANES)
    ]


def test_timeline_needs_a_step_range():
    trace = {"traceEvents": [e for e in _trace()["traceEvents"] if not e["name"].startswith("step")]}
    with pytest.raises(ValueError, match="no record_function range named 'step"):
        profiling.timeline_figure(trace)
    with pytest.raises(ValueError, match="no record_function range"):
        profiling.last_step_summary(trace)


def test_read_trace_reads_gzipped_and_plain(tmp_path):
    trace = _trace()
    (tmp_path / "t.json").write_text(json.dumps(trace))
    with gzip.open(tmp_path / "t.json.gz", "wt") as f:
        json.dump(trace, f)
    assert profiling.read_trace(tmp_path / "t.json") == profiling.read_trace(tmp_path / "t.json.gz") == trace


def _ncu_capture():
    def launch(op, duration, dram):
        return {
            "op": op,
            "kernel": f"{op}_kernel",
            "metrics": {
                "Duration": {"section": "SOL", "unit": "ns", "value": duration},
                "DRAM Throughput": {"section": "SOL", "unit": "%", "value": dram},
                "Cluster Scheduling Policy": {"section": "Launch", "unit": "", "value": "PolicySpread"},
            },
        }

    launches = [launch("a", 2000.0, 80.0), launch("b", 500.0, 20.0), {**launch("c", 1, 1), "op": None}]
    return capture("ncu_kernels", {"ops": ["a", "b"], "launches": launches})


def test_ncu_table_has_one_column_per_matched_launch_and_only_counters_it_has():
    cap = _ncu_capture()
    text = profiling.ncu_table(cap)
    header, _, *body = text.splitlines()
    assert header.split() == ["counter", "a", "b"]
    assert [re.split(r"\s{2,}", line.strip())[0] for line in body] == [
        "duration (µs)",
        "DRAM throughput (% of peak)",
    ]
    assert "2.0" in body[0] and "0.5" in body[0]
    assert profiling.ncu_table(cap, ops=["b"]).splitlines()[0].split() == ["counter", "b"]


def test_ncu_lookups():
    cap = _ncu_capture()
    a = profiling.ncu_launch(cap, "a")
    assert profiling.ncu_value(a, "Duration", 1e-3) == pytest.approx(2.0)
    assert profiling.ncu_value(a, "Cluster Scheduling Policy") is None  # text, not a number
    assert profiling.ncu_value(a, "L2 Hit Rate") is None
    with pytest.raises(KeyError, match=r"no profiled launch of 'z'; the capture has \['a', 'b'\]"):
        profiling.ncu_launch(cap, "z")


def test_proton_kernels_are_the_timed_leaves():
    frames = [
        {"path": ["ROOT"], "name": "ROOT", "metrics": {"count": 0, "time (ns)": 0}},
        {"path": ["ROOT", "softmax"], "name": "softmax", "metrics": {}},
        {"path": ["ROOT", "softmax", "_k"], "name": "_k", "metrics": {"count": 4, "time (ns)": 8000}},
    ]
    cap = capture("proton", {"ok": True, "frames": frames})
    assert profiling.proton_kernels(cap) == [
        {"scope": "softmax", "kernel": "_k", "count": 4, "total_us": 8.0, "avg_us": 2.0}
    ]
    assert "_k" in profiling.proton_table(cap)
    assert profiling.proton_kernels(capture("proton", {"ok": False, "error": "no CUPTI"})) == []


def test_load_says_what_is_missing_or_stale(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUPERF_GPU", "nvidia-test-gpu")  # notes are the reference GPU's
    cap, notes = pages_captures.load("timing_methods", "nvidia-test-gpu", tmp_path)
    assert cap is None and notes[0].startswith("MISSING") and captures.command("timing_methods") in notes[0]
    fresh = capture("timing_methods", _timing_payload(), sources=("kernels/row_mean.py",))
    captures.write(fresh, tmp_path)
    assert pages_captures.load("timing_methods", "nvidia-test-gpu", tmp_path) == (fresh, [])
    stale = with_changed_source(fresh, "kernels/row_mean.py")
    captures.write(stale, tmp_path)
    cap, notes = pages_captures.load("timing_methods", "nvidia-test-gpu", tmp_path)
    assert cap == stale and notes[0].startswith("STALE") and "kernels/row_mean.py" in notes[0]
    path = captures.capture_path("timing_methods", "nvidia-test-gpu", tmp_path)
    path.write_text("{}")
    cap, notes = pages_captures.load("timing_methods", "nvidia-test-gpu", tmp_path)
    assert cap is None and notes[0].startswith("MALFORMED")


# --- the committed captures of the reference GPU --------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_committed_capture_is_complete_and_fresh(name):
    cap, notes = pages_captures.load(name)
    assert cap is not None, notes
    assert captures.validate(cap) == []
    assert records.gpu_slug(cap["provenance"]["gpu"]) == REFERENCE


def test_committed_trace_is_small_and_matches_its_capture():
    cap, _ = pages_captures.load("torch_profiler")
    path = captures.artifact_path("torch_profiler_trace", REFERENCE, ".json.gz")
    assert path.name == cap["payload"]["trace_file"]
    assert path.stat().st_size == cap["payload"]["trace_gz_bytes"] < 5 * 2**20
    summary = profiling.last_step_summary(profiling.read_trace(path))
    assert summary["kernels"] > 0 and 0 < summary["busy_fraction"] <= 1


def test_blocks_per_sm_spreads_a_grid_over_the_sms():
    from gpuperf.pages.profiling.sentences import blocks_per_sm

    # 256 blocks of 512 threads on 132 SMs that hold 4 each: 0.48 waves, 1 or 2 blocks an SM.
    assert blocks_per_sm(256, 132, 256 / (132 * 4)) == (1, 2, 4)
    assert blocks_per_sm(264, 132, 0.5) == (2, 2, 4)
    # Fewer blocks than SMs: some get none.
    assert blocks_per_sm(100, 132, 100 / 132) == (0, 1, 1)
    with pytest.raises(ValueError, match="must be positive"):
        blocks_per_sm(0, 132, 0.5)


def test_ncu_findings_say_how_pytorchs_blocks_fill_the_sms():
    cap, _ = pages_captures.load("ncu_kernels")
    launch = profiling.ncu_launch(cap, "x.mean(dim=-1) (PyTorch)")
    blocks, waves = profiling.ncu_value(launch, "Grid Size"), profiling.ncu_value(launch, "Waves Per SM")
    sms = cap["provenance"]["sm_count"]
    text = " ".join(profiling.ncu_findings(cap).split())
    fewest, most = int(blocks) // sms, -(-int(blocks) // sms)
    room = round(blocks / (waves * sms))
    gets = f"{fewest}" if fewest == most else f"{fewest} or {most}"
    assert f"each of the {sms} SMs gets {gets} blocks of" in text
    assert f"where it could hold {room}, " in text
    occupancy = profiling.ncu_value(launch, "Achieved Occupancy")
    assert f"{occupancy:.0f}% achieved occupancy" in text
    # Under one wave, yet no SM without a block: the SMs are under-filled, not idle.
    assert waves < 1 and fewest >= 1 and most < room


def test_committed_ncu_capture_profiled_every_op_once():
    cap, _ = pages_captures.load("ncu_kernels")
    payload = cap["payload"]
    assert cap["tool"].startswith("ncu ") and "--clock-control none" in cap["tool"]
    assert payload["unmatched_ops"] == []
    assert [launch["op"] for launch in payload["launches"] if launch["op"]] == payload["ops"]
    for op in payload["ops"]:
        launch = profiling.ncu_launch(cap, op)
        assert 0 < profiling.ncu_value(launch, "Duration") and 0 <= profiling.ncu_value(
            launch, "DRAM Throughput"
        )


def test_committed_timing_capture_has_every_method_for_every_op():
    cap, _ = pages_captures.load("timing_methods")
    keys = {"first_call", "host_no_sync", "host_sync", "cuda_events", "do_bench", "do_bench_no_flush"}
    for op in cap["payload"]["ops"]:
        assert keys | {"do_bench_cudagraph", "gpuperf"} <= {m["key"] for m in op["methods"]}
        assert all(m["ms"] > 0 for m in op["methods"])


# --- the guide's sentences and its opening paragraph -----------------------------------


def test_timing_gaps_read_each_method_and_name_a_missing_one():
    methods = _timing_payload()["ops"][0]["methods"] + [
        {"key": "host_no_sync", "label": "h", "ms": 0.010},
        {"key": "do_bench_no_flush", "label": "n", "ms": 0.020},
    ]
    op = {"op": "softmax 2 x 2", "shape": [2, 2], "bytes": 32, "methods": methods}
    text = " ".join(profiling.timing_gaps(capture("timing_methods", {"ops": [op]})).split())
    assert text.startswith("softmax 2 x 2: first call 100 ms, 50,000x")
    assert "(CUDA graph, 2.0 µs)" in text and "synchronize 10.0 µs" in text
    assert "do_bench 4.0 µs, without its flush 20.0 µs" in text
    with pytest.raises(KeyError, match="host_no_sync"):
        profiling.timing_gaps(capture("timing_methods", _timing_payload()))


def test_crossovers_name_where_the_loop_takes_the_gpus_pace():
    text = profiling.crossovers(_launch_capture())
    lines = [" ".join(line.split()) for line in text.replace("\n    ", " ").splitlines()]
    assert (
        lines[0] == "Where the loop first takes at least 2x the host's time per call (GPU-bound from there):"
    )
    assert lines[1] == (
        "triton label: from 1024 x 8 (0 MB moved), the loop 50.0 µs per call against the host's "
        "10.0 µs (5.0x); GPU 50.0 µs with a flushed L2; at 256 x 8, the loop 10.0 µs per call "
        "against the host's 9.0 µs (1.1x)"
    )
    assert lines[2] == (
        "triton_jit label: at no size measured (at the largest with both times, 1024 x 8, "
        "the loop 50.0 µs per call against the host's 30.0 µs (1.7x)); there its loop takes as "
        "long as the cached launch's, 50.0 µs, the same kernel at the GPU's pace: the GPU "
        "already sets the pace, within the rule's margin"
    )
    assert lines[3] == (
        "torch label: from 16 x 8 (0 MB moved), the loop 20.0 µs per call against the host's 8.0 µs (2.5x); "
        "GPU 9.0 µs with a flushed L2"
    )
    assert lines[4] == "host time through kernel[grid] / through the cached launch: 3.0x over the sizes"
    rows = [_launch_row("torch", 16, 0.010, 0.005, None)]
    text = profiling.crossovers(capture("launch_bound", {"cols": 8, "rows": rows}))
    assert text.splitlines()[1] == "torch label: no loop time in this capture, so no crossover to read"
    assert "kernel[grid]" not in text  # no triton_jit rows: no ratio


def test_a_loop_as_long_as_the_same_kernels_gpu_bound_loop_is_named_below_the_rule():
    # kernel[grid] runs the cached launch's kernel: at 1024 rows its loop (50 µs, 1.25x its
    # host) takes as long as the cached launch's GPU-bound loop, so the GPU sets its pace.
    rows = [
        _launch_row("triton", 256, 0.009, 0.005, 0.010),
        _launch_row("triton", 1024, 0.010, 0.050, 0.050),
        _launch_row("triton_jit", 256, 0.030, None, 0.031),
        {**_launch_row("triton_jit", 1024, 0.040, None, 0.0502), "loop_ms_p20": 0.049, "loop_ms_p80": 0.051},
        _launch_row("triton_jit", 4096, 0.040, None, 0.200),
    ]
    launch = capture("launch_bound", {"cols": 8, "rows": rows})
    assert [(r["rows"], t["rows"]) for r, t in profiling.paced_like(launch, "triton_jit")] == [(1024, 1024)]
    assert profiling.paced_like(launch, "triton") == []
    text = " ".join(profiling.crossovers(launch).split())
    assert (
        "at 1024 x 8, the loop 50.2 µs per call against the host's 40.0 µs (1.3x); there its loop "
        "takes as long as the cached launch's, 50.0 µs, the same kernel at the GPU's pace"
    ) in text
    # Loops whose spreads do not meet: nothing said.
    rows[3] = {**rows[3], "loop_ms": 0.060, "loop_ms_p20": 0.058, "loop_ms_p80": 0.062}
    assert profiling.paced_like(capture("launch_bound", {"cols": 8, "rows": rows}), "triton_jit") == []


def _opening(rows):
    from gpuperf.pages.profiling.opening import _launch_sentence

    return " ".join(_launch_sentence(capture("launch_bound", {"cols": 8, "rows": rows})).split())


def test_opening_reads_the_crossover_from_the_loop():
    rows = [
        {**_launch_row("triton", 16, 0.010, 0.005, 0.010), "host_ms_p80": 0.012},
        {**_launch_row("triton", 4096, 0.0089, 0.0161, 0.0099), "host_ms_p80": 0.0101},
        _launch_row("triton", 16384, 0.0125, 0.0491, 0.0487),
    ]
    assert _opening(rows) == (
        "A back-to-back loop of softmax calls on rows of 8 float32 runs at the host's pace up to "
        "4,096 rows (there 9.9 µs per call, the host needing 8.9 µs) and at the GPU's pace from "
        "16,384 rows (48.7 µs per call, 3.9x the host's 12.5 µs)."
    )
    # A size below the crossover whose loop is clearly slower than the host: no claim
    # about the sizes below.
    rows[1] = _launch_row("triton", 4096, 0.010, None, 0.015)
    assert _opening(rows) == (
        "A back-to-back loop of softmax calls on rows of 8 float32 runs at the GPU's pace from "
        "16,384 rows (48.7 µs per call, 3.9x the host's 12.5 µs)."
    )
    assert _opening(rows[:2]) == (
        "A back-to-back loop of softmax calls on rows of 8 float32 stays under 2x the host's time "
        "per call at every size measured, up to 4,096 rows (15.0 µs per call, the host needing 10.0 µs)."
    )
    assert _opening([_launch_row("triton", 16, 0.01, None, None)]) == ""
    assert _opening([_launch_row("torch", 16, 0.01, None, 0.01)]) == ""


def test_sentences_fit_the_output_column():
    text = profiling.timing_gaps(capture("timing_methods", {"ops": [_full_op()]}))
    assert len(text.splitlines()) > 1 and max(map(len, text.splitlines())) <= 88
    assert all(line.startswith("    ") for line in text.splitlines()[1:])


def _full_op():
    methods = _timing_payload()["ops"][0]["methods"] + [
        {"key": "host_no_sync", "label": "h", "ms": 0.010},
        {"key": "do_bench_no_flush", "label": "n", "ms": 0.020},
    ]
    return {"op": "softmax 2 x 2", "shape": [2, 2], "bytes": 32, "methods": methods}


def _check_bad_captures(function, name):
    with pytest.raises(TypeError, match="capture must be a dict"):
        function("not a capture")
    other = "proton" if name != "proton" else "ncu_kernels"
    with pytest.raises(ValueError, match=f"expected the capture {name!r}, got {other!r}"):
        function(capture(other, {}))


@pytest.mark.parametrize(
    "function, name",
    [
        (profiling.timing_gaps, "timing_methods"),
        (profiling.plot_launch_bound, "launch_bound"),
        (profiling.crossovers, "launch_bound"),
        (profiling.profiler_table, "torch_profiler"),
        (profiling.step_facts, "torch_profiler"),
        (profiling.trace_size, "torch_profiler"),
        (profiling.trace_path, "torch_profiler"),
        (profiling.timeline, "torch_profiler"),
        (profiling.extension_summary, "cuda_extension"),
        (profiling.ncu_findings, "ncu_kernels"),
        (profiling.compiler_stats, "ncu_kernels"),
        (profiling.ncu_command, "ncu_kernels"),
        (profiling.proton_report, "proton"),
        (profiling.proton_viewer, "proton"),
    ],
)
def test_capture_renderers_refuse_another_capture(function, name):
    _check_bad_captures(function, name)


def test_record_sentences_refuse_another_result():
    from gpuperf.bench.catalog import HOST_OVERHEAD, ROW_MEAN
    from gpuperf.pages import load

    with pytest.raises(TypeError, match=r"must be a gpuperf\.pages\.Result"):
        profiling.host_time_per_call({"host_overhead": 1})
    with pytest.raises(ValueError, match="must be a result of 'row_mean', got a result of 'host_overhead'"):
        profiling.row_mean_ranking(load(HOST_OVERHEAD))
    with pytest.raises(ValueError, match="must be a result of 'host_overhead'"):
        profiling.host_time_per_call(load(ROW_MEAN))


def test_row_mean_ranking_names_the_ceiling_its_shares_are_of():
    from gpuperf.bench.catalog import ROW_MEAN
    from gpuperf.pages import load
    from gpuperf.pages.prose import percent

    result = load(ROW_MEAN)
    text = profiling.row_mean_ranking(result)
    flat = " ".join(text.split())
    assert f"{result.name}, Triton's share of the {result.ceiling_name()}: " in flat
    for x, f in result.fraction_of_ceiling().items():
        assert f"{x}: {percent(f)}" in flat


def test_extension_and_proton_sentences():
    checks = [
        {"dtype": "float32", "shape": [1], "max_abs_err": 1e-7},
        {"dtype": "float32", "shape": [2], "max_abs_err": 3e-7},
        {"dtype": "bfloat16", "shape": [2], "max_abs_err": 4e-3},
    ]
    payload = {
        "build_s": 61.2,
        "cached_load_s": 2.25,
        "nvcc": ["nvcc 13"],
        "torch_cuda_arch_list": "9.0a",
        "checks": checks,
    }
    text = " ".join(profiling.extension_summary(capture("cuda_extension", payload)).split())
    assert "built in 61 s (nvcc 13, TORCH_CUDA_ARCH_LIST=9.0a)" in text and "in 2.2 s" in text
    assert "3 outputs matched" in text and "float32 3.0e-07, bfloat16 4.0e-03" in text
    failed = capture("proton", {"ok": False, "error": "no CUPTI", "traceback": "Trace\nboom"})
    assert profiling.proton_report(failed).startswith("proton did not run: no CUPTI")
    assert profiling.proton_viewer(failed) == ""
    viewer = {"returncode": 1, "stdout": "", "stderr": "Traceback\nImportError: hatchet\n"}
    assert profiling.proton_viewer(capture("proton", {"ok": True, "viewer": viewer})).endswith(
        "status 1:\nImportError: hatchet"
    )
    tree = "2620.684 ROOT\n├─ 1924.929 matmul\n│  └─ 1924.929 _matmul_kernel\n└─ 450.021 softmax\n"
    drawn = {"returncode": 0, "stdout": tree + "\n", "stderr": ""}
    assert profiling.proton_viewer(capture("proton", {"ok": True, "viewer": drawn})) == (
        "python -m triton.profiler.viewer exited with status 0:\n" + tree.rstrip()
    )  # the tree as drawn, one frame a line


def _copy_measurements(tmp_path, monkeypatch):
    import shutil

    root = tmp_path / "measurements"
    shutil.copytree(records.measurements_dir(), root)
    monkeypatch.setenv("GPUPERF_MEASUREMENTS", str(root))
    return root


def _expected_sentences(gpu):
    """The paragraph's numbers for ``gpu``, computed here from the captures and records."""
    from gpuperf.bench.catalog import HOST_OVERHEAD, ROW_MEAN
    from gpuperf.pages import load

    expected = []
    timing, _ = pages_captures.load("timing_methods", gpu)
    if timing is not None:
        op = min(timing["payload"]["ops"], key=lambda o: o["bytes"])
        us = {m["key"]: m["ms"] * 1e3 for m in op["methods"]}
        expected += [
            f"takes {us['do_bench_cudagraph']:.1f} µs",
            f"read {us['cuda_events']:.1f} µs",
            f"flush {us['do_bench_no_flush']:.1f} µs",
            f"compiles, {us['first_call'] / 1e3:,.0f} ms",
        ]
    launch, _ = pages_captures.load("launch_bound", gpu)
    if launch is not None:
        rows = sorted(
            (r for r in launch["payload"]["rows"] if r["provider"] == "triton"), key=lambda r: r["bytes"]
        )
        # The first size from which the loop takes at least twice the host's time per call.
        ratios = [r["loop_ms"] / r["host_ms"] for r in rows]
        first = next(r for i, r in enumerate(rows) if all(q >= 2 for q in ratios[i:]))
        expected += [
            f"pace from {first['rows']:,} rows",
            f"({first['loop_ms'] * 1e3:.1f} µs per call",
            f"the host's {first['host_ms'] * 1e3:.1f} µs)",
        ]
    prof, _ = pages_captures.load("torch_profiler", gpu)
    if prof is not None:
        trace = profiling.read_trace(captures.artifact_path("torch_profiler_trace", gpu, ".json.gz"))
        busy = profiling.last_step_summary(trace)["busy_fraction"]
        expected.append(f"busy {100 * busy:.0f}% of the time")
    host = load(HOST_OVERHEAD, gpu)
    if host.record is not None:
        expected += [
            f"costs {host.values('triton')['softmax']:.1f} µs",
            f"against {host.values('triton_jit')['softmax']:.1f} µs",
            f"{host.values('torch')['softmax']:.1f} µs for torch.softmax",
        ]
    means = load(ROW_MEAN, gpu)
    if means.record is not None:
        frac = means.fraction_of_ceiling()
        expected.append(f"{100 * min(frac.values()):.0f}%–{100 * max(frac.values()):.0f}% of")
        # The ceiling named from the record the shares come from.
        expected.append(f"of the measured {means.ceiling_name()} from")
    return expected


def test_paragraph_states_every_gpus_numbers_from_the_records():
    from gpuperf.pages import hardware
    from gpuperf.pages.plotting import short_gpu_name

    para = profiling.in_one_paragraph()
    text = para.text()
    gpus = hardware.gpus()
    assert len(gpus) >= 2
    # Every GPU with a capture or a shown record speaks (a record of code changed since, or
    # read against another ceiling than the benchmark declares, is not shown).
    speaking = [gpu for gpu in gpus if _expected_sentences(gpu)]
    assert speaking[:1] == [REFERENCE]
    chunks = text.split("On the ")[1:]
    assert len(chunks) == len(speaking)
    for gpu, chunk in zip(speaking, chunks, strict=True):
        name = short_gpu_name(records.read(records.record_path("row_mean", gpu))["provenance"]["gpu"])
        assert chunk.startswith(name + ", ")
        expected = _expected_sentences(gpu)
        assert expected, gpu
        for piece in expected:
            assert piece in chunk, (gpu, piece)
    # The reference GPU has the captures; the H200 has none, and shows what it has.
    assert "busy" in chunks[0] and not any("busy" in chunk for chunk in chunks[1:])
    assert not any("H200" in n for n in para.notes)


def test_paragraph_notes_what_is_missing(tmp_path, monkeypatch):
    root = _copy_measurements(tmp_path, monkeypatch)
    (root / REFERENCE / "row_mean.json").unlink()
    captures.artifact_path("torch_profiler_trace", REFERENCE, ".json.gz", root).unlink()
    para = profiling.in_one_paragraph()
    text = para.text()
    assert "busy" not in text  # no trace, no sentence about it
    # Another GPU shows its own row-mean record where it is shown.
    from gpuperf.bench.catalog import ROW_MEAN
    from gpuperf.pages import load

    others = [g for g in records.gpus_with_record(ROW_MEAN.name) if g != REFERENCE]
    assert text.count("row mean streams") == sum(load(ROW_MEAN, g).record is not None for g in others)
    assert any(n.startswith("H100 80GB HBM3, row_mean: MISSING") for n in para.notes)
    assert any(n.startswith("MISSING: no trace of the profiled step") for n in para.notes)


def test_paragraph_without_any_records(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUPERF_MEASUREMENTS", str(tmp_path))
    para = profiling.in_one_paragraph()
    assert para.sentences == ()
    assert para.notes == ("MISSING: no captures or records of the profiling guide on any GPU.",)
