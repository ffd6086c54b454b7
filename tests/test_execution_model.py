"""The execution-model guide's helpers (gpuperf.pages.execution_model): the occupancy
arithmetic against hand-computed cases and against Nsight Compute, every render and reading
on a synthetic capture, bad input, and (on a GPU) the capture script's parts."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpuperf.bench import captures, records
from gpuperf.pages import captures as pages_captures
from gpuperf.pages import execution_model as page
from gpuperf.pages.execution_model import SMLimits, occupancy
from gpuperf.pages.plotting import overlapping_texts
from tests._pages import copy_measurements, records_as_text  # noqa: F401  (autouse fixture)

ROOT = Path(__file__).resolve().parents[1]
GPU = "NVIDIA H100 80GB HBM3"

#: The H100's limits as NVIDIA documents them (CUDA C Programming Guide, compute capability
#: 9.0): 2,048 threads, 32 blocks, 65,536 registers and 228 KiB of shared memory per SM,
#: 227 KiB per block, 1 KiB reserved per block, 1,024 threads per block.
H100 = SMLimits(
    warp_size=32,
    threads=2048,
    programs=32,
    registers=65536,
    shared_bytes=233472,
    reserved_shared=1024,
    program_shared=232448,
    program_threads=1024,
)


# --- occupancy ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("warps", "registers", "shared", "programs", "limiters"),
    [
        # 32 registers: 1,024 per warp, 16 warps per quarter, 64 per SM: the warps bind too.
        (8, 32, 32, 8, ("warps", "registers")),
        # 48 registers: 1,536 per warp; 16,384 // 1,536 = 10 warps per quarter, 40 per SM.
        (4, 48, 32, 10, ("registers",)),
        # 173 registers: 5,536 -> 5,632 per warp; 2 per quarter, 8 per SM: one program;
        # 196,608 + 1,024 B = 197,632 B of shared memory: one program too.
        (8, 173, 196608, 1, ("registers", "shared memory")),
        # 31 registers: 992 -> 1,024 per warp (rounded up to 256).
        (8, 31, 0, 8, ("warps", "registers")),
        # One warp of few registers: the 32 programs per SM bind.
        (1, 16, 0, 32, ("programs per SM",)),
        # 100 KiB of shared memory: (102,400 + 1,024) -> 103,424 B; two fit in 233,472 B.
        (4, 32, 102400, 2, ("shared memory",)),
    ],
    ids=["softmax", "row-mean", "matmul", "rounded-registers", "program-cap", "shared"],
)
def test_occupancy_matches_the_hand_computed_cases(warps, registers, shared, programs, limiters):
    occ = occupancy(warps, registers, shared, H100)
    assert occ.programs == programs
    assert occ.warps == programs * warps
    assert occ.fraction == programs * warps / 64
    assert occ.limiters == limiters


def test_occupancy_rounds_registers_and_shared_memory_up_to_their_units():
    occ = occupancy(8, 173, 100, H100)
    assert occ.registers_per_warp == 5632  # 173 * 32 = 5,536, up to a multiple of 256
    assert occ.shared_per_program == 1152  # 100 + 1,024 = 1,124, up to a multiple of 128


def test_occupancy_of_a_kernel_without_registers_or_shared_memory():
    limits = SMLimits(warp_size=32, threads=2048, programs=32, registers=65536, shared_bytes=233472)
    occ = occupancy(4, 0, 0, limits)
    assert occ.by_registers is None and occ.by_shared is None
    assert occ.programs == 16 and occ.limiters == ("warps",)


def test_a_program_too_large_for_one_block_fits_zero_times():
    assert occupancy(64, 16, 0, H100).programs == 0  # 2,048 threads > 1,024 per block
    occ = occupancy(4, 16, 240_000, H100)
    assert occ.programs == 0 and occ.limiters == ("shared memory per program",)
    assert "none" in page.explain(occ, H100)[-1]


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        ((0, 32, 0, H100), ValueError, "num_warps"),
        ((4.0, 32, 0, H100), TypeError, "num_warps"),
        ((4, -1, 0, H100), ValueError, "registers"),
        ((4, True, 0, H100), TypeError, "registers"),
        ((4, 32, "0", H100), TypeError, "shared_bytes"),
        ((4, 32, 0, {"warp_size": 32}), TypeError, "limits"),
    ],
)
def test_occupancy_refuses_bad_input(args, error, match):
    with pytest.raises(error, match=match):
        occupancy(*args)


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [("warp_size", 0, ValueError), ("registers", 65536.0, TypeError), ("reserved_shared", -1, ValueError)],
)
def test_sm_limits_refuse_bad_fields(field, value, error):
    fields = {"warp_size": 32, "threads": 2048, "programs": 32, "registers": 65536, "shared_bytes": 233472}
    with pytest.raises(error, match=field):
        SMLimits(**{**fields, field: value})


def test_explain_shows_each_step_of_the_matmul():
    lines = page.explain(occupancy(8, 173, 196608, H100), H100)
    text = "\n".join(lines)
    assert "173 per thread x 32 = 5,536 per warp, in units of 256: 5,632" in text
    assert "16,384 per quarter // 5,632 = 2 warps" in text
    assert "2 x 4 = 8 warps per SM // 8 per program = 1 program\n" in text
    assert "196,608 B + 1,024 B reserved, in units of 128 B: 197,632 B" in text
    assert lines[-2].endswith("1 program x 8 warps = 8 of 64 warps: 12% occupancy,")
    assert lines[-1].strip() == "set by registers and shared memory"
    assert max(map(len, lines)) <= 86


def test_the_arithmetic_agrees_with_nsight_compute_on_the_committed_capture():
    """Every kernel the profiling guide's Nsight Compute capture profiled on the H100: its
    registers, threads and shared memory give Nsight Compute's theoretical occupancy and
    its block limit by registers."""
    ncu = captures.load("ncu_kernels", records.REFERENCE_GPU)
    checked = 0
    for launch in ncu["payload"]["launches"]:
        m = {k: v["value"] for k, v in launch["metrics"].items()}
        shared = int(m["Dynamic Shared Memory Per Block"] + m["Static Shared Memory Per Block"])
        occ = occupancy(-(-int(m["Block Size"]) // 32), int(m["Registers Per Thread"]), shared, H100)
        assert 100 * occ.fraction == pytest.approx(m["Theoretical Occupancy"]), launch["op"]
        assert occ.by_registers == m["Block Limit Registers"], launch["op"]
        assert occ.by_warps == m["Block Limit Warps"], launch["op"]
        checked += 1
    assert checked >= 4


# --- a synthetic capture -------------------------------------------------------------------


def _ms(us: float) -> dict:
    return {"median": us / 1e3, "p20": 0.95 * us / 1e3, "p80": 1.05 * us / 1e3}


def synthetic_payload() -> dict:
    """A payload shaped as the capture script writes it, with H100-like numbers."""
    sizes = []
    for n_bytes in sorted({2**p for p in range(20, 31)} | {3 * 2**p for p in range(19, 29)}):
        moved = 2 * n_bytes
        l2_rate = 7000e9 if moved <= 50e6 else 2900e9
        sizes.append(
            {
                "bytes": n_bytes,
                "resident": _ms(1.5 + moved / l2_rate * 1e6),
                "flushed": _ms(3.0 + moved / 2950e9 * 1e6),
            }
        )
    blocked = (
        "#blocked = #ttg.blocked<{sizePerThread = [4], threadsPerWarp = [32], "
        "warpsPerCTA = [8], order = [0]}>"
    )
    kernel = lambda name, fn, dtype, warps, regs, shared, programs, constexprs, layouts=(): {
        "name": name,
        "call": f"gpuperf.kernels.{name}(...)",
        "dtype": dtype,
        "kernel": fn,
        "num_warps": warps,
        "num_stages": 3,
        "registers": regs,
        "spills": 0,
        "shared_bytes": shared,
        "constexprs": constexprs,
        "layouts": list(layouts),
        "programs": programs,
    }
    return {
        "device": {
            "torch": {
                "name": GPU,
                "multi_processor_count": 132,
                "warp_size": 32,
                "max_threads_per_multi_processor": 2048,
                "regs_per_multiprocessor": 65536,
                "shared_memory_per_multiprocessor": 233472,
                "shared_memory_per_block_optin": 232448,
                "L2_cache_size": 52428800,
                "total_memory": 85045379072,
                "clock_rate": 1980000,
                "memory_clock_rate": 2619000,
                "memory_bus_width": 5120,
            },
            "driver": {"MAX_BLOCKS_PER_MULTIPROCESSOR": 32, "RESERVED_SHARED_MEMORY_PER_BLOCK": 1024},
            "triton": None,
        },
        "kernels": [
            kernel("vector_add", "add_kernel", "float32", 8, 26, 0, 16384, {"BLOCK_SIZE": 1024}, [blocked]),
            kernel("softmax", "_softmax_kernel", "float32", 8, 32, 32, 4096, {"BLOCK_N": 4096, "BLOCK_M": 1}),
            kernel("row_mean", "_row_mean_kernel", "float32", 4, 48, 32, 2048, {"BLOCK_M": 2}),
            kernel("matmul", "_matmul_kernel", "bfloat16", 8, 173, 196608, 1024, {"BLOCK_M": 128}),
            {"name": "broken", "call": "gpuperf.kernels.broken(...)", "error": "RuntimeError: no"},
        ],
        "copy_sweep": {"kernel": "copy_kernel", "dtype": "float32", "sizes": sizes},
        "launch": {
            "num_warps": 4,
            "host_jit": _ms(18.0),
            "host_compiled": _ms(6.0),
            "round_trip": _ms(25.0),
            "gpu_events": _ms(2.5),
            "samples": 200,
            "grids": [
                {"programs": 1, "gpu_graph": _ms(1.2)},
                {"programs": 132, "gpu_graph": _ms(1.3)},
                {"programs": 33792, "gpu_graph": _ms(8.0)},
            ],
        },
        "failed": {},
    }


def synthetic_capture(payload: dict | None = None) -> dict:
    provenance = {
        "gpu": GPU,
        "sm_count": 132,
        "memory_gib": 79.2,
        "l2_bytes": 52428800,
        "compute_capability": "9.0",
        "driver": "580",
        "cuda": "13.0",
        "torch": "2.11",
        "triton": "3.6.0",
        "python": "3.12",
        "gpuperf_commit": "test",
        "date": "2026-12-01T00:00:00Z",
        "timing_method": "synthetic",
    }
    return captures.build(
        page.NAME,
        tool="a test",
        payload=payload or synthetic_payload(),
        sources=("kernels/vector_add.py",),
        provenance=provenance,
    )


def shown(capture: dict) -> dict:
    return {"nvidia-h100-80gb-hbm3": capture}


def test_the_device_table_names_each_limit_and_its_source():
    text = page.device_table(synthetic_capture())
    for expected in ("132", "2,048 (64 warps)", "65,536 (256 KiB)", "228 KiB", "227 KiB", "50 MiB"):
        assert expected in text
    assert "torch: multi_processor_count" in text and "driver: MAX_BLOCKS_PER_MULTIPROCESSOR" in text
    assert "1,980 MHz" in text


def test_device_values_prefer_torch_and_fall_back_to_the_driver():
    payload = synthetic_payload()
    payload["device"]["driver"]["MULTIPROCESSOR_COUNT"] = 7
    capture = synthetic_capture(payload)
    assert page.device_value(capture, "sms") == (132, "torch: multi_processor_count")
    assert page.device_value(capture, "programs_per_sm") == (32, "driver: MAX_BLOCKS_PER_MULTIPROCESSOR")
    assert page.device_value(capture, "threads_per_program") == (None, None)
    with pytest.raises(ValueError, match="key"):
        page.device_value(capture, "sm_count")


def test_sm_limits_come_from_the_capture():
    limits = page.sm_limits(synthetic_capture())
    assert limits == SMLimits(32, 2048, 32, 65536, 233472, 1024, 232448, None)


def test_sm_limits_name_what_the_capture_lacks():
    payload = synthetic_payload()
    payload["device"]["driver"] = {}
    with pytest.raises(ValueError, match="programs_per_sm"):
        page.sm_limits(synthetic_capture(payload))


def test_the_occupancy_table_and_the_worked_arithmetic():
    capture = synthetic_capture()
    table = page.occupancy_table(capture)
    assert "matmul (_matmul_kernel)" in table and "12%" in table and "100%" in table
    assert "not read: broken: RuntimeError: no" in table
    # 1,024 programs of the matmul, one per SM on 132 SMs: 7.8 waves.
    assert "7.8" in table
    worked = page.occupancy_worked(shown(capture))
    assert worked.count("resident:") == 4
    assert "_row_mean_kernel, launched by gpuperf.kernels.row_mean(...):" in worked


def test_the_program_reading_multiplies_out_the_layout():
    text = page.program_reading(shown(synthetic_capture())).replace("\n", " ")
    assert "16,384 programs of 8 warps (256 threads) each" in text
    assert "4 elements per thread x 32 threads per warp x 8 warps = 1,024 elements" in text
    assert "4 x 4 bytes = 16 bytes per thread" in text


def test_the_hierarchy_table_holds_the_measured_bandwidths():
    text = page.hierarchy_table(synthetic_capture())
    assert "33 MiB on the chip" in text  # 256 KiB of registers on each of 132 SMs
    assert "not measured here" in text
    assert "both buffers in L2" in text
    assert "copy bandwidth" in text and "stream bandwidth" in text  # from hardware.json


def test_the_memory_reading_compares_l2_with_hbm():
    text = page.memory_reading(shown(synthetic_capture())).replace("\n", " ")
    assert "peaked at" in text and "of a 1 GiB copy from HBM" in text
    assert "At 1 GiB, far past L2" in text
    assert "an empty kernel timed the same way takes 2.5 µs" in text
    assert "2 x 2,619 MHz x 5,120 bits / 8 = 3.35 TB/s" in text
    # The synthetic L2 holds both buffers up to a 16 MiB source; at 24 MiB they would fit
    # the reported 50 MiB but run at HBM's rate, which the reading says.
    assert "Past the peak the rate falls while both buffers still fit in the reported L2:" in text
    assert "with a 24 MiB source (" in text and "whose two buffers would fill 96% of it" in text
    assert "of which an empty kernel replayed the same way takes" in text


def test_the_memory_reading_says_nothing_of_a_shortfall_when_l2_holds_every_fitting_size():
    capture = synthetic_capture()
    for size in capture["payload"]["copy_sweep"]["sizes"]:
        if 2 * size["bytes"] <= 52428800:
            size["resident"] = _ms(1.0)  # the same time at every size that fits: faster and faster
    text = page.memory_reading(shown(capture)).replace("\n", " ")
    assert "Past the peak" not in text and "with a 24 MiB source: " in text


def test_the_copy_sweep_figure_draws_both_series_and_the_ceiling_without_collisions():
    import matplotlib.pyplot as plt

    fig = page.copy_sweep_figure(synthetic_capture())
    try:
        labels = [t.get_text() for t in fig.legends[0].get_texts()]
        assert len(labels) == 4  # two series, the L2 region, the ceiling
        assert any(label.startswith("copy bandwidth, measured: ") for label in labels)
        assert overlapping_texts(fig) == []
    finally:
        plt.close(fig)


def test_the_launch_table_and_reading():
    capture = synthetic_capture()
    table = page.launch_table(capture)
    assert "18.00" in table and "33,792" in table
    assert "MiB" in table  # what HBM moves meanwhile, at the measured copy bandwidth
    text = page.launch_reading(shown(capture)).replace("\n", " ")
    assert "takes the host 18.0 µs" in text and "1.20 µs" in text
    assert "15× what it costs the GPU" in text
    assert "compiled kernel's own launcher takes 6.0 µs" in text
    # (8.0 - 1.2) µs over 33,791 more programs.
    assert "0.20 ns per program" in text
    assert "host_overhead record" in text  # the committed record of the same GPU


def test_a_failed_part_is_said_not_raised():
    payload = synthetic_payload()
    del payload["copy_sweep"], payload["launch"]
    payload["failed"] = {"copy_sweep": "RuntimeError: out of memory"}
    capture = synthetic_capture(payload)
    assert page.plot_copy_sweep(capture) == (
        "The copy_sweep part was not captured: RuntimeError: out of memory"
    )
    assert page.launch_table(capture) == "The launch part was not captured: not in the capture"
    assert "not captured" in page.memory_reading(shown(capture))
    assert "was not captured" in page.launch_reading(shown(capture))
    assert "-" in page.hierarchy_table(capture)


def test_renders_refuse_another_capture():
    other = {**synthetic_capture(), "name": "launch_bound"}
    with pytest.raises(ValueError, match="execution_model"):
        page.device_table(other)
    with pytest.raises(TypeError, match="capture"):
        page.occupancy_table([])
    with pytest.raises(TypeError, match="captures shown"):
        page.memory_reading([synthetic_capture()])


def test_readings_without_a_capture_say_so():
    assert page.launch_reading({}) == pages_captures.NOTHING_YET


def test_the_paragraph_reads_the_committed_capture_or_says_it_is_missing(tmp_path, monkeypatch):
    root = copy_measurements(tmp_path, monkeypatch)
    for path in root.glob(f"*/captures/{page.NAME}.json"):
        path.unlink()
    paragraph = page.in_one_paragraph()
    assert "SMs" in paragraph.text() and "a 1 GiB copy crosses at" in paragraph.text()
    assert any(note.startswith("MISSING") for note in paragraph.notes)
    captures.write(synthetic_capture(), root)
    text = page.in_one_paragraph().text()
    assert "each SM holds at most 2,048 threads (64 warps of 32) in at most 32 programs" in text
    assert "an SM holds 1 program of it at once: 12% occupancy, where vector_add reaches 100%" in text
    assert "gpuperf's bfloat16 matmul needs" in text  # the dtype the capture names
    assert "costs the host 18.0 µs and the GPU 1.20 µs" in text


def test_the_capture_keys_on_its_kernels_and_has_its_command():
    # Its host times are an empty kernel's, of its own script: gpuperf's launch glue is not in them.
    assert page.NAME not in captures.HOST_TIMED
    assert captures.command(page.NAME) == "python scripts/execution_model_capture.py"


# --- the capture script, on a GPU ------------------------------------------------------------


def _script():
    spec = importlib.util.spec_from_file_location(
        "execution_model_capture", ROOT / "scripts" / "execution_model_capture.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.gpu
def test_the_script_reads_the_device_and_the_kernels():
    """In a process of its own: the script reads a kernel only while Triton compiles it, and
    this test process may have compiled them already."""
    code = (
        "import json, runpy; s = runpy.run_path('scripts/execution_model_capture.py', run_name='capture'); "
        "print(json.dumps({'device': s['part_device'](), 'kernels': s['part_kernels']()}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300, check=False
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["device"]["torch"]["multi_processor_count"] > 0
    assert found["device"]["driver"]["MAX_BLOCKS_PER_MULTIPROCESSOR"] > 0
    read = {k["name"]: k for k in found["kernels"]}
    assert sorted(read) == ["matmul", "row_mean", "softmax", "vector_add"]
    for entry in read.values():
        assert "error" not in entry, entry
        assert entry["registers"] > 0 and entry["num_warps"] >= 1 and entry["programs"] >= 1
    assert any("sizePerThread" in line for line in read["vector_add"]["layouts"])
    capture = {"name": page.NAME, "payload": found, "provenance": {"gpu": "a GPU"}}
    assert page.occupancy(8, 32, 0, page.sm_limits(capture)).programs >= 1


@pytest.mark.gpu
def test_the_script_times_an_empty_launch_and_a_copy(monkeypatch):
    import matplotlib.pyplot as plt

    script = _script()
    monkeypatch.setattr(script, "COPY_SIZES", (2**20, 2**26))
    monkeypatch.setattr(script, "EMPTY_GRIDS", (0, 1))
    sweep = script.part_copy_sweep()
    assert [s["bytes"] for s in sweep["sizes"]] == [2**20, 2**26]
    launch = script.part_launch()
    assert launch["host_jit"]["median"] > 0 and launch["grids"][0]["programs"] == 1
    payload = {"device": script.part_device(), "copy_sweep": sweep, "launch": launch, "failed": {}}
    capture = captures.build(page.NAME, tool="test", payload=payload, sources=script.SOURCES)
    assert captures.validate(capture) == []
    assert page.launch_table(capture) and page.plot_copy_sweep(capture) is None
    plt.close("all")
