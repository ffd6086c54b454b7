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
    """A capture of the older form: pin_memory and non_blocking changed together."""
    configs = [
        cfg("w0", "num_workers=0", 10.0, num_workers=0, pin_memory=False, loading=step(9.0)),
        cfg("w0_pinned", "num_workers=0, pinned", 9.99, num_workers=0, pin_memory=True, loading=step(8.9)),
        cfg("w4", "num_workers=4", 4.1, num_workers=4, pin_memory=False, loading=step(2.0)),
        cfg("w4_pinned", "num_workers=4, pinned", 4.0, num_workers=4, pin_memory=True, loading=step(1.9)),
    ]
    copies = {"bytes": 12_582_912, "pageable": step(0.4), "pinned": step(0.25)}
    payload = {"model": "conv net", "gpu_step": step(3.9), "copies": copies, "cases": [case(configs, "w0")]}
    return build(page.DATA_LOADING, payload)


def loader(workers: int, suffix: str, ms: float, pin: bool, non_blocking: bool) -> dict:
    named = {"": "", "_pin_blocking": ", pin_memory", "_nonblocking": ", non_blocking"}
    label = f"num_workers={workers}" + named.get(suffix, ", pin_memory, non_blocking")
    return cfg(
        f"w{workers}{suffix}",
        label,
        ms,
        num_workers=workers,
        pin_memory=pin,
        non_blocking=non_blocking,
        loading=step(2.0),
    )


def data_loading_apart() -> dict:
    """A capture that measured pin_memory and non_blocking apart, and the host's waits."""
    configs = [
        loader(0, "", 20.0, False, False),
        loader(0, "_pin_blocking", 20.1, True, False),
        loader(0, "_nonblocking", 19.9, False, True),
        loader(0, "_pinned", 20.0, True, True),
        loader(4, "", 18.0, False, False),
        loader(4, "_pin_blocking", 17.0, True, False),
        loader(4, "_nonblocking", 18.1, False, True),
        loader(4, "_pinned", 13.0, True, True),
    ]
    waits = {
        "pageable_blocking": step(8.0),
        "pinned_blocking": step(7.3),
        "pageable_non_blocking": step(7.9),
        "pinned_non_blocking": step(0.02),
    }
    copies = {
        "bytes": 12_582_912,
        "pageable": step(1.0),
        "pinned": step(0.25),
        "busy": step(7.0),
        "host_wait": waits,
    }
    payload = {"model": "conv net", "gpu_step": step(12.6), "copies": copies, "cases": [case(configs, "w0")]}
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


def timeline(kernels: int, each_us: float, gap_us: float = 0.0) -> dict:
    """GPU events as the capture keeps them: ``kernels`` kernels of ``each_us`` back to back
    (``gap_us`` apart), one memset before them, and an annotated range spanning them all."""
    starts = [10 + i * (each_us + gap_us) for i in range(kernels)]
    end = starts[-1] + each_us
    return {
        "kernel": [[t, t + each_us] for t in starts],
        "gpu_memcpy": [],
        "gpu_memset": [[0.0, 10.0]],
        "gpu_user_annotation": [[0.0, end]],
    }


def zero_grad() -> dict:
    off_ops = {
        "aten": {"aten::add_": 40, "aten::_foreach_zero_": 1, "aten::mm": 30},
        "gpu_events": timeline(199, 5.0, gap_us=20.0),
    }
    on_ops = {"aten": {"aten::mm": 30}, "gpu_events": timeline(158, 5.0, gap_us=20.0)}
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
        return case(
            configs, "syncs", key=f"w{w}", label=f"width {w}", gpu_events=timeline(1, busy * 1e3 - 10)
        )

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
    payload = {"process_per_setting": True, "warmup_batch": 128, "cases": [case(configs, "nchw_heuristic")]}
    return build(page.CONV, payload)


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


def test_the_words_for_a_speed_come_from_its_ratio_and_spread():
    c = case(
        [
            cfg("a", "a", 10.0),
            cfg("b", "b", 9.8),  # faster, but the spreads overlap
            cfg("e", "e", 10.3),  # slower, but the spreads overlap
            cfg("c", "c", 5.0),
            cfg("d", "d", 20.0),
        ],
        "a",
    )
    low, high = page.ratio_spread(c, "b")
    assert low == pytest.approx(10.0 * 0.98 / (9.8 * 1.02)) and high == pytest.approx(
        10.0 * 1.02 / (9.8 * 0.98)
    )
    assert low < 1 < high and page.no_gain(c, "b")
    assert page.verdict(c, "b") == "no measurable difference"
    assert page.said(c, "b") == "1.02× (within the run-to-run spread: no measurable gain)"
    assert page.said(c, "e") == "0.97× (slower, but within the run-to-run spread: no measurable difference)"
    assert page.speedup(c, "c") == pytest.approx(2.0)
    assert page.verdict(c, "c") == "faster" and page.said(c, "c") == "2.00× faster"
    assert page.verdict(c, "d") == "slower" and page.said(c, "d") == "0.50× (slower)"
    assert page.said(c, "a", over="c") == "0.50× (slower)"
    # Spreads apart, but a difference below NOISE still cannot be told from noise.
    tight = case([cfg("a", "a", 10.0, spread=0.001), cfg("b", "b", 9.85, spread=0.001)], "a")
    assert page.ratio_spread(tight, "b")[0] > 1 and page.no_gain(tight, "b")
    assert page.said(tight, "b") == "1.02× (within 3%: no measurable gain)"
    # A ratio that rounds to 1.00 is not called slower.
    even = case([cfg("a", "a", 10.0), cfg("b", "b", 10.004)], "a")
    assert page.said(even, "b") == "1.00× (within the run-to-run spread: no measurable gain)"


def test_the_table_marks_each_speed_with_its_verdict():
    c = case([cfg("a", "a", 10.0), cfg("b", "b", 9.8), cfg("c", "c", 5.0), cfg("d", "d", 20.0)], "a")
    capture = build(page.COMPILE, {"cases": [c]})
    rows = {line.split()[0]: line for line in page.step_table(capture).splitlines()[2:]}
    assert rows["a"].endswith("1.00×") and rows["c"].endswith("2.00×")
    assert rows["b"].endswith("1.02× (within spread)") and rows["d"].endswith("0.50× (slower)")


def test_gpu_work_counts_kernels_copies_and_memsets_once():
    """An annotated range spanning kernels is neither counted nor timed, and overlapping
    kernels (two streams) cover the timeline once."""
    events = {
        "kernel": [[0.0, 100.0], [50.0, 150.0], [400.0, 500.0]],
        "gpu_memcpy": [[600.0, 700.0]],
        "gpu_memset": [[140.0, 160.0]],
        "gpu_user_annotation": [[0.0, 1000.0], [0.0, 500.0]],
    }
    assert page.gpu_work(events) == {"ops": 5, "busy_ms": pytest.approx(0.36)}
    assert page.gpu_work({"gpu_user_annotation": [[0.0, 1000.0]]}) == {"ops": 0, "busy_ms": 0.0}
    assert page.gpu_work(None) is None
    assert page.union_ms([]) == 0.0
    assert page.union_ms([[0.0, 1000.0], [100.0, 200.0], [1000.0, 1500.0]]) == pytest.approx(1.5)
    with pytest.raises(ValueError, match="must not end before it starts"):
        page.union_ms([[5.0, 1.0]])
    with pytest.raises(TypeError, match="events must be a dict"):
        page.gpu_work([[0.0, 1.0]])


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
    assert "(within spread)" in row and "8.90" in row
    assert "2.44×" in next(line for line in text.splitlines() if line.strip().startswith("num_workers=4 "))


def test_zero_grad_table_reads_the_gpu_work_from_the_events():
    text = page.zero_grad_table(zero_grad())
    off = next(line for line in text.splitlines() if line.strip().startswith("zero_grad(set_to_none=False)"))
    assert off.split()[-2:] == ["200", "1.005"]  # 199 kernels and a memset; the annotation not counted
    older = zero_grad()
    for c in older["payload"]["cases"][0]["configs"]:
        c["ops"] = {"aten": c["ops"]["aten"], "gpu_ops": 201, "gpu_busy_ms": 5.0}  # the old, summed form
    off = next(
        line
        for line in page.zero_grad_table(older).splitlines()
        if line.strip().startswith("zero_grad(set_to_none=False)")
    )
    assert off.split()[-2:] == ["-", "-"]


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
        "Fastest: num_workers=4, pinned; against num_workers=0, 10.0 ms → 4.00 ms per step: 2.50× faster"
        in text
    )
    assert "takes 9.00 ms, against 3.90 ms for the step on a batch already on the GPU" in text
    assert "the GPU waited for the host" in text
    assert "the input pipeline is hidden" in text
    assert "12.6 MB" in text and f"{12_582_912 / 0.25e6:,.0f} GB/s" in text
    assert "pinning saves 0.150 ms of copy per batch" in text
    assert (
        "0 workers: 1.00× (within the run-to-run spread: no measurable gain); 4 workers: 1.02× (within "
        "the run-to-run spread: no measurable gain)" in text
    )
    assert "changed the two together, so it cannot say which of them gave what" in text
    assert "shorter than with neither" not in text  # no gain to set against the copy's


def test_data_loading_reading_apart_and_the_hosts_waits():
    """pin_memory and non_blocking read apart at each num_workers, the host's waits behind
    GPU work, and the step's saving set against what pinning saves on the copy."""
    text = " ".join(page.data_loading_reading(shown(data_loading_apart())).split())
    assert (
        "At num_workers=4, against pageable batches copied without non_blocking: pin_memory alone 1.06× "
        "faster; non_blocking alone 0.99× (slower, but within the run-to-run spread: no measurable "
        "difference); both 1.38× faster." in text
    )
    assert "At num_workers=0, against pageable batches copied without non_blocking: pin_memory alone" in text
    assert "cannot say which" not in text
    assert (
        'Queued behind 7.00 ms of GPU work, .to("cuda") of one batch held the host 8.00 ms blocking from '
        "pageable memory, 7.30 ms blocking from pinned memory, 7.90 ms non_blocking from pageable memory "
        "and 0.020 ms non_blocking from pinned memory: the copy non_blocking from pinned memory returned "
        "before that work was done, the others waited for it." in text
    )
    # Measured apart, the settings are read apart, not lumped against the copy's saving.
    assert "shorter than with neither" not in text
    assert (
        "non_blocking alone gains nothing measurable at num_workers=4: from pageable memory the copy "
        "held the host 7.90 ms behind the GPU's work, as the blocking copy did (8.00 ms)." in text
    )
    assert (
        "pin_memory alone, its copies still blocking, shortened the step at num_workers=4 by 1.00 ms, "
        "1.33× the 0.750 ms that pinning saves on the copy." in text
    )
    assert "non_blocking on top of pin_memory, the host's wait removed: 1.31× faster." in text
    assert "part of it run while the host queued it" not in text  # every wait outlasted the work


def test_data_loading_reading_says_pinning_gave_more_than_the_copy():
    """Where pin_memory alone (copies still blocking) saves far more than the copy, the reading
    says the rest is neither the copy nor the wait, and names the loader's pin-memory thread."""
    capture = data_loading_apart()
    for c in capture["payload"]["cases"][0]["configs"]:
        if c["key"] == "w4_pin_blocking":
            c["step"] = step(14.0)
        if c["key"] == "w0_pin_blocking":
            c["step"] = step(17.0)
    capture["payload"]["copies"]["host_wait"]["pinned_blocking"] = step(6.5)
    text = " ".join(page.data_loading_reading(shown(capture)).split())
    assert (
        "shortened the step at num_workers=4 by 4.00 ms, 5.33× the 0.750 ms that pinning saves on the "
        "copy: the rest is neither the copy nor the wait" in text
    )
    assert text.count("a thread of the DataLoader") == 1  # at num_workers=4, not at 0
    assert "Queued behind 7.00 ms of GPU work (part of it run while the host queued it" in text


def test_copy_settings_of_older_captures():
    assert page.copy_settings({"pin_memory": True}) == (True, True)
    assert page.copy_settings({"pin_memory": False}) == (False, False)
    assert page.copy_settings({"pin_memory": True, "non_blocking": False}) == (True, False)


def test_data_loading_reading_when_nothing_beats_the_baseline():
    capture = data_loading()
    for c in capture["payload"]["cases"][0]["configs"][1:]:
        c["step"] = step(12.0)
    text = " ".join(page.data_loading_reading(shown(capture)).split())
    assert text.startswith("Fastest: num_workers=0 itself (10.0 ms per step): no other setting gained.")


def test_precision_reading_says_why_tf32_gains_nothing():
    text = " ".join(page.precision_reading(shown(precision())).split())
    assert "TF32 matmuls against float32, 30.0 ms → 29.8 ms per step" in text
    assert "of matmul work): 1.01× (within the run-to-run spread: no measurable gain)" in text
    assert "bfloat16 autocast against float32, 30.0 ms → 5.00 ms per step (50 → 300 TFLOP/s" in text
    assert "of matmul work): 6.00× faster" in text
    assert "TF32 brings no gain to this step because the matmul alone is no faster in TF32 either" in text
    assert "1e-07 in float32, 1e-03 with TF32 and 1e-02 under bfloat16 autocast" in text


def test_zero_grad_reading_names_the_ops_it_skips():
    text = " ".join(page.zero_grad_reading(shown(zero_grad())).split())
    assert (
        "many small: set_to_none=True against False, 5.00 ms → 5.01 ms per step: 1.00× (within the "
        "run-to-run spread: no measurable gain)" in text
    )
    assert "called these ATen ops more often: aten::add_ +40, aten::_foreach_zero_ +1." in text
    assert "aten::mm" not in text
    assert "one step ran 200 kernels, copies and memsets instead of 159" in text
    assert "kept it busy 1.00 ms instead of 0.800 ms" in text
    assert (
        "No measurable gain: the GPU is busy 20% of a 5.00 ms step, so the host sets the step's time" in text
    )
    assert page.NO_EVENTS not in text


def test_zero_grad_reading_of_a_capture_without_events():
    """The old capture summed every GPU-side event, annotations included: not read."""
    older = zero_grad()
    older["payload"]["device"] = "cuda"
    for c in older["payload"]["cases"][0]["configs"]:
        c["ops"] = {"aten": c["ops"]["aten"], "gpu_ops": 201, "gpu_busy_ms": 5.0}
    text = " ".join(page.zero_grad_reading(shown(older)).split())
    assert "kernels, copies and memsets" not in text and "busy" not in text.replace(page.NO_EVENTS, "")
    assert text.endswith(page.NO_EVENTS)


def test_syncs_reading_reads_each_width_against_the_gpu_time():
    text = " ".join(page.syncs_reading(shown(syncs())).split())
    assert (
        "reported 75 synchronizations in 30 steps: 30 at losses.append(loss.item()); 30 at if loss.isnan():"
        in text
    )
    assert "Without them it reported 2, all after the last step." in text
    assert "width 1024: removing them, 2.00 ms → 1.40 ms per step: 1.43× faster" in text
    small, large = (next(s for s in text.split("width ")[1:] if s.startswith(w)) for w in ("256", "2048"))
    assert "one step keeps the GPU busy 0.300 ms" in small
    assert "Its rounds ran 2.94–3.06 ms with the syncs and 2.93–3.05 ms without" in small
    assert "No measurable gain: the GPU waited for the host's launches" in small
    assert "one step keeps the GPU busy 5.90 ms" in large and "busy nearly all the step" in large
    assert page.NO_EVENTS not in text
    older = syncs()
    older["payload"]["device"] = "cuda"
    for c in older["payload"]["cases"]:
        del c["gpu_events"]
        c["gpu_busy_ms"] = 11.8  # summed with the annotations, longer than the step: not read
    text = " ".join(page.syncs_reading(shown(older)).split())
    assert "11.8" not in text and "keeps the GPU busy" not in text and text.endswith(page.NO_EVENTS)


def test_syncs_reading_gives_no_reason_another_width_contradicts():
    """A host-bound width without a gain is not explained by the GPU's idle share when a width
    with the GPU idler did gain; print's synchronizations are counted per call."""
    capture = syncs()
    payload = capture["payload"]
    payload["log_every"] = 10
    payload["found"]["syncs"]["by_line"]['print(f"step {i}: loss", loss)'] = 24
    payload["cases"][0]["configs"][0]["step"] = step(4.0)  # width 256, the GPU idler: gained
    width_1024 = payload["cases"][1]  # no gain, the GPU busy 30% of the step
    width_1024["configs"][0]["step"] = {**step(2.0), "runs": [1.5, 2.0, 2.6]}
    width_1024["configs"][1]["step"] = step(2.01)
    width_1024["gpu_events"] = timeline(1, 0.6e3 - 10)
    text = " ".join(page.syncs_reading(shown(capture)).split())
    assert 'The 24 at print(f"step {i}: loss", loss) came from 3 calls of print' in text
    assert "synchronized 8 times a call" in text
    assert "width 256: removing them, 4.00 ms → 2.99 ms per step: 1.34× faster" in text
    assert "width 1024: removing them, 2.00 ms → 2.01 ms per step" in text
    assert "Its rounds ran 1.50–2.60 ms with the syncs and 1.97–2.05 ms without." in text
    assert "finds it nearly done" not in text


def test_conv_reading_and_the_cost_of_benchmarking():
    text = " ".join(page.conv_reading(shown(conv())).split())
    assert "channels_last, cudnn.benchmark against NCHW, 4.00 ms → 2.50 ms per step: 1.60× faster" in text
    assert (
        "NCHW, cudnn.benchmark against NCHW, 4.00 ms → 4.00 ms per step: 1.00× (within the run-to-run" in text
    )
    assert (
        "cudnn.benchmark on channels_last, against channels_last without it, 3.00 ms → 2.50 ms per step: "
        "1.20× faster." in text
    )
    assert (
        "The first step at these shapes took 1.50 s on NCHW and 1.20 s on channels_last with "
        "cudnn.benchmark, against 0.30 s and 0.30 s without it (each setting in a fresh process, set up "
        "by a step at batch 128): benchmark mode times the algorithms" in text
    )
    quick = conv()
    for c in quick["payload"]["cases"][0]["configs"]:
        c["first_step_s"] = 0.3
    assert "without it (each setting in a fresh process, set up by a step at batch 128)." in " ".join(
        page.conv_reading(shown(quick)).split()
    )


def test_conv_reading_of_benchmark_steps_that_reused_the_heuristics_choices():
    """Both settings in one process: the benchmark rows reused the algorithms already
    chosen for the same shapes, and the reading says they measure nothing of it."""
    together = conv()
    del together["payload"]["process_per_setting"]
    assert not page.benchmark_apart(together) and page.benchmark_apart(conv())
    text = " ".join(page.conv_reading(shown(together)).split())
    assert "They do not measure cudnn.benchmark." in text
    assert "first steps (1.20–1.50 s, against 0.30 s without it)" in text
    assert "cudnn.benchmark on channels_last" not in text
    assert "cudnn.benchmark" not in page.headline(together)
    assert "cudnn.benchmark against cuDNN's heuristics: 1.00× (within" in page.headline(conv())


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
    assert "torch.compile against eager, 10.0 ms → 8.00 ms per step: 1.25× faster" in text
    assert "it pays for itself after 10,000 steps" in text  # (20.5 - 0.5) s / 2 ms
    never = " ".join(page.compile_reading(shown(compiled(compiled_ms=9.95))).split())
    assert "no measurable gain" in never and "never win it back" in never


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


def test_the_loaders_figure_and_headline_with_every_copy_setting(measurements):
    capture = data_loading_apart()
    assert page.headline(capture) == (
        "a DataLoader with num_workers=4 against 0: 1.11× faster, and pin_memory with non_blocking "
        "copies on top: 1.38× faster"
    )
    captures.write(capture, measurements)
    fig = page.figure(page.DATA_LOADING)
    assert overlapping_texts(fig) == []
    plt.close("all")


def test_the_opening_paragraph_reads_every_recipe(measurements):
    for make in ALL.values():
        captures.write(make(), measurements)
    text = " ".join(page.in_one_paragraph().text().split())
    assert text.startswith("Measured on the Test GPU 80GB as whole training steps, host included:")
    assert (
        "a DataLoader with num_workers=4 against 0: 2.44× faster, and pin_memory with non_blocking "
        "copies on top: 1.02× (within the run-to-run spread: no measurable gain)" in text
    )
    assert (
        "a float32 MLP step with TF32 matmuls: 1.01× (within the run-to-run spread: no measurable gain), "
        "under bfloat16 autocast: 6.00× faster" in text
    )
    assert (
        "zero_grad(set_to_none=True) against False: 1.00× (within the run-to-run spread: no measurable "
        "gain) on many small" in text
    )
    assert "removing 75 host synchronizations in 30 steps: 1.00× (within" in text
    assert "1.43× faster at width 1024" in text
    assert (
        "channels_last against NCHW on a conv net's step: 1.33× faster, cudnn.benchmark against cuDNN's "
        "heuristics: 1.00× (within the run-to-run spread: no measurable gain) on NCHW and 1.20× faster on "
        "channels_last" in text
    )
    assert "checkpointing every block: 4.00× less peak memory for 1.30× the step time" in text
    assert "torch.compile against eager: 1.25× faster, after a 20 s first step" in text
    assert not page.in_one_paragraph().notes


def test_missing_captures_are_said_plainly_with_the_command(measurements, capsys):
    captures.write(compiled(), measurements)
    para = page.in_one_paragraph()
    assert "torch.compile against eager: 1.25× faster" in para.text()
    (note,) = para.notes
    assert note.startswith("MISSING: no capture of recipe_data_loading, recipe_precision")
    assert "recipe_compile" not in note and "python scripts/recipes_capture.py" in note

    assert page.show(page.PRECISION) == {}
    printed = capsys.readouterr().out
    assert (
        "MISSING: no capture 'recipe_precision'" in printed and "python scripts/recipes_capture.py" in printed
    )
    assert page.precision_reading({}) == pages_captures.NOTHING_YET
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
        assert READINGS[name](shown(capture)) != pages_captures.NOTHING_YET
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


def test_gpu_events_keeps_the_gpu_side_of_the_trace(monkeypatch):
    """The capture keeps the events on the GPU's timeline from torch.profiler's Chrome
    trace, annotations among them, by category and from the first one's start; the page
    then counts and times the work alone."""
    script = _script(monkeypatch)
    trace = {
        "traceEvents": [
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 5.0, "dur": 100.0},
            {"ph": "X", "cat": "kernel", "name": "gemm", "ts": 1000.0, "dur": 10.0},
            {
                "ph": "X",
                "cat": "gpu_user_annotation",
                "name": "Optimizer.step#AdamW.step",
                "ts": 1000.0,
                "dur": 50.0,
            },
            {"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "ts": 1020.5, "dur": 2.0},
            {"ph": "f", "cat": "ac2g", "name": "flow", "ts": 1000.0},
        ]
    }

    class Profile:
        def export_chrome_trace(self, path):
            Path(path).write_text(json.dumps(trace))

    events = script.gpu_events(Profile())
    assert events == {
        "kernel": [[0.0, 10.0]],
        "gpu_memcpy": [],
        "gpu_memset": [[20.5, 22.5]],
        "gpu_user_annotation": [[0.0, 50.0]],
    }
    assert page.gpu_work(events) == {"ops": 2, "busy_ms": pytest.approx(0.012)}


def test_host_wait_ms_times_the_call_on_the_hosts_clock(monkeypatch):
    import torch

    script = _script(monkeypatch)
    calls = []
    timing = script.host_wait_ms(
        lambda: calls.append("copy"), lambda: calls.append("busy"), torch.device("cpu")
    )
    assert calls == ["busy", "copy"] * 5
    assert len(timing["runs"]) == 5 and timing["p20"] <= timing["median"] <= timing["p80"]
