"""``python -m gpuperf.bench``: measure the benchmarks and the ceilings, write the records.

Needs a CUDA GPU; without one it stops with a message and exit status 2 (``--dry-run``
works anywhere).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

DESCRIPTION = """\
Measure benchmarks on this machine's GPU and write their records (one JSON file per
benchmark under <gpu>/ in the measurements folder), or compare a fresh measurement with
the committed records. In a checkout of gpuperf the records go beside the committed ones
(src/gpuperf/measurements/); where gpuperf is installed as a package, its records are
read-only: pass --out FOLDER.

examples:
  python -m gpuperf.bench                 every benchmark (tunes the matmuls and attention first)
  python -m gpuperf.bench softmax matmul  two benchmarks
  python -m gpuperf.bench --stale         every benchmark whose record on this GPU is missing,
                                          or stale because its code changed
  python -m gpuperf.bench --stale --dry-run --gpu nvidia-h100-80gb-hbm3
                                          list them (and how long they took last time),
                                          measure nothing: works without a GPU
  python -m gpuperf.bench --compare softmax
                                          measure, write nothing, print each provider's ratio
                                          next to the committed one; exit 1 on a regression
  python -m gpuperf.bench --ceilings      measure only the ceilings (copy and stream bandwidth,
                                          cuBLAS per dtype) and write <gpu>/hardware.json
  python -m gpuperf.bench --rekey         re-key the committed records whose kernels did not
                                          change to the current hashes, measuring nothing:
                                          works without a GPU, in a git checkout
  python -m gpuperf.bench --out my-records
                                          write the records into my-records/<gpu>/
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m gpuperf.bench",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("names", nargs="*", help="benchmarks to run (default: all)")
    parser.add_argument(
        "--stale",
        action="store_true",
        help="only the benchmarks whose record on this GPU is missing or stale",
    )
    parser.add_argument(
        "--compare",
        action="store_true",
        help=(
            "measure and compare with the committed records instead of writing them: each "
            "provider's ratio to the baseline, then and now, with their 20th-80th percentile "
            "ranges; exit status 1 when one of the package's providers has a range wholly "
            "below its committed one, by more than 2%%"
        ),
    )
    parser.add_argument(
        "--ceilings",
        action="store_true",
        help=(
            "measure the ceilings alone, write <gpu>/hardware.json and exit (a full run, with "
            "no names, writes it too); no benchmark is measured, and no record goes stale"
        ),
    )
    parser.add_argument(
        "--rekey",
        action="store_true",
        help=(
            "measure nothing: give every record (of every GPU) whose measured code is unchanged "
            "the current hashes (gpuperf.bench.rekey), and list those that must be measured "
            "again; needs a git checkout, no GPU"
        ),
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="print what would be measured and exit (no GPU needed)"
    )
    parser.add_argument(
        "--gpu",
        default=None,
        help="with --dry-run: the GPU folder to read (default: this GPU's, else the reference GPU's)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help=(
            "measurements folder to write into, and to read with --stale, --compare and "
            "--dry-run (default: the committed records, src/gpuperf/measurements in a checkout; "
            "needed where gpuperf is installed as a package)"
        ),
    )
    tune = parser.add_mutually_exclusive_group()
    tune.add_argument(
        "--no-tune",
        action="store_true",
        help="measure the matmuls, SwiGLU and attention with the committed tuned configs",
    )
    tune.add_argument(
        "--tune",
        action="store_true",
        help="re-tune first even with --stale or --compare (which keep the committed configs)",
    )
    return parser


def main(argv=None) -> int:
    args = _parser().parse_args(argv)

    from gpuperf.bench import catalog, records, runs

    try:
        chosen = [catalog.by_name(n) for n in args.names] if args.names else list(catalog.ALL)
    except KeyError as err:
        print(f"gpuperf.bench: {err.args[0]}", file=sys.stderr)
        return 2
    root = args.out or records.measurements_dir()
    if args.rekey:
        from gpuperf.bench.rekey import rekey_records

        checkout = records.checkout_root()
        if checkout is None:
            print(
                "gpuperf.bench: --rekey reads git history: run it in a checkout of gpuperf", file=sys.stderr
            )
            return 2
        # Captures belong to no benchmark: they are re-keyed when every benchmark is.
        rekey_records(root, {b.name: b for b in chosen}, checkout, with_captures=not args.names)
        return 0

    import torch

    from gpuperf._runtime import is_interpreter

    usable = torch.cuda.is_available() and not is_interpreter()
    if args.dry_run:
        gpu = args.gpu or (records.gpu_slug(torch.cuda.get_device_name()) if usable else None)
        gpu = gpu or records.reference_gpu()
        todo = runs.stale(chosen, gpu, root) if args.stale else chosen
        print(runs.describe(todo, gpu, root))
        return 0
    if not usable:
        print(
            "gpuperf.bench: no CUDA GPU is usable here (torch.cuda.is_available() is False or "
            "TRITON_INTERPRET=1), so nothing can be measured. Run this on a machine with an "
            "NVIDIA GPU; without one, the docs render the committed records "
            "(`python -m gpuperf.bench --stale --dry-run` lists what is stale).",
            file=sys.stderr,
        )
        return 2
    if not args.compare:
        try:
            root = records.output_dir(args.out)
        except RuntimeError as err:  # an installed package's records are read-only
            print(f"gpuperf.bench: {err}", file=sys.stderr)
            return 2

    from gpuperf.bench import hardware
    from gpuperf.bench.runner import run

    gpu = records.gpu_slug(torch.cuda.get_device_name())
    if args.ceilings:
        if args.compare:
            print("gpuperf.bench: --ceilings writes hardware.json; it does not compare", file=sys.stderr)
            return 2
        print(f"wrote {_write_hardware(_measure_ceilings(hardware), root / gpu, records)}", flush=True)
        return 0
    capability = torch.cuda.get_device_capability()
    runnable = []
    for benchmark in runs.stale(chosen, gpu, root) if args.stale else chosen:
        if benchmark.runs_on is not None and not benchmark.runs_on(capability):
            print(
                f"skipped {benchmark.name}: its kernels do not run on compute capability "
                f"{capability[0]}.{capability[1]} ({torch.cuda.get_device_name()})",
                flush=True,
            )
        else:
            runnable.append(benchmark)
    print(runs.describe(runnable, gpu, root), flush=True)
    if not runnable:
        return 0
    # Before anything compiles: Triton's and Inductor's caches (max-autotune's choices among
    # them) in one folder that the docs build shares, wherever they are not set already.
    from gpuperf.caches import use_compile_caches

    caches = use_compile_caches()
    print(
        f"compiled kernels are kept in {caches['TRITON_CACHE_DIR']} (Triton) and "
        f"{caches['TORCHINDUCTOR_CACHE_DIR']} (Inductor)",
        flush=True,
    )

    ceilings = _measure_ceilings(hardware)
    full_run = not args.names and not args.stale and not args.compare
    if full_run:
        _write_hardware(ceilings, root / gpu, records)

    retune = args.tune or not (args.no_tune or args.stale or args.compare)
    if retune:
        _tune(runnable, catalog)

    failed, regressions = [], []
    with runs.progress(runnable, gpu, root) as bar:
        for benchmark in runnable:
            record = run(benchmark, ceilings=ceilings, log=bar.write_line, step=bar.step)
            if args.compare:
                committed = runs.committed(benchmark, gpu, root)
                lines, worse = runs.compare(benchmark, committed, record)
                bar.write_line("\n".join(lines))
                regressions += worse
            else:
                bar.write_line(f"wrote {records.write(record, root)}")
            failed += [
                f"{benchmark.name} {benchmark.x_name}={r['x']}"
                + "".join(f" {k}={v}" for k, v in r["axes"].items())
                + f": {r['status']} {r.get('message', '')}"
                for r in record["rows"]
                if r["provider"] == benchmark.subject.key
                and r["status"] != "ok"
                # (a kernel this GPU cannot run, Gluon's off Hopper say, is no failure)
                and not r.get("message", "").startswith("UnsupportedGPU:")
            ]
    if not args.compare:
        left = runs.stale_captures(gpu, root)
        if left:
            print("captures whose code changed (not measured by this command):", flush=True)
            for name, command in left:
                print(f"  {name}: {command}", flush=True)
    if failed:
        print("the kernels under study failed:\n  " + "\n  ".join(failed), file=sys.stderr)
    if regressions:
        print(f"{len(regressions)} regressions beyond the committed spread:", file=sys.stderr)
        for line in regressions:
            print(f"  {line}", file=sys.stderr)
    return 1 if failed or regressions else 0


def _measure_ceilings(hardware) -> dict:
    """Every ceiling of :data:`gpuperf.bench.hardware.CEILINGS` measured, each printed."""
    print("measuring ceilings ...", flush=True)
    ceilings = hardware.measure_ceilings()
    for key, entry in ceilings.items():
        shape = f" (at {'x'.join(map(str, entry['shape']))})" if "shape" in entry else ""
        shape += f" ({entry['stream']})" if "stream" in entry else ""
        print(f"  {key}: {entry['value']:.1f} {entry['unit']}{shape}", flush=True)
    return ceilings


def _write_hardware(ceilings: dict, folder: Path, records) -> Path:
    """Write ``folder/hardware.json``: this machine's provenance and ``ceilings``; its path."""
    hw = {
        "schema_version": records.HARDWARE_SCHEMA_VERSION,
        "provenance": records.collect_provenance(),
        "ceilings": ceilings,
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "hardware.json"
    path.write_text(json.dumps(hw, indent=1) + "\n")
    return path


def _tune(benchmarks, catalog) -> None:
    """Re-tune the configs the measured kernels read (matmul, persistent, FP8, SwiGLU,
    attention) at the benchmarked shapes, and write the sweeps."""
    from gpuperf.bench import tuning

    def log(line):
        print(line, flush=True)

    plain = [b for b in benchmarks if b in (catalog.MATMUL, catalog.MATMUL_EPILOGUE, catalog.MATMUL_ORDER)]
    if plain:
        shapes = list(dict.fromkeys(x for b in plain for x in b.x_values))
        print(f"tuning the matmul at {len(shapes)} shapes ...", flush=True)
        sweep = tuning.tune_matmul(shapes, catalog.MATMUL_DTYPES, log=log)
        print(f"wrote {tuning.write_tuning(sweep)}", flush=True)
    for persistent in (catalog.MATMUL_PERSISTENT, catalog.MATMUL_FP8, catalog.SWIGLU):
        if persistent in benchmarks:
            print(f"tuning {persistent.name} at {len(persistent.x_values)} shapes ...", flush=True)
            sweep = tuning.tune_persistent(persistent.name, persistent.x_values, log=log)
            print(f"wrote {tuning.write_tuning(sweep)}", flush=True)
    if any(b.name.startswith("attention") for b in benchmarks):
        print("tuning the attention kernels ...", flush=True)
        sweep = tuning.tune_attention(log=log)
        print(f"wrote {tuning.write_tuning(sweep)}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
