#!/usr/bin/env bash
# One call on the GPU machine: environment, GPU tests, every benchmark, optional live docs.
# Usage (device tool): GPUPERF_COMMIT=<sha> bash scripts/device_run.sh [docs]
# Writes under $OUT: env.txt, tests.log, bench.log, measurements/<gpu>/*.json (and docs.log).
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
  python3 -c 'import torch, triton, numpy, sys; print(sys.version); print("torch", torch.__version__, "cuda", torch.version.cuda, "triton", triton.__version__, "numpy", numpy.__version__)'
} 2>&1 | tee "$OUT/env.txt"

echo "== GPU tests"
python3 -m pytest -q -p no:cacheprovider tests 2>&1 | tee "$OUT/tests.log" | tail -n 15

echo "== configs"
python3 scripts/explore_configs.py 2>&1 | tee "$OUT/configs.log"

echo "== benchmarks"
time python3 -m gpuperf.bench --out "$OUT/measurements" 2>&1 | tee "$OUT/bench.log"

if [ "${1:-}" = docs ]; then
  echo "== docs, measured live"
  time python3 -m sphinx -W --keep-going -b html docs "$OUT/html" 2>&1 | tee "$OUT/docs.log" | tail -n 30
  tar -czf "$OUT/html.tgz" -C "$OUT" html && rm -rf "$OUT/html"
fi
