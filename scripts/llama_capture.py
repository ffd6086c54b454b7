"""Tutorial 07's GPU capture: where the time of one Llama decoder layer goes, part by part.

Usage (on a machine with an NVIDIA GPU): ``python scripts/llama_capture.py [--out FOLDER]``.
Writes ``<out>/<gpu>/captures/llama_time_breakdown.json``: for a prefill (batch 4 x 2048
tokens) and a decode step (batch 1 and 64, 4096 cached tokens), with PyTorch's operations
and with gpuperf's, the GPU time of each part of the layer (the norms, each projection,
RoPE, attention, the KV-cache write), from ``torch.profiler``: every kernel launched inside
the part's ``record_function`` range (:data:`gpuperf.models.llama.SECTIONS`) is added to it.
Beside the kernels' sum, the GPU time between CUDA events at each part's ends (kernels and
any wait for the host inside the part) and the step's time as a loop of steps sees it
(CUDA events around back-to-back steps, no profiler): where the kernels' sum and the step
differ, the GPU waited for the host.
"""

import sys

#: (phase, x, axes) of each breakdown: a compute-bound prefill and two decode steps.
CASES = (
    ("prefill", 4, {}),
    ("decode", 4096, {"batch": 1}),
    ("decode", 4096, {"batch": 64}),
)
PROFILED_STEPS = 5


def main(argv=None) -> int:
    from gpuperf.bench import captures

    parser = captures.script_parser(__doc__.splitlines()[0])
    args = parser.parse_args(argv)

    import torch

    from gpuperf.bench import timing
    from gpuperf.bench.catalog import llama
    from gpuperf.bench.traces import time_parts
    from gpuperf.models.llama import SECTIONS

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
            entry.update(time_parts(step, SECTIONS, steps=PROFILED_STEPS))
            providers[provider.key] = entry
            shown = ", ".join(f"{k} {v:.0f}" for k, v in entry["parts_us"].items())
            events = ", ".join(f"{k} {v:.0f}" for k, v in entry["event_parts_us"].items())
            print(
                f"{phase} x={x} {axes} {provider.key}: step {entry['step_us']:.0f} us, kernels "
                f"{entry['kernels_us']:.0f} us ({entry['kernel_count']:.0f}): {shown}\n"
                f"    between events: {events}\n    trace: {entry['trace_categories']}",
                flush=True,
            )
        cases.append({"phase": phase, "x_name": bench.x_name, "x": x, "axes": axes, "providers": providers})
        del inputs
        torch.cuda.empty_cache()
    cap = captures.build(
        "llama_time_breakdown",
        tool="torch.profiler (ProfilerActivity.CPU + CUDA), record_function ranges per part of the layer",
        payload={"steps": PROFILED_STEPS, "sections": [*SECTIONS.names, "other"], "cases": cases},
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
