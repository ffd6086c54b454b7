"""The debugging guide: its demos (:mod:`gpuperf.bench.debugging`), run in processes of their
own as the page runs them, the trimming that keeps their output small, and the page's
renders and sentences (:mod:`gpuperf.pages.debugging`) read from made-up captures of the
shape ``scripts/debugging_capture.py`` writes (only the format is real). The GPU tests run
the demos and the capture script on a GPU."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gpuperf.bench import captures
from gpuperf.bench import debugging as demo
from gpuperf.pages import debugging as page
from tests._pages import copy_measurements, records_as_text  # noqa: F401 (autouse)
from tests.test_bench_records import fake_provenance

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "/machine/checkout/src/gpuperf"
SOURCE = f"{PACKAGE}/bench/debugging.py"


# --- excerpts ---------------------------------------------------------------------------------

TEXT = "\n".join(f"line {i}" for i in range(1, 21))


def test_excerpt_keeps_matching_lines_verbatim_with_their_numbers():
    kept = demo.excerpt(TEXT, r"line (3|4|9)$")
    assert kept == {"total": 20, "blocks": [[3, ["line 3", "line 4"]], [9, ["line 9"]]]}
    assert demo.excerpt_lines(kept) == ["line 3", "line 4", "line 9"]


def test_excerpt_context_after_limit_first_and_last():
    assert demo.excerpt(TEXT, r"line 10$", context=1)["blocks"] == [[9, ["line 9", "line 10", "line 11"]]]
    assert demo.excerpt(TEXT, r"line 10$", after=2)["blocks"] == [[10, ["line 10", "line 11", "line 12"]]]
    # limit: the first accepted lines only
    assert demo.excerpt(TEXT, r"line \d+$", limit=2)["blocks"] == [[1, ["line 1", "line 2"]]]
    kept = demo.excerpt(TEXT, None, first=2, last=1)
    assert kept["blocks"] == [[1, ["line 1", "line 2"]], [20, ["line 20"]]]
    # a predicate, and context that runs off either end
    kept = demo.excerpt(TEXT, lambda line: line in ("line 1", "line 20"), context=3)
    assert kept["blocks"] == [
        [1, ["line 1", "line 2", "line 3", "line 4"]],
        [17, [f"line {i}" for i in range(17, 21)]],
    ]


def test_excerpt_refuses_bad_arguments():
    with pytest.raises(TypeError, match="keep"):
        demo.excerpt(TEXT, 3)
    with pytest.raises(ValueError, match="context"):
        demo.excerpt(TEXT, "x", context=-1)
    with pytest.raises(ValueError, match="limit"):
        demo.excerpt(TEXT, "x", limit=-2)


def test_between_and_either_keep_sections_and_each_sees_every_line():
    text = "a\nstart 1\nb\nend 1\nc\nstart 2\nend 2\nd"
    kept = demo.excerpt(text, demo.between("start", "end"))
    assert demo.excerpt_lines(kept) == ["start 1", "b", "end 1", "start 2", "end 2"]
    # A one-line section (start and end on one line) ends where it starts.
    assert demo.excerpt_lines(demo.excerpt("x\nstart end\ny", demo.between("start", "end"))) == ["start end"]
    # either: the stateful predicate sees the line "d" is outside, even though "^d" accepts it.
    both = demo.excerpt(text, demo.either(demo.between("start 2", "end 2"), "^a$", "^d$"))
    assert demo.excerpt_lines(both) == ["a", "start 2", "end 2", "d"]


def test_echo_commands_writes_each_command_after_its_prompt():
    output = "> kernel()\n(Pdb) 1\n(Pdb) 2\n(Pdb) done\n"
    echoed = demo.echo_commands(output, ["p a", "p b"])
    assert echoed == "> kernel()\n(Pdb) p a\n1\n(Pdb) p b\n2\n(Pdb) done\n"


def test_within_package_writes_paths_from_the_package_name():
    assert demo.within_package(f"at {SOURCE}:12", PACKAGE) == "at gpuperf/bench/debugging.py:12"
    assert demo.within_package("nothing", "") == "nothing"


# --- the compiled code's counts and excerpts ----------------------------------------------------

PTX_COPY = """//
.visible .entry copy_kernel(
// %bb.0:
\t.loc\t1 96 16
\t@%p1 ld.global.v4.b32 { %r1, %r2, %r3, %r4 }, [ %rd1 + 0 ];
\t@%p1 st.global.v4.b32 [ %rd2 + 0 ], { %r1, %r2, %r3, %r4 };
\tret;
$L__func_end0:
"""
SASS_COPY = "\n".join(
    [
        "Function:copy_kernel",
        "@!P0 LDG.E.128 R8, desc[UR4][R2.64];",
        "STG.E.128 desc[UR4][R4.64], R8;",
        "EXIT;",
        " NOP;",
        "",
    ]
)


def test_counted_counts_each_instruction_by_stage():
    counts = demo.counted({"ptx": PTX_COPY, "sass": SASS_COPY, "ttir": "ignored"})
    assert counts["ptx"] == {"vector loads": 1, "loads": 1, "stores": 1, "async copies": 0, "wgmma": 0}
    assert counts["sass"]["LDG.E.128"] == 1 and counts["sass"]["LDG"] == 1 and counts["sass"]["STG"] == 1


def test_shown_code_keeps_the_copy_body_and_drops_the_padding():
    code = {
        "ttir": '#loc = loc("x")\nmodule {\n  tt.load\n}\n#loc1 = loc("y")',
        "ttgir": "#blocked = #ttg.blocked<{sizePerThread = [4]}>\n  %x = tt.load %p\n  tt.store %q",
        "llir": 'define void @k() {\n  asm "@$5 ld.global.v4.b32"\n}',
        "ptx": PTX_COPY,
        "sass": SASS_COPY,
    }
    shown = demo.shown_code("copy_kernel", code)
    assert demo.excerpt_lines(shown["ttir"]) == ["module {", "  tt.load", "}"]
    assert (
        demo.excerpt_lines(shown["ptx"])[0] == "// %bb.0:"
        and demo.excerpt_lines(shown["ptx"])[-1] == "\tret;"
    )
    assert all("NOP" not in line for line in demo.excerpt_lines(shown["sass"]))
    other = demo.shown_code("copy_off_by_one_kernel", code)
    assert sorted(other) == ["ptx", "sass"]
    assert demo.excerpt_lines(other["ptx"]) == [line for line in PTX_COPY.splitlines() if "global" in line]


# --- the demos, in processes of their own ----------------------------------------------------------


def test_run_refuses_an_unknown_demo_and_a_value_that_is_not_a_string():
    with pytest.raises(ValueError, match="demo must be one of"):
        demo.run("nonsense")
    with pytest.raises(ValueError, match="strings"):
        demo.run("print", TRITON_INTERPRET=1)
    with pytest.raises(ValueError, match="strings"):
        demo.run("print", setup={"TRITON_CACHE_DIR": None})


def test_the_interpreted_print_shows_one_lane_too_many_and_the_element_past_the_end():
    ran = demo.run("print", TRITON_INTERPRET="1")
    assert ran.returncode == 0, ran.output
    assert str(ran).startswith("$ TRITON_INTERPRET=1 python -m gpuperf.bench.debugging print\n")
    mask = re.search(r"mask \[([^\]]*)\]", ran.output, re.DOTALL).group(1).split()
    first = (demo.PRINT_N // demo.PRINT_BLOCK) * demo.PRINT_BLOCK
    assert mask.count("True") == demo.PRINT_N - first + 1  # one lane past the end
    assert "y equals x: True" in ran.output
    assert f"the element after y: {float(demo.PRINT_N)} (it was {demo.FILL})" in ran.output


def test_pdb_stops_in_the_kernel_and_the_commands_are_echoed():
    quiet = {"PYTHONWARNINGS": "ignore"}  # set, not shown
    ran = demo.run("pdb", TRITON_INTERPRET="1", stdin="p offs\np mask.sum()\nc\n", setup=quiet)
    assert ran.returncode == 0, ran.output
    assert ran.command == "TRITON_INTERPRET=1 python -m gpuperf.bench.debugging pdb"
    assert "copy_breakpoint_kernel()" in ran.output
    first = (demo.PRINT_N // demo.PRINT_BLOCK) * demo.PRINT_BLOCK
    assert f"(Pdb) p offs\narray([{first}," in ran.output
    assert f"(Pdb) p mask.sum()\narray([{demo.PRINT_N - first + 1}]" in ran.output
    assert "gpuperf/bench/debugging.py" in str(ran) and demo.PACKAGE_ROOT not in str(ran)


def test_the_interpreter_skips_device_assert_even_with_triton_debug():
    ran = demo.run("assert", TRITON_INTERPRET="1", TRITON_DEBUG="1")
    assert ran.returncode == 0, ran.output
    assert "y equals x: True" in ran.output and "raised" not in ran.output


def test_static_checks_compile_offline_for_an_h100():
    ran = demo.run("static", TRITON_INTERPRET="0", TRITON_ALWAYS_COMPILE="1")
    assert ran.returncode == 0, ran.output
    assert f"BLOCK = {demo.BLOCK} x: pointer<fp32> offs: int32[constexpr[{demo.BLOCK}]]" in ran.output
    assert "CompileTimeAssertionFailure" in ran.output and "x and y must have the same dtype" in ran.output


def test_the_off_by_one_mask_loses_the_vector_loads():
    ran = demo.run("loads", TRITON_INTERPRET="0")
    assert ran.returncode == 0, ran.output
    good, bad = ran.output.split("copy_off_by_one_kernel:")
    assert "ld.global.v4.b32" in good
    assert "ld.global.b32" in bad and "ld.global.v4" not in bad


@pytest.mark.skipif(
    not demo.interpreted(), reason="checks what a process that interprets its kernels refuses"
)
def test_demos_that_need_a_gpu_or_the_compiler_say_so(monkeypatch):
    with pytest.raises(RuntimeError, match="run it on a GPU"):
        demo.out_of_bounds()  # this process interprets its kernels
    with pytest.raises(TypeError, match="TRITON_INTERPRET=1"):
        demo.compile_offline(demo.copy_kernel, demo.COPY_SIGNATURE, {"BLOCK": demo.BLOCK})
    monkeypatch.setattr(demo, "interpreted", lambda: False)
    with pytest.raises(RuntimeError, match="set TRITON_INTERPRET=1"):
        demo.stop_in_pdb()


# --- the page: renders and sentences from made-up captures ---------------------------------------


def ran(command: str, output: str, returncode: int = 0, **keep) -> dict:
    return {"command": command, "returncode": returncode, "output": demo.excerpt(output, **keep)}


def capture(name: str, payload: dict, gpu: str = "NVIDIA H100 80GB HBM3") -> dict:
    return captures.build(
        name,
        tool="test",
        payload={**payload, "package_root": PACKAGE},
        sources=("bench/debugging.py",),
        provenance=fake_provenance(gpu),
    )


def print_capture() -> dict:
    lines = [f"pid (2, 0, 0) idx ({i:3d}) offs: {64 + i}" for i in range(32)]
    lines += [f"pid (2, 0, 0) idx ({i:3d}) mask: {int(i < 7)}" for i in range(32)]
    lines += ["y equals x: True", "the element after y: 70.0 (it was -1.0)"]
    return capture(
        PAGE_PRINT, {"n": 70, "block": 32, "run": ran("python -m x print", "\n".join(lines), first=40)}
    )


PAGE_PRINT = page.PRINT


def assert_capture() -> dict:
    failed = (
        f"{SOURCE}:118: copy_asserting_kernel: block: [1,0,0], thread: [32,0,0] Assertion "
        "`a lane past the end is not masked` failed.\n"
        "the next synchronization raised AcceleratorError: CUDA error: device-side assert triggered\n"
        "and so does any later CUDA call: AcceleratorError: CUDA error: device-side assert triggered"
    )
    plain = "y equals x: True\nthe element after y: 640.0 (it was -1.0)"
    runs = [
        ran("TRITON_DEBUG=1 python -m x assert", failed, keep=""),
        ran("python -m x assert", plain, keep=""),
    ]
    return capture(page.ASSERT, {"n": 640, "block": 512, "runs": runs})


def sanitizer_capture(errors_on: int = 0) -> dict:
    plain = (
        "y equals x: True\nafter_x starts where x ends: True\nafter_y starts where y ends: True\n"
        "after_y[0]: 7.0 (it was -1.0; after_x[0] is 7.0)"
    )
    report = (
        "========= COMPUTE-SANITIZER\n"
        "========= Invalid __global__ read of size 4 bytes\n"
        f"=========     at copy_off_by_one_kernel+0x1b0 in {SOURCE}:103\n"
        "=========     by thread (0,0,0) in block (1,0,0)\n"
        "========= Invalid __global__ write of size 4 bytes\n"
        "y equals x: True\nafter_x starts where x ends: False\nafter_y starts where y ends: False\n"
        "after_y[0]: -1.0 (it was -1.0; after_x[0] is 7.0)\n"
        "========= ERROR SUMMARY: 2 errors"
    )
    quiet = f"========= COMPUTE-SANITIZER\n{plain}\n========= ERROR SUMMARY: {errors_on} errors"
    last = (
        "========= COMPUTE-SANITIZER\n"
        "========= Invalid __global__ write of size 4 bytes\n"
        f"=========     at copy_off_by_one_kernel+0x1c0 in {SOURCE}:104\n"
        "y equals x: True\n"
        "========= ERROR SUMMARY: 1 error"
    )
    runs = [
        ran("python -m x oob", plain, keep=""),
        ran("compute-sanitizer --tool memcheck python -m x oob", quiet, keep=""),
        ran(
            "PYTORCH_NO_CUDA_MEMORY_CACHING=1 compute-sanitizer --tool memcheck python -m x oob",
            report,
            keep="",
        ),
        ran(
            "PYTORCH_NO_CUDA_MEMORY_CACHING=1 compute-sanitizer --tool memcheck python -m x oob_last",
            last,
            keep="",
        ),
    ]
    return capture(page.SANITIZER, {"n": 640, "block": 512, "runs": runs})


def kernel_entry(counts: dict, code: dict, shared=0, regs=16) -> dict:
    return {
        "num_warps": 4,
        "num_stages": 3,
        "shared": shared,
        "n_regs": regs,
        "n_spills": 0,
        "lines": {},
        "counts": counts,
        "code": code,
    }


def compiled_capture() -> dict:
    zero_ptx = {"vector loads": 0, "loads": 0, "stores": 0, "async copies": 0, "wgmma": 0}
    zero_sass = {"LDG.E.128": 0, "LDG": 0, "STG": 0, "LDGSTS": 0, "HGMMA": 0}
    copy_code = {
        "ptx": demo.excerpt(PTX_COPY, demo.GLOBAL_ACCESS.search),
        "sass": demo.excerpt(SASS_COPY, "LDG|STG"),
    }
    kernels = {
        "copy_kernel": kernel_entry(
            {
                "ptx": {**zero_ptx, "vector loads": 1, "loads": 1, "stores": 1},
                "sass": {**zero_sass, "LDG.E.128": 1, "LDG": 1, "STG": 1},
            },
            copy_code,
        ),
        "copy_off_by_one_kernel": kernel_entry(
            {"ptx": {**zero_ptx, "loads": 4, "stores": 4}, "sass": {**zero_sass, "LDG": 4, "STG": 4}},
            copy_code,
        ),
        "matmul_kernel": kernel_entry(
            {
                "ptx": {**zero_ptx, "stores": 16, "async copies": 48, "wgmma": 8},
                "sass": {**zero_sass, "STG": 16, "LDGSTS": 48, "HGMMA": 8},
            },
            {"sass": demo.excerpt("HGMMA.64x128x16.F32 R88, gdesc[UR4].tnspB, R88;", "HGMMA")},
            shared=98304,
            regs=168,
        ),
    }
    return capture(
        page.COMPILED,
        {"n": 640, "block": 512, "size": 512, "tile": [128, 128, 64], "dtype": "float16", "kernels": kernels},
    )


DUMP = "\n".join(
    [
        "// -----// IR Dump Before Inliner (inline) ('builtin.module' operation) //----- //",
        f'#loc = loc("{SOURCE}":91:0)',
        "module {",
        "// -----// IR Dump Before ConvertTritonToTritonGPU (convert-triton-to-tritongpu) //----- //",
        "// -----// IR Dump Before TritonGPUCoalesce (tritongpu-coalesce) //----- //",
        "#blocked = #ttg.blocked<{sizePerThread = [1]}>",
        "// -----// IR Dump Before TritonGPUF32DotTC (tritongpu-F32DotTC) //----- //",
        "#blocked = #ttg.blocked<{sizePerThread = [1]}>",
        "#blocked1 = #ttg.blocked<{sizePerThread = [4]}>",
        "// -----// IR Dump Before TritonGPUPlanCTAPass (triton-nvidia-gpu-plan-cta) //----- //",
        "#blocked1 = #ttg.blocked<{sizePerThread = [4]}>",
    ]
)


def mlir_capture() -> dict:
    runs = [
        {
            "command": "MLIR_ENABLE_DUMP=copy_kernel python -m x compile",
            "returncode": 0,
            "dumps": 5,
            "lines": 3600,
        },
        {
            "command": "MLIR_ENABLE_DUMP=copy_kernel python -m x compile",
            "returncode": 0,
            "dumps": 0,
            "lines": 2,
        },
        {
            "command": "MLIR_ENABLE_DUMP=copy_kernel TRITON_ALWAYS_COMPILE=1 python -m x compile",
            "returncode": 0,
            "dumps": 5,
            "lines": 3600,
        },
    ]
    payload = {
        "filter": "IR Dump (Before|After)|^#blocked[0-9]* =",
        "runs": runs,
        "first_dump": demo.excerpt(DUMP, "IR Dump Before", after=2, limit=1),
        "filtered": demo.excerpt(DUMP, "IR Dump (Before|After)|^#blocked[0-9]* ="),
        "cache_files": [["ABC/copy_kernel.ptx", 4321], ["ABC/copy_kernel.cubin", 9000]],
    }
    return capture(page.MLIR_DUMP, payload)


def test_excerpt_text_marks_gaps_cuts_wide_lines_and_shortens_paths():
    kept = demo.excerpt(f"a\nb {SOURCE}:3\nc\n{'x' * 150}\nd", r"^b|^x")
    text = page.excerpt_text(kept, PACKAGE)
    assert text.splitlines() == [
        "...",
        "b gpuperf/bench/debugging.py:3",
        "...",
        "x" * (page.WIDTH - 4) + " ...",
        "...",
    ]
    with pytest.raises(TypeError, match="excerpt"):
        page.excerpt_text(["not", "an", "excerpt"])


def test_run_text_is_a_terminal_with_the_exit_status():
    text = page.run_text(ran("python -m x oob", "out", returncode=1, keep=""))
    assert text == "$ python -m x oob\nout\n(exit status 1)"


def test_printed_and_print_reading():
    cap = print_capture()
    text = page.printed(cap)
    assert text.startswith("$ python -m x print\npid (2, 0, 0) idx (  0) offs: 64") and text.endswith("...")
    reading = page.print_reading({"h100": cap})
    assert "the GPU printed 8 lines of mask, 32 lines of offs (the capture keeps the first lines)" in reading
    assert "from program 2 alone" in reading


def test_assert_render_and_reading():
    cap = assert_capture()
    assert "gpuperf/bench/debugging.py:118: copy_asserting_kernel" in page.runs(cap)
    reading = page.assert_reading({"h100": cap})
    assert (
        "with TRITON_DEBUG=1: the GPU printed the failed assertion, the next synchronization raised"
        in reading
    )
    assert "every later CUDA call in the process failed too" in reading
    assert "without it: no error, y equals x, and the element past it became 640.0" in reading


def test_sanitizer_reading_tells_the_runs_apart():
    reading = page.sanitizer_reading({"h100": sanitizer_capture()})
    assert (
        "without a tool: y equals x, no error; the first element of the tensor after y became 7.0 "
        "(it was -1.0): the first element of the tensor after x" in reading
    )
    facts = page._sanitizer_facts(sanitizer_capture()["payload"]["runs"][2])
    assert page._damage(facts) == "the tensor after y is unchanged (its first element still -1.0)"
    assert "memcheck: 0 errors" in reading
    assert (
        "memcheck, caching allocator off: 2 errors: 1 invalid read of 4 bytes and 1 invalid write of 4 bytes"
        in reading
    )
    last = "memcheck, caching allocator off, nothing allocated after y: 1 error: 1 invalid write of 4 bytes"
    assert last in reading


def test_sanitizer_counts_tell_invalid_accesses_from_the_calls_that_failed_after_them():
    report = "\n".join(
        [
            "========= Invalid __global__ write of size 4 bytes",
            *['========= Program hit cudaErrorLaunchFailure (error 719) due to "unspecified launch failure"']
            * 4,
            "========= ERROR SUMMARY: 5 errors",
        ]
    )
    facts = page._sanitizer_facts(ran("x", report, keep=""))
    assert (
        page._accesses(facts)
        == "5 errors: 1 invalid write of 4 bytes, then 4 CUDA calls that failed after it"
    )
    cut = page._sanitizer_facts(ran("x", report.replace("5 errors", "9 errors"), keep=""))
    assert page._accesses(cut) == "9 errors, among them 1 invalid write of 4 bytes"
    quiet = page._sanitizer_facts(ran("x", "========= ERROR SUMMARY: 0 errors", keep=""))
    assert page._accesses(quiet) == "0 errors"


def test_compiled_code_render_reading_and_resources():
    cap = compiled_capture()
    text = page.compiled_code("copy_kernel")(cap)
    assert text.startswith("--- PTX: 2 of 8 lines\n...\n\t@%p1 ld.global.v4.b32")
    assert "--- SASS: 2 of 5 lines" in text
    with pytest.raises(ValueError, match="stages"):
        page.compiled_code("copy_kernel", "cubin")
    reading = page.compiled_reading({"h100": cap})
    assert "copy_kernel: 1 global load(s) per thread in PTX, 1 of them vector loads" in reading
    assert "copy_off_by_one_kernel: 4 global load(s) per thread in PTX, 0 of them" in reading
    assert "matmul_kernel: 8 wgmma.mma_async in PTX, 8 HGMMA in SASS" in reading
    assert "96 KiB of shared memory, 168 registers per thread, 0 spilled" in reading
    table = page.resources(cap)
    assert "matmul_kernel" in table and "96 KiB" in table and "168" in table
    pipeline = page.pipeline_reading({"h100": cap})
    assert "= 3 x (128 x 64 + 64 x 128) x 2 = 98,304 bytes," in pipeline
    assert "exactly what metadata.shared reports" in pipeline
    cap["payload"]["kernels"]["matmul_kernel"]["shared"] = 100000
    assert "and metadata.shared reports 100,000 bytes" in page.pipeline_reading({"h100": cap})


def test_mlir_dump_shows_the_start_and_the_layouts_around_coalescing():
    cap = mlir_capture()
    text = page.mlir_dump(cap)
    assert '#loc = loc("gpuperf/bench/debugging.py":91:0)' in text
    assert "(3600 lines, 5 dumps" in text
    window = text.split("| grep -E ")[1].splitlines()[2:-1]
    assert window[0].endswith("ConvertTritonToTritonGPU (convert-triton-to-tritongpu) //----- //")
    assert window[-1] == "#blocked1 = #ttg.blocked<{sizePerThread = [4]}>" and len(window) == 6
    shorter = page.first_lines(demo.excerpt(TEXT, r"line (2|3|7)$"), 2)
    assert shorter == {"total": 20, "blocks": [[2, ["line 2", "line 3"]]]}
    cache_text = page.cache(cap)
    assert cache_text.count("dumps") == 3 and "ABC/copy_kernel.ptx  (4,321 bytes)" in cache_text


def test_inductor_renders():
    output = "\n".join(
        [
            "V1127 [__output_code] Output code: ",
            "triton_per_fused_0 = async_compile.triton('triton_per_fused_0', '''",
            "@triton.jit",
            "def triton_per_fused_0(in_ptr0, out_ptr0, xnumel, r0_numel):",
            "''', device_str='cuda')",
            "V1127 [__output_code] Output code written to: /tmp/torchinductor/ab/cab.py",
        ]
    )
    payload = {
        "shape": [4096, 1024],
        "dtype": "float32",
        "output_code": ran("TORCH_LOGS=output_code python -m x inductor", output, keep=""),
        "compile_debug": ran("TORCH_COMPILE_DEBUG=1 python -m x inductor", "compiled", keep=""),
        "debug_files": [["torch_compile_debug/run_1/torchinductor/output_code.py", 2000]],
        "debug_file_count": 3,
    }
    cap = capture(page.INDUCTOR, payload)
    code = page.output_code(cap)
    assert "\ndef triton_per_fused_0(" in code and "\nOutput code written to: /tmp/" in code
    assert "(each line of the log begins 'V1127 [__output_code]', left out below)" in code
    assert "[__output_code] Output" not in code
    files = page.debug_files(cap)
    assert "it wrote 3 files:" in files and files.endswith("  ...")


def test_paragraph_reads_the_captures(tmp_path, monkeypatch):
    root = copy_measurements(tmp_path, monkeypatch)
    for cap in (sanitizer_capture(), assert_capture(), compiled_capture()):
        captures.write(cap, root)
    paragraph = page.in_one_paragraph()
    text = paragraph.text()
    assert (
        "On the H100 80GB HBM3, the copy whose mask lets one lane past the end returned the right answer"
        in text
    )
    assert "with no error, and the first element of the tensor after y became 7.0 (it was -1.0)" in text
    assert "memcheck reported 0 errors with PyTorch's caching allocator on and 2 with it off" in text
    assert (
        "once nothing was allocated after y, it reported 1 error: 1 invalid write of 4 bytes. memcheck "
        "sees an access only where it lands outside every allocation" in text
    )
    assert "Compiled with TRITON_DEBUG=1, a tl.device_assert on those lanes stopped the kernel" in text
    assert "each thread's global loads went from 1 (1 of them ld.global.v4" in text
    assert not any(note.startswith("MISSING") for note in paragraph.notes)


def test_paragraph_notes_what_is_missing(tmp_path, monkeypatch):
    copy_measurements(tmp_path, monkeypatch, drop=[f"captures/{name}.json" for name in page.CAPTURES])
    paragraph = page.in_one_paragraph()
    assert len(paragraph.sentences) == 1
    assert any(
        n.startswith("MISSING") and page.SANITIZER in n and "debugging_capture.py" in n
        for n in paragraph.notes
    )


def test_every_capture_of_the_page_has_its_command():
    for name in page.CAPTURES:
        assert captures.command(name) == "python scripts/debugging_capture.py"
        assert name not in captures.HOST_TIMED  # kernels' output, not host time


# --- on a GPU ---------------------------------------------------------------------------------------


@pytest.mark.gpu
def test_launches_return_compiled_kernels_that_describe_themselves():
    import torch

    handles = demo.launch_all()
    found = {name: demo.describe(handle) for name, handle in handles.items()}
    counts = {name: demo.counted(d["code"]) for name, d in found.items()}
    assert counts["copy_kernel"]["ptx"]["vector loads"] >= 1
    assert counts["copy_off_by_one_kernel"]["ptx"]["vector loads"] == 0
    if torch.cuda.get_device_capability()[0] == 9:  # Hopper: tl.dot is wgmma, HGMMA in SASS
        assert counts["matmul_kernel"]["ptx"]["wgmma"] > 0 and counts["matmul_kernel"]["sass"]["HGMMA"] > 0
    assert all(d["n_regs"] > 0 and d["n_spills"] >= 0 for d in found.values())
    assert found["matmul_kernel"]["shared"] > 0 and found["copy_kernel"]["shared"] == 0
    shown = demo.shown_code("copy_kernel", found["copy_kernel"]["code"])
    assert any("ld.global.v4" in line for line in demo.excerpt_lines(shown["ptx"]))


@pytest.mark.gpu
def test_gpu_demos_print_assert_and_run_past_the_end():
    printed = demo.run("print", TRITON_INTERPRET="0")
    assert printed.returncode == 0 and "y equals x: True" in printed.output
    failed = demo.run("assert", TRITON_INTERPRET="0", TRITON_DEBUG="1")
    assert "synchronization raised" in failed.output, failed.output
    quiet = demo.run("assert", TRITON_INTERPRET="0")
    assert "y equals x: True" in quiet.output
    assert "y equals x" in demo.run("oob", TRITON_INTERPRET="0").output


@pytest.mark.gpu
def test_the_capture_script_writes_well_formed_captures(tmp_path):
    parts = ["--part", "print", "--part", "compiled", "--part", "mlir_dump"]
    done = subprocess.run(
        [sys.executable, "scripts/debugging_capture.py", "--out", str(tmp_path), *parts],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    written = {p.stem: json.loads(p.read_text()) for p in tmp_path.glob("*/captures/*.json")}
    assert sorted(written) == [page.COMPILED, page.MLIR_DUMP, page.PRINT]
    for cap in written.values():
        assert captures.validate(cap) == []
        assert len(json.dumps(cap)) < 100_000
    dumps = [run["dumps"] for run in written[page.MLIR_DUMP]["payload"]["runs"]]
    assert dumps[0] > 0 and dumps[1] == 0 and dumps[2] > 0
