"""Tutorial 04's page helpers: the opening paragraph and tables agree with the records,
name every GPU, say what is missing, and refuse bad input."""

import shutil

import pytest

from gpuperf.bench import catalog, records
from gpuperf.pages import attention as page
from gpuperf.pages import report
from gpuperf.pages.plotting import short_gpu_name
from gpuperf.pages.tables import FORMAT_VAR
from tests._pages import current_measurements

H100, H200 = "nvidia-h100-80gb-hbm3", "nvidia-h200"
BENCHES = (catalog.ATTENTION_FORWARD, catalog.ATTENTION_BACKWARD, catalog.ATTENTION_MEMORY)


@pytest.fixture(autouse=True)
def records_as_text(monkeypatch):
    monkeypatch.setenv(FORMAT_VAR, "text")
    monkeypatch.setenv("GPUPERF_BENCH", "records")
    monkeypatch.delenv("GPUPERF_GPU", raising=False)
    monkeypatch.setattr(report, "can_measure", lambda: False)


def _ms_ratios(record, other, min_seq=4096):
    """Other's time over ours, from the raw rows, every combination, S >= min_seq."""
    rows = [r for r in record["rows"] if r["status"] == "ok" and r["x"] >= min_seq]
    ours = {(r["x"], tuple(r["axes"].items())): r["ms"] for r in rows if r["provider"] == "triton"}
    theirs = {(r["x"], tuple(r["axes"].items())): r["ms"] for r in rows if r["provider"] == other}
    return [theirs[key] / t for key, t in ours.items() if key in theirs]


def _span(values):
    low, high = f"{min(values):.2f}", f"{max(values):.2f}"
    return low if low == high else f"{low}–{high}"


def _gpu_part(text, name):
    """The paragraph's sentences about one GPU (from 'On the <name>' to the next GPU)."""
    start = text.index(f"On the {name},")
    nxt = text.find("On the ", start + 1)
    return text[start : nxt if nxt > 0 else None]


def test_paragraph_states_each_gpus_numbers_as_the_records_give_them(tmp_path, monkeypatch):
    current_measurements(tmp_path, monkeypatch)
    text = page.in_one_paragraph().text()
    gpus = records.gpus_with_record(catalog.ATTENTION_FORWARD.name)
    assert H100 in gpus and H200 in gpus
    for gpu in gpus:
        fwd, bwd, mem = (report.load(b, gpu) for b in BENCHES)
        part = _gpu_part(text, short_gpu_name(fwd.gpu))
        for result in (fwd, bwd):
            for other in ("flash", "cudnn"):
                assert f"{_span(_ms_ratios(result.record, other))}×" in part
        naive = fwd.values("naive", dtype="float16", head_dim=128, causal=False)
        ours = fwd.values(dtype="float16", head_dim=128, causal=False)
        assert f"peaks at {max(naive.values()):.0f} TFLOP/s" in part
        assert f"ours at {max(ours.values()):.0f}." in part
        s = max(mem.values())
        assert f"S = {s} needs {mem.values()[s]:.2f} GiB" in part
        assert f"{mem.values('naive')[s]:.0f} GiB" in part
    assert page.in_one_paragraph().notes == ()


def test_paragraph_notes_a_missing_record_and_keeps_what_is_there(tmp_path, monkeypatch):
    """The reference GPU's missing record is a note; another GPU's is left out silently (the
    page shows the GPUs it has), and what each GPU has is still said."""
    current = current_measurements(tmp_path / "current", monkeypatch)
    for gpu in (H100, H200):
        (tmp_path / gpu).mkdir()
        shutil.copy(current / gpu / "hardware.json", tmp_path / gpu)
        for bench in BENCHES:
            if bench != catalog.ATTENTION_MEMORY:
                shutil.copy(records.record_path(bench.name, gpu, current), tmp_path / gpu)
    monkeypatch.setenv("GPUPERF_MEASUREMENTS", str(tmp_path))
    para = page.in_one_paragraph()
    assert len(para.notes) == 1
    assert para.notes[0].startswith("H100 80GB HBM3: MISSING") and "attention_memory" in para.notes[0]
    h200 = _gpu_part(para.text(), "H200")
    assert "FlashAttention-2" in h200 and "training step" not in h200
    assert "training step" not in _gpu_part(para.text(), "H100 80GB HBM3")
    assert "MISSING" in str(para)


def test_paragraph_without_any_record_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUPERF_MEASUREMENTS", str(tmp_path))
    para = page.in_one_paragraph()
    assert para.text() == ""
    assert any("MISSING" in n and "attention_forward" in n for n in para.notes)
    assert "No GPU has a committed attention record" in para.notes[-1]


def test_speedup_is_the_time_ratio_at_long_sequences():
    fwd = report.load(catalog.ATTENTION_FORWARD, H100)
    combo = {"dtype": "bfloat16", "head_dim": 64, "causal": True}
    got = page.speedup(fwd, "cudnn", **combo)
    rows = {(r["provider"], r["x"]): r for r in fwd.record["rows"] if r["axes"] == combo}
    expected = {
        s: rows[("cudnn", s)]["ms"] / rows[("triton", s)]["ms"]
        for s in catalog.ATTENTION_SEQ_LENS
        if s >= page.MIN_SEQ and rows[("triton", s)]["status"] == rows[("cudnn", s)]["status"] == "ok"
    }
    assert got.keys() == expected.keys() and got
    assert all(got[s] == pytest.approx(expected[s], rel=1e-6) for s in got)
    assert min(page.speedup(fwd, "naive", min_seq=0, **combo)) == catalog.ATTENTION_SEQ_LENS[0]


def test_tables_show_every_gpu_and_the_records_numbers(tmp_path, monkeypatch):
    current_measurements(tmp_path, monkeypatch)
    fwd, bwd, mem = (report.run_or_load(b) for b in BENCHES)
    table = page.naive_vs_fused(fwd, mem)
    h100_fwd = fwd.on(H100)
    naive = h100_fwd.values("naive", dtype="float16", head_dim=128, causal=False)
    assert f"{naive[16384]:.0f}" in table and "H200" in table and "H100 80GB HBM3" in table
    speed = page.speedups(fwd, bwd)
    assert speed.count("H200") == speed.count("H100 80GB HBM3") == 16
    ratios = page.speedup(bwd.on(H200), "flex", dtype="float16", head_dim=128, causal=True)
    assert f"{_span(ratios.values())}×" in speed
    saving = page.memory_saving(mem)
    assert f"FlashAttention-2 needs {_span(mem.on(H200).ratios().values())}×" in saving
    assert saving.splitlines()[1].startswith("H200:")


def test_tuning_table_shows_each_sweep_and_notes_a_missing_one(tmp_path):
    from gpuperf.bench import tuning
    from gpuperf.kernels._attention_configs import AttentionConfig

    text = page.tuning_table()
    for gpu in (H100, H200):
        sweep = tuning.read_tuning(gpu, kernel="attention")
        assert sweep["provenance"]["gpu"] in text
        assert AttentionConfig(**sweep["best"][0]["dkdv"]).label() in text
    assert "MISSING" not in text
    empty = page.tuning_table(tmp_path)
    assert empty.startswith("MISSING: no attention tuning sweep for nvidia-h100-80gb-hbm3")


def test_bad_input_gets_a_clear_error():
    fwd, mem = report.load(catalog.ATTENTION_FORWARD), report.load(catalog.ATTENTION_MEMORY)
    with pytest.raises(TypeError, match=r"result must be a gpuperf\.pages\.Result"):
        page.speedup({"rows": []}, "flash")
    with pytest.raises(ValueError, match="other must be one of"):
        page.speedup(fwd, "cublas", dtype="float16", head_dim=64, causal=False)
    with pytest.raises(ValueError, match="several values of axis"):
        page.speedup(fwd, "flash")
    with pytest.raises(TypeError, match="memory must be"):
        page.naive_vs_fused(fwd, None)
    with pytest.raises(ValueError, match="forward must be a result of 'attention_forward'"):
        page.naive_vs_fused(mem, fwd)
    with pytest.raises(ValueError, match="others must be among"):
        page.speedups(fwd, fwd, others=("flash", "xformers"))
    with pytest.raises(ValueError, match="memory must be a result of 'attention_memory'"):
        page.memory_saving(fwd)
    with pytest.raises(TypeError, match="root must be a path"):
        page.tuning_table(3)


def test_backward_products_are_the_tl_dots_of_each_backward_loop():
    products = page.backward_products()
    assert list(products) == list(page.BACKWARD_LOOPS)
    # The dK/dV loop: QKᵀ recomputed, dV, dPᵀ = V dOᵀ, dK; the dQ loop: QKᵀ and dP again, dQ.
    assert products["dK/dV kernel"] == [
        "tl.dot(k, q_t)",
        "tl.dot(p_t.to(do.dtype), do, dv)",
        "tl.dot(v, tl.trans(do))",
        "tl.dot(ds_t.to(q_t.dtype), tl.trans(q_t), dk)",
    ]
    assert products["dQ kernel"] == [
        "tl.dot(q, k_t)",
        "tl.dot(do, v_t)",
        "tl.dot(ds.to(k_t.dtype), tl.trans(k_t), dq)",
    ]
    assert page.counted_products() == 5  # FlashAttention-2's: QKᵀ, dV, dP, dQ, dK once each


def test_backward_work_counts_the_products_against_the_flop_count():
    text = page.backward_work()
    assert "dK/dV kernel: 4 products, tl.dot(k, q_t)," in text
    assert "dQ kernel: 3 products, tl.dot(q, k_t)," in text
    assert "In all 7 products per tile of queries and keys" in " ".join(text.split())
    assert "stands for 5 (FlashAttention-2's single kernel)" in " ".join(text.split())
    assert "execute 1.40× the FLOPs" in " ".join(text.split())


def test_backward_products_refuse_a_file_without_the_loops(tmp_path):
    path = tmp_path / "attention.py"
    path.write_text("def _dkdv_tiles(a, b):\n    return tl.dot(a, b)\n")
    with pytest.raises(ValueError, match="defines no _dq_tiles"):
        page.backward_products(path)
    path.write_text(path.read_text() + "\n\ndef _dq_tiles(a, b):\n    return a + b\n")
    with pytest.raises(ValueError, match=r"_dq_tiles in .* has no tl\.dot"):
        page.backward_products(path)
