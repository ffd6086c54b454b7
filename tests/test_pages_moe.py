"""Tutorial 09's page module (gpuperf.pages.moe) and the shared breakdown chart
(gpuperf.pages.breakdown): sentences and tables read the committed records, the FP8
experiment's errors behave, the breakdown reads a capture of the agreed shape (a synthetic
one, written here), the charts are legible and wrong inputs are refused."""

import matplotlib
import pytest
import torch

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from gpuperf.bench import captures
from gpuperf.bench.catalog import moe as cat
from gpuperf.pages import breakdown
from gpuperf.pages import moe as page
from gpuperf.pages.plotting import format_x, overlapping_texts
from gpuperf.pages.prose import percent, percent_span, times, times_span
from gpuperf.pages.report import load
from tests._pages import copy_measurements, records_as_text  # noqa: F401 (autouse)
from tests.test_bench_records import fake_provenance

H100 = "NVIDIA H100 80GB HBM3"


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def _flat(text) -> str:
    return " ".join(str(text).split())


# --- the records ---------------------------------------------------------------------------


def test_the_paragraph_reads_prefill_and_decode_from_the_records():
    text = _flat(page.in_one_paragraph().text())
    layer, decode = load(cat.MOE_LAYER), load(cat.MOE_LAYER_DECODE)
    assert (
        f"{times_span(layer.ratios('triton', over='grouped_mm').values())} as fast as the same block" in text
    )
    for model, ratio in layer.ratios("triton", over="compile").items():
        assert f"{times(ratio, 1)} ({page.MODEL_NAMES[model]})" in text
    assert f"of the rate of the {layer.ceiling_name()}" in text
    at64 = [decode.fraction_of_ceiling(model=m)[64] for m in cat.MOE_MODELS]
    roof = decode.ceiling_name(model="deepseek-v3", full=False)
    assert f"at {percent_span(at64)} of the {roof} with 64 tokens" in text
    assert "the same step replayed from one CUDA graph" in text


def test_the_loop_table_and_reading_quote_the_record():
    result = load(cat.GROUPED_MATMUL)
    table = page.loop_table(result)
    speed = result.ratios("cublas_loop", over="triton", routing="uniform")
    for gemm, ratio in speed.items():
        line = next(row for row in table.splitlines() if row.strip().startswith(gemm))
        assert times(ratio) in line
        assert f" {page.rows_per_expert(gemm.split()[0])} " in line
    reading = page.loop_reading(result)
    for model in cat.MOE_MODELS:
        experts, _ = page.experts_of(model)
        ratios = [speed[g] for g in speed if g.startswith(model)]
        assert f"{experts} experts of {page.rows_per_expert(model)} rows" in reading
        assert f"at {times_span(ratios)} our speed" in reading


def test_imbalance_reading_gives_each_providers_share_of_its_uniform_speed():
    result = load(cat.GROUPED_MATMUL)
    text = _flat(page.imbalance_reading(result))
    ours = page._skew_shares(result, "triton")
    many = [v for g, v in ours.items() if not g.startswith("mixtral")]
    assert f"ours {percent_span(many)}" in text
    table = page.imbalance_table(result)
    assert percent(ours["deepseek-v3 up"]) in next(r for r in table.splitlines() if "deepseek-v3 up" in r)


def test_routing_counts_are_the_benchmarks_offsets():
    counts = page.routing_counts("qwen3-30b-a3b")
    assert set(counts) == set(cat.MOE_ROUTINGS)
    for fewest, mean, most in counts.values():
        assert fewest <= mean <= most and mean == page.rows_per_expert("qwen3-30b-a3b")
    # Skewed routing gives the busiest expert more rows than uniform routing does.
    assert counts["skewed"][2] > counts["uniform"][2]
    with pytest.raises(ValueError, match="model must be one of"):
        page.routing_counts("gpt-5")


def test_fp8_table_and_reading_put_deepgemms_published_figures_beside_ours():
    result = load(cat.MATMUL_FP8_BLOCKWISE)
    table = page.fp8_table(result)
    ours = result.values("triton")
    for shape, tflops in page.DEEPGEMM_TFLOPS.items():
        line = next(r for r in table.splitlines() if r.strip().startswith(format_x(shape)))
        assert f" {tflops} " in line and percent(ours[shape] / tflops) in line
    assert page.DEEPGEMM_SOURCE in _flat(table)
    assert set(page.DEEPGEMM_TFLOPS) == set(cat.FP8_BLOCKWISE_SHAPES)
    reading = _flat(page.deepgemm_reading(result))
    big = [ours[s] / page.DEEPGEMM_TFLOPS[s] for s in ours if s[0] == 4096]
    assert f"M = 4096: ours at {percent_span(big)} of DeepGEMM's published TFLOP/s" in reading


def test_decode_reading_names_the_roof_of_the_record():
    result = load(cat.MOE_LAYER_DECODE)
    text = _flat(page.decode_reading(result))
    frac = result.fraction_of_ceiling(model="qwen3-30b-a3b")[1]
    assert f"Qwen3-30B-A3B {percent(frac)}" in text
    assert result.ceiling_name(model="qwen3-30b-a3b") in text


def test_wrong_results_are_refused():
    with pytest.raises(TypeError, match=r"must be a gpuperf\.pages\.Result"):
        page.loop_table("grouped_matmul")
    with pytest.raises(ValueError, match="must be a result of 'matmul_fp8_blockwise'"):
        page.fp8_table(load(cat.GROUPED_MATMUL))
    with pytest.raises(ValueError, match="must be a result of 'moe_layer_decode'"):
        page.decode_reading(load(cat.MOE_LAYER))


def test_the_fp8_chart_is_legible():
    fig = page.plot_fp8_blockwise(load(cat.MATMUL_FP8_BLOCKWISE))
    assert overlapping_texts(fig) == []
    assert all(ax.get_xlabel() for ax in fig.axes)


# --- the FP8 experiment --------------------------------------------------------------------


def test_block_scales_keep_the_ordinary_channels_where_one_scale_loses_them():
    from gpuperf.kernels import quantize_fp8_blockwise, to_fp8
    from gpuperf.reference import dequantize_fp8_blockwise_ref

    shape = (8, 16, 512)  # the outliers' tile holds a quarter of the channels
    errors = page.ScalingErrors(shape)
    a, w = page.outlier_channels(1e5, shape)
    exact = a @ w.T
    a8, sa = to_fp8(a)
    errors.add(1e5, "per tensor", a8.float() * sa, a, exact, exact)
    ab, sab = quantize_fp8_blockwise(a)
    errors.add(1e5, "blockwise", dequantize_fp8_blockwise_ref(ab, sab, (1, 128)), a, exact, exact)
    assert errors.error(1e5, "blockwise") < errors.error(1e5, "per tensor") / 2
    assert errors.error(1e5, "blockwise", "product") == 0.0
    assert "outlier channels 3, 70" in str(errors)
    with pytest.raises(KeyError, match="no error recorded"):
        errors.error(1.0, "blockwise")


def test_the_fp8_experiment_refuses_bad_input():
    with pytest.raises(ValueError, match="factor must be positive"):
        page.outlier_channels(0, (8, 16, 256))
    with pytest.raises(ValueError, match="K must be above"):
        page.outlier_channels(10, (8, 16, 64))
    errors = page.ScalingErrors((8, 16, 256))
    with pytest.raises(ValueError, match=r"expected \(8, 256\) activations"):
        errors.add(1, "x", torch.zeros(8, 128), torch.zeros(8, 256), torch.zeros(8, 16), torch.zeros(8, 16))
    with pytest.raises(ValueError, match="shapes differ"):
        page.relative_error(torch.zeros(2), torch.zeros(3))


# --- the breakdown -------------------------------------------------------------------------


def _payload() -> dict:
    """A small payload of the moe_time_breakdown shape: two models, prefill and decode."""
    parts = ["router", "permute", "gate_up", "activation", "down", "combine", "shared", "other"]

    def provider(label, scale):
        us = {p: scale * (i + 1) for i, p in enumerate(parts[:-1])}
        us["gate_up"] *= 6
        total = sum(us.values())
        return {
            "label": label,
            "parts_us": us,
            "kernels_us": total,
            "kernel_count": 12.0,
            "step_us": total * 1.5,
        }

    cases = []
    for model in ("mixtral-8x7b", "deepseek-v3"):
        for phase, x in (("prefill", 4096), ("decode", 1), ("decode", 64)):
            cases.append(
                {
                    "phase": phase,
                    "x_name": "tokens",
                    "x": x,
                    "axes": {"model": model},
                    "providers": {"triton": provider("ours", 10.0), "grouped_mm": provider("torch", 14.0)},
                }
            )
    return {"steps": 5, "sections": parts, "cases": cases}


@pytest.fixture
def with_capture(tmp_path, monkeypatch):
    root = copy_measurements(tmp_path, monkeypatch)
    capture = captures.build(
        page.BREAKDOWN, tool="test", payload=_payload(), provenance=fake_provenance(H100)
    )
    captures.write(capture, root)
    return capture


def test_the_breakdown_chart_draws_a_capture_of_the_agreed_shape(with_capture):
    fig = page.plot_time_breakdown()
    assert overlapping_texts(fig) == []
    titles = [ax.get_title(loc="left") for ax in fig.axes if ax.axison]
    assert "DeepSeek-V3\ndecode, 64 tokens: GPU µs per step" in titles
    assert "Mixtral-8x7B\ndecode, 1 token: GPU µs per step" in titles
    assert len(titles) == len(with_capture["payload"]["cases"])


def test_the_breakdown_table_gives_the_gemms_share_and_the_gpus_busy_time(with_capture):
    table = page.breakdown_table()
    p = with_capture["payload"]["cases"][0]["providers"]["triton"]
    gemm = (p["parts_us"]["gate_up"] + p["parts_us"]["down"]) / p["kernels_us"]
    line = next(r for r in table.splitlines() if "Mixtral-8x7B, prefill, 4096 tokens" in r and "ours" in r)
    assert percent(gemm) in line and percent(p["kernels_us"] / p["step_us"]) in line
    assert f"{p['step_us']:.0f}" in line and "shared" in line


def test_a_missing_breakdown_says_so(tmp_path, monkeypatch):
    copy_measurements(tmp_path, monkeypatch, drop=[f"captures/{page.BREAKDOWN}.json"])
    assert page.breakdown_table().startswith("MISSING")
    fig = page.plot_time_breakdown()
    assert any("MISSING" in t.get_text() for ax in fig.axes for t in ax.texts)


def test_check_payload_names_what_is_missing():
    payload = _payload()
    assert breakdown.check_payload(payload) is payload
    with pytest.raises(TypeError, match="payload must be"):
        breakdown.check_payload([])
    with pytest.raises(ValueError, match="needs 'cases'"):
        breakdown.check_payload({"sections": []})
    del payload["cases"][1]["axes"]
    with pytest.raises(ValueError, match=r"case 1 of the breakdown payload lacks \['axes'\]"):
        breakdown.check_payload(payload)
    payload = _payload()
    del payload["cases"][0]["providers"]["triton"]["kernels_us"]
    with pytest.raises(ValueError, match="provider 'triton' of case 0"):
        breakdown.check_payload(payload)


def test_the_shared_chart_refuses_bad_arguments():
    with pytest.raises(TypeError, match="title_of must be callable"):
        breakdown.plot_time_breakdown(page.BREAKDOWN, names={}, colors={}, title_of="x")
    with pytest.raises(ValueError, match="ncols must be a positive int"):
        breakdown.plot_time_breakdown(page.BREAKDOWN, names={}, colors={}, title_of=str, ncols=0)
