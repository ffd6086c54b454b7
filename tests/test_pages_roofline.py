"""The roofline: its arithmetic, the placing of record rows, and the chart, on the committed records."""

import copy
import dataclasses
import json
import math

import pytest

from gpuperf.bench import catalog, metrics, records
from gpuperf.bench.catalog import Benchmark, Provider, call
from gpuperf.pages import roofline, roofline_plot
from gpuperf.pages.plotting import short_gpu_name
from gpuperf.pages.report import gpus_with_current
from gpuperf.pages.roofline import (
    MAX_LAUNCH_FLOOR_MS,
    Placement,
    Point,
    Roof,
    arithmetic_intensity,
    attainable_tflops,
    chart_series,
    load_gpu,
    place_record,
    ridge_point,
)
from tests.test_bench_records import MATMUL_LIKE, fake_provenance, synthetic_record

GPUS = roofline.gpus()

#: A hardware.json for synthetic GPUs: 1000 GB/s and 100 TFLOP/s (ridge 100 FLOP/B) in
#: float16, 10 TFLOP/s (ridge 10) in float32.
HARDWARE = {
    "schema_version": 1,
    "provenance": fake_provenance() | {"l2_bytes": 1000},
    "ceilings": {
        "copy_gbps": {"value": 1000.0, "value_p20": 990.0, "value_p80": 1010.0, "unit": "GB/s", "ms": 1.0},
        "fp16_tflops": {"value": 100.0, "value_p20": 99.0, "value_p80": 101.0, "unit": "TFLOP/s", "ms": 1.0},
        "fp32_tflops": {"value": 10.0, "value_p20": 9.9, "value_p80": 10.1, "unit": "TFLOP/s", "ms": 1.0},
    },
}


# The arithmetic --------------------------------------------------------------------


def test_intensity_is_flops_per_byte():
    # Vector add of N float32: N additions over 12 N bytes.
    n = 2**20
    assert arithmetic_intensity(metrics.vector_add_flops(n), metrics.elementwise_bytes(n, 4)) == 1 / 12
    # A square fp16 matmul: 2 n^3 over 3 n^2 * 2 bytes = n / 3.
    assert arithmetic_intensity(
        metrics.matmul_flops(3072, 3072, 3072), metrics.matmul_bytes(3072, 3072, 3072, 2)
    ) == pytest.approx(1024)
    assert arithmetic_intensity(0, 8) == 0.0


def test_ridge_point_is_peak_over_bandwidth():
    # 989 TFLOP/s over 3.35 TB/s: 295 FLOP per byte.
    assert ridge_point(989, 3350) == pytest.approx(295.2, abs=0.1)
    assert ridge_point(100, 1000) == 100.0


@pytest.mark.parametrize(
    ("intensity", "expected"),
    [(0.0, 0.0), (1.0, 1.0), (50.0, 50.0), (100.0, 100.0), (100.5, 100.0), (1e6, 100.0)],
    ids=["zero", "memory-bound", "below-ridge", "at-ridge", "past-ridge", "far-right"],
)
def test_attainable_is_the_lower_of_the_two_roofs(intensity, expected):
    # 100 TFLOP/s and 1000 GB/s: the slope gives intensity * 1 TFLOP/s.
    assert attainable_tflops(intensity, 100, 1000) == pytest.approx(expected)
    roof = Roof("fp16_tflops", "test", 100.0, 1000.0)
    assert roof.attainable(intensity) == pytest.approx(expected)
    assert roof.ridge == 100.0


@pytest.mark.parametrize(
    ("call_", "error", "match"),
    [
        (lambda: arithmetic_intensity(1, 0), ValueError, "n_bytes must be positive, got 0"),
        (lambda: arithmetic_intensity(-1, 8), ValueError, "flops must be >= 0, got -1"),
        (lambda: arithmetic_intensity("8", 8), TypeError, "flops must be a number, got str"),
        (lambda: arithmetic_intensity(8, True), TypeError, "n_bytes must be a number, got bool"),
        (lambda: arithmetic_intensity(math.nan, 8), ValueError, "flops must be finite"),
        (lambda: ridge_point(0, 1000), ValueError, "must be positive, got 0.0 and 1000.0"),
        (lambda: ridge_point(100, -1), ValueError, "must be positive"),
        (lambda: attainable_tflops(-1, 100, 1000), ValueError, "intensity must be >= 0, got -1"),
        (lambda: attainable_tflops(None, 100, 1000), TypeError, "intensity must be a number, got NoneType"),
        (lambda: attainable_tflops(1, 100, math.inf), ValueError, "bandwidth_gbps must be finite"),
    ],
    ids=[
        "no-bytes",
        "negative-flops",
        "str",
        "bool",
        "nan",
        "zero-peak",
        "negative-bandwidth",
        "negative-intensity",
        "none",
        "inf",
    ],
)
def test_bad_arguments_are_refused(call_, error, match):
    with pytest.raises(error, match=match):
        call_()


def test_roofs_come_from_hardware_json_and_share_the_copy_bandwidth():
    made = roofline.roofs(HARDWARE)
    assert sorted(made) == ["fp16_tflops", "fp32_tflops"]
    assert {r.bandwidth_gbps for r in made.values()} == {1000.0}
    assert made["fp32_tflops"].ridge == 10.0
    assert made["fp16_tflops"].label == "cuBLAS fp16 matmul"
    with pytest.raises(ValueError, match="must hold the ceiling 'copy_gbps'"):
        roofline.roofs({"ceilings": {"fp16_tflops": HARDWARE["ceilings"]["fp16_tflops"]}})


def test_datasheet_roofs_are_cited_figures():
    sheet = roofline.datasheet_roofs("NVIDIA H100 80GB HBM3")
    assert sheet["bf16_tflops"].peak_tflops == 989.0 and sheet["bf16_tflops"].bandwidth_gbps == 3350.0
    assert {r.source for r in sheet.values()} == {"datasheet"}
    assert roofline.datasheet_roofs("A GPU no datasheet lists") == {}


# Placing rows ----------------------------------------------------------------------


def _place(record, l2=None):
    return place_record(record, roofline.roofs(HARDWARE), l2)


def test_rows_are_placed_from_their_bytes_flops_and_time():
    record = synthetic_record(catalog.VECTOR_ADD, n_x=3)
    points, skipped = _place(record)
    assert skipped == [] and len(points) == len(record["rows"])
    for p, row in zip(points, record["rows"], strict=True):
        assert p.intensity == pytest.approx(row["flops"] / row["bytes"])
        assert p.tflops == pytest.approx(row["flops"] / (row["ms"] * 1e-3) / 1e12)
        assert p.gbps == pytest.approx(row["value"])  # the record's own GB/s
        # Not a matmul: read against the CUDA cores' float32 roof.
        assert p.roof == "fp32_tflops"
    assert [p.role for p in points[:2]] == ["subject", "baseline"]


def test_compute_bound_rows_are_read_against_their_own_ceiling():
    record = synthetic_record(MATMUL_LIKE, n_x=2)
    record["ceilings"].pop("bf16_tflops")
    record["rows"] = [r for r in record["rows"] if r["axes"]["dtype"] == "float16"]
    points, _ = _place(record)
    assert {p.roof for p in points} == {"fp16_tflops"}
    assert {p.role for p in points} == {"subject", "baseline", "other"}
    assert [p.tflops for p in points[:3]] == pytest.approx([r["value"] for r in record["rows"][:3]])


def test_rows_without_a_roof_on_this_gpu_are_skipped():
    # HARDWARE has no bf16 ceiling: the bfloat16 rows cannot be read against anything.
    record = synthetic_record(MATMUL_LIKE, n_x=2)
    points, skipped = _place(record)
    assert {p.axes["dtype"] for p in points} == {"float16"}
    assert skipped == [("matmul_like", "no roof 'bf16_tflops' measured on this GPU", 6)]


def test_failed_rows_and_rows_without_work_are_skipped_and_counted():
    record = synthetic_record(catalog.VECTOR_ADD, n_x=3)
    record["rows"][0].update(status="error", message="boom", ms=None, value=None)
    record["rows"][1].update(status="mismatch", message="off", ms=None, value=None)
    record["rows"][2]["flops"] = 0
    record["rows"][3]["bytes"] = 0
    points, skipped = _place(record)
    assert len(points) == len(record["rows"]) - 4
    # Failed rows are counted with the providers they are of.
    which = [r["provider"] for r in record["rows"][:2]]
    assert sorted(skipped) == [
        ("vector_add", f"status error ({which[0]})", 1),
        ("vector_add", f"status mismatch ({which[1]})", 1),
        ("vector_add", "zero FLOPs or bytes: no intensity", 2),
    ]


def test_host_time_and_peak_memory_are_not_placed():
    host = copy.deepcopy(synthetic_record(catalog.HOST_OVERHEAD, n_x=2))
    points, skipped = _place(host)
    assert points == [] and skipped == [("host_overhead", "host time per call, not a GPU rate", 6)]
    memory = synthetic_record(catalog.VECTOR_ADD, n_x=1)
    memory["metric"] = "GiB"
    assert _place(memory) == ([], [("vector_add", "peak memory, not a GPU rate", 2)])


def test_l2_resident_rows_are_marked():
    record = synthetic_record(catalog.VECTOR_ADD, n_x=3)  # 48, 96 and 192 KiB of traffic
    points, _ = _place(record, l2=100 * 1024)
    assert [p.l2_resident for p in points] == [True, True, True, True, False, False]
    assert not any(p.l2_resident for p in _place(record, l2=None)[0])


def _gpu_folder(tmp_path, *recs):
    folder = tmp_path / "test-gpu-80gb"
    folder.mkdir()
    (folder / "hardware.json").write_text(json.dumps(HARDWARE))
    for record in recs:
        (folder / f"{record['benchmark']}.json").write_text(json.dumps(record))
    return folder.name


#: A benchmark no catalog declares (a guide's new kernel, say): placed all the same.
NEW_KERNEL = Benchmark(
    name="new_elementwise",
    title="A new elementwise kernel, bfloat16",
    x_name="n_elements",
    x_label="elements",
    x_values=(2**10, 2**20, 2**24),
    make_inputs=lambda n, device: (),
    reference=lambda: None,
    providers=(
        Provider("triton", "Triton", call(abs)),
        Provider("compile", "torch.compile", call(abs)),
        Provider("torch", "eager", call(abs)),
    ),
    baseline="torch",
    metric="GB/s",
    bytes=lambda n: metrics.elementwise_bytes(n, 2, n_inputs=1),
    flops=lambda n: 8 * n,
    ceiling="copy_gbps",
    sources=("kernels/vector_add.py",),
)


def test_a_record_of_any_benchmark_is_placed_without_code(tmp_path):
    record = synthetic_record(NEW_KERNEL, n_x=3, ms=lambda c, i, p: 0.001 * (i + 1) * (1 + p))
    record["ceilings"]["copy_gbps"] = HARDWARE["ceilings"]["copy_gbps"] | {"label": "copy bandwidth"}
    gpu = _gpu_folder(tmp_path, record)
    placement = load_gpu(gpu, root=tmp_path)
    assert placement.gpu == "Test GPU 80GB" and placement.skipped == [] and placement.notes == []
    assert len(placement.points) == 9
    assert {p.intensity for p in placement.points} == {2.0}  # 8 FLOPs per 4 bytes
    top = placement.largest("new_elementwise", "triton")
    assert top.x == 2**24 and top.ms == pytest.approx(0.003)
    assert placement.fraction(top) == pytest.approx(top.gbps / 1000.0)
    # The shortest call is 1 us; 2x of it or less counts as launch-bound.
    assert placement.launch_floor_ms() == pytest.approx(0.001)
    assert [placement.launch_bound(p) for p in placement.find("new_elementwise", "triton")] == [
        True,
        False,
        False,
    ]
    series = chart_series(placement)
    assert [(s.provider, s.role, len(s.points)) for s in series] == [
        ("triton", "subject", 3),
        ("compile", "other", 3),
        ("torch", "baseline", 3),
    ]


#: A kernel read in GB/s whose 50 FLOP/B run on the tensor cores in float16: right of
#: HARDWARE's float32 ridge (10) but left of its float16 one (100).
GEMV_LIKE = dataclasses.replace(
    NEW_KERNEL, name="new_gemv", flops=lambda n: 200 * n, compute_roof="fp16_tflops"
)


def test_rows_read_against_a_bandwidth_take_the_roof_of_their_engine():
    record = synthetic_record(GEMV_LIKE, n_x=3)
    tensor_cores, _ = place_record(record, roofline.roofs(HARDWARE), benchmark=GEMV_LIKE)
    assert {p.roof for p in tensor_cores} == {"fp16_tflops"}
    placement = Placement("Test GPU 80GB", "test", HARDWARE, roofline.roofs(HARDWARE), {}, tensor_cores)
    for p in tensor_cores:
        # Left of the float16 ridge: a share of intensity x bandwidth, the traffic's share of the copy.
        assert p.intensity == 50 and roofline.bound_by(placement, p) == "memory"
        assert placement.fraction(p) == pytest.approx(p.gbps / 1000.0)
    # Without its declaration the same rows land right of the float32 ridge, read against
    # a peak their arithmetic never runs on.
    cuda_cores, _ = _place(record)
    placement.points = cuda_cores
    assert {p.roof for p in cuda_cores} == {"fp32_tflops"}
    assert all(roofline.bound_by(placement, p) == "compute" for p in cuda_cores)


def _point(ms, ms_p80=None, flops=1e9, roof="fp32_tflops"):
    return Point("b", "t", "triton", "Triton", "subject", 1, {}, 1e9, flops, ms, roof, False, ms_p80)


def test_beyond_roof_counts_the_spread_of_both_measurements():
    placement = Placement("Test GPU 80GB", "test", HARDWARE, roofline.roofs(HARDWARE), {})
    # 1 GB and 1 GFLOP a call: 1 FLOP/B, memory-bound; the copy's fast end is 1010 GB/s.
    assert placement.fraction(_point(1.0, 1.1)) == pytest.approx(1.0)
    assert not placement.beyond_roof(_point(1.0, 1.1))
    # 3% above the median roof, but its slow end (1005 GB/s) within the copy's spread.
    assert not placement.beyond_roof(_point(0.97, 0.995))
    # Its slow end (1015 GB/s) above the copy's fast end.
    assert placement.beyond_roof(_point(0.97, 0.985))
    # A row without percentiles is taken at its median.
    assert placement.beyond_roof(_point(0.97))
    # Compute-bound: 10 FLOP/B against float32's 10.1 TFLOP/s fast end.
    assert not placement.beyond_roof(_point(1.0, 0.995, flops=1e10))
    assert placement.beyond_roof(_point(0.97, 0.985, flops=1e10))


#: The synthetic GPU with a stream bandwidth measured too: 1100 GB/s, above its 1000 GB/s copy.
HARDWARE_READ = copy.deepcopy(HARDWARE)
HARDWARE_READ["ceilings"]["stream_gbps"] = {
    "value": 1100.0,
    "value_p20": 1095.0,
    "value_p80": 1105.0,
    "unit": "GB/s",
    "ms": 1.0,
}


def test_without_a_stream_bandwidth_the_memory_roof_is_the_copy():
    # A hardware.json measured before the stream bandwidth existed.
    assert roofline.memory_key(HARDWARE) == "copy_gbps"
    assert {r.bandwidth_gbps for r in roofline.roofs(HARDWARE).values()} == {1000.0}
    placement = Placement("Test GPU 80GB", "test", HARDWARE, roofline.roofs(HARDWARE), {})
    assert placement.memory_gbps == placement.bandwidth_gbps == 1000.0
    # A read-heavy stream at 1050 GB/s (1 GB in 0.952 ms) is 5% above the copy roof.
    read_heavy = _point(1 / 1.05, 1 / 1.05)
    assert placement.fraction(read_heavy) == pytest.approx(1.05)
    assert placement.beyond_roof(read_heavy)
    # The table's footer names the roof the shares are of.
    placement.points = [read_heavy]
    assert "intensity x copy bandwidth" in roofline.table([placement])


def test_with_a_stream_bandwidth_memory_bound_rows_are_read_against_it():
    assert roofline.memory_key(HARDWARE_READ) == "stream_gbps"
    made = roofline.roofs(HARDWARE_READ)
    # Every roof's slope is the stream bandwidth; the ridges move left by 1000/1100.
    assert {r.bandwidth_gbps for r in made.values()} == {1100.0}
    assert made["fp32_tflops"].ridge == pytest.approx(10e3 / 1100)
    placement = Placement("Test GPU 80GB", "test", HARDWARE_READ, made, {})
    assert placement.memory_gbps == 1100.0 and placement.bandwidth_gbps == 1000.0
    # The read-heavy stream at 1050 GB/s: above the copy, within the stream roof.
    read_heavy = _point(1 / 1.05, 1 / 1.05)
    assert placement.fraction(read_heavy) == pytest.approx(1050 / 1100)
    assert not placement.beyond_roof(read_heavy)
    # A stream at the copy's rate is 91% of the stream roof; one past the stream roof's fast
    # end (1105 GB/s) is beyond it.
    assert placement.fraction(_point(1.0, 1.0)) == pytest.approx(1000 / 1100)
    assert placement.beyond_roof(_point(1 / 1.11, 1 / 1.11))
    # The table's shares use the stream roof, and its footer says so.
    record = synthetic_record(NEW_KERNEL, n_x=3, ms=lambda c, i, p: 0.001 * (i + 1) * (1 + p))
    placement.points, _ = place_record(record, made, None, NEW_KERNEL)
    top = placement.largest("new_elementwise", "triton")
    assert placement.fraction(top) == pytest.approx(top.gbps / 1100.0)
    text = roofline.table([placement])
    assert "intensity x stream bandwidth" in text and f"{100 * top.gbps / 1100:.0f}%" in text


#: The same kernel in two storage dtypes: half the bytes in bfloat16, so twice the intensity.
TWO_DTYPES = Benchmark(
    **{
        **{f: getattr(NEW_KERNEL, f) for f in NEW_KERNEL.__dataclass_fields__},
        "name": "new_two_dtypes",
        "axes": (("dtype", ("float32", "bfloat16", "float16")),),
        "bytes": lambda n, dtype: metrics.elementwise_bytes(n, 4 if dtype == "float32" else 2, n_inputs=1),
        "flops": lambda n, dtype: 8 * n,
    }
)


def test_combinations_at_other_intensities_are_drawn_too(tmp_path):
    record = synthetic_record(TWO_DTYPES, n_x=2)
    record["ceilings"]["copy_gbps"] = HARDWARE["ceilings"]["copy_gbps"] | {"label": "copy bandwidth"}
    placement = load_gpu(_gpu_folder(tmp_path, record), root=tmp_path)
    subjects = [s for s in chart_series(placement) if s.role == "subject"]
    # float16 has bfloat16's intensity on the same (float32) roof: one point for both.
    assert [(s.name, s.largest.intensity) for s in subjects] == [
        ("new_two_dtypes fp32", 1.0),
        ("new_two_dtypes bf16", 2.0),
    ]


def test_a_malformed_record_is_skipped_with_its_reason(tmp_path, monkeypatch):
    gpu = _gpu_folder(tmp_path, {"benchmark": "broken", "rows": []})
    placement = load_gpu(gpu, root=tmp_path)
    assert placement.points == []
    assert placement.skipped[0][0] == "broken" and placement.skipped[0][1].startswith("malformed record")
    # Nothing to place: no table section, no chart.
    monkeypatch.setenv("GPUPERF_TABLES", "text")
    assert roofline.table([placement]) == ""
    with pytest.raises(ValueError, match="must hold a placed record"):
        roofline_plot.overview(placement)


def test_a_gpu_without_hardware_json_is_refused(tmp_path):
    (tmp_path / "bare").mkdir()
    with pytest.raises(FileNotFoundError, match=r"hardware\.json: the roofline needs the ceilings"):
        load_gpu("bare", root=tmp_path)
    assert roofline.gpus(tmp_path) == []


# The committed records -------------------------------------------------------------


def test_both_reference_gpus_have_roofs():
    assert GPUS[0] == records.reference_gpu()
    assert {"nvidia-h100-80gb-hbm3", "nvidia-h200"} <= set(GPUS)


@pytest.mark.parametrize("gpu", GPUS)
def test_every_committed_rate_row_is_placed_or_accounted_for(gpu):
    placement = load_gpu(gpu)
    folder = records.measurements_dir() / gpu
    expected_points = 0
    expected_skipped = 0
    for path in folder.glob("*.json"):
        if path.name == "hardware.json":
            continue
        record = records.read(path)
        stale = records.staleness(record, catalog.by_name(record["benchmark"]))
        if record["metric"] not in roofline.PLACED_METRICS or (stale and gpu != records.reference_gpu()):
            expected_skipped += len(record["rows"])
            continue
        for row in record["rows"]:
            placed = row["status"] == "ok" and row["flops"] > 0 and row["bytes"] > 0
            expected_points += placed
            expected_skipped += not placed
            if not placed:
                continue
            (p,) = placement.find(record["benchmark"], row["provider"], row["x"], **row["axes"])
            # Each point follows from the row's own work and time, and agrees with its metric.
            rate = p.gbps if record["metric"] == "GB/s" else p.tflops
            assert rate == pytest.approx(row["value"])
    assert len(placement.points) == expected_points
    # The reference GPU places every record; another may hold none current (all skipped).
    assert expected_points > 0 or gpu != records.reference_gpu()
    assert sum(n for _, _, n in placement.skipped) == expected_skipped


@pytest.mark.parametrize("gpu", GPUS)
def test_committed_records_fall_where_the_model_says(gpu):
    # A GPU is read on the kernels it holds a current record of (the reference GPU on all).
    placement = load_gpu(gpu)
    vector_add = placement.largest("vector_add", "triton")
    matmul = placement.largest("matmul", "cublas", dtype="bfloat16")
    assert (vector_add is not None) == (gpu in gpus_with_current(catalog.VECTOR_ADD))
    assert (matmul is not None) == (gpu in gpus_with_current(catalog.MATMUL))
    if matmul is not None:
        assert roofline.bound_by(placement, matmul) == "compute"
    if vector_add is not None:
        assert roofline.bound_by(placement, vector_add) == "memory"
        # Memory-bound points are read against the bandwidth: their share of the roof is the
        # share of the memory roof (the stream bandwidth) their traffic reaches.
        assert placement.fraction(vector_add) == pytest.approx(vector_add.gbps / placement.memory_gbps)
        # The smallest vector add is the shortest kernel there is: launch-bound.
        assert placement.launch_bound(min(placement.find("vector_add", "triton"), key=lambda p: p.x))
        assert not placement.launch_bound(vector_add)


@pytest.mark.parametrize("gpu", GPUS)
def test_tensor_core_kernels_read_in_gb_s_are_read_against_the_bf16_roof(gpu):
    placement = load_gpu(gpu)
    found = 0
    for name in ("matmul_small_m", "attention_decode", "llama_decode"):
        for p in placement.find(name):
            found += 1
            assert p.roof == "bf16_tflops"
            assert roofline.bound_by(placement, p) == "memory"
            assert placement.fraction(p) == pytest.approx(p.gbps / placement.memory_gbps)
    assert found or gpu != records.reference_gpu()


#: Table rows whose kernels read more bytes than they write, and how many per byte written.
#: The copy that measures the bandwidth roof reads one byte per byte written; these
#: stream a few percent faster (the roofline guide's reading A shows the order).
READ_HEAVY = {
    "vector_add": "two inputs per output",
    "add_relu_mul": "three inputs per output",
    "attention_decode": "reads the KV cache, writes one token per head",
}


@pytest.mark.parametrize("gpu", GPUS)
def test_no_table_row_is_above_its_roof_beyond_the_spread_but_read_heavy_streams(gpu, monkeypatch):
    placement = load_gpu(gpu)
    if not placement.points:
        pytest.skip(f"{gpu} holds no current record to place")
    shown = [s.largest for s in chart_series(placement) if s.role != "other"]
    beyond = [p for p in shown if placement.beyond_roof(p)]
    # Every row read against a compute peak is within its roof and the spreads; only
    # streams that read more than they write are above the copy roof beyond them.
    for p in beyond:
        assert roofline.bound_by(placement, p) == "memory", p
        assert p.benchmark in READ_HEAVY, p
    # Against the stream roof (the fastest stream measured) no row the table shows is
    # beyond its roof (the readings name the placed rows of other providers that are).
    if placement.memory_key == "stream_gbps":
        assert beyond == []
    # A stream that reads as much as it writes, like the copy, is within it (where the GPU
    # holds a current record of it: another GPU's record of code changed since is not placed).
    gelu = placement.largest("gelu", "triton", dtype="float32")
    assert gelu is not None or gpu != records.reference_gpu()
    assert gelu is None or not placement.beyond_roof(gelu)
    # The table marks exactly those rows.
    monkeypatch.setenv("GPUPERF_TABLES", "text")
    lines = roofline.table([placement]).splitlines()
    marked = [line for line in lines if line.rstrip().endswith(roofline.BEYOND_MARK)]
    assert len(marked) == len(beyond)
    assert (roofline.BEYOND_MARK in lines[-1]) == bool(beyond)


def _has_attention(gpu) -> bool:
    """Whether ``gpu`` holds a current record of an attention benchmark with a causal axis
    (tutorial 04's and tutorial 08's): only then does its chart pair causal points."""
    benchmarks = (catalog.ATTENTION_FORWARD, catalog.ATTENTION_BACKWARD, catalog.GLUON_ATTENTION)
    return any(gpu in gpus_with_current(b) for b in benchmarks)


@pytest.mark.parametrize("gpu", GPUS)
def test_chart_draws_each_dtype_roof_and_pairs_causal_attention(gpu):
    series = chart_series(load_gpu(gpu))
    matmul = {s.name for s in series if s.benchmark == "matmul" and s.role == "subject"}
    assert matmul == ({"matmul fp16", "matmul bf16"} if gpu in gpus_with_current(catalog.MATMUL) else set())
    pairs = [s for s in series if s.pair is not None]
    # (tutorial 04's attention benchmarks and tutorial 08's Gluon attention have a causal axis)
    assert bool(pairs) == _has_attention(gpu)
    assert all("attention" in s.benchmark and s.axes["causal"] for s in pairs)
    assert all(s.pair.axes == {**s.axes, "causal": False} for s in pairs)
    for s in series:
        assert all(p.axes == s.axes and p.provider == s.provider for p in s.points)


@pytest.mark.parametrize("gpu", GPUS)
def test_fp8_accumulation_modes_are_named_by_mode_not_by_fp32(gpu):
    """matmul_fp8's float32 accumulation is promoted FP8: its label must not read as a
    float32 product (the CUDA-core fp32 roof)."""
    names = {s.name for s in chart_series(load_gpu(gpu)) if s.benchmark == "matmul_fp8"}
    assert not any("fp32" in name for name in names)
    if gpu in gpus_with_current(catalog.MATMUL_FP8):
        assert {"matmul_fp8 promoted", "matmul_fp8 fast"} <= names


def test_table_lists_every_drawn_benchmark(monkeypatch):
    monkeypatch.setenv("GPUPERF_TABLES", "text")
    placements = [load_gpu(g) for g in GPUS]
    text = roofline.table(placements)
    for placement in placements:
        for name in {p.benchmark for p in placement.points}:
            assert name in text
    assert "triton (ours)" in text and "% of roof" in text


MARKS = {"A": ("vector_add", "triton", {}), "B": ("matmul", "triton", {"dtype": "bfloat16"})}


@pytest.mark.parametrize("gpu", GPUS)
@pytest.mark.parametrize("figure", ["overview", "compute_bound"])
def test_charts_of_the_committed_records_are_legible(gpu, figure):
    import matplotlib

    matplotlib.use("agg")
    from gpuperf.pages.plotting import overlapping_texts

    placements = [load_gpu(g) for g in GPUS]
    placement = placements[GPUS.index(gpu)]
    if not placement.points:
        pytest.skip(f"{gpu} holds no current record to place (the guide draws no chart for it)")
    fig = getattr(roofline_plot, figure)(placement, shared=placements, marks=MARKS)
    assert overlapping_texts(fig) == []
    (legend,) = fig.legends
    assert len(legend.get_texts()) <= 10
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    # The marked kernels are drawn on each GPU that holds a current record of them.
    if figure == "overview":
        drawn = gpu in gpus_with_current(catalog.VECTOR_ADD)
        assert ("A" in texts and "vector_add" in texts) == drawn
        # (Named where the GPU's records hold a near-empty kernel to take as the launch floor.)
        assert any(t.startswith("launch-bound") for t in texts) == (placement.launch_floor_ms() is not None)
    else:
        assert ("B" in texts and "matmul bf16" in texts) == (gpu in gpus_with_current(catalog.MATMUL))
        assert any(t.startswith("causal") for t in texts) == _has_attention(gpu)
    assert fig.texts[0].get_text().startswith(short_gpu_name(placement.gpu))


def test_charts_refuse_a_gpu_without_points():
    empty = roofline.Placement(gpu="x", slug="x", hardware=HARDWARE, roofs={}, datasheet={})
    with pytest.raises(ValueError, match="must hold a placed record"):
        roofline_plot.overview(empty)


def test_a_gpu_whose_shortest_kernel_does_real_work_has_no_launch_floor():
    # A GPU whose current records are attention's alone (the H200's, at times) has no call
    # short enough to be a launch floor. A GPU with no current record has no point at all.
    for placement in (p for p in (load_gpu(g) for g in GPUS) if p.points):
        floor = min(p.ms for p in placement.points)
        assert (placement.launch_floor_ms() is None) == (floor > MAX_LAUNCH_FLOOR_MS)


def test_the_panels_hold_every_point_they_label():
    placements = [load_gpu(g) for g in GPUS]
    every = [chart_series(p) for p in placements]
    whole, corner = roofline_plot.regions(placements, every)
    ridge = max(r.ridge for p in placements for r in p.roofs.values())
    for placement, series in zip(placements, every, strict=True):
        for s in series:
            top = s.largest
            assert roofline_plot._inside(top, whole), (s.name, s.provider)
            if s.role != "other" and top.intensity >= ridge:
                assert roofline_plot._inside(top, corner), (s.name, s.provider)
        # The limits the chart names: the slowest launch-bound size and the causal pairs.
        notes = dict((text.split(":")[0], p) for p, text in roofline_plot.limit_notes(placement, series))
        assert ("launch-bound" in notes) == (placement.launch_floor_ms() is not None)
        assert "launch-bound" not in notes or placement.launch_bound(notes["launch-bound"])
        assert ("causal" in notes) == _has_attention(placement.slug)
        assert "causal" not in notes or notes["causal"].axes["causal"] is True
