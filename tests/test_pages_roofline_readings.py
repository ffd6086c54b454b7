"""The roofline guide's sentences, checked against the placements they are read from."""

import dataclasses

import pytest

from gpuperf.pages import matmul, roofline
from gpuperf.pages import roofline_readings as readings
from gpuperf.pages.plotting import short_gpu_name

PLACES = readings.placements()


def test_both_gpus_are_read():
    assert len(PLACES) >= 2


def test_the_opening_paragraph_quotes_each_gpus_ridge_and_marked_kernels():
    text = readings.in_one_paragraph(PLACES).text()
    for p in PLACES:
        a, b = readings.marked(p, "A"), readings.marked(p, "B")
        ridge = p.roofs["bf16_tflops"].peak_tflops * 1e12 / (p.bandwidth_gbps * 1e9)
        assert f"On the {short_gpu_name(p.gpu)}" in text
        assert f"at {ridge:.0f} FLOP/B" in text
        assert f"reaches {100 * a.tflops / p.roof_of(a).attainable(a.intensity):.0f}%" in text
        assert f"({b.intensity:.0f} FLOP/B) {100 * p.fraction(b):.0f}%" in text


def test_a_gpu_without_the_marked_records_gets_a_note_not_a_sentence():
    bare = dataclasses.replace(PLACES[0], points=[])
    para = readings.in_one_paragraph([bare])
    assert para.sentences == ()
    assert para.notes == (f"{short_gpu_name(bare.gpu)}: the vector add or bf16 matmul record is missing",)


def test_each_reading_names_every_gpu():
    for reading in (
        readings.memory_bound,
        readings.read_mix,
        readings.compute_bound,
        readings.real_traffic,
        readings.far_below,
        readings.launch_bound,
        readings.l2_resident,
        readings.causal,
        readings.head_dims,
        readings.skipped,
    ):
        text = reading(PLACES)
        for p in PLACES:
            assert short_gpu_name(p.gpu) in text, (reading.__name__, p.gpu)


def test_memory_bound_reading_compares_rates_with_bandwidths():
    first, second = PLACES[:2]
    a1, a2 = readings.marked(first, "A"), readings.marked(second, "A")
    text = " ".join(readings.memory_bound(PLACES).split())
    assert f"{a2.tflops / a1.tflops:.2f}x the rate" in text
    assert f"{second.bandwidth_gbps / first.bandwidth_gbps:.2f}x the copy bandwidth" in text


def test_roofs_list_every_measured_roof():
    text = readings.roofs(PLACES)
    for p in PLACES:
        for roof in p.roofs.values():
            assert f"{roof.peak_tflops:>5.0f} TFLOP/s" in text
            assert f"ridge {roof.ridge:.0f} FLOP/B" in text


def test_an_unknown_letter_is_refused():
    with pytest.raises(ValueError, match="letter must be one of"):
        readings.marked(PLACES[0], "Z")


def test_read_mix_gives_each_streams_share_of_the_copy_roof_and_marks_those_beyond_it():
    text = " ".join(readings.read_mix(PLACES).split())
    rising = 0
    for p in PLACES:
        shares = []
        for bench, axes, reads in readings.READ_MIX:
            point = p.largest(bench, "triton", **axes)
            mark = roofline.BEYOND_MARK if p.beyond_roof(point) else ""
            assert f"{bench} {reads}:1 {100 * p.fraction(point):.0f}%{mark}" in text
            shares.append(p.fraction(point))
        rising += shares == sorted(shares)
    assert f"rises with the bytes read per byte written on {rising} of {len(PLACES)} GPUs" in text


def test_real_traffic_counts_flops_per_byte_read_from_dram_against_the_ridge():
    text = " ".join(readings.real_traffic(PLACES).split())
    for p in PLACES:
        rows = matmul.counter_rows(matmul.ncu_record(p.slug), p.bandwidth_gbps)
        for r in (r for r in rows if r["shape"] == (16384,) * 3):
            provider = "triton" if r["order"] == "grouped" else "triton_rowmajor"
            (point,) = p.find("matmul_order", provider, x=r["shape"])
            real = point.flops / r["dram"]
            side = "right" if real >= p.roof_of(point).ridge else "left"
            assert f"{real:.0f} FLOP per byte read, {side} of the fp16 ridge" in text
            assert f"{100 * p.fraction(point):.0f}% of the roof" in text
    # The row-major order re-reads its operands: it reads more from DRAM than grouped order.
    assert "row-major" in text and "grouped" in text


def test_the_skinny_matmuls_are_read_against_the_tensor_cores_ridge():
    text = " ".join(readings.compute_bound(PLACES).split())
    for p in PLACES:
        for s in p.find("matmul", "triton", dtype="bfloat16"):
            if min(s.x) < 64:
                ridge = p.roofs["bf16_tflops"].ridge
                assert f"memory-bound (the cuBLAS bf16 matmul roof's ridge is at {ridge:.0f})" in text
                assert f"= {100 * p.fraction(s):.0f}% of its roof" in text
