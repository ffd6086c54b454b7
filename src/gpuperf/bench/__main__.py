"""``python -m gpuperf.bench``: measure every benchmark and the ceilings, write the records.

Needs a CUDA GPU; without one it stops with a message and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpuperf.bench", description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="benchmarks to run (default: all)")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="measurements folder (default: docs/measurements in the checkout)",
    )
    parser.add_argument(
        "--no-tune",
        action="store_true",
        help=(
            "measure the matmuls, SwiGLU and attention with the committed tuned configs "
            "instead of re-tuning first"
        ),
    )
    args = parser.parse_args(argv)

    import torch

    from gpuperf._runtime import is_interpreter

    if not torch.cuda.is_available() or is_interpreter():
        print(
            "gpuperf.bench: no CUDA GPU is usable here (torch.cuda.is_available() is False or "
            "TRITON_INTERPRET=1), so nothing can be measured. Run this on a machine with an "
            "NVIDIA GPU; without one, the docs render the committed records.",
            file=sys.stderr,
        )
        return 2

    from gpuperf.bench import catalog, hardware, records
    from gpuperf.bench.runner import run

    benchmarks = [catalog.by_name(n) for n in args.names] if args.names else list(catalog.ALL)
    print("measuring ceilings ...", flush=True)
    ceilings = hardware.measure_ceilings()
    hw = {
        "schema_version": records.HARDWARE_SCHEMA_VERSION,
        "provenance": records.collect_provenance(),
        "ceilings": ceilings,
    }
    root = args.out or records.measurements_dir()
    folder = root / records.gpu_slug(hw["provenance"]["gpu"])
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "hardware.json").write_text(json.dumps(hw, indent=1) + "\n")
    for key, entry in ceilings.items():
        print(f"  {key}: {entry['value']:.1f} {entry['unit']}", flush=True)

    plain = [b for b in benchmarks if b in (catalog.MATMUL, catalog.MATMUL_EPILOGUE, catalog.MATMUL_ORDER)]
    if not args.no_tune and plain:
        from gpuperf.bench import tuning

        shapes = list(dict.fromkeys(x for b in plain for x in b.x_values))
        print(f"tuning the matmul at {len(shapes)} shapes ...", flush=True)
        sweep = tuning.tune_matmul(shapes, catalog.MATMUL_DTYPES, log=lambda line: print(line, flush=True))
        print(f"wrote {tuning.write_tuning(sweep)}", flush=True)

    for persistent in (catalog.MATMUL_PERSISTENT, catalog.MATMUL_FP8):
        if not args.no_tune and persistent in benchmarks:
            from gpuperf.bench import tuning

            print(f"tuning {persistent.name} at {len(persistent.x_values)} shapes ...", flush=True)
            sweep = tuning.tune_persistent(
                persistent.name, persistent.x_values, log=lambda line: print(line, flush=True)
            )
            print(f"wrote {tuning.write_tuning(sweep)}", flush=True)

    if not args.no_tune and catalog.SWIGLU in benchmarks:
        from gpuperf.bench import tuning

        print(f"tuning swiglu at {len(catalog.SWIGLU.x_values)} shapes ...", flush=True)
        sweep = tuning.tune_persistent(
            "swiglu", catalog.SWIGLU.x_values, log=lambda line: print(line, flush=True)
        )
        print(f"wrote {tuning.write_tuning(sweep)}", flush=True)

    if not args.no_tune and any(b.name.startswith("attention") for b in benchmarks):
        from gpuperf.bench import tuning

        print("tuning the attention kernels ...", flush=True)
        sweep = tuning.tune_attention(log=lambda line: print(line, flush=True))
        print(f"wrote {tuning.write_tuning(sweep)}", flush=True)

    failed = []
    capability = torch.cuda.get_device_capability()
    for benchmark in benchmarks:
        if benchmark.runs_on is not None and not benchmark.runs_on(capability):
            print(
                f"skipped {benchmark.name}: its kernels do not run on compute capability "
                f"{capability[0]}.{capability[1]} ({torch.cuda.get_device_name()})",
                flush=True,
            )
            continue
        record = run(benchmark, ceilings=ceilings, log=lambda line: print(line, flush=True))
        path = records.write(record, root)
        print(f"wrote {path}", flush=True)
        failed += [
            f"{benchmark.name} {benchmark.x_name}={r['x']}"
            + "".join(f" {k}={v}" for k, v in r["axes"].items())
            + f": {r['status']} {r.get('message', '')}"
            for r in record["rows"]
            if r["provider"] == benchmark.subject.key and r["status"] != "ok"
        ]
    if failed:
        print("the kernels under study failed:\n  " + "\n  ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
