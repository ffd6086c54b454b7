#!/usr/bin/env bash
# The GPU machine's work in few calls (see /work/.library/device in this workplace,
# or run it on any machine with an NVIDIA GPU, torch and triton):
#   bash scripts/device_run.sh check     GPU tests and compute-sanitizer on every kernel
#   bash scripts/device_run.sh quick     the GPU tests of the launch paths only
#   bash scripts/device_run.sh memory    ceilings and the memory-bound and host benchmarks
#   bash scripts/device_run.sh matmul    tune the matmul, its benchmarks, ncu's L2 counters
#   bash scripts/device_run.sh attention-tune  attention GPU tests, tuning sweep, compute-sanitizer
#   bash scripts/device_run.sh attention-fwd   attention forward and peak-memory benchmarks
#   bash scripts/device_run.sh attention-bwd   attention backward benchmark (both with the committed sweep)
#   bash scripts/device_run.sh persistent  tests of the persistent and FP8 matmuls, their tuning sweeps and
#                                          benchmarks, host time per call, compute-sanitizer
#   bash scripts/device_run.sh persistent-fp8  the same, re-tuning only the FP8 sweep (the committed bfloat16
#                                          sweep is kept: for a change that leaves the bfloat16 kernels as they are)
#   bash scripts/device_run.sh persistent-tuned  the same with the committed sweeps (no re-tuning)
#   bash scripts/device_run.sh attention   attention forward, backward and peak-memory benchmarks (committed sweep);
#                                          about 8 minutes on an H100, 10 with start-up: where one call
#                                          is limited to 10 minutes, run attention-fwd and attention-bwd
#   bash scripts/device_run.sh sweep     the launch-configuration sweep of tutorials 01-02
#   bash scripts/device_run.sh docs      the site built with live measurements
#   bash scripts/device_run.sh profiling  the profiling guide's captures (scripts/profile_capture.py:
#                                        timings, torch.profiler trace, ncu, proton, load_inline) and
#                                        the row-mean GPU tests
#   bash scripts/device_run.sh strategy  the optimization-strategy guide: GELU, add-ReLU-mul and strided-copy
#                                        tests and benchmarks, kernels per call, Inductor's code, compile modes
#   bash scripts/device_run.sh rmsnorm   rms_norm GPU tests, its benchmark, compute-sanitizer on every kernel
#   bash scripts/device_run.sh rope      rope GPU tests, its benchmark, compute-sanitizer on every kernel
#   bash scripts/device_run.sh swiglu    swiglu GPU tests, its tuning sweep (kernels/tuned/<gpu>/swiglu.json) and
#                                        benchmark, compute-sanitizer on every kernel
#   bash scripts/device_run.sh swiglu-tuned  the same with the committed sweep (no re-tuning)
#   bash scripts/device_run.sh decode    attention_decode GPU tests, its benchmark, compute-sanitizer on every kernel
#   bash scripts/device_run.sh splitk    matmul_splitk GPU tests, its benchmark, compute-sanitizer on every kernel
#   bash scripts/device_run.sh moe       GPU tests of the grouped and block-scaled FP8 matmuls and the MoE references,
#                                        compute-sanitizer on both kernels, then scripts/moe_gpu_check.py (correctness
#                                        at the models' shapes, timing beside the vendors, a config sweep:
#                                        $OUT/moe_gpu_check.json); about 5 minutes on an H100
#   bash scripts/device_run.sh llama-tests    the GPU tests of tutorial 07's kernels, the layer, the library and timers
#   bash scripts/device_run.sh llama-explore  the launch-rule sweeps of rope and attention_decode and a first look
#                                             at the layer (scripts/llama_explore.py; LLAMA_EXPLORE names fewer parts)
#   bash scripts/device_run.sh llama     tutorial 07's benchmarks (rope, swiglu, attention_decode, the small-M
#                                        matmul, the layer's prefill, decode and training step) with the committed
#                                        sweeps, the time-breakdown capture and compute-sanitizer; LLAMA_BENCH names
#                                        fewer. About 10 minutes on an H100: split it with LLAMA_BENCH where one call
#                                        is limited to 10 minutes
#   bash scripts/device_run.sh gluon     tutorial 08's Gluon kernels: GPU tests, the FP8 ladder's benchmark, its
#                                        Nsight Compute capture and compute-sanitizer on the Gluon kernels
#   bash scripts/device_run.sh gluon-attention  the same for the Gluon attention forward: GPU tests, its ladder's
#                                        benchmark, Nsight Compute capture and compute-sanitizer
#   bash scripts/device_run.sh tma       the TMA family (persistent, SwiGLU, FP8, Gluon): GPU tests, the
#                                        property tests of every descriptor path, compute-sanitizer on them
#   bash scripts/device_run.sh suite     the whole test suite on 8 workers, timed, with its 25 slowest tests
#   bash scripts/device_run.sh host      host_overhead three times (into /tmp/host1-3, packed as
#                                        $OUT/host_runs.tgz: the pages read one, the note gives all three)
#                                        and the host-time captures (load_inline, timing methods, launch-bound)
#   bash scripts/device_run.sh fp8-ceiling  the ceilings (hardware.json, both FP8 accumulations) and matmul_fp8
#                                        with the committed sweeps
#   bash scripts/device_run.sh proton    the profiling guide's proton capture, its text viewer included (the
#                                        llnl-hatchet wheels it needs travel in .whl/hatchet where pip has no index)
#   bash scripts/device_run.sh execution-model  guide 00's capture (scripts/execution_model_capture.py: the
#                                        device's limits, four kernels' compiled metadata, the L2/HBM copy
#                                        sweep, an empty kernel's launch) and its GPU tests; about a minute
#   bash scripts/device_run.sh stale     every record that is missing or stale on this GPU, measured again
#                                        (python -m gpuperf.bench --stale --no-tune), then the stale captures listed
# Several modes may follow each other: `bash scripts/device_run.sh check memory`.
# Set GPUPERF_COMMIT to the commit being measured when the tree has no .git.
# Writes $OUT/<mode>.log and $OUT/results.tgz (src/gpuperf/measurements and kernels/tuned as measured).
set -uo pipefail
OUT=${OUT:-/tmp/gpuperf-out}
mkdir -p "$OUT"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
for mode in "$@"; do
  {
    echo "== $mode"
    case "$mode" in
      check)
        nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
        python3 -c 'import torch, triton, numpy, sys; print(sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "triton", triton.__version__, "numpy", numpy.__version__)'
        python3 -m pytest -q -p no:cacheprovider -n 4 tests 2>&1 | tail -n 25
        compute-sanitizer --tool memcheck python3 scripts/sanitize_kernels.py 2>&1 | tail -n 5 ;;
      quick) python3 -m pytest -q -p no:cacheprovider tests/test_library.py 2>&1 | tail -n 5 ;;
      memory) time python3 -m gpuperf.bench vector_add softmax softmax_long_rows host_overhead ;;
      matmul)
        time python3 -m gpuperf.bench matmul matmul_epilogue matmul_order
        python3 scripts/ncu_matmul_order.py ;;
      matmul-tuned)  # the same with the committed tuning sweep (no re-tuning)
        time python3 -m gpuperf.bench --no-tune matmul matmul_epilogue matmul_order
        python3 scripts/ncu_matmul_order.py ;;
      attention-tune)
        python3 -m pytest -q -p no:cacheprovider tests/test_attention.py 2>&1 | tail -n 8
        python3 -c 'from gpuperf.bench import tuning; print("wrote", tuning.write_tuning(tuning.tune_attention()))'
        compute-sanitizer --tool memcheck python3 scripts/sanitize_kernels.py 2>&1 | tail -n 5 ;;
      persistent)
        python3 -m pytest -q -p no:cacheprovider tests/test_matmul_persistent.py tests/test_matmul_fp8.py \
          tests/test_library.py 2>&1 | grep -E "^(FAILED|ERROR)|passed|failed" 
        time python3 -m gpuperf.bench matmul_persistent matmul_fp8 host_overhead
        compute-sanitizer --tool memcheck python3 scripts/sanitize_kernels.py 2>&1 | tail -n 5 ;;
      persistent-fp8)  # as persistent, but re-tunes only the FP8 sweep (the bfloat16 one is kept)
        python3 -m pytest -q -p no:cacheprovider tests/test_matmul_persistent.py tests/test_matmul_fp8.py \
          tests/test_library.py 2>&1 | grep -E "^(FAILED|ERROR)|passed|failed"
        python3 -c 'from gpuperf.bench import catalog, tuning
print("wrote", tuning.write_tuning(tuning.tune_persistent("matmul_fp8", catalog.FP8_SHAPES)))'
        time python3 -m gpuperf.bench --no-tune matmul_persistent matmul_fp8 host_overhead
        compute-sanitizer --tool memcheck python3 scripts/sanitize_kernels.py 2>&1 | tail -n 5 ;;
      persistent-tuned)  # as persistent, with the committed sweeps (no re-tuning)
        python3 -m pytest -q -p no:cacheprovider tests/test_matmul_persistent.py tests/test_matmul_fp8.py \
          tests/test_library.py 2>&1 | grep -E "^(FAILED|ERROR)|passed|failed"
        time python3 -m gpuperf.bench --no-tune matmul_persistent matmul_fp8 host_overhead
        compute-sanitizer --tool memcheck python3 scripts/sanitize_kernels.py 2>&1 | tail -n 5 ;;
      attention) time python3 -m gpuperf.bench --no-tune attention_memory attention_forward attention_backward ;;
      attention-fwd) time python3 -m gpuperf.bench --no-tune attention_memory attention_forward ;;
      attention-bwd) time python3 -m gpuperf.bench --no-tune attention_backward ;;
      sweep) python3 scripts/explore_configs.py ;;
      profiling)
        export GPUPERF_PROFILE_SCRATCH=/tmp/gpuperf-profile && rm -rf "$GPUPERF_PROFILE_SCRATCH"
        time timeout 360 python3 scripts/profile_capture.py
        # The tests reuse the extension the capture built (load_inline finds it by its hash).
        export TORCH_EXTENSIONS_DIR="$GPUPERF_PROFILE_SCRATCH/torch-extensions"
        timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_row_mean.py tests/test_bench_profiling.py \
          2>&1 | grep -E "^(FAILED|ERROR)|passed|failed"
        # The guide itself, on a GPU, drawing the records it reads (no live re-measurement).
        (cd guides && GPUPERF_BENCH=records MPLBACKEND=Agg timeout 120 python3 01_profiling.py >"$OUT/guide.log" 2>&1;
         echo "guides/01_profiling.py exited with $?") ;;
      docs)
        # Sphinx, sphinx-gallery and furo travel as wheels in .whl (the image has none).
        python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
        export PYTHONPATH="/tmp/site:$PYTHONPATH"
        rm -rf docs/_build docs/tutorials docs/generated
        time python3 -m sphinx -W --keep-going -b html docs "$OUT/html" 2>&1 | tail -n 40
        tar -czf "$OUT/html.tgz" -C "$OUT" html && rm -rf "$OUT/html" ;;
      strategy)  # STRATEGY_TESTS=0 skips the tests; STRATEGY_BENCH names fewer benchmarks
        [ "${STRATEGY_TESTS:-1}" = 0 ] || python3 -m pytest -q -p no:cacheprovider tests/test_gelu.py \
          tests/test_add_relu_mul.py tests/test_strided_copy.py tests/test_strategy.py tests/test_validation.py \
          2>&1 | grep -E "^(FAILED|ERROR)|passed|failed"
        time python3 -m gpuperf.bench --no-tune ${STRATEGY_BENCH:-gelu add_relu_mul strided_copy}
        tar -czf "$OUT/results.tgz" src/gpuperf/measurements  # kept if the compile modes run out of time
        time python3 scripts/strategy_captures.py ;;
      rmsnorm)
        python3 -m pytest -q -p no:cacheprovider tests/test_rms_norm.py 2>&1 | grep -E "^(FAILED|ERROR)|passed|failed"
        time python3 -m gpuperf.bench --no-tune rms_norm
        compute-sanitizer --tool memcheck python3 scripts/sanitize_kernels.py 2>&1 | tail -n 5 ;;
      rope)
        python3 -m pytest -q -p no:cacheprovider tests/test_rope.py 2>&1 | grep -E "^(FAILED|ERROR)|passed|failed"
        time python3 -m gpuperf.bench --no-tune rope
        compute-sanitizer --tool memcheck python3 scripts/sanitize_kernels.py 2>&1 | tail -n 5 ;;
      swiglu|swiglu-tuned)
        python3 -m pytest -q -p no:cacheprovider tests/test_swiglu.py 2>&1 | grep -E "^(FAILED|ERROR)|passed|failed"
        if [ "$mode" = swiglu ]; then time python3 -m gpuperf.bench swiglu; else time python3 -m gpuperf.bench --no-tune swiglu; fi
        compute-sanitizer --tool memcheck python3 scripts/sanitize_kernels.py 2>&1 | tail -n 5 ;;
      decode)
        python3 -m pytest -q -p no:cacheprovider tests/test_attention_decode.py 2>&1 | grep -E "^(FAILED|ERROR)|passed|failed"
        time python3 -m gpuperf.bench --no-tune attention_decode
        compute-sanitizer --tool memcheck python3 scripts/sanitize_kernels.py 2>&1 | tail -n 5 ;;
      splitk)
        python3 -m pytest -q -p no:cacheprovider tests/test_matmul_splitk.py 2>&1 | grep -E "^(FAILED|ERROR)|passed|failed"
        time python3 -m gpuperf.bench --no-tune matmul_small_m
        compute-sanitizer --tool memcheck python3 scripts/sanitize_kernels.py 2>&1 | tail -n 5 ;;
      moe)
        python3 -m pytest -q -p no:cacheprovider -n 4 tests/test_grouped_matmul.py tests/test_matmul_fp8_blockwise.py \
          tests/test_moe_reference.py tests/test_moe_gpu_check.py 2>&1 | grep -E "^(FAILED|ERROR)|passed|failed"
        compute-sanitizer --tool memcheck python3 scripts/sanitize_kernels.py moe 2>&1 | tail -n 5
        time python3 scripts/moe_gpu_check.py --out "$OUT" ;;
      llama-tests)
        python3 -m pytest -q -p no:cacheprovider -n 4 tests/test_rope.py tests/test_swiglu.py \
          tests/test_attention_decode.py tests/test_attention.py tests/test_llama.py tests/test_library.py \
          tests/test_bench_timing.py tests/test_bench_runner.py 2>&1 | grep -E "^(FAILED|ERROR)|passed|failed|Error|Greatest|Mismatched" | head -n 80 ;;
      gluon)
        python3 -m pytest -q -p no:cacheprovider tests/test_gluon_matmul_fp8.py 2>&1 | grep -E "^(FAILED|ERROR)|passed|failed"
        time python3 -m gpuperf.bench --no-tune gluon_fp8
        time python3 scripts/gluon_capture.py fp8
        compute-sanitizer --tool memcheck python3 scripts/sanitize_kernels.py gluon_fp8 2>&1 | tail -n 5 ;;
      gluon-attention)
        python3 -m pytest -q -p no:cacheprovider tests/test_gluon_attention_fa3.py 2>&1 | grep -E "^(FAILED|ERROR)|passed|failed"
        time python3 -m gpuperf.bench --no-tune gluon_attention
        time python3 scripts/gluon_capture.py attention attention64
        compute-sanitizer --tool memcheck python3 scripts/sanitize_kernels.py gluon_attention 2>&1 | tail -n 5 ;;
      tma)
        python3 -m pytest -q -p no:cacheprovider -n 8 tests/test_plans.py tests/test_tma_paths.py \
          tests/test_matmul_persistent.py tests/test_swiglu.py tests/test_matmul_fp8.py tests/test_gluon_matmul_fp8.py \
          tests/test_gluon_attention_fa3.py tests/test_llama.py tests/test_library.py 2>&1 | grep -E "^(FAILED|ERROR)|passed|failed"
        compute-sanitizer --tool memcheck python3 -m pytest -q -p no:cacheprovider tests/test_tma_paths.py 2>&1 | tail -n 5
        compute-sanitizer --tool memcheck python3 scripts/sanitize_kernels.py persistent swiglu gluon_fp8 gluon_attention 2>&1 | tail -n 5 ;;
      suite) time python3 -m pytest -q -p no:cacheprovider -n 8 --durations=25 tests 2>&1 | tail -n 70 ;;
      host)
        for run in 1 2 3; do time python3 -m gpuperf.bench --no-tune --out "/tmp/host$run" host_overhead; done
        tar -czf "$OUT/host_runs.tgz" -C /tmp host1 host2 host3
        time python3 scripts/profile_capture.py --only cuda timing launch ;;
      stale) time python3 -m gpuperf.bench --stale --no-tune ;;
      fp8-ceiling)
        time python3 -m gpuperf.bench --ceilings
        time python3 -m gpuperf.bench --no-tune matmul_fp8 ;;
      proton)
        if [ -d .whl/hatchet ]; then python3 -m pip install -q --no-index --find-links .whl/hatchet llnl-hatchet 2>&1 | tail -n 3
        else python3 -m pip install -q llnl-hatchet 2>&1 | tail -n 3; fi
        time python3 scripts/profile_capture.py --only proton ;;
      execution-model)
        time timeout 300 python3 scripts/execution_model_capture.py
        timeout 300 python3 -m pytest -q -p no:cacheprovider tests/test_execution_model.py \
          2>&1 | grep -E "^(FAILED|ERROR)|passed|failed" ;;
      llama-explore) time python3 scripts/llama_explore.py ${LLAMA_EXPLORE:-} ;;
      llama)
        time python3 -m gpuperf.bench --no-tune ${LLAMA_BENCH:-rope swiglu attention_decode matmul_small_m \
          llama_prefill llama_prefill_autotune llama_decode llama_train llama_train_memory}
        time python3 scripts/llama_capture.py
        compute-sanitizer --tool memcheck python3 scripts/sanitize_kernels.py 2>&1 | tail -n 5 ;;
      *) echo "unknown mode $mode" ;;
    esac
  } 2>&1 | tee "$OUT/$mode.log"
  # After every mode, so a later one that runs out of time loses nothing measured before it.
  tar -czf "$OUT/results.tgz" src/gpuperf/measurements $(ls -d src/gpuperf/kernels/tuned 2>/dev/null)
done
