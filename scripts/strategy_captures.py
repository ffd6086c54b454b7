"""The optimization-strategy guide's GPU captures: kernels per call, Inductor's code, compile modes.

Usage (on a machine with an NVIDIA GPU): ``python scripts/strategy_captures.py [--out FOLDER]``.
Writes, under ``<out>/<gpu>/captures/``:

* ``kernels_per_call.json``: the GPU kernels one call of each provider of the GELU and
  add-ReLU-multiply benchmarks launches (``torch.profiler``), float32, 2^24 elements;
* ``inductor_elementwise.json``: the Triton code ``torch.compile`` generates for the
  eager GELU formula and for ``relu(x + y) * z``;
* ``compile_modes.json``: ``torch.compile``'s modes on a bfloat16 MLP block at two
  batch sizes, each mode in a fresh process with empty caches
  (:func:`gpuperf.bench.strategy.compile_modes`).

The first two take seconds and are written before the third starts.
"""

# The captures name the kernel modules as their sources, not gpuperf/reference.py where the
# eager formulas live: every op's reference shares that file, and any new one would mark
# these captures stale.
import sys

#: Where the per-call kernels and the generated code are taken: past L2, float32.
N_ELEMENTS = 2**24


def main(argv=None) -> int:
    from gpuperf.bench import captures

    parser = captures.script_parser(__doc__.splitlines()[0])
    parser.add_argument("--skip-compile-modes", action="store_true", help="only the two quick captures")
    args = parser.parse_args(argv)

    import torch

    from gpuperf.bench import catalog, strategy
    from gpuperf.reference import add_relu_mul_eager, gelu_eager

    if not torch.cuda.is_available():
        print("strategy_captures: needs a CUDA GPU", file=sys.stderr)
        return 2

    per_call = {}
    for bench in (catalog.GELU, catalog.ADD_RELU_MUL):
        torch.manual_seed(0)
        inputs = bench.make_inputs(N_ELEMENTS, torch.device("cuda"), dtype="float32")
        per_call[bench.name] = {
            p.key: {"label": p.label, "kernels": strategy.kernels_per_call(p.make(*inputs))}
            for p in bench.providers
        }
        for key, entry in per_call[bench.name].items():
            print(f"{bench.name:>14} {key:>8}: {len(entry['kernels'])} kernels", flush=True)
    cap = captures.build(
        "kernels_per_call",
        tool="torch.profiler (ProfilerActivity.CUDA), one call after a warm-up call",
        payload={"n_elements": N_ELEMENTS, "dtype": "float32", "benchmarks": per_call},
        sources=("kernels/gelu.py", "kernels/add_relu_mul.py"),
        method="GPU kernels recorded by torch.profiler during one call of each provider",
    )
    print("wrote", captures.write(cap, args.out), flush=True)

    x, y, z = (torch.randn(N_ELEMENTS, device="cuda") for _ in range(3))
    code = {
        "gelu_eager": strategy.inductor_triton_code(gelu_eager, x),
        "add_relu_mul_eager": strategy.inductor_triton_code(add_relu_mul_eager, x, y, z),
    }
    for name, kernels in code.items():
        print(f"inductor {name}: {len(kernels)} Triton kernel(s)", flush=True)
    cap = captures.build(
        "inductor_elementwise",
        tool="torch._inductor.utils.run_and_get_code(torch.compile(fn), ...)",
        payload={"n_elements": N_ELEMENTS, "dtype": "float32", "code": code},
        sources=("kernels/gelu.py", "kernels/add_relu_mul.py"),
        method="the Triton source Inductor generated, default mode, float32 inputs",
    )
    print("wrote", captures.write(cap, args.out), flush=True)

    if args.skip_compile_modes:
        return 0
    payload = strategy.compile_modes(log=lambda line: print(line, flush=True))
    cap = captures.build(
        "compile_modes",
        tool="torch.compile(mode=...), a fresh process per case and mode, empty Inductor and Triton caches",
        payload=payload,
        sources=("bench/strategy.py",),
        # records.caption shows a method up to its first colon, without parentheses: none here.
        method=(
            "compile time as the first call's wall time, GPU time per call by gpuperf.bench.timing.time_ms, "
            "host time per call by gpuperf.bench.timing.host_time_ms, kernels by torch.profiler"
        ),
    )
    print("wrote", captures.write(cap, args.out), flush=True)
    failed = [
        f"{c} {m}" for c, modes in payload["results"].items() for m, e in modes.items() if e["status"] != "ok"
    ]
    if failed:
        print("compile modes that failed: " + ", ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
