"""Tutorial 07's GPU capture: where the time of one Llama decoder layer goes, part by part.

Usage (on a machine with an NVIDIA GPU): ``python scripts/llama_capture.py [--out docs/measurements]``.
Writes ``<out>/<gpu>/captures/llama_time_breakdown.json``: for a prefill (batch 4 x 2048
tokens) and a decode step (batch 1 and 64, 4096 cached tokens), with PyTorch's operations
and with gpuperf's, the GPU time of each part of the layer (the norms, each projection,
RoPE, attention, the KV-cache write), from ``torch.profiler``: every kernel launched inside
the part's ``record_function`` range (:func:`gpuperf.models.llama.sections`) is added to it.
Beside the kernels' sum, the step's time as a loop of steps sees it (CUDA events around
back-to-back steps, no profiler): where the two differ, the GPU waited for the host.
"""

import argparse
import sys
from pathlib import Path

#: (phase, x, axes) of each breakdown: a compute-bound prefill and two decode steps.
CASES = (
    ("prefill", 4, {}),
    ("decode", 4096, {"batch": 1}),
    ("decode", 4096, {"batch": 64}),
)
PROFILED_STEPS = 5


def breakdown(step, sections_on, section_names, prefix: str) -> dict:
    """GPU microseconds per step of each part, of all kernels, and the kernel count, by
    ``torch.profiler`` over :data:`PROFILED_STEPS` steps after two warm-up steps."""
    import torch
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    for _ in range(2):
        step()
    torch.cuda.synchronize()
    with sections_on(), profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(PROFILED_STEPS):
            step()
        torch.cuda.synchronize()
    events = prof.events()
    parts = dict.fromkeys(section_names, 0.0)
    for e in events:
        if e.device_type == DeviceType.CPU and e.name.startswith(prefix):
            parts[e.name.removeprefix(prefix)] += e.device_time_total
    top = [e for e in events if e.device_type == DeviceType.CPU and e.cpu_parent is None]
    kernels_us = sum(e.device_time_total for e in top)
    count = sum(1 for e in events if e.device_type == DeviceType.CUDA and not e.name.startswith(prefix))
    n = PROFILED_STEPS
    parts = {name: us / n for name, us in parts.items() if us > 0}
    return {
        "parts_us": parts,
        "other_us": max(0.0, kernels_us / n - sum(parts.values())),
        "kernels_us": kernels_us / n,
        "kernel_count": count / n,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, default=None, help="measurements folder (default: docs/measurements)"
    )
    args = parser.parse_args(argv)

    import torch

    from gpuperf.bench import captures, timing
    from gpuperf.bench.catalog import llama
    from gpuperf.models.llama import SECTION_PREFIX, SECTIONS, sections

    if not torch.cuda.is_available():
        print("llama_capture: needs a CUDA GPU", file=sys.stderr)
        return 2

    benches = {"prefill": llama.LLAMA_PREFILL, "decode": llama.LLAMA_DECODE}
    cases = []
    for phase, x, axes in CASES:
        bench = benches[phase]
        torch.manual_seed(0)
        inputs = bench.make_inputs(x, torch.device("cuda"), **axes)
        providers = {}
        for provider in bench.providers:
            if provider.key not in ("eager", "triton"):
                continue
            step = provider.make(*inputs)
            entry = {"label": provider.label}
            entry.update(breakdown(step, sections, SECTIONS, SECTION_PREFIX))
            entry["step_us"] = timing.loop_time_ms(step).ms * 1e3
            providers[provider.key] = entry
            shown = ", ".join(f"{k} {v:.0f}" for k, v in entry["parts_us"].items())
            print(
                f"{phase} x={x} {axes} {provider.key}: step {entry['step_us']:.0f} us, kernels "
                f"{entry['kernels_us']:.0f} us ({entry['kernel_count']:.0f}): {shown}",
                flush=True,
            )
        cases.append({"phase": phase, "x_name": bench.x_name, "x": x, "axes": axes, "providers": providers})
        del inputs
        torch.cuda.empty_cache()
    cap = captures.build(
        "llama_time_breakdown",
        tool="torch.profiler (ProfilerActivity.CPU + CUDA), record_function ranges per part of the layer",
        payload={"steps": PROFILED_STEPS, "sections": list(SECTIONS), "cases": cases},
        sources=llama.LLAMA_SOURCES,
        method=(
            f"GPU kernel time per part, summed over the kernels launched inside each part's range, "
            f"mean of {PROFILED_STEPS} profiled steps after 2 warm-up steps; step time by "
            f"{timing.LOOP_TIMING_METHOD}"
        ),
    )
    print("wrote", captures.write(cap, args.out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
