"""The optimization-strategy guide's case studies that are not declared benchmarks.

* ``torch.compile``'s modes (``default``, ``reduce-overhead``, ``max-autotune``)
  on a bfloat16 transformer MLP block, at a size where the GPU is busy and at a
  small batch where launches bound the time: compile time beside GPU time and
  host time per call, each mode in a fresh process with empty compile caches
  (:func:`measure_mode`, :func:`compile_modes`); needs a CUDA GPU.
* Graph breaks and recompilations, shown and counted by Dynamo itself
  (:func:`explain_graph_breaks`, :func:`count_graphs`); these run anywhere,
  the CPU included, since they only trace.
* What a provider launches per call (:func:`kernels_per_call`, ``torch.profiler``)
  and the Triton code Inductor writes for a function (:func:`inductor_triton_code`).

``scripts/strategy_captures.py`` runs the GPU parts and keeps their output as
captures (:mod:`gpuperf.bench.captures`); the guide renders those.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F

# --- the MLP block ----------------------------------------------------------------------

#: The two MLP cases: a busy GPU (4096 tokens) and a small batch (8 tokens, as in
#: decoding), each a pre-norm transformer MLP of width 1024 and hidden size 4096.
MLP_CASES = {
    "mlp_4096_tokens": {"tokens": 4096, "dim": 1024, "hidden": 4096},
    "mlp_8_tokens": {"tokens": 8, "dim": 1024, "hidden": 4096},
}
#: The modes compared; ``eager`` is the uncompiled baseline.
MODES = ("eager", "default", "reduce-overhead", "max-autotune")
#: Seconds each mode's fresh process may take before it is stopped (max-autotune
#: benchmarks many GEMM configurations while it compiles).
MODE_TIMEOUT_S = {"eager": 120, "default": 150, "reduce-overhead": 150, "max-autotune": 240}
#: Calls per host-timed round: the eager block launches about six kernels per call,
#: and calls times kernels must stay below the driver's launch queue (about a thousand).
HOST_CALLS = 50


class MLPBlock(torch.nn.Module):
    """A pre-norm transformer MLP block: ``x + down(gelu(up(layer_norm(x))))``.

    ``x`` ``(tokens, dim)``; ``up`` is ``Linear(dim, hidden)``, ``down`` ``Linear(hidden,
    dim)``, GELU the tanh approximation (as GPT-2's). Its weights are parameters, as
    in a model: ``torch.compile``'s CUDA graphs keep them in place and copy only ``x``.
    """

    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.norm = torch.nn.LayerNorm(dim, bias=False)
        self.up = torch.nn.Linear(dim, hidden)
        self.down = torch.nn.Linear(hidden, dim)

    def forward(self, x):
        return x + self.down(F.gelu(self.up(self.norm(x)), approximate="tanh"))


def mlp_inputs(tokens: int, dim: int, hidden: int, device, dtype=torch.bfloat16, seed: int = 0) -> tuple:
    """``(model, x)``: an :class:`MLPBlock` (PyTorch's default initialization, seeded,
    gradients off) and a random input, both in ``dtype`` on ``device``."""
    torch.manual_seed(seed)
    model = MLPBlock(dim, hidden).to(device=device, dtype=dtype).requires_grad_(False)
    return model, torch.randn(tokens, dim, device=device, dtype=dtype)


def mlp_ref(model: MLPBlock, x: torch.Tensor) -> torch.Tensor:
    """The block in float32: a float32 copy of ``model`` on ``x`` upcast; returns float32."""
    import copy

    return copy.deepcopy(model).float()(x.float())


def mlp_flops(tokens: int, dim: int, hidden: int) -> int:
    """FLOPs of the block's two matmuls, ``2 * 2 * tokens * dim * hidden`` (the rest is negligible)."""
    return 4 * tokens * dim * hidden


# --- measured on a GPU ------------------------------------------------------------------


def measure_mode(case: str, mode: str) -> dict:
    """Compile (unless ``eager``) and time an :class:`MLPBlock` for ``case`` in ``mode``, here.

    Returns ``{"status", "compile_s", "gpu_ms", "gpu_ms_p20", "gpu_ms_p80", "host_ms",
    "host_ms_p20", "host_ms_p80", "kernels", "graphs"}``: the first call's wall time
    (compilation, autotuning and the call itself; 0 for eager), GPU time per call
    (:func:`gpuperf.bench.timing.time_ms`), host time per call
    (:func:`gpuperf.bench.timing.host_time_ms`), the kernels one call launches
    (``torch.profiler``) and the graphs Dynamo compiled. The output is checked
    against :func:`mlp_ref` before anything is timed.

    Raises:
        RuntimeError: no CUDA device. ValueError: unknown case or mode.
        AssertionError: the output does not match the reference.
    """
    from gpuperf.bench.timing import host_time_ms, require_cuda, time_ms
    from gpuperf.testing import assert_close

    require_cuda()
    if case not in MLP_CASES or mode not in MODES:
        raise ValueError(
            f"case must be one of {list(MLP_CASES)} and mode one of {MODES}, got {case!r}, {mode!r}"
        )
    shape = MLP_CASES[case]
    model, x = mlp_inputs(**shape, device="cuda")
    graphs = []
    if mode == "eager":
        fn = model
    else:
        from torch._dynamo.utils import counters

        counters.clear()
        fn = torch.compile(model, mode=None if mode == "default" else mode)
    torch.cuda.synchronize()
    start = time.perf_counter()
    out = fn(x)
    torch.cuda.synchronize()
    compile_s = 0.0 if mode == "eager" else time.perf_counter() - start
    if mode != "eager":
        graphs = [dict(counters["stats"])]
    assert_close(f"{case} {mode}", mlp_ref(model, x), out.clone(), k=shape["hidden"])
    del out
    call = lambda: fn(x)
    gpu = time_ms(call)
    host = host_time_ms(call, calls=HOST_CALLS)
    return {
        "status": "ok",
        "compile_s": compile_s,
        "gpu_ms": gpu.ms,
        "gpu_ms_p20": gpu.ms_p20,
        "gpu_ms_p80": gpu.ms_p80,
        "host_ms": host.ms,
        "host_ms_p20": host.ms_p20,
        "host_ms_p80": host.ms_p80,
        "kernels": _kernels_or_none(call),
        "dynamo_stats": graphs[0] if graphs else None,
    }


def _kernels_or_none(call) -> list[str] | None:
    """:func:`kernels_per_call`, or None where the profiler fails (CUDA graphs, say)."""
    try:
        return kernels_per_call(call)
    except Exception:  # the timings stand without the kernel list
        return None


def compile_modes(cases: Sequence[str] = tuple(MLP_CASES), modes: Sequence[str] = MODES, log=print) -> dict:
    """Run :func:`measure_mode` for every case and mode, each in a fresh Python process
    with its own empty Inductor and Triton caches, so compile times are cold.

    Returns the payload of the ``compile_modes`` capture: the cases' shapes and FLOPs,
    and per case and mode the measurement, or ``{"status": "error"|"timeout", "message"}``.
    """
    results = {}
    for case in cases:
        results[case] = {}
        for mode in modes:
            with tempfile.TemporaryDirectory() as cache:
                env = {
                    **os.environ,
                    "TORCHINDUCTOR_CACHE_DIR": os.path.join(cache, "inductor"),
                    "TRITON_CACHE_DIR": os.path.join(cache, "triton"),
                }
                cmd = [sys.executable, "-m", "gpuperf.bench.strategy", case, mode]
                try:
                    done = subprocess.run(
                        cmd, env=env, capture_output=True, text=True, timeout=MODE_TIMEOUT_S[mode]
                    )
                except subprocess.TimeoutExpired:
                    entry = {"status": "timeout", "message": f"stopped after {MODE_TIMEOUT_S[mode]} s"}
                else:
                    lines = done.stdout.strip().splitlines()
                    if done.returncode == 0 and lines:
                        entry = json.loads(lines[-1])
                    else:
                        entry = {"status": "error", "message": (done.stderr or done.stdout)[-600:]}
            results[case][mode] = entry
            # fmt: off
            # (No whitespace inside f-string braces: the record hash must agree on Python 3.11 and 3.12.)
            shown = (
                f"compile {entry['compile_s']:.1f} s, GPU {entry['gpu_ms']*1e3:.1f} us, "
                f"host {entry['host_ms']*1e3:.1f} us, {len(entry['kernels']or[])} kernels"
                if entry["status"] == "ok"
                else f"{entry['status']}: {entry['message'][-300:]}"
            )
            # fmt: on
            log(f"compile_modes {case:>16} {mode:>16}: {shown}")
    return {
        "cases": {case: {**MLP_CASES[case], "flops": mlp_flops(**MLP_CASES[case])} for case in cases},
        "dtype": "bfloat16",
        "modes": list(modes),
        "results": results,
    }


def kernels_per_call(fn: Callable[[], object]) -> list[str]:
    """Names of the GPU kernels one call of ``fn()`` launches, in launch order (``torch.profiler``).

    ``fn`` is called once first, so compilation and autotuning stay outside the profile.
    """
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    kernels.sort(key=lambda e: e.time_range.start)
    # Copies and memsets are listed by the profiler too; only kernels are wanted.
    return [e.name for e in kernels if not e.name.startswith(("Memcpy", "Memset"))]


_TRITON_SOURCE = re.compile(r"'''(.*?)'''", re.DOTALL)


def inductor_triton_code(fn: Callable, *inputs) -> list[str]:
    """The Triton kernels Inductor generates for ``fn(*inputs)`` (``torch.compile``,
    default mode), each from its heuristics decorator to its last line.

    Uses ``torch._inductor.utils.run_and_get_code``, which returns the Python module
    Inductor wrote; needs a CUDA device (on the CPU Inductor writes C++ instead).
    """
    from torch._inductor.utils import run_and_get_code

    torch._dynamo.reset()
    _, modules = run_and_get_code(torch.compile(fn), *inputs)
    kernels = []
    for module in modules:
        for body in _TRITON_SOURCE.findall(module):
            if "@triton.jit" not in body:
                continue
            start = body.find("@triton_heuristics")
            kernels.append(body[start if start >= 0 else body.find("@triton.jit") :].strip())
    return kernels


# --- graph breaks and recompilations (run anywhere) -------------------------------------


def gated_mlp_with_branch(x, w1, w2):
    """A small MLP whose Python ``if`` reads a tensor's value: a graph break."""
    h = F.gelu(x @ w1, approximate="tanh")
    if h.mean() > 0:  # Python must know the value now: Dynamo stops its graph here
        h = h * 0.5
    return h @ w2


def gated_mlp_without_branch(x, w1, w2):
    """The same function with the branch as data (``torch.where``): one graph."""
    h = F.gelu(x @ w1, approximate="tanh")
    h = torch.where(h.mean() > 0, h * 0.5, h)
    return h @ w2


def explain_graph_breaks(fn: Callable, *inputs) -> dict:
    """What ``torch._dynamo.explain`` says of ``fn(*inputs)``: ``{"graphs", "breaks",
    "reasons"}``, each reason with the line of ``fn`` it happened on."""
    torch._dynamo.reset()
    explained = torch._dynamo.explain(fn)(*inputs)
    reasons = []
    for reason in explained.break_reasons:
        frame = reason.user_stack[-1] if reason.user_stack else None
        where = f"{frame.name}, line {frame.lineno}: {frame.line}" if frame else "?"
        reasons.append(f"{reason.reason.splitlines()[0]} (in {where})")
    return {"graphs": explained.graph_count, "breaks": explained.graph_break_count, "reasons": reasons}


class _Recompiles(logging.Handler):
    """Keeps Dynamo's recompilation messages (the ``recompiles`` log artifact)."""

    def __init__(self):
        super().__init__()
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def count_graphs(
    fn: Callable, calls: Sequence[tuple], *, dynamic: bool | None = None, mark_dynamic: int | None = None
) -> dict:
    """Compile ``fn`` once and call it on each argument tuple of ``calls``; count the graphs
    Dynamo compiled and keep the first recompilation's reason.

    Args:
        dynamic: passed to ``torch.compile`` (None: its default, automatic dynamic shapes).
        mark_dynamic: a dimension of each call's first argument to mark dynamic
            (``torch._dynamo.mark_dynamic``) before the call.

    Returns:
        ``{"calls", "graphs", "first_reason"}``. Tracing only (the ``eager`` backend
        runs the captured graphs), so this costs no code generation.
    """
    torch._dynamo.reset()
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    compiled = torch.compile(fn, backend=backend, dynamic=dynamic)
    handler = _Recompiles()
    logger = logging.getLogger("torch._dynamo")
    logger.addHandler(handler)
    torch._logging.set_logs(recompiles=True)
    try:
        for args in calls:
            if mark_dynamic is not None:
                torch._dynamo.mark_dynamic(args[0], mark_dynamic)
            compiled(*args)
    finally:
        torch._logging.set_logs()
        logger.removeHandler(handler)
    reason = next((m for m in handler.messages if "guard failure" in m), None)
    if reason is not None:
        lines = [line.strip() for line in reason.splitlines() if line.strip().startswith("- ")]
        reason = lines[0].removeprefix("- ") if lines else reason.splitlines()[0]
    return {"calls": len(calls), "graphs": len(graphs), "first_reason": reason}


def _main(argv: list[str]) -> int:
    """``python -m gpuperf.bench.strategy CASE MODE``: print :func:`measure_mode`'s result as JSON."""
    case, mode = argv
    print(json.dumps(measure_mode(case, mode)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
