"""Tutorial 03's topic module: the opening paragraph and the tables it prints, checked
against the records read independently through the Result API."""

import math

import pytest

from gpuperf.bench import catalog, records
from gpuperf.pages import load, report
from gpuperf.pages import matmul as page
from gpuperf.pages.plotting import short_gpu_name
from gpuperf.pages.prose import percent, span, times
from tests._pages import copy_measurements, current_measurements, records_as_text  # noqa: F401 (autouse)

MATMUL, ORDER, EPILOGUE = catalog.MATMUL, catalog.MATMUL_ORDER, catalog.MATMUL_EPILOGUE


def _gpus_with_matmul():
    return records.gpus_with_record(MATMUL.name)


def test_there_are_matmul_records_to_test_against():
    assert _gpus_with_matmul(), "no committed matmul records"


def test_paragraph_names_every_gpu_with_its_numbers(tmp_path, monkeypatch):
    current_measurements(tmp_path, monkeypatch)  # every GPU's records current: each is named
    text = page.in_one_paragraph().text()
    for gpu in _gpus_with_matmul():
        plain, order, epilogue = load(MATMUL, gpu), load(ORDER, gpu), load(EPILOGUE, gpu)
        assert f"On the {short_gpu_name(plain.gpu)}," in text
        ratio = plain.ratios(dtype="bfloat16")[(4096,) * 3]
        fraction = plain.fraction_of_ceiling(dtype="bfloat16")[(4096,) * 3]
        squares = [plain.ratios(dtype="bfloat16")[(s,) * 3] for s in (1024, 2048, 4096, 8192)]
        assert f"{times(ratio)} cuBLAS's speed at 4096³ bf16, {percent(fraction)}" in text
        # The ceiling the percentage is taken of is the one the sentence names.
        ceiling = plain.record["ceilings"]["bf16_tflops"]["value"]
        assert f"{percent(fraction)} of the {ceiling:.0f} TFLOP/s bf16 ceiling" in text
        assert f"{span(squares)}× cuBLAS over the squares" in text
        order_ratios = order.ratios()
        largest = max(order_ratios, key=math.prod)
        assert f"{times(order_ratios[largest])} as fast as row-major" in text
        eager = epilogue.ratios().values()
        compiled = epilogue.values("compile")
        vs_compile = [v / compiled[x] for x, v in epilogue.values().items()]
        assert f"{span(eager)}× the eager chain and {span(vs_compile)}× torch.compile" in text


def test_paragraph_notes_a_missing_record(tmp_path, monkeypatch):
    copy_measurements(tmp_path, monkeypatch, drop=["matmul_epilogue.json"])
    paragraph = page.in_one_paragraph()
    missing = [n for n in paragraph.notes if n.startswith("MISSING") and "matmul_epilogue" in n]
    assert len(missing) == 1  # the reference GPU's; another GPU shows what it has
    # The other measurements are still stated; the epilogue's are not.
    assert "cuBLAS's speed" in paragraph.text() and "eager chain" not in paragraph.text()


def test_paragraph_without_any_record_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUPERF_MEASUREMENTS", str(tmp_path))
    paragraph = page.in_one_paragraph()
    assert paragraph.sentences == ()
    assert any("run `python -m gpuperf.bench` on a GPU" in n for n in paragraph.notes)


def test_launch_order_is_the_kernels_arithmetic():
    assert page.launch_order(2, 3, 1) == [[0, 1, 2], [3, 4, 5]]
    grouped = page.launch_order(6, 8, 4)
    assert [row[0] for row in grouped] == [0, 1, 2, 3, 32, 33]
    assert sorted(p for row in grouped for p in row) == list(range(48))
    with pytest.raises(ValueError, match="at least 1"):
        page.launch_order(0, 3, 1)


def test_tables_name_each_gpu_and_refuse_the_wrong_result(tmp_path, monkeypatch):
    current_measurements(tmp_path, monkeypatch)  # every GPU's records current: each is drawn
    plain, order, epilogue = (report.run_or_load(b) for b in (MATMUL, ORDER, EPILOGUE))
    names = [short_gpu_name(r.gpu) for r in plain.gpus()]
    for text in (
        page.first_wave(order),
        page.order_verdicts(order),
        page.against_cublas(plain),
        page.against_compile(plain),
        page.epilogue_ratios(epilogue),
        page.epilogue_split(plain, epilogue),
    ):
        assert all(name in text for name in names)
    h100 = plain.gpus()[0]
    assert f"{times(h100.ratios(dtype='float16')[(8192,) * 3])} cuBLAS's speed" in page.against_cublas(plain)
    for function in (page.against_cublas, page.smallest_product, page.sweep_drift, page.against_compile):
        with pytest.raises(ValueError, match="must be a result of 'matmul'"):
            function(order)
        with pytest.raises(TypeError, match="must be a gpuperf"):
            function("matmul")
    with pytest.raises(ValueError, match="matmul_order"):
        page.first_wave(plain)
    with pytest.raises(ValueError, match="matmul_epilogue"):
        page.epilogue_ratios(plain)
    with pytest.raises(ValueError, match="host_overhead"):
        page.host_time(plain)


def test_counters_derive_rates_from_the_ncu_record():
    gpu = records.reference_gpu()
    ncu = page.ncu_record(gpu)
    rows = page.counter_rows(ncu, 1000.0)
    first, raw = rows[0], ncu["rows"][0]
    seconds = raw["gpu__time_duration.sum"]["value"] * 1e-9
    assert first["gbps"] == pytest.approx(raw["dram__bytes_read.sum"]["value"] / seconds / 1e9)
    assert first["of_copy"] == pytest.approx(first["gbps"] / 1000.0)
    m, n, k = raw["shape"]
    assert first["times_minimum"] == pytest.approx(
        raw["dram__bytes_read.sum"]["value"] / (2 * (m * k + k * n))
    )
    assert "L2 hit" in page.counters() and "row-major order reads" in page.row_major_verdict()
    with pytest.raises(ValueError, match="copy_gbps must be positive"):
        page.counter_rows(ncu, 0)
    with pytest.raises(ValueError, match="no counter"):
        page.counter_rows({"rows": [{"shape": [1, 1, 1], "order": "grouped"}]}, 1.0)
    with pytest.raises(TypeError, match="gpu must be"):
        page.ncu_record(None)


def test_counters_missing_say_how_to_make_them(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUPERF_MEASUREMENTS", str(tmp_path))
    assert page.counters().startswith("MISSING") and page.NCU_HOW in page.counters()
    assert page.NCU_HOW in page.row_major_verdict()


def test_sweeps_and_figure():
    from gpuperf.bench import tuning

    assert "candidate configs" in page.sweep_tables()
    sweep = tuning.read_tuning(records.reference_gpu())
    sections = page.sweep_sections(sweep)
    rows = {(s.heading, r[0].text): r for s in sections for r in s.rows}
    trials = [t for t in sweep["trials"] if t["dtype"] == "float16" and t["shape"] == [4096] * 3]
    best = max(t["tflops"] for t in trials if t["status"] == "ok")
    assert rows[("dtype=float16", "4096³")][3].sort == best
    assert rows[("dtype=float16", "4096³")][1].sort == len(trials)
    with pytest.raises(ValueError, match="matmul tuning sweep"):
        page.sweep_sections({"trials": []})
    with pytest.raises(ValueError, match="dtype must be one of"):
        page.sweep_figure("int8")


def test_graph_ops_refuses_what_is_not_a_graph():
    with pytest.raises(TypeError, match="GraphModule"):
        page.graph_ops(object())


def test_against_cublas_names_the_ceiling_its_shares_are_of():
    from gpuperf.pages import hardware

    plain = report.run_or_load(MATMUL)
    text = page.against_cublas(plain)
    flat = " ".join(text.split())
    for res in plain.gpus():
        for dtype, key in (("float16", "fp16_tflops"), ("bfloat16", "bf16_tflops")):
            ceiling = res.record["ceilings"][key]
            # Named from the record's own entry: its call and the shape that set it.
            label = hardware.ceiling_label(key, ceiling)
            assert f"{dtype}, against the ceiling measured at the start of this run, {label}: " in flat
            assert f"{ceiling['value']:.0f} TFLOP/s ({ceiling['value_p20']:.0f}–" in text
            share = res.values(dtype=dtype)[(4096,) * 3] / ceiling["value"]
            assert f"= {percent(share)} of that ceiling" in text
            # cuBLAS's own row at the ceiling's shape, the same call and shape later in the run.
            shape = tuple(ceiling["shape"])
            theirs = res.fraction_of_ceiling("cublas", dtype=dtype)[shape]
            at = f"at {shape[0]}³, the ceiling's shape, "
            assert (
                f"{at}{res.values('cublas', dtype=dtype)[shape]:.0f} TFLOP/s = {percent(theirs)} of it"
                in flat
            )


def test_ceilings_by_run_sets_both_runs_side_by_side_with_their_verdicts():
    from gpuperf.pages import hardware

    plain = report.run_or_load(MATMUL)
    text = page.ceilings_by_run(plain)
    for res in plain.gpus():
        hw = hardware.ceilings(records.gpu_slug(res.gpu))
        runs = {
            "ceilings' run": {k: (hw.measured[k], *hw.spread[k]) for k in ("fp16_tflops", "bf16_tflops")},
            "matmul's run": {
                k: (e["value"], e["value_p20"], e["value_p80"]) for k, e in res.record["ceilings"].items()
            },
        }
        for name, ceilings in runs.items():
            (fp16, fp16_lo, fp16_hi), (bf16, bf16_lo, bf16_hi) = (
                ceilings["fp16_tflops"],
                ceilings["bf16_tflops"],
            )
            assert f"{fp16:.0f} ({fp16_lo:.0f}–{fp16_hi:.0f}) at " in text
            assert f"{bf16:.0f} ({bf16_lo:.0f}–{bf16_hi:.0f}) at " in text
            assert f"{fp16 / bf16:.2f}" in text
            apart = fp16_hi < bf16_lo or fp16_lo > bf16_hi
            side = "below" if fp16 < bf16 else "at or above"
            verdict = f"in the {name} fp16 is {side} bf16, {'beyond' if apart else 'within'} their"
            assert verdict in " ".join(text.lower().split())
        # Each ceiling of the matmul's run over the same ceiling of the other, with their shapes.
        later, earlier = res.record["ceilings"]["bf16_tflops"], hw.entries["bf16_tflops"]
        moved = f"bf16 {times(later['value'] / earlier['value'])} ("
        assert "The matmul's run over the ceilings' run: " in text and moved in " ".join(text.split())
    with pytest.raises(ValueError, match="must be a result of 'matmul'"):
        page.ceilings_by_run(report.run_or_load(ORDER))


def test_the_geometric_mean_names_the_squares_it_averages():
    # A quick live build measures 4096³ and 8192³ of the squares: the line says so, and
    # its mean is over those two; the whole sweep's line names the range.
    plain = report.run_or_load(MATMUL)
    h100 = plain.on(plain.gpus()[0].gpu)
    quick = report.Result(MATMUL, cut(h100.record, catalog.MATMUL.sweep(quick=True)[0]), "live")
    ratios = h100.ratios(dtype="bfloat16")
    both = (ratios[(4096,) * 3] * ratios[(8192,) * 3]) ** 0.5
    expected = f"geometric mean of the ratio to cuBLAS, 4096³ and 8192³: {times(both)}"
    assert expected in page.against_cublas(quick)
    assert "geometric mean of the ratio to cuBLAS, 1024³-8192³: " in page.against_cublas(h100)
    assert page._squares_named([(1024,) * 3, (8192,) * 3]) == "1024³ and 8192³"
    assert page._squares_named([(2048,) * 3, (4096,) * 3, (8192,) * 3]) == "2048³-8192³"


def cut(record: dict, xs) -> dict:
    """``record`` with the rows at ``xs`` only."""
    return {**record, "rows": [r for r in record["rows"] if r["x"] in xs]}
