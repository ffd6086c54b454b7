"""Print each message ``docs/troubleshooting.rst`` quotes that only a CUDA GPU produces, as
your GPU, PyTorch and Triton word it. The page quotes them as PyTorch 2.11.0 and Triton 3.6.0
printed them on an H100; other releases and GPUs may word them differently.

To run it you need a Linux machine with an NVIDIA GPU, a clone of the repository and
gpuperf installed with the CUDA build of torch (the README's ``pip install -c
gpuperf/constraints.txt ./gpuperf``). From the root of the clone::

    python scripts/troubleshooting_messages.py > messages.txt    # all, about a minute on an H100
    python scripts/troubleshooting_messages.py --list            # the message ids
    python scripts/troubleshooting_messages.py ID [ID ...]       # some of them
    python scripts/troubleshooting_messages.py --jobs 2          # fewer at once (default 6)

Without installing gpuperf, prefix each with ``PYTHONPATH=src``. Where no CUDA GPU is usable
it says so and exits with status 1.

Each message is triggered in a Python process of its own (a failed CUDA-graph capture or a
compile error must not leak into the next one), several at a time, and printed as one
block::

    ===== <page section id>/<message> =====
    torch ... | triton ... | <GPU> | TORCH_LOGS=...
    <what the message is, and what the process printed: the exception's type and text,
     the log lines that match the message>
    ===== end =====

``<page section id>`` is the HTML id of the page's section that quotes the message
(``troubleshooting.html#<id>``), so each block can be read beside its quote. A ``ptxas``
failure (the ``threads`` block) also prints the PTX Triton could not assemble, several
hundred lines. Messages the page quotes that a GPU does not change (the interpreter's,
``ncu``'s permission error, and errors meant for GPUs older than Hopper) are not here.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import torch
import triton
import triton.language as tl

#: The page's sections, by the HTML id Sphinx gives each title.
OUT_OF_RESOURCE = "triton-out-of-resource-shared-memory"
COMPILE_ERROR = "triton-a-compile-error"
CUDA_GRAPHS = "cuda-graphs-capture-failures-and-static-inputs"
TORCH_COMPILE = "torch-compile-recompiles-and-graph-breaks"
TMA = "tma-cannot-be-loaded-through-tma"

#: Seconds one message may take (a torch.compile case compiles a few graphs).
TIMEOUT_S = 240


@dataclass(frozen=True)
class Message:
    """One quoted message: where the page quotes it, how to trigger it, and which lines of
    the process's output are the message (``patterns``: substrings; every line of stdout
    and stderr that holds one is printed; none matched prints the output's last lines)."""

    section: str
    name: str
    what: str
    trigger: Callable[[], None]
    patterns: tuple[str, ...] = ()
    env: dict = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.section}/{self.name}"


# --- Triton kernels the messages come from (compiled only when a message runs) --------------


@triton.jit
def _dot_kernel(a_ptr, b_ptr, c_ptr, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """One tile of C = A @ B, A (BLOCK_M, K), B (K, BLOCK_N), row-major: a pipelined loop."""
    offs_m, offs_n, offs_k = tl.arange(0, BLOCK_M), tl.arange(0, BLOCK_N), tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + offs_m[:, None] * K + (k + offs_k)[None, :])
        b = tl.load(b_ptr + (k + offs_k)[:, None] * BLOCK_N + offs_n[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + offs_m[:, None] * BLOCK_N + offs_n[None, :], acc)


def _launch_dot(block_m: int, block_n: int, block_k: int, num_stages: int, num_warps: int):
    k = 4 * block_k
    a = torch.randn(block_m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(k, block_n, device="cuda", dtype=torch.float16)
    c = torch.empty(block_m, block_n, device="cuda", dtype=torch.float32)
    return _dot_kernel[(1,)](
        a, b, c, k, block_m, block_n, block_k, num_stages=num_stages, num_warps=num_warps
    )


@triton.jit
def _copy_runtime_size(x_ptr, y_ptr, n):
    offs = tl.arange(0, n)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs))


@triton.jit
def _copy_odd_block(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs))


SCALE = 2.0


@triton.jit
def _scale_by_global(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs) * SCALE)


@triton.jit
def _static_assert_kernel(x_ptr, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK % 128 == 0, "BLOCK must be a multiple of 128")
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs))


@triton.jit
def _narrow_box_kernel(desc, out_ptr):
    tile = desc.load([0, 0])
    offs = tl.arange(0, 16)[:, None] * 4 + tl.arange(0, 4)[None, :]
    tl.store(out_ptr + offs, tile)


@triton.jit
def _device_descriptor_kernel(x_ptr, y_ptr, M, N, BLOCK: tl.constexpr):
    desc = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK, BLOCK])
    tile = desc.load([0, 0])
    offs = tl.arange(0, BLOCK)[:, None] * N + tl.arange(0, BLOCK)[None, :]
    tl.store(y_ptr + offs, tile)


# --- the triggers -----------------------------------------------------------------------------


def shared_memory():
    """A 256 x 256 x 128 float16 tile, four stages deep: more shared memory than an SM has."""
    _launch_dot(256, 256, 128, num_stages=4, num_warps=8)


def metadata_shared():
    """A config that fits: the launch returns the compiled kernel, whose metadata says how
    much shared memory one program takes."""
    compiled = _launch_dot(128, 128, 64, num_stages=3, num_warps=4)
    print(f"returned {type(compiled).__module__}.{type(compiled).__qualname__}")
    print(f"metadata.shared = {compiled.metadata.shared}")


def threads():
    """More threads than a program may have: 64 warps (2048 threads), then 32 warps with
    many registers a thread. Each attempt prints what it got."""
    for label, (bm, bn, bk, stages, warps) in {
        "num_warps=64": (128, 128, 64, 3, 64),
        "num_warps=32, 256 x 256 tile": (256, 256, 64, 2, 32),
    }.items():
        try:
            compiled = _launch_dot(bm, bn, bk, num_stages=stages, num_warps=warps)
            print(f"{label}: launched ({compiled.n_regs} registers a thread)")
        except Exception as err:
            print(f"{label}: {_name(err)}: {err}")


def autotune_failure():
    """``@triton.autotune`` over a config that does not fit and one that does, with
    ``TRITON_PRINT_AUTOTUNING=1``: the one that does not fit is reported, then skipped."""
    tuned = triton.autotune(
        configs=[
            triton.Config({"BLOCK_K": 256}, num_stages=5, num_warps=8),
            triton.Config({"BLOCK_K": 64}, num_stages=3, num_warps=8),
        ],
        key=["K"],
    )(_dot_kernel)
    k = 1024
    a = torch.randn(128, k, device="cuda", dtype=torch.float16)
    b = torch.randn(k, 128, device="cuda", dtype=torch.float16)
    c = torch.empty(128, 128, device="cuda", dtype=torch.float32)
    tuned[(1,)](a, b, c, k, BLOCK_M=128, BLOCK_N=128)
    print(f"chosen: {tuned.best_config}")


def _tensors(n: int = 128):
    return torch.randn(n, device="cuda"), torch.empty(n, device="cuda")


def runtime_size():
    _copy_runtime_size[(1,)](*_tensors(), 128)


def not_power_of_two():
    _copy_odd_block[(1,)](*_tensors(), BLOCK=100)


def global_variable():
    _scale_by_global[(1,)](*_tensors(), BLOCK=128)


def static_assert():
    _static_assert_kernel[(1,)](torch.randn(64, device="cuda"), BLOCK=64)


def capture_sync():
    """A synchronization (``.item()``) inside ``torch.cuda.graph``; the exception's type and
    its base classes are printed with it."""
    x = torch.ones(16, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            (x * 2).sum().item()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = x * 2
        try:
            y.sum().item()
        except Exception as err:
            bases = " > ".join(_name_of(c) for c in type(err).__mro__[:-2])
            print(f"inside the capture, {_name(err)} (its classes: {bases}):\n{err}")
            print("leaving the capture:", flush=True)
            raise


def _counted_skips() -> None:
    from torch._dynamo.utils import counters

    print(f'counters["inductor"]["cudagraph_skips"] = {counters["inductor"]["cudagraph_skips"]}')


def mutated_input():
    """A ``reduce-overhead`` function that writes into its input: cudagraphs skipped. Run
    with and without ``TORCH_LOGS`` (two messages), to see when the warning prints."""

    @torch.compile(mode="reduce-overhead")
    def bump(x):
        x.add_(1)
        return x * 2

    x = torch.randn(64, device="cuda")
    for _ in range(3):
        bump(x)
    torch.cuda.synchronize()
    _counted_skips()


def cpu_tensor():
    """A ``reduce-overhead`` function with a CPU tensor beside a CUDA one: skipped (``cpu
    device``) where Inductor's graph partition is off, recorded around the CPU work where it
    is on; the skip counter says which."""

    @torch.compile(mode="reduce-overhead")
    def both(x, y):
        return x * 2, y * 2

    x, y = torch.randn(64, device="cuda"), torch.randn(64)
    for _ in range(3):
        both(x, y)
    torch.cuda.synchronize()
    _counted_skips()


def skip_logger():
    """Which logger carries the skip warning in this release, and whether that log is off
    unless ``TORCH_LOGS`` names it: the source of the function that logs the skip, and
    the artifacts' defaults."""
    import inspect

    from torch._inductor import cudagraph_utils
    from torch._logging._internal import log_registry

    source = inspect.getsource(cudagraph_utils.log_cudagraph_skip_and_bump_counter)
    print(textwrap.indent(source.rstrip(), "  "))
    for artifact in ("cudagraphs", "perf_hints"):
        known = artifact in log_registry.artifact_names
        off = log_registry.is_off_by_default(artifact) if known else None
        print(f"artifact {artifact!r}: registered {known}, off by default {off}")


def overwritten_output():
    """Reading the outputs of a ``reduce-overhead`` function's earlier calls (its warm-up,
    its recording and its first replay) after a fourth call: each read prints whether it
    raised, and what."""

    @torch.compile(mode="reduce-overhead")
    def double(x):
        return x * 2

    x = torch.randn(64, device="cuda")
    outputs = [double(x) for _ in range(4)]
    for call, out in zip(("warm-up", "recording", "first replay"), outputs, strict=False):
        try:
            (out + 1).sum().item()
            print(f"the {call}'s output, read after the fourth call: no error")
        except Exception as err:
            print(f"the {call}'s output, read after the fourth call: {_name(err)}: {err}")


def many_shapes():
    """One ``reduce-overhead`` function called with more distinct sizes than the CUDA-graph
    trees warn at."""

    @torch.compile(mode="reduce-overhead", dynamic=True)
    def double(x):
        return x * 2

    for n in range(2, 14):
        double(torch.randn(n, device="cuda"))
    torch.cuda.synchronize()


#: The file the torch.compile messages name, written to a temporary folder and imported: the
#: page's quotes show its name and line numbers (the branch at line 5, ``g`` from line 10).
EXAMPLE = """import torch


def f(x):
    if x.sum() > 0:
        return x + 1
    return x - 1


@torch.compile
def g(x, scale):
    return x * scale
"""


def _example():
    import importlib
    import tempfile

    folder = tempfile.mkdtemp()
    Path(folder, "example.py").write_text(EXAMPLE)
    sys.path.insert(0, folder)
    return importlib.import_module("example")


def graph_break():
    example = _example()
    torch.compile(example.f)(torch.randn(8, device="cuda"))


def recompile():
    example = _example()
    x = torch.randn(8, device="cuda")
    example.g(x, 2.0)
    example.g(x, 3.0)
    example.g(x.double(), 3.0)


def recompile_limit():
    """One function compiled for more shapes than the recompile limit, shapes kept static."""
    import torch._dynamo

    torch._dynamo.config.automatic_dynamic_shapes = False

    @torch.compile
    def double(x):
        return x * 2

    for n in range(1, 12):
        double(torch.randn(n, device="cuda"))


def gpuperf_tma():
    """gpuperf's check: the first 96 columns of a 100-column bfloat16 matrix."""
    from gpuperf.kernels import matmul_persistent

    a = torch.randn(64, 100, device="cuda", dtype=torch.bfloat16)[:, :96]
    matmul_persistent(a, torch.randn(96, 64, device="cuda", dtype=torch.bfloat16))


def host_descriptor():
    """Triton's host-side descriptor checks: a misaligned base, a row stride that is not a
    multiple of 16 bytes, a last dimension that is not contiguous."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    x = torch.randn(64, 72, device="cuda", dtype=torch.float16)
    cases = {
        "base 2 bytes in": x.view(-1)[1:4097].view(64, 64),
        "rows of 34 bytes": torch.randn(64, 17, device="cuda", dtype=torch.float16),
        "transposed": x.t(),
    }
    for label, t in cases.items():
        try:
            TensorDescriptor.from_tensor(t, [16, 16])
            print(f"{label}: accepted")
        except AssertionError as err:
            print(f"{label}: AssertionError: {err}")


def narrow_box():
    """A descriptor whose box is 8 bytes wide (4 float16): the kernel compiles, and the launch
    fails when the CUDA driver is asked for the tensor map."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    x = torch.randn(64, 64, device="cuda", dtype=torch.float16)
    out = torch.empty(16, 4, device="cuda", dtype=torch.float16)
    _narrow_box_kernel[(1,)](TensorDescriptor.from_tensor(x, [16, 4]), out)


def no_allocator():
    """A descriptor made inside the kernel, with no allocator set for its scratch memory."""
    x = torch.randn(64, 64, device="cuda", dtype=torch.float16)
    _device_descriptor_kernel[(1,)](x, torch.empty_like(x), 64, 64, BLOCK=64)


MESSAGES = (
    Message(OUT_OF_RESOURCE, "shared-memory", "OutOfResources for shared memory", shared_memory),
    Message(OUT_OF_RESOURCE, "metadata-shared", "a launch's metadata.shared", metadata_shared),
    Message(OUT_OF_RESOURCE, "threads", "OutOfResources for threads (attempts)", threads),
    Message(
        OUT_OF_RESOURCE,
        "autotuning-failed",
        "TRITON_PRINT_AUTOTUNING=1 on a config that does not fit",
        autotune_failure,
        ("Autotuning failed", "chosen:"),
        {"TRITON_PRINT_AUTOTUNING": "1"},
    ),
    Message(COMPILE_ERROR, "arange-runtime-size", "tl.arange of a runtime argument", runtime_size),
    Message(COMPILE_ERROR, "arange-power-of-2", "tl.arange of 100", not_power_of_two),
    Message(COMPILE_ERROR, "global-variable", "a kernel reading a plain global", global_variable),
    Message(COMPILE_ERROR, "static-assert", "a failed tl.static_assert", static_assert),
    Message(CUDA_GRAPHS, "capture-sync", ".item() while capturing", capture_sync),
    Message(
        CUDA_GRAPHS,
        "skip-mutated-inputs",
        "cudagraphs skipped for a mutated input, TORCH_LOGS unset",
        mutated_input,
        ("skipping cudagraphs", "cudagraph_skips"),
    ),
    Message(
        CUDA_GRAPHS,
        "skip-mutated-inputs-perf-hints",
        "the same, TORCH_LOGS=perf_hints",
        mutated_input,
        ("skipping cudagraphs", "cudagraph_skips"),
        {"TORCH_LOGS": "perf_hints"},
    ),
    Message(
        CUDA_GRAPHS,
        "skip-mutated-inputs-cudagraphs-log",
        "the same, TORCH_LOGS=cudagraphs",
        mutated_input,
        ("skipping cudagraphs", "cudagraph_skips"),
        {"TORCH_LOGS": "cudagraphs"},
    ),
    Message(
        CUDA_GRAPHS,
        "skip-cpu-device",
        "a CPU tensor beside a CUDA one: cudagraphs skipped or not",
        cpu_tensor,
        ("skipping cudagraphs", "cudagraph_skips"),
    ),
    Message(CUDA_GRAPHS, "skip-logger", "the logger that carries the skip warning", skip_logger),
    Message(CUDA_GRAPHS, "overwritten-output", "an output read after it was overwritten", overwritten_output),
    Message(
        CUDA_GRAPHS,
        "many-shapes",
        "a graph recorded for each of many sizes",
        many_shapes,
        ("CUDAGraph supports dynamic shapes", "distinct input size"),
    ),
    Message(
        TORCH_COMPILE,
        "graph-break",
        "TORCH_LOGS=graph_breaks on a data-dependent branch",
        graph_break,
        ("[__graph_breaks]",),
        {"TORCH_LOGS": "graph_breaks"},
    ),
    Message(
        TORCH_COMPILE,
        "recompile",
        "TORCH_LOGS=recompiles on a float, then a dtype, that changed",
        recompile,
        ("[__recompiles]",),
        {"TORCH_LOGS": "recompiles"},
    ),
    Message(
        TORCH_COMPILE,
        "recompile-limit",
        "the warning at the recompile limit",
        recompile_limit,
        ("recompile_limit", "cache_size_limit", "   function: ", "   last reason: "),
    ),
    Message(TMA, "gpuperf-check", "gpuperf's ValueError", gpuperf_tma),
    Message(TMA, "host-descriptor", "TensorDescriptor's checks", host_descriptor),
    Message(TMA, "narrow-box", "a box narrower than 16 bytes", narrow_box),
    Message(TMA, "no-allocator", "tl.make_tensor_descriptor without an allocator", no_allocator),
)


# --- running them -------------------------------------------------------------------------------


def _name_of(cls: type) -> str:
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def _name(err: BaseException) -> str:
    return _name_of(type(err))


def versions() -> str:
    """``'torch 2.11.0+cu130 | triton 3.6.0 | NVIDIA H100 80GB HBM3'``."""
    gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else "no CUDA GPU"
    return f"torch {torch.__version__} | triton {triton.__version__} | {gpu}"


def run_here(message: Message) -> None:
    """Trigger ``message`` in this process: what it prints, then the exception it raised
    (type and text) or ``no exception``."""
    try:
        message.trigger()
    except Exception as err:
        print(f"exception {_name(err)}:", flush=True)
        print(str(err), flush=True)
    else:
        print("no exception", flush=True)


def run_apart(message: Message, timeout: float = TIMEOUT_S) -> str:
    """``message``'s block: its process's output, the lines its ``patterns`` pick (or the
    output's last lines when none match)."""
    env = {k: v for k, v in os.environ.items() if k not in ("TORCH_LOGS", "TRITON_PRINT_AUTOTUNING")}
    env.update(message.env)
    try:
        done = subprocess.run(
            [sys.executable, __file__, "--here", message.id],
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
        )
        out, err = done.stdout, done.stderr
    except subprocess.TimeoutExpired as late:
        out = (late.stdout or b"").decode() if isinstance(late.stdout, bytes) else late.stdout or ""
        err = f"(timed out after {timeout:.0f} s)"
    lines = [*out.splitlines(), *err.splitlines()]
    picked = [line for line in lines if any(p in line for p in message.patterns)]
    body = out.rstrip().splitlines()
    if message.patterns:
        body += picked or ["(no line matched; the output's last lines:)", *lines[-25:]]
    elif err.strip() and not out.strip():
        body += ["(stderr:)", *err.splitlines()[-25:]]
    logs = message.env.get("TORCH_LOGS", "<unset>")
    header = f"{versions()} | TORCH_LOGS={logs}"
    return "\n".join([f"===== {message.id} =====", header, f"# {message.what}", *body, "===== end ====="])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("ids", nargs="*", help="message ids (default: all)")
    parser.add_argument("--list", action="store_true", help="print the message ids and exit")
    parser.add_argument("--here", metavar="ID", help=argparse.SUPPRESS)
    parser.add_argument("--jobs", type=int, default=6, help="messages triggered at once (default 6)")
    args = parser.parse_args(argv)
    by_id = {m.id: m for m in MESSAGES}
    if args.list:
        print("\n".join(by_id))
        return 0
    if args.here:
        run_here(by_id[args.here])
        return 0
    unknown = [i for i in args.ids if i not in by_id]
    if unknown:
        parser.error(f"unknown message ids {unknown}; --list shows them")
    if not torch.cuda.is_available():
        print("These messages need a CUDA GPU; none is usable here.", file=sys.stderr)
        return 1
    chosen = [by_id[i] for i in args.ids] or list(MESSAGES)
    print(f"{versions()}: {len(chosen)} messages\n", flush=True)
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for block in pool.map(run_apart, chosen):
            print(block + "\n", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
