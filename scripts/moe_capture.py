"""Tutorial 09's GPU capture: where the time of one MoE block goes, part by part.

Usage (on a machine with an NVIDIA GPU): ``python scripts/moe_capture.py [--out FOLDER]``.
Writes ``<out>/<gpu>/captures/moe_time_breakdown.json``: for a prefill (4096 tokens) and two
decode steps (1 and 64 tokens) of Mixtral-8x7B's, Qwen3-30B-A3B's and DeepSeek-V3's blocks,
with gpuperf's kernels and with PyTorch's operations (``F.grouped_mm``), the GPU time of
each part of the block (:data:`gpuperf.models.moe.SECTIONS`: the router, the permutation,
the two grouped matmuls, the activation, the combine, the shared expert) from
``torch.profiler`` (every kernel launched inside the part's ``record_function`` range),
the GPU time between CUDA events at each part's ends (kernels and any wait for the host),
the step's time as a loop of steps sees it, the same step replayed from one CUDA graph
(gpuperf's kernels), and the memory the step allocates above the weights and the input
(peak). About 2 minutes on an H100.
"""

import sys

#: (phase, tokens) of each breakdown, for every model.
CASES = (("prefill", 4096), ("decode", 1), ("decode", 64))
#: The layer's operations each case runs, by provider key (the benchmarks' names).
PROVIDERS = {"triton": "gpuperf", "grouped_mm": "torch"}
PROFILED_STEPS = 5


def _step(layer, x):
    import torch

    def step():
        with torch.no_grad():
            return layer(x)

    return step


def main(argv=None) -> int:
    from gpuperf.bench import captures

    parser = captures.script_parser(__doc__.splitlines()[0])
    args = parser.parse_args(argv)

    import torch

    from gpuperf.bench import timing
    from gpuperf.bench.catalog import moe
    from gpuperf.bench.catalog.benchmark import cuda_graph
    from gpuperf.bench.traces import time_parts
    from gpuperf.models.moe import SECTIONS

    if not torch.cuda.is_available():
        print("moe_capture: needs a CUDA GPU", file=sys.stderr)
        return 2

    labels = {p.key: p.label for p in moe.MOE_LAYER.providers}
    cases = []
    for model in moe.MOE_MODELS:
        layer = moe.moe_layer(model, torch.device("cuda"))
        for phase, tokens in CASES:
            torch.manual_seed(0)
            x = torch.randn(tokens, layer.config.hidden, device="cuda", dtype=torch.bfloat16)
            providers = {}
            for key, ops in PROVIDERS.items():
                layer.ops = ops
                step = _step(layer, x)
                entry = {"label": labels[key]}
                entry.update(time_parts(step, SECTIONS, steps=PROFILED_STEPS))
                if key == "triton":
                    entry["graph_step_us"] = timing.loop_time_ms(cuda_graph(step)).ms * 1e3
                torch.cuda.synchronize()
                resident = torch.cuda.memory_allocated()
                torch.cuda.reset_peak_memory_stats()
                step()
                torch.cuda.synchronize()
                entry["peak_extra_mb"] = (torch.cuda.max_memory_allocated() - resident) / 2**20
                providers[key] = entry
                shown = ", ".join(f"{k} {v:.0f}" for k, v in entry["parts_us"].items())
                events = ", ".join(f"{k} {v:.0f}" for k, v in entry["event_parts_us"].items())
                graph = f", graph {entry['graph_step_us']:.0f} us" if "graph_step_us" in entry else ""
                print(
                    f"{model} {phase} {tokens} {key}: step {entry['step_us']:.0f} us{graph}, kernels "
                    f"{entry['kernels_us']:.0f} us ({entry['kernel_count']:.0f}), peak +"
                    f"{entry['peak_extra_mb']:.0f} MiB: {shown}\n    between events: {events}",
                    flush=True,
                )
            case = {"phase": phase, "x_name": "tokens", "x": tokens, "axes": {"model": model}}
            cases.append({**case, "providers": providers})
        layer = x = None
        moe.forget_layers()
        torch.cuda.empty_cache()
    cap = captures.build(
        "moe_time_breakdown",
        tool="torch.profiler (ProfilerActivity.CPU + CUDA), record_function ranges per part of the block",
        payload={"steps": PROFILED_STEPS, "sections": [*SECTIONS.names, "other"], "cases": cases},
        sources=("models/moe.py",),
        method=(
            f"GPU kernel time per part, summed over the kernels launched inside each part's range, "
            f"mean of {PROFILED_STEPS} profiled steps after 2 warm-up steps; step time by "
            f"{timing.LOOP_TIMING_METHOD}; peak memory by torch.cuda.max_memory_allocated above "
            "the weights and the input, over one step"
        ),
    )
    print("wrote", captures.write(cap, args.out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
