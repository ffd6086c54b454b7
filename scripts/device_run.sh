#!/usr/bin/env bash
# The GPU machine's whole job in one call (see /work/.library/device in this workplace,
# or run it on any machine with an NVIDIA GPU, torch and triton):
#   bash scripts/device_run.sh measure   GPU tests, config sweep, every benchmark
#   bash scripts/device_run.sh docs      the site built with live measurements
#   bash scripts/device_run.sh all       both
# Set GPUPERF_COMMIT to the commit being measured when the tree has no .git; SWEEP=0 skips the sweep.
# Writes under $OUT: run.log, measurements/<gpu>/*, docs.log, html.tgz.
set -uo pipefail
OUT=${OUT:-/tmp/gpuperf-out}
mkdir -p "$OUT"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
mode=${1:-measure}
if [ "$mode" = measure ] || [ "$mode" = all ]; then
  {
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
    python3 -c 'import torch, triton, numpy, sys; print(sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "triton", triton.__version__, "numpy", numpy.__version__)'
    echo "== GPU tests"
    python3 -m pytest -q -p no:cacheprovider -n 4 tests 2>&1 | tail -n 25
    if [ "${SWEEP:-1}" = 1 ]; then
      echo "== config sweep"
      python3 scripts/explore_configs.py --out "$OUT/measurements"
    else
      python3 scripts/explore_configs.py --only host --out "$OUT/measurements"
    fi
    echo "== benchmarks"
    time python3 -m gpuperf.bench --out "$OUT/measurements"
  } 2>&1 | tee "$OUT/run.log"
fi
if [ "$mode" = docs ] || [ "$mode" = all ]; then
  # Sphinx, sphinx-gallery and furo travel as wheels in .whl (the image has none).
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH="/tmp/site:$PYTHONPATH"
  rm -rf docs/_build docs/tutorials docs/generated
  { time python3 -m sphinx -W --keep-going -b html docs "$OUT/html"; } 2>&1 | tee "$OUT/docs.log" | tail -n 40
  tar -czf "$OUT/html.tgz" -C "$OUT" html && rm -rf "$OUT/html"
fi
