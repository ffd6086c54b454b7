"""Where a planned call's host time goes: softmax and vector_add, part by part, and the
attention training step, forward and backward apart, on a GPU.

The host_overhead benchmark times whole calls (our op against PyTorch's). This script
times, with the same timer (``gpuperf.bench.timing.host_time_ms``: the GPU kept busy, so
only the host's work counts), each part of a call that launches from its plan
(:mod:`gpuperf.kernels.launch`): the key of the call (``layout_key``, the loop that the
eager call runs unrolled), the plan's lookup, the output's allocation, and the plan alone
(allocation and bound launch); then the whole call and PyTorch's op. Shapes are the
host_overhead benchmark's (softmax 4096 x 256 float32, vector_add 4096 float32).

The parts of a table are timed round by round in turn (one round of each, then the next
round of each), so that a slow stretch of the host falls on every part alike; each part
keeps its median, 20th and 80th percentiles over the rounds, and the process's CPU time
per call (every thread: autograd runs a CUDA backward on a thread of its own).

    python scripts/host_breakdown.py [--out FOLDER]

Prints one table per op (µs per call, median of rounds) and writes them as the
``host_breakdown`` capture (``<out>/<gpu>/captures/host_breakdown.json``; the profiling
guide reads the attention training step's table). About a minute on an H100.
"""

from __future__ import annotations

import sys

import torch

from gpuperf.bench.timing import HOST_CALLS, HOST_ROUNDS, host_times_ms
from gpuperf.kernels import softmax, vector_add
from gpuperf.kernels.launch import layout_key

#: Rounds per part: each round is one host_time_ms round, taken in turn with the others.
ROUNDS = 2 * HOST_ROUNDS


def _interleaved(timed: dict, calls: int) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """``(median µs per call, {part: {"p20", "p80", "cpu"}})`` of each part of ``timed``
    (``{name: fn}``), timed in turn one round each, :data:`ROUNDS` rounds
    (``gpuperf.bench.timing.host_times_ms``)."""
    times = dict(zip(timed, host_times_ms(list(timed.values()), calls=calls, rounds=ROUNDS), strict=True))
    for name, t in times.items():
        if isinstance(t, Exception):
            raise RuntimeError(f"{name}: {t}") from t
    medians = {name: t.ms * 1e3 for name, t in times.items()}
    spread = {
        name: {"p20": t.ms_p20 * 1e3, "p80": t.ms_p80 * 1e3, "cpu": t.cpu_ms * 1e3}
        for name, t in times.items()
    }
    return medians, spread


def _parts(op, tensors: tuple, reference):
    op(*tensors)  # checks, compiles, plans
    key, addresses = layout_key(tensors, len(tensors), {})
    plan = op.plans.get(key)
    if plan is None:
        raise RuntimeError(f"{op.__name__}: no plan for these inputs")
    timed = {
        "layout_key": lambda: layout_key(tensors, len(tensors), {}),
        "plans.get": lambda: op.plans.get(key),
        "torch.empty_like": lambda: torch.empty_like(tensors[0]),
        "plan(args, addresses)": lambda: plan(tensors, addresses),
        "whole call": lambda: op(*tensors),
        "PyTorch op": lambda: reference(*tensors),
    }
    return _interleaved(timed, HOST_CALLS)


def _attention_train_parts():
    """The attention training step of host_overhead (forward and backward of (1, 8, 128, 64)
    float16), split: the forward alone without autograd (a plan's replay), the forward that
    autograd records (one torch.autograd.Function whose forward replays the registered op's
    plan), then the backward added; and the same three for SDPA."""
    from gpuperf.bench.catalog import HOST_OVERHEAD
    from gpuperf.bench.catalog.host import ATTENTION_SHAPE, forward_backward, sdpa
    from gpuperf.kernels import attention

    fp16 = {"device": "cuda", "dtype": torch.float16}
    q, k, v = (torch.randn(ATTENTION_SHAPE, **fp16).requires_grad_() for _ in range(3))
    grad_out = torch.randn(ATTENTION_SHAPE, **fp16)

    def no_grad(fn):
        def run():
            with torch.no_grad():
                return fn(q, k, v)

        return run

    def step(fn):
        return lambda: forward_backward(fn, q, k, v, grad_out)

    timed = {
        "forward, no autograd": no_grad(attention),
        "forward, recorded": lambda: attention(q, k, v),
        "forward + backward": step(attention),
        "SDPA forward, no autograd": no_grad(sdpa),
        "SDPA forward, recorded": lambda: sdpa(q, k, v),
        "SDPA forward + backward": step(sdpa),
    }
    for fn in timed.values():  # compile, plan and check once
        fn()
    # As host_overhead times the step: 20 calls a round (200 steps' kernels would fill the
    # launch queue, and the host would wait out the GPU's sleep).
    return _interleaved(timed, HOST_OVERHEAD.host_calls("attention_train"))


def main(argv=None) -> int:
    from gpuperf.bench import captures
    from gpuperf.bench.catalog import HOST_OVERHEAD

    parser = captures.script_parser(__doc__.splitlines()[0])
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("host_breakdown.py needs a CUDA GPU", file=sys.stderr)
        return 2
    x = torch.randn(4096, 256, device="cuda")
    a, b = torch.randn(4096, device="cuda"), torch.randn(4096, device="cuda")
    measured = {
        "softmax": _parts(softmax, (x,), lambda t: torch.softmax(t, dim=-1)),
        "vector_add": _parts(vector_add, (a, b), torch.add),
        "attention_train": _attention_train_parts(),
    }
    tables = {op: medians for op, (medians, _) in measured.items()}
    spreads = {op: spread for op, (_, spread) in measured.items()}
    for op, parts in tables.items():
        print(f"{op} ({torch.cuda.get_device_name()}), µs per call: median [p20, p80], CPU time")
        for name, us in parts.items():
            s = spreads[op][name]
            print(f"  {name:<28} {us:7.2f} [{s['p20']:7.2f}, {s['p80']:7.2f}] {s['cpu']:7.2f}")
    cap = captures.build(
        "host_breakdown",
        tool="gpuperf.bench.timing.host_time_ms",
        payload={"us_per_call": tables, "spread": spreads, "rounds": ROUNDS},
        sources=("kernels/softmax.py", "kernels/vector_add.py", "kernels/attention.py", "kernels/launch.py"),
        method=(
            f"host clock per call (time.perf_counter around {HOST_CALLS} calls of each softmax and "
            f"vector_add part, {HOST_OVERHEAD.host_calls('attention_train')} of each training-step "
            f"part, the GPU kept busy by torch.cuda._sleep so the launch queue never drains), the "
            f"parts taken in turn one round each, {ROUNDS} rounds: median with 20th and 80th "
            f"percentiles over rounds; beside it the process's CPU time per call (time.process_time), "
            f"median over the same rounds"
        ),
    )
    print("wrote", captures.write(cap, args.out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
