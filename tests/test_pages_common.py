"""The page helpers every page shares: the page's GPU and its ceilings, captures shown with
their notes, the opening paragraph, and show()."""

import json

import pytest

from gpuperf.bench import captures, catalog, records
from gpuperf.pages import captures as pages_captures
from gpuperf.pages import hardware, prose, report
from gpuperf.pages.tables import FORMAT_VAR
from tests._pages import records_as_text  # noqa: F401 (autouse)
from tests._params import with_changed_source
from tests.test_bench_records import fake_provenance, synthetic_record

H100 = "nvidia-h100-80gb-hbm3"


def _write_hardware(root, slug, gpu, copy=2000.0, bf16=500.0):
    folder = root / slug
    folder.mkdir(parents=True)
    ceilings = {
        "copy_gbps": {"value": copy, "unit": "GB/s"},
        "bf16_tflops": {"value": bf16, "unit": "TFLOP/s"},
        "fp8_tflops": {"value": float("nan"), "unit": "TFLOP/s"},
    }
    hw = {"schema_version": 1, "provenance": fake_provenance(gpu) | {"date": "2026-01-02T00:00:00Z"}}
    (folder / "hardware.json").write_text(json.dumps(hw | {"ceilings": ceilings}))


def test_ceilings_read_the_committed_hardware_and_compute_ridge_points():
    c = hardware.ceilings(H100)
    hw = json.loads((records.measurements_dir() / H100 / "hardware.json").read_text())
    assert c.gpu == hw["provenance"]["gpu"] == "NVIDIA H100 80GB HBM3"
    assert c.copy_gbps == hw["ceilings"]["copy_gbps"]["value"]
    # The ridge is where the compute roof meets the memory roof: the stream bandwidth.
    assert c.memory_gbps == hw["ceilings"].get("stream_gbps", hw["ceilings"]["copy_gbps"])["value"]
    # Named from its entry, with the stream that set it.
    assert c.memory_key == ("stream_gbps" if "stream_gbps" in hw["ceilings"] else "copy_gbps")
    stream = hw["ceilings"].get("stream_gbps", {}).get("stream")
    assert c.memory_label == (f"stream bandwidth ({stream})" if stream else "copy bandwidth")
    expected = hw["ceilings"]["bf16_tflops"]["value"] * 1e12 / (c.memory_gbps * 1e9)
    assert c.ridge_point("bf16") == pytest.approx(expected)
    # The datasheet's ridge: 989 TFLOP/s over 3.35 TB/s.
    assert c.ridge_point("bf16", datasheet=True) == pytest.approx(989e12 / 3350e9)
    text = str(c)
    assert "H100 80GB HBM3" in text and "ridge point" in text and c.provenance["date"][:10] in text


def test_ceilings_keep_each_measured_ceilings_spread():
    c = hardware.ceilings(H100)
    hw = json.loads((records.measurements_dir() / H100 / "hardware.json").read_text())
    for key, entry in hw["ceilings"].items():
        assert c.spread[key] == (entry["value_p20"], entry["value_p80"])


def test_ceilings_of_the_page_gpu_by_default_and_every_gpu_listed(monkeypatch):
    monkeypatch.setenv("GPUPERF_GPU", "nvidia-h200")
    assert hardware.page_gpu() == "nvidia-h200"
    assert hardware.ceilings().gpu == "NVIDIA H200"
    assert hardware.gpus()[0] == "nvidia-h200" and H100 in hardware.gpus()


def test_ceilings_of_an_unknown_gpu_say_how_to_make_them(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUPERF_MEASUREMENTS", str(tmp_path))
    advice = "run `python -m gpuperf.bench` on that GPU"
    with pytest.raises(FileNotFoundError, match=advice):
        hardware.ceilings("nvidia-nothing")
    with pytest.raises(TypeError, match="gpu must be"):
        hardware.ceilings(3)


def test_ceilings_drop_what_was_not_measured_and_refuse_unknown_dtypes(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUPERF_MEASUREMENTS", str(tmp_path))
    _write_hardware(tmp_path, "test-gpu", "Test GPU")
    c = hardware.ceilings("test-gpu")
    assert c.tflops("bf16") == 500.0 and c.ridge_point() == pytest.approx(250.0)
    assert c.datasheet == {} and c.spread == {}  # the file gives no percentiles
    with pytest.raises(ValueError, match="no measured fp8_tflops"):
        c.tflops("fp8")  # NaN in the file: not measured
    with pytest.raises(ValueError, match="dtype must be one of"):
        c.tflops("int8")
    with pytest.raises(ValueError, match="no datasheet"):
        c.ridge_point("bf16", datasheet=True)


def test_ceilings_leave_out_keys_this_version_does_not_know(tmp_path, monkeypatch):
    # A hardware.json written by another version of gpuperf (read_gbps was one for a while).
    monkeypatch.setenv("GPUPERF_MEASUREMENTS", str(tmp_path))
    _write_hardware(tmp_path, "test-gpu", "Test GPU")
    path = tmp_path / "test-gpu" / "hardware.json"
    hw = json.loads(path.read_text())
    hw["ceilings"]["read_gbps"] = {"value": 2900.0, "unit": "GB/s"}
    path.write_text(json.dumps(hw))
    c = hardware.ceilings("test-gpu")
    assert set(c.measured) == {"copy_gbps", "bf16_tflops"}
    assert "read" not in str(c) and c.memory_gbps == 2000.0
    # Without a stream bandwidth the memory roof is the copy, and says so.
    assert c.memory_key == "copy_gbps" and c.memory_label == "copy bandwidth"


def _capture(name, gpu="NVIDIA Test GPU", sources=()):
    return captures.build(
        name, tool="a test tool", payload={"n": 1}, sources=sources, provenance=fake_provenance(gpu)
    )


def test_capture_show_renders_each_gpu_with_notes_and_provenance(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GPUPERF_MEASUREMENTS", str(tmp_path))
    captures.write(_capture("kernels_per_call", "NVIDIA A GPU"), tmp_path)
    stale = _capture("kernels_per_call", "NVIDIA B GPU", sources=("kernels/gelu.py",))
    stale = with_changed_source(stale, "kernels/gelu.py")
    captures.write(stale, tmp_path)
    shown = pages_captures.show("kernels_per_call", lambda cap: f"payload n = {cap['payload']['n']}")
    out = capsys.readouterr().out
    # Another GPU's capture whose code changed since is not shown: it no longer describes it.
    assert list(shown) == ["nvidia-a-gpu"] and "B GPU" not in out
    assert out.count("payload n = 1") == 1 and out.count("captured with a test tool") == 1
    # The reference GPU's is shown whatever its state, and says how to take it again.
    monkeypatch.setenv("GPUPERF_GPU", "nvidia-b-gpu")
    shown = pages_captures.show("kernels_per_call", lambda cap: f"payload n = {cap['payload']['n']}")
    out = capsys.readouterr().out
    assert list(shown) == ["nvidia-b-gpu", "nvidia-a-gpu"] and "--- A GPU" in out and "--- B GPU" in out
    assert "STALE: its code changed" in out and "kernels/gelu.py::_gelu_kernel changed" in out
    assert "python scripts/strategy_captures.py" in out  # how to take it again


def test_capture_show_says_what_is_missing(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GPUPERF_MEASUREMENTS", str(tmp_path))
    assert pages_captures.show("torch_profiler") == {}
    assert "MISSING: no capture 'torch_profiler'" in capsys.readouterr().out
    with pytest.raises(TypeError, match="render must be callable"):
        pages_captures.show("torch_profiler", "not a function")
    # Another GPU's missing capture is no news (the page shows what it has); the reference's is.
    assert pages_captures.load("proton", "nvidia-nothing") == (None, [])
    monkeypatch.setenv("GPUPERF_GPU", "nvidia-nothing")
    capture, notes = pages_captures.load("proton", "nvidia-nothing")
    assert (
        capture is None and notes[0].startswith("MISSING") and "python scripts/profile_capture.py" in notes[0]
    )


def test_paragraph_is_wrapped_text_or_an_admonition(monkeypatch):
    p = prose.paragraph("On the H100 it reaches 0.91× cuBLAS.", "", "Tutorial 06 closes the gap.")
    assert p.text() == "On the H100 it reaches 0.91× cuBLAS. Tutorial 06 closes the gap."
    text = str(p)
    assert text.splitlines()[0] == "In one paragraph:" and all(len(line) <= 88 for line in text.splitlines())
    monkeypatch.setenv(FORMAT_VAR, "html")
    html = str(prose.paragraph("a < b", notes=["STALE: x"]))
    assert html.startswith('<div class="gpuperf-paragraph admonition tip">') and "\n" not in html
    assert "a &lt; b" in html and "STALE: x" in html
    with pytest.raises(TypeError, match="must be strings"):
        prose.paragraph("fine", 3)


def test_paragraph_says_each_note_once():
    """Records loaded together that are pending (or stale) for one reason give one note."""
    p = prose.paragraph("x", notes=["NOT YET MEASURED on b", "STALE: a", "NOT YET MEASURED on b"])
    assert p.notes == ("NOT YET MEASURED on b", "STALE: a")


def test_span_times_and_percent():
    assert prose.span([1.234, 0.91, 1.02]) == "0.91–1.23"
    assert prose.span([1.001, 1.004]) == "1.00"
    assert prose.times(1.3649) == "1.36×" and prose.percent(0.914) == "91%"
    with pytest.raises(ValueError, match="at least one value"):
        prose.span([])


def test_show_prints_the_table_and_draws_the_plot(tmp_path, monkeypatch, capsys):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    monkeypatch.setenv("GPUPERF_MEASUREMENTS", str(tmp_path))
    monkeypatch.setenv("GPUPERF_GPU", "test-gpu-80gb")
    records.write(synthetic_record(catalog.VECTOR_ADD, gpu="Test GPU 80GB"), tmp_path)
    plt.close("all")
    result = report.show(catalog.VECTOR_ADD)
    out = capsys.readouterr().out
    assert result.record is not None and "n_elements" in out and "triton/torch" in out
    assert len(plt.get_fignums()) == 1
    plt.close("all")
    with pytest.raises(TypeError, match="benchmark must be"):
        report.show("vector_add")


def test_ceilings_or_none_is_none_where_a_gpu_has_none(tmp_path, monkeypatch):
    monkeypatch.setattr(records, "measurements_dir", lambda: tmp_path)
    monkeypatch.setattr(hardware, "_can_measure", lambda: False)
    assert hardware.ceilings_or_none("nvidia-b200") is None
    with pytest.raises(TypeError, match="gpu must be a GPU folder name"):
        hardware.ceilings_or_none(3)


def test_gpus_are_ordered_first_then_by_name_each_once():
    order = hardware.first_then_by_name(
        ["nvidia-h200", "nvidia-a100", "nvidia-h100", "nvidia-h200"], "nvidia-h100"
    )
    assert order == ["nvidia-h100", "nvidia-a100", "nvidia-h200"]


def test_and_list_writes_a_list_as_a_sentence_does():
    assert prose.and_list(["a"]) == "a"
    assert prose.and_list(iter(["a", "b", "c"])) == "a, b and c"
    with pytest.raises(ValueError, match="at least one item"):
        prose.and_list([])


def test_fill_wraps_each_line_and_indents_what_continues_it():
    text = prose.fill(["word " * 30, "short"], indent="    ", width=40)
    lines = text.splitlines()
    assert lines[-1] == "short" and all(len(line) <= 40 for line in lines)
    assert lines[1].startswith("    ") and not lines[0].startswith(" ")


def test_load_all_keeps_the_captures_there_and_one_note_for_those_missing(tmp_path, monkeypatch):
    names = ("timing_methods", "launch_bound")
    found, notes = pages_captures.load_all(names)
    assert list(found) == [n for n in names if pages_captures.load(n)[0] is not None]
    monkeypatch.setenv("GPUPERF_MEASUREMENTS", str(tmp_path))
    found, notes = pages_captures.load_all(names)
    assert found == {}
    (note,) = notes
    assert (
        note.startswith("MISSING: no capture of timing_methods, launch_bound for ") and "to take them" in note
    )


def test_load_all_says_a_malformed_capture_is_malformed_not_missing(tmp_path, monkeypatch):
    from gpuperf.bench import captures, records

    monkeypatch.setenv("GPUPERF_MEASUREMENTS", str(tmp_path))
    path = captures.capture_path("launch_bound", records.REFERENCE_GPU, tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    found, notes = pages_captures.load_all(("timing_methods", "launch_bound"))
    assert found == {}
    assert [n.split(":")[0] for n in notes] == ["MALFORMED", "MISSING"]
    assert "timing_methods" in notes[1] and "launch_bound" not in notes[1]
