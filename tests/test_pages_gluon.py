"""Tutorial 08's page module (gpuperf.pages.gluon) on the committed records and capture: the
paragraph reads every rung's ratio from the record, the ladder table and the Nsight Compute
table show each provider, wrong inputs are refused, and the schedules compile for sm_90 here."""

import pytest

from gpuperf.bench import catalog
from gpuperf.pages import captures
from gpuperf.pages import gluon as page
from gpuperf.pages.report import load


@pytest.fixture(autouse=True)
def committed_records(monkeypatch):
    monkeypatch.setenv("GPUPERF_BENCH", "records")
    monkeypatch.setenv("GPUPERF_TABLES", "text")


def test_the_paragraph_states_the_ladder_from_the_record():
    result = load(catalog.GLUON_FP8)
    text = page.in_one_paragraph().text()
    ratios = [v for c in catalog.GLUON_FP8.combos() for v in result.ratios("gluon", **c).values()]
    assert f"{min(ratios):.2f}" in text and f"{max(ratios):.2f}" in text
    assert "cuBLASLt" in text and "persistence" in text


def test_the_ladder_table_shows_every_rung_and_cublaslt():
    table = page.fp8_ladder_table(load(catalog.GLUON_FP8))
    for name in (*page.FP8_RUNGS.values(), "cuBLASLt", "per-tensor scales", "per-row scales"):
        assert name in table


def test_the_ladder_table_refuses_other_inputs():
    with pytest.raises(TypeError, match=r"must be a gpuperf\.pages\.Result"):
        page.fp8_ladder_table({"rows": []})
    with pytest.raises(ValueError, match="must be a result of 'gluon_fp8'"):
        page.fp8_ladder_table(load(catalog.MATMUL_FP8))


def test_the_paragraph_states_the_attention_ladder_from_the_record():
    result = load(catalog.GLUON_ATTENTION)
    text = page.in_one_paragraph().text()
    d128 = [
        v
        for c in catalog.GLUON_ATTENTION.combos()
        if c["head_dim"] == 128
        for x, v in result.ratios("gluon", **c).items()
        if x >= page.LONG_SEQUENCE
    ]
    assert f"{min(d128):.2f}–{max(d128):.2f}× cuDNN's speed at D 128" in text
    assert "ping-pong" in text and "tutorial 04's Triton kernel" in text


def test_the_attention_ladder_table_shows_every_rung_and_cudnn():
    table = page.attention_ladder_table(load(catalog.GLUON_ATTENTION))
    for name in (*page.ATTENTION_RUNGS.values(), "cuDNN (SDPA)", "D 128, causal", "D 64, not causal"):
        assert name in table
    with pytest.raises(ValueError, match="must be a result of 'gluon_attention'"):
        page.attention_ladder_table(load(catalog.GLUON_FP8))


@pytest.mark.parametrize(
    "name, library, extra",
    [
        ("ncu_gluon_fp8", "nvjet", None),
        ("ncu_gluon_attention", "cudnn", "exp2 pipe %"),
        ("ncu_gluon_attention_d64", "cudnn", "exp2 pipe %"),
    ],
)
def test_the_ncu_table_shows_each_provider_and_the_libraries_kernels(name, library, extra):
    capture, notes = captures.load(name)
    assert capture is not None and notes == []
    table = page.ncu_table(capture)
    for row in capture["payload"]["rows"]:
        assert page.NCU_NAMES[name][row["provider"]] in table
    assert "kernel it ran" in table and library in table and "tensor pipe %" in table
    assert extra is None or extra in table
    if extra is None:  # a metric the capture did not collect gets no column
        assert "exp2 pipe %" not in table


@pytest.mark.parametrize(
    "fields, waits",
    [({"schedule": "drain"}, ("wgmma.wait_group 0",)), ({}, ("wgmma.wait_group 0", "wgmma.wait_group 1"))],
)
def test_each_schedule_compiles_for_sm90_here(fields, waits):
    from gpuperf.kernels.gluon import GluonFP8Config

    compiled = page.compile_fp8_schedule(GluonFP8Config(**fields), m=512, n=512, k=512)
    assert compiled.waits == waits
    assert not compiled.serialized and compiled.spilled == 0
    assert 0 < compiled.registers <= 255
    assert "asynchronous" in compiled.line()


@pytest.mark.parametrize(
    "fields, waits",
    [({"overlap": False}, ("wgmma.wait_group 0",)), ({}, ("wgmma.wait_group 0", "wgmma.wait_group 1"))],
)
def test_each_attention_schedule_compiles_for_sm90_here(fields, waits):
    """The FlashAttention-2 order drains; the overlap waits with P V in flight; both keep
    wgmma asynchronous, and the worker partitions ask for 240 (consumer) and 24 (producer)
    registers."""
    from gpuperf.kernels.gluon import FA3Config

    compiled = page.compile_attention_schedule(FA3Config(persistent=False, **fields))
    assert compiled.waits == waits
    assert not compiled.serialized and compiled.partition_registers == (240, 24)
    assert "(workers: 240 and 24)" in compiled.line()


def test_schedules_compile_side_by_side_and_come_back_under_their_names(monkeypatch):
    """Three compiles that each wait for the other two finish only if they run at once; the
    answers keep the order and names of the configs, and a failed compile raises."""
    import threading

    monkeypatch.setattr("os.cpu_count", lambda: 4)
    together = threading.Barrier(3, timeout=30)

    def compile_one(config):
        together.wait()
        return config * 10

    assert page.compile_schedules(compile_one, {"c": 3, "a": 1, "b": 2}) == {"c": 30, "a": 10, "b": 20}

    def failing(config):
        raise RuntimeError(f"the offline compile failed: {config}")

    with pytest.raises(RuntimeError, match="failed: 1"):
        page.compile_schedules(failing, {"a": 1})


def test_the_clock_comes_from_the_measured_ceiling_and_the_sms_rate():
    from gpuperf.pages import hardware

    hw = hardware.ceilings()
    sms = hw.provenance["sm_count"]
    for key in ("fp8_tflops", "fp16_tflops"):
        expected = hw.measured[key] * 1e12 / (sms * page.SM_PER_CLOCK[key]) / 1e9
        assert page.clock_ghz(hw, key) == pytest.approx(expected)
    # Below any boost clock: a lower bound, since no kernel keeps the tensor cores busy.
    assert 0.5 < page.clock_ghz(hw, "fp8_tflops") < 1.98
    with pytest.raises(ValueError, match="key must be"):
        page.clock_ghz(hw, "exp2")
    with pytest.raises(TypeError, match="ceilings must be"):
        page.clock_ghz({"fp8_tflops": 1.0}, "fp8_tflops")


def test_the_overlap_is_set_against_the_arithmetic():
    result = load(catalog.GLUON_FP8)
    text = " ".join(page.overlap_against_arithmetic(result, hidden=1.25).split())
    bought = [
        v
        for c in catalog.GLUON_FP8.combos()
        for v in result.ratios("gluon_pingpong", over="gluon_drain", **c).values()
    ]
    assert f"bought {min(bought):.2f}–{max(bought):.2f}×" in text
    assert "would give 1.25×" in text
    with pytest.raises(ValueError, match="hidden must be"):
        page.overlap_against_arithmetic(result, hidden=0.5)
    with pytest.raises(ValueError, match="must be a result of 'gluon_fp8'"):
        page.overlap_against_arithmetic(load(catalog.GLUON_ATTENTION), hidden=1.25)


def test_tile_intensity_counts_flops_per_operand_byte():
    assert page.tile_intensity({"block_m": 128, "block_n": 128}) == 128
    assert page.tile_intensity({"block_m": 128, "block_n": 256}, element_bytes=2) == pytest.approx(
        256 * 128 / 384
    )
    with pytest.raises(ValueError, match="block_n must be a positive int"):
        page.tile_intensity({"block_m": 128, "block_n": 0})


def test_the_l2_reading_is_the_captures_arithmetic():
    capture, _ = captures.load("ncu_gluon_fp8")
    result = load(catalog.GLUON_FP8)
    lines = page.l2_lines(capture, result)
    text = " ".join(" ".join(lines).split())
    rows = {r["provider"]: r["metrics"] for r in capture["payload"]["rows"]}
    shape, scaling = tuple(capture["payload"]["shape"]), capture["payload"]["scaling"]
    flops = 2 * shape[0] * shape[1] * shape[2]
    rate = rows["gluon"]["lts__t_bytes.sum.per_second"]["value"]
    seconds = rows["gluon"]["gpu__time_duration.sum"]["value"] * 1e-9
    row = result.rows("gluon", scaling=scaling)[shape]
    intensity = page.tile_intensity(row["config"])
    operands = flops / intensity
    assert f"L2 at {rate / 1e12:.2f} TB/s over the launch: {rate * seconds / 1e9:.2f} GB" in text
    assert f"{flops / (rate * seconds):.0f} FLOPs per byte; {flops / seconds / 1e12:.0f} TFLOP/s" in text
    assert f"{operands / 1e9:.2f} GB of operands" in text
    assert f"{operands / seconds / 1e12:.2f} TB/s over the launch's" in text
    # The committed capture: its rate times its time counts fewer bytes than the tiles load,
    # so the reading draws no conclusion on L2 as the limit.
    assert rate * seconds < operands
    assert f"counts {rate * seconds / 1e9:.2f} GB, {rate * seconds / operands:.2f}x the operands" in text
    assert "cannot say whether L2's rate bounds the kernel" in text
    assert "L2's rate is not what bounds it" not in text
    drain = rows["gluon_drain"]
    moved = drain["lts__t_bytes.sum.per_second"]["value"] * drain["gpu__time_duration.sum"]["value"] * 1e-9
    assert f"Gluon, drain then promote: {moved / 1e9:.2f} GB" in text
    peak = rows["gluon"]["lts__throughput.avg.pct_of_peak_sustained_elapsed"]["value"]
    assert f"L2 was at {peak:.0f}% of its peak throughput" in text
    assert "tensor pipe was busy" in text
    assert page.l2_reading({"x": capture}, result) == "\n".join(lines)
    assert page.l2_reading({}, result) == "Nothing to read: the capture is missing."


def test_the_l2_reading_with_consistent_counts_reads_the_limit():
    """A capture whose rate times time covers the tiles' operands: the reading compares the
    TFLOP/s L2 could feed with what the rung reached."""
    capture, _ = captures.load("ncu_gluon_fp8")
    result = load(catalog.GLUON_FP8)
    rows = []
    for r in capture["payload"]["rows"]:
        metrics = dict(r["metrics"])
        rate = metrics["lts__t_bytes.sum.per_second"]
        metrics["lts__t_bytes.sum.per_second"] = {**rate, "value": rate["value"] * 2}
        rows.append({**r, "metrics": metrics})
    doubled = {**capture, "payload": {**capture["payload"], "rows": rows}}
    text = " ".join(" ".join(page.l2_lines(doubled, result)).split())
    assert "L2 could feed at most" in text and "of what that rate can feed" in text
    assert "cannot say" not in text
    assert "Per byte through L2 the Gluon rung did" in text


def test_the_l2_reading_refuses_wrong_inputs():
    capture, _ = captures.load("ncu_gluon_fp8")
    with pytest.raises(TypeError, match=r"must be a gpuperf\.pages\.Result"):
        page.l2_lines(capture, None)
    with pytest.raises(ValueError, match="must be a result of 'gluon_fp8'"):
        page.l2_lines(capture, load(catalog.MATMUL_FP8))
    broken = {**capture, "payload": {**capture["payload"], "rows": capture["payload"]["rows"][:1]}}
    with pytest.raises(ValueError, match="the capture has no gluon row"):
        page.l2_lines(broken, load(catalog.GLUON_FP8))


def test_the_d64_reading_sets_the_kernel_against_cudnn_and_triton_at_every_length():
    result = load(catalog.GLUON_ATTENTION)
    text = " ".join(page.d64_reading(result).split())
    combos = [c for c in catalog.GLUON_ATTENTION.combos() if c["head_dim"] == 64]
    vs_cudnn = [v for c in combos for v in result.ratios("gluon", **c).values()]
    assert f"{min(vs_cudnn):.2f}–{max(vs_cudnn):.2f}× cuDNN's speed" in text
    assert ("short of it at every length measured" in text) == (max(vs_cudnn) < 1)
    lost = [
        (c["causal"], x)
        for c in combos
        for x, v in result.ratios("gluon", over="triton", **c).items()
        if x < page.LONG_SEQUENCE and v < 1
    ]
    for causal, x in lost:
        assert f"S {x} ({'causal' if causal else 'not causal'})" in text
    with pytest.raises(ValueError, match="must be a result of 'gluon_attention'"):
        page.d64_reading(load(catalog.GLUON_FP8))
