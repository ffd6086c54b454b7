"""Guide 05, PyTorch's recipes: its tables, figures and sentences read from made-up captures
of the shape ``scripts/recipes_capture.py`` writes (only the format is real), the notes
it shows while they are missing, and the capture script itself run on the CPU."""

import importlib.util
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from gpuperf.bench import captures, records
from gpuperf.pages import captures as pages_captures
from gpuperf.pages import recipes as page
from gpuperf.pages.plotting import overlapping_texts
from tests._pages import records_as_text  # noqa: F401 (autouse)
from tests.test_bench_records import fake_provenance

ROOT = Path(__file__).resolve().parents[1]
GPU = "Test GPU 80GB"


def step(ms: float, spread: float = 0.02) -> dict:
    return {"median": ms, "p20": ms * (1 - spread), "p80": ms * (1 + spread)}


def cfg(key, label, ms, spread=0.02, **extra) -> dict:
    return {"key": key, "label": label, "step": step(ms, spread), **extra}


def case(configs, baseline, key="c", label="the case", **extra) -> dict:
    return {"key": key, "label": label, "baseline": baseline, "configs": configs, **extra}


def build(name: str, payload: dict, gpu: str = GPU) -> dict:
    return captures.build(name, tool="test", payload=payload, provenance=fake_provenance(gpu))


def data_loading() -> dict:
    configs = [
        cfg("w0", "num_workers=0", 10.0, num_workers=0, pin_memory=False, loading=step(9.0)),
        cfg("w0_pinned", "num_workers=0, pinned", 9.99, num_workers=0, pin_memory=True, loading=step(8.9)),
        cfg("w4", "num_workers=4", 4.1, num_workers=4, pin_memory=False, loading=step(2.0)),
        cfg("w4_pinned", "num_workers=4, pinned", 4.0, num_workers=4, pin_memory=True, loading=step(1.9)),
    ]
    copies = {"bytes": 12_582_912, "pageable": step(0.4), "pinned": step(0.25)}
    payload = {"model": "conv net", "gpu_step": step(3.9), "copies": copies, "cases": [case(configs, "w0")]}
    return build(page.DATA_LOADING, payload)


def precision() -> dict:
    configs = [
        cfg("fp32", "float32", 30.0, relative_error=1e-7),
        cfg("tf32", "TF32 matmuls", 29.8, relative_error=1e-3),
        cfg("bf16", "bfloat16 autocast", 5.0, relative_error=1e-2),
    ]
    n = 4096
    times = {"fp32": step(2.75), "tf32": step(2.70), "bf16": step(0.25)}
    payload = {
        "flops_per_step": 1.5e12,
        "matmul": {"n": n, "flops": 2 * n**3, "times": times},
        "errors_on": "initial weights",
        "cases": [case(configs, "fp32")],
    }
    return build(page.PRECISION, payload)


def zero_grad() -> dict:
    off_ops = {
        "aten": {"aten::add_": 40, "aten::_foreach_zero_": 1, "aten::mm": 30},
        "gpu_ops": 200,
        "gpu_busy_ms": 1.0,
    }
    on_ops = {"aten": {"aten::mm": 30}, "gpu_ops": 159, "gpu_busy_ms": 0.99}
    configs = [
        cfg("set_to_none_false", "zero_grad(set_to_none=False)", 5.0, ops=off_ops),
        cfg("set_to_none_true", "zero_grad(set_to_none=True)", 5.01, ops=on_ops),
    ]
    return build(page.ZERO_GRAD, {"cases": [case(configs, "set_to_none_false", label="many small")]})


def syncs() -> dict:
    def width(w, with_syncs, without, busy):
        configs = [
            cfg("syncs", "loop with .item(), if, print", with_syncs),
            cfg("no_syncs", "loop without syncs", without),
        ]
        return case(configs, "syncs", key=f"w{w}", label=f"width {w}", gpu_busy_ms=busy)

    found = {
        "syncs": {
            "steps": 30,
            "count": 75,
            "by_line": {"losses.append(loss.item())": 30, "if loss.isnan():": 30},
        },
        "no_syncs": {"steps": 30, "count": 2, "by_line": {"losses.tolist()": 2}},
    }
    payload = {
        "found": found,
        "messages": ["called a synchronizing CUDA operation"],
        "counted_at_width": 256,
        "cases": [width(256, 3.0, 2.99, 0.3), width(1024, 2.0, 1.4, 1.2), width(2048, 6.0, 5.99, 5.9)],
    }
    return build(page.SYNCS, payload)


def conv() -> dict:
    configs = [
        cfg("nchw_heuristic", "NCHW", 4.0, first_step_s=0.3),
        cfg("nhwc_heuristic", "channels_last", 3.0, first_step_s=0.3),
        cfg("nchw_benchmark", "NCHW, cudnn.benchmark", 4.0, first_step_s=1.5),
        cfg("nhwc_benchmark", "channels_last, cudnn.benchmark", 2.5, first_step_s=1.2),
    ]
    return build(page.CONV, {"cases": [case(configs, "nchw_heuristic")]})


def checkpointing(peaks=(4 * 2**30, 2 * 2**30, 2**30)) -> dict:
    configs = [
        cfg("every_0", "no checkpointing", 10.0, peak_bytes=peaks[0]),
        cfg("every_2", "every other block", 11.5, peak_bytes=peaks[1]),
        cfg("every_1", "every block", 13.0, peak_bytes=peaks[2]),
    ]
    return build(page.CHECKPOINTING, {"cases": [case(configs, "every_0")]})


def compiled(eager_ms=10.0, compiled_ms=8.0) -> dict:
    configs = [
        cfg("eager", "eager", eager_ms, first_step_s=0.5),
        cfg("compile", "torch.compile", compiled_ms, first_step_s=20.5),
    ]
    return build(page.COMPILE, {"cases": [case(configs, "eager")]})


ALL = {
    page.DATA_LOADING: data_loading,
    page.PRECISION: precision,
    page.ZERO_GRAD: zero_grad,
    page.SYNCS: syncs,
    page.CONV: conv,
    page.CHECKPOINTING: checkpointing,
    page.COMPILE: compiled,
}
READINGS = {
    page.DATA_LOADING: page.data_loading_reading,
    page.PRECISION: page.precision_reading,
    page.ZERO_GRAD: page.zero_grad_reading,
    page.SYNCS: page.syncs_reading,
    page.CONV: page.conv_reading,
    page.CHECKPOINTING: page.checkpointing_reading,
    page.COMPILE: page.compile_reading,
}


def shown(capture: dict) -> dict:
    return {"test-gpu": capture}


@pytest.fixture
def measurements(tmp_path, monkeypatch):
    """An empty measurements folder the pages read, the test GPU the reference."""
    monkeypatch.setenv("GPUPERF_MEASUREMENTS", str(tmp_path))
    monkeypatch.setenv("GPUPERF_GPU", records.gpu_slug(GPU))
    return tmp_path


# --- reading a capture ------------------------------------------------------------------------


def test_a_gain_inside_the_spread_is_no_gain():
    c = case([cfg("a", "a", 10.0), cfg("b", "b", 9.9), cfg("c", "c", 5.0), cfg("d", "d", 20.0)], "a")
    assert page.no_gain(c, "b") and page.gain(c, "b") == "1.01×, no gain here"
    assert page.speedup(c, "c") == pytest.approx(2.0)
    assert page.gain(c, "c") == "2.00×, faster"
    assert page.gain(c, "d") == "0.50×, slower"
    # Spreads apart, but a difference below NOISE is still no gain.
    tight = case([cfg("a", "a", 10.0, spread=0.001), cfg("b", "b", 9.85, spread=0.001)], "a")
    assert page.no_gain(tight, "b")


def test_bad_captures_and_names_raise():
    with pytest.raises(TypeError, match="expected a capture"):
        page.cases([1])
    with pytest.raises(ValueError, match="no list of cases"):
        page.cases({"name": "x", "payload": {}})
    with pytest.raises(KeyError, match="it has"):
        page.config(case([cfg("a", "a", 1.0)], "a"), "b")
    with pytest.raises(ValueError, match="must be one of"):
        page.show("recipe_nothing")
    with pytest.raises(ValueError, match="must be one of"):
        page.figure("recipe_nothing")
    with pytest.raises(ValueError, match="not a recipe's capture"):
        page.headline(build("other_capture", {"cases": []}))
    with pytest.raises(TypeError, match="captures shown"):
        page.compile_reading([compiled()])


def test_step_table_marks_no_gain_and_shows_the_extra_columns():
    text = page.data_loading_table(data_loading())
    assert text.splitlines()[0] == "conv net"
    assert "speed vs num_workers=0" in text and "loading alone, ms per batch" in text
    row = next(line for line in text.splitlines() if line.strip().startswith("num_workers=0, pinned"))
    assert "(no gain)" in row and "8.90" in row
    assert "2.44×" in next(line for line in text.splitlines() if line.strip().startswith("num_workers=4 "))


def test_precision_table_reads_the_matmul_as_tflops():
    text = page.precision_table(precision())
    bf16 = next(line for line in text.splitlines() if "bfloat16" in line)
    assert f"{2 * 4096**3 / 0.25e9:.0f}" in bf16 and "1.0e-02" in bf16


def test_errors_taken_after_the_model_trained_are_not_shown():
    """A capture without ``errors_on`` took TF32's and bfloat16's error after the float32
    steps had trained the model away from its float64 reference: no error is shown."""
    older = precision()
    del older["payload"]["errors_on"]
    assert "error" not in page.precision_table(older)
    assert "largest error" not in " ".join(page.precision_reading(shown(older)).split())
    assert "1.0e-02" in page.precision_table(precision())


def test_syncs_table_lists_where_they_were_found():
    text = page.syncs_table(syncs())
    assert "loop with .item(), if, print: 75 synchronizations in 30 steps (width 256)" in text
    assert "30  losses.append(loss.item())" in text
    assert "the warning: called a synchronizing CUDA operation" in text
    uncounted = syncs()
    uncounted["payload"]["found"] = None
    assert "not counted" in page.syncs_table(uncounted)


# --- the readings -----------------------------------------------------------------------------


def test_data_loading_reading():
    text = " ".join(page.data_loading_reading(shown(data_loading())).split())
    assert (
        "Fastest: num_workers=4, pinned; against num_workers=0: 2.50×, faster (10.0 ms → 4.00 ms per step)"
        in text
    )
    assert "takes 9.00 ms, against 3.90 ms for the step on a batch already on the GPU" in text
    assert "the GPU waited for the host" in text
    assert "the input pipeline is hidden" in text
    assert "12.6 MB" in text and f"{12_582_912 / 0.25e6:,.0f} GB/s" in text
    assert "0 workers: 1.00×, no gain here; 4 workers: 1.02×, no gain here" in text
    assert "No gain, because even from pageable memory the copy is 4% of a step" in text


def test_data_loading_reading_when_nothing_beats_the_baseline():
    capture = data_loading()
    for c in capture["payload"]["cases"][0]["configs"][1:]:
        c["step"] = step(12.0)
    text = " ".join(page.data_loading_reading(shown(capture)).split())
    assert text.startswith("Fastest: num_workers=0 itself (10.0 ms per step): no other setting gained.")


def test_precision_reading_says_why_tf32_gains_nothing():
    text = " ".join(page.precision_reading(shown(precision())).split())
    assert "TF32 matmuls against float32: 1.01×, no gain here" in text
    assert "bfloat16 autocast against float32: 6.00×, faster" in text
    assert "5.00 ms per step, 50 → 300 TFLOP/s of matmul work)" in text
    assert "TF32 brings no gain to this step because the matmul alone is no faster in TF32 either" in text
    assert "1e-07 in float32, 1e-03 with TF32 and 1e-02 under bfloat16 autocast" in text


def test_zero_grad_reading_names_the_ops_it_skips():
    text = " ".join(page.zero_grad_reading(shown(zero_grad())).split())
    assert "many small: set_to_none=True against False: 1.00×, no gain here" in text
    assert "ran 200 ops per step instead of 159" in text
    assert "aten::add_ +40, aten::_foreach_zero_ +1" in text and "aten::mm" not in text
    assert "No gain, because those ops kept the GPU busy 0.010 ms more per step" in text


def test_syncs_reading_reads_each_width_against_the_gpu_time():
    text = " ".join(page.syncs_reading(shown(syncs())).split())
    assert (
        "reported 75 synchronizations in 30 steps: 30 at losses.append(loss.item()); 30 at if loss.isnan():"
        in text
    )
    assert "Without them it reported 2, all after the last step." in text
    assert "width 1024: removing them: 1.43×, faster (2.00 ms → 1.40 ms per step)" in text
    small, large = (next(s for s in text.split("width ")[1:] if s.startswith(w)) for w in ("256", "2048"))
    assert "the GPU waited for the host's launches" in small
    assert "busy nearly all the step" in large


def test_conv_reading_and_the_cost_of_benchmarking():
    text = " ".join(page.conv_reading(shown(conv())).split())
    assert "channels_last, cudnn.benchmark against NCHW: 1.60×, faster" in text
    assert "NCHW, cudnn.benchmark against NCHW: 1.00×, no gain here" in text
    assert "first step took 1.20–1.50 s against 0.30 s without it: it times the algorithms" in text
    quick = conv()
    for c in quick["payload"]["cases"][0]["configs"]:
        c["first_step_s"] = 0.3
    assert "without it." in " ".join(page.conv_reading(shown(quick)).split())


def test_checkpointing_reading_with_and_without_memory():
    text = " ".join(page.checkpointing_reading(shown(checkpointing())).split())
    assert (
        "every block: 1.30× the step time (10.0 ms → 13.0 ms), peak memory 4.00 → 1.00 GiB (4.00× less)"
        in text
    )
    assert "1.33× expected, 1.30× measured" in text
    cpu = " ".join(page.checkpointing_reading(shown(checkpointing((None, None, None)))).split())
    assert "peak memory not measured on this device" in cpu


def test_compile_reading_pays_for_itself_or_not():
    text = " ".join(page.compile_reading(shown(compiled())).split())
    assert "torch.compile against eager: 1.25×, faster (10.0 ms → 8.00 ms per step)" in text
    assert "it pays for itself after 10,000 steps" in text  # (20.5 - 0.5) s / 2 ms
    never = " ".join(page.compile_reading(shown(compiled(compiled_ms=9.95))).split())
    assert "no gain here" in never and "never win it back" in never


def test_readings_on_several_gpus_are_headed_by_each():
    text = page.compile_reading(
        {"a": compiled(), "b": build(page.COMPILE, compiled()["payload"], "Other GPU")}
    )
    assert "Test GPU 80GB:" in text and "Other GPU:" in text


# --- the page with and without its captures ---------------------------------------------------


@pytest.mark.parametrize("name", page.RECIPES)
def test_every_recipe_has_a_headline_and_a_legible_figure(name, measurements):
    capture = ALL[name]()
    assert page.headline(capture)
    captures.write(capture, measurements)
    fig = page.figure(name)
    assert overlapping_texts(fig) == []
    assert any(ax.get_xlabel().startswith("ms per step") for ax in fig.axes)
    plt.close("all")


def test_the_opening_paragraph_reads_every_recipe(measurements):
    for make in ALL.values():
        captures.write(make(), measurements)
    text = " ".join(page.in_one_paragraph().text().split())
    assert text.startswith("Measured on the Test GPU 80GB as whole training steps, host included:")
    assert "a DataLoader with num_workers=4, pinned ran 2.50× the single-process loader's steps" in text
    assert "TF32 matmuls 1.01× (no gain) and bfloat16 autocast 6.00× a float32 MLP step" in text
    assert "removing 75 host synchronizations in 30 steps" in text
    assert "checkpointing every block: 4.00× less peak memory for 1.30× the step time" in text
    assert "torch.compile 1.25× eager after a 20 s first step" in text
    assert not page.in_one_paragraph().notes


def test_missing_captures_are_said_plainly_with_the_command(measurements, capsys):
    captures.write(compiled(), measurements)
    para = page.in_one_paragraph()
    assert "torch.compile 1.25×" in para.text()
    (note,) = para.notes
    assert note.startswith("MISSING: no capture of recipe_data_loading, recipe_precision")
    assert "recipe_compile" not in note and "python scripts/recipes_capture.py" in note

    assert page.show(page.PRECISION) == {}
    printed = capsys.readouterr().out
    assert (
        "MISSING: no capture 'recipe_precision'" in printed and "python scripts/recipes_capture.py" in printed
    )
    assert page.precision_reading({}) == page.NOTHING_YET
    fig = page.figure(page.PRECISION)
    texts = " ".join(t.get_text() for t in fig.findobj(matplotlib.text.Text))
    assert "MISSING" in texts and "recipes_capture.py" in texts
    plt.close("all")


def test_nothing_measured_yet(measurements):
    para = page.in_one_paragraph()
    assert para.text().startswith("No recipe has been measured on this page's GPU yet")
    assert len(para.notes) == 1 and all(name in para.notes[0] for name in page.RECIPES)


def test_every_recipe_names_its_capture_command():
    for name in page.RECIPES:
        assert captures.command(name) == "python scripts/recipes_capture.py"
    assert set(page.TABLES) == set(page.RECIPES) == set(page.TITLES)


def test_per_gpu_rejects_what_is_not_the_captures_shown():
    with pytest.raises(TypeError, match="captures shown"):
        pages_captures.per_gpu([], lambda c: [], "none")
    assert pages_captures.per_gpu({}, lambda c: [], "none") == "none"


# --- the capture script, on the CPU ---------------------------------------------------------


def test_the_capture_script_runs_every_part_on_the_cpu(tmp_path, monkeypatch):
    """``--device cpu --smoke``: every part runs on tiny sizes (a check of the script, not a
    measurement) and writes a well-formed capture that every table and reading renders."""
    script = str(ROOT / "scripts" / "recipes_capture.py")
    done = subprocess.run(
        [sys.executable, script, "--device", "cpu", "--smoke", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "skipped on the CPU" in done.stdout and "all parts, imports included" in done.stdout
    folder = tmp_path / "cpu-smoke-run" / "captures"
    assert sorted(p.stem for p in folder.glob("*.json")) == sorted(page.RECIPES)
    monkeypatch.setenv("GPUPERF_MEASUREMENTS", str(tmp_path))
    monkeypatch.setenv("GPUPERF_GPU", "cpu-smoke-run")
    for name in page.RECIPES:
        capture = json.loads((folder / f"{name}.json").read_text())
        assert captures.validate(capture) == []
        assert capture["payload"]["smoke"] is True and capture["payload"]["device"] == "cpu"
        assert page.TABLES[name](capture)
        assert READINGS[name](shown(capture)) != page.NOTHING_YET
        assert page.headline(capture)
    assert page.in_one_paragraph().text().startswith("Measured on the CPU smoke run")


def _script(monkeypatch):
    """scripts/recipes_capture.py as a module, the environment it sets at import put back."""
    saved = dict(os.environ)
    try:
        spec = importlib.util.spec_from_file_location(
            "recipes_capture", ROOT / "scripts" / "recipes_capture.py"
        )
        module = importlib.util.module_from_spec(spec)
        monkeypatch.setitem(sys.modules, spec.name, module)  # dataclasses look their module up
        spec.loader.exec_module(module)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return module


class _Loss:
    """A stand-in for a CUDA loss: each read on the host warns as the sync debug mode does."""

    def __init__(self, value: float):
        self.value = value

    def _sync(self):
        warnings.warn("called a synchronizing CUDA operation", UserWarning, stacklevel=2)

    def item(self):
        self._sync()
        return self.value

    def isnan(self):
        return self

    def __bool__(self):
        self._sync()
        return False

    def __str__(self):
        self._sync()
        return f"{self.value}"


def test_find_syncs_keeps_the_loop_line_of_each_warning(monkeypatch):
    import torch

    script = _script(monkeypatch)
    modes = []
    monkeypatch.setattr(torch.cuda, "set_sync_debug_mode", modes.append)
    batches = [(None, None)] * 4
    found = script.find_syncs(lambda: script.train_with_syncs(lambda x, y: _Loss(1.0), batches, log_every=2))
    assert modes == ["warn", "default"]
    assert found.count("losses.append(loss.item())") == 4
    assert found.count("if loss.isnan():") == 4
    assert found.count('print(f"step {i}: loss", loss)') == 2
    assert len(found) == 10
