"""The guide on benchmarking your own kernel: its tables and sentences, read from made-up
captures and a made-up record of the shapes the capture script and the runner write (only
the format is real), and the notes it shows while they are missing."""

import pytest

from gpuperf.bench import captures, catalog, records
from gpuperf.pages import benchmarking as page
from gpuperf.pages import captures as pages_captures
from gpuperf.pages.report import Result
from tests._pages import copy_measurements, records_as_text  # noqa: F401 (autouse)
from tests.test_bench_records import fake_provenance, synthetic_record

COLS = catalog.SCALE_SHIFT_COLS
DEFAULT = {"BLOCK_M": 8, "BLOCK_N": 256, "num_warps": 4}
TILES = [[1, 1024, 4], [8, 256, 4], [16, 256, 8]]


def reading(median_us: float, spread: float = 0.1) -> dict:
    ms = median_us / 1e3
    return {"median": ms, "p20": ms * (1 - spread), "p80": ms * (1 + spread)}


def timing_capture(gpu="Test GPU 80GB") -> dict:
    sizes = []
    # rows: (do_bench, no flush, one call, many calls, graph), in µs
    for rows, (bench, warm, one, many, graph) in {
        16: (4.0, 3.0, 30.0, 12.0, 2.0),
        512: (8.0, 5.0, 35.0, 12.5, 4.0),
        32768: (400.0, 400.0, 420.0, 401.0, 398.0),
    }.items():
        readings = {
            "do_bench": {**reading(bench), "mean": bench * 1.5e-3, "min": bench * 0.8e-3, "runs": 1000},
            "do_bench_no_flush": reading(warm),
            "one_call": reading(one),
            "many_calls": reading(many),
            "cuda_graph": reading(graph),
        }
        sizes.append({"rows": rows, "bytes": catalog.SCALE_SHIFT.bytes(rows), "readings": readings})
    payload = {"cols": COLS, "dtype": "float32", "samples": 200, "rounds": 10, "calls": 100, "sizes": sizes}
    return captures.build(
        page.TIMING,
        tool="test",
        payload=payload,
        sources=("kernels/scale_shift.py",),
        provenance=fake_provenance(gpu),
    )


def tuning(rows, attempt, best, ms_by_tile) -> dict:
    return {
        "rows": rows,
        "attempt": attempt,
        "printed": "Autotuning kernel _scale_shift_kernel with config BLOCK_M: 1, ...\n"
        f"Triton autotuning for function _scale_shift_kernel,\nwith key as ({rows}, {COLS}, ...),\n"
        "finished after 1.50s,\nbest config selected: ...;\n",
        "printed_second_call": "",
        "first_call_s": 1.5 if attempt == 1 else 0.4,
        "second_call_s": 2e-5,
        "bench_time_s": 1.4,
        "timings": [
            {"BLOCK_M": m, "BLOCK_N": n, "num_warps": w, "ms": ms / 1e3}
            for (m, n, w), ms in zip(TILES, ms_by_tile, strict=True)
        ],
        "best": dict(zip(("BLOCK_M", "BLOCK_N", "num_warps"), best, strict=True)),
    }


def autotune_capture() -> dict:
    tunings = [
        tuning(512, 1, TILES[0], [6.0, 7.5, 6.1]),
        tuning(32768, 1, TILES[2], [420.0, 410.0, 400.0]),
        tuning(512, 2, TILES[2], [6.2, 7.4, 6.0]),
        tuning(32768, 2, TILES[2], [421.0, 409.0, 401.0]),
    ]
    payload = {"cols": COLS, "dtype": "float32", "tiles": TILES, "default": DEFAULT, "tunings": tunings}
    return captures.build(
        page.AUTOTUNE,
        tool="test",
        payload=payload,
        sources=("kernels/scale_shift.py",),
        provenance=fake_provenance(),
    )


def test_do_bench_table_shows_each_reading_in_microseconds():
    text = page.do_bench_table(timing_capture())
    assert "triton.testing.do_bench" in text
    row = next(line for line in text.splitlines() if line.strip().startswith("512 x 4,096"))
    # median, p20, p80, mean, min, runs, no flush, GB/s of the median
    cells = row.split(")")[1].split()
    assert cells[:7] == ["8.0", "7.2", "8.8", "12.0", "6.4", "1,000", "5.0"]
    assert cells[7] == f"{catalog.SCALE_SHIFT.bytes(512) / 8e-6 / 1e9:,.0f}"


def test_flush_effect_reads_the_warm_l2_gain_and_the_spread():
    capture = timing_capture()
    capture["provenance"]["l2_bytes"] = 50 * 2**20
    lines = page.flush_effect({"gpu": capture}).splitlines()
    assert len(lines) == 3
    assert (
        "512 rows (16.8 MB, fits in the 50 MiB L2): 1.60× faster without the flush (inputs found in L2)"
        in lines[1]
    )
    assert "p80/p20 1.22×, mean/median 1.50×" in lines[1]
    assert "32,768 rows (1,073.8 MB, larger than the 50 MiB L2): the same without the flush" in lines[2]
    capture["provenance"]["l2_bytes"] = None  # not known: not said
    assert "512 rows (16.8 MB): 1.60× faster" in page.flush_effect({"gpu": capture}).splitlines()[1]
    # Slower without the flush (the GPU idles between launches): said so, never "faster".
    readings = capture["payload"]["sizes"][1]["readings"]
    readings["do_bench_no_flush"]["median"] = 4 * readings["do_bench"]["median"]
    line = page.flush_effect({"gpu": capture}).splitlines()[1]
    assert "4.00× slower without the flush (each run waits for its launch)" in line, line


def test_events_and_graph_tables_divide_by_the_graph_time():
    shown = {"gpu": timing_capture()}
    events = page.events_table(shown)
    row = next(line for line in events.splitlines() if line.strip().startswith("16 x"))
    assert "15.0×" in row and "6.0×" in row  # one call 30 µs and 100 calls 12 µs per call over 2 µs
    graph = page.graph_table(shown)
    assert "do_bench, no flush" in graph and "do_bench_cudagraph" in graph


def test_tables_head_each_gpu_when_there_are_several():
    shown = {"a": timing_capture("GPU A"), "b": timing_capture("GPU B")}
    text = page.events_table(shown)
    assert "GPU A: medians, µs" in text and "GPU B: medians, µs" in text
    lines = page.launch_share(shown).splitlines()
    assert lines[0] == "GPU A:" and lines[4] == "GPU B:"


def test_launch_share_and_graph_gain():
    """One call is read against do_bench (its launch hidden behind the flush), never against
    the graph's warm-L2 time; the graph's time is said to beat HBM where it does."""
    shown = {"gpu": timing_capture()}
    share = page.launch_share(shown).splitlines()
    assert share[0].endswith(
        "one call reads 30.0 µs, do_bench 4.0 µs: at least 87% of the one-call reading is the launch"
    )
    assert "kernel" not in page.launch_share(shown)
    gain = page.graph_gain(shown).splitlines()
    assert gain[0].endswith("12.0 µs per call from Python, 2.0 µs from a graph (6.00×)")
    assert "HBM" not in page.graph_gain(shown)  # no measured ceilings for this GPU


def test_graph_gain_says_where_a_replay_beats_hbm(tmp_path, monkeypatch):
    copy_measurements(tmp_path, monkeypatch)
    from gpuperf.pages.hardware import ceilings

    # The floor on time is at the fastest rate the memory was shown to stream (the stream
    # bandwidth where measured), named from its entry.
    hw = ceilings("nvidia-h100-80gb-hbm3")
    gbps = hw.memory_gbps
    assert gbps >= hw.copy_gbps
    gain = page.graph_gain({"gpu": timing_capture("NVIDIA H100 80GB HBM3")}).splitlines()
    floor_us = catalog.SCALE_SHIFT.bytes(512) / (gbps * 1e3)
    assert floor_us > 4.0
    assert gain[1].endswith(
        f"4.0 µs from a graph (3.12×); below the {floor_us:,.1f} µs that moving 16.8 MB from HBM "
        f"takes at the {gbps:,.0f} GB/s of the {hw.memory_label}: the replays read their input from L2"
    )
    assert "HBM" not in gain[0] and "HBM" not in gain[2]


def test_readings_say_so_when_there_is_no_capture():
    assert page.flush_effect({}) == pages_captures.NOTHING_YET
    assert page.events_table({}) == pages_captures.NOTHING_YET
    with pytest.raises(TypeError, match="captures shown"):
        page.graph_table([timing_capture()])


def test_autotune_log_prints_what_triton_printed_and_marks_winners_and_default():
    text = page.autotune_log(autotune_capture())
    assert "Triton autotuning for function _scale_shift_kernel" in text
    assert "(nothing: the choice is cached in memory)" in text
    row = next(line for line in text.splitlines() if line.strip().startswith("8 x 256, 4 warps"))
    assert "(default)" in row
    first = next(line for line in text.splitlines() if line.strip().startswith("1 x 1024"))
    assert "6.0 *" in first and "420.0" in first and "420.0 *" not in first


def test_autotune_findings_compare_the_two_tunings_and_the_default():
    lines = page.autotune_findings({"gpu": autotune_capture()}).splitlines()
    assert lines[0].startswith("   512 rows: first call 1.50 s (tuning 3 configs), second call 0.02 ms")
    assert "picked different tiles: 1 x 1024, 4 warps; 16 x 256, 8 warps" in lines[1]
    assert "the default takes 1.25× the best time" in lines[1]
    assert "picked the same tile" in lines[3] and "1.02×" in lines[3]


def scale_shift_result(gpu="Test GPU 80GB", compile_ms=0.39) -> Result:
    """A record of SCALE_SHIFT: torch.compile at ``compile_ms``, the others at 0.5 ms."""
    record = synthetic_record(
        catalog.SCALE_SHIFT, gpu=gpu, n_x=4, ms=lambda c, i, p: compile_ms if p == 2 else 0.5
    )
    return Result(catalog.SCALE_SHIFT, record, "committed")


def test_tiles_against_compile_reads_the_gap_the_search_closes():
    # compile at 390 µs; the default tile (8 x 256) 410 µs, the fastest (16 x 256) 400 µs.
    text = page.tiles_against_compile({"gpu": autotune_capture()}, scale_shift_result())
    assert text.startswith(
        "At 32,768 rows the fastest tile timed, 16 x 256, 8 warps, took 400.0 µs and the default 410.0 µs; "
        "torch.compile took 390.0 µs in the benchmark's record"
    )
    assert text.endswith(
        ": the search closes 50% of the default's gap to torch.compile, and no tile tried reaches it."
    )
    matched = page.tiles_against_compile({"gpu": autotune_capture()}, scale_shift_result(compile_ms=0.45))
    assert matched.endswith(": a tile from the search matches torch.compile's kernel.")
    other = page.tiles_against_compile({"gpu": autotune_capture()}, scale_shift_result("Other GPU"))
    assert other == "no record of the benchmark on this GPU to set the tiles against"
    assert page.tiles_against_compile({}, scale_shift_result()) == pages_captures.NOTHING_YET
    with pytest.raises(TypeError, match="Result"):
        page.tiles_against_compile({"gpu": autotune_capture()}, scale_shift_result().record)


def test_against_the_roof_reads_each_provider_and_both_baselines():
    # triton 1 ms, eager 2 ms, compile 3 ms at every size.
    record = synthetic_record(catalog.SCALE_SHIFT, n_x=4)
    text = page.against_the_roof(Result(catalog.SCALE_SHIFT, record, "committed"))
    # Each provider's share names the ceiling its rows are read against, from the record.
    assert "Triton (gpuperf.kernels.scale_shift): " in text
    assert "of the stream bandwidth (addcmul) from 8,192 rows up" in text
    assert "Triton over eager x * scale + shift (2 kernels): 2.00× the speed" in text
    assert "Triton over torch.compile(eager): 3.00× the speed" in text
    # Each version against the copy the record measured beside the stream, at the largest size.
    copy = record["ceilings"]["copy_gbps"]
    flat = " ".join(text.split())
    largest = max(catalog.SCALE_SHIFT.x_values[:4])
    assert f"at {largest:,} rows, against the copy bandwidth of the same run (" in flat
    for row in record["rows"]:
        if row["x"] == largest:
            assert f"{row['label']} {100 * row['value'] / copy['value']:.0f}%" in flat
    # A record without the copy beside its ceiling has no such line.
    del record["ceilings"]["copy_gbps"]
    text = page.against_the_roof(Result(catalog.SCALE_SHIFT, record, "committed"))
    assert "against the copy bandwidth" not in text
    with pytest.raises(ValueError, match="scale_shift"):
        page.against_the_roof(Result(catalog.VECTOR_ADD, synthetic_record(), "committed"))


def test_paragraph_reads_the_record_and_the_capture(tmp_path, monkeypatch):
    root = copy_measurements(tmp_path, monkeypatch)
    record = synthetic_record(catalog.SCALE_SHIFT, gpu="NVIDIA H100 80GB HBM3", n_x=4)
    records.write(record, root)
    captures.write(timing_capture("NVIDIA H100 80GB HBM3"), root)
    paragraph = page.in_one_paragraph()
    text = paragraph.text()
    assert "On the H100 80GB HBM3, the small Triton kernel this guide writes streams at" in text
    assert "2.00× the speed of eager PyTorch, 3.00× the speed of torch.compile" in text
    assert (
        "on 16 rows, CUDA events around one call read 30.0 µs, do_bench 4.0 µs and a call replayed from "
        "a CUDA graph, with no launch and a warm L2, 2.0 µs" in text
    )


def test_paragraph_notes_what_is_missing(tmp_path, monkeypatch):
    copy_measurements(tmp_path, monkeypatch, drop=["scale_shift.json", "captures/timing_scale_shift.json"])
    paragraph = page.in_one_paragraph()
    assert paragraph.sentences == ()
    assert any(n.startswith("MISSING") and "scale_shift" in n for n in paragraph.notes)
    assert any(n.startswith("MISSING") and "timing_scale_shift" in n for n in paragraph.notes)
