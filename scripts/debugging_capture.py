"""What the guide on debugging Triton kernels shows from a GPU, captured in one run.

Usage (a CUDA GPU, with ``compute-sanitizer`` on the PATH or in ``/usr/local/cuda/bin``;
about two minutes on an H100; a demo still running after
150 s is stopped): ``python scripts/debugging_capture.py [--out DIR]
[--part NAME ...]``. Writes, under ``<out>/<gpu>/captures/`` (default
``src/gpuperf/measurements``):

* ``debugging_print.json``: the off-by-one copy printing its last block on the GPU
  (Python's ``print`` in a kernel compiles to ``tl.device_print``);
* ``debugging_assert.json``: the copy with ``tl.device_assert``, with ``TRITON_DEBUG=1``
  and without: the assertion's message, the error at the next synchronization, and the
  CUDA context lost;
* ``debugging_sanitizer.json``: the off-by-one copy between tensors of their own, plain,
  then under ``compute-sanitizer --tool memcheck`` with PyTorch's caching allocator and
  without it (``PYTORCH_NO_CUDA_MEMORY_CACHING=1``);
* ``debugging_compiled.json``: the compiled code of the correct copy, the off-by-one copy
  and a float16 matmul (TTIR, TTGIR, LLVM IR, PTX, SASS) as excerpts, with instruction
  counts and what each program needs (warps, stages, shared memory, registers, spills);
* ``debugging_mlir_dump.json``: ``MLIR_ENABLE_DUMP`` on the copy, filtered; the same
  again from the cache (which prints nothing), and with ``TRITON_ALWAYS_COMPILE=1``;
  the files of the cache folder;
* ``debugging_inductor.json``: ``TORCH_LOGS=output_code`` and ``TORCH_COMPILE_DEBUG=1`` on
  a small ``torch.compile``'d RMSNorm.

Each demo runs as ``python -m gpuperf.bench.debugging DEMO`` in a process of its own, with
the variables it needs (:func:`gpuperf.bench.debugging.run`): a failed assertion or an
illegal address ends that process's CUDA context, not this one's. Nothing here is timed,
so the parts run side by side. Long outputs are cut to whole lines kept verbatim
(:func:`gpuperf.bench.debugging.excerpt`), with their line numbers. Inductor and Triton
compile into fresh caches (set before anything is compiled), so that what a first run
prints is what is captured. A part that fails is reported and skipped; the others still
run and are written.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

# Fresh caches for everything this run and its demos compile: a first run's output.
_SCRATCH = Path(tempfile.mkdtemp(prefix="gpuperf-debugging-"))
atexit.register(shutil.rmtree, _SCRATCH, True)
os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(_SCRATCH / "inductor")
os.environ["TRITON_CACHE_DIR"] = str(_SCRATCH / "triton")
# The demos compile their kernels: none runs in the interpreter here.
os.environ.pop("TRITON_INTERPRET", None)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import torch  # noqa: E402

from gpuperf.bench import captures  # noqa: E402
from gpuperf.bench import debugging as demo  # noqa: E402

#: The module the captures describe: the demo kernels and their sizes.
SOURCES = ("bench/debugging.py",)
#: Seconds a demo may run (a compute-sanitizer run is the slowest); one stopped there is
#: kept with what it printed so far, which says so.
TIMEOUT_S = 150


def log(message: str) -> None:
    print(message, flush=True)


def kept_run(ran: demo.Ran, **keep) -> dict:
    """A run as a capture keeps it: its command, exit status and an excerpt of its output
    (``keep``: :func:`gpuperf.bench.debugging.excerpt`'s arguments)."""
    return {"command": ran.command, "returncode": ran.returncode, "output": demo.excerpt(ran.output, **keep)}


def build(name: str, tool: str, payload: dict, method: str) -> dict:
    return captures.build(
        name,
        tool=tool,
        # The package's folder here: a page shows the paths in the output from it.
        payload={**payload, "package_root": demo.PACKAGE_ROOT},
        sources=SOURCES,
        method=method,
    )


# --- the parts --------------------------------------------------------------------------


def part_print() -> dict:
    ran = demo.run("print", timeout=TIMEOUT_S)
    log(f"  print: exit {ran.returncode}, {len(ran.output.splitlines())} lines")
    return build(
        "debugging_print",
        "python -m gpuperf.bench.debugging print (print in a @triton.jit kernel)",
        {"n": demo.PRINT_N, "block": demo.PRINT_BLOCK, "run": kept_run(ran, first=120, last=4)},
        "the output of one run, stdout and stderr together",
    )


def part_assert() -> dict:
    runs = [demo.run("assert", timeout=TIMEOUT_S, TRITON_DEBUG="1"), demo.run("assert", timeout=TIMEOUT_S)]
    for ran in runs:
        log(f"  {ran.command}: exit {ran.returncode}")
    return build(
        "debugging_assert",
        "python -m gpuperf.bench.debugging assert (tl.device_assert), with and without TRITON_DEBUG=1",
        {"n": demo.N, "block": demo.BLOCK, "runs": [kept_run(ran, first=60, last=10) for ran in runs]},
        "the output of each run, stdout and stderr together",
    )


def _sanitizer() -> str:
    found = shutil.which("compute-sanitizer") or "/usr/local/cuda/bin/compute-sanitizer"
    if not os.path.isfile(found):
        raise FileNotFoundError("no compute-sanitizer on the PATH nor in /usr/local/cuda/bin")
    return found


def _backtrace_frame(line: str) -> bool:
    """Whether ``line`` is a frame of a host backtrace in compute-sanitizer's report (left
    out of the capture: which host functions launched the kernel)."""
    stripped = line.lstrip("= ")
    return stripped.startswith("Host Frame") or (stripped[:1] == "#" and stripped[1:2].isdigit())


def part_sanitizer() -> dict:
    memcheck = [_sanitizer(), "--tool", "memcheck"]
    # The copy between tensors each followed by another, plain and under memcheck with and
    # without the caching allocator; then with nothing allocated after y, memcheck without it.
    jobs = [
        ("oob", {}),
        ("oob", {"prefix": memcheck}),
        ("oob", {"prefix": memcheck, "PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}),
        ("oob_last", {"prefix": memcheck, "PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}),
    ]
    with ThreadPoolExecutor(len(jobs)) as pool:
        runs = list(pool.map(lambda job: demo.run(job[0], timeout=TIMEOUT_S, **job[1]), jobs))
    for ran in runs:
        errors = sum("Invalid __global__" in line for line in ran.output.splitlines())
        log(f"  {ran.command}: exit {ran.returncode}, {errors} invalid accesses reported")
    keep = {"keep": lambda line: not _backtrace_frame(line), "limit": 80, "last": 3}
    return build(
        "debugging_sanitizer",
        "compute-sanitizer --tool memcheck python -m gpuperf.bench.debugging oob",
        {"n": demo.N, "block": demo.BLOCK, "runs": [kept_run(ran, **keep) for ran in runs]},
        "the output of each run, stdout and stderr together, host backtraces left out",
    )


def part_compiled() -> dict:
    handles = demo.launch_all()
    kernels = {}
    for name, handle in handles.items():
        described = demo.describe(handle)
        code = described.pop("code")
        kernels[name] = {
            **described,
            "lines": {stage: len(text.splitlines()) for stage, text in code.items()},
            "counts": demo.counted(code),
            "code": demo.shown_code(name, code),
        }
        log(f"  {name}: {described}, {kernels[name]['counts']}")
    return build(
        "debugging_compiled",
        "the compiled kernel a launch returns: .asm, .metadata, .n_regs, .n_spills",
        {
            "n": demo.N,
            "block": demo.BLOCK,
            "size": demo.SIZE,
            "tile": list(demo.MATMUL_TILE),
            "dtype": "float16",
            "kernels": kernels,
        },
        "each kernel compiled by its first launch; excerpts of each stage's code, whole lines",
    )


#: The lines of an MLIR dump kept: each pass's header and the layout definitions under it.
DUMP_FILTER = r"IR Dump (Before|After)|^#blocked[0-9]* ="


def part_mlir_dump() -> dict:
    cache = _SCRATCH / "mlir-dump-cache"
    env = {"MLIR_ENABLE_DUMP": "copy_kernel", "TRITON_CACHE_DIR": str(cache)}
    runs = [
        demo.run("compile", timeout=TIMEOUT_S, **env),  # compiles: the dump
        demo.run("compile", timeout=TIMEOUT_S, **env),  # from the cache: no dump
        demo.run("compile", timeout=TIMEOUT_S, **env, TRITON_ALWAYS_COMPILE="1"),
    ]
    dumps = [sum("IR Dump Before" in line for line in ran.output.splitlines()) for ran in runs]
    log(f"  dumps per run: {dumps}")
    files = sorted(p for p in cache.rglob("*") if p.is_file())
    first = runs[0]
    return build(
        "debugging_mlir_dump",
        "MLIR_ENABLE_DUMP=copy_kernel python -m gpuperf.bench.debugging compile",
        {
            "filter": DUMP_FILTER,
            "runs": [
                {
                    "command": ran.command,
                    "returncode": ran.returncode,
                    "dumps": count,
                    "lines": len(ran.output.splitlines()),
                }
                for ran, count in zip(runs, dumps, strict=True)
            ],
            "first_dump": demo.excerpt(first.output, r"IR Dump Before", after=30, limit=1),
            "filtered": demo.excerpt(first.output, DUMP_FILTER),
            "cache_files": [[p.relative_to(cache).as_posix(), p.stat().st_size] for p in files],
        },
        "the output of each run; one dump cut to its first lines, the rest filtered to headers and layouts",
    )


def _fresh_caches(name: str) -> dict[str, str]:
    """Inductor's and Triton's caches in new folders: a run that compiles everything, as a
    first run does (one that found the other run's kernels in a cache would skip work
    whose output the capture shows)."""
    return {
        "TORCHINDUCTOR_CACHE_DIR": str(_SCRATCH / name / "inductor"),
        "TRITON_CACHE_DIR": str(_SCRATCH / name / "triton"),
    }


def part_inductor() -> dict:
    folder = _SCRATCH / "compile-debug"
    folder.mkdir()
    with ThreadPoolExecutor(2) as pool:  # each in fresh caches of its own: side by side
        logging = pool.submit(
            demo.run,
            "inductor",
            timeout=TIMEOUT_S,
            setup=_fresh_caches("output-code"),
            TORCH_LOGS="output_code",
        )
        debugging = pool.submit(
            demo.run,
            "inductor",
            timeout=TIMEOUT_S,
            cwd=folder,
            setup=_fresh_caches("compile-debug"),
            TORCH_COMPILE_DEBUG="1",
        )
        logged, debug = logging.result(), debugging.result()
    kernel = demo.between(r"= async_compile\.triton\(", r"^''', device_str=")
    call = demo.between(r"^def call\(", r"^\s+return ")
    keep = demo.either(kernel, call, r"Output code (written to|:)", r"largest difference")
    files = sorted(p for p in (folder / "torch_compile_debug").rglob("*") if p.is_file())
    log(
        f"  output_code: exit {logged.returncode}; "
        f"TORCH_COMPILE_DEBUG: exit {debug.returncode}, {len(files)} files"
    )
    return build(
        "debugging_inductor",
        "TORCH_LOGS=output_code, TORCH_COMPILE_DEBUG=1 python -m gpuperf.bench.debugging inductor",
        {
            "shape": [4096, 1024],
            "dtype": "float32",
            "output_code": kept_run(logged, keep=keep, limit=200),
            "compile_debug": kept_run(debug, first=20, last=5),
            "debug_files": [[p.relative_to(folder).as_posix(), p.stat().st_size] for p in files[:80]],
            "debug_file_count": len(files),
        },
        "the output of each run, the generated kernel and its launch kept; the files the debug run wrote",
    )


PARTS = {
    "print": part_print,
    "assert": part_assert,
    "sanitizer": part_sanitizer,
    "compiled": part_compiled,
    "mlir_dump": part_mlir_dump,
    "inductor": part_inductor,
}


def main(argv: list[str] | None = None) -> int:
    parser = captures.script_parser(__doc__.splitlines()[0], PARTS)
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        log("no CUDA GPU: nothing to capture")
        return 1
    names = args.part or list(PARTS)
    failed = []
    with ThreadPoolExecutor(len(names)) as pool:
        futures = {name: pool.submit(PARTS[name]) for name in names}
        for name, future in futures.items():
            try:
                capture = future.result()
            except Exception:
                traceback.print_exc()
                log(f"{name} failed; the other parts go on")
                failed.append(name)
                continue
            log(f"{capture['name']} -> {captures.write(capture, args.out)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
