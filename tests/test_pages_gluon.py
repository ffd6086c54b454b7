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
    with pytest.raises(TypeError, match=r"expected a gpuperf\.pages\.Result"):
        page.fp8_ladder_table({"rows": []})
    with pytest.raises(ValueError, match="expected the result of 'gluon_fp8'"):
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
    with pytest.raises(ValueError, match="expected the result of 'gluon_attention'"):
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
    with pytest.raises(ValueError, match="expected the result of 'gluon_fp8'"):
        page.overlap_against_arithmetic(load(catalog.GLUON_ATTENTION), hidden=1.25)
