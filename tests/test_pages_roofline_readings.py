"""The roofline guide's sentences, checked against the placements they are read from."""

import dataclasses
import itertools

import pytest

from gpuperf.bench import catalog
from gpuperf.bench.hardware import STREAMS
from gpuperf.pages import matmul, roofline
from gpuperf.pages import roofline_readings as readings
from gpuperf.pages.plotting import ceiling_label, format_rate, format_x, short_gpu_name
from gpuperf.pages.prose import percent
from gpuperf.pages.report import gpus_with_current, load, stream_mix

PLACES = readings.placements()


def test_both_gpus_are_read():
    assert len(PLACES) >= 2


def _sentence_of(text: str, placement) -> str:
    """The sentence of ``text`` that opens on ``placement``'s GPU ('' without one)."""
    head = f"On the {short_gpu_name(placement.gpu)} "
    return next((s for s in text.split("On the ") if f"On the {s}".startswith(head)), "")


def test_the_opening_paragraph_quotes_each_gpus_ridge_and_marked_kernels():
    # Each GPU is read on the marked kernels it holds a current record of; one with
    # neither is left out. The reference GPU holds both.
    text = readings.in_one_paragraph(PLACES).text()
    with_a, with_b = gpus_with_current(catalog.VECTOR_ADD), gpus_with_current(catalog.MATMUL)
    assert PLACES[0].slug in with_a and PLACES[0].slug in with_b
    for p in PLACES:
        a, b = readings.marked(p, "A"), readings.marked(p, "B")
        assert (a is not None) == (p.slug in with_a) and (b is not None) == (p.slug in with_b)
        sentence = " ".join(_sentence_of(text, p).split())
        if a is None and b is None:
            assert sentence == ""
            continue
        ridge = p.roofs["bf16_tflops"].peak_tflops * 1e12 / (p.memory_gbps * 1e9)
        assert f"at {ridge:.0f} FLOP/B" in sentence
        assert ("vector add" in sentence) == (a is not None)
        assert ("bf16 matmul" in sentence) == (b is not None)
        if a is not None:
            assert f"reaches {100 * a.tflops / p.roof_of(a).attainable(a.intensity):.0f}%" in sentence
        if b is not None:
            assert (
                f"({b.intensity:.0f} FLOP/B) {'reaches ' if a is None else ''}{percent(p.fraction(b))}"
                in sentence
            )
    assert not any(
        n.startswith(short_gpu_name(p.gpu))
        for p in PLACES[1:]
        for n in readings.in_one_paragraph(PLACES).notes
    )


def test_a_gpu_without_the_marked_records_gets_a_note_not_a_sentence():
    bare = dataclasses.replace(PLACES[0], points=[])
    para = readings.in_one_paragraph([bare])
    assert para.sentences == ()
    assert para.notes == (f"{short_gpu_name(bare.gpu)}: the vector add or bf16 matmul record is missing",)


#: The benchmarks read in GB/s against a memory ceiling and placed on the chart (the
#: strided copy counts no FLOPs: it has no intensity and is not placed).
MEMORY_BOUND = tuple(
    b.name
    for b in catalog.ALL
    if b.ceiling_key(**b.combos()[0]) in ("stream_gbps", "copy_gbps") and b is not catalog.STRIDED_COPY
)

#: What each reading reads: a GPU holding a current record of any of these benchmarks
#: is named in it, one holding none is not (None: every GPU is).
NEEDS = {
    readings.memory_bound: ("vector_add",),
    readings.read_mix: tuple(bench for bench, _, _ in readings.READ_MIX),
    readings.compute_bound: ("matmul",),
    readings.real_traffic: ("matmul_order",),
    readings.far_below: ("softmax",),
    readings.launch_bound: ("vector_add",),
    # Memory-bound kernels under study whose small sizes fit in L2.
    readings.l2_resident: MEMORY_BOUND,
    readings.causal: ("attention_forward", "attention_backward"),
    readings.head_dims: ("attention_forward",),
    readings.skipped: None,
}


def _current(benchmarks) -> set[str]:
    """The GPUs holding a current record of any of ``benchmarks`` (every GPU for None)."""
    if benchmarks is None:
        return {p.slug for p in PLACES}
    return {gpu for name in benchmarks for gpu in gpus_with_current(catalog.by_name(name))}


def test_each_reading_names_every_gpu_with_a_current_record_of_what_it_reads():
    for reading, needs in NEEDS.items():
        text = reading(PLACES)
        current = _current(needs)
        for p in PLACES:
            assert (short_gpu_name(p.gpu) in text) == (p.slug in current), (reading.__name__, p.gpu)


def test_memory_bound_reading_compares_rates_with_bandwidths():
    # The first two GPUs with a current vector-add record, if there are two.
    pairs = [(p, a) for p in PLACES if (a := readings.marked(p, "A")) is not None][:2]
    assert [p.slug for p, _ in pairs] == gpus_with_current(catalog.VECTOR_ADD)[:2]
    text = " ".join(readings.memory_bound(PLACES).split())
    if len(pairs) < 2:
        assert "x the rate" not in text
        return
    (first, a1), (second, a2) = pairs
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
    rising = read = 0
    for p in PLACES:
        shares = []
        for bench, axes, reads in readings.READ_MIX:
            point = p.largest(bench, "triton", **axes)
            # Each stream is read on the GPUs holding a current record of it.
            assert (point is None) == (p.slug not in gpus_with_current(catalog.by_name(bench)))
            if point is None:
                continue
            mark = roofline.BEYOND_MARK if p.beyond_roof(point) else ""
            assert f"{bench} {reads}:1 {100 * p.fraction(point):.0f}%{mark}" in text
            shares.append(p.fraction(point))
        if len(shares) >= 2:
            read += 1
            rising += shares == sorted(shares)
    assert f"rises with the bytes read per byte written on {rising} of {read} GPUs" in text


def test_read_mix_reads_the_streams_against_the_copy_their_records_measured_beside_the_roof():
    text = " ".join(readings.read_mix(PLACES).split())
    for p in PLACES:
        shares = readings.copy_shares(p)
        for bench, axes, _ in readings.READ_MIX:
            result = load(catalog.by_name(bench), p.slug)
            copy = (result.record or {}).get("ceilings", {}).get("copy_gbps")
            point = p.largest(bench, "triton", **axes)
            if point is None or copy is None:
                assert bench not in [b for b, _, _ in shares]
                continue
            row = result.rows(**axes)[point.x]
            beyond = row["value_p20"] > copy["value_p80"]
            assert (bench, row["value"] / copy["value"], beyond) in shares
            if p.memory_key == "stream_gbps":
                mark = roofline.BEYOND_MARK if beyond else ""
                assert f"{bench} {percent(row['value'] / copy['value'])}{mark}" in text
        if shares and p.memory_key == "stream_gbps":
            assert "of the copy bandwidth measured in the same run: " in text
            # A kernel reading more than it writes passes the copy beyond the spread.
            assert any(beyond for bench, _, beyond in shares if bench != "gelu")


def test_every_row_above_the_memory_roof_beyond_the_spread_is_named():
    lines = readings.above_memory_roof(PLACES)
    text = " ".join(" ".join(lines).split())
    for p in PLACES:
        memory_bound = [q for q in p.points if roofline.bound_by(p, q) == "memory"]
        above = [q for q in memory_bound if p.beyond_roof(q)]
        named = ceiling_label(p.memory_key, p.hardware["ceilings"][p.memory_key])
        gpu = short_gpu_name(p.gpu)
        for q in above:
            assert f"{q.benchmark} {q.provider} {format_x(q.x)}" in text
            assert f"({100 * p.fraction(q):.1f}%)" in text
        if above:
            assert f"{gpu} above the {named} beyond the spread of both timings: " in text
        # A GPU with a stream roof, memory-bound rows and none above says so, rather than
        # print nothing.
        said_none = f"{gpu} no row above the {named} beyond the spread of both timings" in text
        assert said_none == (p.memory_key == "stream_gbps" and bool(memory_bound) and not above)
    # What it prints is what the read-mix reading ends with.
    assert " ".join(readings.read_mix(PLACES).split()).endswith(text)


def test_real_traffic_counts_flops_per_byte_read_from_dram_against_the_ridge():
    text = " ".join(readings.real_traffic(PLACES).split())
    for p in PLACES:
        if p.slug not in gpus_with_current(catalog.MATMUL_ORDER):
            continue  # its grouped and row-major points are not drawn
        rows = matmul.counter_rows(matmul.ncu_record(p.slug), p.memory_gbps)
        named = ceiling_label(p.memory_key, p.hardware["ceilings"][p.memory_key])
        for r in (r for r in rows if r["shape"] == (16384,) * 3):
            provider = "triton" if r["order"] == "grouped" else "triton_rowmajor"
            (point,) = p.find("matmul_order", provider, x=r["shape"])
            real = point.flops / r["dram"]
            side = "right" if real >= p.roof_of(point).ridge else "left"
            assert f"{real:.0f} FLOP per byte read, {side} of the fp16 ridge" in text
            # The DRAM read rate is read against the memory roof, named, not the copy.
            assert f"DRAM reads at {percent(r['of_copy'])} of the {named}" in text
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


def test_streams_lists_each_gpus_streams_slowest_first_and_marks_the_roof():
    text = " ".join(readings.streams(PLACES).split())
    held = 0
    for p in PLACES:
        entry = p.hardware["ceilings"].get("stream_gbps") or {}
        rates = entry.get("streams")
        gpu = short_gpu_name(p.gpu)
        assert (f"{gpu} streams, slowest first: " in text) == bool(rates)
        if not rates:
            continue
        held += 1
        # Each stream with its mix and rate, in order of rate, the roof's stream marked.
        at = {n: text.index(f"{n} ({stream_mix(n)}) {format_rate(v, 'GB/s')}") for n, v in rates.items()}
        assert sorted(rates, key=at.get) == sorted(rates, key=rates.get)
        fastest = max(rates, key=rates.get)
        assert fastest == entry["stream"]
        assert f"{fastest} ({stream_mix(fastest)}) {format_rate(rates[fastest], 'GB/s')}, the roof" in text
        writing = [n for n in STREAMS if STREAMS[n] is not None and n in rates]
        rising = all(rates[a] < rates[b] for a, b in itertools.pairwise(writing))
        assert ("faster with more reads per write" in text) == rising
    if not held:
        assert text == ""
