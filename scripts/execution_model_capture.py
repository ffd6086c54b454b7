"""The GPU a kernel runs on, measured in one run: what the guide on the GPU execution model
shows from a GPU (guide 00).

Usage (a CUDA GPU; about a minute on an H100): ``python scripts/execution_model_capture.py
[--out DIR]``. Writes one capture, ``execution_model``, under ``<out>/<gpu>/captures/``
(default ``src/gpuperf/measurements``), in four parts:

* ``device``: the limits the GPU reports: every plain field of
  ``torch.cuda.get_device_properties``; the CUDA driver's attributes
  (``cuDeviceGetAttribute``), among them those PyTorch does not give (programs per SM,
  shared memory the driver reserves per program); and Triton's view of the device;
* ``kernels``: what Triton's compiler reports for the kernels that gpuperf's
  ``vector_add``, ``softmax``, ``row_mean`` and ``matmul`` launch (registers and spills
  per thread, shared memory per program, warps, stages, constexprs, the layouts of the
  Triton GPU IR) and how many programs the launch ran;
* ``copy_sweep``: :func:`copy_kernel` on float32 buffers from 1 MiB to 1 GiB, timed with
  L2 flushed before each run (:func:`gpuperf.bench.timing.time_ms`, the method of the copy
  ceiling in ``hardware.json``) and replayed back to back in a CUDA graph with nothing in
  between (:func:`resident_copy_ms`), where buffers that fit stay in L2;
* ``launch``: :func:`empty_kernel`: host time per launch through ``kernel[grid]`` and
  through the compiled kernel's own launcher, one launch followed by a synchronize, and
  the GPU's time for it (between two CUDA events, and back to back in a CUDA graph, from
  one program to many).

A part that fails is reported and left out (``payload["failed"]`` says why) while the
others still run; the capture is written when at least one part succeeded. The kernels
part runs first, in a fresh process, so that Triton compiles each kernel it reads while
it listens (:func:`compiled_kernels`).
"""

from __future__ import annotations

import contextlib
import ctypes
import statistics
import sys
import time
import traceback
from pathlib import Path

#: When this process started: the run's time, imports included, is logged at the end.
STARTED = time.perf_counter()

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

NAME = "execution_model"
#: The modules whose kernels' compiled form the capture keeps.
SOURCES = ("kernels/vector_add.py", "kernels/softmax.py", "kernels/row_mean.py", "kernels/matmul.py")

#: Source buffer sizes of the copy sweep, bytes: the powers of two from 1 MiB to 1 GiB and
#: 1.5 times each between, so that the source and destination together cross a 50 MB L2
#: in small steps.
COPY_SIZES = tuple(sorted({2**p for p in range(20, 31)} | {3 * 2**p for p in range(19, 29)}))
#: Elements per program of the copy kernel, and its warps: 1024 float32 over 128 threads,
#: two 16-byte vectors per thread, so that even the 1 MiB copy runs 256 programs.
COPY_BLOCK, COPY_WARPS = 1024, 4
#: Milliseconds of replays in one CUDA graph (``do_bench_cudagraph``'s ``rep``; default 20).
GRAPH_REP_MS = 50
#: The gpuperf kernels read: vector_add's length, softmax's and row_mean's rows x columns
#: (float32; the profiling guide's Nsight Compute capture profiled the same shape), and the
#: matmul's square size (bfloat16).
VECTOR_N = 2**24
ROWS, COLS = 4096, 4096
MATMUL_N = 4096
#: Grids of the empty kernel timed in a CUDA graph, in programs per SM (0: one program).
EMPTY_GRIDS = (0, 1, 16, 256)
#: Samples of one launch followed by a synchronize.
SAMPLES = 200
#: Lines of a kernel's Triton GPU IR kept: its layouts (``#blocked = ...``), at most this
#: many, each cut to LAYOUT_CHARS characters.
MAX_LAYOUTS, LAYOUT_CHARS = 8, 400

#: The CUDA driver's device attributes read (``cuDeviceGetAttribute``; the values of
#: ``CUdevice_attribute`` in ``cuda.h``), by their name without ``CU_DEVICE_ATTRIBUTE_``.
DRIVER_ATTRIBUTES = {
    "MAX_THREADS_PER_BLOCK": 1,
    "MAX_SHARED_MEMORY_PER_BLOCK": 8,
    "WARP_SIZE": 10,
    "MAX_REGISTERS_PER_BLOCK": 12,
    "CLOCK_RATE": 13,
    "MULTIPROCESSOR_COUNT": 16,
    "MEMORY_CLOCK_RATE": 36,
    "GLOBAL_MEMORY_BUS_WIDTH": 37,
    "L2_CACHE_SIZE": 38,
    "MAX_THREADS_PER_MULTIPROCESSOR": 39,
    "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR": 81,
    "MAX_REGISTERS_PER_MULTIPROCESSOR": 82,
    "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": 97,
    "MAX_BLOCKS_PER_MULTIPROCESSOR": 106,
    "MAX_PERSISTING_L2_CACHE_SIZE": 108,
    "RESERVED_SHARED_MEMORY_PER_BLOCK": 111,
}

TOOL = (
    "torch.cuda.get_device_properties, cuDeviceGetAttribute, Triton's compiled kernels, "
    "triton.testing.do_bench and do_bench_cudagraph, the host clock"
)
METHOD = (
    "copies replayed in a CUDA graph with no flush (triton.testing.do_bench_cudagraph, "
    f"rep={GRAPH_REP_MS} ms, 10 replays) and with L2 flushed before each run (do_bench, 1 GiB "
    "flush, best of 3 rounds by median), an empty kernel's host time per launch with the GPU "
    "kept busy, one launch and a synchronize on the host clock, and its GPU time; medians "
    "with 20th and 80th percentiles"
)


def log(message: str) -> None:
    print(message, flush=True)


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def spread(values: list[float]) -> dict:
    """Median, 20th and 80th percentiles of ``values`` (ms)."""
    from gpuperf.bench.timing import quantile

    return {"median": statistics.median(values), "p20": quantile(values, 0.2), "p80": quantile(values, 0.8)}


def _json_value(value):
    """``value`` as JSON keeps it: numbers, strings, booleans and None as they are (a
    ``tl.constexpr`` unwrapped), anything else as its text."""
    value = getattr(value, "value", value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


# --- 1. the device ---------------------------------------------------------------------


def torch_properties(index: int) -> dict:
    """Every plain field (a number or a string) of ``torch.cuda.get_device_properties``."""
    props = torch.cuda.get_device_properties(index)
    found = {}
    for name in dir(props):
        if name.startswith("_") or name == "uuid":
            continue
        value = getattr(props, name, None)
        if isinstance(value, (bool, int, float, str)):
            found[name] = value
    return found


def driver_attributes(index: int) -> dict:
    """``{attribute: value}`` of :data:`DRIVER_ATTRIBUTES` from the CUDA driver
    (``cuDeviceGetAttribute``), None where the driver does not answer.

    Raises:
        RuntimeError: the driver library cannot be loaded or the device not found.
    """
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError as err:
        raise RuntimeError(f"cannot load the CUDA driver (libcuda.so.1): {err}") from None
    if cuda.cuInit(0) != 0:
        raise RuntimeError("cuInit failed")
    device = ctypes.c_int()
    if cuda.cuDeviceGet(ctypes.byref(device), index) != 0:
        raise RuntimeError(f"cuDeviceGet found no device {index}")
    found = {}
    for name, attribute in DRIVER_ATTRIBUTES.items():
        value = ctypes.c_int()
        status = cuda.cuDeviceGetAttribute(ctypes.byref(value), attribute, device)
        found[name] = value.value if status == 0 else None
    return found


def part_device() -> dict:
    index = torch.cuda.current_device()
    found = {"torch": torch_properties(index)}
    for key, read in (
        ("driver", lambda: driver_attributes(index)),
        ("triton", lambda: dict(triton.runtime.driver.active.utils.get_device_properties(index))),
    ):
        try:
            found[key] = read()
        except Exception as err:  # the other sources still count
            found[key] = None
            found[f"{key}_error"] = f"{type(err).__name__}: {err}"
            log(f"  {key}: {found[f'{key}_error']}")
    torch_fields = found["torch"]
    log(
        f"  {torch_fields.get('name')}: {torch_fields.get('multi_processor_count')} SMs, "
        f"driver attributes {'read' if found.get('driver') else 'not read'}"
    )
    return found


# --- 2. the kernels' compiled form -------------------------------------------------------


@contextlib.contextmanager
def compiled_kernels():
    """Collect what Triton compiles inside the block: a list, filled as kernels compile, of
    ``{"kernel": name, "compiled": CompiledKernel, "constexprs": {name: value}}``.

    Listens through Triton's ``knobs.runtime.jit_post_compile_hook``, which a
    ``@triton.jit`` function calls after compiling for new arguments (a binary found in
    Triton's cache on disk counts: it is loaded the same way); a kernel compiled before the
    block, in this process, is not seen again.
    """
    from triton import knobs

    found = []

    def hook(*, key, fn, compile, **_):
        jit = fn.jit_function
        kernel = jit.device_caches[compile["device"]][0][key]
        names = jit.arg_names
        constexprs = {}
        for path, value in (compile.get("constants") or {}).items():
            path = path if isinstance(path, tuple) else (path,)
            name = names[path[0]] if isinstance(path[0], int) and path[0] < len(names) else str(path[0])
            constexprs[name + "".join(f"[{i}]" for i in path[1:])] = _json_value(value)
        found.append({"kernel": fn.name, "compiled": kernel, "constexprs": constexprs})

    previous = knobs.runtime.jit_post_compile_hook
    knobs.runtime.jit_post_compile_hook = hook
    try:
        yield found
    finally:
        knobs.runtime.jit_post_compile_hook = previous


def layouts(compiled) -> list[str]:
    """The layout definitions at the top of a compiled kernel's Triton GPU IR
    (``#blocked = #ttg.blocked<{sizePerThread = [4], ...}>``): how the compiler spread
    each block of data over the program's threads and warps."""
    try:
        ir = compiled.asm["ttgir"]
    except KeyError:
        return []
    found = [line.strip() for line in ir.splitlines() if line.startswith("#") and not line.startswith("#loc")]
    return [line[:LAYOUT_CHARS] for line in found[:MAX_LAYOUTS]]


def describe(entry: dict) -> dict:
    """What the capture keeps of one compiled kernel (``entry`` from :func:`compiled_kernels`,
    launched at least once): its registers and spills per thread, shared memory per program
    (bytes), warps, stages, constexprs and layouts."""
    compiled = entry["compiled"]
    metadata = compiled.metadata
    return {
        "kernel": entry["kernel"],
        "num_warps": metadata.num_warps,
        "num_stages": getattr(metadata, "num_stages", None),
        "registers": getattr(compiled, "n_regs", None),
        "spills": getattr(compiled, "n_spills", None),
        "shared_bytes": getattr(metadata, "shared", None),
        "constexprs": entry["constexprs"],
        "layouts": layouts(compiled),
    }


def kernel_calls() -> list[tuple]:
    """``(name, call, dtype, run, programs)`` of each gpuperf kernel read: ``run()`` calls its
    public function once on inputs of ``dtype``; ``programs(constexprs)`` is the size of the
    grid it launched."""
    from gpuperf.kernels import matmul, row_mean, softmax, vector_add

    x, y = torch.randn(VECTOR_N, device="cuda"), torch.randn(VECTOR_N, device="cuda")
    rows = torch.randn(ROWS, COLS, device="cuda")
    a = torch.randn(MATMUL_N, MATMUL_N, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(MATMUL_N, MATMUL_N, device="cuda", dtype=torch.bfloat16)
    return [
        (
            "vector_add",
            f"vector_add(x, y), x and y of {VECTOR_N:,} float32",
            "float32",
            lambda: vector_add(x, y),
            lambda c: cdiv(VECTOR_N, c["BLOCK_SIZE"]),
        ),
        (
            "softmax",
            f"softmax(x), x of {ROWS:,} x {COLS:,} float32",
            "float32",
            lambda: softmax(rows),
            lambda c: cdiv(ROWS, c["BLOCK_M"]),
        ),
        (
            "row_mean",
            f"row_mean(x), x of {ROWS:,} x {COLS:,} float32",
            "float32",
            lambda: row_mean(rows),
            lambda c: cdiv(ROWS, c["BLOCK_M"]),
        ),
        (
            "matmul",
            f"matmul(a, b), a and b of {MATMUL_N:,} x {MATMUL_N:,} bfloat16",
            "bfloat16",
            lambda: matmul(a, b),
            lambda c: cdiv(MATMUL_N, c["BLOCK_M"]) * cdiv(MATMUL_N, c["BLOCK_N"]),
        ),
    ]


def part_kernels() -> list[dict]:
    read = []
    for name, call, dtype, run, programs in kernel_calls():
        try:
            with compiled_kernels() as found:
                run()
                torch.cuda.synchronize()
            if len(found) != 1:
                raise RuntimeError(f"expected one kernel to compile, saw {[f['kernel'] for f in found]}")
            entry = {"name": name, "call": f"gpuperf.kernels.{call}", "dtype": dtype, **describe(found[0])}
            try:
                entry["programs"] = programs(entry["constexprs"])
            except KeyError as missing:
                entry["programs"] = None
                log(f"  {name}: no constexpr {missing} to size its grid")
            log(
                f"  {name}: {entry['kernel']}, {entry['num_warps']} warps, {entry['registers']} registers, "
                f"{entry['shared_bytes']} B shared, {entry['programs']} programs"
            )
        except Exception as err:  # the other kernels still count
            traceback.print_exc()
            entry = {"name": name, "call": f"gpuperf.kernels.{call}", "error": f"{type(err).__name__}: {err}"}
        read.append(entry)
    if all("error" in entry for entry in read):
        raise RuntimeError("no kernel could be read")
    return read


# --- 3. copies in and out of L2 ----------------------------------------------------------


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    """dst = src over n_elements, one BLOCK_SIZE block per program: a read and a write of
    every byte, the simplest stream there is."""
    pid = tl.program_id(axis=0)
    offsets = pid.to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(dst_ptr + offsets, tl.load(src_ptr + offsets, mask=mask), mask=mask)


def copy(src: torch.Tensor, dst: torch.Tensor) -> None:
    """``dst[:] = src`` by :func:`copy_kernel` (contiguous float32 tensors of one size)."""
    n = src.numel()
    copy_kernel[(cdiv(n, COPY_BLOCK),)](src, dst, n, BLOCK_SIZE=COPY_BLOCK, num_warps=COPY_WARPS)


def resident_copy_ms(src: torch.Tensor, dst: torch.Tensor) -> dict:
    """The copy replayed back to back in a CUDA graph, nothing between two copies: no L2
    flush, so buffers that fit in L2 are still there from the copy before, and no host,
    so small copies are not timed at the rate Python launches them. Milliseconds per copy
    over 10 replays, :func:`spread`'s keys."""
    from triton.testing import do_bench_cudagraph

    median, p20, p80 = do_bench_cudagraph(lambda: copy(src, dst), rep=GRAPH_REP_MS, quantiles=[0.5, 0.2, 0.8])
    return {"median": median, "p20": p20, "p80": p80}


def flushed_copy_ms(src: torch.Tensor, dst: torch.Tensor) -> dict:
    """The copy timed as every benchmark on the site is (:func:`gpuperf.bench.timing.time_ms`:
    1 GiB cleared before each run, so the source comes from HBM), :func:`spread`'s keys."""
    from gpuperf.bench.timing import time_ms

    t = time_ms(lambda: copy(src, dst))
    return {"median": t.ms, "p20": t.ms_p20, "p80": t.ms_p80}


def part_copy_sweep() -> dict:
    sizes = []
    for n_bytes in COPY_SIZES:
        src = torch.randn(n_bytes // 4, device="cuda")
        dst = torch.empty_like(src)
        copy(src, dst)
        torch.cuda.synchronize()
        if not torch.equal(src, dst):
            raise RuntimeError(f"the copy of {n_bytes} bytes is wrong")
        entry = {
            "bytes": n_bytes,
            "resident": resident_copy_ms(src, dst),
            "flushed": flushed_copy_ms(src, dst),
        }
        sizes.append(entry)
        rates = {k: 2 * n_bytes / (entry[k]["median"] * 1e-3) / 1e9 for k in ("resident", "flushed")}
        log(
            f"  {n_bytes / 2**20:7.1f} MiB: graph {rates['resident']:6.0f} GB/s, "
            f"flushed {rates['flushed']:6.0f} GB/s"
        )
        del src, dst
        torch.cuda.empty_cache()
    return {
        "kernel": "copy_kernel",
        "dtype": "float32",
        "block_size": COPY_BLOCK,
        "num_warps": COPY_WARPS,
        "graph_rep_ms": GRAPH_REP_MS,
        "sizes": sizes,
    }


# --- 4. what a launch costs ----------------------------------------------------------------


@triton.jit
def empty_kernel():
    """Does nothing: a launch of it costs what every launch costs, and no more."""
    pass


def round_trip_ms(fn, samples: int = SAMPLES) -> dict:
    """Host clock around ``fn()`` followed by ``torch.cuda.synchronize()``, the GPU idle
    before each: what one call costs a program that waits for its result. Milliseconds,
    :func:`spread` over ``samples`` calls."""
    times = []
    for _ in range(samples):
        torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1e3)
    return spread(times)


def graph_ms(fn) -> dict:
    """GPU time per call of ``fn`` replayed back to back in a CUDA graph (ms, :func:`spread`'s keys)."""
    from triton.testing import do_bench_cudagraph

    median, p20, p80 = do_bench_cudagraph(fn, rep=GRAPH_REP_MS, quantiles=[0.5, 0.2, 0.8])
    return {"median": median, "p20": p20, "p80": p80}


def part_launch() -> dict:
    from gpuperf.bench.timing import host_time_ms, time_ms

    sms = torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
    compiled = empty_kernel[(1,)]()  # compiles, launches, and returns the compiled kernel
    torch.cuda.synchronize()
    as_ms = lambda t: {"median": t.ms, "p20": t.ms_p20, "p80": t.ms_p80}
    found = {
        "num_warps": compiled.metadata.num_warps,
        "host_jit": as_ms(host_time_ms(lambda: empty_kernel[(1,)]())),
        "host_compiled": as_ms(host_time_ms(lambda: compiled[(1, 1, 1)]())),
        "round_trip": round_trip_ms(lambda: compiled[(1, 1, 1)]()),
        "gpu_events": as_ms(time_ms(lambda: compiled[(1, 1, 1)]())),
        "samples": SAMPLES,
        "grids": [],
    }
    for per_sm in EMPTY_GRIDS:
        programs = max(1, per_sm * sms)
        timing = graph_ms(lambda programs=programs: compiled[(programs, 1, 1)]())
        found["grids"].append({"programs": programs, "gpu_graph": timing})
    for key in ("host_jit", "host_compiled", "round_trip", "gpu_events"):
        log(f"  {key}: {found[key]['median'] * 1e3:.2f} us")
    for grid in found["grids"]:
        log(f"  {grid['programs']} programs in a graph: {grid['gpu_graph']['median'] * 1e3:.2f} us")
    return found


# --- running it ----------------------------------------------------------------------------

#: The parts in the order they run: the kernels first, before anything else compiles.
PARTS = {"device": part_device, "kernels": part_kernels, "copy_sweep": part_copy_sweep, "launch": part_launch}


def measure() -> dict:
    """Run every part of :data:`PARTS`; the payload holds each that succeeded and, under
    ``failed``, why each other failed.

    Raises:
        RuntimeError: every part failed.
    """
    payload, failed = {}, {}
    for name, part in PARTS.items():
        log(f"--- {name}")
        start = time.perf_counter()
        try:
            payload[name] = part()
            log(f"{name}: {time.perf_counter() - start:.1f} s")
        except Exception as err:
            traceback.print_exc()
            failed[name] = f"{type(err).__name__}: {err}"[:1000]
            log(f"{name} failed after {time.perf_counter() - start:.1f} s; the other parts go on")
    if not payload:
        raise RuntimeError(f"every part failed: {failed}")
    payload["failed"] = failed
    return payload


def main(argv: list[str] | None = None) -> int:
    from gpuperf.bench import captures

    parser = captures.script_parser(__doc__.splitlines()[0])
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        log("no CUDA GPU: nothing to capture")
        return 1

    payload = measure()
    capture = captures.build(NAME, tool=TOOL, payload=payload, sources=SOURCES, method=METHOD)
    path = captures.write(capture, args.out)
    failed = payload["failed"]
    log(
        f"{NAME} -> {path}; all parts, imports included: {time.perf_counter() - STARTED:.1f} s"
        + (f"; failed: {', '.join(failed)}" if failed else "")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
