"""Compile Gluon kernels for Hopper on a machine without a GPU.

Triton's JIT asks the active driver for the target it compiles for. Under
:func:`hopper_target` a stand-in driver names ``sm_90``, so that ``kernel.warmup(...)``
runs the whole compiler (Gluon to TTGIR, LLVM, PTX and ``ptxas``, all bundled with
Triton's wheel) and returns the compiled kernel, its PTX and its shared memory, without
launching anything. The tests use it to hold every Gluon kernel to compiling on a CPU.

:func:`compile_matmul_fp8` does it in a Python process of its own: a process where Triton's
interpreter has run a kernel (the tests', the docs build's) can no longer build Gluon's
IR (seen with Triton 3.6: ``'block_argument' object has no attribute 'dtype'`` on the
first arithmetic), so the compile gets a process of its own. That process stays for the
next compile (starting one, which imports torch and gpuperf, took longer than most
compiles): each compile takes an idle one started with the same environment, or starts one.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import traceback
from pathlib import Path

from triton.backends.compiler import GPUTarget
from triton.runtime import driver


class _HopperStandIn:
    """The three questions the JIT asks before compiling, answered for an H100."""

    def get_current_target(self):
        return GPUTarget("cuda", 90, 32)

    def get_current_device(self):
        return 0

    def get_current_stream(self, device=None):
        return 0

    def __getattr__(self, name):
        raise RuntimeError(f"no GPU here: the stand-in driver cannot {name}")


@contextlib.contextmanager
def hopper_target(*kernels):
    """Within the block, Triton compiles for ``sm_90`` whatever GPU (or none) is present.

    ``kernels`` are the Gluon kernels to be compiled: their per-device caches are cleared
    on the way out, so a later launch on a real GPU compiles for that GPU.
    """
    previous = driver._active  # (None until something asks; DriverConfig has no getter for it)
    driver.set_active(_HopperStandIn())
    try:
        yield
    finally:
        driver._active = previous
        for kernel in kernels:
            kernel.device_caches.clear()


def ptxas_candidates() -> list[str]:
    """The ``ptxas`` binaries that may assemble PTX Triton wrote, in the order tried: the one
    Triton compiles with now (``TRITON_PTXAS_PATH`` if set, else the one in Triton's wheel),
    the one PyTorch ships and Inductor points ``TRITON_PTXAS_PATH`` at when it compiles,
    then the CUDA toolkit's. Each existing file once."""
    from triton.backends.nvidia.compiler import get_ptxas

    found = [get_ptxas(90).path, os.environ.get("TRITON_PTXAS_PATH")]
    try:
        import torch

        here = os.path.dirname(torch.__file__)  # torch/bin (2.11), torch/_inductor/bin (earlier)
        found += [os.path.join(here, "bin", "ptxas"), os.path.join(here, "_inductor", "bin", "ptxas")]
    except ImportError:
        pass
    found += [shutil.which("ptxas"), "/usr/local/cuda/bin/ptxas"]
    return [path for path in dict.fromkeys(found) if path and os.path.isfile(path)]


def ptxas_report(ptx: str) -> str:
    """What ``ptxas -v`` says of ``ptx`` assembled for ``sm_90a``: registers, spill bytes, and
    its note C7514 when it serializes the wgmma instructions (which undoes any overlap a
    schedule asks for).

    The PTX's ``.version`` is the one the ``ptxas`` Triton compiled with can read, and that
    need not be the one Triton would pick now: Inductor points ``TRITON_PTXAS_PATH`` at its
    own, newer ``ptxas`` when it compiles, and a kernel compiled then comes back from
    Triton's cache later. So each of :func:`ptxas_candidates` is tried in turn until one
    reads that version.

    Raises:
        FileNotFoundError: there is no ``ptxas`` here.
        RuntimeError: no ``ptxas`` here assembled the PTX (the last one's message is in the error).
    """
    candidates = ptxas_candidates()
    if not candidates:
        raise FileNotFoundError("no ptxas here: Triton's wheel for this platform carries none")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "kernel.ptx")
        with open(path, "w") as f:
            f.write(ptx)
        for ptxas in candidates:
            done = subprocess.run(
                [ptxas, "-arch=sm_90a", "-v", path, "-o", os.path.join(tmp, "kernel.cubin")],
                capture_output=True,
                text=True,
            )
            if done.returncode == 0:
                return done.stdout + done.stderr
            if "Unsupported .version" not in done.stderr:
                break  # an error in the PTX itself: another ptxas would not help
    raise RuntimeError(f"{ptxas} failed with exit status {done.returncode}:\n{done.stderr[-3000:]}")


#: What a compiling process runs: :func:`_serve`.
_SERVE = "from gpuperf.kernels.gluon.offline import _serve; _serve()"


class _CompileProcess:
    """A Python process without the interpreter that runs :func:`_serve`: it compiles one
    request after another, each written as a line of JSON to its stdin, and answers each
    with a line of JSON on its stdout."""

    def __init__(self, env: dict):
        self.env = _compile_env(env)
        self._stderr = tempfile.TemporaryFile(mode="w+")
        self._process = subprocess.Popen(
            [sys.executable, "-c", _SERVE],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            env=_child_env(env),
        )

    def compile(self, request: dict) -> dict:
        """The answer to ``request``; raises RuntimeError (and leaves the process ended) when
        the compile failed or the process died."""
        try:
            self._process.stdin.write(json.dumps(request) + "\n")
            self._process.stdin.flush()
            line = self._process.stdout.readline()
        except OSError:  # the process is gone (a broken pipe)
            line = ""
        answer = json.loads(line) if line.strip() else {"error": "the compiling process ended"}
        if "error" in answer:  # (a process whose compile failed is not used again)
            output = self.close()
            raise RuntimeError(f"the offline compile failed:\n{answer['error']}\n{output[-3000:]}")
        return answer

    def close(self) -> str:
        """End the process (closing its stdin ends :func:`_serve`'s loop); return what it
        wrote to stderr."""
        with contextlib.suppress(OSError):
            self._process.stdin.close()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._process.stdout.close()
        self._stderr.seek(0)
        output = self._stderr.read()
        self._stderr.close()
        return output


#: The folder that holds the ``gpuperf`` package this process imported (``src`` in a checkout).
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[3])


def _child_env(env: dict) -> dict:
    """``env`` with :data:`_PACKAGE_ROOT` first on ``PYTHONPATH``: the child imports the same
    ``gpuperf`` as this process, also where ``PYTHONPATH`` names it relative to a working
    directory the child does not share (``PYTHONPATH=src`` from the repository's root, then a
    page run in a folder of its own)."""
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    return {**env, "PYTHONPATH": os.pathsep.join([_PACKAGE_ROOT, *paths])}


_IDLE: list[_CompileProcess] = []
_IDLE_LOCK = threading.Lock()
#: Variables a compile does not read that change between compiles (pytest names the test
#: running in PYTEST_CURRENT_TEST): a process started with other values of these serves too.
_ENV_IGNORED = frozenset({"PYTEST_CURRENT_TEST"})


def _compile_env(env: dict) -> dict:
    return {name: value for name, value in env.items() if name not in _ENV_IGNORED}


def _close_idle() -> None:
    with _IDLE_LOCK:
        idle, _IDLE[:] = list(_IDLE), []
    for process in idle:
        process.close()


atexit.register(_close_idle)


def _compile_in_child(request: dict) -> dict:
    """Compile ``request`` in a Python process without the interpreter (:func:`_serve`): an
    idle one started with this environment, else a new one, kept for the next compile.
    Compiles on several threads at once each take a process of their own. Returns what
    :func:`_compile` answers: ``{"ptx", "shared", "worker_registers"}``."""
    # "0", not unset: unset, importing gpuperf on a machine without a GPU would switch the
    # interpreter on, and Triton's library functions (gl.max, ...) would be interpreted ones.
    env = {**os.environ, "TRITON_INTERPRET": "0"}
    with _IDLE_LOCK:
        process = next((p for p in _IDLE if p.env == _compile_env(env)), None)
        if process is not None:
            _IDLE.remove(process)
    if process is None:
        process = _CompileProcess(env)
    answer = process.compile(request)  # (a failed compile ends its process: not kept)
    with _IDLE_LOCK:
        _IDLE.append(process)
        # Keep as many as compile at once (one a CPU), the most recently used.
        surplus = _IDLE[: max(0, len(_IDLE) - (os.cpu_count() or 1))]
        del _IDLE[: len(surplus)]
    for old in surplus:
        old.close()
    return answer


def compile_matmul_fp8(fields: dict, m: int, n: int, k: int, *, row_scales: bool = False) -> dict:
    """Compile :func:`~gpuperf.kernels.gluon.matmul_fp8_promoted`'s kernel for ``sm_90`` with
    ``GluonFP8Config(**fields)`` at ``(M, N, K)`` (e4m3 operands, bfloat16 output, per-tensor
    or per-row scales), in a Python process without the interpreter.

    Returns:
        ``{"ptx": str, "shared": int}``: the PTX and the shared memory a program allocates.

    Raises:
        RuntimeError: the compile failed; its output's tail is attached.
    """
    return _compile_in_child(
        {"kernel": "matmul_fp8", "fields": fields, "shape": [m, n, k], "row_scales": row_scales}
    )


def compile_attention_fa3(fields: dict, shape, *, causal: bool = False) -> dict:
    """Compile :func:`~gpuperf.kernels.gluon.attention`'s kernel for ``sm_90`` with
    ``FA3Config(**fields)`` at ``shape = (B, H, H_kv, S_q, S_k, D)``, float16, in a
    Python process without the interpreter.

    Returns:
        ``{"ptx": str, "shared": int, "worker_registers": [int, ...]}``: the PTX, the shared
        memory a program allocates and the register budgets of the worker partitions
        (``setmaxnreg``: the second consumer warpgroup's, then the producer warp's).

    Raises:
        RuntimeError: the compile failed; its output's tail is attached.
    """
    return _compile_in_child(
        {"kernel": "attention_fa3", "fields": fields, "shape": list(shape), "causal": causal}
    )


def _compile(request: dict) -> dict:
    """The compile of :func:`compile_matmul_fp8` or :func:`compile_attention_fa3`:
    ``{"ptx", "shared", "worker_registers"}`` (``worker_registers``: the register budgets a
    warp-specialized kernel's worker partitions ask for; empty for other kernels)."""
    kernel, grid, args, constants = _LAUNCHES[request["kernel"]](request)
    with hopper_target(kernel):
        compiled = kernel.warmup(*args, grid=grid, **constants)
    # A warp-specialized kernel's worker partitions ask for their register budgets in TTGIR.
    requested = re.search(r"requestedRegisters = array<i32: ([\d, ]+)>", compiled.asm["ttgir"])
    budgets = [int(n) for n in requested.group(1).split(",")] if requested else []
    return {"ptx": compiled.asm["ptx"], "shared": compiled.metadata.shared, "worker_registers": budgets}


def _serve() -> None:
    """The loop of a compiling process (:class:`_CompileProcess`): a request a line on stdin,
    its answer a line on stdout, ``{"error": traceback}`` for a compile that failed, until
    stdin ends. Whatever else writes to stdout (Triton, ptxas) goes to stderr instead, so
    that stdout carries the answers only."""
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            answer = _compile(json.loads(line))
        except Exception:
            answer = {"error": traceback.format_exc()[-3000:]}
        answers.write(json.dumps(answer) + "\n")
        answers.flush()
        if "error" in answer:
            return


def _matmul_fp8_launch(request: dict):
    import torch

    from gpuperf.kernels.gluon import matmul_fp8
    from gpuperf.kernels.gluon.matmul_fp8 import GluonFP8Config

    m, n, k = request["shape"]
    a = torch.zeros(m, k, dtype=torch.float8_e4m3fn)
    b = torch.zeros(n, k, dtype=torch.float8_e4m3fn).t()
    c = torch.empty(m, n, dtype=torch.bfloat16)
    scale_a = torch.ones(m if request["row_scales"] else 1)
    scale_b = torch.ones(n if request["row_scales"] else 1)
    config = GluonFP8Config(**request["fields"])
    return matmul_fp8.kernel_arguments(c, a, b, scale_a, scale_b, config)


def _attention_fa3_launch(request: dict):
    import torch

    from gpuperf.kernels.gluon import attention as attention_fa3

    batch, heads, kv_heads, seq_q, seq_k, head_dim = request["shape"]
    q = torch.zeros(batch, heads, seq_q, head_dim, dtype=torch.float16)
    k = torch.zeros(batch, kv_heads, seq_k, head_dim, dtype=torch.float16)
    config = attention_fa3.FA3Config(**request["fields"])
    return attention_fa3.kernel_arguments(torch.empty_like(q), q, k, k, request["causal"], 0.125, config)


#: How each kernel :func:`_compile` compiles is set up: ``request -> (kernel, grid, args, constants)``.
_LAUNCHES = {"matmul_fp8": _matmul_fp8_launch, "attention_fa3": _attention_fa3_launch}
